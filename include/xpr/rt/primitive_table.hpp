// SPDX-License-Identifier: MIT
// The library's primitives by name, for the jaxpr parser (`find_primitive`). The primitives are
// constant-initialized objects that do not register themselves (registering at dynamic
// initialization made every translation unit emit every primitive's rules: see
// xpr/rt/primitive.hpp), so this list names them all, and only code that looks a primitive up by
// name (parse_jaxpr) references it and pays for the rules of every primitive.
//
// A new library primitive is added to `library_primitives()` below; tests/rt/primitive_table.cpp
// checks that every primitive the parser's round-trip test prints is found.
#pragma once

#include <algorithm>
#include <array>
#include <span>
#include <string_view>
#include <vector>

#include <boost/mp11/algorithm.hpp>

#include "xpr/core/config.hpp"
#include "xpr/rt/bounded_while.hpp"
#include "xpr/rt/checkpoint.hpp"
#include "xpr/rt/cond.hpp"
#include "xpr/rt/cumulative.hpp"
#include "xpr/rt/custom_derivatives.hpp"
#include "xpr/rt/jit.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/prims/argminmax.hpp"
#include "xpr/rt/prims/binary.hpp"
#include "xpr/rt/prims/compare.hpp"
#include "xpr/rt/prims/convert.hpp"
#include "xpr/rt/prims/cumsum.hpp"
#include "xpr/rt/prims/dot_general.hpp"
#include "xpr/rt/prims/elementwise_primitive.hpp"
#include "xpr/rt/prims/gather.hpp"
#include "xpr/rt/prims/integer_pow.hpp"
#include "xpr/rt/prims/iota.hpp"
#include "xpr/rt/prims/reduce.hpp"
#include "xpr/rt/prims/rev.hpp"
#include "xpr/rt/prims/select.hpp"
#include "xpr/rt/prims/shape.hpp"
#include "xpr/rt/prims/slicing.hpp"
#include "xpr/rt/prims/stop_gradient.hpp"
#include "xpr/rt/prims/unary.hpp"
#include "xpr/rt/scan.hpp"
#include "xpr/rt/sort.hpp"
#include "xpr/rt/while_loop.hpp"

namespace xpr::rt {

/// Every primitive the library defines: the elementwise ones from the shared list (core/ops.hpp's
/// `elementwise_t`, a program's own `user_primitives` entries included), then the others.
std::span<const Primitive* const> library_primitives();

/// The primitive named `name` (as jaxprs print it), or null if there is none: a registered
/// user-defined primitive first (it shadows a library primitive of the same name), then the
/// library's.
const Primitive* find_primitive(std::string_view name);

}  // namespace xpr::rt

#if XPR_DEFINITIONS

namespace xpr::rt {

XPR_FUNC std::span<const Primitive* const> library_primitives() {
  static constexpr std::array<const Primitive*, 56> others{
      // elementwise but not in the shared list (prims/compare.hpp, integer_pow.hpp, select.hpp...)
      &eq_p, &ne_p, &lt_p, &le_p, &gt_p, &ge_p, &is_finite_p, &integer_pow_p, &round_p, &not_p,
      &and_p, &or_p, &xor_p, &select_n_p, &convert_element_type_p, &stop_gradient_p,
      // shape, slicing, indexing
      &broadcast_in_dim_p, &transpose_p, &reshape_p, &squeeze_p, &expand_dims_p, &rev_p, &iota_p,
      &slice_p, &pad_p, &dynamic_slice_p, &dynamic_update_slice_p, &concatenate_p, &gather_p,
      &scatter_p, &scatter_add_p, &scatter_mul_p, &scatter_min_p, &scatter_max_p,
      // reductions, contractions
      &reduce_sum_p, &reduce_max_p, &reduce_min_p, &reduce_prod_p, &argmax_p, &argmin_p, &cumsum_p,
      &cumprod_p, &cummax_p, &cummin_p, &cumlogsumexp_p, &dot_general_p, &sort_p,
      // higher-order
      &cond_p, &while_p, &scan_p, &checkpoint_p, &check_max_trips_p, &custom_jvp_call_p,
      &custom_lin_p, &custom_vjp_call_p, &pjit_p};
  static const std::vector<const Primitive*> all = [] {
    std::vector<const Primitive*> v;
    boost::mp11::mp_for_each<elementwise_t<>>(
        [&](auto op) { v.push_back(&elementwise_p<decltype(op)>); });
    v.insert(v.end(), others.begin(), others.end());
    return v;
  }();
  return all;
}

XPR_FUNC const Primitive* find_primitive(std::string_view name) {
  if (const Primitive* p = detail::find_registered_primitive(name)) return p;
  for (const Primitive* p : library_primitives())
    if (p->name() == name) return p;
  return nullptr;
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
