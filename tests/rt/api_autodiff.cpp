// Tests of include/xpr/rt/api_autodiff.hpp: Autodidax Part 4's printed results reproduced to
// 1e-12 (linearize, vjp, grad, the nested-call stress test against its closed form), the
// JVP-to-VJP article's linearize jaxpr (four equations, two residuals, its printed text), the
// vjp/jvp inner-product identity on random vectors, gradients against central finite
// differences, compositions (grad of grad, vmap of grad, grad of vmap, jacrev of jacfwd), the
// Rosenbrock Hessian against its closed form, pytrees, has_aux, argnums, error cases.
#include "xpr/rt/api_autodiff.hpp"

#include <cmath>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/api.hpp"

namespace test_rt_api_autodiff {

using xpr::Array;
using xpr::Shape;

double scalar(const Array& a) { return a.item<double>(); }

std::vector<double> values(const Array& a) { return a.to_vector<double>(); }

Array random_vector(std::mt19937& rng, std::int64_t n) {
  std::normal_distribution<double> d;
  std::vector<double> v(static_cast<std::size_t>(n));
  for (double& x : v) x = d(rng);
  return xpr::array(v, Shape{n});
}

double dot_host(const Array& a, const Array& b) {
  auto x = values(a), y = values(b);
  double s = 0;
  for (std::size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
  return s;
}

// ---- Autodidax Part 4 -----------------------------------------------------------------------

TEST(AutodidaxPart4, LinearizeSin) {
  auto [y, sin_lin] = xpr::linearize([](auto x) { return xpr::sin(x); }, 3.0);
  EXPECT_NEAR(scalar(y), 0.1411200080598672, 1e-12);
  EXPECT_NEAR(scalar(sin_lin(1.0)), -0.9899924966004454, 1e-12);
  EXPECT_NEAR(scalar(y), std::sin(3.0), 1e-12);
  EXPECT_NEAR(scalar(sin_lin(1.0)), std::cos(3.0), 1e-12);
}

auto autodidax_f = [](auto x) {
  auto y = xpr::sin(x) * 2.;
  auto z = -y + x;
  return z;
};

TEST(AutodidaxPart4, LinearizeOfTheFirstExample) {
  auto [y, f_lin] = xpr::linearize(autodidax_f, 3.0);
  EXPECT_NEAR(scalar(y), 2.7177599838802657, 1e-12);
  EXPECT_NEAR(scalar(f_lin(1.0)), 2.979984993200891, 1e-12);
}

TEST(AutodidaxPart4, LinearizedFunctionChecksItsTangents) {
  auto f = [](const Array& x) { return xpr::sin(x) * 2.0; };
  auto [y, f_lin] = xpr::linearize(f, xpr::array({0.5, 1.0}));
  EXPECT_NEAR(f_lin(xpr::array({1.0, 0.0})).to_vector<double>()[0], 2 * std::cos(0.5), 1e-15);
  try {
    f_lin(xpr::array({1.0, 2.0, 3.0}));
    ADD_FAILURE() << "expected type_error";
  } catch (const xpr::type_error& e) {
    EXPECT_NE(std::string(e.what()).find("linearize: the linearized function was called on a "
                                         "tangent inconsistent with its primal: expected leaf 0 "
                                         "of type f64[2], found f64[3]"),
              std::string::npos)
        << e.what();
  }
}

TEST(AutodidaxPart4, LinearizeWithANestedCall) {
  // Autodidax wraps f and g in jit; the values do not depend on it.
  auto g = [](auto x, auto y) { return xpr::cos(x) + y; };
  auto f = [&](auto x) {
    auto y = xpr::sin(x) * 2.;
    return g(x, y);
  };
  auto [y, f_lin] = xpr::linearize(f, 3.0);
  EXPECT_NEAR(scalar(y), -0.7077524804807109, 1e-12);
  EXPECT_NEAR(scalar(f_lin(1.0)), -2.121105001260758, 1e-12);
}

TEST(AutodidaxPart4, VjpOfSin) {
  auto [y, f_vjp] = xpr::vjp([](auto x) { return xpr::sin(x); }, 3.0);
  auto [ct] = f_vjp(1.0);
  EXPECT_NEAR(scalar(ct), -0.9899924966004454, 1e-12);
  EXPECT_NEAR(scalar(ct), std::cos(3.0), 1e-12);
  EXPECT_NEAR(scalar(y), std::sin(3.0), 1e-12);
}

TEST(AutodidaxPart4, Grad) {
  EXPECT_NEAR(scalar(xpr::grad(autodidax_f)(3.0)), 2.979984993200891, 1e-12);
  EXPECT_NEAR(scalar(xpr::grad(xpr::grad(autodidax_f))(3.0)), 2.0 * std::sin(3.0), 1e-12);
}

TEST(AutodidaxPart4, GradWithNestedCalls) {
  auto g = [](auto x) { return xpr::cos(x) * 2.; };
  auto f = [&](auto x) {
    auto y = x * 2.;
    return g(y);
  };
  EXPECT_NEAR(scalar(xpr::grad(f)(3.0)), 1.1176619927957034, 1e-12);
}

// core_test.py's fun_with_nested_calls_2, Autodidax's "compositionality stress test" (its jit
// calls are plain calls here). By hand: baz(w) = sin(x) y + 3y + w with y = x; the jvp along
// w with tangent y gives p = x sin x + 4x + 1 and t = x, so foo(x) = x^2 sin x + 4x^2 + 2x.
auto foo = [](auto x) {
  auto bar = [&](auto y) {
    auto baz = [&](auto w) {
      auto q = y;
      q = q + y;
      q = q + (w + y);
      q = xpr::sin(x) * y + q;
      return q;
    };
    auto [p, t] = xpr::jvp(baz, std::tuple{x + 1.0}, std::tuple{y});
    return t + (x * p);
  };
  return bar(x);
};

TEST(AutodidaxPart4, NestedCallsStressTest) {
  const double x = 3.0, s = std::sin(x), c = std::cos(x);
  const double value = x * x * s + 4 * x * x + 2 * x;
  const double deriv = 2 * x * s + x * x * c + 8 * x + 2;
  const double hess = 2 * s + 4 * x * c - x * x * s + 8;
  EXPECT_NEAR(scalar(foo(Array(x))), value, 1e-12);
  auto [ans3, deriv4] = xpr::jvp(foo, std::tuple{x}, std::tuple{1.0});
  EXPECT_NEAR(scalar(ans3), value, 1e-12);
  EXPECT_NEAR(scalar(deriv4), deriv, 1e-12);
  EXPECT_NEAR(scalar(xpr::grad(foo)(x)), deriv, 1e-12);
  EXPECT_NEAR(scalar(xpr::grad(xpr::grad(foo))(x)), hess, 1e-12);
  auto [d5, hess5] = xpr::jvp(xpr::grad(foo), std::tuple{x}, std::tuple{1.0});
  EXPECT_NEAR(scalar(d5), deriv, 1e-12);
  EXPECT_NEAR(scalar(hess5), hess, 1e-12);
}

// ---- the JVP-to-VJP article -----------------------------------------------------------------

auto article_f = [](auto x, auto y) { return xpr::sin(x) - xpr::exp(x + y); };

TEST(JvpToVjp, LinearizeJaxprHasFourEquationsAndTwoResiduals) {
  auto [y, f_jvp] = xpr::linearize(article_f, 1.0, 2.0);
  EXPECT_NEAR(scalar(y), std::sin(1.0) - std::exp(3.0), 1e-12);
  EXPECT_NEAR(scalar(f_jvp(1.0, 0.0)), std::cos(1.0) - std::exp(3.0), 1e-12);
  auto j = xpr::make_jaxpr(f_jvp)(1.0, 0.0);
  EXPECT_EQ(j.jaxpr.eqns.size(), 4u);
  ASSERT_EQ(j.consts.size(), 2u);
  EXPECT_NEAR(scalar(j.consts[0]), std::cos(1.0), 1e-15);
  EXPECT_NEAR(scalar(j.consts[1]), std::exp(3.0), 1e-12);
  // The article prints (JAX with 32-bit floats):
  //   { lambda a:f32[] b:f32[]; c:f32[] d:f32[]. let
  //       e:f32[] = mul c a
  //       f:f32[] = add c d
  //       g:f32[] = mul f b
  //       h:f32[] = sub e g
  //     in (h,) }
  const std::string expected = R"({ lambda a:f64[] b:f64[]; c:f64[] d:f64[]. let
    e:f64[] = mul c a
    f:f64[] = add c d
    g:f64[] = mul f b
    h:f64[] = sub e g
  in (h,) })";
  std::ostringstream os;
  os << j;
  EXPECT_EQ(os.str(), expected);
}

TEST(JvpToVjp, LinearTransposeOfTheLinearizedFunction) {
  auto [y, f_jvp] = xpr::linearize(article_f, 1.0, 2.0);
  auto f_transp = xpr::linear_transpose(f_jvp, 1.0, 2.0);
  auto [cx, cy] = f_transp(1.0);
  // The article: (-19.545235, -20.085537) in f32.
  EXPECT_NEAR(scalar(cx), std::cos(1.0) - std::exp(3.0), 1e-12);
  EXPECT_NEAR(scalar(cy), -std::exp(3.0), 1e-12);
  EXPECT_NEAR(scalar(cx), -19.545235, 1e-5);
  EXPECT_NEAR(scalar(cy), -20.085537, 1e-5);
  // Its jaxpr keeps the residuals as constants too, and has four equations.
  auto j = xpr::make_jaxpr(f_transp)(1.0);
  EXPECT_EQ(j.consts.size(), 2u);
  EXPECT_EQ(j.jaxpr.eqns.size(), 4u);
}

TEST(JvpToVjp, VjpAndGradOfTheArticlesFunction) {
  auto [y, f_vjp] = xpr::vjp(article_f, 1.0, 2.0);
  auto [cx, cy] = f_vjp(1.0);
  EXPECT_NEAR(scalar(cx), std::cos(1.0) - std::exp(3.0), 1e-12);
  EXPECT_NEAR(scalar(cy), -std::exp(3.0), 1e-12);
  auto [gx, gy] = xpr::grad<0, 1>(article_f)(1.0, 2.0);
  EXPECT_NEAR(scalar(gx), std::cos(1.0) - std::exp(3.0), 1e-12);
  EXPECT_NEAR(scalar(gy), -std::exp(3.0), 1e-12);
  EXPECT_NEAR(scalar(xpr::grad<1>(article_f)(1.0, 2.0)), -std::exp(3.0), 1e-12);
}

// ---- laws -----------------------------------------------------------------------------------

// Elementwise functions of two vectors, each a pytree-of-arrays function.
auto law_f1 = [](auto x, auto y) { return xpr::sin(x) * y + xpr::exp(x * y); };
auto law_f2 = [](auto x, auto y) { return xpr::tanh(x - y) / (1.0 + x * x) + xpr::log1p(y * y); };
auto law_f3 = [](auto x, auto y) { return xpr::sqrt(xpr::exp(x) + y * y) * xpr::cos(y) - x; };

template <class F>
void check_vjp_against_jvp(F f, unsigned seed) {
  std::mt19937 rng(seed);
  Array x = random_vector(rng, 5), y = random_vector(rng, 5);
  Array tx = random_vector(rng, 5), ty = random_vector(rng, 5), ct = random_vector(rng, 5);
  auto [out, f_vjp] = xpr::vjp(f, x, y);
  auto [cx, cy] = f_vjp(ct);
  auto [out2, t] = xpr::jvp(f, std::tuple{x, y}, std::tuple{tx, ty});
  EXPECT_NEAR(dot_host(cx, tx) + dot_host(cy, ty), dot_host(ct, t), 1e-12);
  EXPECT_EQ(values(out), values(out2));
  // linearize agrees with jvp.
  auto [out3, f_lin] = xpr::linearize(f, x, y);
  auto t3 = values(f_lin(tx, ty)), t2 = values(t);
  for (std::size_t i = 0; i < t2.size(); ++i) EXPECT_NEAR(t3[i], t2[i], 1e-13);
}

TEST(Laws, VjpAgreesWithJvp) {
  check_vjp_against_jvp(law_f1, 1);
  check_vjp_against_jvp(law_f2, 2);
  check_vjp_against_jvp(law_f3, 3);
}

template <class F>
void check_grad_against_finite_differences(F f, const std::vector<double>& at) {
  auto g = values(xpr::grad(f)(xpr::array(at, Shape{static_cast<std::int64_t>(at.size())})));
  const double h = 1e-6;
  for (std::size_t i = 0; i < at.size(); ++i) {
    auto plus = at, minus = at;
    plus[i] += h;
    minus[i] -= h;
    double fd = (scalar(f(xpr::array(plus, Shape{static_cast<std::int64_t>(at.size())}))) -
                 scalar(f(xpr::array(minus, Shape{static_cast<std::int64_t>(at.size())})))) /
                (2 * h);
    EXPECT_NEAR(g[i], fd, 1e-6 * (1 + std::abs(fd))) << "component " << i;
  }
}

TEST(Laws, GradAgainstCentralDifferences) {
  check_grad_against_finite_differences(
      [](auto x) { return xpr::sum(xpr::sin(x) * xpr::exp(-x * x)); }, {0.3, -1.2, 2.0});
  check_grad_against_finite_differences(
      [](auto x) { return xpr::sum(xpr::tanh(x)) * xpr::sum(x * x); }, {0.5, 0.1, -0.7, 1.1});
  check_grad_against_finite_differences([](auto x) { return xpr::log(xpr::sum(xpr::exp(x))); },
                                        {1.0, 2.0, 3.0});
}

// ---- compositions ---------------------------------------------------------------------------

TEST(Compose, GradOfGradOfGrad) {
  auto f = [](auto x) { return xpr::sin(x) * x; };
  // f' = cos x x + sin x; f'' = 2 cos x - x sin x; f''' = -3 sin x - x cos x.
  const double x = 0.7;
  EXPECT_NEAR(scalar(xpr::grad(f)(x)), std::cos(x) * x + std::sin(x), 1e-12);
  EXPECT_NEAR(scalar(xpr::grad(xpr::grad(f))(x)), 2 * std::cos(x) - x * std::sin(x), 1e-12);
  EXPECT_NEAR(scalar(xpr::grad(xpr::grad(xpr::grad(f)))(x)), -3 * std::sin(x) - x * std::cos(x),
              1e-12);
}

TEST(Compose, VmapOfGrad) {
  auto f = [](auto x) { return xpr::sin(x) * xpr::exp(x); };
  std::vector<double> xs{-1.0, 0.25, 2.0};
  auto g = values(xpr::vmap(xpr::grad(f))(xpr::array(xs, Shape{3})));
  for (std::size_t i = 0; i < xs.size(); ++i)
    EXPECT_NEAR(g[i], (std::cos(xs[i]) + std::sin(xs[i])) * std::exp(xs[i]), 1e-12);
}

TEST(Compose, GradOfVmap) {
  // grad of sum(vmap(f)) is the elementwise derivative.
  auto f = [](auto x) { return xpr::sin(x) * x; };
  auto total = [&](auto xs) { return xpr::sum(xpr::vmap(f)(xs)); };
  std::vector<double> xs{0.1, -0.5, 1.5};
  auto g = values(xpr::grad(total)(xpr::array(xs, Shape{3})));
  for (std::size_t i = 0; i < xs.size(); ++i)
    EXPECT_NEAR(g[i], std::cos(xs[i]) * xs[i] + std::sin(xs[i]), 1e-12);
}

TEST(Compose, JvpOfGradAndGradOfJvp) {
  auto f = [](auto x, auto y) { return xpr::sin(x * y); };
  const double x = 0.4, y = 1.3;
  // d/dx f = y cos(xy); its derivative along (1, 0) is -y^2 sin(xy).
  auto [g, dg] = xpr::jvp(xpr::grad(f), std::tuple{x, y}, std::tuple{1.0, 0.0});
  EXPECT_NEAR(scalar(g), y * std::cos(x * y), 1e-12);
  EXPECT_NEAR(scalar(dg), -y * y * std::sin(x * y), 1e-12);
  auto dir = [&](auto a) {
    return xpr::jvp(f, std::tuple{a, Array(y)}, std::tuple{1.0, 0.0}).second;
  };
  EXPECT_NEAR(scalar(xpr::grad(dir)(x)), -y * y * std::sin(x * y), 1e-12);
}

TEST(Compose, JacrevOfJacfwdAndHessianOfRosenbrock) {
  // Two-dimensional Rosenbrock with scalar arguments: the Hessian as a tuple of tuples.
  auto rosen = [](auto x, auto y) {
    return (1.0 - x) * (1.0 - x) + 100.0 * (y - x * x) * (y - x * x);
  };
  const double x = 0.8, y = 1.7;
  const double hxx = 2 - 400 * (y - x * x) + 800 * x * x, hxy = -400 * x, hyy = 200;
  auto h = xpr::hessian<0, 1>(rosen)(x, y);
  EXPECT_NEAR(scalar(std::get<0>(std::get<0>(h))), hxx, 1e-9);
  EXPECT_NEAR(scalar(std::get<1>(std::get<0>(h))), hxy, 1e-9);
  EXPECT_NEAR(scalar(std::get<0>(std::get<1>(h))), hxy, 1e-9);
  EXPECT_NEAR(scalar(std::get<1>(std::get<1>(h))), hyy, 1e-9);
  auto h2 = xpr::jacrev<0, 1>(xpr::jacfwd<0, 1>(rosen))(x, y);
  EXPECT_NEAR(scalar(std::get<0>(std::get<0>(h2))), hxx, 1e-9);
  EXPECT_NEAR(scalar(std::get<1>(std::get<0>(h2))), hxy, 1e-9);
  EXPECT_NEAR(scalar(std::get<1>(std::get<1>(h2))), hyy, 1e-9);
}

TEST(Compose, HessianOfVectorRosenbrock) {
  // f(x) = sum_i 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2, written with slices.
  auto rosen = [](auto x) {
    auto n = x.shape()[0];
    auto head = xpr::slice(x, {0}, {n - 1}), tail = xpr::slice(x, {1}, {n});
    return xpr::sum(100.0 * (tail - head * head) * (tail - head * head) +
                    (1.0 - head) * (1.0 - head));
  };
  std::vector<double> v{0.5, -0.3, 1.2, 0.9};
  const std::size_t n = v.size();
  auto hess = values(xpr::hessian(rosen)(xpr::array(v, Shape{4})));
  ASSERT_EQ(hess.size(), n * n);
  // Closed form: a tridiagonal matrix.
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double e = 0;
      if (i == j) {
        if (i + 1 < n) e += 2 - 400 * (v[i + 1] - v[i] * v[i]) + 800 * v[i] * v[i];
        if (i > 0) e += 200;
      } else if (j == i + 1 || i == j + 1) {
        e = -400 * v[std::min(i, j)];
      }
      EXPECT_NEAR(hess[i * n + j], e, 1e-9) << i << "," << j;
    }
  // The gradient, by both Jacobians and by grad, against the closed form.
  auto g = values(xpr::grad(rosen)(xpr::array(v, Shape{4})));
  auto jf = values(xpr::jacfwd(rosen)(xpr::array(v, Shape{4})));
  auto jr = values(xpr::jacrev(rosen)(xpr::array(v, Shape{4})));
  for (std::size_t i = 0; i < n; ++i) {
    double e = 0;
    if (i + 1 < n) e += -400 * v[i] * (v[i + 1] - v[i] * v[i]) - 2 * (1 - v[i]);
    if (i > 0) e += 200 * (v[i] - v[i - 1] * v[i - 1]);
    EXPECT_NEAR(g[i], e, 1e-10);
    EXPECT_NEAR(jf[i], e, 1e-10);
    EXPECT_NEAR(jr[i], e, 1e-10);
  }
}

// ---- Jacobians and pytrees ------------------------------------------------------------------

TEST(Jacobians, ShapesFollowJax) {
  // f: R^3 -> R^2 with a known Jacobian.
  auto f = [](auto x) {
    auto a = xpr::slice(x, {0}, {2}), b = xpr::slice(x, {1}, {3});
    return xpr::sin(a) * b;
  };
  std::vector<double> v{0.2, 0.5, -1.0};
  Array x = xpr::array(v, Shape{3});
  Array jf = xpr::jacfwd(f)(x), jr = xpr::jacrev(f)(x);
  EXPECT_EQ(jf.shape(), (Shape{2, 3}));
  EXPECT_EQ(jr.shape(), (Shape{2, 3}));
  std::vector<double> expected{std::cos(v[0]) * v[1], std::sin(v[0]), 0, 0,
                               std::cos(v[1]) * v[2], std::sin(v[1])};
  auto a = values(jf), b = values(jr);
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_NEAR(a[i], expected[i], 1e-14);
    EXPECT_NEAR(b[i], expected[i], 1e-14);
  }
}

TEST(Jacobians, TuplesInAndOut) {
  // f(x, y) = (x * y, sin(x)) with x of shape (2,), y a scalar: J is a tuple (per output) of
  // tuples (per argument) of blocks of shape out.shape + in.shape.
  auto f = [](auto x, auto y) { return std::tuple{x * y, xpr::sin(x)}; };
  Array x = xpr::array({0.3, -0.8});
  auto j = xpr::jacrev<0, 1>(f)(x, 2.0);
  auto jf = xpr::jacfwd<0, 1>(f)(x, 2.0);
  const Array& d0x = std::get<0>(std::get<0>(j));
  const Array& d0y = std::get<1>(std::get<0>(j));
  const Array& d1x = std::get<0>(std::get<1>(j));
  const Array& d1y = std::get<1>(std::get<1>(j));
  EXPECT_EQ(d0x.shape(), (Shape{2, 2}));
  EXPECT_EQ(d0y.shape(), (Shape{2}));
  EXPECT_EQ(d1x.shape(), (Shape{2, 2}));
  EXPECT_EQ(d1y.shape(), (Shape{2}));
  EXPECT_EQ(values(d0x), (std::vector<double>{2, 0, 0, 2}));
  EXPECT_EQ(values(d0y), (std::vector<double>{0.3, -0.8}));
  EXPECT_NEAR(values(d1x)[0], std::cos(0.3), 1e-15);
  EXPECT_NEAR(values(d1x)[3], std::cos(-0.8), 1e-15);
  EXPECT_EQ(values(d1y), (std::vector<double>{0, 0}));
  EXPECT_EQ(values(std::get<0>(std::get<0>(jf))), values(d0x));
  EXPECT_EQ(values(std::get<1>(std::get<0>(jf))), values(d0y));
  EXPECT_EQ(values(std::get<1>(std::get<1>(jf))), values(d1y));
}

// has_aux (JAX's has_aux=True): a Newton step's residual with the residual norm as aux, as a user
// writes it; the Jacobian of the first output, aux the primal value, by both modes and the
// Hessian of a scalar.
TEST(Jacobians, HasAuxReturnsThePrimalAux) {
  auto residual = [](const Array& v) {
    Array r = xpr::stack({v(0) * v(0) + v(1) - 3.0, v(0) - xpr::exp(v(1))});
    return std::pair{r, std::tuple{xpr::sum(r * r), Array(7.0)}};
  };
  const Array v = xpr::array({1.5, 0.25});
  const double e = std::exp(0.25);
  const std::vector<double> want{2 * 1.5, 1.0, 1.0, -e};
  const double r0 = 1.5 * 1.5 + 0.25 - 3.0, r1 = 1.5 - e;
  for (int mode = 0; mode < 2; ++mode) {
    auto [jac, aux] =
        mode == 0 ? xpr::jacfwd(residual, xpr::has_aux)(v) : xpr::jacrev(residual, xpr::has_aux)(v);
    EXPECT_EQ(jac.shape(), (Shape{2, 2}));
    for (std::size_t k = 0; k < 4; ++k) EXPECT_NEAR(values(jac)[k], want[k], 1e-15) << mode;
    EXPECT_NEAR(std::get<0>(aux).item<double>(), r0 * r0 + r1 * r1, 1e-15);
    EXPECT_EQ(std::get<1>(aux).item<double>(), 7.0);
  }
  // hessian of x0^2 x1 + sin(x1) with aux x0: [[2 x1, 2 x0], [2 x0, -sin x1]].
  auto f = [](const Array& x) { return std::pair{x(0) * x(0) * x(1) + xpr::sin(x(1)), x(0)}; };
  auto [h, aux] = xpr::hessian(f, xpr::has_aux)(xpr::array({0.5, 2.0}));
  EXPECT_EQ(h.shape(), (Shape{2, 2}));
  const std::vector<double> hw{4.0, 1.0, 1.0, -std::sin(2.0)};
  for (std::size_t k = 0; k < 4; ++k) EXPECT_NEAR(values(h)[k], hw[k], 1e-14) << k;
  EXPECT_EQ(aux.item<double>(), 0.5);
}

TEST(Pytrees, GradOfADictAndAVector) {
  auto loss = [](const std::map<std::string, Array>& p, const std::vector<Array>& xs) {
    return xpr::sum(p.at("w") * xs[0]) + p.at("b") * xpr::sum(xs[1]);
  };
  std::map<std::string, Array> params{{"w", xpr::array({1.0, 2.0})}, {"b", Array(0.5)}};
  std::vector<Array> xs{xpr::array({3.0, 4.0}), xpr::array({5.0, 6.0})};
  auto g = xpr::grad(loss)(params, xs);
  EXPECT_EQ(values(g.at("w")), (std::vector<double>{3.0, 4.0}));
  EXPECT_EQ(scalar(g.at("b")), 11.0);
  auto [gp, gx] = xpr::grad<0, 1>(loss)(params, xs);
  EXPECT_EQ(values(gx[0]), (std::vector<double>{1.0, 2.0}));
  EXPECT_EQ(values(gx[1]), (std::vector<double>{0.5, 0.5}));
  EXPECT_EQ(scalar(gp.at("b")), 11.0);
}

TEST(Pytrees, VjpOfATupleOutput) {
  auto f = [](auto x, auto y) { return std::pair{x * y, x + y}; };
  auto [out, f_vjp] = xpr::vjp(f, 2.0, 3.0);
  EXPECT_EQ(scalar(out.first), 6.0);
  auto [cx, cy] = f_vjp(std::pair{1.0, 10.0});
  EXPECT_EQ(scalar(cx), 3.0 + 10.0);
  EXPECT_EQ(scalar(cy), 2.0 + 10.0);
}

// vjp and linearize with has_aux, as jax.vjp(f, x, y, has_aux=True): f returns (out, aux), out
// a pytree of two arrays and aux a pair; the pullback and the linear map see only out.
// f(x, y) = (x sin y, x + y), aux (x y, 7): d out0 = sin y dx + x cos y dy, d out1 = dx + dy.
TEST(Pytrees, VjpAndLinearizeWithHasAux) {
  auto f = [](const Array& x, const Array& y) {
    return std::pair{std::pair{x * xpr::sin(y), x + y}, std::pair{x * y, Array(7.0)}};
  };
  const double x = 1.5, y = 0.25;
  auto [out, f_vjp, aux] = xpr::vjp(f, Array(x), Array(y), xpr::has_aux);
  EXPECT_NEAR(scalar(out.first), x * std::sin(y), 1e-15);
  EXPECT_EQ(scalar(out.second), x + y);
  EXPECT_EQ(scalar(aux.first), x * y);
  EXPECT_EQ(scalar(aux.second), 7.0);
  auto [cx, cy] = f_vjp(std::pair{Array(1.0), Array(10.0)});
  EXPECT_NEAR(scalar(cx), std::sin(y) + 10.0, 1e-15);
  EXPECT_NEAR(scalar(cy), x * std::cos(y) + 10.0, 1e-15);
  EXPECT_THROW((void)f_vjp(Array(1.0)), xpr::type_error);  // a cotangent of out, not of (out, aux)
  auto [out2, f_lin, aux2] = xpr::linearize(f, Array(x), Array(y), xpr::has_aux);
  EXPECT_EQ(scalar(out2.second), x + y);
  EXPECT_EQ(scalar(aux2.first), x * y);
  auto [t0, t1] = f_lin(Array(2.0), Array(-1.0));
  EXPECT_NEAR(scalar(t0), 2 * std::sin(y) - x * std::cos(y), 1e-15);
  EXPECT_EQ(scalar(t1), 1.0);
  // Without has_aux the pair is the output: a cotangent for all four leaves.
  auto [whole, g_vjp] = xpr::vjp(f, Array(x), Array(y));
  EXPECT_EQ(scalar(whole.second.second), 7.0);
  auto [dx, dy] =
      g_vjp(std::pair{std::pair{Array(0.0), Array(0.0)}, std::pair{Array(1.0), Array(0.0)}});
  EXPECT_EQ(scalar(dx), y);
  EXPECT_EQ(scalar(dy), x);
}

TEST(Grad, HasAuxAndValueAndGrad) {
  auto f = [](auto x) { return std::pair{xpr::sin(x) * 3.0, std::tuple{x * 2.0, xpr::cos(x)}}; };
  auto [g, aux] = xpr::grad(f, xpr::has_aux)(0.5);
  EXPECT_NEAR(scalar(g), 3 * std::cos(0.5), 1e-15);
  EXPECT_EQ(scalar(std::get<0>(aux)), 1.0);
  EXPECT_NEAR(scalar(std::get<1>(aux)), std::cos(0.5), 1e-15);
  auto [value_aux, g2] = xpr::value_and_grad(f, xpr::has_aux)(0.5);
  EXPECT_NEAR(scalar(value_aux.first), 3 * std::sin(0.5), 1e-15);
  EXPECT_NEAR(scalar(g2), 3 * std::cos(0.5), 1e-15);
  auto [v, g3] = xpr::value_and_grad(article_f)(1.0, 2.0);
  EXPECT_NEAR(scalar(v), std::sin(1.0) - std::exp(3.0), 1e-12);
  EXPECT_NEAR(scalar(g3), std::cos(1.0) - std::exp(3.0), 1e-12);
}

TEST(Grad, HasAuxWithArgnums) {
  // f(x, y, z) = x y^2 + sin z, aux = (x + y, z): d/dy = 2 x y, d/dz = cos z.
  auto f = [](auto x, auto y, auto z) {
    return std::pair{x * y * y + xpr::sin(z), std::tuple{x + y, z * 1.0}};
  };
  auto [gy, aux] = xpr::grad<1>(f, xpr::has_aux)(1.5, 2.0, 0.25);
  EXPECT_NEAR(scalar(gy), 2 * 1.5 * 2.0, 1e-15);
  EXPECT_EQ(scalar(std::get<0>(aux)), 3.5);
  EXPECT_EQ(scalar(std::get<1>(aux)), 0.25);
  auto [grads, aux2] = xpr::grad<2, 1>(f, xpr::has_aux)(1.5, 2.0, 0.25);
  EXPECT_NEAR(scalar(std::get<0>(grads)), std::cos(0.25), 1e-15);
  EXPECT_NEAR(scalar(std::get<1>(grads)), 2 * 1.5 * 2.0, 1e-15);
  EXPECT_EQ(scalar(std::get<0>(aux2)), 3.5);
  auto [value_aux, grads2] = xpr::value_and_grad<0, 2>(f, xpr::has_aux)(1.5, 2.0, 0.25);
  EXPECT_NEAR(scalar(value_aux.first), 1.5 * 4.0 + std::sin(0.25), 1e-15);
  EXPECT_EQ(scalar(std::get<1>(value_aux.second)), 0.25);
  EXPECT_NEAR(scalar(std::get<0>(grads2)), 4.0, 1e-15);
  EXPECT_NEAR(scalar(std::get<1>(grads2)), std::cos(0.25), 1e-15);
}

TEST(Grad, NegativeArgnumsCountFromTheEnd) {
  // JAX's grad(f, argnums=-1): the last argument. E(x, y, k) = k x^2 y with the stiffness last:
  // dE/dk = x^2 y, dE/dx = 2 k x y, d2E/dx2 = 2 k y.
  auto energy = [](auto x, auto y, auto k) { return k * x * x * y; };
  const double x = 1.5, y = -0.5, k = 3.0;
  EXPECT_EQ(scalar(xpr::grad<-1>(energy)(x, y, k)), x * x * y);
  auto [gx, gk] = xpr::grad<-3, -1>(energy)(x, y, k);
  EXPECT_EQ(scalar(gx), 2 * k * x * y);
  EXPECT_EQ(scalar(gk), x * x * y);
  auto [v, g] = xpr::value_and_grad<-2>(energy)(x, y, k);
  EXPECT_EQ(scalar(v), k * x * x * y);
  EXPECT_EQ(scalar(g), k * x * x);
  EXPECT_EQ(scalar(xpr::jacfwd<-1>(energy)(x, y, k)), x * x * y);
  EXPECT_EQ(scalar(xpr::jacrev<-1>(energy)(x, y, k)), x * x * y);
  EXPECT_EQ(scalar(xpr::hessian<-3>(energy)(x, y, k)), 2 * k * y);
}

TEST(Grad, KeepsDtypesAndTakesFloat32) {
  auto f = [](auto x) { return xpr::sum(x * x); };
  Array g = xpr::grad(f)(xpr::array({1.0f, 2.0f}));
  EXPECT_EQ(g.dtype(), xpr::float32);
  EXPECT_EQ(g.to_vector<float>(), (std::vector<float>{2.0f, 4.0f}));
}

TEST(Grad, ConstantFunctionsHaveZeroGradients) {
  auto f = [](auto, auto y) { return y * 2.0; };
  auto [gx, gy] = xpr::grad<0, 1>(f)(1.5, 4.0);
  EXPECT_EQ(scalar(gx), 0.0);
  EXPECT_EQ(scalar(gy), 2.0);
}

TEST(Grad, AbsTakesTheDerivativeFromTheRightAsJaxDoes) {
  auto f = [](auto x) { return xpr::abs(x); };
  EXPECT_EQ(scalar(xpr::grad(f)(0.0)), 1.0);  // jax.grad(jnp.abs)(0.) is 1.0
  EXPECT_EQ(scalar(xpr::grad(f)(-2.0)), -1.0);
  EXPECT_EQ(scalar(xpr::grad(f)(3.0)), 1.0);
  // JAX's rule, select(ge(x, 0), t, neg(t)), equation for equation.
  auto f_jvp = [&](auto x, auto t) { return xpr::jvp(f, std::tuple{x}, std::tuple{t}).second; };
  std::ostringstream os;
  os << xpr::make_jaxpr(f_jvp)(-2.0, 1.0);
  EXPECT_EQ(os.str(), R"({ lambda ; a:f64[] b:f64[]. let
    _:f64[] = abs a
    c:bool[] = ge a 0.0:f64[]
    d:f64[] = neg b
    e:f64[] = select_n c d b
  in (e,) })");
}

TEST(Grad, ControlFlowOnValues) {
  // Partial evaluation keeps primal values concrete, so C++ control flow on them works under
  // grad (Autodidax's `grad(lambda x: x**2 if x > 0 else 0.)`).
  auto f = [](auto x) { return x > 0.0 ? x * x : x * 0.0; };
  EXPECT_EQ(scalar(xpr::grad(f)(3.0)), 6.0);
  EXPECT_EQ(scalar(xpr::grad(f)(-3.0)), 0.0);
  EXPECT_EQ(scalar(xpr::grad(xpr::grad(f))(3.0)), 2.0);
}

// ---- errors ---------------------------------------------------------------------------------

template <class Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const xpr::type_error& e) {
    return e.what();
  }
  return "no type_error";
}

TEST(Errors, GradOfANonScalarOutput) {
  auto f = [](auto x) { return xpr::sin(x); };
  EXPECT_EQ(error_of([&] {
              xpr::grad(f)(xpr::array({1.0, 2.0, 3.0}));
            }),
            "Gradient only defined for scalar-output functions. Output had shape: (3,).");
}

TEST(Errors, GradOfIntegerInputs) {
  auto f = [](auto x) { return x * 2; };
  EXPECT_EQ(error_of([&] { xpr::grad(f)(3); }),
            "grad requires real-valued inputs (a floating dtype), but got int32. Pass a "
            "floating-point value (3.0 rather than 3, or xpr::convert_element_type(x, "
            "xpr::float64)); an integer argument that is not differentiated goes outside argnums "
            "(xpr::grad<0>(f)(x, n)).");
}

// Found by an examiner: jacrev of a function with an integer output returned f64 zeros. JAX raises
// the error grad gives; an integer output next to a float one is refused the same way.
TEST(Errors, JacrevOfIntegerOutputs) {
  const char* want =
      "jacrev requires real-valued outputs (output dtype that is a sub-dtype of np.floating), but "
      "got int32. For differentiation of functions with integer outputs, use xpr::vjp directly.";
  auto to_int = [](const Array& x) { return xpr::astype(x, xpr::int32); };
  EXPECT_EQ(error_of([&] { xpr::jacrev(to_int)(xpr::array({1.0, 2.0})); }), want);
  auto both = [](const Array& x) { return std::tuple{xpr::sin(x), xpr::astype(x, xpr::int32)}; };
  EXPECT_EQ(error_of([&] { xpr::jacrev(both)(xpr::array({1.0, 2.0})); }), want);
  // Float outputs are unaffected: the Jacobian of sin is diag(cos x).
  Array j = xpr::jacrev([](const Array& x) { return xpr::sin(x); })(xpr::array({1.0, 2.0}));
  EXPECT_EQ(values(j), (std::vector<double>{std::cos(1.0), 0.0, 0.0, std::cos(2.0)}));
}

TEST(Errors, WrongCotangentsAndTangents) {
  auto [y, f_vjp] = xpr::vjp([](auto x) { return xpr::sin(x); }, xpr::array({1.0, 2.0}));
  EXPECT_THROW(f_vjp(xpr::array({1.0, 2.0, 3.0})), xpr::type_error);
  EXPECT_THROW(f_vjp(xpr::array({1.0f, 2.0f})), xpr::type_error);
  auto [y2, f_lin] = xpr::linearize([](auto x) { return xpr::sin(x); }, 1.0);
  EXPECT_THROW(f_lin(xpr::array({1.0, 2.0})), xpr::type_error);
  EXPECT_THROW(f_lin(std::tuple{1.0}), xpr::type_error);
}

TEST(Errors, LinearTransposeOfANonLinearFunction) {
  auto f = [](auto t) { return xpr::sin(t); };
  auto f_t = xpr::linear_transpose(f, 1.0);
  EXPECT_THROW(f_t(1.0), xpr::error);
}

// A transformed function held const, or passed to a solver as `const F&`, is callable: Newton's
// method for x^3 = 2 with the derivative from `grad`, and the Jacobian of a 2-equation system.
template <class F, class DF>
double newton(const F& f, const DF& df, double x) {
  for (int k = 0; k < 30; ++k) x -= scalar(f(Array(x))) / scalar(df(Array(x)));
  return x;
}

TEST(ConstTransformedFunctions, AreCallable) {
  auto f = [](const Array& x) { return x * x * x - 2.0; };
  const auto df = xpr::grad(f);
  EXPECT_NEAR(newton(f, df, 1.0), std::cbrt(2.0), 1e-14);
  EXPECT_NEAR(scalar(df(Array(2.0))), 12.0, 1e-14);
  const auto vf = xpr::value_and_grad(f);
  EXPECT_NEAR(scalar(vf(Array(2.0)).second), 12.0, 1e-14);
  auto g = [](const Array& v) { return xpr::stack({v[0] * v[1], v[0] - v[1]}); };
  const auto jf = xpr::jacfwd(g);
  const auto jr = xpr::jacrev(g);
  const Array v = xpr::array({3.0, 5.0});
  // d(v0 v1, v0 - v1) / dv = [[v1, v0], [1, -1]]
  EXPECT_EQ(jf(v).to_vector<double>(), (std::vector<double>{5.0, 3.0, 1.0, -1.0}));
  EXPECT_EQ(jr(v).to_vector<double>(), (std::vector<double>{5.0, 3.0, 1.0, -1.0}));
  const auto h = xpr::hessian([](const Array& x) { return xpr::sum(x * x * x); });
  EXPECT_EQ(h(v).to_vector<double>(), (std::vector<double>{18.0, 0.0, 0.0, 30.0}));
  const auto vm = xpr::vmap(f);
  EXPECT_EQ(vm(v).to_vector<double>(), (std::vector<double>{25.0, 123.0}));
  // A mutable function still works, held const too (its state is the transformed function's).
  int calls = 0;
  const auto counted = xpr::grad([calls](const Array& x) mutable {
    ++calls;
    return x * x;
  });
  EXPECT_EQ(scalar(counted(Array(3.0))), 6.0);
  (void)calls;
}

}  // namespace test_rt_api_autodiff
