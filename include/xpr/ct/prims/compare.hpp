// SPDX-License-Identifier: MIT
// Compile-time rules of the comparisons eq ne lt le gt ge (the shared list `comparison_ops`):
// bool results, no derivative; constant folding by the struct's `number`.
#pragma once

#include <cstdint>

#include "xpr/core/ops.hpp"
#include "xpr/ct/tracer.hpp"

namespace xpr::ct {

namespace rules {
template <class Op>
struct comparison : not_linear<Op>, not_differentiable, no_simplification {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    r = Op::number(x[0], x[1]) ? 1.0 : 0.0;
    return true;
  }
};
}  // namespace rules

/// Every comparison of the shared list (`comparison_ops`, core/ops.hpp).
template <class Op>
requires is_comparison_v<Op>
struct Rules<Op> : rules::comparison<Op> {
};

}  // namespace xpr::ct
