// SPDX-License-Identifier: MIT
// Compile-time rules of select_n(pred, on_false, on_true), which `xpr::where(c, a, b)` records as
// `select_n c b a`. Linear in its two branches.
#pragma once

#include <bit>
#include <cstdint>

#include "xpr/core/ops.hpp"
#include "xpr/ct/tracer.hpp"

namespace xpr::ct {

template <>
struct Rules<op::select> {
  static constexpr bool linear = true;
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    r = x[0] != 0 ? x[2] : x[1];
    return true;
  }
  // A known predicate picks its branch; equal branches need no predicate; a branch that is
  // itself a select on the same predicate is only ever read on one side:
  // select_n(p, select_n(p, a, b), c) = select_n(p, a, c), and likewise on true.
  template <class T>
  static constexpr Simplified simplify(const T* x, std::int64_t, WeakDType out) {
    if (x[0].is_constant()) return rules::same(x[0].value() != 0 ? x[2] : x[1], out);
    // Constants are the same by their bits: 0.0 == -0.0, but y / where(p, 0.0, -0.0) is +-inf.
    bool same_branches = x[1].is_constant()
                             ? x[2].is_constant() && std::bit_cast<std::uint64_t>(x[1].value()) ==
                                                         std::bit_cast<std::uint64_t>(x[2].value())
                             : !x[2].is_constant() && x[1].id() == x[2].id();
    if (same_branches) return rules::same(x[1], out);
    T p, f, t;
    if (rules::selected(x[1], p, f, t) && p.id() == x[0].id())
      return rules::same(xpr::where(x[0], x[2], f), out);
    if (rules::selected(x[2], p, f, t) && p.id() == x[0].id())
      return rules::same(xpr::where(x[0], t, x[1]), out);
    return {};
  }
  // jvp: select_n(p, t_false, t_true)
  template <class T>
  static constexpr T jvp(const T* x, const T&, const T* t, std::int64_t) {
    return xpr::where(x[0], t[2], t[1]);
  }
  // transpose: on_false gets where(p, 0, ct), on_true where(p, ct, 0).
  template <class T>
  static constexpr void transpose(const T& ct, const T* x, const bool* linear, T* ct_x,
                                  std::int64_t) {
    if (linear[0]) detail::fail("xpr::ct: select_n is not linear in its predicate");
    if (linear[1]) ct_x[1] = xpr::where(x[0], 0, ct);
    if (linear[2]) ct_x[2] = xpr::where(x[0], ct, 0);
  }
};

}  // namespace xpr::ct
