// SPDX-License-Identifier: MIT
// Compile-time rules of the binary arithmetic primitives: add sub mul div max min pow. Each block
// holds the primitive's constant folding, its simplifications (x+0, x*1, 0*x, ...), its jvp
// (JAX's formulas, written over tracers) and, for the linear ones, its transpose.
#pragma once

#include <cstdint>

#include "xpr/core/ops.hpp"
#include "xpr/ct/tracer.hpp"

// `XPR_DETAIL_FOLD(expr, r)`: stores `expr` in `r` and returns true when the compiler can evaluate
// it here (GCC's constant folder, which computes the math builtins exactly); otherwise returns
// false and the equation is kept. The test must see the expression itself, hence a macro.
#define XPR_DETAIL_FOLD(EXPR, R) \
  if (__builtin_constant_p(EXPR)) { \
    (R) = (EXPR);                 \
    return true;                  \
  }                               \
  return false

namespace xpr::ct {

namespace rules {
/// The operand of `x` when `x` is `neg y`, else nothing (a constant or another primitive).
template <class T>
constexpr bool negated(const T& x, T& y) {
  Graph* g = x.graph();
  if (!g || x.is_constant()) return false;
  const Eqn& e = (*g)[static_cast<std::size_t>(x.id())];
  if (e.prim != Prim::neg) return false;
  y = T(g, e.in[0]);
  return true;
}
}  // namespace rules

// add: x + 0 = 0 + x = x, x + -y = x - y, -x + y = y - x; jvp ta + tb; transpose ct, ct.
template <>
struct Rules<op::add> {
  static constexpr bool linear = true;
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(x[0] + x[1], r);
  }
  template <class T>
  static constexpr Simplified simplify(const T* x, std::int64_t, WeakDType out) {
    if (x[1].is_zero()) return rules::same(x[0], out);
    if (x[0].is_zero()) return rules::same(x[1], out);
    T y;
    if (rules::negated(x[1], y)) return rules::same(x[0] - y, out);
    if (rules::negated(x[0], y)) return rules::same(x[1] - y, out);
    return {};
  }
  template <class T>
  static constexpr T jvp(const T*, const T&, const T* t, std::int64_t) {
    return t[0] + t[1];
  }
  template <class T>
  static constexpr void transpose(const T& ct, const T*, const bool* linear, T* ct_x,
                                  std::int64_t) {
    if (linear[0]) ct_x[0] = ct;
    if (linear[1]) ct_x[1] = ct;
  }
};

// sub: x - 0 = x, 0 - x = -x, x - -y = x + y; jvp ta - tb; transpose ct, -ct.
template <>
struct Rules<op::sub> {
  static constexpr bool linear = true;
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(x[0] - x[1], r);
  }
  template <class T>
  static constexpr Simplified simplify(const T* x, std::int64_t, WeakDType out) {
    if (x[1].is_zero()) return rules::same(x[0], out);
    if (x[0].is_zero()) return rules::same(-x[1], out);
    T y;
    if (rules::negated(x[1], y)) return rules::same(x[0] + y, out);
    return {};
  }
  template <class T>
  static constexpr T jvp(const T*, const T&, const T* t, std::int64_t) {
    return t[0] - t[1];
  }
  template <class T>
  static constexpr void transpose(const T& ct, const T*, const bool* linear, T* ct_x,
                                  std::int64_t) {
    if (linear[0]) ct_x[0] = ct;
    if (linear[1]) ct_x[1] = -ct;
  }
};

// mul: x * 1 = x, x * -1 = -x, x * 0 = 0; jvp ta * y + x * tb; transpose ct * y (or x * ct).
template <>
struct Rules<op::mul> {
  static constexpr bool linear = true;
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(x[0] * x[1], r);
  }
  template <class T>
  static constexpr Simplified simplify(const T* x, std::int64_t, WeakDType out) {
    for (int k = 0; k < 2; ++k) {
      const T& c = x[k];
      const T& y = x[1 - k];
      if (!c.is_constant()) continue;
      if (c.value() == 1) return rules::same(y, out);
      if (c.value() == -1) return rules::same(-y, out);
      if (c.value() == 0) return rules::constant(0, out, y.graph());
    }
    return {};
  }
  template <class T>
  static constexpr T jvp(const T* x, const T&, const T* t, std::int64_t) {
    if (t[1].is_zero()) return t[0] * x[1];
    if (t[0].is_zero()) return x[0] * t[1];
    return t[0] * x[1] + x[0] * t[1];
  }
  template <class T>
  static constexpr void transpose(const T& ct, const T* x, const bool* linear,
                                  T* ct_x, std::int64_t) {
    if (linear[0] && linear[1]) detail::fail("xpr::ct: mul of two tangents is not linear");
    if (linear[0]) ct_x[0] = ct * x[1];
    if (linear[1]) ct_x[1] = x[0] * ct;
  }
};

// div: x / 1 = x, x / -1 = -x, 0 / y = 0; jvp ta / y - tb * (ans / y); transpose ct / y.
template <>
struct Rules<op::div> {
  static constexpr bool linear = true;
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(x[0] / x[1], r);
  }
  template <class T>
  static constexpr Simplified simplify(const T* x, std::int64_t, WeakDType out) {
    if (x[1].is_one()) return rules::same(x[0], out);
    if (x[1].is_constant() && x[1].value() == -1) return rules::same(-x[0], out);
    if (x[0].is_zero()) return rules::constant(0, out, x[1].graph());
    return {};
  }
  template <class T>
  static constexpr T jvp(const T* x, const T& ans, const T* t, std::int64_t) {
    if (t[1].is_zero()) return t[0] / x[1];
    T rhs = t[1] * (ans / x[1]);
    return t[0].is_zero() ? -rhs : t[0] / x[1] - rhs;
  }
  template <class T>
  static constexpr void transpose(const T& ct, const T* x, const bool* linear,
                                  T* ct_x, std::int64_t) {
    if (linear[1]) detail::fail("xpr::ct: div is not linear in its denominator");
    ct_x[0] = ct / x[1];
  }
};

namespace rules {
// max / min: x op x = x. jvp (JAX's balanced rule): each tangent weighted by
// where(x == ans, 1, 0) / where(other == ans, 2, 1), so ties split the derivative evenly.
template <class Op>
struct extremum : not_linear<Op> {
  template <class T>
  static constexpr Simplified simplify(const T* x, std::int64_t, WeakDType out) {
    if (!x[0].is_constant() && x[0].id() == x[1].id()) return same(x[0], out);
    return {};
  }
  template <class T>
  static constexpr T weight(const T& x, const T& ans, const T& other) {
    return xpr::where(x == ans, 1, 0) / xpr::where(other == ans, 2, 1);
  }
  template <class T>
  static constexpr T jvp(const T* x, const T& ans, const T* t, std::int64_t) {
    T r;
    if (!t[0].is_zero()) r = t[0] * weight(x[0], ans, x[1]);
    if (!t[1].is_zero()) r = r + t[1] * weight(x[1], ans, x[0]);
    return r;
  }
};
}  // namespace rules

template <>
struct Rules<op::max> : rules::extremum<op::max> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    if (x[0] != x[0] || x[1] != x[1]) return false;
    r = x[0] < x[1] ? x[1] : x[0];
    return true;
  }
};

template <>
struct Rules<op::min> : rules::extremum<op::min> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    if (x[0] != x[0] || x[1] != x[1]) return false;
    r = x[1] < x[0] ? x[1] : x[0];
    return true;
  }
};

// pow: x ** 1 = x; jvp tx * (y * x ** (y - 1)) + ty * (log(where(x == 0, 1, x)) * ans).
template <>
struct Rules<op::pow> : rules::not_linear<op::pow> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(__builtin_pow(x[0], x[1]), r);
  }
  template <class T>
  static constexpr Simplified simplify(const T* x, std::int64_t, WeakDType out) {
    if (x[1].is_one()) return rules::same(x[0], out);
    return {};
  }
  template <class T>
  static constexpr T jvp(const T* x, const T& ans, const T* t, std::int64_t) {
    T r;
    if (!t[0].is_zero()) r = t[0] * (x[1] * xpr::pow(x[0], x[1] - 1));
    if (!t[1].is_zero()) r = r + t[1] * (xpr::log(xpr::where(x[0] == 0, 1, x[0])) * ans);
    return r;
  }
};

}  // namespace xpr::ct

#undef XPR_DETAIL_FOLD
