// SPDX-License-Identifier: MIT
// Compile-time rules of the unary elementwise primitives: neg sin cos tan tanh exp log log1p expm1
// sqrt rsqrt abs sign logistic square exp2 cbrt erf floor ceil copy. Their jvp is the standard one,
// from the primitive's struct in core/ops.hpp; here each adds its exact constant folding (GCC's
// math builtins), and a few their simplifications (neg) and special cases (log of a quotient);
// neg's transpose is its struct's.
#pragma once

#include <cstdint>

#include "xpr/core/ops.hpp"
#include "xpr/ct/tracer.hpp"

// `XPR_DETAIL_FOLD(expr, r)`: stores `expr` in `r` and returns true when the compiler can evaluate
// it here (GCC's constant folder, which computes the math builtins exactly); otherwise returns
// false and the equation is kept. The test must see the expression itself, hence a macro.
#define XPR_DETAIL_FOLD(EXPR, R)    \
  if (__builtin_constant_p(EXPR)) { \
    (R) = (EXPR);                   \
    return true;                    \
  }                                 \
  return false

namespace xpr::ct {

namespace rules {
template <class Op>
using unary = standard<Op>;
}  // namespace rules

// neg: -(-x) = x, -(c * z) = z * -c, -where(p, a, b) = where(p, -a, -b) when both negations are
// free; linear: its transpose (-ct) is the struct's (core/ops.hpp).
template <>
struct Rules<op::neg> : rules::standard<op::neg> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(-x[0], r);
  }
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
};

// sin
template <>
struct Rules<op::sin> : rules::unary<op::sin> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(__builtin_sin(x[0]), r);
  }
};

// cos
template <>
struct Rules<op::cos> : rules::unary<op::cos> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(__builtin_cos(x[0]), r);
  }
};

// tan
template <>
struct Rules<op::tan> : rules::unary<op::tan> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(__builtin_tan(x[0]), r);
  }
};

// tanh
template <>
struct Rules<op::tanh> : rules::unary<op::tanh> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(__builtin_tanh(x[0]), r);
  }
};

// exp
template <>
struct Rules<op::exp> : rules::unary<op::exp> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(__builtin_exp(x[0]), r);
  }
};

// log: jvp t / x, except for a quotient x = u / v: div's jvp gives t = w / v, and t / x is w / u:
// log(u / v) = log u - log v has the derivative (tu - tv (u / v)) / u. One division instead of
// two (log(s / k)'s cotangent is ct / s, not ct / (s / k) / k), and no overflow or underflow
// in u / v can reach the derivative.
template <>
struct Rules<op::log> : rules::unary<op::log> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(__builtin_log(x[0]), r);
  }
  template <class T>
  static constexpr T jvp(const T* x, const T& ans, const T* t, std::int64_t) {
    T u, v, w, tv;
    if (rules::quotient(x[0], u, v) && rules::quotient(t[0], w, tv) && tv.id() == v.id())
      return w / u;
    return standard_jvp<op::log>(x, ans, t);
  }
};

// log1p
template <>
struct Rules<op::log1p> : rules::unary<op::log1p> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(__builtin_log1p(x[0]), r);
  }
};

// expm1
template <>
struct Rules<op::expm1> : rules::unary<op::expm1> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(__builtin_expm1(x[0]), r);
  }
};

// sqrt
template <>
struct Rules<op::sqrt> : rules::unary<op::sqrt> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(__builtin_sqrt(x[0]), r);
  }
};

// rsqrt
template <>
struct Rules<op::rsqrt> : rules::unary<op::rsqrt> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(1 / __builtin_sqrt(x[0]), r);
  }
};

// abs
template <>
struct Rules<op::abs> : rules::unary<op::abs> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(__builtin_fabs(x[0]), r);
  }
};

// sign (not differentiable: op::sign says so)
template <>
struct Rules<op::sign> : rules::unary<op::sign> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    if (x[0] != x[0]) return false;
    r = x[0] > 0 ? 1.0 : x[0] < 0 ? -1.0 : x[0];
    return true;
  }
};

// logistic
template <>
struct Rules<op::logistic> : rules::unary<op::logistic> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(1 / (1 + __builtin_exp(-x[0])), r);
  }
};

// square
template <>
struct Rules<op::square> : rules::unary<op::square> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(x[0] * x[0], r);
  }
};

// exp2
template <>
struct Rules<op::exp2> : rules::unary<op::exp2> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(__builtin_exp2(x[0]), r);
  }
};

// cbrt
template <>
struct Rules<op::cbrt> : rules::unary<op::cbrt> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(__builtin_cbrt(x[0]), r);
  }
};

// erf
template <>
struct Rules<op::erf> : rules::unary<op::erf> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(__builtin_erf(x[0]), r);
  }
};

// floor (not differentiable: op::floor says so)
template <>
struct Rules<op::floor> : rules::unary<op::floor> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(__builtin_floor(x[0]), r);
  }
};

// ceil (not differentiable: op::ceil says so)
template <>
struct Rules<op::ceil> : rules::unary<op::ceil> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(__builtin_ceil(x[0]), r);
  }
};

// copy: linear, its transpose (copy ct) the struct's (core/ops.hpp)
template <>
struct Rules<op::copy> : rules::unary<op::copy> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    r = x[0];
    return true;
  }
};

}  // namespace xpr::ct

#undef XPR_DETAIL_FOLD
