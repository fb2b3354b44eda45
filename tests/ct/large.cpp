// A generated function of 1000 primitive applications (a random DAG with heavy sharing, from
// benchmarks/compile_time/generate.py) and its gradient through the compile-time tier, checked
// against forward-mode differentiation by dual numbers, on the same generic lambda. It compiles
// with the default -fconstexpr-* limits, as every user's code must.
#include <array>
#include <cmath>
#include <tuple>

#include <gtest/gtest.h>

#include "xpr/ct/ct.hpp"

#include "tests/ct/generated/dag1000.hpp"

namespace {

namespace ct = xpr::ct;

// Forward mode with four tangents at once: the reference gradient.
struct Dual {
  double v = 0;
  std::array<double, 4> d{};
  Dual() = default;
  Dual(double value) : v(value) {}  // NOLINT: numbers mix in
  Dual(double value, int i) : v(value) { d[static_cast<std::size_t>(i)] = 1; }
};
Dual chain(const Dual& x, double value, double slope) {
  Dual r(value);
  for (int k = 0; k < 4; ++k) r.d[k] = slope * x.d[k];
  return r;
}
Dual operator+(const Dual& a, const Dual& b) {
  Dual r(a.v + b.v);
  for (int k = 0; k < 4; ++k) r.d[k] = a.d[k] + b.d[k];
  return r;
}
Dual operator-(const Dual& a, const Dual& b) {
  Dual r(a.v - b.v);
  for (int k = 0; k < 4; ++k) r.d[k] = a.d[k] - b.d[k];
  return r;
}
Dual operator*(const Dual& a, const Dual& b) {
  Dual r(a.v * b.v);
  for (int k = 0; k < 4; ++k) r.d[k] = a.d[k] * b.v + a.v * b.d[k];
  return r;
}
Dual operator/(const Dual& a, const Dual& b) { return a * chain(b, 1 / b.v, -1 / (b.v * b.v)); }
Dual operator-(const Dual& a) { return chain(a, -a.v, -1); }
// Found by xpr::op's `using std::sin; sin(x)`, so xpr::sin(Dual) works like on numbers.
Dual sin(const Dual& x) { return chain(x, std::sin(x.v), std::cos(x.v)); }
Dual cos(const Dual& x) { return chain(x, std::cos(x.v), -std::sin(x.v)); }
Dual tanh(const Dual& x) {
  double t = std::tanh(x.v);
  return chain(x, t, 1 - t * t);
}
Dual exp(const Dual& x) { return chain(x, std::exp(x.v), std::exp(x.v)); }
Dual sqrt(const Dual& x) { return chain(x, std::sqrt(x.v), 0.5 / std::sqrt(x.v)); }

TEST(CtLarge, GradientOfAThousandPrimitives) {
  const double x[4] = {0.3, -0.7, 1.1, 0.45};
  auto [v, g] = ct::value_and_grad<0, 1, 2, 3>(dag1000)(x[0], x[1], x[2], x[3]);
  const Dual ref = dag1000(Dual(x[0], 0), Dual(x[1], 1), Dual(x[2], 2), Dual(x[3], 3));
  const double got[4] = {std::get<0>(g), std::get<1>(g), std::get<2>(g), std::get<3>(g)};
  EXPECT_NEAR(v, ref.v, 1e-12 * (1 + std::abs(ref.v)));
  for (int k = 0; k < 4; ++k) {
    EXPECT_NE(ref.d[k], 0.0);
    EXPECT_NEAR(got[k], ref.d[k], 1e-10 * (1 + std::abs(ref.d[k]))) << k;
  }
  // the program is big enough to be evaluated by out-of-line chunks
  using G = decltype(ct::value_and_grad<0, 1, 2, 3>(dag1000));
  static_assert(ct::compiled_t<G, double, double, double, double>::num_eqns > 1500);
}

}  // namespace
