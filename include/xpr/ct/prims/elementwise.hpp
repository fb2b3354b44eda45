// SPDX-License-Identifier: MIT
// What the compile-time rules of the elementwise primitives share: `standard_jvp`, which builds a
// jvp from the per-operand rules of the primitive's struct (core/ops.hpp), and `rules::standard`,
// the rules of any entry of the shared list that has no `Rules` of its own (a program's
// primitives; the library's add constant folding and simplifications in unary.hpp, binary.hpp).
#pragma once

#include <cstdint>

#include "xpr/core/ops.hpp"
#include "xpr/ct/tracer.hpp"

namespace xpr::ct {

/// JAX's `standard_jvp`: the tangent of `ans = Op(x...)` from the tangents `t`, as the sum of the
/// struct's per-operand rules over the operands whose tangent is not a symbolic zero (the jvp
/// sweep never calls it when all are). `T{}` (zero) for a primitive that is not differentiable.
template <class Op, class T>
constexpr T standard_jvp(const T* x, const T& ans, const T* t) {
  if constexpr (!is_differentiable_v<Op>) {
    return T{};
  } else if constexpr (Op::arity == 1) {
    return Op::jvp(t[0], ans, x[0]);
  } else {
    if (t[1].is_zero()) return Op::jvp_x(t[0], ans, x[0], x[1]);
    if (t[0].is_zero()) return Op::jvp_y(t[1], ans, x[0], x[1]);
    if constexpr (requires { Op::jvp_xy(t[0], t[1], ans, x[0], x[1]); }) {
      return Op::jvp_xy(t[0], t[1], ans, x[0], x[1]);
    } else {
      const T tx = Op::jvp_x(t[0], ans, x[0], x[1]);  // x's term first, as JAX sums them
      const T ty = Op::jvp_y(t[1], ans, x[0], x[1]);
      return tx + ty;
    }
  }
}

namespace rules {
/// The rules an elementwise primitive gets from its struct alone: constant folding by
/// `Op::number` (when the compiler can evaluate it here), no simplification, not linear, and the
/// standard jvp. A `Rules<Op>` specialization derives from it and overrides what it does better.
template <class Op>
struct standard : not_linear<Op>, no_simplification {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    if constexpr (Op::arity == 1) {
      if (__builtin_constant_p(Op::number(x[0]))) {
        r = static_cast<double>(Op::number(x[0]));
        return true;
      }
    } else {
      if (__builtin_constant_p(Op::number(x[0], x[1]))) {
        r = static_cast<double>(Op::number(x[0], x[1]));
        return true;
      }
    }
    return false;
  }
  template <class T>
  static constexpr T jvp(const T* x, const T& ans, const T* t, std::int64_t) {
    return standard_jvp<Op>(x, ans, t);
  }
};
}  // namespace rules

/// Every entry of the shared list has compile-time rules: its own specialization, or these.
template <class Op>
  requires ElementwiseOp<Op>
struct Rules<Op> : rules::standard<Op> {};

}  // namespace xpr::ct
