// SPDX-License-Identifier: MIT
// The transformations of the compile-time tier, as constexpr rewrites of a live jaxpr: transpose
// (the reverse sweep of a linear jaxpr), the compositions jvp, grad and jacobians are built from
// (over the forward sweep of ct/jvp_sweep.hpp, preaccumulated for reverse mode by
// ct/preaccumulate.hpp), and partial evaluation into a primal and a linear jaxpr (linearize).
// Each primitive's own rules come from `Rules<Op>` (ct/prims/); this file names no primitive.
#pragma once

#include <cstddef>
#include <cstdint>

#include "xpr/ct/graph.hpp"
#include "xpr/ct/jvp_sweep.hpp"
#include "xpr/ct/preaccumulate.hpp"
#include "xpr/ct/rules.hpp"

namespace xpr::ct {

/// Which equations depend on the given inputs: the linear part of a jvp jaxpr.
constexpr detail::Buffer<bool> linear_flags(const Graph& g, const int* linear_ins, std::size_t n) {
  detail::Buffer<bool> lin(g.size());
  for (std::size_t k = 0; k < n; ++k) lin[static_cast<std::size_t>(linear_ins[k])] = true;
  for (std::size_t i = 0; i < g.size(); ++i)
    for (int k = 0; k < arity(g[i].prim); ++k)
      if (lin[static_cast<std::size_t>(g[i].in[k])]) lin[i] = true;
  return lin;
}

/// The reverse sweep over the linear equations (`lin`, sized to the graph before the sweep):
/// `ct[i]` holds seeds on entry and, on exit, the cotangents of the linear inputs. Each linear
/// equation with a nonzero cotangent adds its transpose into its linear operands'.
constexpr void transpose_sweep(Graph& g, const detail::Buffer<bool>& lin,
                               detail::Buffer<Tracer>& ct) {
  for (std::size_t i = lin.size(); i-- > 0;) {
    if (!lin[i] || ct[i].is_zero()) continue;
    const Eqn e = g[i];
    if (e.prim == Prim::arg) continue;
    Tracer x[3], ct_x[3];
    bool linear[3] = {false, false, false};
    for (int k = 0; k < arity(e.prim); ++k) {
      x[k] = Tracer(&g, e.in[k]);
      linear[k] = lin[static_cast<std::size_t>(e.in[k])];
    }
    const Tracer ct_i = ct[i];
    visit_prim(e.prim, [&](auto op) {
      Rules<decltype(op)>::transpose(ct_i, x, linear, ct_x, static_cast<std::int64_t>(e.param));
    });
    for (int k = 0; k < arity(e.prim); ++k) {
      if (!linear[k] || ct_x[k].is_zero()) continue;
      Tracer& acc = ct[static_cast<std::size_t>(e.in[k])];
      acc = acc + ct_x[k];
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Compositions over a whole jaxpr. `which` lists input positions (flat leaves).
// ---------------------------------------------------------------------------------------------

/// jvp: ins (x...) outs (y...) become ins (x..., t_w for w in which) outs (y..., ẏ_o for the
/// first `num_tangent_outs` outputs).
constexpr void jvp_jaxpr(Jaxpr& j, const detail::Buffer<int>& which, std::size_t num_tangent_outs,
                         bool preaccumulate = false) {
  Graph& g = j.graph;
  detail::Buffer<Tracer> tangent(g.size());
  detail::Buffer<int> tangent_ins;
  for (int w : which) {
    int x = j.ins[static_cast<std::size_t>(w)];
    int t = g.new_arg(g[static_cast<std::size_t>(x)].dtype);
    tangent[static_cast<std::size_t>(x)] = Tracer(&g, t);
    tangent_ins.push_back(t);
  }
  if (preaccumulate)
    jvp_sweep_preaccumulated(g, tangent, j.outs.begin(), num_tangent_outs);
  else
    jvp_sweep(g, tangent);
  for (int t : tangent_ins) j.ins.push_back(t);
  for (std::size_t o = 0; o < num_tangent_outs; ++o) {
    int y = j.outs[o];
    j.outs.push_back(
        tangent[static_cast<std::size_t>(y)].materialize(g, g[static_cast<std::size_t>(y)].dtype));
  }
}

/// Forward-mode Jacobian: outs (y...) become (y..., J) with J[o][w] = ∂y_o/∂x_w for w in which,
/// row-major (output-major), one forward sweep per input with a literal one as its seed.
constexpr void jacfwd_jaxpr(Jaxpr& j, const detail::Buffer<int>& which) {
  Graph& g = j.graph;
  const std::size_t m = j.outs.size(), nw = which.size(), n = g.size();
  detail::Buffer<int> jac(m * nw, -1);
  for (std::size_t c = 0; c < nw; ++c) {
    detail::Buffer<Tracer> tangent(n);
    int x = j.ins[static_cast<std::size_t>(which[c])];
    tangent[static_cast<std::size_t>(x)] =
        Tracer::constant(1, g[static_cast<std::size_t>(x)].dtype, false, &g);
    jvp_sweep(g, tangent);
    for (std::size_t o = 0; o < m; ++o) {
      int y = j.outs[o];
      jac[o * nw + c] =
          tangent[static_cast<std::size_t>(y)].materialize(g, g[static_cast<std::size_t>(y)].dtype);
    }
  }
  for (int id : jac) j.outs.push_back(id);
}

/// One column of the forward-mode Jacobian: appends ∂y_o/∂x_w for the first `ny` outputs, by one
/// forward sweep seeded with a literal one at input position `w`.
constexpr void jacfwd_column(Jaxpr& j, int w, std::size_t ny) {
  Graph& g = j.graph;
  // Only the primal equations are swept, not earlier columns' tangents. They come first, and the
  // last of them is an output: after dead-code elimination nothing reads it.
  std::size_t primal = 0;
  for (std::size_t o = 0; o < ny; ++o)
    if (static_cast<std::size_t>(j.outs[o]) + 1 > primal)
      primal = static_cast<std::size_t>(j.outs[o]) + 1;
  detail::Buffer<Tracer> tangent(primal);
  const int x = j.ins[static_cast<std::size_t>(w)];
  tangent[static_cast<std::size_t>(x)] =
      Tracer::constant(1, g[static_cast<std::size_t>(x)].dtype, false, &g);
  jvp_sweep(g, tangent);
  for (std::size_t o = 0; o < ny; ++o) {
    const auto y = static_cast<std::size_t>(j.outs[o]);
    j.outs.push_back(tangent[y].materialize(g, g[y].dtype));
  }
}

/// Transpose of a jvp jaxpr whose last `nt` inputs are tangents and last `nl` outputs are
/// tangent outputs. With `seed_args`, adds one cotangent input per tangent output (vjp): ins
/// (x..., c...), outs (y..., x̄...). Otherwise seeds each tangent output with a literal one in
/// turn (grad, jacrev): ins (x...), outs (y..., x̄[o][k] row-major).
constexpr void transpose_jaxpr(Jaxpr& j, std::size_t nt, std::size_t nl, bool seed_args) {
  Graph& g = j.graph;
  const std::size_t n = g.size(), ni = j.ins.size() - nt, ny = j.outs.size() - nl;
  detail::Buffer<int> t_ins;
  for (std::size_t k = ni; k < j.ins.size(); ++k) t_ins.push_back(j.ins[k]);
  detail::Buffer<bool> lin = linear_flags(g, t_ins.begin(), nt);
  detail::Buffer<int> new_outs;
  for (std::size_t o = 0; o < ny; ++o) new_outs.push_back(j.outs[o]);
  detail::Buffer<int> new_ins;
  for (std::size_t k = 0; k < ni; ++k) new_ins.push_back(j.ins[k]);
  const std::size_t sweeps = seed_args ? 1 : nl;
  for (std::size_t s = 0; s < sweeps; ++s) {
    detail::Buffer<Tracer> ct(n);
    for (std::size_t o = 0; o < nl; ++o) {
      int y = j.outs[ny + o];
      const DType dt = g[static_cast<std::size_t>(y)].dtype;
      Tracer seed;
      if (seed_args) {
        int c = g.new_arg(dt);
        new_ins.push_back(c);
        seed = Tracer(&g, c);
      } else if (o == s) {
        seed = Tracer::constant(1, dt, false, &g);
      }
      if (!lin[static_cast<std::size_t>(y)]) continue;  // a constant tangent has no cotangent path
      Tracer& acc = ct[static_cast<std::size_t>(y)];
      acc = acc + seed;
    }
    transpose_sweep(g, lin, ct);
    for (int t : t_ins)
      new_outs.push_back(
          ct[static_cast<std::size_t>(t)].materialize(g, g[static_cast<std::size_t>(t)].dtype));
  }
  j.ins = static_cast<detail::Buffer<int>&&>(new_ins);
  j.outs = static_cast<detail::Buffer<int>&&>(new_outs);
}

// ---------------------------------------------------------------------------------------------
// Partial evaluation (linearize): a jvp jaxpr (ins x..., t... with the last nt tangents; outs
// y..., ẏ... with the last nl tangent outputs) unzipped into a primal jaxpr (ins x; outs y...,
// residuals...) and a linear jaxpr (ins residuals..., t...; outs ẏ...).
// ---------------------------------------------------------------------------------------------
namespace detail {
/// The residuals: known (non-linear, non-literal) values the linear equations read, in SSA order.
constexpr Buffer<int> residuals(const Jaxpr& j, const Buffer<bool>& lin, std::size_t nl) {
  const Graph& g = j.graph;
  Buffer<bool> live(g.size()), needed(g.size());
  for (std::size_t o = j.outs.size() - nl; o < j.outs.size(); ++o) {
    auto y = static_cast<std::size_t>(j.outs[o]);
    if (lin[y])
      live[y] = true;
    else if (g[y].prim != Prim::lit)
      needed[y] = true;
  }
  for (std::size_t i = g.size(); i-- > 0;) {
    if (!live[i]) continue;
    for (int k = 0; k < arity(g[i].prim); ++k) {
      auto a = static_cast<std::size_t>(g[i].in[k]);
      if (lin[a])
        live[a] = true;
      else if (g[a].prim != Prim::lit)
        needed[a] = true;
    }
  }
  Buffer<int> r;
  for (std::size_t i = 0; i < g.size(); ++i)
    if (needed[i]) r.push_back(static_cast<int>(i));
  return r;
}
}  // namespace detail

constexpr void partial_eval_primal(Jaxpr& j, std::size_t nt, std::size_t nl) {
  detail::Buffer<bool> lin = linear_flags(j.graph, j.ins.begin() + (j.ins.size() - nt), nt);
  detail::Buffer<int> res = detail::residuals(j, lin, nl);
  for (std::size_t k = 0; k < nt; ++k) j.ins.pop_back();
  for (std::size_t o = 0; o < nl; ++o) j.outs.pop_back();
  for (int r : res) j.outs.push_back(r);
}

constexpr Jaxpr partial_eval_linear(const Jaxpr& j, std::size_t nt, std::size_t nl) {
  const Graph& g = j.graph;
  detail::Buffer<bool> lin = linear_flags(g, j.ins.begin() + (j.ins.size() - nt), nt);
  detail::Buffer<int> res = detail::residuals(j, lin, nl);
  Jaxpr out;
  detail::Buffer<int> map(g.size(), -1);
  for (int r : res) {
    int a = out.graph.new_arg(g[static_cast<std::size_t>(r)].dtype,
                              g[static_cast<std::size_t>(r)].weak);
    out.ins.push_back(a);
    map[static_cast<std::size_t>(r)] = a;
  }
  for (std::size_t k = j.ins.size() - nt; k < j.ins.size(); ++k) {
    auto t = static_cast<std::size_t>(j.ins[k]);
    int a = out.graph.new_arg(g[t].dtype, g[t].weak);
    out.ins.push_back(a);
    map[t] = a;
  }
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (g[i].prim == Prim::arg || map[i] >= 0) continue;
    if (!lin[i] && g[i].prim != Prim::lit) continue;
    Eqn e = g[i];
    for (int k = 0; k < arity(e.prim); ++k) {
      auto a = static_cast<std::size_t>(e.in[k]);
      if (map[a] < 0)
        detail::fail("xpr::ct internal error: linear equation reads an unmapped value");
      e.in[k] = map[a];
    }
    map[i] = out.graph.emit(e);
  }
  for (std::size_t o = j.outs.size() - nl; o < j.outs.size(); ++o)
    out.outs.push_back(map[static_cast<std::size_t>(j.outs[o])]);
  return out;
}

}  // namespace xpr::ct
