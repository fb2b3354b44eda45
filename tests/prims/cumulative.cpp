// Tests of the cumulative reductions (rt/prims/cumsum.hpp, rt/cumulative.hpp) and
// associative_scan: values against running sums, products, maxima and minima done by hand along
// every axis and both ways, integers wrapping as in XLA, bools counted in int64, NaN, the jaxpr as
// JAX prints it, errors; vmap against the loop; reverse mode against closed forms (the adjoint of
// cumsum is the running sum the other way; cumprod's gradient through a zero) and the vjp/jvp
// identity; and a user's loop over a time series.
#include "xpr/rt/cumulative.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/api.hpp"

#include "tests/prims/common.hpp"

namespace test_prims_cumulative {

using test_prims_common::expect_error;
using xpr::Array;
using xpr::DType;
using xpr::Shape;
namespace rt = xpr::rt;

std::vector<double> v(const Array& x) { return xpr::astype(x, DType::float64).to_vector<double>(); }

/// A 3x4 f64 array of standard normal draws.
Array normal_3x4(std::mt19937& g) {
  std::normal_distribution<double> d;
  std::vector<double> r(12);
  for (double& e : r) e = d(g);
  return xpr::reshape(xpr::array(r), Shape{3, 4});
}

TEST(Cumsum, RunningSumsAlongEveryAxisBothWays) {
  Array m = xpr::array({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  EXPECT_EQ(v(xpr::cumsum(m)), (std::vector<double>{1, 3, 6, 10, 15, 21}));  // flattened
  EXPECT_EQ(xpr::cumsum(m).shape(), (Shape{6}));
  EXPECT_EQ(v(xpr::cumsum(m, 0)), (std::vector<double>{1, 2, 3, 5, 7, 9}));
  EXPECT_EQ(v(xpr::cumsum(m, 1)), (std::vector<double>{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(v(xpr::cumsum(m, -1)), v(xpr::cumsum(m, 1)));
  EXPECT_EQ(v(xpr::cumsum(m, 1, true)), (std::vector<double>{6, 5, 3, 15, 11, 6}));
  EXPECT_EQ(v(xpr::cumsum(m, 0, true)), (std::vector<double>{5, 7, 9, 4, 5, 6}));
  // Rank 3, the middle axis (the kernel's strided walk), against a loop.
  Array c = xpr::reshape(xpr::arange(24.0), Shape{2, 3, 4});
  const std::vector<double> cv = v(c), got = v(xpr::cumsum(c, 1)),
                            back = v(xpr::cumsum(c, 1, true));
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 4; ++k) {
      double s = 0, r = 0;
      for (int j = 0; j < 3; ++j) {
        s += cv[static_cast<std::size_t>(i * 12 + j * 4 + k)];
        r += cv[static_cast<std::size_t>(i * 12 + (2 - j) * 4 + k)];
        EXPECT_EQ(got[static_cast<std::size_t>(i * 12 + j * 4 + k)], s);
        EXPECT_EQ(back[static_cast<std::size_t>(i * 12 + (2 - j) * 4 + k)], r);
      }
    }
  // A scalar is flattened to one element, as jnp.cumsum does; an empty axis gives an empty array.
  EXPECT_EQ(xpr::cumsum(Array(4.0)).shape(), (Shape{1}));
  EXPECT_EQ(xpr::cumsum(xpr::zeros({2, 0}), 1).shape(), (Shape{2, 0}));
  // Sums start from 0, as XLA's do: a leading -0.0 becomes +0.0; NaN carries forward.
  const double first = xpr::cumsum(xpr::array({-0.0, 1.0})).to_vector<double>()[0];
  EXPECT_EQ(first, 0.0);
  EXPECT_FALSE(std::signbit(first));
  const std::vector<double> nan = v(xpr::cumsum(xpr::array({1.0, std::nan(""), 2.0})));
  EXPECT_EQ(nan[0], 1.0);
  EXPECT_TRUE(std::isnan(nan[1]) && std::isnan(nan[2]));
}

TEST(Cumsum, DtypesAsJaxNumpy) {
  // f32 sums in f32: 2^24 + 1 is not representable.
  Array f = xpr::array({16777216.0f, 1.0f, 1.0f});
  EXPECT_EQ(xpr::cumsum(f).dtype(), DType::float32);
  EXPECT_EQ(xpr::cumsum(f).to_vector<float>(),
            (std::vector<float>{16777216.0f, 16777216.0f, 16777216.0f}));
  // Integers wrap around (two's complement), as XLA's adds do.
  Array i = xpr::array({2147483647, 1, -5});
  EXPECT_EQ(xpr::cumsum(i).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{2147483647, -2147483647 - 1, 2147483643}));
  Array l = xpr::array({std::int64_t{3}, std::int64_t{-10}});
  EXPECT_EQ(xpr::cumsum(l).dtype(), DType::int64);
  EXPECT_EQ(xpr::cumsum(l).to_vector<std::int64_t>(), (std::vector<std::int64_t>{3, -7}));
  // Bools count in int64, jax.numpy's default integer with x64.
  Array b = xpr::array({true, false, true, true});
  EXPECT_EQ(xpr::cumsum(b).dtype(), DType::int64);
  EXPECT_EQ(xpr::cumsum(b).to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 1, 2, 3}));
}

TEST(Cumsum, JaxprAsJaxPrintsIt) {
  Array m = xpr::ones({2, 3});
  std::ostringstream s;
  s << xpr::make_jaxpr([](const Array& x) { return xpr::cumsum(x, -1, true); })(m);
  EXPECT_EQ(s.str(),
            "{ lambda ; a:f64[2,3]. let b:f64[2,3] = cumsum[axis=1 reverse=True] a in (b,) }");
  // axis=None: the flattened array, as jax.numpy reshapes it.
  std::ostringstream t;
  t << xpr::make_jaxpr([](const Array& x) { return xpr::cumsum(x); })(m);
  EXPECT_EQ(t.str(),
            "{ lambda ; a:f64[2,3]. let\n"
            "    b:f64[6] = reshape[dimensions=None new_sizes=(6,)] a\n"
            "    c:f64[6] = cumsum[axis=0 reverse=False] b\n"
            "  in (c,) }");
  // The text reads back (parse_jaxpr) and evaluates to the same sums.
  const rt::ClosedJaxpr j = xpr::parse_jaxpr(s.str());
  Array x = xpr::array({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  EXPECT_EQ(v(rt::eval_jaxpr(j.jaxpr, j.consts, std::vector<Array>{x})[0]),
            v(xpr::cumsum(x, 1, true)));
}

TEST(Cumsum, ErrorsSayWhatWasExpected) {
  Array m = xpr::ones({2, 3});
  expect_error<xpr::index_error>([&] { (void)xpr::cumsum(m, 2); },
                                 {"cumsum", "axis 2 is out of bounds for array of rank 2"});
  expect_error<xpr::index_error>([&] { (void)xpr::cumsum(m, -3); }, {"cumsum", "axis -3"});
  expect_error<xpr::index_error>([&] { (void)xpr::cumsum(Array(1.0), 0); }, {"cumsum", "rank 0"});
  const rt::Params p{{"axis", std::int64_t{0}}, {"reverse", false}};
  expect_error<xpr::dtype_error>(
      [&] {
        (void)rt::bind1(rt::cumsum_p, {xpr::array({true, false})}, p);
      },
      {"cumsum", "expected a number type, found bool"});
  expect_error<xpr::type_error>([&] { (void)rt::bind(rt::cumsum_p, std::vector<Array>{}, p); },
                                {"cumsum", "1 operand", "found 0"});
  expect_error<xpr::index_error>(
      [&] {
        (void)rt::bind1(rt::cumsum_p, {m}, {{"axis", std::int64_t{5}}, {"reverse", false}});
      },
      {"cumsum", "axis 5", "rank 2"});
  // Under vmap, against the per-example shape.
  expect_error<xpr::index_error>(
      [&] {
        (void)xpr::vmap([](const Array& x) {
          return rt::bind1(rt::cumsum_p, {x}, {{"axis", std::int64_t{1}}, {"reverse", false}});
        })(xpr::ones({4, 3}));
      },
      {"cumsum", "axis 1", "rank 1"});
}

TEST(Cumsum, VmapIsTheLoop) {
  Array m = xpr::reshape(xpr::arange(24.0) * 0.5 - 3.0, Shape{2, 3, 4});
  for (int in = 0; in < 3; ++in)
    for (bool reverse : {false, true}) {
      auto f = [reverse](const Array& x) { return xpr::cumsum(x, -1, reverse); };
      Array got = xpr::vmap(f, in)(m);
      const Array moved = rt::moveaxis(m, in, 0);
      std::vector<Array> rows;
      for (std::int64_t k = 0; k < moved.shape()[0]; ++k) rows.push_back(f(moved(k)));
      EXPECT_EQ(v(got), v(xpr::stack(rows))) << "in_axes " << in << " reverse " << reverse;
    }
}

// The adjoint of a running sum from the front is the running sum from the back: the gradient of
// sum(w * cumsum(x)) is cumsum(w, reverse). And <ct, J t> = <J^T ct, t> for random vectors.
TEST(Cumsum, ReverseModeIsTheRunningSumTheOtherWay) {
  Array w = xpr::array({{0.5, -1.0, 2.0, 3.0}, {1.5, 0.25, -2.0, 1.0}});
  Array x = xpr::array({{1.0, 2.0, 3.0, 4.0}, {-1.0, 0.5, 2.0, 0.0}});
  for (bool reverse : {false, true})
    for (std::int64_t a : {0, 1}) {
      auto loss = [&](const Array& y) { return xpr::sum(w * xpr::cumsum(y, a, reverse)); };
      EXPECT_EQ(v(xpr::grad(loss)(x)), v(xpr::cumsum(w, a, !reverse)))
          << "axis " << a << " reverse " << reverse;
    }
  std::mt19937 g(3);
  auto random = [&g] { return normal_3x4(g); };
  for (bool reverse : {false, true}) {
    auto f = [reverse](const Array& y) { return xpr::cumsum(y, 0, reverse) * 2.0; };
    Array t = random(), ct = random(), at = random();
    auto [y, jt] = xpr::jvp(f, at, t);
    auto [y2, pullback] = xpr::vjp(f, at);
    Array jct = std::get<0>(pullback(ct));
    EXPECT_NEAR(xpr::sum(ct * jt).item<double>(), xpr::sum(jct * t).item<double>(), 1e-12);
    (void)y;
    (void)y2;
  }
}

// As a user writes it: the position of a particle from its sampled velocities (a running sum of
// v dt), and the sensitivity of its final position to each sample, against the closed form
// (dt for every sample) and finite differences of an energy along the path.
TEST(Cumsum, PathFromVelocitiesAndItsSensitivities) {
  const double dt = 0.1;
  std::vector<double> vel;
  for (int k = 0; k < 10; ++k) vel.push_back(std::sin(0.3 * k));
  Array vs = xpr::array(vel);
  auto path = [dt](const Array& u) { return 1.0 + xpr::cumsum(u * dt); };
  const std::vector<double> p = v(path(vs));
  double s = 1.0;
  for (int k = 0; k < 10; ++k) {
    s += vel[static_cast<std::size_t>(k)] * dt;
    EXPECT_NEAR(p[static_cast<std::size_t>(k)], s, 1e-15);
  }
  auto last = [&](const Array& u) { return path(u)(9); };
  EXPECT_EQ(v(xpr::grad(last)(vs)), std::vector<double>(10, dt));
  auto energy = [&](const Array& u) { return xpr::sum(xpr::sin(path(u)) * path(u)); };
  const std::vector<double> gr = v(xpr::grad(energy)(vs));
  for (int k = 0; k < 10; ++k) {
    std::vector<double> up = vel, down = vel;
    up[static_cast<std::size_t>(k)] += 1e-6;
    down[static_cast<std::size_t>(k)] -= 1e-6;
    const double fd =
        (energy(xpr::array(up)).item<double>() - energy(xpr::array(down)).item<double>()) / 2e-6;
    EXPECT_NEAR(gr[static_cast<std::size_t>(k)], fd, 1e-7) << k;
  }
}

// cumprod, cummax, cummin: values by hand, NaN carried forward, integers wrapping, bools.
TEST(CumulativeScan, ProductsMaximaMinimaByHand) {
  Array m = xpr::array({{1.0, -2.0, 3.0, 0.5}, {4.0, 5.0, 0.0, 2.0}});
  EXPECT_EQ(v(xpr::cumprod(m, 1)), (std::vector<double>{1, -2, -6, -3, 4, 20, 0, 0}));
  EXPECT_EQ(v(xpr::cumprod(m, 1, true)), (std::vector<double>{-3, -3, 1.5, 0.5, 0, 0, 0, 2}));
  EXPECT_EQ(v(xpr::cumprod(m, 0)), (std::vector<double>{1, -2, 3, 0.5, 4, -10, 0, 1}));
  EXPECT_EQ(v(xpr::cummax(m, 1)), (std::vector<double>{1, 1, 3, 3, 4, 5, 5, 5}));
  EXPECT_EQ(v(xpr::cummax(m, 1, true)), (std::vector<double>{3, 3, 3, 0.5, 5, 5, 2, 2}));
  EXPECT_EQ(v(xpr::cummin(m, -1)), (std::vector<double>{1, -2, -2, -2, 4, 4, 0, 0}));
  EXPECT_EQ(v(xpr::cummin(m, 0, true)), (std::vector<double>{1, -2, 0, 0.5, 4, 5, 0, 2}));
  EXPECT_EQ(v(xpr::cummax(m)), (std::vector<double>{1, 1, 3, 3, 4, 5, 5, 5}));  // flattened
  const double nan = std::nan("");
  const std::vector<double> mx = v(xpr::cummax(xpr::array({1.0, nan, 5.0})));
  EXPECT_EQ(mx[0], 1.0);
  EXPECT_TRUE(std::isnan(mx[1]) && std::isnan(mx[2]));
  const std::vector<double> mn = v(xpr::cummin(xpr::array({nan, -1.0})));
  EXPECT_TRUE(std::isnan(mn[0]) && std::isnan(mn[1]));
  EXPECT_EQ(xpr::cumprod(xpr::array({65536, 65536, 3})).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{65536, 0, 0}));  // 2^32 wraps to 0
  EXPECT_EQ(xpr::cumprod(xpr::array({true, true, false})).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{1, 1, 0}));
  EXPECT_EQ(xpr::cummax(xpr::array({std::int64_t{-3}, std::int64_t{7}, std::int64_t{2}}))
                .to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{-3, 7, 7}));
  std::ostringstream s;
  s << xpr::make_jaxpr([](const Array& x) { return xpr::cummin(x, 0, true); })(m);
  EXPECT_EQ(s.str(),
            "{ lambda ; a:f64[2,4]. let b:f64[2,4] = cummin[axis=0 reverse=True] a in (b,) }");
  expect_error<xpr::dtype_error>(
      [] {
        (void)xpr::cummax(xpr::array({true, false}));
      },
      {"cummax", "expected a number type, found bool"});
  expect_error<xpr::index_error>([&] { (void)xpr::cumprod(m, 2); },
                                 {"cumprod", "axis 2 is out of bounds"});
}

// cumlogsumexp: the running log-sum-exp against a loop of logaddexp in long double, where exp
// overflows in double (values near 1000), -inf elements, both directions, f32; its gradient
// against the closed form d/dx_k sum_j w_j out_j = sum_{j >= k} w_j exp(x_k - out_j); errors.
TEST(CumulativeScan, CumlogsumexpAgainstTheRunningLogSumExp) {
  const double inf = std::numeric_limits<double>::infinity();
  auto running = [](const std::vector<double>& x, bool reverse) {
    std::vector<double> out(x.size());
    long double s = 0;
    for (std::size_t m = 0; m < x.size(); ++m) {
      const std::size_t i = reverse ? x.size() - 1 - m : m;
      const long double e = x[i];
      const long double hi = m == 0 || s < e ? e : s, lo = m == 0 ? e : s < e ? s : e;
      s = m == 0 || std::isinf(lo) ? hi : hi + std::log1p(std::exp(lo - hi));
      out[i] = static_cast<double>(s);
    }
    return out;
  };
  const std::vector<double> xs{1000.0, 999.5, -inf, 1001.0, -3.0, 1000.0};
  for (bool reverse : {false, true}) {
    const std::vector<double> got = v(xpr::cumlogsumexp(xpr::array(xs), 0, reverse));
    const std::vector<double> want = running(xs, reverse);
    for (std::size_t i = 0; i < xs.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 4e-16 * std::abs(want[i])) << i << (reverse ? " reverse" : "");
  }
  EXPECT_EQ(v(xpr::cumlogsumexp(xpr::array({-inf, -inf, 0.0}))),
            (std::vector<double>{-inf, -inf, 0.0}));
  // Along axis 1 of a matrix; f32 keeps its dtype.
  Array m = xpr::array({{0.0, 0.0, 0.0}, {1.0, 2.0, 3.0}});
  const std::vector<double> rows = v(xpr::cumlogsumexp(m, 1));
  EXPECT_NEAR(rows[2], std::log(3.0), 1e-15);
  EXPECT_NEAR(rows[5], std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)), 1e-15);
  Array f = xpr::cumlogsumexp(xpr::astype(m, xpr::float32), 1);
  EXPECT_EQ(f.dtype(), xpr::float32);
  EXPECT_NEAR(v(f)[2], std::log(3.0), 1e-6);
  // The gradient of a weighted sum, as a user's log-likelihood over a sequence.
  const std::vector<double> x0{0.5, -1.0, 2.0, 0.25};
  const std::vector<double> w{1.0, -2.0, 0.5, 3.0};
  const std::vector<double> out = running(x0, false);
  std::vector<double> want(4, 0.0);
  for (std::size_t k = 0; k < 4; ++k)
    for (std::size_t j = k; j < 4; ++j) want[k] += w[j] * std::exp(x0[k] - out[j]);
  const Array g = xpr::grad([&](const Array& u) {
    return xpr::sum(xpr::array(w) * xpr::cumlogsumexp(u));
  })(xpr::array(x0));
  for (std::size_t k = 0; k < 4; ++k) EXPECT_NEAR(v(g)[k], want[k], 1e-14) << k;
  std::ostringstream s;
  s << xpr::make_jaxpr([](const Array& x) { return xpr::cumlogsumexp(x, 0, true); })(m);
  EXPECT_EQ(s.str(),
            "{ lambda ; a:f64[2,3]. let\n    b:f64[2,3] = cumlogsumexp[axis=0 reverse=True] a\n"
            "  in (b,) }");
  expect_error<xpr::dtype_error>(
      [] {
        (void)xpr::cumlogsumexp(xpr::array({1, 2}));
      },
      {"cumlogsumexp", "expected a floating dtype, found int32"});
}

// associative_scan with any associative elementwise function, as lax.associative_scan: every
// length from 0 to 17 (odd and even halves at every depth), both directions, against the loop.
TEST(CumulativeScan, AssociativeScanIsTheRunningCombination) {
  auto add = [](const Array& a, const Array& b) { return a + b; };
  for (std::int64_t n = 0; n <= 17; ++n)
    for (bool reverse : {false, true}) {
      Array x = xpr::reshape(xpr::arange(static_cast<double>(2 * n)) * 0.5 - 1.0, Shape{2, n});
      EXPECT_EQ(v(xpr::associative_scan(add, x, reverse, 1)), v(xpr::cumsum(x, 1, reverse)))
          << n << (reverse ? " reverse" : "");
      EXPECT_EQ(v(xpr::associative_scan(xpr::maximum, x, reverse, -1)),
                v(xpr::cummax(x, 1, reverse)));
    }
  expect_error<xpr::index_error>(
      [&] { (void)xpr::associative_scan(add, xpr::ones({3}), false, 1); },
      {"associative_scan", "axis 1"});
}

// Derivatives (JAX's rule: the jvp of the associative scan): cumprod through a zero, where
// dividing by the element would fail, against the closed form; cummax picks the tangent of the
// element that holds the maximum; the vjp/jvp identity; vmap of grad against the loop.
TEST(CumulativeScan, DerivativesThroughZerosAndTheMaximum) {
  Array x = xpr::array({2.0, 0.0, 3.0, -1.0, 0.5});
  // d/dx_k sum_j prod_{i<=j} x_i = sum_{j>=k} prod_{i<=j, i!=k} x_i
  const std::vector<double> xs = v(x);
  std::vector<double> want(5, 0.0);
  for (std::size_t k = 0; k < 5; ++k)
    for (std::size_t j = k; j < 5; ++j) {
      double p = 1.0;
      for (std::size_t i = 0; i <= j; ++i)
        if (i != k) p *= xs[i];
      want[k] += p;
    }
  EXPECT_EQ(v(xpr::grad([](const Array& u) { return xpr::sum(xpr::cumprod(u)); })(x)), want);
  // Reversed: d/dx_k sum_j prod_{i>=j} x_i.
  std::vector<double> back(5, 0.0);
  for (std::size_t k = 0; k < 5; ++k)
    for (std::size_t j = 0; j <= k; ++j) {
      double p = 1.0;
      for (std::size_t i = j; i < 5; ++i)
        if (i != k) p *= xs[i];
      back[k] += p;
    }
  EXPECT_EQ(v(xpr::grad([](const Array& u) { return xpr::sum(xpr::cumprod(u, 0, true)); })(x)),
            back);
  Array w = xpr::array({1.0, 10.0, 100.0, 1000.0, 10000.0});
  Array y = xpr::array({1.0, 3.0, 2.0, 5.0, 4.0});  // maxima held by elements 0, 1, 1, 3, 3
  EXPECT_EQ(v(xpr::grad([&](const Array& u) { return xpr::sum(w * xpr::cummax(u)); })(y)),
            (std::vector<double>{1, 110, 0, 11000, 0}));
  EXPECT_EQ(v(xpr::grad([&](const Array& u) { return xpr::sum(w * xpr::cummin(-u)); })(y)),
            (std::vector<double>{-1, -110, 0, -11000, 0}));
  std::mt19937 g(9);
  auto random = [&g] { return normal_3x4(g); };
  for (const auto* p : {&rt::cumprod_p, &rt::cummax_p, &rt::cummin_p, &rt::cumlogsumexp_p}) {
    auto f = [p](const Array& u) {
      return rt::bind1(*p, {u}, {{"axis", std::int64_t{1}}, {"reverse", true}}) * 2.0;
    };
    Array t = random(), ct = random(), at = random();
    auto [y1, jt] = xpr::jvp(f, at, t);
    auto [y2, pullback] = xpr::vjp(f, at);
    Array jct = std::get<0>(pullback(ct));
    EXPECT_NEAR(xpr::sum(ct * jt).item<double>(), xpr::sum(jct * t).item<double>(), 1e-12)
        << p->name();
    EXPECT_EQ(v(y1), v(f(at))) << p->name();  // the primal of the jvp: the same values
    (void)y2;
    // vmap of grad over the rows against grad of each row.
    auto row_loss = [p](const Array& r) {
      return xpr::sum(
          xpr::sin(rt::bind1(*p, {r}, {{"axis", std::int64_t{0}}, {"reverse", false}})));
    };
    const Array batched = xpr::vmap(xpr::grad(row_loss))(at);
    for (std::int64_t k = 0; k < 3; ++k)
      EXPECT_EQ(v(batched(k)), v(xpr::grad(row_loss)(at(k)))) << p->name() << " row " << k;
  }
}

}  // namespace test_prims_cumulative
