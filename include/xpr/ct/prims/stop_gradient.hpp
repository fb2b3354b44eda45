// SPDX-License-Identifier: MIT
// Compile-time rules of stop_gradient: the identity on values, a zero derivative.
#pragma once

#include <cstdint>

#include "xpr/core/ops.hpp"
#include "xpr/ct/tracer.hpp"

namespace xpr::ct {

template <>
struct Rules<op::stop_gradient> : rules::not_linear<op::stop_gradient>, rules::not_differentiable {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    r = x[0];
    return true;
  }
  // stop_gradient(stop_gradient x) = stop_gradient x
  template <class T>
  static constexpr Simplified simplify(const T* x, std::int64_t, WeakDType out) {
    Graph* g = x[0].graph();
    if (g && !x[0].is_constant() &&
        (*g)[static_cast<std::size_t>(x[0].id())].prim == Prim::stop_gradient)
      return rules::same(x[0], out);
    return {};
  }
};

}  // namespace xpr::ct
