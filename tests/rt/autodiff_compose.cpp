// Compositions of the runtime tier's autodiff transformations on array functions, beyond the
// scalar ones of api_autodiff.cpp: the four ways of nesting jacfwd and jacrev, hessian, jvp of
// grad, grad of an inner product with grad, vjp of grad (Hessian-vector products) against a
// closed-form Hessian; third derivatives (jacfwd of hessian, grad of a divergence taken with
// jacfwd or jacrev inside); vmap of grad, jacrev, jacfwd and hessian with unmapped arguments
// against loops and closed forms, grad of vmap, vmap of a pullback; and nested grad free of
// perturbation confusion.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/api.hpp"
#include "xpr/rt/api_autodiff.hpp"

namespace test_rt_autodiff_compose {

using xpr::Array;
using xpr::Shape;

std::vector<double> values(const Array& a) { return a.to_vector<double>(); }

void expect_close(const std::vector<double>& got, const std::vector<double>& want,
                  const std::string& what, double tol = 1e-12) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_LE(std::abs(got[i] - want[i]), tol * (1 + std::abs(want[i])))
        << what << " [" << i << "]: got " << got[i] << ", want " << want[i];
}

constexpr std::int64_t n = 4;

// f(x) = x^T A x / 2 + sum(cos x) with A symmetric: gradient A x - sin x, Hessian
// A - diag(cos x), third derivative T_iii = sin x_i (zero elsewhere).
const std::vector<double> a_values{2.0,  0.5,  -1.0, 0.0,  0.5, 3.0, 0.25, 1.0,
                                   -1.0, 0.25, 1.5,  -0.5, 0.0, 1.0, -0.5, 4.0};
const std::vector<double> x_values{0.3, -1.1, 0.8, 2.0};
const std::vector<double> v_values{1.0, -0.5, 0.25, 2.0};

Array quadratic_plus_cos(const Array& x) {
  Array a = xpr::array(a_values, Shape{n, n});
  return 0.5 * xpr::dot(x, xpr::matmul(a, x)) + xpr::sum(xpr::cos(x));
}

std::vector<double> closed_hessian() {
  std::vector<double> h = a_values;
  for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i)
    h[i * n + i] -= std::cos(x_values[i]);
  return h;
}

std::vector<double> closed_hvp() {
  auto h = closed_hessian();
  std::vector<double> out(n, 0);
  for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i)
    for (std::size_t j = 0; j < static_cast<std::size_t>(n); ++j)
      out[i] += h[i * n + j] * v_values[j];
  return out;
}

TEST(ComposeArrays, FourNestingsOfJacobiansAndHessian) {
  auto f = [](const Array& x) { return quadratic_plus_cos(x); };
  Array x = xpr::array(x_values, Shape{n});
  const auto h = closed_hessian();
  expect_close(values(xpr::hessian(f)(x)), h, "hessian");
  expect_close(values(xpr::jacfwd(xpr::jacrev(f))(x)), h, "jacfwd(jacrev)");
  expect_close(values(xpr::jacrev(xpr::jacrev(f))(x)), h, "jacrev(jacrev)");
  expect_close(values(xpr::jacrev(xpr::jacfwd(f))(x)), h, "jacrev(jacfwd)");
  expect_close(values(xpr::jacfwd(xpr::jacfwd(f))(x)), h, "jacfwd(jacfwd)");
  expect_close(values(xpr::jacfwd(xpr::grad(f))(x)), h, "jacfwd(grad)");
  expect_close(values(xpr::jacrev(xpr::grad(f))(x)), h, "jacrev(grad)");
  EXPECT_EQ(xpr::hessian(f)(x).shape(), (Shape{n, n}));
}

TEST(ComposeArrays, HessianVectorProductsThreeWays) {
  auto f = [](const Array& x) { return quadratic_plus_cos(x); };
  Array x = xpr::array(x_values, Shape{n}), v = xpr::array(v_values, Shape{n});
  const auto hv = closed_hvp();
  // forward over reverse
  auto [g, jvp_hv] = xpr::jvp(xpr::grad(f), std::tuple{x}, std::tuple{v});
  expect_close(values(jvp_hv), hv, "jvp of grad");
  std::vector<double> grad_closed(n);
  for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) {
    grad_closed[i] = -std::sin(x_values[i]);
    for (std::size_t j = 0; j < static_cast<std::size_t>(n); ++j)
      grad_closed[i] += a_values[i * n + j] * x_values[j];
  }
  expect_close(values(g), grad_closed, "grad");
  // reverse over reverse: grad of <grad f(x), v>
  auto gv = [&](const Array& y) { return xpr::dot(xpr::grad(f)(y), v); };
  expect_close(values(xpr::grad(gv)(x)), hv, "grad of <grad f, v>");
  // reverse over reverse by vjp: H is symmetric, so the pullback of grad is H v
  auto [g2, pullback] = xpr::vjp(xpr::grad(f), x);
  auto [ct] = pullback(v);
  expect_close(values(ct), hv, "vjp of grad");
  // linearize of grad
  auto [g3, hessian_lin] = xpr::linearize(xpr::grad(f), x);
  expect_close(values(hessian_lin(v)), hv, "linearize of grad");
}

TEST(ComposeArrays, ThirdDerivatives) {
  auto f = [](const Array& x) { return quadratic_plus_cos(x); };
  Array x = xpr::array(x_values, Shape{n});
  // jacfwd(hessian) and jacrev(hessian): T_ijk = sin x_i when i = j = k, else 0
  std::vector<double> t(n * n * n, 0);
  for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i)
    t[(i * n + i) * n + i] = std::sin(x_values[i]);
  Array tf = xpr::jacfwd(xpr::hessian(f))(x);
  EXPECT_EQ(tf.shape(), (Shape{n, n, n}));
  expect_close(values(tf), t, "jacfwd(hessian)");
  expect_close(values(xpr::jacrev(xpr::hessian(f))(x)), t, "jacrev(hessian)");
  // grad of the divergence of g(x) = sin(x) * x (elementwise), taken with a Jacobian inside:
  // div g = sum(cos x * x + sin x), its gradient 2 cos x - x sin x.
  auto g = [](const Array& y) { return xpr::sin(y) * y; };
  auto div_fwd = [&](const Array& y) { return xpr::sum(xpr::jacfwd(g)(y) * xpr::eye(n)); };
  auto div_rev = [&](const Array& y) { return xpr::sum(xpr::jacrev(g)(y) * xpr::eye(n)); };
  std::vector<double> want(n);
  for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i)
    want[i] = 2 * std::cos(x_values[i]) - x_values[i] * std::sin(x_values[i]);
  expect_close(values(xpr::grad(div_fwd)(x)), want, "grad of div by jacfwd");
  expect_close(values(xpr::grad(div_rev)(x)), want, "grad of div by jacrev");
}

// Per-example gradients of a least-squares loss l(w, x, y) = (w . x - y)^2 with the weights
// unmapped: vmap(grad) gives 2 (w . x_i - y_i) x_i per row; grad of the summed vmap gives their
// sum.
TEST(ComposeVmap, PerExampleGradientsAndGradOfVmap) {
  auto l = [](const Array& w, const Array& x, const Array& y) {
    Array r = xpr::dot(w, x) - y;
    return r * r;
  };
  const std::vector<double> w{0.5, -1.0, 2.0};
  const std::vector<double> xs{1.0, 2.0, 3.0, -1.0, 0.5, 0.25, 0.0, 1.5, -2.0, 2.0, 2.0, 1.0};
  const std::vector<double> ys{1.0, -0.5, 3.0, 0.25};
  Array wa = xpr::array(w, Shape{3}), xa = xpr::array(xs, Shape{4, 3}),
        ya = xpr::array(ys, Shape{4});
  std::vector<double> per(12), total(3, 0);
  for (std::size_t i = 0; i < 4; ++i) {
    double r = -ys[i];
    for (std::size_t j = 0; j < 3; ++j) r += w[j] * xs[i * 3 + j];
    for (std::size_t j = 0; j < 3; ++j) {
      per[i * 3 + j] = 2 * r * xs[i * 3 + j];
      total[j] += per[i * 3 + j];
    }
  }
  auto per_example = xpr::vmap(xpr::grad(l), std::tuple{xpr::not_mapped, 0, 0});
  Array g = per_example(wa, xa, ya);
  EXPECT_EQ(g.shape(), (Shape{4, 3}));
  expect_close(values(g), per, "vmap(grad)");
  auto batch_loss = [&](const Array& ww) {
    return xpr::sum(xpr::vmap(l, std::tuple{xpr::not_mapped, 0, 0})(ww, xa, ya));
  };
  expect_close(values(xpr::grad(batch_loss)(wa)), total, "grad(sum(vmap))");
  // out_axes = 1: the gradients come out as columns
  auto per_example_t = xpr::vmap(xpr::grad(l), std::tuple{xpr::not_mapped, 0, 0}, 1);
  Array gt = per_example_t(wa, xa, ya);
  EXPECT_EQ(gt.shape(), (Shape{3, 4}));
  auto gtv = values(gt);
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t j = 0; j < 3; ++j) EXPECT_NEAR(gtv[j * 4 + i], per[i * 3 + j], 1e-12);
}

// vmap of jacfwd, jacrev and hessian over a batch of points equals the per-point results (a
// loop), for g(x) = sin(x) * sum(x^2) whose Jacobian and Hessians have closed forms.
TEST(ComposeVmap, BatchesOfJacobiansAndHessians) {
  auto g = [](const Array& x) { return xpr::sin(x) * xpr::sum(x * x); };
  auto s = [](const Array& x) { return xpr::sum(xpr::sin(x)) * xpr::sum(x * x); };
  const std::vector<double> pts{0.3, -1.1, 0.8, 1.2, 0.1, -0.4, -2.0, 0.9, 0.5};
  Array xs = xpr::array(pts, Shape{3, 3});
  Array jf = xpr::vmap(xpr::jacfwd(g))(xs), jr = xpr::vmap(xpr::jacrev(g))(xs);
  Array hs = xpr::vmap(xpr::hessian(s))(xs);
  EXPECT_EQ(jf.shape(), (Shape{3, 3, 3}));
  EXPECT_EQ(hs.shape(), (Shape{3, 3, 3}));
  for (std::size_t b = 0; b < 3; ++b) {
    const double* x = &pts[b * 3];
    double q = 0, sn = 0;
    for (std::size_t i = 0; i < 3; ++i) {
      q += x[i] * x[i];
      sn += std::sin(x[i]);
    }
    std::vector<double> jac(9), hess(9);
    for (std::size_t i = 0; i < 3; ++i)
      for (std::size_t j = 0; j < 3; ++j) {
        // d/dx_j [sin x_i q] = [i == j] cos x_i q + 2 sin x_i x_j
        jac[i * 3 + j] = (i == j ? std::cos(x[i]) * q : 0) + 2 * std::sin(x[i]) * x[j];
        // s = S q: H_ij = [i == j] (-sin x_i q + 2 S) + 2 cos x_i x_j + 2 x_i cos x_j
        hess[i * 3 + j] = (i == j ? -std::sin(x[i]) * q + 2 * sn : 0) + 2 * std::cos(x[i]) * x[j] +
                          2 * x[i] * std::cos(x[j]);
      }
    auto block = [&](const Array& a) {
      auto v = values(a);
      return std::vector<double>(v.begin() + static_cast<std::ptrdiff_t>(b * 9),
                                 v.begin() + static_cast<std::ptrdiff_t>(b * 9 + 9));
    };
    expect_close(block(jf), jac, "vmap(jacfwd) " + std::to_string(b));
    expect_close(block(jr), jac, "vmap(jacrev) " + std::to_string(b));
    expect_close(block(hs), hess, "vmap(hessian) " + std::to_string(b));
    // and the same as the unbatched transformation at that point
    Array xb = xpr::array(std::vector<double>(x, x + 3), Shape{3});
    expect_close(block(hs), values(xpr::hessian(s)(xb)), "loop hessian " + std::to_string(b));
  }
}

// vmap of a pullback over the rows of the identity is jacrev, done by hand.
TEST(ComposeVmap, VmapOfAPullbackIsTheJacobian) {
  auto g = [](const Array& x) { return xpr::sin(x) * xpr::sum(x * x); };
  Array x = xpr::array({0.3, -1.1, 0.8});
  auto [y, pullback] = xpr::vjp(g, x);
  auto rows = xpr::vmap([&](const Array& ct) { return std::get<0>(pullback(ct)); })(xpr::eye(3));
  expect_close(values(rows), values(xpr::jacrev(g)(x)), "vmap(pullback)");
  expect_close(values(rows), values(xpr::jacfwd(g)(x)), "vmap(pullback) vs jacfwd");
}

// Nested differentiation keeps each level's perturbation apart (Siskind and Pearlmutter's
// "perturbation confusion"): d/dx [x * d/dy (x + y)] = 1 and d/dx [x * d/dy (x * y)] = 2x.
TEST(ComposeNesting, NoPerturbationConfusion) {
  auto outer1 = [](const Array& x) {
    auto inner = [&](const Array& y) { return x + y; };
    return x * xpr::grad(inner)(Array(1.0));
  };
  EXPECT_EQ(xpr::grad(outer1)(1.0).item<double>(), 1.0);
  auto outer2 = [](const Array& x) {
    auto inner = [&](const Array& y) { return x * y; };
    return x * xpr::grad(inner)(Array(1.0));
  };
  EXPECT_EQ(xpr::grad(outer2)(3.0).item<double>(), 6.0);
  // the same with forward mode outside and reverse inside, and the other way round
  auto [v1, d1] = xpr::jvp(outer2, std::tuple{3.0}, std::tuple{1.0});
  EXPECT_EQ(d1.item<double>(), 6.0);
  auto outer3 = [](const Array& x) {
    auto inner = [&](const Array& y) { return x * y; };
    return x * xpr::jvp(inner, std::tuple{Array(1.0)}, std::tuple{Array(1.0)}).second;
  };
  EXPECT_EQ(xpr::grad(outer3)(3.0).item<double>(), 6.0);
}

// make_jaxpr of grad, evaluated by eval_jaxpr, gives the gradient; and jaxprs of Hessians are
// evaluated the same way.
TEST(ComposeNesting, JaxprsOfGradAndHessianEvaluate) {
  auto f = [](const Array& x) { return quadratic_plus_cos(x); };
  Array x = xpr::array(x_values, Shape{n});
  auto jg = xpr::make_jaxpr(xpr::grad(f))(x);
  Array g = xpr::rt::eval_jaxpr(jg.jaxpr, jg.consts, std::vector<Array>{x}).front();
  expect_close(values(g), values(xpr::grad(f)(x)), "eval_jaxpr(make_jaxpr(grad))");
  auto jh = xpr::make_jaxpr(xpr::hessian(f))(x);
  Array h = xpr::rt::eval_jaxpr(jh.jaxpr, jh.consts, std::vector<Array>{x}).front();
  expect_close(values(h), closed_hessian(), "eval_jaxpr(make_jaxpr(hessian))");
}

}  // namespace test_rt_autodiff_compose
