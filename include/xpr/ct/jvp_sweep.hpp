// SPDX-License-Identifier: MIT
// The forward sweep of the compile-time tier's jvp: each equation's tangent from its operands'
// tangents by its primitive's jvp rule (`Rules<Op>::jvp`, ct/prims/), symbolic zeros skipped.
// ct/preaccumulate.hpp and ct/transforms.hpp build on it; this file names no primitive.
#pragma once

#include <cstddef>
#include <cstdint>

#include "xpr/ct/graph.hpp"
#include "xpr/ct/rules.hpp"

namespace xpr::ct {

namespace detail {
constexpr Tracer zero_tangent() { return Tracer{}; }

/// The tangent of equation `i` from its operands' tangents `t_of(id)`, by its jvp rule.
template <class TangentOf>
constexpr Tracer jvp_rule(Graph& g, int i, TangentOf t_of) {
  const Eqn e = g[static_cast<std::size_t>(i)];  // a copy: the rules append to g
  Tracer x[3], t[3];
  bool any = false;
  for (int k = 0; k < arity(e.prim); ++k) {
    t[k] = t_of(e.in[k]);
    x[k] = Tracer(&g, e.in[k]);
    any = any || !t[k].is_zero();
  }
  if (!any) return Tracer{};
  const Tracer ans(&g, i);
  Tracer r;
  visit_prim(e.prim, [&](auto op) {
    r = Rules<decltype(op)>::jvp(x, ans, t, static_cast<std::int64_t>(e.param));
  });
  return r;
}
}  // namespace detail

/// The forward sweep: `tangent[i]` holds the tangents of equations i < tangent.size() that have
/// one (seeds set by the caller, symbolic zeros elsewhere); fills in the rest, in SSA order.
constexpr void jvp_sweep(Graph& g, detail::Buffer<Tracer>& tangent) {
  const std::size_t n = tangent.size();
  for (std::size_t i = 0; i < n; ++i) {
    const Prim p = g[i].prim;
    if (p == Prim::arg || p == Prim::lit) continue;
    tangent[i] = detail::jvp_rule(g, static_cast<int>(i),
                                  [&](int m) { return tangent[static_cast<std::size_t>(m)]; });
  }
}

}  // namespace xpr::ct
