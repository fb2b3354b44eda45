// SPDX-License-Identifier: MIT
// Compile-time rules of integer_pow[y=n]: x ** n for an integer n known where it is written,
// evaluated by repeated multiplication (`xpr::op::integer_pow`).
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

template <>
struct Rules<op::integer_pow> : rules::not_linear<op::integer_pow> {
  static constexpr bool fold(const double* x, std::int64_t n, double& r) {
    XPR_DETAIL_FOLD(op::integer_pow::number(x[0], n), r);
  }
  // x ** 1 = x, x ** 0 = 1
  template <class T>
  static constexpr Simplified simplify(const T* x, std::int64_t n, WeakDType out) {
    if (n == 1) return rules::same(x[0], out);
    if (n == 0) return rules::constant(1, out, x[0].graph());
    return {};
  }
  // jvp: the struct's, t * (n * x ** (n - 1)) (core/ops.hpp)
  template <class T>
  static constexpr T jvp(const T* x, const T& ans, const T* t, std::int64_t n) {
    return standard_jvp<op::integer_pow>(x, ans, t, n);
  }
};

}  // namespace xpr::ct

#undef XPR_DETAIL_FOLD
