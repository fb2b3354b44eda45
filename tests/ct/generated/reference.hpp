// SPDX-License-Identifier: MIT
// Independent references for the generated functions' gradients: forward-mode dual numbers with
// four tangents (exact up to rounding) and central finite differences, both on the same generic
// lambda the compile-time tier traces.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>

namespace xpr_test_reference {

struct Dual {
  double v = 0;
  std::array<double, 4> d{};
  Dual() = default;
  Dual(double value) : v(value) {}  // NOLINT(google-explicit-constructor): numbers mix in
  Dual(double value, std::size_t i) : v(value) { d[i] = 1; }
};
inline Dual chain(const Dual& x, double value, double slope) {
  Dual r(value);
  for (std::size_t k = 0; k < 4; ++k) r.d[k] = slope * x.d[k];
  return r;
}
inline Dual operator+(const Dual& a, const Dual& b) {
  Dual r(a.v + b.v);
  for (std::size_t k = 0; k < 4; ++k) r.d[k] = a.d[k] + b.d[k];
  return r;
}
inline Dual operator-(const Dual& a, const Dual& b) {
  Dual r(a.v - b.v);
  for (std::size_t k = 0; k < 4; ++k) r.d[k] = a.d[k] - b.d[k];
  return r;
}
inline Dual operator*(const Dual& a, const Dual& b) {
  Dual r(a.v * b.v);
  for (std::size_t k = 0; k < 4; ++k) r.d[k] = a.d[k] * b.v + a.v * b.d[k];
  return r;
}
inline Dual operator/(const Dual& a, const Dual& b) {
  return a * chain(b, 1 / b.v, -1 / (b.v * b.v));
}
inline Dual operator-(const Dual& a) { return chain(a, -a.v, -1); }
// Found by xpr::op's `using std::sin; sin(x)`, so xpr::sin(Dual) works like on numbers.
inline Dual sin(const Dual& x) { return chain(x, std::sin(x.v), std::cos(x.v)); }
inline Dual cos(const Dual& x) { return chain(x, std::cos(x.v), -std::sin(x.v)); }
inline Dual tanh(const Dual& x) {
  const double t = std::tanh(x.v);
  return chain(x, t, 1 - t * t);
}
inline Dual exp(const Dual& x) { return chain(x, std::exp(x.v), std::exp(x.v)); }
inline Dual sqrt(const Dual& x) { return chain(x, std::sqrt(x.v), 0.5 / std::sqrt(x.v)); }

/// f and its gradient at x by dual numbers.
template <class F>
Dual dual_gradient(F f, const double* x) {
  return f(Dual(x[0], 0), Dual(x[1], 1), Dual(x[2], 2), Dual(x[3], 3));
}

/// ∂f/∂x_i at x by central differences.
template <class F>
double central_difference(F f, const double* x, std::size_t i, double h = 1e-6) {
  double p[4] = {x[0], x[1], x[2], x[3]}, m[4] = {x[0], x[1], x[2], x[3]};
  p[i] += h;
  m[i] -= h;
  return (f(p[0], p[1], p[2], p[3]) - f(m[0], m[1], m[2], m[3])) / (2 * h);
}

}  // namespace xpr_test_reference
