// Tests of rt/prims/cumsum.hpp and jax.numpy's cumsum: values against sums done by hand along
// every axis and both ways, integers wrapping as in XLA, bools counted in int32, the jaxpr as JAX
// prints it, errors; vmap against the loop; reverse mode against the closed form (the adjoint is
// the running sum the other way) and the vjp/jvp identity; and a user's loop over a time series.
#include "xpr/rt/prims/cumsum.hpp"

#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/api.hpp"

#include "tests/prims/common.hpp"

namespace test_prims_cumsum {

using test_prims_common::expect_error;
using xpr::Array;
using xpr::DType;
using xpr::Shape;
namespace rt = xpr::rt;

std::vector<double> v(const Array& x) { return xpr::astype(x, DType::float64).to_vector<double>(); }

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
  // Bools count in int32, as xpr::sum's do.
  Array b = xpr::array({true, false, true, true});
  EXPECT_EQ(xpr::cumsum(b).dtype(), DType::int32);
  EXPECT_EQ(xpr::cumsum(b).to_vector<std::int32_t>(), (std::vector<std::int32_t>{1, 1, 2, 3}));
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
  std::normal_distribution<double> d;
  auto random = [&] {
    std::vector<double> r(12);
    for (double& e : r) e = d(g);
    return xpr::reshape(xpr::array(r), Shape{3, 4});
  };
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

}  // namespace test_prims_cumsum
