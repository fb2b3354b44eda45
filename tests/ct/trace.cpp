// Tests of the compile-time tier's tracing, graph and printing (include/xpr/ct/{tracer,graph,
// print,trace}.hpp): equation counts after common subexpressions merge, literals that never
// merge, constant folding, simplification, derived jaxprs free of 0/1 arithmetic, and the
// compile-time text of known functions against JAX's syntax written out by hand.
#include <array>
#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>
#include <tuple>

#include <gtest/gtest.h>

#include "xpr/ct/ct.hpp"

namespace {

namespace ct = xpr::ct;
using ct::Prim;

// Equations a jaxpr prints (inputs and literals are not equations).
template <class P>
constexpr int num_equations(const P& p) {
  int n = 0;
  for (std::size_t i = 0; i < P::num_eqns; ++i)
    n += p.eqns[i].prim != Prim::arg && p.eqns[i].prim != Prim::lit;
  return n;
}
template <class P>
constexpr int count(const P& p, Prim prim) {
  int n = 0;
  for (std::size_t i = 0; i < P::num_eqns; ++i) n += p.eqns[i].prim == prim;
  return n;
}
// True when some equation multiplies or divides by a literal 0, 1 or -1, or adds or subtracts a
// literal 0: what simplification must have removed.
template <class P>
constexpr bool has_trivial_arithmetic(const P& p) {
  auto literal = [&](int i, double v) {
    return p.eqns[i].prim == Prim::lit && p.eqns[i].value() == v;
  };
  for (std::size_t i = 0; i < P::num_eqns; ++i) {
    const ct::Eqn& e = p.eqns[i];
    for (int k = 0; k < 2; ++k) {
      int x = e.in[k];
      if (x < 0) continue;
      if (e.prim == Prim::mul && (literal(x, 0) || literal(x, 1) || literal(x, -1))) return true;
      if (e.prim == Prim::div && k == 1 && (literal(x, 1) || literal(x, -1))) return true;
      if ((e.prim == Prim::add || e.prim == Prim::sub) && literal(x, 0)) return true;
    }
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Tracing and merging
// ---------------------------------------------------------------------------------------------
constexpr auto shared = [](auto x) { return xpr::sin(x) * xpr::sin(x) + xpr::sin(x); };
constexpr auto literals = [](auto x) { return x * 2.0 + x * 3.0 + x * 2.0; };
constexpr auto commuted = [](auto x, auto y) { return x * y + y * x; };

TEST(CtTrace, CommonSubexpressionsAreComputedOnce) {
  constexpr const auto& p = ct::jaxpr_of<decltype(shared), double>;
  static_assert(num_equations(p) == 3);  // sin, mul, add
  static_assert(count(p, Prim::sin) == 1);
  EXPECT_EQ(num_equations(p), 3);
  constexpr const auto& q = ct::jaxpr_of<decltype(commuted), double, double>;
  // x*y and y*x are one product; its sum with itself is 2 * (x*y), exactly.
  static_assert(count(q, Prim::mul) == 2 && count(q, Prim::add) == 0);
}

TEST(CtTrace, DifferentLiteralsNeverMerge) {
  constexpr const auto& p = ct::jaxpr_of<decltype(literals), double>;
  // x*2 (once, shared), x*3, and two adds
  static_assert(count(p, Prim::mul) == 2);
  static_assert(count(p, Prim::add) == 2);
  static_assert(count(p, Prim::lit) == 2);
  EXPECT_EQ(ct::make_jaxpr<double>(literals),
            "{ lambda ; a:f64[]. let\n"
            "    b:f64[] = mul a 2.0:f64[]\n"
            "    c:f64[] = mul a 3.0:f64[]\n"
            "    d:f64[] = add b c\n"
            "    e:f64[] = add d b\n"
            "  in (e,) }");
}

constexpr auto simplified = [](auto x) {
  auto one = x * 1.0 + 0.0;       // x
  auto zero = 0.0 * xpr::exp(x);  // 0 (the exp is dead)
  return (one - zero) / 1 + (2.0 * 3.0 - 6.0) * x;
};
constexpr auto folded = [](auto x) {
  decltype(x) c = 2;  // a constant tracer: folded, never recorded
  c = c * c + xpr::sqrt(c * 8.0);
  return x * c;
};

TEST(CtTrace, ArithmeticWithZeroAndOneLeavesNoEquation) {
  constexpr const auto& p = ct::jaxpr_of<decltype(simplified), double>;
  static_assert(num_equations(p) == 0);
  EXPECT_EQ(ct::make_jaxpr<double>(simplified), "{ lambda ; a:f64[]. let  in (a,) }");
}

TEST(CtTrace, ConstantsFold) {
  // c = 2*2 + sqrt(16) = 8
  EXPECT_EQ(ct::make_jaxpr<double>(folded),
            "{ lambda ; a:f64[]. let\n"
            "    b:f64[] = mul a 8.0:f64[]\n"
            "  in (b,) }");
}

// ---------------------------------------------------------------------------------------------
// Exact simplifications: constants gathered only where the result is bit for bit the same
// ---------------------------------------------------------------------------------------------
constexpr auto square_term = [](auto x) { return 100 * xpr::square(x); };
constexpr auto negated_scale = [](auto x) { return -(3.0 * x); };
constexpr auto inexact_scales = [](auto x) { return 3.0 * (5.0 * x); };
constexpr auto subnormal_scales = [](auto x) { return 1e-300 * (0x1p-100 * x); };
constexpr auto half_square = [](auto x) { return -0.5 * x * x; };
constexpr auto quotient = [](auto x, auto y) { return x / y; };
constexpr auto reciprocal = [](auto x) { return 1 / (1 + x); };
constexpr auto split = [](auto x, auto y) {
  return xpr::where(x > 0, x, 0.0) + xpr::where(x > 0, 0.0, y);
};
constexpr auto split_difference = [](auto x, auto y) {
  return xpr::where(x > 0, x, 0.0) - xpr::where(x > 0, 0.0, y);
};
// Signs and selects on one predicate.
constexpr auto nested_select = [](auto x, auto y) {
  return xpr::where(x > 0, xpr::where(x > 0, x, y), 2.0 * y);
};
constexpr auto negated_select = [](auto x, auto y) { return -xpr::where(x > 0, -y, y); };
constexpr auto signed_product = [](auto x, auto y) { return y * xpr::where(x > 0, 1.0, -1.0); };
constexpr auto negated_factors = [](auto x, auto y) { return (-x) * (-y); };
constexpr auto log_ratio = [](auto x, auto k) { return xpr::log(x / k); };

TEST(CtTrace, ConstantsGatherWhereExact) {
  // d/dx 100 x^2: the square's 2x and the 100 become one multiplication by 200.
  EXPECT_EQ(ct::make_jaxpr<double>(ct::grad(square_term)),
            "{ lambda ; a:f64[]. let\n"
            "    b:f64[] = mul a 200.0:f64[]\n"
            "  in (b,) }");
  EXPECT_EQ(ct::grad(square_term)(0.3), 200 * 0.3);
  // -(3x) = x * -3 exactly.
  EXPECT_EQ(ct::make_jaxpr<double>(negated_scale),
            "{ lambda ; a:f64[]. let\n"
            "    b:f64[] = mul a -3.0:f64[]\n"
            "  in (b,) }");
  // 3 (5 x) and 15 x round differently, so nothing is gathered; nor when the product of the
  // constants would be subnormal.
  constexpr const auto& p = ct::jaxpr_of<decltype(inexact_scales), double>;
  static_assert(count(p, Prim::mul) == 2);
  constexpr const auto& q = ct::jaxpr_of<decltype(subnormal_scales), double>;
  static_assert(count(q, Prim::mul) == 2);
  for (double x : {0.1, 1.0 / 3.0, 7.7}) {
    double out = 0;
    ct::compiled_t<decltype(inexact_scales), double>::run(&x, &out);
    EXPECT_EQ(out, 3.0 * (5.0 * x));  // bit for bit the C++ expression
  }
}

TEST(CtTrace, DerivativesShareWork) {
  // d/dx (-0.5 x x) = -x: the jvp's terms (t * -0.5) * x and (-0.5 x) * t are one product,
  // their sum twice it, and the 2 meets the -0.5: two multiplications at most.
  constexpr const auto& h = ct::jaxpr_of<decltype(ct::grad(half_square)), double>;
  static_assert(num_equations(h) <= 2);
  for (double x : {-1.5, 0.25, 3.0}) EXPECT_DOUBLE_EQ(ct::grad(half_square)(x), -x);
  // The gradient of x / y takes two divisions (x / y and ct / y), not three.
  constexpr const auto& d =
      ct::jaxpr_of<decltype(ct::value_and_grad<0, 1>(quotient)), double, double>;
  static_assert(count(d, Prim::div) == 2);
  const auto [v, g] = ct::value_and_grad<0, 1>(quotient)(3.0, 4.0);
  EXPECT_DOUBLE_EQ(v, 0.75);
  EXPECT_DOUBLE_EQ(std::get<0>(g), 1 / 4.0);
  EXPECT_DOUBLE_EQ(std::get<1>(g), -3.0 / 16.0);
  // A reciprocal's derivative is -ans^2: one division in all.
  constexpr const auto& r = ct::jaxpr_of<decltype(ct::value_and_grad(reciprocal)), double>;
  static_assert(count(r, Prim::div) == 1);
  for (double x : {0.5, 2.0, -3.0})
    EXPECT_DOUBLE_EQ(ct::grad(reciprocal)(x), -1 / ((1 + x) * (1 + x)));
}

TEST(CtTrace, SelectsWithOnePredicateMerge) {
  // where(p, x, 0) + where(p, 0, y) = where(p, x, y): one select, no add (as the transpose of
  // a where writes them).
  constexpr const auto& p = ct::jaxpr_of<decltype(split), double, double>;
  static_assert(count(p, Prim::select) == 1 && count(p, Prim::add) == 0);
  constexpr const auto& q = ct::jaxpr_of<decltype(split_difference), double, double>;
  static_assert(count(q, Prim::select) == 1 && count(q, Prim::sub) == 0);
  for (double x : {-1.0, 0.0, 2.0}) {
    const double y = 5.0;
    EXPECT_EQ(split(x, y), x > 0 ? x : y);
    double in[2] = {x, y}, out = 0;
    ct::compiled_t<decltype(split), double, double>::run(in, &out);
    EXPECT_EQ(out, x > 0 ? x : y);
    ct::compiled_t<decltype(split_difference), double, double>::run(in, &out);
    EXPECT_EQ(out, x > 0 ? x : -y);
  }
}

TEST(CtTrace, SignsAndSelectsSimplifyBitForBit) {
  // where(p, where(p, a, b), c) reads only a: one select.
  constexpr const auto& n = ct::jaxpr_of<decltype(nested_select), double, double>;
  static_assert(count(n, Prim::select) == 1);
  // -where(p, -y, y) = where(p, y, -y): the negation of y exists, so no second neg.
  constexpr const auto& m = ct::jaxpr_of<decltype(negated_select), double, double>;
  static_assert(count(m, Prim::neg) == 1 && count(m, Prim::select) == 1);
  // y * where(p, 1, -1) = where(p, y, -y): no product.
  constexpr const auto& q = ct::jaxpr_of<decltype(signed_product), double, double>;
  static_assert(count(q, Prim::mul) == 0 && count(q, Prim::select) == 1);
  // (-x) * (-y) = x * y.
  constexpr const auto& r = ct::jaxpr_of<decltype(negated_factors), double, double>;
  static_assert(count(r, Prim::neg) == 0 && count(r, Prim::mul) == 1);
  for (double x : {-1.5, 0.0, 0.7})
    for (double y : {-2.25, 1e-310, 3.0}) {  // a subnormal y too: sign flips are exact
      double in[2] = {x, y}, out = 0;
      ct::compiled_t<decltype(nested_select), double, double>::run(in, &out);
      EXPECT_EQ(out, x > 0 ? x : 2.0 * y);
      ct::compiled_t<decltype(negated_select), double, double>::run(in, &out);
      EXPECT_EQ(out, -(x > 0 ? -y : y));
      ct::compiled_t<decltype(signed_product), double, double>::run(in, &out);
      EXPECT_EQ(out, y * (x > 0 ? 1.0 : -1.0));
      ct::compiled_t<decltype(negated_factors), double, double>::run(in, &out);
      EXPECT_EQ(out, (-x) * (-y));
    }
}

TEST(CtTrace, LogOfAQuotientDifferentiatesWithOneDivision) {
  // d/dx log(x / k) = 1 / x: the chain rule's ct / (x / k) / k becomes ct / x, one division
  // (and none of x / k's overflow): the gradient alone has exactly one.
  constexpr const auto& d = ct::jaxpr_of<decltype(ct::grad(log_ratio)), double, double>;
  static_assert(count(d, Prim::div) == 1);
  for (double x : {0.5, 3.0, 1e-300}) EXPECT_EQ(ct::grad(log_ratio)(x, 7.0), 1 / x);
  // With respect to k as well: (tx - tk (x / k)) / x, so d/dk = -(x / k) / x = -1 / k.
  const auto [gx, gk] = ct::grad<0, 1>(log_ratio)(3.0, 7.0);
  EXPECT_EQ(gx, 1 / 3.0);
  EXPECT_DOUBLE_EQ(gk, -1 / 7.0);
  // And in forward mode.
  const auto [y, t] = ct::jvp(log_ratio, std::tuple{3.0, 7.0}, std::tuple{1.0, 0.0});
  EXPECT_DOUBLE_EQ(y, std::log(3.0 / 7.0));
  EXPECT_EQ(t, 1 / 3.0);
}

// ---------------------------------------------------------------------------------------------
// Text in JAX's syntax
// ---------------------------------------------------------------------------------------------
constexpr auto f1 = [](auto x, auto y) { return xpr::sin(x) - xpr::exp(x + y); };

// The jaxpr JAX prints for this function (jvp-to-vjp, the first example), in f64.
inline constexpr std::string_view f1_text =
    "{ lambda ; a:f64[] b:f64[]. let\n"
    "    c:f64[] = sin a\n"
    "    d:f64[] = add a b\n"
    "    e:f64[] = exp d\n"
    "    f:f64[] = sub c e\n"
    "  in (f,) }";

static_assert(ct::make_jaxpr<double, double>(f1) == f1_text);

TEST(CtPrint, KnownFunctionInJaxSyntax) {
  EXPECT_EQ((ct::make_jaxpr<double, double>(f1).view()), f1_text);
  EXPECT_EQ(ct::make_jaxpr(f1)(1.0, 2.0), f1_text);  // JAX-style call
}

TEST(CtPrint, Float32ProgramsAndWeakLiterals) {
  // A C++ double literal is weakly typed: it takes the f32 of the traced value.
  constexpr auto g = [](auto x) { return x * 0.1 + xpr::integer_pow(x, 3); };
  EXPECT_EQ(ct::make_jaxpr<float>(g),
            "{ lambda ; a:f32[]. let\n"
            "    b:f32[] = mul a 0.1:f32[]\n"
            "    c:f32[] = integer_pow[y=3] a\n"
            "    d:f32[] = add b c\n"
            "  in (d,) }");
  // f32 with f64 promotes to f64.
  constexpr auto h = [](auto x, auto y) { return x * y; };
  EXPECT_EQ((ct::make_jaxpr<float, double>(h)),
            "{ lambda ; a:f32[] b:f64[]. let\n"
            "    c:f64[] = mul a b\n"
            "  in (c,) }");
}

TEST(CtPrint, SelectComparisonsAndNames) {
  // where(c, a, b) is select_n c b a; variables run a..z, ba, bb, ...
  constexpr auto g = [](auto x) {
    auto y = xpr::where(x > 1.0, xpr::cos(x), -x);
    for (int i = 0; i < 22; ++i) y = y * x;
    return y;
  };
  std::string text(ct::make_jaxpr<double>(g).view());
  EXPECT_NE(text.find("    b:bool[] = gt a 1.0:f64[]\n"
                      "    c:f64[] = cos a\n"
                      "    d:f64[] = neg a\n"
                      "    e:f64[] = select_n b d c\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("    ba:f64[] = mul z a\n  in (ba,) }"), std::string::npos) << text;
}

TEST(CtPrint, NumbersAsPythonPrintsThem) {
  constexpr auto g = [](auto x) {
    return x * 1e-05 + x * 1.5e20 + x * 0.30000000000000004 + x * 100.0 + x * -2.5;
  };
  std::string text(ct::make_jaxpr<double>(g).view());
  for (const char* lit :
       {"1e-05:f64[]", "1.5e+20:f64[]", "0.30000000000000004:f64[]", "100.0:f64[]", "-2.5:f64[]"})
    EXPECT_NE(text.find(lit), std::string::npos) << lit << " in\n" << text;
}

TEST(CtTrace, ArraysOfTracersInOrdinaryLoops) {
  constexpr auto dot = [](const auto& a, const auto& b) {
    decltype(a[0] * b[0]) s = 0;
    for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
  };
  using V = std::array<double, 64>;
  constexpr const auto& p = ct::jaxpr_of<decltype(dot), V, V>;
  static_assert(std::remove_cvref_t<decltype(p)>::num_ins == 128);
  static_assert(count(p, Prim::mul) == 64 && count(p, Prim::add) == 63);  // 0 + ... is pruned
}

// ---------------------------------------------------------------------------------------------
// Derived jaxprs
// ---------------------------------------------------------------------------------------------
constexpr auto w1 = [](auto x, auto y, auto z) {
  return xpr::sin(x) * y + xpr::exp(x * z) - xpr::log(1 + y * y) * z;
};
constexpr auto rosenbrock = [](const auto& x) {
  decltype(x[0] * x[0]) s = 0;
  for (std::size_t i = 0; i + 1 < x.size(); ++i)
    s += 100 * xpr::square(x[i + 1] - x[i] * x[i]) + xpr::square(1 - x[i]);
  return s;
};
constexpr auto vector_valued = [](const auto& x) {
  return std::array{x[0] * x[1] * x[2], xpr::sin(x[0]) + x[2] / x[1]};
};

TEST(CtTrace, DerivedJaxprsHaveNoArithmeticWithZeroOrOne) {
  using V16 = std::array<double, 16>;
  using V3 = std::array<double, 3>;
  static_assert(!has_trivial_arithmetic(
      ct::jaxpr_of<decltype(ct::grad<0, 1, 2>(w1)), double, double, double>));
  static_assert(!has_trivial_arithmetic(
      ct::jaxpr_of<decltype(ct::value_and_grad<0, 1, 2>(w1)), double, double, double>));
  static_assert(
      !has_trivial_arithmetic(ct::jaxpr_of<decltype(ct::grad(ct::grad(f1))), double, double>));
  static_assert(!has_trivial_arithmetic(ct::jaxpr_of<decltype(ct::grad(rosenbrock)), V16>));
  static_assert(!has_trivial_arithmetic(ct::jaxpr_of<decltype(ct::hessian(rosenbrock)), V16>));
  static_assert(!has_trivial_arithmetic(ct::jaxpr_of<decltype(ct::jacfwd(vector_valued)), V3>));
  static_assert(!has_trivial_arithmetic(ct::jaxpr_of<decltype(ct::jacrev(vector_valued)), V3>));
  // and the checker does see such arithmetic when it is there
  constexpr auto g = [](auto x) { return x * xpr::stop_gradient(1 + x - x); };
  static_assert(!has_trivial_arithmetic(ct::jaxpr_of<decltype(g), double>));
  EXPECT_TRUE(true);
}

TEST(CtTrace, GradOfKnownFunctionAsJaxWritesIt) {
  // grad of sin(x) * x: cos(x) * x + sin(x), with the cotangent seed 1 simplified away.
  constexpr auto g = [](auto x) { return xpr::sin(x) * x; };
  EXPECT_EQ(ct::make_jaxpr<double>(ct::grad(g)),
            "{ lambda ; a:f64[]. let\n"
            "    b:f64[] = sin a\n"
            "    c:f64[] = cos a\n"
            "    d:f64[] = mul a c\n"
            "    e:f64[] = add b d\n"
            "  in (e,) }");
  // The Hessian of the extended Rosenbrock function is tridiagonal: its jaxpr computes no entry
  // off the three diagonals (those outputs are the literal 0) and the last diagonal entry is the
  // literal 200.
  using V16 = std::array<double, 16>;
  constexpr const auto& h = ct::jaxpr_of<decltype(ct::hessian(rosenbrock)), V16>;
  static_assert(std::remove_cvref_t<decltype(h)>::num_outs == 256);
  constexpr bool zeros_are_literals = [] {
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 16; ++j) {
        const ct::Eqn& e = h.eqns[h.outs[16 * i + j]];
        bool literal_zero = e.prim == Prim::lit && e.value() == 0;
        if ((i - j > 1 || j - i > 1) != literal_zero) return false;
      }
    return true;
  }();
  static_assert(zeros_are_literals);
  static_assert(h.eqns[h.outs[255]].prim == Prim::lit && h.eqns[h.outs[255]].value() == 200);
}

}  // namespace
