// Coverage of the shared list of elementwise primitives (issue 13): for every entry of
// `xpr::elementwise_t<>` (core/ops.hpp), iterated with mp_for_each, the compile-time tier has a
// Prim index with the entry's arity and a rule set, the runtime tier has a primitive findable by
// name, and both tiers obey the laws: jvp against central finite differences of the entry's
// meaning on doubles, vmap equals the loop, and <vjp(c), t> = <c, jvp(t)>; and the jvp jaxpr is
// the same text in both tiers. Points lie in every entry's domain (0.25 to 2, away from ties).
// The same for the entries outside that list whose rules also come from their struct: the
// comparisons (`xpr::comparison_ops`) and integer_pow (a parameter `y`); and a piecewise function
// written as a user would (comparisons and where) differentiated in both tiers.
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

// ---- the comparisons (`xpr::comparison_ops`) ----------------------------------------------------

template <class Op>
constexpr bool comparison_covered_by_ct() {
  constexpr ct::Prim p = ct::prim_v<Op>;
  static_assert(ct::arity(p) == 2 && ct::is_comparison(p));
  static_assert(std::is_same_v<ct::op_t<p>, Op>);
  static_assert(ct::prim_name(p) == Op::name);
  static_assert(!ct::Rules<Op>::linear && !xpr::is_differentiable_v<Op>);
  static_assert(ct::is_commutative(p) == xpr::is_commutative_v<Op>);
  return true;
}
template <class... Ops>
constexpr bool all_comparisons_covered(mp::mp_list<Ops...>) {
  return (comparison_covered_by_ct<Ops>() && ...);
}
static_assert(all_comparisons_covered(xpr::comparison_ops{}));

TEST(ElementwiseCoverage, EveryComparisonHasARuntimePrimitive) {
  int n = 0;
  mp::mp_for_each<xpr::comparison_ops>([&](auto op) {
    using Op = decltype(op);
    SCOPED_TRACE(std::string(Op::name));
    EXPECT_EQ(xpr::rt::find_primitive(Op::name), &xpr::rt::comparison_p<Op>);
    EXPECT_EQ(xpr::rt::comparison_p<Op>.name(), Op::name);
    ++n;
  });
  EXPECT_EQ(n, 6);
}

// Each comparison selects between two smooth branches: the gradient is the selected branch's
// (finite differences of the function on doubles, away from the switch), vmap equals the loop,
// and <vjp(c), t> = <c, jvp(t)>, in both tiers.
TEST(ElementwiseCoverage, ComparisonsSelectBranchesInBothTiers) {
  mp::mp_for_each<xpr::comparison_ops>([&](auto op) {
    using Op = decltype(op);
    constexpr auto f = [](auto x, auto y) {
      return xpr::where(xpr::core::function<Op>{}(x, y), xpr::sin(x) * y, x * x - y);
    };
    // pairs on both sides of x == y, and one on it (eq, le, ge hold there)
    const double px[] = {0.3, 1.6, 0.9}, py[] = {1.3, 0.45, 0.9};
    std::vector<double> xv(std::begin(px), std::end(px)), yv(std::begin(py), std::end(py));
    for (std::size_t i = 0; i < 3; ++i) {
      const double x = px[i], y = py[i], h = 1e-6;
      SCOPED_TRACE(std::string(Op::name) + " at " + std::to_string(x) + ", " + std::to_string(y));
      // finite differences of the selected branch (the predicate held fixed, as at a non-kink)
      const bool c = Op::number(x, y);
      auto branch = [c](double a, double b) { return c ? std::sin(a) * b : a * a - b; };
      const double fx = (branch(x + h, y) - branch(x - h, y)) / (2 * h);
      const double fy = (branch(x, y + h) - branch(x, y - h)) / (2 * h);
      auto [cx, cy] = ct::grad<0, 1>(f)(x, y);
      expect_near_rel(cx, fx, 1e-7, "ct d/dx");
      expect_near_rel(cy, fy, 1e-7, "ct d/dy");
      auto [rx, ry] = xpr::grad<0, 1>(f)(x, y);
      expect_near_rel(rx.template item<double>(), fx, 1e-7, "rt d/dx");
      expect_near_rel(ry.template item<double>(), fy, 1e-7, "rt d/dy");
      const double t0 = 0.6, t1 = -1.1, w = 0.8;
      const double ct_jvp = ct::jvp(f, std::tuple{x, y}, std::tuple{t0, t1}).second;
      auto [vx, vy] = ct::vjp(f, x, y).second(w);
      expect_near_rel(vx * t0 + vy * t1, w * ct_jvp, 1e-14, "ct vjp");
      const double rt_jvp =
          xpr::jvp(f, std::tuple{x, y}, std::tuple{t0, t1}).second.template item<double>();
      auto [ux, uy] = xpr::vjp(f, x, y).second(w);
      expect_near_rel(ux.template item<double>() * t0 + uy.template item<double>() * t1, w * rt_jvp,
                      1e-14, "rt vjp");
    }
    Eigen::ArrayXd cv = ct::vmap(f)(xv, yv);
    std::vector<double> rv =
        xpr::vmap(f)(xpr::array(xv), xpr::array(yv)).template to_vector<double>();
    for (std::size_t i = 0; i < 3; ++i) {
      expect_near_rel(cv[static_cast<Eigen::Index>(i)], f(px[i], py[i]), 1e-13, "ct vmap");
      // the runtime tier's sin is xsimd's, the loop's libm's: equal to an ulp or two
      expect_near_rel(rv[i], f(px[i], py[i]), 1e-15, "rt vmap");
    }
  });
}

// ---- integer_pow[y] ---------------------------------------------------------------------------

TEST(ElementwiseCoverage, IntegerPowObeysTheLawsInBothTiers) {
  using Op = xpr::op::integer_pow;
  static_assert(ct::arity(ct::prim_v<Op>) == Op::arity && !ct::Rules<Op>::linear);
  EXPECT_EQ(xpr::rt::find_primitive(Op::name), &xpr::rt::elementwise_p<Op>);
  mp::mp_for_each<mp::mp_list_c<int, -2, -1, 0, 1, 2, 3>>([&](auto n) {
    constexpr int y = decltype(n)::value;
    constexpr auto f = [](auto x) { return xpr::integer_pow(x, int{y}); };
    std::vector<double> xv(std::begin(xs), std::end(xs));
    Eigen::ArrayXd cv = ct::vmap(ct::grad(f))(xv);
    std::vector<double> rv = xpr::vmap(xpr::grad(f))(xpr::array(xv)).template to_vector<double>();
    for (std::size_t i = 0; i < 3; ++i) {
      const double x = xs[i], h = 1e-6;
      SCOPED_TRACE("y = " + std::to_string(y) + " at " + std::to_string(x));
      const double fd = (std::pow(x + h, y) - std::pow(x - h, y)) / (2 * h);
      expect_near_rel(ct::grad(f)(x), fd, 1e-7, "ct");
      expect_near_rel(xpr::grad(f)(x).template item<double>(), fd, 1e-7, "rt");
      expect_near_rel(cv[static_cast<Eigen::Index>(i)], ct::grad(f)(x), 1e-13, "ct vmap");
      EXPECT_EQ(rv[i], xpr::grad(f)(x).template item<double>()) << "rt vmap";
      const double t = 0.6, c = 0.8;
      expect_near_rel(std::get<0>(ct::vjp(f, x).second(c)) * t,
                      c * ct::jvp(f, std::tuple{x}, std::tuple{t}).second, 1e-14, "ct vjp");
      expect_near_rel(std::get<0>(xpr::vjp(f, x).second(c)).template item<double>() * t,
                      c * xpr::jvp(f, std::tuple{x}, std::tuple{t}).second.template item<double>(),
                      1e-14, "rt vjp");
    }
  });
}

// ---- a piecewise function, as a user writes it ------------------------------------------------

/// Pieces joined as a user writes them: x² below 1, x + log x from 1 on (value and slope
/// continuous at the seam; `maximum` keeps the unselected log finite), capped at 3, and 0 below -1.
constexpr auto piecewise = [](auto x) {
  auto inner = xpr::where(x < 1.0, x * x, x + xpr::log(xpr::maximum(x, 1.0)));
  auto capped = xpr::where(inner > 3.0, 3.0, inner);
  return xpr::where(x >= -1.0, capped, 0.0);
};

TEST(ElementwiseCoverage, PiecewiseFunctionMatchesFiniteDifferencesOffTheKinks) {
  auto on_doubles = [](double x) {
    if (x < -1.0) return 0.0;
    const double inner = x < 1.0 ? x * x : x + std::log(x);
    return inner > 3.0 ? 3.0 : inner;
  };
  // below -1, in x² (both signs), in the log piece, past the cap: away from the kinks
  const std::vector<double> pts = {-2.0, -0.5, 0.4, 1.2, 1.5, 2.5};
  std::vector<double> ct_grads, rt_grads;
  for (double x : pts) {
    SCOPED_TRACE("x = " + std::to_string(x));
    const double h = 1e-6;
    const double fd = (on_doubles(x + h) - on_doubles(x - h)) / (2 * h);
    EXPECT_EQ(piecewise(x), on_doubles(x));
    ct_grads.push_back(ct::grad(piecewise)(x));
    rt_grads.push_back(xpr::grad(piecewise)(x).item<double>());
    expect_near_rel(ct_grads.back(), fd, 1e-7, "ct");
    expect_near_rel(rt_grads.back(), fd, 1e-7, "rt");
  }
  // vmap of grad is the loop of grads, in both tiers
  Eigen::ArrayXd cv = ct::vmap(ct::grad(piecewise))(pts);
  std::vector<double> rv = xpr::vmap(xpr::grad(piecewise))(xpr::array(pts)).to_vector<double>();
  for (std::size_t i = 0; i < pts.size(); ++i) {
    expect_near_rel(cv[static_cast<Eigen::Index>(i)], ct_grads[i], 1e-13, "ct vmap");
    EXPECT_EQ(rv[i], rt_grads[i]) << "rt vmap, element " << i;
  }
}

}  // namespace test_ct_elementwise_coverage
