// Tests of evaluation on other scalar types (include/xpr/ct/eval.hpp, include/xpr/interop/
// {xsimd,eigen}.hpp): transformed programs on xsimd batches of double and float and on Eigen
// arrays equal the scalar evaluation lane by lane; Eigen fixed-size vectors as arguments.
#include <array>
#include <cmath>
#include <cstddef>
#include <tuple>
#include <type_traits>

#include <Eigen/Core>
#include <gtest/gtest.h>
#include <xsimd/xsimd.hpp>

#include "xpr/ct/ct.hpp"

namespace {

namespace ct = xpr::ct;

constexpr auto w1 = [](auto x, auto y, auto z) {
  return xpr::sin(x) * y + xpr::exp(x * z) - xpr::log(1 + y * y) * z;
};
// Uses every kind of equation the evaluator has: comparisons, select, integer_pow, literals.
constexpr auto branchy = [](auto x, auto y) {
  return xpr::where(x > y, xpr::integer_pow(x, 3), xpr::maximum(y, 0.25) * x) + xpr::abs(x - 1.0);
};

double rel_err(double got, double want) { return std::abs(got - want) / (1 + std::abs(want)); }

template <class T>
void check_batches() {
  using B = xsimd::batch<T>;
  constexpr std::size_t W = B::size;
  alignas(64) T x[W], y[W], z[W];
  for (std::size_t i = 0; i < W; ++i) {
    x[i] = static_cast<T>(0.9 * std::sin(1.0 + static_cast<double>(i)));
    y[i] = static_cast<T>(0.5 - 0.3 * static_cast<double>(i));
    z[i] = static_cast<T>(0.25 * std::cos(static_cast<double>(i)));
  }
  const B bx = B::load_aligned(x), by = B::load_aligned(y), bz = B::load_aligned(z);
  auto [v, g] = ct::value_and_grad<0, 1, 2>(w1)(bx, by, bz);
  static_assert(std::is_same_v<decltype(v), B>);
  auto [gx, gy, gz] = g;
  auto h = ct::hessian<0, 1>(branchy)(bx, by);
  auto [jv, jt] = ct::jvp(w1, std::tuple{bx, by, bz}, std::tuple{by, bz, bx});
  auto [lv, f_lin] = ct::linearize(w1, bx, by, bz);
  const B lt = f_lin(bz, bx, by);
  auto [vv, f_vjp] = ct::vjp(w1, bx, by, bz);
  auto [cx, cy, cz] = f_vjp(by);
  auto b = ct::grad<0, 1>(branchy)(bx, by);
  for (std::size_t i = 0; i < W; ++i) {
    SCOPED_TRACE(::testing::Message() << "lane " << i);
    auto [sv, sg] = ct::value_and_grad<0, 1, 2>(w1)(x[i], y[i], z[i]);
    static_assert(std::is_same_v<decltype(sv), T>);
    // the same program on the same values: equal up to the SIMD math library's rounding
    const double tol = std::is_same_v<T, float> ? 1e-6 : 1e-14;
    EXPECT_LT(rel_err(v.get(i), sv), tol);
    EXPECT_LT(rel_err(gx.get(i), std::get<0>(sg)), tol);
    EXPECT_LT(rel_err(gy.get(i), std::get<1>(sg)), tol);
    EXPECT_LT(rel_err(gz.get(i), std::get<2>(sg)), tol);
    // jvp, linearize and vjp on batches: the directional derivatives by the scalar gradient
    const double dx = std::get<0>(sg), dy = std::get<1>(sg), dz = std::get<2>(sg);
    EXPECT_LT(rel_err(jv.get(i), sv), tol);
    EXPECT_LT(rel_err(jt.get(i), dx * y[i] + dy * z[i] + dz * x[i]), 10 * tol);
    EXPECT_LT(rel_err(lv.get(i), sv), tol);
    EXPECT_LT(rel_err(lt.get(i), dx * z[i] + dy * x[i] + dz * y[i]), 10 * tol);
    EXPECT_LT(rel_err(vv.get(i), sv), tol);
    EXPECT_LT(rel_err(cx.get(i), dx * y[i]), tol);
    EXPECT_LT(rel_err(cy.get(i), dy * y[i]), tol);
    EXPECT_LT(rel_err(cz.get(i), dz * y[i]), tol);
    auto sh = ct::hessian<0, 1>(branchy)(x[i], y[i]);
    auto sb = ct::grad<0, 1>(branchy)(x[i], y[i]);
    EXPECT_EQ(std::get<0>(b).get(i), std::get<0>(sb));
    EXPECT_EQ(std::get<1>(b).get(i), std::get<1>(sb));
    EXPECT_EQ(std::get<0>(std::get<0>(h)).get(i), std::get<0>(std::get<0>(sh)));
    EXPECT_EQ(std::get<1>(std::get<1>(h)).get(i), std::get<1>(std::get<1>(sh)));
    // and the derivative of the branch taken, by hand
    const double xi = x[i], yi = y[i];
    const double want_dx = (xi > yi ? 3 * xi * xi : std::max(yi, 0.25)) + (xi >= 1 ? 1 : -1);
    EXPECT_LT(rel_err(std::get<0>(sb), want_dx), (std::is_same_v<T, float> ? 1e-6 : 1e-15));
  }
}

TEST(CtSimd, BatchesOfDouble) { check_batches<double>(); }
TEST(CtSimd, BatchesOfFloat) { check_batches<float>(); }

TEST(CtSimd, EigenArraysAsScalars) {
  Eigen::ArrayXd x(5), y(5), z(5);
  x << 0.1, -0.4, 0.7, 1.2, -1.5;
  y << 0.3, 0.9, -0.2, 0.0, 2.0;
  z << -0.6, 0.25, 0.5, 1.0, -0.1;
  auto [v, g] = ct::value_and_grad<0, 1>(w1)(x, y, z);
  static_assert(std::is_same_v<decltype(v), Eigen::ArrayXd>);
  auto [gx, gy] = g;
  auto s = ct::grad<0, 1>(branchy)(x, y);
  for (Eigen::Index i = 0; i < 5; ++i) {
    auto [sv, sg] = ct::value_and_grad<0, 1>(w1)(x[i], y[i], z[i]);
    EXPECT_LT(rel_err(v[i], sv), 1e-15);
    EXPECT_LT(rel_err(gx[i], std::get<0>(sg)), 1e-15);
    EXPECT_LT(rel_err(gy[i], std::get<1>(sg)), 1e-15);
    auto sb = ct::grad<0, 1>(branchy)(x[i], y[i]);
    EXPECT_EQ(std::get<0>(s)[i], std::get<0>(sb));
    EXPECT_EQ(std::get<1>(s)[i], std::get<1>(sb));
  }
}

TEST(CtEigen, FixedSizeVectorArguments) {
  constexpr auto f = [](const auto& v, auto p) { return v(0) * v[1] + xpr::sin(v(2)) * p; };
  const Eigen::Vector3d v(1.0, 2.0, 3.0);
  const Eigen::Vector3d g = ct::grad(f)(v, 0.5);
  EXPECT_EQ(g(0), 2.0);
  EXPECT_EQ(g(1), 1.0);
  EXPECT_EQ(g(2), 0.5 * std::cos(3.0));
  const Eigen::Array3f a(1.0f, 2.0f, 3.0f);
  auto ga = ct::grad(f)(a, 0.5f);
  static_assert(std::is_same_v<decltype(ga), Eigen::Array3f>);
  EXPECT_EQ(ga(0), 2.0f);
  // a Jacobian with respect to an Eigen vector has one Eigen vector per output
  constexpr auto m = [](const auto& w) { return std::array{w(0) * w(1), w(1) + w(2)}; };
  auto j = ct::jacrev(m)(v);
  static_assert(std::is_same_v<decltype(j), std::array<Eigen::Vector3d, 2>>);
  EXPECT_EQ(j[0], Eigen::Vector3d(2.0, 1.0, 0.0));
  EXPECT_EQ(j[1], Eigen::Vector3d(0.0, 1.0, 1.0));
}

}  // namespace
