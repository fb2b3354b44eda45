// Tests of the compile-time tier's transformations (include/xpr/ct/{transforms,api}.hpp and the
// rules in ct/prims/): every primitive's derivative against its closed form and central finite
// differences, in f64 and f32; jvp, linearize, vjp, grad, value_and_grad, has_aux, jacfwd,
// jacrev and hessian against hand-derived derivatives; and their compositions.
#include <array>
#include <cmath>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/ct/ct.hpp"

namespace {

namespace ct = xpr::ct;

// Central difference of a plain function (f on doubles is plain C++: xpr:: functions accept
// numbers).
template <class F>
double central_difference(F f, double x) {
  const double h = 1e-6 * (1 + std::abs(x));
  return (f(x + h) - f(x - h)) / (2 * h);
}

double rel_err(double got, double want) { return std::abs(got - want) / (1 + std::abs(want)); }

// Checks grad, jvp, vjp and linearize of a scalar function against its derivative `df`, in
// f64 and f32, and against finite differences.
template <class F, class DF>
void check_derivative(const char* name, F f, DF df, std::initializer_list<double> xs) {
  for (double x : xs) {
    SCOPED_TRACE(::testing::Message() << name << " at x = " << x);
    const double want = df(x);
    const double g = ct::grad(f)(x);
    EXPECT_LT(rel_err(g, want), 1e-13);
    EXPECT_LT(rel_err(g, central_difference(f, x)), 1e-6);
    static_assert(std::is_same_v<decltype(ct::grad(f)(1.0f)), float>);
    EXPECT_LT(rel_err(ct::grad(f)(static_cast<float>(x)), want), 2e-5);
    auto [y, t] = ct::jvp(f, std::tuple{x}, std::tuple{0.5});
    EXPECT_LT(rel_err(y, f(x)), 1e-15);
    EXPECT_LT(rel_err(t, 0.5 * want), 1e-13);
    auto [y2, f_vjp] = ct::vjp(f, x);
    EXPECT_LT(rel_err(y2, f(x)), 1e-15);
    EXPECT_LT(rel_err(std::get<0>(f_vjp(-2.0)), -2 * want), 1e-13);
    auto [y3, f_lin] = ct::linearize(f, x);
    EXPECT_LT(rel_err(y3, f(x)), 1e-15);
    EXPECT_LT(rel_err(f_lin(3.0), 3 * want), 1e-13);
  }
}

TEST(CtGrad, UnaryPrimitives) {
  check_derivative(
      "neg", [](auto x) { return -x; }, [](double) { return -1.0; }, {0.3, -2.0});
  check_derivative(
      "sin", [](auto x) { return xpr::sin(x); }, [](double x) { return std::cos(x); }, {0.3, -2.0});
  check_derivative(
      "cos", [](auto x) { return xpr::cos(x); }, [](double x) { return -std::sin(x); }, {0.3, 2.0});
  check_derivative(
      "tan", [](auto x) { return xpr::tan(x); },
      [](double x) { return 1 / (std::cos(x) * std::cos(x)); }, {0.3, -1.2});
  check_derivative(
      "tanh", [](auto x) { return xpr::tanh(x); },
      [](double x) { return 1 / (std::cosh(x) * std::cosh(x)); }, {0.3, -1.2});
  check_derivative(
      "exp", [](auto x) { return xpr::exp(x); }, [](double x) { return std::exp(x); }, {0.3, -1.2});
  check_derivative(
      "log", [](auto x) { return xpr::log(x); }, [](double x) { return 1 / x; }, {0.3, 2.5});
  check_derivative(
      "log1p", [](auto x) { return xpr::log1p(x); }, [](double x) { return 1 / (1 + x); },
      {0.3, -0.5});
  check_derivative(
      "expm1", [](auto x) { return xpr::expm1(x); }, [](double x) { return std::exp(x); },
      {1e-3, -1.5});
  check_derivative(
      "sqrt", [](auto x) { return xpr::sqrt(x); }, [](double x) { return 0.5 / std::sqrt(x); },
      {0.3, 4.0});
  check_derivative(
      "rsqrt", [](auto x) { return xpr::rsqrt(x); },
      [](double x) { return -0.5 / (x * std::sqrt(x)); }, {0.3, 4.0});
  check_derivative(
      "abs", [](auto x) { return xpr::abs(x); }, [](double x) { return x >= 0 ? 1.0 : -1.0; },
      {0.3, -4.0});
  check_derivative(
      "logistic", [](auto x) { return xpr::logistic(x); },
      [](double x) {
        double s = 1 / (1 + std::exp(-x));
        return s * (1 - s);
      },
      {0.3, -4.0});
  check_derivative(
      "integer_pow 3", [](auto x) { return xpr::integer_pow(x, 3); },
      [](double x) { return 3 * x * x; }, {0.3, -1.7});
  check_derivative(
      "integer_pow -2", [](auto x) { return xpr::integer_pow(x, -2); },
      [](double x) { return -2 / (x * x * x); }, {0.3, -1.7});
  check_derivative(
      "pow x^2.5", [](auto x) { return xpr::pow(x, 2.5); },
      [](double x) { return 2.5 * std::pow(x, 1.5); }, {0.3, 1.7});
  check_derivative(
      "pow 2.5^x", [](auto x) { return xpr::pow(2.5, x); },
      [](double x) { return std::log(2.5) * std::pow(2.5, x); }, {0.3, -1.7});
  check_derivative(
      "pow with int exponent", [](auto x) { return xpr::pow(x, 4); },
      [](double x) { return 4 * x * x * x; }, {0.3, -1.7});
}

TEST(CtGrad, ZeroDerivatives) {
  // sign, stop_gradient and comparisons have a zero derivative.
  auto f = [](auto x) { return xpr::sign(x) * 3.0 + xpr::stop_gradient(x * x) + x; };
  EXPECT_EQ(ct::grad(f)(0.7), 1.0);
  EXPECT_EQ(ct::grad(f)(-0.7), 1.0);
  auto g = [](auto x) { return xpr::stop_gradient(xpr::sin(x)); };
  EXPECT_EQ(ct::grad(g)(0.7), 0.0);
  EXPECT_EQ(ct::grad(g)(0.7f), 0.0f);
  // abs at 0 takes the derivative from the right, as JAX does.
  EXPECT_EQ(ct::grad([](auto x) { return xpr::abs(x); })(0.0), 1.0);
}

TEST(CtGrad, BinaryPrimitives) {
  auto f = [](auto x, auto y) {
    return x * y + x / y - (x - y) + xpr::maximum(x, y) * 2.0 + xpr::minimum(x, y) * 3.0 +
           xpr::pow(x, y);
  };
  const double x = 1.3, y = 0.6;
  auto [gx, gy] = ct::grad<0, 1>(f)(x, y);
  // max = x, min = y here
  EXPECT_LT(rel_err(gx, y + 1 / y - 1 + 2 + y * std::pow(x, y - 1)), 1e-13);
  EXPECT_LT(rel_err(gy, x - x / (y * y) + 1 + 3 + std::log(x) * std::pow(x, y)), 1e-13);
  EXPECT_LT(rel_err(gx, central_difference([&](double u) { return f(u, y); }, x)), 1e-6);
  EXPECT_LT(rel_err(gy, central_difference([&](double v) { return f(x, v); }, y)), 1e-6);
  // Ties split the derivative evenly (JAX's balanced rule).
  auto [tx, ty] = ct::grad<0, 1>([](auto a, auto b) { return xpr::maximum(a, b); })(2.0, 2.0);
  EXPECT_EQ(tx, 0.5);
  EXPECT_EQ(ty, 0.5);
  // pow at x = 0 with respect to the exponent: 0 ** y is constant in y for y > 0.
  EXPECT_EQ((ct::grad<1>([](auto a, auto b) { return xpr::pow(a, b); })(0.0, 2.5)), 0.0);
  // ... and NaN for y < 0, where 0 ** y = inf: JAX's log(_replace_zero(x)) * ans = 0 * inf.
  EXPECT_TRUE(std::isnan(ct::grad<1>([](auto a, auto b) { return xpr::pow(a, b); })(0.0, -1.0)));
}

TEST(CtGrad, WhereSelectsTheDerivative) {
  auto relu_like = [](auto x) { return xpr::where(x > 0, x * x, -3.0 * x); };
  EXPECT_EQ(ct::grad(relu_like)(2.0), 4.0);
  EXPECT_EQ(ct::grad(relu_like)(-2.0), -3.0);
  // Every transformation, on both sides: vjp and linearize hand the predicate to the linear
  // jaxpr as a bool residual (a regression: vjp read it from an unset mask and gave -6 at -2).
  check_derivative("where", relu_like, [](double x) { return x > 0 ? 2 * x : -3.0; }, {2.0, -2.0});
  auto clip = [](auto x) { return xpr::clip(x, -1.0, 1.0); };
  EXPECT_EQ(ct::grad(clip)(0.5), 1.0);
  EXPECT_EQ(ct::grad(clip)(1.5), 0.0);
}

// ---------------------------------------------------------------------------------------------
// Preaccumulation: reverse mode differentiates a region that depends on one value alone (here
// the normal CDF of u = x y, approximated as in W3) forwards from that value, and the region's
// Horner polynomial forwards from its own variable t.
// ---------------------------------------------------------------------------------------------
constexpr double p_as = 0.2316419, b1 = 0.319381530, b2 = -0.356563782, b3 = 1.781477937,
                 b4 = -1.821255978, b5 = 1.330274429, c_phi = 0.3989422804014327;
constexpr auto norm_cdf = [](auto x) {
  const auto a = xpr::abs(x);
  const auto t = 1 / (1 + p_as * a);
  const auto poly = t * (b1 + t * (b2 + t * (b3 + t * (b4 + t * b5))));
  const auto q = c_phi * xpr::exp(-0.5 * a * a) * poly;
  return xpr::where(x >= 0, 1 - q, q);
};
constexpr auto cdf_of_product = [](auto x, auto y) { return norm_cdf(x * y); };

// N'(x) of the approximation, by hand: N = where(x >= 0, 1 - q(|x|), q(|x|)) has the slope
// -q'(|x|) on both sides, q' = phi (-a P(t) + P'(t) t'(a)), t' = -p t^2.
double norm_cdf_slope(double x) {
  const double a = std::abs(x), t = 1 / (1 + p_as * a);
  const double poly = t * (b1 + t * (b2 + t * (b3 + t * (b4 + t * b5))));
  const double dpoly = b1 + t * (2 * b2 + t * (3 * b3 + t * (4 * b4 + t * 5 * b5)));
  const double phi = c_phi * std::exp(-0.5 * a * a);
  return -phi * (-a * poly - dpoly * p_as * t * t);
}

template <class P>
constexpr int count(const P& p, xpr::ct::Prim prim) {
  int n = 0;
  for (std::size_t i = 0; i < P::num_eqns; ++i) n += p.eqns[i].prim == prim;
  return n;
}

TEST(CtTransforms, ReverseModePreaccumulatesSingleInputRegions) {
  // Forwards, abs's sign and where's sign meet and cancel: the gradient has no select at all
  // (reverse mode proper needs four).
  using xpr::ct::Prim;
  constexpr const auto& g = ct::jaxpr_of<decltype(ct::grad<0, 1>(cdf_of_product)), double, double>;
  static_assert(count(g, Prim::select) == 0);
  for (double x : {-1.7, -0.3, 0.0, 0.4, 2.2}) {
    SCOPED_TRACE(::testing::Message() << "x = " << x);
    const double y = 1.3, slope = norm_cdf_slope(x * y);
    const auto [gx, gy] = ct::grad<0, 1>(cdf_of_product)(x, y);
    EXPECT_LT(rel_err(gx, y * slope), 1e-14);
    EXPECT_LT(rel_err(gy, x * slope), 1e-14);
    if (x != 0.0) {  // the approximation jumps by 1e-9 at 0
      EXPECT_LT(rel_err(gx, central_difference([&](double u) { return cdf_of_product(u, y); }, x)),
                1e-7);
    }
    // The value is the function's, bit for bit.
    const auto [v, grads] = ct::value_and_grad<0, 1>(cdf_of_product)(x, y);
    EXPECT_EQ(v, cdf_of_product(x, y));
    EXPECT_EQ(std::get<0>(grads), gx);
    // jacrev preaccumulates too; jvp (forward mode) does not, and agrees.
    const auto [jx, jy] = ct::jacrev<0, 1>(cdf_of_product)(x, y);
    EXPECT_EQ(jx, gx);
    EXPECT_EQ(jy, gy);
    const auto [y2, t] = ct::jvp(cdf_of_product, std::tuple{x, y}, std::tuple{1.0, 0.0});
    EXPECT_LT(rel_err(t, gx), 1e-14);
    // f32 stays f32.
    const auto [fx, fy] = ct::grad<0, 1>(cdf_of_product)(static_cast<float>(x), 1.3f);
    static_assert(std::is_same_v<std::remove_cvref_t<decltype(fx)>, float>);
    EXPECT_LT(rel_err(fx, y * slope), 2e-6);
    // Second derivatives through the preaccumulated gradient: d²/dx² N(xy) = y² N''(xy).
    const auto h = ct::hessian<0>(cdf_of_product)(x, y);
    const double step = 1e-5;
    const double n2 = (norm_cdf_slope(x * y + step) - norm_cdf_slope(x * y - step)) / (2 * step);
    if (x != 0.0) {  // N'' jumps at 0
      EXPECT_LT(rel_err(h, y * y * n2), 1e-7);
    }
  }
  // In a vmap, element by element as the scalar gradient.
  std::vector<double> xs = {-1.7, -0.3, 0.0, 0.4, 2.2, 3.1, -2.5};
  const std::vector<double> ys(xs.size(), 1.3);
  const auto [vx, vy] = ct::vmap(ct::grad<0, 1>(cdf_of_product))(xs, ys);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const auto [gx, gy] = ct::grad<0, 1>(cdf_of_product)(xs[i], 1.3);
    EXPECT_LT(rel_err(vx[static_cast<Eigen::Index>(i)], gx), 1e-15) << i;
    EXPECT_LT(rel_err(vy[static_cast<Eigen::Index>(i)], gy), 1e-15) << i;
  }
}

// Regions in the shapes that could go wrong: joins at the exit and inside, a region nested in
// a region, an interior value read outside (no region there), an interior value that is itself
// an output (none either), sign games, a quotient. Reverse mode (which preaccumulates) against
// forward mode (which does not, a different sweep) and against finite differences.
constexpr auto joined = [](auto x, auto y) {
  const auto u = x * y;
  return u * xpr::exp(u) + u * u * u - xpr::sin(u) * u;
};
constexpr auto nested = [](auto x, auto y) {
  const auto u = x + y;
  const auto t = 1 / (1 + u * u);
  return t * (1 + t * (2 + t * 3)) * xpr::tanh(u) + x;
};
constexpr auto read_outside = [](auto x, auto y) {
  const auto u = x * y;
  const auto s = xpr::sin(u);
  return s * u + s * x;
};
constexpr auto signs = [](auto x, auto y) {
  const auto a = xpr::abs(x - y);
  const auto q = a * xpr::exp(-a);
  return xpr::where(x - y >= 0, 1 - q, q) * y;
};
constexpr auto ratio = [](auto x, auto y) {
  const auto u = x / y;
  return xpr::log(u) * u + xpr::sqrt(u * u + 1);
};
constexpr auto outputs_inside = [](auto x, auto y) {
  const auto u = x * y;
  const auto s = xpr::exp(u);
  const auto n = s * u + s;
  return std::array{n, s * 2.0, xpr::where(u > 0, n, -n)};
};

template <class F>
void check_against_forward_mode(const char* name, F f, double x, double y) {
  SCOPED_TRACE(::testing::Message() << name << " at (" << x << ", " << y << ")");
  const auto [gx, gy] = ct::grad<0, 1>(f)(x, y);
  const auto [fx, fy] = ct::jacfwd<0, 1>(f)(x, y);
  EXPECT_LT(rel_err(gx, fx), 1e-13);
  EXPECT_LT(rel_err(gy, fy), 1e-13);
  EXPECT_LT(rel_err(gx, central_difference([&](double u) { return f(u, y); }, x)), 1e-6);
  EXPECT_LT(rel_err(gy, central_difference([&](double v) { return f(x, v); }, y)), 1e-6);
  // Second derivatives: forward over the preaccumulated reverse, and forward over forward.
  EXPECT_LT(rel_err(ct::hessian<0>(f)(x, y), ct::jacfwd<0>(ct::jacfwd<0>(f))(x, y)), 1e-12);
}

TEST(CtTransforms, PreaccumulatedRegionsAgreeWithForwardMode) {
  for (auto [x, y] : {std::pair{0.3, -0.7}, std::pair{1.1, 0.45}, std::pair{-1.3, 2.0}}) {
    check_against_forward_mode("joined", joined, x, y);
    check_against_forward_mode("nested", nested, x, y);
    check_against_forward_mode("read_outside", read_outside, x, y);
    check_against_forward_mode("signs", signs, x, y);
    check_against_forward_mode("ratio", ratio, std::abs(x), std::abs(y));
    // A vector function, by jacrev: the first output's region holds the second's value.
    SCOPED_TRACE(::testing::Message() << "outputs_inside at (" << x << ", " << y << ")");
    const auto r = ct::jacrev<0, 1>(outputs_inside)(x, y);
    const auto j = ct::jacfwd<0, 1>(outputs_inside)(x, y);
    for (std::size_t o = 0; o < 3; ++o) {
      EXPECT_LT(rel_err(std::get<0>(r[o]), std::get<0>(j[o])), 1e-13) << o;
      EXPECT_LT(rel_err(std::get<1>(r[o]), std::get<1>(j[o])), 1e-13) << o;
    }
    const double u = x * y, dn = std::exp(u) * (u + 2);  // d/du (e^u u + e^u)
    EXPECT_LT(rel_err(std::get<0>(r[0]), y * dn), 1e-14);
    EXPECT_LT(rel_err(std::get<1>(r[1]), 2 * x * std::exp(u)), 1e-14);
    EXPECT_LT(rel_err(std::get<0>(r[2]), (u > 0 ? 1 : -1) * y * dn), 1e-14);
  }
}

// ---------------------------------------------------------------------------------------------
// The transformations on W1: f(x, y, z) = sin(x) y + exp(x z) - log(1 + y^2) z
// ---------------------------------------------------------------------------------------------
constexpr auto w1 = [](auto x, auto y, auto z) {
  return xpr::sin(x) * y + xpr::exp(x * z) - xpr::log(1 + y * y) * z;
};
struct W1Partials {
  double v, dx, dy, dz;
};
W1Partials w1_by_hand(double x, double y, double z) {
  return {std::sin(x) * y + std::exp(x * z) - std::log(1 + y * y) * z,
          std::cos(x) * y + z * std::exp(x * z), std::sin(x) - 2 * y * z / (1 + y * y),
          x * std::exp(x * z) - std::log(1 + y * y)};
}

TEST(CtTransforms, ValueAndGradOfW1) {
  const double x = 0.7, y = -1.3, z = 0.4;
  const W1Partials h = w1_by_hand(x, y, z);
  auto [v, g] = ct::value_and_grad<0, 1, 2>(w1)(x, y, z);
  auto [dx, dy, dz] = g;
  EXPECT_LT(rel_err(v, h.v), 1e-15);
  EXPECT_LT(rel_err(dx, h.dx), 1e-14);
  EXPECT_LT(rel_err(dy, h.dy), 1e-14);
  EXPECT_LT(rel_err(dz, h.dz), 1e-14);
  // one argnum gives a value, several a tuple; the default argnum is 0
  static_assert(std::is_same_v<decltype(ct::grad(w1)(x, y, z)), double>);
  static_assert(std::is_same_v<decltype(ct::grad<2, 0>(w1)(x, y, z)), std::tuple<double, double>>);
  EXPECT_LT(rel_err(ct::grad(w1)(x, y, z), h.dx), 1e-14);
  auto [gz, gx] = ct::grad<2, 0>(w1)(x, y, z);
  EXPECT_LT(rel_err(gz, h.dz), 1e-14);
  EXPECT_LT(rel_err(gx, h.dx), 1e-14);
  // f32
  auto [vf, gf] = ct::value_and_grad<1>(w1)(0.7f, -1.3f, 0.4f);
  static_assert(std::is_same_v<decltype(gf), float>);
  EXPECT_LT(rel_err(vf, h.v), 1e-6);
  EXPECT_LT(rel_err(gf, h.dy), 1e-6);
}

TEST(CtTransforms, JvpLinearizeVjpOfW1) {
  const double x = 0.7, y = -1.3, z = 0.4;
  const W1Partials h = w1_by_hand(x, y, z);
  const double tx = 0.3, ty = -2.0, tz = 1.5;
  const double directional = h.dx * tx + h.dy * ty + h.dz * tz;
  auto [v, t] = ct::jvp(w1, std::tuple{x, y, z}, std::tuple{tx, ty, tz});
  EXPECT_LT(rel_err(v, h.v), 1e-15);
  EXPECT_LT(rel_err(t, directional), 1e-14);
  auto [v2, f_lin] = ct::linearize(w1, x, y, z);
  EXPECT_LT(rel_err(v2, h.v), 1e-15);
  EXPECT_LT(rel_err(f_lin(tx, ty, tz), directional), 1e-14);
  EXPECT_LT(rel_err(f_lin(1.0, 0.0, 0.0), h.dx), 1e-14);
  auto [v3, f_vjp] = ct::vjp(w1, x, y, z);
  EXPECT_LT(rel_err(v3, h.v), 1e-15);
  auto [cx, cy, cz] = f_vjp(2.0);
  EXPECT_LT(rel_err(cx, 2 * h.dx), 1e-14);
  EXPECT_LT(rel_err(cy, 2 * h.dy), 1e-14);
  EXPECT_LT(rel_err(cz, 2 * h.dz), 1e-14);
}

TEST(CtTransforms, HasAux) {
  auto f = [](auto x, auto y) { return std::pair{x * x * y, std::tuple{xpr::sin(x), y + 1.0}}; };
  auto [g, aux] = ct::grad(f, ct::has_aux)(3.0, 2.0);
  EXPECT_EQ(g, 12.0);
  EXPECT_EQ(std::get<0>(aux), std::sin(3.0));
  EXPECT_EQ(std::get<1>(aux), 3.0);
  auto [value_aux, grads] = ct::value_and_grad<0, 1>(f, ct::has_aux)(3.0, 2.0);
  EXPECT_EQ(value_aux.first, 18.0);
  EXPECT_EQ(std::get<0>(value_aux.second), std::sin(3.0));
  EXPECT_EQ(std::get<0>(grads), 12.0);
  EXPECT_EQ(std::get<1>(grads), 9.0);
}

TEST(CtTransforms, ExtraArgumentsAreNotDifferentiated) {
  // A parameter is passed as an argument, not captured.
  auto f = [](auto x, auto p) { return xpr::exp(p * x); };
  const double p = 1.7;
  EXPECT_LT(rel_err(ct::grad<0>(f)(0.4, p), p * std::exp(p * 0.4)), 1e-15);
  auto [v, g] = ct::value_and_grad<0>(f)(0.4, p);
  EXPECT_EQ(v, std::exp(p * 0.4));
  EXPECT_LT(rel_err(g, p * std::exp(p * 0.4)), 1e-15);
}

TEST(CtTransforms, NegativeArgnumsCountFromTheEnd) {
  // JAX's grad(f, argnums=-1): the last argument. An energy E(positions..., k) = k x^2 y with the
  // stiffness last: dE/dk = x^2 y, dE/dx = 2 k x y, d2E/dx2 = 2 k y.
  auto energy = [](auto x, auto y, auto k) { return k * x * x * y; };
  const double x = 1.5, y = -0.5, k = 3.0;
  EXPECT_EQ(ct::grad<-1>(energy)(x, y, k), x * x * y);
  auto [gx, gk] = ct::grad<-3, -1>(energy)(x, y, k);
  EXPECT_EQ(gx, 2 * k * x * y);
  EXPECT_EQ(gk, x * x * y);
  auto [v, g] = ct::value_and_grad<-2>(energy)(x, y, k);
  EXPECT_EQ(v, k * x * x * y);
  EXPECT_EQ(g, k * x * x);
  EXPECT_EQ(ct::jacfwd<-1>(energy)(x, y, k), x * x * y);
  EXPECT_EQ(ct::jacrev<-1>(energy)(x, y, k), x * x * y);
  EXPECT_EQ(ct::hessian<-3>(energy)(x, y, k), 2 * k * y);
  // the same derivative as the positive argnum, in the same program
  EXPECT_EQ(ct::grad<2>(energy)(x, y, k), ct::grad<-1>(energy)(x, y, k));
}

// ---------------------------------------------------------------------------------------------
// Jacobians and Hessians
// ---------------------------------------------------------------------------------------------
constexpr auto vector_valued = [](const auto& x) {
  return std::array{x[0] * x[1] * x[2], xpr::sin(x[0]) + x[2] / x[1]};
};

TEST(CtTransforms, JacobiansForwardAndReverse) {
  const std::array<double, 3> x{0.5, 2.0, -1.5};
  const double want[2][3] = {{x[1] * x[2], x[0] * x[2], x[0] * x[1]},
                             {std::cos(x[0]), -x[2] / (x[1] * x[1]), 1 / x[1]}};
  auto jf = ct::jacfwd(vector_valued)(x);
  auto jr = ct::jacrev(vector_valued)(x);
  static_assert(std::is_same_v<decltype(jf), std::array<std::array<double, 3>, 2>>);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      EXPECT_LT(rel_err(jf[i][j], want[i][j]), 1e-15) << i << j;
      EXPECT_LT(rel_err(jr[i][j], want[i][j]), 1e-15) << i << j;
    }
  // vjp with a vector cotangent is Jᵀc
  auto [y, f_vjp] = ct::vjp(vector_valued, x);
  auto [c] = f_vjp(std::array{2.0, -1.0});
  for (int j = 0; j < 3; ++j) EXPECT_LT(rel_err(c[j], 2 * want[0][j] - want[1][j]), 1e-15);
  EXPECT_EQ(y[0], x[0] * x[1] * x[2]);
  // scalar to vector, and several argnums
  auto g = [](auto s, auto t) { return std::array{s * t, s + t * t}; };
  auto j01 = ct::jacfwd<0, 1>(g)(2.0, 3.0);  // output structure, each leaf (∂/∂s, ∂/∂t)
  EXPECT_EQ(std::get<0>(j01[0]), 3.0);
  EXPECT_EQ(std::get<1>(j01[0]), 2.0);
  EXPECT_EQ(std::get<0>(j01[1]), 1.0);
  EXPECT_EQ(std::get<1>(j01[1]), 6.0);
  auto r01 = ct::jacrev<0, 1>(g)(2.0, 3.0);
  static_assert(std::is_same_v<decltype(r01), std::array<std::tuple<double, double>, 2>>);
  EXPECT_EQ(r01, j01);
}

constexpr auto rosenbrock = [](const auto& x) {
  decltype(x[0] * x[0]) s = 0;
  for (std::size_t i = 0; i + 1 < x.size(); ++i)
    s += 100 * xpr::square(x[i + 1] - x[i] * x[i]) + xpr::square(1 - x[i]);
  return s;
};

// The extended Rosenbrock function's gradient and (tridiagonal) Hessian in closed form.
template <std::size_t N>
std::array<double, N> rosenbrock_gradient(const std::array<double, N>& x) {
  std::array<double, N> g{};
  for (std::size_t i = 0; i + 1 < N; ++i) {
    g[i] += -400 * x[i] * (x[i + 1] - x[i] * x[i]) - 2 * (1 - x[i]);
    g[i + 1] += 200 * (x[i + 1] - x[i] * x[i]);
  }
  return g;
}
template <std::size_t N>
std::array<std::array<double, N>, N> rosenbrock_hessian(const std::array<double, N>& x) {
  std::array<std::array<double, N>, N> h{};
  for (std::size_t i = 0; i + 1 < N; ++i) {
    h[i][i] += 1200 * x[i] * x[i] - 400 * x[i + 1] + 2;
    h[i][i + 1] += -400 * x[i];
    h[i + 1][i] += -400 * x[i];
    h[i + 1][i + 1] += 200;
  }
  return h;
}

TEST(CtTransforms, HessianOfExtendedRosenbrock) {
  std::array<double, 16> x{};
  for (std::size_t i = 0; i < 16; ++i) x[i] = std::sin(1.0 + static_cast<double>(i)) * 1.2;
  const auto want = rosenbrock_hessian(x);
  const auto h = ct::hessian(rosenbrock)(x);
  for (std::size_t i = 0; i < 16; ++i)
    for (std::size_t j = 0; j < 16; ++j)
      EXPECT_LT(rel_err(h[i][j], want[i][j]), 1e-14) << i << "," << j;
  // f32
  std::array<float, 16> xf{};
  for (std::size_t i = 0; i < 16; ++i) xf[i] = static_cast<float>(x[i]);
  const auto hf = ct::hessian(rosenbrock)(xf);
  static_assert(std::is_same_v<decltype(hf), const std::array<std::array<float, 16>, 16>>);
  for (std::size_t i = 0; i < 16; ++i)
    for (std::size_t j = 0; j < 16; ++j) EXPECT_LT(rel_err(hf[i][j], want[i][j]), 1e-5);
  // jacrev of the gradient agrees, and the gradient matches too
  const auto hr = ct::jacrev(ct::grad(rosenbrock))(x);
  const auto g = ct::grad(rosenbrock)(x);
  const auto gw = rosenbrock_gradient(x);
  for (std::size_t i = 0; i < 16; ++i) {
    EXPECT_LT(rel_err(g[i], gw[i]), 1e-14);
    for (std::size_t j = 0; j < 16; ++j) EXPECT_LT(rel_err(hr[i][j], want[i][j]), 1e-14);
  }
}

TEST(CtTransforms, GradientOfSixtyFourArguments) {
  std::array<double, 64> x{};
  for (std::size_t i = 0; i < 64; ++i) x[i] = std::cos(0.3 * static_cast<double>(i));
  const auto g = ct::grad(rosenbrock)(x);
  const auto want = rosenbrock_gradient(x);
  for (std::size_t i = 0; i < 64; ++i) EXPECT_LT(rel_err(g[i], want[i]), 1e-13) << i;
}

// ---------------------------------------------------------------------------------------------
// Composition
// ---------------------------------------------------------------------------------------------
constexpr auto f1 = [](auto x, auto y) { return xpr::sin(x) * y + xpr::exp(x * y); };

TEST(CtTransforms, Composition) {
  const double x = 0.8, y = 1.4;
  // d²/dx², d²/dxdy
  EXPECT_LT(rel_err(ct::grad(ct::grad(f1))(x, y), -std::sin(x) * y + y * y * std::exp(x * y)),
            1e-14);
  EXPECT_LT(rel_err(ct::grad<1>(ct::grad(f1))(x, y),
                    std::cos(x) + std::exp(x * y) + x * y * std::exp(x * y)),
            1e-14);
  // jvp of grad: a Hessian-vector product
  auto [g, hv] = ct::jvp(ct::grad<0, 1>(f1), std::tuple{x, y}, std::tuple{1.0, 2.0});
  const double hxx = -std::sin(x) * y + y * y * std::exp(x * y);
  const double hxy = std::cos(x) + std::exp(x * y) * (1 + x * y);
  const double hyy = x * x * std::exp(x * y);
  EXPECT_LT(rel_err(std::get<0>(hv), hxx + 2 * hxy), 1e-14);
  EXPECT_LT(rel_err(std::get<1>(hv), hxy + 2 * hyy), 1e-14);
  EXPECT_LT(rel_err(std::get<0>(g), std::cos(x) * y + y * std::exp(x * y)), 1e-14);
  // third derivative of sin
  auto sin3 = ct::grad(ct::grad(ct::grad([](auto u) { return xpr::sin(u); })));
  EXPECT_LT(rel_err(sin3(x), -std::cos(x)), 1e-15);
  // grad called inside a traced function
  auto h = [](auto u, auto v) { return ct::grad(f1)(u, v) * u; };
  EXPECT_LT(rel_err(ct::grad(h)(x, y), hxx * x + std::cos(x) * y + y * std::exp(x * y)), 1e-14);
  // hessian of a scalar function of a scalar
  EXPECT_LT(rel_err(ct::hessian(f1)(x, y), hxx), 1e-14);
  // jvp inside a traced function (forward over forward)
  auto d2 = [](auto u) {
    return ct::jvp([](auto w) { return w * w * w; }, std::tuple{u}, std::tuple{1.0}).second;
  };
  EXPECT_EQ(ct::grad(d2)(2.0), 12.0);
}

}  // namespace
