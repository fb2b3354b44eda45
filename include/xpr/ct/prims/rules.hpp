// SPDX-License-Identifier: MIT
// What every rule table of the compile-time tier shares: the explicit opt-outs (`not_linear`,
// `not_differentiable`, `no_simplification`) and the helpers simplifications return.
#pragma once

#include <cstdint>

#include "xpr/ct/tracer.hpp"

namespace xpr::ct::rules {

/// Opt-out of the transpose slot: the primitive is never linear in any operand.
template <class Op>
struct not_linear {
  static constexpr bool linear = false;
  template <class T>
  static constexpr void transpose(const T&, const T*, const bool*, T*,
                                  std::int64_t) {
    detail::fail("xpr::ct: Transpose rule for a primitive that is not linear; a tangent jaxpr "
                 "may only use add, sub, neg, mul, div and select_n");
  }
};

/// Opt-out of the jvp slot: the derivative is zero (comparisons, sign, stop_gradient).
struct not_differentiable {
  template <class T>
  static constexpr T jvp(const T*, const T&, const T*, std::int64_t) {
    return T{};
  }
};

/// Opt-out of the simplify slot.
struct no_simplification {
  template <class T>
  static constexpr Simplified simplify(const T*, std::int64_t, WeakDType) { return {}; }
};

/// `x`, when it already has the type `out` (a simplification must not change a type).
constexpr Simplified same(const Tracer& x, WeakDType out) {
  if (x.dtype() != out.dtype) return {};
  return {true, x};
}
/// The constant `v` of type `out`.
constexpr Simplified constant(double v, WeakDType out, Graph* g) {
  return {true, Tracer::constant(Tracer::rounded(v, out.dtype), out.dtype, out.weak, g)};
}
constexpr Graph* graph_of(const Tracer* x, int n) {
  for (int k = 0; k < n; ++k)
    if (x[k].graph()) return x[k].graph();
  return nullptr;
}

}  // namespace xpr::ct::rules
