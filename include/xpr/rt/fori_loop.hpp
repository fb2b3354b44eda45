// SPDX-License-Identifier: MIT
// `xpr::fori_loop(lower, upper, body, init)` (JAX's `lax.fori_loop`): a `scan` when the bounds are
// known when tracing (C++ integers, or concrete arrays), so the loop is reverse-differentiable,
// as JAX does; a `while_loop` otherwise. See docs/control-flow.md.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "xpr/core/error.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/numpy_elementwise.hpp"
#include "xpr/rt/pytree.hpp"
#include "xpr/rt/scan.hpp"
#include "xpr/rt/while_loop.hpp"

namespace xpr::rt {

namespace detail {

/// A loop bound known when tracing: a C++ integer, or an integer array with a concrete value.
template <class B>
std::optional<std::int64_t> static_bound(const B& b) {
  if constexpr (std::integral<B>) {
    return static_cast<std::int64_t>(b);
  } else {
    const Array& a = b;
    if (a.ndim() != 0 || core::is_floating(a.dtype()) || a.dtype() == DType::bool_)
      throw core::type_error("fori_loop: expected integer scalar bounds, found " +
                             detail::aval_of(a).str());
    if (!a.is_concrete()) return std::nullopt;
    return a.item<std::int64_t>();
  }
}

/// The counter's initial value: the dtype of the bounds (i32 for C++ ints, weakly typed).
template <class B>
Array counter(const B& b, std::int64_t value) {
  if constexpr (std::integral<B>) {
    if constexpr (sizeof(B) > 4)
      return Array(value);
    else
      return Array(static_cast<std::int32_t>(value));
  } else {
    return convert_element_type(Array(value), static_cast<const Array&>(b).dtype(),
                                static_cast<const Array&>(b).weak_type());
  }
}

/// The body's carry against `init_val`'s, by the names the user wrote: the scan or while loop
/// below would report a mismatch in the `(i, x)` or `(i, upper, x)` carry it builds.
template <class X>
void check_fori_carry(const X& init, const X& out) {
  auto [in_leaves, in_def] = tree_flatten(init);
  auto [out_leaves, out_def] = tree_flatten(out);
  if (!(in_def == out_def))
    throw core::type_error(
        "fori_loop: expected body_fun to return a carry with the structure of "
        "init_val, " +
        in_def.str() + ", found " + out_def.str());
  for (std::size_t k = 0; k < in_leaves.size(); ++k)
    if (in_leaves[k].shape() != out_leaves[k].shape())
      throw core::type_error(
          "fori_loop: expected body_fun to return a carry with the shapes of "
          "init_val, found leaf " +
          std::to_string(k) + " of shape " + out_leaves[k].shape().str() + " where init_val has " +
          in_leaves[k].shape().str());
}

}  // namespace detail

/// `fori_loop(lower, upper, body, init)`: `x = init; for (i = lower; i < upper; ++i) x = body(i,
/// x); return x;`, with `i` an integer array and `x` any pytree (its structure, shapes and dtypes
/// kept by `body`). With bounds known when tracing (C++ integers or concrete arrays) this is a
/// `scan` of `upper - lower` iterations carrying `(i, x)`, as in JAX, so `grad` works through it.
/// With traced bounds it is a `while_loop` carrying `(i, upper, x)`: forward mode and vmap work,
/// reverse mode throws (use `max_trips`). See examples/scan.cpp.
template <class L, class U, class F, class T>
requires((std::integral<L> || std::convertible_to<const L&, const Array&>)&&(
    std::integral<U> ||
    std::convertible_to<const U&, const Array&>)) auto fori_loop(const L& lower, const U& upper,
                                                                 F body, const T& init) {
  using X = tree_of_arrays_t<T>;
  std::optional<std::int64_t> lo = detail::static_bound(lower), hi = detail::static_bound(upper);
  if (!lo || !hi) {
    // Traced bounds: a while loop carrying (i, upper, x), as JAX's fori_loop does.
    using W = std::tuple<Array, Array, X>;
    auto bound = [](const auto& b) -> Array {
      if constexpr (std::integral<std::remove_cvref_t<decltype(b)>>)
        return detail::counter(b, static_cast<std::int64_t>(b));
      else
        return b;
    };
    auto w_cond = [](const W& w) { return std::get<0>(w) < std::get<1>(w); };
    auto w_body = [&](const W& w) {
      X next(body(std::get<0>(w), std::get<2>(w)));
      detail::check_fori_carry(std::get<2>(w), next);
      return W{std::get<0>(w) + 1, std::get<1>(w), std::move(next)};
    };
    auto [init_leaves, init_def] = tree_flatten(init);
    X x0 = tree_unflatten<X>(static_cast<const PyTreeDef&>(init_def), init_leaves);
    return std::get<2>(while_loop(w_cond, w_body, W{bound(lower), bound(upper), x0}));
  }
  std::int64_t n = 0;  // the trip count, upper - lower, which need not fit in int64
  if (*hi > *lo && __builtin_sub_overflow(*hi, *lo, &n))
    throw core::value_error(
        "fori_loop: expected a trip count upper - lower that fits in int64, "
        "found lower " +
        std::to_string(*lo) + " and upper " + std::to_string(*hi));
  auto step = [&](std::pair<Array, X> c, std::tuple<>) {
    X next = body(c.first, c.second);
    detail::check_fori_carry(c.second, next);
    return std::pair{std::pair<Array, X>{c.first + 1, std::move(next)}, std::tuple<>{}};
  };
  std::pair<Array, T> start{detail::counter(lower, *lo), init};
  return scan(step, start, std::tuple<>{}, n).first.second;
}

}  // namespace xpr::rt

namespace xpr {
using rt::fori_loop;
}  // namespace xpr
