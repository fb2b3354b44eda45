// SPDX-License-Identifier: MIT
// The user-facing transformations of the runtime tier on pytrees: xpr::jvp, xpr::vmap (with
// in_axes/out_axes and xpr::not_mapped), xpr::make_jaxpr. Arguments and results are flattened
// to lists of arrays around the flat transformations of transformations.hpp; C++ numbers become
// weakly typed rank-0 arrays, as Python scalars do in JAX.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "xpr/core/error.hpp"
#include "xpr/core/shape.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/jaxpr.hpp"
#include "xpr/rt/pytree.hpp"
#include "xpr/rt/transformations.hpp"

namespace xpr::rt {

/// An `in_axes` / `out_axes` entry meaning "this value has no batch axis" (Python's None).
using core::not_mapped;
using core::NotMapped;

namespace detail {

/// The user's function held by a transformed function (`grad(f)`, `vmap(f)`, ...), callable
/// through a const one: `const auto df = xpr::grad(f); df(x)` compiles, as does a `const F&`
/// parameter called in a solver, and a mutable lambda `f` still works.
template <class F>
struct MutableBox {
  mutable F f;
};

template <class T>
inline constexpr bool is_std_tuple_v = false;
template <class... Ts>
inline constexpr bool is_std_tuple_v<std::tuple<Ts...>> = true;

// ---- the call of the user's function: arity checked first ------------------------------------

/// Whether `f` takes the arguments `ArgsTuple` (a std::tuple of argument types), as arrays.
template <class F, class ArgsTuple>
inline constexpr bool callable_with_v = false;
template <class F, class... A>
inline constexpr bool callable_with_v<F, std::tuple<A...>> =
    std::is_invocable_v<F&, tree_of_arrays_t<A>...>;

/// Whether `F` can be called with as many Array arguments as `I...` has.
template <class F, std::size_t... I>
constexpr bool invocable_with_arrays(std::index_sequence<I...>) {
  return std::is_invocable_v<F&, std::conditional_t<true, Array, decltype(I)>...>;
}

/// The number of Array arguments `F` takes (the first of 0..8 that works), or -1.
template <class F, std::size_t... N>
constexpr int array_arity(std::index_sequence<N...>) {
  constexpr bool works[] = {invocable_with_arrays<F>(std::make_index_sequence<N>{})...};
  for (std::size_t n = 0; n < sizeof...(N); ++n)
    if (works[n]) return static_cast<int>(n);
  return -1;
}

/// Fails when the function takes `expected` arguments and was called with `found` (the note
/// under the message, "expected == found", gives both numbers).
template <std::size_t expected, std::size_t found>
constexpr bool check_arity() {
  static_assert(expected == found,
                "xpr: wrong number of arguments: the function takes `expected` arguments but "
                "the transformed function was called with `found` (both shown above and in the "
                "note below, expected == found). Pass one argument per parameter of the function "
                "(argnums choose which are differentiated), or fix the values of the others in "
                "a lambda: xpr::grad([&](auto x) { return f(x, y); })(x)");
  return expected == found;
}

/// Checks that `f` can be called with `ArgsTuple` before anything calls it, so that a wrong
/// arity is one xpr message rather than pages of std::apply errors.
template <class F, class ArgsTuple>
constexpr bool check_callable() {
  if constexpr (callable_with_v<F, ArgsTuple>) {
    return true;
  } else {
    constexpr int n = array_arity<F>(std::make_index_sequence<9>{});
    if constexpr (n >= 0 && static_cast<std::size_t>(n) != std::tuple_size_v<ArgsTuple>) {
      return check_arity<static_cast<std::size_t>(n), std::tuple_size_v<ArgsTuple>>();
    } else {
      static_assert(callable_with_v<F, ArgsTuple>,
                    "xpr: the function cannot be called with these arguments (C++ numbers "
                    "become xpr::Array, containers keep their structure with xpr::Array leaves): "
                    "write it as a generic lambda (auto parameters) using xpr:: functions, with "
                    "one parameter per argument");
      return false;
    }
  }
}

/// The result of calling `f` with `ArgsTuple` as arrays; Array when it cannot be called (the
/// check above has then failed, and nothing else should).
template <class F, class ArgsTuple, bool = check_callable<F, ArgsTuple>()>
struct call_result {
  using type = Array;
};
template <class F, class ArgsTuple>
struct call_result<F, ArgsTuple, true> {
  using type =
      decltype(std::apply(std::declval<F&>(), std::declval<tree_of_arrays_t<ArgsTuple>>()));
};

/// Calls `f` on the arguments rebuilt from `leaves` (numbers now arrays), returning the flat
/// outputs and recording the output structure in `out_def`.
template <class F, class ArgsTuple>
FlatFunction flat_function(F& f, const PyTreeDef& in_def, std::optional<PyTreeDef>& out_def) {
  check_callable<F, ArgsTuple>();  // every transformation's call of `f` comes through here
  return [&f, &in_def, &out_def](std::span<const Array> leaves) -> Arrays {
    if constexpr (callable_with_v<F, ArgsTuple>) {
      auto args = tree_unflatten<tree_of_arrays_t<ArgsTuple>>(in_def, leaves);
      auto out = std::apply(f, std::move(args));
      auto [out_leaves, def] = tree_flatten(out);
      out_def = std::move(def);
      return out_leaves;
    } else {
      return {};  // not callable: check_callable has stopped the compilation
    }
  };
}

template <class F, class ArgsTuple>
using flat_result_t = tree_of_arrays_t<typename call_result<F, ArgsTuple>::type>;

/// jvp's primals and tangents are tuples of the same length (JAX's "same tree structure").
template <std::size_t primals, std::size_t tangents>
constexpr bool check_jvp_tuples() {
  static_assert(primals == tangents,
                "xpr::jvp: primal and tangent arguments must have the same tree structure: "
                "`primals` and `tangents` (shown above and in the note below, primals == "
                "tangents) are the sizes of the two tuples; pass one tangent per primal, of the "
                "primal's shape and dtype");
  return primals == tangents;
}

/// vmap's in_axes tuple has one entry per argument (JAX: len(in_axes) == len(args)).
template <std::size_t in_axes_entries, std::size_t arguments>
constexpr bool check_in_axes() {
  static_assert(in_axes_entries == arguments,
                "xpr::vmap: in_axes must be an integer, xpr::not_mapped, or a std::tuple of "
                "entries corresponding to the positional arguments passed to the function, but "
                "got `in_axes_entries` entries for `arguments` arguments (shown above and in the "
                "note below): give one entry per argument, or one integer for all");
  return in_axes_entries == arguments;
}

// ---- in_axes / out_axes specifications -------------------------------------------------------

template <class S>
concept AxisLeaf = std::is_integral_v<S> || std::is_same_v<S, NotMapped> ||
    std::is_same_v<S, std::optional<std::int64_t>> || std::is_same_v<S, std::optional<int>>;

template <AxisLeaf S>
BatchDim axis_of(const S& s) {
  if constexpr (std::is_same_v<S, NotMapped>) {
    return std::nullopt;
  } else if constexpr (std::is_integral_v<S>) {
    return static_cast<std::int64_t>(s);
  } else {
    return s ? BatchDim(static_cast<std::int64_t>(*s)) : std::nullopt;
  }
}

[[noreturn]] inline void throw_not_prefix(const char* which, const PyTreeDef& def,
                                          std::size_t node) {
  throw core::type_error(std::string("vmap ") + which +
                         " specification must be a tree prefix of the corresponding value: "
                         "expected a specification matching " +
                         def.node_str(node) + " (or a single axis for all of it)");
}

/// Expands axis specification `s` over the subtree of `def` at `node`, appending one BatchDim
/// per leaf; returns the node after the subtree. A leaf specification covers a whole subtree.
template <class S>
std::size_t expand_axes(const char* which, const S& s, const PyTreeDef& def, std::size_t node,
                        std::vector<BatchDim>& out) {
  const auto& n = def.nodes().at(node);
  if constexpr (AxisLeaf<S>) {
    out.insert(out.end(), n.num_leaves, axis_of(s));
    return node + n.num_nodes;
  } else if constexpr (is_std_tuple_v<S> || is_tuple_like_v<S>) {
    if (n.kind != NodeKind::tuple || n.arity != std::tuple_size_v<S>)
      throw_not_prefix(which, def, node);
    std::size_t next = node + 1;
    std::apply([&](const auto&... e) { ((next = expand_axes(which, e, def, next, out)), ...); }, s);
    return next;
  } else if constexpr (is_vector_v<S>) {
    if (n.kind != NodeKind::list || n.arity != s.size()) throw_not_prefix(which, def, node);
    std::size_t next = node + 1;
    for (const auto& e : s) next = expand_axes(which, e, def, next, out);
    return next;
  } else if constexpr (is_string_map_v<S>) {
    if (n.kind != NodeKind::dict || n.arity != s.size()) throw_not_prefix(which, def, node);
    std::size_t next = node + 1, i = 0;
    for (const auto& [k, e] : s) {
      if (n.keys[i++] != k) throw_not_prefix(which, def, node);
      next = expand_axes(which, e, def, next, out);
    }
    return next;
  } else {
    static_assert(AxisLeaf<S>,
                  "xpr::vmap: an axis specification is an integer, xpr::not_mapped, "
                  "std::optional<int>, or a std::tuple / std::vector / std::map of them");
    return node;
  }
}

}  // namespace detail

// ---- jvp -------------------------------------------------------------------------------------

/// Forward mode: `{f(primals...), df(primals...)[tangents...]}`. `primals` and `tangents` are
/// tuples of pytrees with equal structures, shapes and dtypes. See examples/tour.cpp.
template <class F, class... P, class... T>
auto jvp(F&& f, const std::tuple<P...>& primals, const std::tuple<T...>& tangents) {
  detail::check_jvp_tuples<sizeof...(P), sizeof...(T)>();
  using Args = std::tuple<P...>;
  using Out = detail::flat_result_t<F, Args>;
  auto [p_leaves, p_def] = tree_flatten(primals);
  auto [t_leaves, t_def] = tree_flatten(tangents);
  if (static_cast<const PyTreeDef&>(p_def) != static_cast<const PyTreeDef&>(t_def))
    throw core::type_error(
        "jvp: primal and tangent arguments must have the same tree structure; "
        "expected " +
        p_def.str() + ", found " + t_def.str());
  std::optional<PyTreeDef> out_def;
  auto flat = detail::flat_function<std::remove_reference_t<F>, Args>(f, p_def, out_def);
  auto [primals_out, tangents_out] = jvp_flat(flat, p_leaves, t_leaves);
  return std::pair<Out, Out>{tree_unflatten<Out>(*out_def, primals_out),
                             tree_unflatten<Out>(*out_def, tangents_out)};
}

/// `jvp(f, primal, tangent)` for a function of one argument.
template <class F, class P, class T>
requires(!detail::is_std_tuple_v<P>) auto jvp(F&& f, const P& primal, const T& tangent) {
  return jvp(std::forward<F>(f), std::tuple<const P&>(primal), std::tuple<const T&>(tangent));
}

// ---- vmap ------------------------------------------------------------------------------------

/// `vmap(f, in_axes, out_axes)`: `f` mapped over an axis of its arguments. `in_axes` is one axis
/// for every argument or a std::tuple with one entry per argument, each an integer,
/// `xpr::not_mapped`, or a pytree of them (tuples, vectors, maps) that is a prefix of the
/// argument's structure; `out_axes` likewise for the result. See examples/tour.cpp.
template <class F, class InAxes = int, class OutAxes = int>
auto vmap(F fun, InAxes in_axes = 0, OutAxes out_axes = 0) {
  return [box = detail::MutableBox<F>{std::move(fun)}, in_axes = std::move(in_axes),
          out_axes = std::move(out_axes)](const auto&... args) {
    F& f = box.f;
    using Args = std::tuple<std::remove_cvref_t<decltype(args)>...>;
    using Out = detail::flat_result_t<F, Args>;
    auto [leaves, def] = tree_flatten(std::forward_as_tuple(args...));
    std::vector<BatchDim> in_dims;
    if constexpr (detail::AxisLeaf<InAxes>) {
      in_dims.assign(leaves.size(), detail::axis_of(in_axes));
    } else {
      static_assert(detail::is_std_tuple_v<InAxes>,
                    "xpr::vmap: in_axes is one axis for all arguments or a std::tuple with one "
                    "entry per argument");
      if constexpr (detail::check_in_axes<std::tuple_size_v<InAxes>, sizeof...(args)>())
        detail::expand_axes("in_axes", in_axes, def, 0, in_dims);
    }
    std::optional<PyTreeDef> out_def;
    auto flat = detail::flat_function<F, Args>(f, def, out_def);
    // out_axes is expanded once the output structure is known (inside the transformation).
    std::vector<BatchDim> out_dims;
    FlatFunction with_out_axes = [&](std::span<const Array> in) {
      Arrays out = flat(in);
      detail::expand_axes("out_axes", out_axes, *out_def, 0, out_dims);
      return out;
    };
    Arrays out = vmap_flat(with_out_axes, leaves, in_dims, out_dims);
    return tree_unflatten<Out>(*out_def, out);
  };
}

// ---- make_jaxpr ------------------------------------------------------------------------------

/// `make_jaxpr(f)(args...)`: the jaxpr of `f` on arguments of these shapes and dtypes (weak
/// types kept), one input variable per leaf.
template <class F>
auto make_jaxpr(F f) {
  return [f = std::move(f)](const auto&... args) mutable -> ClosedJaxpr {
    using Args = std::tuple<std::remove_cvref_t<decltype(args)>...>;
    auto [leaves, def] = tree_flatten(std::forward_as_tuple(args...));
    Avals avals;
    avals.reserve(leaves.size());
    for (const Array& a : leaves) avals.push_back(detail::aval_of(a));
    std::optional<PyTreeDef> out_def;
    return make_jaxpr_flat(detail::flat_function<F, Args>(f, def, out_def), avals);
  };
}

}  // namespace xpr::rt

namespace xpr {
using rt::jvp;
using rt::make_jaxpr;
using rt::not_mapped;
using rt::NotMapped;
using rt::vmap;
}  // namespace xpr
