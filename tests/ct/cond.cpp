// Tests of xpr::cond in the compile-time tier (include/xpr/ct/tracer.hpp): on tracers it records
// select_n of both branches, so values, grad and hessian equal the closed forms on each side of
// the branch point, and vmap runs it lane by lane; on plain numbers it just branches.
#include <cmath>
#include <vector>

#include <Eigen/Core>
#include <gtest/gtest.h>

#include "xpr/ct/ct.hpp"

namespace {

namespace ct = xpr::ct;

// x > 0 ? x^2 sin x : exp(2 x)
auto piecewise = [](auto x) {
  return xpr::cond(
      x > 0, [](auto v) { return v * v * xpr::sin(v); }, [](auto v) { return xpr::exp(2 * v); }, x);
};
double ref(double x) { return x > 0 ? x * x * std::sin(x) : std::exp(2 * x); }
double d_ref(double x) {
  return x > 0 ? 2 * x * std::sin(x) + x * x * std::cos(x) : 2 * std::exp(2 * x);
}
double dd_ref(double x) {
  return x > 0 ? 2 * std::sin(x) + 4 * x * std::cos(x) - x * x * std::sin(x) : 4 * std::exp(2 * x);
}

TEST(CtCond, PlainNumbersBranch) {
  EXPECT_EQ(piecewise(2.0), ref(2.0));
  EXPECT_EQ(piecewise(-1.0), ref(-1.0));
  EXPECT_EQ(xpr::cond(
                true, [] { return 1; }, [] { return 2; }),
            1);
}

TEST(CtCond, GradAndHessianOnBothSides) {
  for (double x : {-1.5, -0.2, 0.3, 1.0, 2.5}) {
    EXPECT_NEAR(ct::grad(piecewise)(x), d_ref(x), 1e-13 * (1 + std::abs(d_ref(x)))) << x;
    EXPECT_NEAR(ct::hessian(piecewise)(x), dd_ref(x), 1e-12 * (1 + std::abs(dd_ref(x)))) << x;
    const double h = 1e-6;
    EXPECT_NEAR(ct::grad(piecewise)(x), (ref(x + h) - ref(x - h)) / (2 * h), 1e-7) << x;
  }
}

TEST(CtCond, ClosuresAndNumericPredicates) {
  // The branches close over y; the predicate is a number (true when nonzero).
  auto f = [](auto x, auto y) {
    return xpr::cond(
        x - 1, [&](auto v) { return v * y; }, [&](auto v) { return v + y * y; }, x);
  };
  auto [gx, gy] = ct::grad<0, 1>(f)(3.0, 2.0);  // x != 1: x y
  EXPECT_EQ(gx, 2.0);
  EXPECT_EQ(gy, 3.0);
  auto [hx, hy] = ct::grad<0, 1>(f)(1.0, 2.0);  // x == 1: x + y^2
  EXPECT_EQ(hx, 1.0);
  EXPECT_EQ(hy, 4.0);
}

TEST(CtCond, VmapLaneByLane) {
  Eigen::ArrayXd xs(5);
  xs << -1.5, -0.2, 0.3, 1.0, 2.5;
  Eigen::ArrayXd gs = ct::vmap(ct::grad(piecewise))(xs);
  for (Eigen::Index i = 0; i < xs.size(); ++i)
    EXPECT_NEAR(gs[i], d_ref(xs[i]), 1e-13 * (1 + std::abs(d_ref(xs[i])))) << xs[i];
}

}  // namespace
