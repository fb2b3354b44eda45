// SPDX-License-Identifier: MIT
// Compile-time rules of the comparisons eq ne lt le gt ge: bool results, no derivative. Each row
// is only its constant folding; they share everything else.
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

template <>
struct Rules<op::eq> : rules::comparison<op::eq> {};
template <>
struct Rules<op::ne> : rules::comparison<op::ne> {};
template <>
struct Rules<op::lt> : rules::comparison<op::lt> {};
template <>
struct Rules<op::le> : rules::comparison<op::le> {};
template <>
struct Rules<op::gt> : rules::comparison<op::gt> {};
template <>
struct Rules<op::ge> : rules::comparison<op::ge> {};

}  // namespace xpr::ct
