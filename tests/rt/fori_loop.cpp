// Tests of include/xpr/rt/fori_loop.hpp: with C++ integer bounds fori_loop is a scan (make_jaxpr
// shows it) and grad works through it (against the closed form); with traced bounds it is a while
// loop (forward mode and vmap work); pytree carries; empty and reversed ranges.
#include "xpr/rt/fori_loop.hpp"

#include <cmath>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/api.hpp"

namespace test_rt_fori_loop {

using xpr::Array;

double scalar(const Array& a) { return a.item<double>(); }

// x_{i+1} = x_i * (1 + i * a) for i in [1, 4): x0 (1 + a)(1 + 2a)(1 + 3a).
Array poly(Array x0, Array a) {
  return xpr::fori_loop(
      1, 4, [&](Array i, Array x) { return x * (1.0 + i * a); }, x0);
}

TEST(ForiLoop, StaticBoundsAreAScanUnderGrad) {
  const double a = 0.5, x0 = 2.0;
  EXPECT_DOUBLE_EQ(scalar(poly(Array(x0), Array(a))), x0 * 1.5 * 2.0 * 2.5);
  // d/da = x0 [(1+2a)(1+3a) + 2(1+a)(1+3a) + 3(1+a)(1+2a)].
  const double want = x0 * (2.0 * 2.5 + 2 * 1.5 * 2.5 + 3 * 1.5 * 2.0);
  EXPECT_DOUBLE_EQ(scalar(xpr::grad<1>(poly)(Array(x0), Array(a))), want);
  EXPECT_DOUBLE_EQ(scalar(xpr::grad<0>(poly)(Array(x0), Array(a))), 1.5 * 2.0 * 2.5);
  std::ostringstream os;
  os << xpr::make_jaxpr(poly)(x0, a);
  EXPECT_NE(os.str().find("scan["), std::string::npos) << os.str();
  EXPECT_NE(os.str().find("length=3"), std::string::npos) << os.str();
  EXPECT_EQ(os.str().find("while["), std::string::npos) << os.str();
}

TEST(ForiLoop, PytreeCarryAndEmptyRange) {
  // Fibonacci pairs: (a, b) -> (b, a + b), with i unused.
  auto fib = [](int n) {
    return xpr::fori_loop(
        0, n,
        [](Array, std::pair<Array, Array> c) {
          return std::pair{c.second, c.first + c.second};
        },
        std::pair{0.0, 1.0});
  };
  EXPECT_EQ(scalar(fib(10).first), 55.0);
  EXPECT_EQ(scalar(fib(0).first), 0.0);
  EXPECT_EQ(scalar(xpr::fori_loop(
                5, 2, [](Array, Array x) { return x + 1.0; }, 1.0)),
            1.0);
}

TEST(ForiLoop, TracedBoundsAreAWhileLoop) {
  // sum of i for i in [0, n) with n traced: a while loop, under jvp and vmap.
  auto tri = [](Array n, Array x) {
    return xpr::fori_loop(
        0, n, [&](Array i, Array acc) { return acc + x * i; }, 0.0 * x);
  };
  std::ostringstream os;
  os << xpr::make_jaxpr(tri)(4, 1.0);
  EXPECT_NE(os.str().find("while["), std::string::npos) << os.str();
  EXPECT_EQ(scalar(tri(Array(4), Array(2.0))), 12.0);
  auto [y, t] = xpr::jvp([&](Array x) { return tri(Array(5), x); }, Array(1.0), Array(1.0));
  EXPECT_EQ(scalar(y), 10.0);
  EXPECT_EQ(scalar(t), 10.0);
  std::vector<double> got =
      xpr::vmap(tri, std::tuple{0, xpr::not_mapped})(xpr::array({1, 3, 5}), Array(1.0))
          .to_vector<double>();
  EXPECT_EQ(got, (std::vector<double>{0.0, 3.0, 10.0}));
  // A concrete Array bound is static: a scan, so grad works; a traced one (under vmap) is a while
  // loop, whose reverse mode is the while loop's error.
  EXPECT_EQ(scalar(xpr::grad([&](Array x) { return tri(Array(5), x); })(Array(1.0))), 10.0);
  auto grad_per_n = [&](Array n) {
    return xpr::grad([&](Array x) { return tri(n, x); })(Array(1.0));
  };
  EXPECT_THROW(xpr::vmap(grad_per_n)(xpr::array({1, 3})), xpr::type_error);
}

}  // namespace test_rt_fori_loop
