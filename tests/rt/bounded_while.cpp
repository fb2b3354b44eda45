// Tests of include/xpr/rt/bounded_while.hpp: Newton's method for x^3 - a with
// while_loop(..., max_trips(50)): values, grad and jvp with respect to a against the closed form
// 1 / (3 a^(2/3)), vmap over values of a that need different trip counts, the clear error when the
// loop needs more trips than allowed (eagerly, under jvp, vmap and grad); the gradient equals that
// of the loop unrolled by hand; a cond inside a scan inside a while_loop under jvp and vmap, and a
// cond inside a scan under grad.
#include "xpr/rt/bounded_while.hpp"

#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/api.hpp"

namespace test_rt_bounded_while {

using xpr::Array;

double scalar(const Array& a) { return a.item<double>(); }
std::vector<double> values(const Array& a) { return a.to_vector<double>(); }

// Newton's iteration for the cube root of a, from x0 = 1 + a/3, until |x^3 - a| <= 1e-12 a.
Array cube_root(Array a, std::int64_t trips) {
  auto cond_fn = [&](const Array& x) { return xpr::abs(x * x * x - a) > 1e-12 * a; };
  auto body_fn = [&](const Array& x) { return x - (x * x * x - a) / (3.0 * x * x); };
  return xpr::while_loop(cond_fn, body_fn, 1.0 + a / 3.0, xpr::max_trips(trips));
}
Array cube_root50(Array a) { return cube_root(a, 50); }

// The number of Newton steps the loop takes for a, counted by plain C++.
int trips_needed(double a) {
  double x = 1 + a / 3;
  int n = 0;
  while (std::abs(x * x * x - a) > 1e-12 * a) {
    x = x - (x * x * x - a) / (3 * x * x);
    ++n;
  }
  return n;
}

TEST(BoundedWhile, NewtonValuesAndDerivatives) {
  for (double a : {2.0, 27.0, 1000.0}) {
    EXPECT_NEAR(scalar(cube_root50(Array(a))), std::cbrt(a), 1e-12 * std::cbrt(a)) << a;
    const double closed = 1.0 / (3.0 * std::pow(a, 2.0 / 3.0));
    EXPECT_NEAR(scalar(xpr::grad(cube_root50)(Array(a))), closed, 1e-10 * closed) << a;
    auto [y, t] = xpr::jvp(cube_root50, Array(a), Array(1.0));
    EXPECT_NEAR(scalar(t), closed, 1e-10 * closed) << a;
    // Reverse over forward and forward over reverse agree with the second derivative
    // -2 / (9 a^(5/3)).
    const double second = -2.0 / (9.0 * std::pow(a, 5.0 / 3.0));
    EXPECT_NEAR(scalar(xpr::hessian(cube_root50)(Array(a))), second, 1e-7 * std::abs(second));
  }
}

TEST(BoundedWhile, GradientEqualsTheUnrolledLoop) {
  // Unroll exactly the trips the loop takes (counted by plain C++) and differentiate that.
  const double a = 27.0;
  const int n = trips_needed(a);
  ASSERT_GT(n, 3);
  auto unrolled = [&](Array b) {
    Array x = 1.0 + b / 3.0;
    for (int i = 0; i < n; ++i) x = x - (x * x * x - b) / (3.0 * x * x);
    return x;
  };
  EXPECT_EQ(scalar(xpr::grad(cube_root50)(Array(a))), scalar(xpr::grad(unrolled)(Array(a))));
  // The tightest bound works too; one less is an error.
  EXPECT_EQ(scalar(xpr::grad([&](Array b) { return cube_root(b, n); })(Array(a))),
            scalar(xpr::grad(unrolled)(Array(a))));
  EXPECT_THROW(xpr::grad([&](Array b) { return cube_root(b, n - 1); })(Array(a)), xpr::value_error);
}

TEST(BoundedWhile, VmapWithDifferentTripCounts) {
  std::vector<double> as{0.5, 8.0, 300.0, 1e5};
  ASSERT_NE(trips_needed(0.5), trips_needed(1e5));
  std::vector<double> roots = values(xpr::vmap(cube_root50)(xpr::array(as)));
  std::vector<double> grads = values(xpr::vmap(xpr::grad(cube_root50))(xpr::array(as)));
  for (std::size_t i = 0; i < as.size(); ++i) {
    EXPECT_NEAR(roots[i], std::cbrt(as[i]), 1e-12 * std::cbrt(as[i]));
    EXPECT_EQ(roots[i], scalar(cube_root50(Array(as[i])))) << "lane " << i;
    const double closed = 1.0 / (3.0 * std::pow(as[i], 2.0 / 3.0));
    EXPECT_NEAR(grads[i], closed, 1e-10 * closed) << "lane " << i;
  }
}

TEST(BoundedWhile, TooManyTripsIsAClearError) {
  auto two = [](Array a) { return cube_root(a, 2); };
  auto expect_error = [](auto&& f) {
    try {
      f();
      ADD_FAILURE() << "expected value_error";
    } catch (const xpr::value_error& e) {
      std::string m = e.what();
      EXPECT_NE(m.find("max_trips(2)"), std::string::npos) << m;
      EXPECT_NE(m.find("not finished"), std::string::npos) << m;
    }
  };
  expect_error([&] { two(Array(27.0)); });
  expect_error([&] { xpr::grad(two)(Array(27.0)); });
  expect_error([&] { xpr::jvp(two, Array(27.0), Array(1.0)); });
  expect_error([&] { xpr::vmap(two)(xpr::array({1.0, 27.0})); });
  expect_error([&] { xpr::vmap(xpr::grad(two))(xpr::array({1.0, 27.0})); });
  // a = 1 starts at x0 = 4/3 and needs more than 2 steps as well; a loop that needs none is fine.
  auto done = [](Array a) {
    return xpr::while_loop([](const Array& x) { return x > 10.0; },
                           [](const Array& x) { return x - 1.0; }, a, xpr::max_trips(0));
  };
  EXPECT_EQ(scalar(xpr::grad(done)(Array(3.0))), 1.0);
  expect_error([&] {
    xpr::while_loop([](const Array& x) { return x > 0.0; }, [](const Array& x) { return x - 1.0; },
                    Array(5.0), xpr::max_trips(2));
  });
}

// A user's float32 Newton cube root started from a C++ number: the carry takes the body's f32, as
// the unbounded loop's does, under grad and jit too (which stage it as a scan of conds, whose
// branches must agree); a body that changes a typed leaf is an error naming that leaf.
TEST(BoundedWhile, WeakInitTakesTheBodysTypeUnderEveryTransformation) {
  auto cbrt = [](const Array& a) {
    return xpr::while_loop([&](const Array& x) { return xpr::abs(x * x * x - a) > 1e-5f * a; },
                           [&](const Array& x) { return x - (x * x * x - a) / (3.0f * x * x); },
                           1.0, xpr::max_trips(100));
  };
  const Array a = xpr::astype(Array(8.0), xpr::float32);
  const Array x = cbrt(a);
  EXPECT_EQ(x.dtype(), xpr::float32);
  EXPECT_NEAR(x.item<float>(), 2.0F, 1e-4F);
  const Array g = xpr::grad(cbrt)(a);  // d a^(1/3) / da = 1 / (3 a^(2/3)) = 1/12
  EXPECT_EQ(g.dtype(), xpr::float32);
  EXPECT_NEAR(g.item<float>(), 1.0F / 12.0F, 1e-4F);
  EXPECT_NEAR(xpr::jit(cbrt)(a).item<float>(), x.item<float>(), 1e-6F);
  // An int carry the body makes f64: x -> 1.5 x + 1 from 1 until x >= 10 (1, 2.5, 4.75, 8.125,
  // 13.1875).
  auto grow = [](const Array& lim) {
    return xpr::while_loop([&](const Array& v) { return v < lim; },
                           [](const Array& v) { return v * 1.5 + 1.0; }, 1, xpr::max_trips(50));
  };
  EXPECT_EQ(scalar(grow(Array(10.0))), 13.1875);
  EXPECT_EQ(scalar(xpr::jit(grow)(Array(10.0))), 13.1875);
  try {
    xpr::while_loop([](const Array& v) { return v < 3; },
                    [](const Array& v) { return xpr::astype(v, xpr::float64) + 1.0; },
                    xpr::astype(Array(0), xpr::int32), xpr::max_trips(5));
    ADD_FAILURE() << "expected type_error";
  } catch (const xpr::type_error& e) {
    EXPECT_NE(std::string(e.what()).find("found leaf 0 of the carry of type i32[]"),
              std::string::npos)
        << e.what();
  }
}

TEST(BoundedWhile, CondInsideScanInsideWhileLoop) {
  // while (x < 10): x = scan over (1, -1, 2) of c -> cond(c > 3, c + s x_i^2, c (1 + s) + 1), x.
  auto inner = [](Array x, Array s) {
    auto body = [&](Array c, Array xi) {
      Array n = xpr::cond(
          c > 3.0, [&](Array v) { return v + s * xi * xi; },
          [&](Array v) { return v * (1.0 + s) + 1.0; }, c);
      return std::pair{n, n};
    };
    return xpr::scan(body, x, xpr::array({1.0, -1.0, 2.0})).first;
  };
  auto f = [&](Array x0, Array s) {
    return xpr::while_loop([](const Array& x) { return x < 10.0; },
                           [&](const Array& x) { return inner(x, s); }, x0, xpr::max_trips(10));
  };
  // Plain C++ reference of the same program.
  auto ref = [](double x, double s) {
    while (x < 10) {
      double c = x;
      for (double xi : {1.0, -1.0, 2.0}) c = c > 3 ? c + s * xi * xi : c * (1 + s) + 1;
      x = c;
    }
    return x;
  };
  const double s = 1.5, eps = 1e-6;
  EXPECT_DOUBLE_EQ(scalar(f(Array(1.0), Array(s))), ref(1.0, s));
  auto [y, t] = xpr::jvp([&](Array u) { return f(Array(1.0), u); }, Array(s), Array(1.0));
  EXPECT_DOUBLE_EQ(scalar(y), ref(1.0, s));
  EXPECT_NEAR(scalar(t), (ref(1.0, s + eps) - ref(1.0, s - eps)) / (2 * eps), 1e-6);
  std::vector<double> ss{0.5, 1.5, 3.0};
  std::vector<double> ys =
      values(xpr::vmap(f, std::tuple{xpr::not_mapped, 0})(Array(1.0), xpr::array(ss)));
  for (std::size_t i = 0; i < ss.size(); ++i) EXPECT_DOUBLE_EQ(ys[i], ref(1.0, ss[i])) << i;
  // grad through the bounded loop: the same derivative as forward mode.
  double g = scalar(xpr::grad([&](Array u) { return f(Array(1.0), u); })(Array(s)));
  EXPECT_NEAR(g, scalar(t), 1e-12 * (1 + std::abs(g)));
}

TEST(BoundedWhile, CondInsideScanUnderGrad) {
  // sum_i (x_i > 0 ? x_i^2 : -3 x_i), accumulated by a scan: gradient 2 x_i or -3.
  auto f = [](Array xs) {
    auto body = [](Array c, Array x) {
      Array v = xpr::cond(
          x > 0.0, [](Array u) { return u * u; }, [](Array u) { return -3.0 * u; }, x);
      return std::pair{c + v, v};
    };
    return xpr::scan(body, 0.0, xs).first;
  };
  Array xs = xpr::array({1.5, -2.0, 0.5, -0.1});
  EXPECT_EQ(values(xpr::grad(f)(xs)), (std::vector<double>{3.0, -3.0, 1.0, -3.0}));
  EXPECT_EQ(values(xpr::jacfwd(f)(xs)), (std::vector<double>{3.0, -3.0, 1.0, -3.0}));
  // Under vmap of grad: a batched predicate inside the scan body.
  Array batch = xpr::array({{1.0, -1.0}, {-1.0, 2.0}});
  EXPECT_EQ(values(xpr::vmap(xpr::grad(f))(batch)), (std::vector<double>{2.0, -3.0, -3.0, 4.0}));
}

TEST(BoundedWhile, MakeJaxprIsAScanOfConds) {
  std::ostringstream os;
  os << xpr::make_jaxpr(cube_root50)(2.0);
  std::string t = os.str();
  EXPECT_NE(t.find("scan["), std::string::npos) << t;
  EXPECT_NE(t.find("cond["), std::string::npos) << t;
  EXPECT_NE(t.find("length=50"), std::string::npos) << t;
  EXPECT_NE(t.find("check_max_trips[max_trips=50]"), std::string::npos) << t;
  xpr::ClosedJaxpr parsed = xpr::parse_jaxpr(t);
  std::ostringstream again;
  again << parsed;
  EXPECT_EQ(again.str(), t);
  EXPECT_NEAR(scalar(xpr::eval_jaxpr(parsed, {Array(2.0)})[0]), std::cbrt(2.0), 1e-12);
}

}  // namespace test_rt_bounded_while
