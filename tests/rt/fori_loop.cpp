// Tests of include/xpr/rt/fori_loop.hpp: with C++ integer bounds fori_loop is a scan (make_jaxpr
// shows it) and grad works through it (against the closed form); with traced bounds it is a while
// loop (forward mode and vmap work); pytree carries; empty and reversed ranges; a Thomas solver
// written as users write it (traced indices into the carry) against the same solver by hand.
#include "xpr/rt/fori_loop.hpp"

#include <cmath>
#include <cstdint>
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
  // Static bounds whose trip count does not fit in int64 are refused, not run zero times.
  const std::int64_t lo = -5'000'000'000'000'000'000, hi = 5'000'000'000'000'000'000;
  try {
    (void)xpr::fori_loop(
        lo, hi, [](Array, Array x) { return x + 1.0; }, Array(0.0));
    ADD_FAILURE() << "no value_error";
  } catch (const xpr::value_error& e) {
    EXPECT_NE(std::string(e.what()).find("fits in int64"), std::string::npos) << e.what();
  }
}

// A body that changes the carry's shape is a type_error in fori_loop's words (init_val,
// body_fun), not in those of the (i, x) scan or (i, upper, x) while loop it builds.
TEST(ForiLoop, ACarryOfAnotherShapeIsATypeErrorNamingInitVal) {
  auto grows = [](Array, Array x) { return xpr::reshape(x, {1}); };
  auto message = [](auto&& run) {
    try {
      run();
    } catch (const xpr::type_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string fixed = message([&] { (void)xpr::fori_loop(0, 3, grows, Array(1.0)); });
  const std::string traced = message([&] {
    (void)xpr::jit([&](Array n) { return xpr::fori_loop(0, n, grows, Array(1.0)); })(Array(3));
  });
  for (const std::string& m : {fixed, traced}) {
    EXPECT_NE(m.find("fori_loop: expected body_fun to return a carry with the shapes of init_val"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("shape (1,)"), std::string::npos) << m;
  }
  // A carry whose structure is known only at run time: a std::vector that grows.
  const std::string longer = message([&] {
    (void)xpr::fori_loop(
        0, 2,
        [](Array, std::vector<Array> v) {
          v.push_back(v[0]);
          return v;
        },
        std::vector<Array>{Array(1.0)});
  });
  EXPECT_NE(longer.find("fori_loop: expected body_fun to return a carry with the structure of "
                        "init_val"),
            std::string::npos)
      << longer;
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

// The Thomas algorithm for a tridiagonal system A x = d, as users write it: two fori_loops with
// traced indices reading the previous row (`cp[i - 1]`) and writing the current one
// (`.at(i).set`). Sub-diagonal a (a[0] unused), diagonal b, super-diagonal c (c[n-1] unused).
Array thomas(const Array& a, const Array& b, const Array& c, const Array& d) {
  const std::int64_t n = d.shape()[0];
  auto forward = [&](Array i, std::pair<Array, Array> s) {
    const auto& [cp, dp] = s;
    Array m = b[i] - a[i] * cp[i - 1];
    return std::pair{cp.at(i).set(c[i] / m), dp.at(i).set((d[i] - a[i] * dp[i - 1]) / m)};
  };
  auto [cp, dp] = xpr::fori_loop(1, n, forward,
                                 std::pair{xpr::zeros_like(d).at(0).set(c[0] / b[0]),
                                           xpr::zeros_like(d).at(0).set(d[0] / b[0])});
  auto backward = [&](Array k, Array x) {
    Array i = (n - 2) - k;  // n - 2, ..., 0
    return x.at(i).set(dp[i] - cp[i] * x[i + 1]);
  };
  return xpr::fori_loop(0, n - 1, backward, xpr::zeros_like(d).at(n - 1).set(dp[n - 1]));
}

/// The same algorithm on plain doubles: the independent reference.
std::vector<double> thomas_by_hand(std::vector<double> a, std::vector<double> b,
                                   std::vector<double> c, std::vector<double> d) {
  const std::size_t n = d.size();
  c[0] /= b[0];
  d[0] /= b[0];
  for (std::size_t i = 1; i < n; ++i) {
    const double m = b[i] - a[i] * c[i - 1];
    c[i] /= m;
    d[i] = (d[i] - a[i] * d[i - 1]) / m;
  }
  for (std::size_t i = n - 1; i-- > 0;) d[i] -= c[i] * d[i + 1];
  return d;
}

TEST(ForiLoop, ThomasSolverAndItsDerivatives) {
  const std::vector<double> a = {0.0, -1.0, 0.5, -0.7, 1.2, -0.3},
                            b = {4.0, 5.0, -4.5, 6.0, 5.5, 4.2},
                            c = {1.0, -0.8, 1.1, 0.4, -1.3, 0.0},
                            d = {1.0, -2.0, 0.5, 3.0, -1.5, 2.0},
                            w = {0.3, -1.0, 2.0, 0.7, -0.4, 1.1};
  const std::size_t n = d.size();
  Array A = xpr::array(a), B = xpr::array(b), C = xpr::array(c), D = xpr::array(d),
        W = xpr::array(w);
  const std::vector<double> x = thomas_by_hand(a, b, c, d);
  const std::vector<double> got = thomas(A, B, C, D).to_vector<double>();
  for (std::size_t i = 0; i < n; ++i)
    EXPECT_NEAR(got[i], x[i], 1e-15 * (1 + std::abs(x[i]))) << "x at " << i;
  // The adjoint: y = A^-T w solves the transposed system (sub-diagonal c shifted down, super
  // a shifted up). d(w.x)/dd = y; d(w.x)/db_i = -y_i x_i (dA = e_i e_i^T, dx = -A^-1 dA x).
  std::vector<double> at(n, 0.0), ct(n, 0.0);
  for (std::size_t i = 1; i < n; ++i) at[i] = c[i - 1];
  for (std::size_t i = 0; i + 1 < n; ++i) ct[i] = a[i + 1];
  const std::vector<double> y = thomas_by_hand(at, b, ct, w);
  auto objective = [&](const Array& bb, const Array& dd) {
    return xpr::sum(W * thomas(A, bb, C, dd));
  };
  const auto [gb, gd] = xpr::grad<0, 1>(objective)(B, D);
  const std::vector<double> gbv = gb.to_vector<double>(), gdv = gd.to_vector<double>();
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_NEAR(gdv[i], y[i], 1e-14 * (1 + std::abs(y[i]))) << "d/dd at " << i;
    EXPECT_NEAR(gbv[i], -y[i] * x[i], 1e-14 * (1 + std::abs(y[i] * x[i]))) << "d/db at " << i;
  }
  // The Jacobian in d is A^-1 both ways: A J = I.
  auto solve = [&](const Array& dd) { return thomas(A, B, C, dd); };
  for (const Array& J : {xpr::jacfwd(solve)(D), xpr::jacrev(solve)(D)}) {
    const std::vector<double> j = J.to_vector<double>();
    for (std::size_t r = 0; r < n; ++r)
      for (std::size_t k = 0; k < n; ++k) {
        double ak = b[r] * j[r * n + k];
        if (r > 0) ak += a[r] * j[(r - 1) * n + k];
        if (r + 1 < n) ak += c[r] * j[(r + 1) * n + k];
        EXPECT_NEAR(ak, r == k ? 1.0 : 0.0, 1e-14) << "(A J)(" << r << ", " << k << ")";
      }
  }
  // vmap over right-hand sides equals the loop over them.
  Array rhs = xpr::stack({D, W, D * 2.0 - W});
  const std::vector<double> batched = xpr::vmap(solve)(rhs).to_vector<double>();
  for (std::size_t k = 0; k < 3; ++k) {
    const std::vector<double> one = solve(rhs[static_cast<std::int64_t>(k)]).to_vector<double>();
    for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(batched[k * n + i], one[i]) << k << ", " << i;
  }
}

}  // namespace test_rt_fori_loop
