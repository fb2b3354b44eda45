// SPDX-License-Identifier: MIT
// Compile-time rules of the unary elementwise primitives: neg sin cos tan tanh exp log log1p expm1
// sqrt rsqrt abs sign logistic. One row per primitive: its constant folding and its jvp (JAX's
// formulas, written over tracers); they share `simplify` (none, but neg(neg x) = x) and transpose
// (only neg is linear).
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
template <class Op>
struct unary : not_linear<Op>, no_simplification {};
}  // namespace rules

// neg: -(-x) = x, -(c * z) = z * -c, -where(p, a, b) = where(p, -a, -b) when both negations are
// free; jvp -t; linear: transpose -ct.
template <>
struct Rules<op::neg> : rules::no_simplification {
  static constexpr bool linear = true;
  static constexpr bool fold(const double* x, std::int64_t, double& r) { XPR_DETAIL_FOLD(-x[0], r); }
  template <class T>
  static constexpr Simplified simplify(const T* x, std::int64_t, WeakDType out) {
    T z;
    double c = 0;
    if (rules::negated(x[0], z)) return rules::same(z, out);
    // -(c * z) = z * -c: the sign joins the constant (exact), one operation fewer.
    if (rules::scaled(x[0], z, c)) return rules::same(z * -c, out);
    // Into a select whose branches negate for free (exact): derivatives of where(x >= 0, 1 - q,
    // q) then meet where(x >= 0, -d, d) and the signs cancel (select_n's own rules).
    T p, a, b, na, nb;
    if (rules::selected(x[0], p, a, b) && rules::free_negation(a, na) &&
        rules::free_negation(b, nb))
      return rules::same(xpr::where(p, nb, na), out);
    return {};
  }
  template <class T>
  static constexpr T jvp(const T*, const T&, const T* t, std::int64_t) {
    return -t[0];
  }
  template <class T>
  static constexpr void transpose(const T& ct, const T*, const bool*, T* ct_x,
                                  std::int64_t) {
    ct_x[0] = -ct;
  }
};

// sin: jvp t * cos x
template <>
struct Rules<op::sin> : rules::unary<op::sin> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(__builtin_sin(x[0]), r);
  }
  template <class T>
  static constexpr T jvp(const T* x, const T&, const T* t, std::int64_t) {
    return t[0] * xpr::cos(x[0]);
  }
};

// cos: jvp t * -sin x
template <>
struct Rules<op::cos> : rules::unary<op::cos> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(__builtin_cos(x[0]), r);
  }
  template <class T>
  static constexpr T jvp(const T* x, const T&, const T* t, std::int64_t) {
    return t[0] * -xpr::sin(x[0]);
  }
};

// tan: jvp t * (1 + ans^2)
template <>
struct Rules<op::tan> : rules::unary<op::tan> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(__builtin_tan(x[0]), r);
  }
  template <class T>
  static constexpr T jvp(const T*, const T& ans, const T* t, std::int64_t) {
    return t[0] * (1 + xpr::integer_pow(ans, 2));
  }
};

// tanh: jvp t * (1 - ans^2)
template <>
struct Rules<op::tanh> : rules::unary<op::tanh> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(__builtin_tanh(x[0]), r);
  }
  template <class T>
  static constexpr T jvp(const T*, const T& ans, const T* t, std::int64_t) {
    return t[0] * (1 - xpr::integer_pow(ans, 2));
  }
};

// exp: jvp t * ans
template <>
struct Rules<op::exp> : rules::unary<op::exp> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(__builtin_exp(x[0]), r);
  }
  template <class T>
  static constexpr T jvp(const T*, const T& ans, const T* t, std::int64_t) {
    return t[0] * ans;
  }
};

// log: jvp t / x. For a quotient x = u / v, div's jvp gives t = w / v, and t / x is w / u:
// log(u / v) = log u - log v has the derivative (tu - tv (u / v)) / u. One division instead of
// two (log(s / k)'s cotangent is ct / s, not ct / (s / k) / k), and no overflow or underflow
// in u / v can reach the derivative.
template <>
struct Rules<op::log> : rules::unary<op::log> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(__builtin_log(x[0]), r);
  }
  template <class T>
  static constexpr T jvp(const T* x, const T&, const T* t, std::int64_t) {
    T u, v, w, tv;
    if (rules::quotient(x[0], u, v) && rules::quotient(t[0], w, tv) && tv.id() == v.id())
      return w / u;
    return t[0] / x[0];
  }
};

// log1p: jvp t / (1 + x)
template <>
struct Rules<op::log1p> : rules::unary<op::log1p> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(__builtin_log1p(x[0]), r);
  }
  template <class T>
  static constexpr T jvp(const T* x, const T&, const T* t, std::int64_t) {
    return t[0] / (1 + x[0]);
  }
};

// expm1: jvp t * (ans + 1)
template <>
struct Rules<op::expm1> : rules::unary<op::expm1> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(__builtin_expm1(x[0]), r);
  }
  template <class T>
  static constexpr T jvp(const T*, const T& ans, const T* t, std::int64_t) {
    return t[0] * (ans + 1);
  }
};

// sqrt: jvp t / (2 * ans)
template <>
struct Rules<op::sqrt> : rules::unary<op::sqrt> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(__builtin_sqrt(x[0]), r);
  }
  template <class T>
  static constexpr T jvp(const T*, const T& ans, const T* t, std::int64_t) {
    return t[0] / (2 * ans);
  }
};

// rsqrt: jvp t * (-0.5 * (ans / x))
template <>
struct Rules<op::rsqrt> : rules::unary<op::rsqrt> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(1 / __builtin_sqrt(x[0]), r);
  }
  template <class T>
  static constexpr T jvp(const T* x, const T& ans, const T* t, std::int64_t) {
    return t[0] * (-0.5 * (ans / x[0]));
  }
};

// abs: jvp where(x >= 0, t, -t) (JAX's rule, the derivative from the right at 0)
template <>
struct Rules<op::abs> : rules::unary<op::abs> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(__builtin_fabs(x[0]), r);
  }
  template <class T>
  static constexpr T jvp(const T* x, const T&, const T* t, std::int64_t) {
    const T nonnegative = x[0] >= 0;  // first, as JAX binds it (C++ leaves argument order open)
    return xpr::where(nonnegative, t[0], -t[0]);
  }
};

// sign: not differentiable (zero derivative)
template <>
struct Rules<op::sign> : rules::unary<op::sign>, rules::not_differentiable {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    if (x[0] != x[0]) return false;
    r = x[0] > 0 ? 1.0 : x[0] < 0 ? -1.0 : x[0];
    return true;
  }
  using rules::not_differentiable::jvp;
};

// logistic: jvp t * (ans * (1 - ans))
template <>
struct Rules<op::logistic> : rules::unary<op::logistic> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(1 / (1 + __builtin_exp(-x[0])), r);
  }
  template <class T>
  static constexpr T jvp(const T*, const T& ans, const T* t, std::int64_t) {
    return t[0] * (ans * (1 - ans));
  }
};

}  // namespace xpr::ct

#undef XPR_DETAIL_FOLD
