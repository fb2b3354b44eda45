// SPDX-License-Identifier: MIT
// Eigen in the compile-time tier. A fixed-size vector argument (`Eigen::Matrix<T, N, 1>` or
// `Eigen::Array<T, N, 1>`) is traced as `xpr::ct::Vector<Tracer, N>` (indexable with `x(i)` and
// `x[i]`), and a gradient with respect to it comes back as the same Eigen type. A dynamic-size
// `Eigen::Array<T, Dynamic, 1>` is a scalar of the evaluation instead: the program runs on whole
// arrays at once, elementwise.
#pragma once

#include <cstddef>
#include <type_traits>

#include <Eigen/Core>

#include "xpr/ct/trace.hpp"

namespace xpr::ct {

namespace detail {
/// A fixed-size Eigen column `E<T, N, 1>`: rebinding to a float type keeps the Eigen class;
/// to anything else (tracers, batches, nested structures) it becomes a `ct::Vector`.
template <template <class> class Rebind, class E, class T, int N>
struct EigenVectorTree {
  static constexpr std::size_t size = static_cast<std::size_t>(N);
  using leaf = T;
  template <class L>
  using rebind = std::conditional_t<std::is_floating_point_v<L>, Rebind<L>, Vector<L, size>>;
  template <class L>
  static void flatten(const E& x, L* out) {
    for (std::size_t i = 0; i < size; ++i) out[i] = static_cast<L>(x(static_cast<Eigen::Index>(i)));
  }
  template <class L>
  static rebind<L> unflatten(const L* in) {
    rebind<L> r;
    for (std::size_t i = 0; i < size; ++i) r[static_cast<Eigen::Index>(i)] = in[i];
    return r;
  }
};
template <int N>
struct EigenMatrixOf {
  template <class L>
  using type = Eigen::Matrix<L, N, 1>;
};
template <int N>
struct EigenArrayOf {
  template <class L>
  using type = Eigen::Array<L, N, 1>;
};
}  // namespace detail

template <class T, int N, int Options, int MaxRows>
requires(N > 0 &&
         std::is_floating_point_v<T>) struct Tree<Eigen::Matrix<T, N, 1, Options, MaxRows, 1>>
    : detail::EigenVectorTree<detail::EigenMatrixOf<N>::template type,
                              Eigen::Matrix<T, N, 1, Options, MaxRows, 1>, T, N> {
};

template <class T, int N, int Options, int MaxRows>
requires(N > 0 &&
         std::is_floating_point_v<T>) struct Tree<Eigen::Array<T, N, 1, Options, MaxRows, 1>>
    : detail::EigenVectorTree<detail::EigenArrayOf<N>::template type,
                              Eigen::Array<T, N, 1, Options, MaxRows, 1>, T, N> {
};

/// `Eigen::ArrayXd` / `ArrayXf` as evaluation scalars (elementwise, like xsimd batches).
template <class T>
requires std::is_floating_point_v<T>
struct leaf_traits<Eigen::Array<T, Eigen::Dynamic, 1>> {
  static constexpr bool is_leaf = true;
  using scalar = T;
};

}  // namespace xpr::ct
