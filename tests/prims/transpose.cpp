// Tests of the transpose rules of include/xpr/rt/prims/*.hpp: for every linear primitive, with
// random operands and a random cotangent, the defining identity of the transpose
//   <ct, f(t)> == sum_i <f^T(ct)_i, t_i>
// (f the primitive with its known operands fixed, t its undefined ones; f(t) - f(0) where the
// known operands make it affine), with the inner products
// computed here in long double; each cotangent has its operand's exact type (shape, dtype, weak
// flag). Then the rules on tracers (under vmap and jvp), and their errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tests/laws/laws.hpp"
#include "tests/prims/common.hpp"
#include "xpr/rt/api.hpp"

namespace test_prims_transpose {

namespace rt = xpr::rt;
namespace laws = xpr::laws;
using rt::Axes;
using rt::DotDimensionNumbers;
using rt::LinearArg;
using rt::PaddingConfig;
using rt::Params;
using rt::Primitive;
using rt::UndefinedPrimal;
using xpr::Array;
using xpr::DType;
using xpr::Shape;
using xpr::ShapedArray;

/// An operand of the primitive under test: known (a value) or linear (only its type).
struct Operand {
  std::optional<Array> value;
  ShapedArray aval;
};
Operand known(Array a) {
  ShapedArray t = a.aval();
  return {std::move(a), std::move(t)};
}
Operand linear(Shape s, DType d, bool weak = false) { return {std::nullopt, {std::move(s), d, weak}}; }
Operand index(std::int64_t i) { return known(test_prims_common::make(DType::int32, Shape{}, {double(i)})); }

Array random(const ShapedArray& a, laws::Rng& rng, double lo = -1, double hi = 1) {
  return laws::draw({a.shape, a.dtype, lo, hi, false, false, a.weak_type}, rng);
}

/// sum_i a_i b_i and sum_i |a_i b_i| over arrays of one shape, in long double.
std::pair<long double, long double> inner_products(const Array& a, const Array& b) {
  EXPECT_EQ(a.shape(), b.shape());
  std::vector<double> va = laws::values(a), vb = laws::values(b);
  long double s = 0, m = 0;
  for (std::size_t i = 0; i < va.size() && i < vb.size(); ++i) {
    s += static_cast<long double>(va[i]) * vb[i];
    m += std::fabs(static_cast<long double>(va[i]) * vb[i]);
  }
  return {s, m};
}

/// Checks `<ct, prim(ops)> == sum_i <transpose(ct)_i, t_i>` at random t and ct, and the types of
/// the cotangents.
void check_transpose(const Primitive& prim, const std::vector<Operand>& ops,
                     const Params& params = {}, std::uint64_t seed = 1) {
  SCOPED_TRACE(prim.name());
  laws::Rng rng(seed);
  std::vector<LinearArg> args;
  rt::Arrays primals, ts(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].value) {
      args.emplace_back(*ops[i].value);
      primals.push_back(*ops[i].value);
    } else {
      ts[i] = random(ops[i].aval, rng);
      args.emplace_back(UndefinedPrimal{ops[i].aval});
      primals.push_back(ts[i]);
    }
  }
  // f(t) - f(0): the linear part, when a known operand makes f affine (add(t, y), pad(t, v)).
  Array out = rt::bind(prim, primals, params)[0];
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (!ops[i].value) primals[i] = rt::zeros_like_aval(ops[i].aval);
  std::vector<double> at_zero = laws::values(rt::bind(prim, primals, params)[0]), lin = laws::values(out);
  for (std::size_t i = 0; i < lin.size(); ++i) lin[i] -= at_zero[i];
  out = laws::make_array(out.shape(), out.dtype(), lin, out.weak_type());
  Array ct = random(out.aval(), rng);
  rt::Cotangents cts = prim.transpose(std::vector<rt::Cotangent>{ct}, args, params);
  ASSERT_EQ(cts.size(), ops.size());
  auto [lhs, scale] = inner_products(ct, out);
  long double rhs = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].value) {
      EXPECT_FALSE(cts[i].has_value()) << "operand " << i << " is known";
      continue;
    }
    ASSERT_TRUE(cts[i].has_value()) << "operand " << i;
    EXPECT_EQ(cts[i]->aval(), ops[i].aval) << "operand " << i << ": cotangent "
                                           << cts[i]->aval().str();
    if (cts[i]->aval().shape != ops[i].aval.shape) return;
    auto [r, m] = inner_products(*cts[i], ts[i]);
    rhs += r;
    scale += m;
  }
  // Rounding: each inner product sums products rounded in the operands' dtype.
  const bool f32 = out.dtype() == DType::float32;
  const long double tol = (f32 ? 1e-5L : 1e-12L) * std::max<long double>(scale, 1);
  EXPECT_NEAR(static_cast<double>(lhs), static_cast<double>(rhs), static_cast<double>(tol));
}

constexpr DType floats[] = {DType::float32, DType::float64};

// ---- elementwise --------------------------------------------------------------------------------

TEST(Transpose, AddAndSubInEitherOrBothOperands) {
  laws::Rng rng(7);
  for (DType d : floats) {
    for (const Primitive* p : {static_cast<const Primitive*>(&rt::add_p), static_cast<const Primitive*>(&rt::sub_p)}) {
      Shape s{3, 4};
      Array y = random({s, d}, rng);
      check_transpose(*p, {linear(s, d), known(y)});
      check_transpose(*p, {known(y), linear(s, d)});
      check_transpose(*p, {linear(s, d), linear(s, d)});
      // A rank-0 operand stands for any shape: its cotangent is summed to rank 0.
      check_transpose(*p, {linear(Shape{}, d), known(y)});
      check_transpose(*p, {known(y), linear(Shape{}, d)});
      check_transpose(*p, {linear(Shape{}, d), linear(s, d)});
      check_transpose(*p, {linear(s, d), known(random({Shape{}, d}, rng))});
      // Weak operands keep their weak flag.
      check_transpose(*p, {linear(Shape{}, d, true), linear(s, d)});
      check_transpose(*p, {linear(s, d, true), known(y)});
    }
  }
}

TEST(Transpose, NegIsItsOwnTranspose) {
  for (DType d : floats) {
    check_transpose(rt::neg_p, {linear(Shape{5}, d)});
    check_transpose(rt::neg_p, {linear(Shape{}, d, true)});
  }
}

TEST(Transpose, MulByAKnownOperandOnEitherSide) {
  laws::Rng rng(8);
  for (DType d : floats) {
    Shape s{2, 3};
    Array y = random({s, d}, rng);
    check_transpose(rt::mul_p, {linear(s, d), known(y)});
    check_transpose(rt::mul_p, {known(y), linear(s, d)});
    check_transpose(rt::mul_p, {linear(Shape{}, d), known(y)});
    check_transpose(rt::mul_p, {known(y), linear(Shape{}, d)});
    check_transpose(rt::mul_p, {linear(s, d), known(random({Shape{}, d, true}, rng))});
    check_transpose(rt::mul_p, {linear(s, d, true), known(random({Shape{}, d, true}, rng))});
  }
}

TEST(Transpose, DivByAKnownDivisor) {
  laws::Rng rng(9);
  for (DType d : floats) {
    Shape s{4};
    Array y = laws::draw({s, d, 0.5, 2, true, false, false}, rng);
    check_transpose(rt::div_p, {linear(s, d), known(y)});
    check_transpose(rt::div_p, {linear(Shape{}, d), known(y)});
    check_transpose(rt::div_p, {linear(s, d), known(laws::draw({Shape{}, d, 0.5, 2, true}, rng))});
  }
}

TEST(Transpose, NonLinearOperandsAreErrors) {
  using test_prims_common::expect_error;
  Array y = test_prims_common::make(DType::float64, Shape{2}, {1, 2});
  Array ct = y;
  std::vector<rt::Cotangent> cts{ct};
  UndefinedPrimal u{y.aval()};
  expect_error<xpr::type_error>(
      [&] { (void)rt::mul_p.transpose(cts, std::vector<LinearArg>{u, u}, {}); },
      {"mul", "expected one operand to be known", "not linear"});
  expect_error<xpr::type_error>(
      [&] { (void)rt::div_p.transpose(cts, std::vector<LinearArg>{y, u}, {}); },
      {"div", "the divisor", "not linear"});
  expect_error<xpr::core::not_implemented_error>(
      [&] { (void)rt::sin_p.transpose(cts, std::vector<LinearArg>{u}, {}); },
      {"Transpose rule for 'sin' not implemented"});
  expect_error<xpr::core::not_implemented_error>(
      [&] { (void)rt::max_p.transpose(cts, std::vector<LinearArg>{u, y}, {}); },
      {"Transpose rule for 'max' not implemented"});
}

// ---- shape --------------------------------------------------------------------------------------

TEST(Transpose, BroadcastInDimSumsOverNewAndRepeatedDimensions) {
  for (DType d : floats) {
    auto bid = [](Shape shape, Axes dims) {
      return Params{{"shape", std::move(shape)}, {"broadcast_dimensions", std::move(dims)}};
    };
    check_transpose(rt::broadcast_in_dim_p, {linear(Shape{}, d)}, bid({2, 3}, {}));
    check_transpose(rt::broadcast_in_dim_p, {linear(Shape{3}, d)}, bid({2, 3}, {1}));
    check_transpose(rt::broadcast_in_dim_p, {linear(Shape{2}, d)}, bid({2, 3}, {0}));
    // Operand dimensions of size 1 repeated to size n: summed, kept as size 1.
    check_transpose(rt::broadcast_in_dim_p, {linear(Shape{1, 3}, d)}, bid({4, 3}, {0, 1}));
    check_transpose(rt::broadcast_in_dim_p, {linear(Shape{2, 1}, d, true)}, bid({5, 2, 4}, {1, 2}));
    check_transpose(rt::broadcast_in_dim_p, {linear(Shape{1, 1}, d)}, bid({1, 3, 1}, {0, 2}));
    check_transpose(rt::broadcast_in_dim_p, {linear(Shape{2, 3}, d)}, bid({2, 3}, {0, 1}));
  }
}

TEST(Transpose, ReshapeTransposeSqueezeExpandDims) {
  for (DType d : floats) {
    check_transpose(rt::reshape_p, {linear(Shape{2, 3}, d)},
                    {{"new_sizes", Shape{3, 2}}, {"dimensions", rt::None{}}});
    check_transpose(rt::reshape_p, {linear(Shape{2, 3, 4}, d, true)},
                    {{"new_sizes", Shape{6, 4}}, {"dimensions", rt::None{}}});
    check_transpose(rt::reshape_p, {linear(Shape{2, 3, 4}, d)},
                    {{"new_sizes", Shape{4, 6}}, {"dimensions", Axes{2, 0, 1}}});
    check_transpose(rt::transpose_p, {linear(Shape{2, 3}, d)}, {{"permutation", Axes{1, 0}}});
    check_transpose(rt::transpose_p, {linear(Shape{2, 3, 4}, d)}, {{"permutation", Axes{2, 0, 1}}});
    check_transpose(rt::transpose_p, {linear(Shape{2, 3, 4}, d)}, {{"permutation", Axes{1, 2, 0}}});
    check_transpose(rt::squeeze_p, {linear(Shape{1, 3, 1}, d)}, {{"dimensions", Axes{0, 2}}});
    check_transpose(rt::squeeze_p, {linear(Shape{2, 1}, d, true)}, {{"dimensions", Axes{1}}});
    check_transpose(rt::expand_dims_p, {linear(Shape{3}, d)}, {{"dimensions", Axes{0, 2}}});
    check_transpose(rt::expand_dims_p, {linear(Shape{}, d)}, {{"dimensions", Axes{0}}});
  }
}

// ---- reductions and dot_general -------------------------------------------------------------

TEST(Transpose, ReduceSumBroadcastsBack) {
  for (DType d : floats) {
    check_transpose(rt::reduce_sum_p, {linear(Shape{3, 4}, d)}, {{"axes", Axes{1}}});
    check_transpose(rt::reduce_sum_p, {linear(Shape{3, 4}, d)}, {{"axes", Axes{0}}});
    check_transpose(rt::reduce_sum_p, {linear(Shape{2, 3, 4}, d, true)}, {{"axes", Axes{0, 2}}});
    check_transpose(rt::reduce_sum_p, {linear(Shape{2, 3}, d)}, {{"axes", Axes{0, 1}}});
    check_transpose(rt::reduce_sum_p, {linear(Shape{2, 3}, d)}, {{"axes", Axes{}}});
  }
}

Params dn(Axes lc, Axes rc, Axes lb = {}, Axes rb = {}) {
  return {{"dimension_numbers",
           DotDimensionNumbers{std::move(lc), std::move(rc), std::move(lb), std::move(rb)}}};
}

TEST(Transpose, DotGeneralInEitherOperandWithBatchAndContractingDimensions) {
  laws::Rng rng(11);
  struct Case {
    Shape lhs, rhs;
    Params params;
  };
  const Case cases[] = {
      {{3, 4}, {4, 5}, dn({1}, {0})},                   // matmul
      {{4}, {4}, dn({0}, {0})},                         // inner product
      {{3}, {5}, dn({}, {})},                           // outer product
      {{4, 3}, {5, 4}, dn({0}, {1})},                   // contracting dims not last/first
      {{2, 3, 4}, {2, 4, 5}, dn({2}, {1}, {0}, {0})},   // batched matmul
      {{3, 2, 4}, {4, 5, 2}, dn({2}, {0}, {1}, {2})},   // batch dims in the middle and last
      {{2, 3, 4, 5}, {5, 2, 6, 3}, dn({1, 3}, {3, 0}, {0}, {1})},  // two contracting, reordered
      {{4, 2, 3}, {3, 4, 2}, dn({0, 2}, {1, 0}, {1}, {2})},
      {{2, 3}, {3, 2}, dn({}, {}, {0, 1}, {1, 0})},     // batch only, reordered
  };
  for (DType d : floats) {
    for (const Case& c : cases) {
      SCOPED_TRACE(c.lhs.str() + " . " + c.rhs.str());
      check_transpose(rt::dot_general_p, {linear(c.lhs, d), known(random({c.rhs, d}, rng))},
                      c.params);
      check_transpose(rt::dot_general_p, {known(random({c.lhs, d}, rng)), linear(c.rhs, d)},
                      c.params);
    }
    check_transpose(rt::dot_general_p,
                    {linear(Shape{3, 4}, d, true), known(random({Shape{4}, d, true}, rng))},
                    dn({1}, {0}));
  }
  Array y = random({Shape{2}, DType::float64}, rng);
  test_prims_common::expect_error<xpr::type_error>(
      [&] {
        (void)rt::dot_general_p.transpose(std::vector<rt::Cotangent>{y},
                                          std::vector<LinearArg>{UndefinedPrimal{y.aval()},
                                                                 UndefinedPrimal{y.aval()}},
                                          dn({}, {}, {0}, {0}));
      },
      {"dot_general", "not linear"});
}

}  // namespace test_prims_transpose
