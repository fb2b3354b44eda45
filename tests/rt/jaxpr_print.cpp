// Tests of rt/jaxpr_print.hpp. Every expected text is written by hand from JAX's syntax and its
// printer (jax/_src/core.py: pp_jaxpr_skeleton, pp_eqn, pp_kv_pairs; jax/_src/pretty_printer.py:
// groups that fit in 80 columns print flat) and Python's repr of numbers.
#include "xpr/rt/jaxpr_print.hpp"

#include <cmath>
#include <limits>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/prims/binary.hpp"
#include "xpr/rt/prims/convert.hpp"
#include "xpr/rt/prims/dot_general.hpp"
#include "xpr/rt/prims/iota.hpp"
#include "xpr/rt/prims/reduce.hpp"
#include "xpr/rt/prims/select.hpp"
#include "xpr/rt/prims/shape.hpp"
#include "xpr/rt/prims/slicing.hpp"
#include "xpr/rt/prims/unary.hpp"

namespace test_rt_jaxpr_print {

using namespace xpr::rt;
using xpr::DType;
using xpr::Shape;

ShapedArray f64(Shape s) { return {std::move(s), DType::float64, false}; }

std::string str(const Jaxpr& j) {
  std::ostringstream os;
  os << j;
  return os.str();
}

/// An equation whose results are typed by the primitive's abstract evaluation.
Eqn eqn(const Primitive& p, std::vector<Atom> ins, Params params = {}) {
  Avals in_avals;
  for (const Atom& a : ins) in_avals.push_back(aval_of(a));
  Eqn e{&p, std::move(ins), std::move(params), {}};
  for (ShapedArray& a : p.abstract_eval(in_avals, e.params)) e.outputs.emplace_back(std::move(a));
  return e;
}

/// A primitive with two results (for `_`).
class SplitPrim final : public Primitive {
 public:
  SplitPrim() : Primitive("print_test_split", true) {}
  Avals abstract_eval(std::span<const ShapedArray> args, const Params&) const override {
    return {args[0], args[0]};
  }
};
const SplitPrim split_p;

/// Higher-order primitives: a switch over `branches`, and a call of `jaxpr`.
class CondPrim final : public Primitive {
 public:
  CondPrim() : Primitive("print_test_cond") {}
  Avals abstract_eval(std::span<const ShapedArray>, const Params& params) const override {
    return params.get<JaxprTuple>("branches")[0]->out_avals();
  }
};
const CondPrim cond_p;

class CallPrim final : public Primitive {
 public:
  CallPrim() : Primitive("print_test_call") {}
  Avals abstract_eval(std::span<const ShapedArray>, const Params& params) const override {
    return params.get<JaxprParam>("jaxpr")->out_avals();
  }
};
const CallPrim call_p;

/// `{ lambda ; x. let y = p x in (y,) }` for a unary primitive `p`, and a chain of `n` of them.
std::shared_ptr<const ClosedJaxpr> unary_jaxpr(const Primitive& p, int n = 1) {
  Jaxpr j;
  Var x(f64({}));
  j.invars = {x};
  Atom cur = x;
  for (int i = 0; i < n; ++i) {
    j.eqns.push_back(eqn(p, {cur}));
    cur = j.eqns.back().outputs[0];
  }
  j.outvars = {cur};
  return std::make_shared<const ClosedJaxpr>(ClosedJaxpr{std::move(j), {}});
}

TEST(JaxprPrint, Func1OfTheJaxprDocs) {
  // func1(first, second) = sum(first + sin(second) * 3.0) on two f64[8].
  Var a(f64({8})), b(f64({8}));
  Jaxpr j;
  j.invars = {a, b};
  j.eqns.push_back(eqn(sin_p, {b}));
  j.eqns.push_back(eqn(mul_p, {j.eqns[0].outputs[0], Literal{Array(3.0)}}));
  j.eqns.push_back(eqn(add_p, {a, j.eqns[1].outputs[0]}));
  j.eqns.push_back(eqn(reduce_sum_p, {j.eqns[2].outputs[0]}, {{"axes", Axes{0}}}));
  j.outvars = {j.eqns[3].outputs[0]};
  const std::string expected =
      "{ lambda ; a:f64[8] b:f64[8]. let\n"
      "    c:f64[8] = sin b\n"
      "    d:f64[8] = mul c 3.0:f64[]\n"
      "    e:f64[8] = add a d\n"
      "    f:f64[] = reduce_sum[axes=(0,)] e\n"
      "  in (f,) }";
  EXPECT_EQ(str(j), expected);
  EXPECT_EQ(pretty_print(j), expected);
  // A ClosedJaxpr prints as its jaxpr; one equation prints with the names it has in the jaxpr.
  std::ostringstream os;
  os << ClosedJaxpr{j, {}};
  EXPECT_EQ(os.str(), expected);
  EXPECT_EQ(pretty_print_eqn(j, 1), "d:f64[8] = mul c 3.0:f64[]");
}

TEST(JaxprPrint, ShortJaxprsFitOnOneLine) {
  Var a(f64({}));
  Jaxpr one;
  one.invars = {a};
  one.eqns.push_back(eqn(sin_p, {a}));
  one.outvars = {one.eqns[0].outputs[0]};
  EXPECT_EQ(str(one), "{ lambda ; a:f64[]. let b:f64[] = sin a in (b,) }");

  Jaxpr two = one;
  two.eqns.push_back(eqn(cos_p, {one.eqns[0].outputs[0]}));
  two.outvars = {two.eqns[1].outputs[0]};
  EXPECT_EQ(str(two), "{ lambda ; a:f64[]. let b:f64[] = sin a; c:f64[] = cos b in (c,) }");

  Jaxpr none;  // no equations: JAX prints the two breaks around the empty list as spaces
  none.invars = {a};
  none.outvars = {a};
  EXPECT_EQ(str(none), "{ lambda ; a:f64[]. let  in (a,) }");
}

TEST(JaxprPrint, ConstvarsBeforeTheSemicolon) {
  Var k(f64({3})), x(f64({}));
  Jaxpr j;
  j.constvars = {k};
  j.invars = {x};
  j.eqns.push_back(eqn(mul_p, {k, x}));
  j.eqns.push_back(eqn(reduce_sum_p, {j.eqns[0].outputs[0]}, {{"axes", Axes{0}}}));
  j.outvars = {j.eqns[1].outputs[0]};
  EXPECT_EQ(str(j),
            "{ lambda a:f64[3]; b:f64[]. let\n"
            "    c:f64[3] = mul a b\n"
            "    d:f64[] = reduce_sum[axes=(0,)] c\n"
            "  in (d,) }");
}

TEST(JaxprPrint, SeveralOutputsAndLiteralOutputs) {
  Var a(f64({}));
  Jaxpr j;
  j.invars = {a};
  j.eqns.push_back(eqn(sin_p, {a}));
  j.eqns.push_back(eqn(cos_p, {a}));
  j.outvars = {j.eqns[0].outputs[0], j.eqns[1].outputs[0], Literal{Array(1.0)}};
  EXPECT_EQ(str(j),
            "{ lambda ; a:f64[]. let b:f64[] = sin a; c:f64[] = cos a in (b, c, 1.0:f64[]) }");

  Jaxpr lit;
  lit.invars = {a};
  lit.outvars = {Literal{Array(1.0)}};
  EXPECT_EQ(str(lit), "{ lambda ; a:f64[]. let  in (1.0:f64[],) }");

  Jaxpr nothing;
  EXPECT_EQ(str(nothing), "{ lambda ; . let  in () }");
}

TEST(JaxprPrint, UnusedResultsPrintAsUnderscore) {
  Var a(f64({}));
  Jaxpr j;
  j.invars = {a};
  j.eqns.push_back(eqn(split_p, {a}));
  j.outvars = {j.eqns[0].outputs[0]};
  EXPECT_EQ(str(j), "{ lambda ; a:f64[]. let b:f64[] _:f64[] = print_test_split a in (b,) }");

  Jaxpr dead;  // a single result nobody uses
  dead.invars = {a};
  dead.eqns.push_back(eqn(sin_p, {a}));
  dead.outvars = {a};
  EXPECT_EQ(str(dead), "{ lambda ; a:f64[]. let _:f64[] = sin a in (a,) }");
}

TEST(JaxprPrint, ParamsSortedAndSpelledAsPython) {
  Var a(f64({3})), b(f64({3, 4}));
  Jaxpr j;
  j.invars = {a, b};
  // Given out of order: JAX's printer sorts parameters by name.
  j.eqns.push_back(
      eqn(broadcast_in_dim_p, {a}, {{"shape", Shape{3, 4}}, {"broadcast_dimensions", Axes{0}}}));
  j.eqns.push_back(eqn(convert_element_type_p, {j.eqns[0].outputs[0]},
                       {{"weak_type", false}, {"new_dtype", DType::float32}}));
  j.eqns.push_back(
      eqn(dot_general_p, {b, b}, {{"dimension_numbers", DotDimensionNumbers{{1}, {1}, {}, {}}}}));
  j.eqns.push_back(
      eqn(pad_p, {a, Literal{Array(0.0)}}, {{"padding_config", PaddingConfig{{{1, 2, 0}}}}}));
  j.eqns.push_back(eqn(
      iota_p, {}, {{"dtype", DType::int32}, {"shape", Shape{3}}, {"dimension", std::int64_t{0}}}));
  j.eqns.push_back(eqn(transpose_p, {b}, {{"permutation", Axes{1, 0}}}));
  for (const Eqn& e : j.eqns) j.outvars.push_back(e.outputs[0]);
  // iota has no operands: JAX still prints the space before the (empty) operand list.
  EXPECT_EQ(str(j),
            "{ lambda ; a:f64[3] b:f64[3,4]. let\n"
            "    c:f64[3,4] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(3, 4)] a\n"
            "    d:f32[3,4] = convert_element_type[new_dtype=float32 weak_type=False] c\n"
            "    e:f64[3,3] = dot_general[dimension_numbers=(([1], [1]), ([], []))] b b\n"
            "    f:f64[6] = pad[padding_config=((1, 2, 0),)] a 0.0:f64[]\n"
            "    g:i32[3] = iota[dimension=0 dtype=int32 shape=(3,)] \n"
            "    h:f64[4,3] = transpose[permutation=(1, 0)] b\n"
            "  in (c, d, e, f, g, h) }");
}

TEST(JaxprPrint, LiteralsAsPythonPrintsThem) {
  Var a(f64({}));
  Jaxpr j;
  j.invars = {a};
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Atom cur = a;
  for (double lit : {0.1, 1e-05, inf, nan, -2.5}) {
    j.eqns.push_back(eqn(add_p, {cur, Literal{Array(lit)}}));
    cur = j.eqns.back().outputs[0];
  }
  j.outvars = {cur};
  EXPECT_EQ(str(j),
            "{ lambda ; a:f64[]. let\n"
            "    b:f64[] = add a 0.1:f64[]\n"
            "    c:f64[] = add b 1e-05:f64[]\n"
            "    d:f64[] = add c inf:f64[]\n"
            "    e:f64[] = add d nan:f64[]\n"
            "    f:f64[] = add e -2.5:f64[]\n"
            "  in (f,) }");

  Var i(ShapedArray{{}, DType::int32, false});
  Jaxpr k;
  k.invars = {i};
  k.eqns.push_back(eqn(add_p, {i, Literal{Array(2)}}));
  k.eqns.push_back(eqn(select_n_p, {Literal{Array(true)}, i, k.eqns[0].outputs[0]}));
  k.outvars = {k.eqns[1].outputs[0]};
  EXPECT_EQ(str(k),
            "{ lambda ; a:i32[]. let\n"
            "    b:i32[] = add a 2:i32[]\n"
            "    c:i32[] = select_n True:bool[] a b\n"
            "  in (c,) }");

  // f32 values print their own shortest digits, as JAX prints np.float32(0.1) and as the
  // compile-time tier prints (core/float_repr.hpp), not the digits of the double they widen to.
  EXPECT_EQ(literal_value_str(Array(0.1f)), "0.1");
  EXPECT_EQ(literal_value_str(Array(1e-05f)), "1e-05");
  EXPECT_EQ(literal_value_str(Array(0.5f)), "0.5");
  EXPECT_EQ(literal_value_str(Array(std::int64_t{-7})), "-7");
  EXPECT_EQ(literal_value_str(Array(false)), "False");
  ArrayBuilder vec(f64({2}));
  vec.data<double>()[0] = vec.data<double>()[1] = 0.0;
  EXPECT_EQ(literal_value_str(std::move(vec).finish()), "[...]");
}

TEST(JaxprPrint, FloatReprMatchesPython) {
  // repr() of each value in CPython 3.
  const std::vector<std::pair<double, std::string>> cases{
      {3.0, "3.0"},
      {0.1, "0.1"},
      {1e-05, "1e-05"},
      {2.5e-05, "2.5e-05"},
      {0.0001, "0.0001"},
      {1e16, "1e+16"},
      {1e15, "1000000000000000.0"},
      {1e22, "1e+22"},
      {100.0, "100.0"},
      {123456789.125, "123456789.125"},
      {12345678901234567.0, "1.2345678901234568e+16"},
      {1.0 / 3.0, "0.3333333333333333"},
      {2.0 / 3.0, "0.6666666666666666"},
      {-0.0, "-0.0"},
      {0.0, "0.0"},
      {-1.5, "-1.5"},
      {1.5e300, "1.5e+300"},
      {5e-324, "5e-324"},
      {1.7976931348623157e308, "1.7976931348623157e+308"},
      {std::numeric_limits<double>::infinity(), "inf"},
      {-std::numeric_limits<double>::infinity(), "-inf"},
      {std::numeric_limits<double>::quiet_NaN(), "nan"},
  };
  for (const auto& [x, repr] : cases) EXPECT_EQ(float_repr(x), repr) << repr;
}

TEST(JaxprPrint, EveryParamKind) {
  auto s = [](const ParamValue& v) {
    std::ostringstream os;
    print_param_value(os, v);
    return os.str();
  };
  EXPECT_EQ(s(true), "True");
  EXPECT_EQ(s(false), "False");
  EXPECT_EQ(s(std::int64_t{-3}), "-3");
  EXPECT_EQ(s(0.5), "0.5");
  EXPECT_EQ(s(1e-05), "1e-05");
  EXPECT_EQ(s(DType::float32), "float32");
  EXPECT_EQ(s(DType::bool_), "bool");
  EXPECT_EQ(s(DType::int64), "int64");
  EXPECT_EQ(s(Shape{3, 4}), "(3, 4)");
  EXPECT_EQ(s(Shape{}), "()");
  EXPECT_EQ(s(Axes{0}), "(0,)");
  EXPECT_EQ(s(Axes{}), "()");
  EXPECT_EQ(s(Axes{2, 0, 1}), "(2, 0, 1)");
  EXPECT_EQ(s(PaddingConfig{{{1, 2, 0}}}), "((1, 2, 0),)");
  EXPECT_EQ(s(PaddingConfig{{{1, 2, 0}, {-1, 0, 3}}}), "((1, 2, 0), (-1, 0, 3))");
  EXPECT_EQ(s(PaddingConfig{}), "()");
  EXPECT_EQ(s(DotDimensionNumbers{{1}, {0}, {}, {}}), "(([1], [0]), ([], []))");
  EXPECT_EQ(s(DotDimensionNumbers{{2}, {1}, {0}, {0}}), "(([2], [1]), ([0], [0]))");
  EXPECT_EQ(s(DotDimensionNumbers{{1, 2}, {0, 1}, {}, {}}), "(([1, 2], [0, 1]), ([], []))");
  EXPECT_EQ(s(Dim{"n"}), "n");
  EXPECT_EQ(s(None{}), "None");
  EXPECT_EQ(s(unary_jaxpr(sin_p)), "{ lambda ; a:f64[]. let b:f64[] = sin a in (b,) }");
}

TEST(JaxprPrint, SubJaxprsIndentedAsJaxDoes) {
  // Names continue into the branches; results unused inside a branch keep their names.
  Jaxpr b0, b1;
  {
    Var x(f64({}));
    b0.invars = {x};
    b0.eqns.push_back(eqn(sin_p, {x}));
    b0.outvars = {b0.eqns[0].outputs[0]};
    Var y(f64({}));
    b1.invars = {y};
    b1.eqns.push_back(eqn(cos_p, {y}));
    b1.eqns.push_back(eqn(sin_p, {y}));
    b1.outvars = {b1.eqns[0].outputs[0]};
  }
  JaxprTuple branches{std::make_shared<const ClosedJaxpr>(ClosedJaxpr{b0, {}}),
                      std::make_shared<const ClosedJaxpr>(ClosedJaxpr{b1, {}})};
  Var i(ShapedArray{{}, DType::int32, false}), x(f64({}));
  Jaxpr j;
  j.invars = {i, x};
  j.eqns.push_back(eqn(cond_p, {i, x}, {{"branches", branches}}));
  j.outvars = {j.eqns[0].outputs[0]};
  EXPECT_EQ(str(j),
            "{ lambda ; a:i32[] b:f64[]. let\n"
            "    c:f64[] = print_test_cond[\n"
            "      branches=(\n"
            "        { lambda ; d:f64[]. let e:f64[] = sin d in (e,) }\n"
            "        { lambda ; f:f64[]. let g:f64[] = cos f; h:f64[] = sin f in (g,) }\n"
            "      )\n"
            "    ] a b\n"
            "  in (c,) }");
}

TEST(JaxprPrint, SharedSubJaxprsAreHoisted) {
  // A sub-jaxpr used twice is printed once, first, and referred to by name.
  auto sub = unary_jaxpr(sin_p);
  Var a(f64({}));
  Jaxpr j;
  j.invars = {a};
  j.eqns.push_back(eqn(call_p, {a}, {{"jaxpr", sub}}));
  j.eqns.push_back(eqn(call_p, {j.eqns[0].outputs[0]}, {{"jaxpr", sub}}));
  j.outvars = {j.eqns[1].outputs[0]};
  EXPECT_EQ(str(j),
            "let jaxpr = { lambda ; a:f64[]. let b:f64[] = sin a in (b,) } in\n"
            "{ lambda ; c:f64[]. let\n"
            "    d:f64[] = print_test_call[jaxpr=jaxpr] c\n"
            "    e:f64[] = print_test_call[jaxpr=jaxpr] d\n"
            "  in (e,) }");

  // A sub-jaxpr of more than 10 equations is hoisted even when used once.
  Jaxpr big;
  big.invars = {a};
  big.eqns.push_back(eqn(call_p, {a}, {{"jaxpr", unary_jaxpr(sin_p, 11)}}));
  big.outvars = {big.eqns[0].outputs[0]};
  EXPECT_EQ(str(big),
            "let jaxpr = { lambda ; a:f64[]. let\n"
            "    b:f64[] = sin a\n"
            "    c:f64[] = sin b\n"
            "    d:f64[] = sin c\n"
            "    e:f64[] = sin d\n"
            "    f:f64[] = sin e\n"
            "    g:f64[] = sin f\n"
            "    h:f64[] = sin g\n"
            "    i:f64[] = sin h\n"
            "    j:f64[] = sin i\n"
            "    k:f64[] = sin j\n"
            "    l:f64[] = sin k\n"
            "  in (l,) } in\n"
            "{ lambda ; m:f64[]. let n:f64[] = print_test_call[jaxpr=jaxpr] m in (n,) }");

  Jaxpr ten;
  ten.invars = {a};
  ten.eqns.push_back(eqn(call_p, {a}, {{"jaxpr", unary_jaxpr(sin_p, 10)}}));
  ten.outvars = {ten.eqns[0].outputs[0]};
  EXPECT_EQ(str(ten).rfind("{ lambda ; a:f64[]. let\n    b:f64[] = print_test_call[\n", 0), 0u)
      << str(ten);
}

TEST(JaxprPrint, LongBinderListsWrap) {
  // Each separator is its own group: the line is broken only when it has run past 80 columns.
  Jaxpr j;
  for (int k = 0; k < 8; ++k) j.invars.emplace_back(f64({100, 100}));
  j.eqns.push_back(eqn(add_p, {j.invars[0], j.invars[7]}));
  j.outvars = {j.eqns[0].outputs[0]};
  EXPECT_EQ(
      str(j),
      "{ lambda ; a:f64[100,100] b:f64[100,100] c:f64[100,100] d:f64[100,100] e:f64[100,100]\n"
      "    f:f64[100,100] g:f64[100,100] h:f64[100,100]. let\n"
      "    i:f64[100,100] = add a h\n"
      "  in (i,) }");
}

TEST(JaxprPrint, NamesPastZ) {
  Jaxpr j;
  for (int k = 0; k < 28; ++k) j.invars.emplace_back(f64({}));
  j.outvars = {j.invars[25], j.invars[26], j.invars[27]};
  std::string s;  // the text with its line breaks and indentation collapsed into single spaces
  for (char c : str(j))
    if (c == '\n')
      s += ' ';
    else if (!(c == ' ' && !s.empty() && s.back() == ' '))
      s += c;
  EXPECT_NE(s.find(" y:f64[] z:f64[] ba:f64[] bb:f64[]. let"), std::string::npos) << s;
  EXPECT_NE(s.find("in (z, ba, bb) }"), std::string::npos) << s;
}

}  // namespace test_rt_jaxpr_print
