// Tests of rt/jaxpr.hpp: variables by identity, and structural equality and hashing of jaxprs
// (alpha-equivalence; literals by dtype, weak flag and bits; params by value, sub-jaxprs by
// structure; consts by contents), which the jit cache keys on.
#include "xpr/rt/jaxpr.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/prims/binary.hpp"
#include "xpr/rt/prims/reduce.hpp"
#include "xpr/rt/prims/unary.hpp"

namespace test_rt_jaxpr {

using namespace xpr::rt;
using xpr::DType;
using xpr::Shape;

ShapedArray f64(Shape s) { return {std::move(s), DType::float64, false}; }

Array f64_array(const std::vector<double>& xs, Shape shape) {
  ArrayBuilder b(f64(std::move(shape)));
  std::memcpy(b.data<double>(), xs.data(), xs.size() * sizeof(double));
  return std::move(b).finish();
}

/// A higher-order primitive for these tests: applies its `jaxpr` parameter.
class CallPrim final : public Primitive {
 public:
  CallPrim() : Primitive("jaxpr_test_call") {}
  Avals abstract_eval(std::span<const ShapedArray>, const Params& params) const override {
    return params.get<JaxprParam>("jaxpr")->out_avals();
  }
};
const CallPrim call_p;

/// func1 of the jaxpr docs on fresh variables: sum(x + sin(y) * lit) over f64[n].
Jaxpr func1(double lit = 3.0, std::int64_t n = 8) {
  Var a(f64({n})), b(f64({n})), c(f64({n})), d(f64({n})), e(f64({n})), f(f64({}));
  Jaxpr j;
  j.invars = {a, b};
  j.eqns.push_back(Eqn{&sin_p, {b}, {}, {c}});
  j.eqns.push_back(Eqn{&mul_p, {c, Literal{Array(lit)}}, {}, {d}});
  j.eqns.push_back(Eqn{&add_p, {a, d}, {}, {e}});
  j.eqns.push_back(Eqn{&reduce_sum_p, {e}, {{"axes", Axes{0}}}, {f}});
  j.outvars = {f};
  return j;
}

void expect_equal(const Jaxpr& x, const Jaxpr& y) {
  EXPECT_TRUE(x == y);
  EXPECT_EQ(std::hash<Jaxpr>{}(x), std::hash<Jaxpr>{}(y));
}

TEST(Var, IdentitySemantics) {
  Var a(f64({3})), b(f64({3}));
  Var a2 = a;
  EXPECT_TRUE(a == a2);
  EXPECT_FALSE(a == b);  // same type, different variables
  EXPECT_EQ(std::hash<Var>{}(a), std::hash<Var>{}(a2));
  EXPECT_EQ(a.aval(), f64({3}));
  std::unordered_set<Var> set{a, a2, b};
  EXPECT_EQ(set.size(), 2u);
}

TEST(Jaxpr, AtomsAndTypes) {
  Jaxpr j = func1();
  EXPECT_EQ(j.in_avals(), (Avals{f64({8}), f64({8})}));
  EXPECT_EQ(j.out_avals(), (Avals{f64({})}));
  const Atom& lit = j.eqns[1].inputs[1];
  EXPECT_EQ(aval_of(lit).dtype, DType::float64);
  EXPECT_TRUE(aval_of(lit).weak_type);  // a C++ number is weakly typed
  EXPECT_EQ(aval_of(j.eqns[0].inputs[0]), f64({8}));
}

TEST(JaxprEquality, AlphaEquivalentJaxprsAreEqualWithEqualHashes) {
  Jaxpr x = func1(), y = func1();
  EXPECT_FALSE(x.invars[0] == y.invars[0]);  // different variables...
  expect_equal(x, y);                        // ...same jaxpr
  // Usable as a hash-map key: the alpha-equivalent jaxpr finds the entry.
  std::unordered_map<Jaxpr, int> cache;
  cache.emplace(x, 7);
  ASSERT_EQ(cache.count(y), 1u);
  EXPECT_EQ(cache.at(y), 7);
}

TEST(JaxprEquality, WiringMatters) {
  Jaxpr x = func1(), y = func1();
  std::swap(y.eqns[2].inputs[0], y.eqns[2].inputs[1]);  // add d a instead of add a d
  EXPECT_FALSE(x == y);
  Jaxpr z = func1();
  std::swap(z.invars[0], z.invars[1]);  // the same body with the arguments swapped
  EXPECT_FALSE(x == z);
  Jaxpr w = func1();
  w.outvars = {w.eqns[2].outputs[0]};  // another output
  EXPECT_FALSE(x == w);
}

TEST(JaxprEquality, TypesPrimitivesAndCounts) {
  EXPECT_FALSE(func1(3.0, 8) == func1(3.0, 4));  // invar shapes differ
  Jaxpr x = func1(), y = func1();
  y.eqns[0].primitive = &cos_p;
  EXPECT_FALSE(x == y);
  Jaxpr z = func1();
  z.eqns.pop_back();
  z.outvars = {z.eqns.back().outputs[0]};
  EXPECT_FALSE(x == z);
}

TEST(JaxprEquality, LiteralsByDtypeWeakFlagAndBits) {
  expect_equal(func1(3.0), func1(3.0));
  EXPECT_FALSE(func1(3.0) == func1(3.5));
  EXPECT_FALSE(func1(0.0) == func1(-0.0));  // different bits, different programs
  const double nan = std::numeric_limits<double>::quiet_NaN();
  expect_equal(func1(nan), func1(nan));  // reflexive, as a cache key must be

  Jaxpr x = func1(), y = func1(), z = func1();
  y.eqns[1].inputs[1] = Literal{Array(3.0f)};  // f32 literal
  EXPECT_FALSE(x == y);
  ArrayBuilder strong(f64({}));
  *strong.data<double>() = 3.0;
  z.eqns[1].inputs[1] = Literal{std::move(strong).finish()};  // strongly typed 3.0
  EXPECT_FALSE(x == z);
  Jaxpr v = func1();
  v.eqns[1].inputs[1] = v.invars[0];  // a variable where the literal was
  EXPECT_FALSE(x == v);
}

TEST(JaxprEquality, ParamsByNameAndValueInAnyOrder) {
  Jaxpr x = func1(), y = func1();
  y.eqns[3].params = {{"axes", Axes{-1}}};
  EXPECT_FALSE(x == y);
  y.eqns[3].params = {{"axes", Axes{0}}, {"extra", true}};
  EXPECT_FALSE(x == y);
  y.eqns[3].params = {{"axes", Shape{0}}};  // another kind with the same printed value
  EXPECT_FALSE(x == y);

  Jaxpr p = func1(), q = func1();
  p.eqns[3].params = {{"axes", Axes{0}}, {"keepdims", false}};
  q.eqns[3].params = {{"keepdims", false}, {"axes", Axes{0}}};
  expect_equal(p, q);
  q.eqns[3].params.set("keepdims", true);
  EXPECT_FALSE(p == q);
}

TEST(JaxprEquality, EveryParamKindComparesByValue) {
  auto jaxpr_param = [] { return std::make_shared<const ClosedJaxpr>(ClosedJaxpr{func1(), {}}); };
  const std::vector<std::pair<ParamValue, ParamValue>> differing{
      {true, false},
      {std::int64_t{1}, std::int64_t{2}},
      {0.5, 0.25},
      {DType::float32, DType::float64},
      {Shape{3, 4}, Shape{4, 3}},
      {Axes{0, 1}, Axes{1, 0}},
      {PaddingConfig{{{1, 2, 0}}}, PaddingConfig{{{1, 2, 1}}}},
      {DotDimensionNumbers{{1}, {0}, {}, {}}, DotDimensionNumbers{{0}, {0}, {}, {}}},
      {Dim{"n"}, Dim{"m"}},
  };
  for (const auto& [u, v] : differing) {
    Jaxpr x = func1(), y = func1(), z = func1();
    x.eqns[0].params = {{"p", u}};
    y.eqns[0].params = {{"p", v}};
    z.eqns[0].params = {{"p", u}};
    EXPECT_FALSE(x == y) << u.index();
    expect_equal(x, z);
  }
  Jaxpr n1 = func1(), n2 = func1();
  n1.eqns[0].params = {{"p", None{}}};
  n2.eqns[0].params = {{"p", None{}}};
  expect_equal(n1, n2);
  // Separately built, alpha-equivalent sub-jaxprs are equal; their pointers differ.
  Jaxpr s1 = func1(), s2 = func1();
  s1.eqns[0].params = {{"p", jaxpr_param()}};
  s2.eqns[0].params = {{"p", jaxpr_param()}};
  expect_equal(s1, s2);
  s1.eqns[0].params = {{"p", JaxprTuple{jaxpr_param(), jaxpr_param()}}};
  s2.eqns[0].params = {{"p", JaxprTuple{jaxpr_param(), jaxpr_param()}}};
  expect_equal(s1, s2);
  s2.eqns[0].params = {{"p", JaxprTuple{jaxpr_param()}}};
  EXPECT_FALSE(s1 == s2);
}

TEST(JaxprEquality, SubJaxprsComparedStructurally) {
  auto outer = [](double lit) {
    auto sub = std::make_shared<const ClosedJaxpr>(ClosedJaxpr{func1(lit), {}});
    Var a(f64({8})), b(f64({8})), c(f64({}));
    Jaxpr j;
    j.invars = {a, b};
    j.eqns.push_back(Eqn{&call_p, {a, b}, {{"jaxpr", sub}}, {c}});
    j.outvars = {c};
    return j;
  };
  expect_equal(outer(3.0), outer(3.0));
  EXPECT_FALSE(outer(3.0) == outer(2.0));
}

TEST(ClosedJaxprEquality, ConstsByShapeDtypeAndContents) {
  auto closed = [](std::vector<double> c, Shape s) {
    Var k(f64(s)), x(f64({})), y(f64(s));
    Jaxpr j;
    j.constvars = {k};
    j.invars = {x};
    j.eqns.push_back(Eqn{&mul_p, {k, x}, {}, {y}});
    j.outvars = {y};
    return ClosedJaxpr{std::move(j), {f64_array(c, s)}};
  };
  ClosedJaxpr a = closed({1, 2, 3}, {3}), b = closed({1, 2, 3}, {3});
  EXPECT_NE(a.consts[0].impl(), b.consts[0].impl());  // different buffers, same contents
  EXPECT_TRUE(a == b);
  EXPECT_EQ(std::hash<ClosedJaxpr>{}(a), std::hash<ClosedJaxpr>{}(b));
  EXPECT_FALSE(a == closed({1, 2, 4}, {3}));
  EXPECT_FALSE(a == closed({1, 2, 3}, {3, 1}));
  ClosedJaxpr no_consts = a;
  no_consts.consts.clear();
  EXPECT_FALSE(a == no_consts);
}

TEST(JaxprEquality, FreeVariablesCompareByIdentity) {
  // A jaxpr that uses a variable it does not define (malformed, but comparable).
  Var free(f64({}));
  auto with_free = [](const Var& v) {
    Jaxpr j;
    Var x(f64({})), y(f64({}));
    j.invars = {x};
    j.eqns.push_back(Eqn{&add_p, {x, v}, {}, {y}});
    j.outvars = {y};
    return j;
  };
  expect_equal(with_free(free), with_free(free));
  EXPECT_FALSE(with_free(free) == with_free(Var(f64({}))));
}

}  // namespace test_rt_jaxpr
