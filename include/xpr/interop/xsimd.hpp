// SPDX-License-Identifier: MIT
// xsimd batches as scalars of the compile-time tier: a `xsimd::batch<T>` is a leaf whose
// element type T gives the dtype, so `xpr::ct::grad(f)(batch)` evaluates W lanes at once. The
// evaluator itself is generic (Op::number, broadcast from value_type, batch_bool masks); this is
// the only place batches are named.
#pragma once

#include <xsimd/xsimd.hpp>

#include "xpr/ct/trace.hpp"

namespace xpr::ct {

template <class T, class A>
struct leaf_traits<xsimd::batch<T, A>> {
  static constexpr bool is_leaf = true;
  using scalar = T;
};

}  // namespace xpr::ct
