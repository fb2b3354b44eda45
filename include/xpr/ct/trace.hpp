// SPDX-License-Identifier: MIT
// Tracing: the argument and result structures the compile-time tier accepts (scalars,
// std::array, std::tuple, std::pair, fixed-size vectors), flattened into leaves, and `trace`,
// which calls a captureless lambda with tracer leaves inside a constant evaluation and returns
// its jaxpr. `inline_jaxpr` replays a jaxpr on the tracers of an enclosing trace.
#pragma once

#include <array>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "xpr/core/dtype.hpp"
#include "xpr/ct/graph.hpp"
#include "xpr/ct/rules.hpp"

namespace xpr::ct {

/// A fixed-size vector of traced values, what a lambda receives for an Eigen fixed-size vector
/// argument: indexable with `v[i]` and `v(i)`.
template <class T, std::size_t N>
struct Vector : std::array<T, N> {
  constexpr T& operator()(std::size_t i) { return (*this)[i]; }
  constexpr const T& operator()(std::size_t i) const { return (*this)[i]; }
};

// ---------------------------------------------------------------------------------------------
// Leaves: the scalars of one evaluation (float, double, xsimd batches via interop/xsimd.hpp) and
// the tracer. `scalar` is the element type, which gives the leaf's dtype.
// ---------------------------------------------------------------------------------------------
template <class T>
struct leaf_traits {
  static constexpr bool is_leaf = false;
};
template <class T>
requires std::is_arithmetic_v<T>
struct leaf_traits<T> {
  static constexpr bool is_leaf = true;
  using scalar = T;
};
template <>
struct leaf_traits<Tracer> {
  static constexpr bool is_leaf = true;
  using scalar = void;  // known only as data, in the graph
};

template <class T>
concept Leaf = leaf_traits<T>::is_leaf;

// ---------------------------------------------------------------------------------------------
// Tree<T>: a structure of leaves. `size` leaves; `rebind<L>` is the same structure with leaves of
// type L; `flatten` / `unflatten` convert between the structure and a flat array of leaves.
// If you see an error naming Tree<T>, T is not an argument or result type xpr::ct accepts.
// ---------------------------------------------------------------------------------------------
template <class T>
struct Tree;

template <class T>
concept Structure = requires {
  Tree<std::remove_cvref_t<T>>::size;
};

template <Leaf T>
struct Tree<T> {
  static constexpr std::size_t size = 1;
  using leaf = T;
  template <class L>
  using rebind = L;
  template <class L>
  static constexpr void flatten(const T& x, L* out) {
    out[0] = static_cast<L>(x);
  }
  template <class L>
  static constexpr L unflatten(const L* in) {
    return in[0];
  }
};

namespace detail {
template <class T, class U>
using same_or_void = std::conditional_t<std::is_same_v<T, U>, T, void>;

template <class Sub, class Out, std::size_t N>
struct ArrayTree {
  static constexpr std::size_t size = N * Tree<Sub>::size;
  using leaf = typename Tree<Sub>::leaf;
  template <class In, class L>
  static constexpr void flatten(const In& x, L* out) {
    for (std::size_t i = 0; i < N; ++i) Tree<Sub>::flatten(x[i], out + i * Tree<Sub>::size);
  }
  template <class L>
  static constexpr Out unflatten_into(const L* in) {
    Out r{};
    for (std::size_t i = 0; i < N; ++i)
      r[i] = Tree<Sub>::template unflatten<L>(in + i * Tree<Sub>::size);
    return r;
  }
};
}  // namespace detail

template <class T, std::size_t N>
requires Structure<T>
struct Tree<std::array<T, N>> : detail::ArrayTree<T, std::array<T, N>, N> {
  template <class L>
  using rebind = std::array<typename Tree<T>::template rebind<L>, N>;
  template <class L>
  static constexpr void flatten(const std::array<T, N>& x, L* out) {
    detail::ArrayTree<T, std::array<T, N>, N>::flatten(x, out);
  }
  template <class L>
  static constexpr rebind<L> unflatten(const L* in) {
    return detail::ArrayTree<T, rebind<L>, N>::unflatten_into(in);
  }
};

template <class T, std::size_t N>
requires Structure<T>
struct Tree<Vector<T, N>> : detail::ArrayTree<T, Vector<T, N>, N> {
  template <class L>
  using rebind = Vector<typename Tree<T>::template rebind<L>, N>;
  template <class L>
  static constexpr void flatten(const Vector<T, N>& x, L* out) {
    detail::ArrayTree<T, Vector<T, N>, N>::flatten(x, out);
  }
  template <class L>
  static constexpr rebind<L> unflatten(const L* in) {
    return detail::ArrayTree<T, rebind<L>, N>::unflatten_into(in);
  }
};

namespace detail {
template <class... T>
struct TupleTree {
  static constexpr std::size_t size = (Tree<T>::size + ... + 0);
  static constexpr std::array<std::size_t, sizeof...(T) + 1> offsets = [] {
    std::array<std::size_t, sizeof...(T) + 1> o{};
    std::size_t sizes[] = {Tree<T>::size..., 0};
    for (std::size_t i = 0; i < sizeof...(T); ++i) o[i + 1] = o[i] + sizes[i];
    return o;
  }();
  template <class Tup, class L>
  static constexpr void flatten(const Tup& x, L* out) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (Tree<T>::flatten(std::get<I>(x), out + offsets[I]), ...);
    }
    (std::index_sequence_for<T...>{});
  }
};
}  // namespace detail

template <class... T>
requires(Structure<T>&&...) struct Tree<std::tuple<T...>> : detail::TupleTree<T...> {
  using leaf = void;
  template <class L>
  using rebind = std::tuple<typename Tree<T>::template rebind<L>...>;
  template <class L>
  static constexpr void flatten(const std::tuple<T...>& x, L* out) {
    detail::TupleTree<T...>::flatten(x, out);
  }
  template <class L>
  static constexpr rebind<L> unflatten(const L* in) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return rebind<L>{Tree<T>::template unflatten<L>(in + detail::TupleTree<T...>::offsets[I])...};
    }
    (std::index_sequence_for<T...>{});
  }
};

template <class A, class B>
requires Structure<A> && Structure<B>
struct Tree<std::pair<A, B>> : detail::TupleTree<A, B> {
  using leaf = void;
  template <class L>
  using rebind =
      std::pair<typename Tree<A>::template rebind<L>, typename Tree<B>::template rebind<L>>;
  template <class L>
  static constexpr void flatten(const std::pair<A, B>& x, L* out) {
    detail::TupleTree<A, B>::flatten(x, out);
  }
  template <class L>
  static constexpr rebind<L> unflatten(const L* in) {
    return rebind<L>{Tree<A>::template unflatten<L>(in),
                     Tree<B>::template unflatten<L>(in + Tree<A>::size)};
  }
};

/// The structure a lambda receives for an argument of type T: T with tracer leaves.
template <class T>
using traced_t = typename Tree<std::remove_cvref_t<T>>::template rebind<Tracer>;

/// The number of leaves of each of `T...`, and where each starts in the flat list.
template <class... T>
inline constexpr std::array<std::size_t, sizeof...(T) + 1> leaf_offsets =
    detail::TupleTree<T...>::offsets;

// ---------------------------------------------------------------------------------------------
// trace<F, A...>(dtypes): the jaxpr of F{}(a...) for arguments of traced types A... whose
// leaves have the given dtypes.
// ---------------------------------------------------------------------------------------------
template <class F, class... A>
using traced_result_t = std::remove_cvref_t<std::invoke_result_t<const F&, const A&...>>;

/// The most equations the trace of one function may record, and the most a function under a
/// transformation (grad, jvp, vmap of grad, ...) may have. Past the first, tracing only counts;
/// past either, the compilation stops in a static_assert that says so. Measured with GCC 12's
/// default -fconstexpr-ops-limit (2^25 operations per constant evaluation): the trace of 5000
/// equations, then counting 25 000 more, fits (38 000 in all does not); `grad` of a
/// Lennard-Jones energy of 2911 equations compiles and one of 3865 exhausts the budget
/// (docs/compile-time-scaling.md).
/// With a raised -fconstexpr-ops-limit, raise them with -DXPR_CT_MAX_TRACED_EQUATIONS=n and
/// -DXPR_CT_MAX_TRANSFORMED_EQUATIONS=n.
#ifdef XPR_CT_MAX_TRACED_EQUATIONS
inline constexpr std::size_t max_traced_equations = XPR_CT_MAX_TRACED_EQUATIONS;
#else
inline constexpr std::size_t max_traced_equations = 5000;
#endif
#ifdef XPR_CT_MAX_TRANSFORMED_EQUATIONS
inline constexpr std::size_t max_transformed_equations = XPR_CT_MAX_TRANSFORMED_EQUATIONS;
#else
inline constexpr std::size_t max_transformed_equations = 3200;
#endif

template <class F, class... A>
constexpr Jaxpr trace(const DType* dtypes) {
  Jaxpr j;
  j.graph.set_cap(max_traced_equations);
  constexpr std::size_t n = (Tree<A>::size + ... + 0);
  Tracer leaves[n > 0 ? n : 1];
  for (std::size_t k = 0; k < n; ++k) {
    int id = j.graph.new_arg(dtypes[k]);
    j.ins.push_back(id);
    leaves[k] = Tracer(&j.graph, id);
  }
  using R = traced_result_t<F, A...>;
  R out = [&]<std::size_t... I>(std::index_sequence<I...>) {
    return F{}(Tree<A>::template unflatten<Tracer>(leaves + leaf_offsets<A...>[I])...);
  }
  (std::index_sequence_for<A...>{});
  Tracer flat[Tree<R>::size];
  Tree<R>::flatten(out, flat);
  if (j.graph.over_cap()) {
    // Too large: a stub of the same signature whose outputs are zeros, so that nothing after
    // the static_assert that reports it (api.hpp) fails too.
    Jaxpr stub;
    stub.too_large = j.graph.counted();
    for (std::size_t k = 0; k < n; ++k) stub.ins.push_back(stub.graph.new_arg(dtypes[k]));
    for (const Tracer& t : flat) stub.outs.push_back(stub.graph.literal(0.0, t.dtype(), t.weak()));
    return stub;
  }
  for (const Tracer& t : flat) j.outs.push_back(t.materialize(j.graph, t.dtype()));
  return j;
}

/// Replays `j` on `args` (one tracer per input), recording into their trace; returns the
/// outputs. Only equations the outputs need are replayed, each through `bind`, so constants
/// fold and equal subexpressions merge with the enclosing trace's.
constexpr detail::Buffer<Tracer> inline_jaxpr(const Jaxpr& j, const Tracer* args) {
  const Graph& g = j.graph;
  detail::Buffer<bool> live(g.size());
  for (int o : j.outs) live[static_cast<std::size_t>(o)] = true;
  for (std::size_t i = g.size(); i-- > 0;)
    if (live[i])
      for (int k = 0; k < arity(g[i].prim); ++k) live[static_cast<std::size_t>(g[i].in[k])] = true;
  Graph* outer = nullptr;
  for (std::size_t k = 0; k < j.ins.size(); ++k)
    if (args[k].graph()) outer = args[k].graph();
  detail::Buffer<Tracer> value(g.size());
  for (std::size_t k = 0; k < j.ins.size(); ++k)
    value[static_cast<std::size_t>(j.ins[k])] = args[k];
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (!live[i]) continue;
    const Eqn& e = g[i];
    if (e.prim == Prim::arg) continue;
    if (e.prim == Prim::lit) {
      value[i] = Tracer::constant(e.value(), e.dtype, e.weak, outer);
      continue;
    }
    Tracer in[3];
    for (int k = 0; k < arity(e.prim); ++k) in[k] = value[static_cast<std::size_t>(e.in[k])];
    visit_prim(e.prim, [&](auto op) {
      value[i] = bind<decltype(op)>(in, static_cast<std::int64_t>(e.param));
    });
  }
  detail::Buffer<Tracer> outs;
  for (int o : j.outs) outs.push_back(value[static_cast<std::size_t>(o)]);
  return outs;
}

}  // namespace xpr::ct
