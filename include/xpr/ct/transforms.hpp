// SPDX-License-Identifier: MIT
// The transformations of the compile-time tier, as constexpr rewrites of a live jaxpr: jvp (the
// forward sweep), partial evaluation into a primal and a linear jaxpr (linearize), transpose (the
// reverse sweep of a linear jaxpr), and the compositions grad and jacobians are built from. Each
// primitive's own rules come from `Rules<Op>` (ct/prims/); this file names no primitive.
#pragma once

#include <cstddef>
#include <cstdint>

#include "xpr/ct/graph.hpp"
#include "xpr/ct/tracer.hpp"

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

// ---------------------------------------------------------------------------------------------
// Preaccumulation (for reverse mode). Transposing a jvp pays for each operation twice, its local
// partial and that partial's product with a cotangent that is not known until run time. Where a
// piece of the program is a function of one value alone (a single-entry single-exit region: a
// Horner polynomial of t, the whole normal CDF of d1), its derivative costs less computed forwards
// from a literal one at its entry: the first partials are constants that fold, the next ones are
// values the primal already holds, and the sign flips of `abs` and `where` meet and cancel. The
// region's tangent is then one product, t_exit = t_entry * D, and reverse mode pays one product
// for it, ct_entry += ct_exit * D. (Statement-level preaccumulation, as in ADIFOR and Tapenade;
// here over any region, nested.)
// ---------------------------------------------------------------------------------------------
namespace detail {

/// The dominator tree of the active equations of a primal graph (those of a floating type that
/// depend on a seeded input), with each one's number of active users and its last one. `v`
/// dominates `e` when every path from the seeds to `e` passes through `v`; the region from `v`
/// to `e` is what lies between. One pass in SSA order (the intersection walk of Cooper, Harvey
/// and Kennedy, which needs no iteration on a DAG); the tree is stored as parent + 1, 0 the
/// virtual root before the seeds.
struct Dominators {
  Buffer<bool> active, output;
  Buffer<bool> join;  // reads two different active values: where forward and reverse differ
  Buffer<bool> seed;
  Buffer<int> idom, depth, num_users, last_user;

  constexpr Dominators(const Graph& g, const Buffer<Tracer>& seeds, const int* outs,
                       std::size_t num_outs)
      : active(seeds.size()),
        output(seeds.size()),
        join(seeds.size()),
        seed(seeds.size()),
        idom(seeds.size()),
        depth(seeds.size()),
        num_users(seeds.size()),
        last_user(seeds.size()) {
    const std::size_t n = seeds.size();
    for (std::size_t i = 0; i < n; ++i) {
      if (!seeds[i].is_zero()) {
        active[i] = true;
        seed[i] = true;
        depth[i] = 1;
        continue;
      }
      const Eqn& e = g[i];
      if (e.prim == Prim::arg || e.prim == Prim::lit || !is_floating(e.dtype)) continue;
      int up = -1;
      for (int k = 0; k < arity(e.prim); ++k) {
        const auto m = static_cast<std::size_t>(e.in[k]);
        if (!active[m]) continue;
        ++num_users[m];  // an equation reading a value twice counts twice
        last_user[m] = static_cast<int>(i);
        if (up >= 0 && e.in[k] != e.in[0]) join[i] = true;
        up = up < 0 ? e.in[k] + 1 : meet(up, e.in[k] + 1);
      }
      if (up < 0) continue;
      active[i] = true;
      idom[i] = up;
      depth[i] = (up ? depth[static_cast<std::size_t>(up - 1)] : 0) + 1;
    }
    for (std::size_t o = 0; o < num_outs; ++o)
      if (static_cast<std::size_t>(outs[o]) < n) output[static_cast<std::size_t>(outs[o])] = true;
  }

  /// The nearest common dominator of `a` and `b` (parent + 1 encoding), or the root when the
  /// walk would be long. Cutting it short only claims less (the root dominates everything), so
  /// the tree holds true dominators, just fewer.
  constexpr int meet(int a, int b) const {
    for (int steps = 0; a != b; ++steps) {
      if (a == 0 || b == 0 || steps == 32) return 0;
      const int da = depth[static_cast<std::size_t>(a - 1)],
                db = depth[static_cast<std::size_t>(b - 1)];
      if (da >= db) a = idom[static_cast<std::size_t>(a - 1)];
      if (db >= da) b = idom[static_cast<std::size_t>(b - 1)];
    }
    return a;
  }

  /// The immediate dominator of active `i`, or -1 (the root).
  constexpr int dominator(int i) const { return idom[static_cast<std::size_t>(i)] - 1; }
  /// Whether equation `e` reads an active value other than `v`: then the region from `v` to `e`
  /// holds more than `e`'s own equation, and preaccumulating it can pay.
  constexpr bool reaches_past(const Graph& g, int e, int v) const {
    const Eqn& q = g[static_cast<std::size_t>(e)];
    for (int k = 0; k < arity(q.prim); ++k)
      if (q.in[k] != v && active[static_cast<std::size_t>(q.in[k])]) return true;
    return false;
  }
};

/// Scratch space of the preaccumulating sweep, sized to the primal graph once: nested regions
/// reuse it (stamps instead of clearing, one list of needed equations used as a stack), so the
/// cost of a region is its own size, not its span in the graph.
struct RegionScratch {
  Buffer<int> mark;          // the exploration that last reached the equation
  Buffer<int> inside;        // how many of its users that exploration found inside the region
  Buffer<int> stamp;         // region_derivative: the call that needs the equation
  Buffer<int> via;           // the entry + 1 of the nested region an equation closes
  Buffer<Tracer> lt;         // local tangents (derivatives with respect to the region's entry)
  Buffer<int> needed;        // the needed equations of the calls in progress, one after another
  Buffer<int> stack, added;  // grow_closed's
  Buffer<int> work;          // region_derivative's search (grow_closed runs inside it)
  Buffer<int> region;        // farthest_entry's closed region so far
  Buffer<bool> chain;        // inside a closed region without a join: no region of its own pays
  int explorations = 0, calls = 0;
  bool join = false;  // whether grow_closed's last step added a join
  int budget = 0;     // equations the explorations may still visit, over the whole sweep
  constexpr explicit RegionScratch(std::size_t n)
      : mark(n),
        inside(n),
        stamp(n),
        via(n),
        lt(n),
        chain(n),
        budget(2 * static_cast<int>(n) + 1024) {}
};

/// Grows the region that ends at `e` from entry `from` (or, first, from `e` itself) to entry
/// `v`, and tells whether the grown region is closed: nothing inside but `e` is read from
/// outside or is an output (the entry may have other users). Each edge the search follows is a
/// user inside the region, counted on its operand (the entry's too, for when it moves inside);
/// a node is closed when all its users are counted. A node with a user after `e` closes
/// nothing, so most failures are found on the first node; `local` and the sweep's budget bound
/// the search (failing then is safe: a smaller region).
constexpr bool grow_closed(const Graph& g, const Dominators& d, RegionScratch& sc, int v, int e,
                           int from, int mark, int& local) {
  sc.stack.clear();
  sc.added.clear();
  sc.join = false;
  if (from != e) sc.added.push_back(from);  // the last entry moves inside
  sc.stack.push_back(from);
  while (!sc.stack.empty()) {
    const auto m = static_cast<std::size_t>(sc.stack.back());
    sc.stack.pop_back();
    const Eqn& q = g[m];
    for (int k = 0; k < arity(q.prim); ++k) {
      const int a = q.in[k];
      const auto ua = static_cast<std::size_t>(a);
      if (!d.active[ua]) continue;
      if (sc.mark[ua] != mark) {
        sc.mark[ua] = mark;
        sc.inside[ua] = 0;
        if (a != v) {  // the entry stops the search, and may be read outside
          if (--sc.budget < 0 || --local < 0 || d.output[ua] || d.last_user[ua] > e) return false;
          sc.added.push_back(a);
          sc.stack.push_back(a);
        }
      }
      ++sc.inside[ua];
    }
  }
  for (int m : sc.added) {
    const auto um = static_cast<std::size_t>(m);
    if (d.output[um] || sc.inside[um] != d.num_users[um]) return false;
    sc.join = sc.join || d.join[um];
  }
  return true;
}

/// A new exploration of the region ending at `e`: its mark, set on `e`.
constexpr int start_exploration(RegionScratch& sc, int e) {
  const int mark = ++sc.explorations;
  sc.mark[static_cast<std::size_t>(e)] = mark;
  sc.inside[static_cast<std::size_t>(e)] = 0;
  return mark;
}

/// The farthest entry of a closed region that ends at `e` and holds a join, or -1. Walking up
/// `e`'s dominators a region only grows, and once open it stays open (a node's user outside
/// stays outside), so each step explores only what the last one added. Without a join a region
/// is a chain of one-operand equations, which costs the same either way; nothing inside it has
/// a region with a join either (its regions lie inside this one), so none is searched again.
/// Nor is an input an entry: that would be forward mode for the input, whose cotangent reverse
/// mode sums over its uses, where constant partials meet and fold (2x + 3x + x: 6, not
/// ((t + 2) + 3) + 1).
constexpr int farthest_entry(const Graph& g, const Dominators& d, RegionScratch& sc, int e) {
  const int mark = start_exploration(sc, e);
  sc.region.clear();
  int local = 64, entry = -1, from = e;
  bool join = d.join[static_cast<std::size_t>(e)];
  for (int v = d.dominator(e); v >= 0 && !d.seed[static_cast<std::size_t>(v)];
       from = v, v = d.dominator(v)) {
    if (!grow_closed(g, d, sc, v, e, from, mark, local)) break;
    entry = v;
    join = join || sc.join;
    for (int m : sc.added) sc.region.push_back(m);
  }
  if (join) return entry;
  for (int m : sc.region) sc.chain[static_cast<std::size_t>(m)] = true;
  return -1;
}

/// Whether the region from `v` to `e` is closed.
constexpr bool closed(const Graph& g, const Dominators& d, RegionScratch& sc, int v, int e) {
  int local = 64;
  return grow_closed(g, d, sc, v, e, e, start_exploration(sc, e), local);
}

/// `t * d`, or `t / y` when `d` is `1 / y`: one division where the product would cost a division
/// and a multiplication.
constexpr Tracer times_derivative(const Tracer& t, const Tracer& d) {
  Tracer u, y;
  if (rules::quotient(d, u, y) && u.is_one()) return t / y;
  return t * d;
}

/// Programs of more equations are swept by the jvp rules as they stand.
inline constexpr std::size_t max_preaccumulated_size = 2048;

/// Regions nest at most this deep; deeper ones are swept by the jvp rules as they stand.
inline constexpr int max_region_nesting = 8;

/// ∂e/∂s over the closed region from `s` to `e` (`s` dominates `e`),
/// by a forward sweep seeded with a literal one at `s` over the equations `e` needs. An equation
/// whose own immediate dominator bounds a closed region inside this one is reached through that
/// region's derivative instead, so that a polynomial in t = f(s) is differentiated in t, where its
/// partials fold, and then multiplied by dt/ds once.
constexpr Tracer region_derivative(Graph& g, const Dominators& d, RegionScratch& sc, int s, int e,
                                   int nesting) {
  const int call = ++sc.calls;
  const std::size_t begin = sc.needed.size();
  auto need = [&](int m) {
    const auto um = static_cast<std::size_t>(m);
    if (sc.stamp[um] == call) return;
    sc.stamp[um] = call;
    sc.needed.push_back(m);
    sc.work.push_back(m);
  };
  sc.work.clear();
  need(e);
  while (!sc.work.empty()) {
    const int i = sc.work.back();
    sc.work.pop_back();
    if (i == s) continue;
    const auto ui = static_cast<std::size_t>(i);
    const int w = d.dominator(i);
    if (nesting < max_region_nesting && w > s && d.reaches_past(g, i, w) &&
        closed(g, d, sc, w, i)) {
      sc.via[ui] = w + 1;
      need(w);
      continue;
    }
    sc.via[ui] = 0;
    const Eqn& q = g[ui];
    for (int k = 0; k < arity(q.prim); ++k)
      if (d.active[static_cast<std::size_t>(q.in[k])]) need(q.in[k]);
  }
  // SSA order (the needed equations were found depth-first); short lists, insertion sort.
  const std::size_t end = sc.needed.size();
  for (std::size_t a = begin + 1; a < end; ++a)
    for (std::size_t b = a; b > begin && sc.needed[b - 1] > sc.needed[b]; --b) {
      const int tmp = sc.needed[b];
      sc.needed[b] = sc.needed[b - 1];
      sc.needed[b - 1] = tmp;
    }
  const auto us = static_cast<std::size_t>(s);
  const Tracer saved = sc.lt[us];  // the enclosing sweep's tangent of s
  // A weak one: the partials it meets keep their literals' types and hash-cons with the primal's.
  sc.lt[us] = Tracer::constant(1, g[us].dtype, true, &g);
  for (std::size_t k = begin; k < end; ++k) {
    const int i = sc.needed[k];
    const auto ui = static_cast<std::size_t>(i);
    if (i == s) continue;
    if (const int via = sc.via[ui]; via) {
      const auto w = static_cast<std::size_t>(via - 1);
      sc.lt[ui] =
          sc.lt[w].is_zero()
              ? Tracer{}
              : times_derivative(sc.lt[w], region_derivative(g, d, sc, via - 1, i, nesting + 1));
      continue;
    }
    sc.lt[ui] = jvp_rule(g, i, [&](int m) {
      const auto um = static_cast<std::size_t>(m);
      return d.active[um] && m >= s ? sc.lt[um] : Tracer{};
    });
  }
  const Tracer r = sc.lt[static_cast<std::size_t>(e)];
  sc.lt[us] = saved;
  while (sc.needed.size() > begin) sc.needed.pop_back();
  return r;
}

}  // namespace detail

/// The forward sweep of a jvp that will be transposed: like `jvp_sweep`, but only the tangents of
/// `outs` are made, and each needed equation that closes a single-entry single-exit region (the
/// largest one it closes) gets t_entry * ∂e/∂entry, the derivative preaccumulated forwards.
constexpr void jvp_sweep_preaccumulated(Graph& g, detail::Buffer<Tracer>& tangent, const int* outs,
                                        std::size_t num_outs) {
  const std::size_t n = tangent.size();
  // Past this size the analysis is not paid for: the kernels it speeds up are small, and the jvp
  // stage of a 3000-primitive program is near the evaluator's budget (-fconstexpr-ops-limit).
  if (n > detail::max_preaccumulated_size) return jvp_sweep(g, tangent);
  const detail::Dominators d(g, tangent, outs, num_outs);
  detail::RegionScratch sc(n);
  detail::Buffer<bool> needed(n);
  detail::Buffer<int> via(n);
  for (std::size_t o = 0; o < num_outs; ++o)
    if (static_cast<std::size_t>(outs[o]) < n) needed[static_cast<std::size_t>(outs[o])] = true;
  for (std::size_t i = n; i-- > 0;) {
    if (!needed[i] || !d.active[i] || !tangent[i].is_zero()) continue;
    const int e = static_cast<int>(i);
    const int entry = sc.chain[i] ? -1 : detail::farthest_entry(g, d, sc, e);
    if (entry >= 0) {
      via[i] = entry + 1;
      needed[static_cast<std::size_t>(entry)] = true;
      continue;
    }
    const Eqn& q = g[i];
    for (int k = 0; k < arity(q.prim); ++k) needed[static_cast<std::size_t>(q.in[k])] = true;
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (!needed[i] || !d.active[i] || !tangent[i].is_zero()) continue;
    const int e = static_cast<int>(i);
    if (via[i]) {
      const auto v = static_cast<std::size_t>(via[i] - 1);
      if (!tangent[v].is_zero())
        tangent[i] = detail::times_derivative(
            tangent[v], detail::region_derivative(g, d, sc, via[i] - 1, e, 1));
      continue;
    }
    tangent[i] =
        detail::jvp_rule(g, e, [&](int m) { return tangent[static_cast<std::size_t>(m)]; });
  }
}

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
constexpr void transpose_sweep(Graph& g, const detail::Buffer<bool>& lin, detail::Buffer<Tracer>& ct) {
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
    j.outs.push_back(tangent[static_cast<std::size_t>(y)].materialize(g, g[static_cast<std::size_t>(y)].dtype));
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
    tangent[static_cast<std::size_t>(x)] = Tracer::constant(1, g[static_cast<std::size_t>(x)].dtype, false, &g);
    jvp_sweep(g, tangent);
    for (std::size_t o = 0; o < m; ++o) {
      int y = j.outs[o];
      jac[o * nw + c] = tangent[static_cast<std::size_t>(y)].materialize(g, g[static_cast<std::size_t>(y)].dtype);
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
    if (static_cast<std::size_t>(j.outs[o]) + 1 > primal) primal = static_cast<std::size_t>(j.outs[o]) + 1;
  detail::Buffer<Tracer> tangent(primal);
  const int x = j.ins[static_cast<std::size_t>(w)];
  tangent[static_cast<std::size_t>(x)] = Tracer::constant(1, g[static_cast<std::size_t>(x)].dtype, false, &g);
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
      new_outs.push_back(ct[static_cast<std::size_t>(t)].materialize(g, g[static_cast<std::size_t>(t)].dtype));
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
    int a = out.graph.new_arg(g[static_cast<std::size_t>(r)].dtype, g[static_cast<std::size_t>(r)].weak);
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
      if (map[a] < 0) detail::fail("xpr::ct internal error: linear equation reads an unmapped value");
      e.in[k] = map[a];
    }
    map[i] = out.graph.emit(e);
  }
  for (std::size_t o = j.outs.size() - nl; o < j.outs.size(); ++o)
    out.outs.push_back(map[static_cast<std::size_t>(j.outs[o])]);
  return out;
}

}  // namespace xpr::ct
