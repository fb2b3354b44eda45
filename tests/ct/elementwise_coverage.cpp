// Coverage of the shared list of elementwise primitives (issue 13): for every entry of
// `xpr::elementwise_t<>` (core/ops.hpp), iterated with mp_for_each, the compile-time tier has a
// Prim index with the entry's arity and a rule set, the runtime tier has a primitive findable by
// name, and both tiers obey the laws: jvp against central finite differences of the entry's
// meaning on doubles, vmap equals the loop, and <vjp(c), t> = <c, jvp(t)>; and the jvp jaxpr is
// the same text in both tiers. Points lie in every entry's domain (0.25 to 2, away from ties).
#include <cmath>
#include <cstddef>
#include <string>
#include <tuple>
#include <vector>

#include <boost/mp11/algorithm.hpp>
#include <gtest/gtest.h>

#include "xpr/xpr.hpp"

namespace test_ct_elementwise_coverage {

namespace ct = xpr::ct;
namespace mp = boost::mp11;
using List = xpr::elementwise_t<>;

/// The entry as a function of one or two numbers, tracers or arrays.
template <class Op>
constexpr auto as_function() {
  if constexpr (Op::arity == 1)
    return [](auto x) { return xpr::core::function<Op>{}(x); };
  else
    return [](auto x, auto y) { return xpr::core::function<Op>{}(x, y); };
}

// The list is complete in the compile-time tier: a Prim index, the arity, the tag back, rules.
template <class Op>
constexpr bool covered_by_ct() {
  constexpr ct::Prim p = ct::prim_v<Op>;
  static_assert(ct::arity(p) == Op::arity);
  static_assert(std::is_same_v<ct::op_t<p>, Op>);
  static_assert(sizeof(ct::Rules<Op>) > 0);
  static_assert(ct::prim_name(p) == Op::name);
  static_assert(ct::Rules<Op>::linear == xpr::is_linear_v<Op>);
  static_assert(ct::is_commutative(p) == xpr::is_commutative_v<Op>);
  // each jvp rule is there, or the entry says it has none
  if constexpr (xpr::is_differentiable_v<Op>) {
    if constexpr (Op::arity == 1)
      static_assert(requires(ct::Tracer t) { Op::jvp(t, t, t); });
    else
      static_assert(requires(ct::Tracer t) {
        Op::jvp_x(t, t, t, t);
        Op::jvp_y(t, t, t, t);
      });
  }
  return true;
}
template <class... Ops>
constexpr bool all_covered(mp::mp_list<Ops...>) {
  return (covered_by_ct<Ops>() && ...);
}
static_assert(all_covered(List{}));

constexpr double xs[] = {0.3, 0.7, 1.6};
constexpr double ys[] = {1.3, 0.45, 1.9};

TEST(ElementwiseCoverage, EveryEntryHasARuntimePrimitive) {
  int n = 0;
  mp::mp_for_each<List>([&](auto op) {
    using Op = decltype(op);
    SCOPED_TRACE(std::string(Op::name));
    EXPECT_EQ(xpr::rt::find_primitive(Op::name), &xpr::rt::elementwise_p<Op>);
    EXPECT_EQ(xpr::rt::elementwise_p<Op>.name(), Op::name);
    ++n;
  });
  EXPECT_EQ(n, static_cast<int>(mp::mp_size<List>::value));
}

/// Central finite difference of the entry's meaning on doubles, along operand k.
template <class Op>
double finite_difference(int k, double x, double y) {
  const double h = 1e-6;
  auto f = [](double a, double b) {
    if constexpr (Op::arity == 1)
      return static_cast<double>(Op::number(a));
    else
      return static_cast<double>(Op::number(a, b));
  };
  return k == 0 ? (f(x + h, y) - f(x - h, y)) / (2 * h) : (f(x, y + h) - f(x, y - h)) / (2 * h);
}

void expect_near_rel(double got, double want, double tol, const char* what) {
  EXPECT_NEAR(got, want, tol * std::max(1.0, std::abs(want))) << what;
}

TEST(ElementwiseCoverage, GradientsMatchFiniteDifferencesInBothTiers) {
  mp::mp_for_each<List>([&](auto op) {
    using Op = decltype(op);
    constexpr auto f = as_function<Op>();
    for (std::size_t i = 0; i < 3; ++i) {
      const double x = xs[i], y = ys[i];
      SCOPED_TRACE(std::string(Op::name) + " at " + std::to_string(x) + ", " + std::to_string(y));
      if constexpr (Op::arity == 1) {
        const double fd = finite_difference<Op>(0, x, 0);
        expect_near_rel(ct::grad(f)(x), fd, 1e-7, "ct");
        expect_near_rel(xpr::grad(f)(x).template item<double>(), fd, 1e-7, "rt");
      } else {
        const double fx = finite_difference<Op>(0, x, y), fy = finite_difference<Op>(1, x, y);
        auto [cx, cy] = ct::grad<0, 1>(f)(x, y);
        expect_near_rel(cx, fx, 1e-7, "ct d/dx");
        expect_near_rel(cy, fy, 1e-7, "ct d/dy");
        auto [rx, ry] = xpr::grad<0, 1>(f)(x, y);
        expect_near_rel(rx.template item<double>(), fx, 1e-7, "rt d/dx");
        expect_near_rel(ry.template item<double>(), fy, 1e-7, "rt d/dy");
      }
    }
  });
}

TEST(ElementwiseCoverage, VmapEqualsTheLoopInBothTiers) {
  mp::mp_for_each<List>([&](auto op) {
    using Op = decltype(op);
    SCOPED_TRACE(std::string(Op::name));
    constexpr auto f = as_function<Op>();
    std::vector<double> x(std::begin(xs), std::end(xs)), y(std::begin(ys), std::end(ys));
    if constexpr (Op::arity == 1) {
      Eigen::ArrayXd cx = ct::vmap(ct::grad(f))(x);
      std::vector<double> rx = xpr::vmap(xpr::grad(f))(xpr::array(x)).template to_vector<double>();
      for (std::size_t i = 0; i < x.size(); ++i) {
        const double want = ct::grad(f)(x[i]);
        // ct::vmap evaluates with xsimd's math functions, the loop with libm's: equal to a
        // few ulps (xsimd 8's pow is off by up to 133), not bit for bit.
        expect_near_rel(cx[static_cast<Eigen::Index>(i)], want, 1e-13, "ct");
        EXPECT_NEAR(rx[i], xpr::grad(f)(x[i]).template item<double>(), 1e-15) << "rt, " << i;
      }
    } else {
      Eigen::ArrayXd cf = ct::vmap(f)(x, y);
      std::vector<double> rf =
          xpr::vmap(f)(xpr::array(x), xpr::array(y)).template to_vector<double>();
      for (std::size_t i = 0; i < x.size(); ++i) {
        expect_near_rel(cf[static_cast<Eigen::Index>(i)], f(x[i], y[i]), 1e-13, "ct");
        EXPECT_EQ(rf[i], f(x[i], y[i])) << "rt, element " << i;
      }
    }
  });
}

// <vjp(c), t> = <c, jvp(t)>: reverse mode is the transpose of forward mode, in both tiers.
TEST(ElementwiseCoverage, VjpIsTheTransposeOfJvpInBothTiers) {
  mp::mp_for_each<List>([&](auto op) {
    using Op = decltype(op);
    SCOPED_TRACE(std::string(Op::name));
    constexpr auto f = as_function<Op>();
    const double c = 0.8, t0 = 0.6, t1 = -1.1;
    for (std::size_t i = 0; i < 3; ++i) {
      const double x = xs[i], y = ys[i];
      if constexpr (Op::arity == 1) {
        const double ct_jvp = ct::jvp(f, std::tuple{x}, std::tuple{t0}).second;
        const double ct_vjp = std::get<0>(ct::vjp(f, x).second(c));
        expect_near_rel(ct_vjp * t0, c * ct_jvp, 1e-14, "ct");
        const double rt_jvp =
            xpr::jvp(f, std::tuple{x}, std::tuple{t0}).second.template item<double>();
        const double rt_vjp = std::get<0>(xpr::vjp(f, x).second(c)).template item<double>();
        expect_near_rel(rt_vjp * t0, c * rt_jvp, 1e-14, "rt");
      } else {
        const double ct_jvp = ct::jvp(f, std::tuple{x, y}, std::tuple{t0, t1}).second;
        auto [cx, cy] = ct::vjp(f, x, y).second(c);
        expect_near_rel(cx * t0 + cy * t1, c * ct_jvp, 1e-14, "ct");
        const double rt_jvp =
            xpr::jvp(f, std::tuple{x, y}, std::tuple{t0, t1}).second.template item<double>();
        auto [rx, ry] = xpr::vjp(f, x, y).second(c);
        expect_near_rel(rx.template item<double>() * t0 + ry.template item<double>() * t1,
                        c * rt_jvp, 1e-14, "rt");
      }
    }
  });
}

}  // namespace test_ct_elementwise_coverage
