// SPDX-License-Identifier: MIT
// Preaccumulation, the subsystem behind the forward sweep of a jvp that reverse mode will
// transpose (`jvp_sweep_preaccumulated`): the dominator tree of the active equations, the search
// for closed single-entry single-exit regions, and each region's derivative computed forwards.
#pragma once

#include <cstddef>
#include <cstdint>

#include "xpr/ct/graph.hpp"
#include "xpr/ct/jvp_sweep.hpp"
#include "xpr/ct/rules.hpp"

namespace xpr::ct {

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

}  // namespace xpr::ct
