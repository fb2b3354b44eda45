// SPDX-License-Identifier: MIT
// The evaluator: a frozen program (a template argument, by reference to its constexpr variable)
// instantiated as straight-line code, generic over the scalar type (float, double, xsimd batches,
// Eigen arrays). Each equation computes `Op::number`, the operation's meaning on plain numbers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "xpr/core/ops.hpp"
#include "xpr/ct/graph.hpp"

namespace xpr::ct {

namespace detail {
/// The comparison result type of scalar S: bool, an xsimd batch_bool, an Eigen bool array.
template <class S>
using mask_t = decltype(op::detail::plain(op::lt::number(std::declval<const S&>(), std::declval<const S&>())));

/// A literal as a value of the evaluation's scalar type (`like` gives an Eigen array its size).
template <class S>
[[gnu::always_inline]] inline S broadcast(double v, const S& like) {
  if constexpr (std::is_arithmetic_v<S>) {
    (void)like;
    return static_cast<S>(v);
  } else if constexpr (requires { S::Constant(like.rows(), like.cols(), 0.0); }) {
    return S::Constant(like.rows(), like.cols(), static_cast<typename S::Scalar>(v));
  } else {
    (void)like;
    return S(static_cast<typename S::value_type>(v));
  }
}

/// Where each equation's value lives: a slot of the value array, or of the mask array for
/// comparisons. Literals and dead-end slots take none.
template <std::size_t N>
struct Layout {
  int slot[N > 0 ? N : 1] = {};
  int num_values = 0;
  int num_masks = 0;
};

template <class P>
constexpr auto make_layout(const P& p) {
  Layout<P::num_eqns> l;
  for (std::size_t i = 0; i < P::num_eqns; ++i) {
    const Eqn& e = p.eqns[i];
    if (e.prim == Prim::lit)
      l.slot[i] = -1;
    else if (is_comparison(e.prim))
      l.slot[i] = l.num_masks++;
    else
      l.slot[i] = l.num_values++;
  }
  return l;
}

inline constexpr std::size_t block_size = 64;    // equations per fold expression
inline constexpr std::size_t chunk_size = 256;   // equations per out-of-line function
inline constexpr std::size_t inline_limit = 512; // larger programs are split into chunks
}  // namespace detail

/// A frozen program `P` as straight-line code. `run(in, out)` evaluates it on arrays of a scalar
/// type S: `num_ins` inputs, `num_outs` outputs.
template <const auto& P>
class Compiled {
  using Program = std::remove_cvref_t<decltype(P)>;
  static constexpr auto layout = detail::make_layout(P);

 public:
  static constexpr std::size_t num_eqns = Program::num_eqns;
  static constexpr std::size_t num_ins = Program::num_ins;
  static constexpr std::size_t num_outs = Program::num_outs;

  template <class S>
  [[gnu::always_inline]] static inline void run(const S* in, S* out) {
    using M = detail::mask_t<S>;
    S v[layout.num_values > 0 ? layout.num_values : 1];
    M m[layout.num_masks > 0 ? layout.num_masks : 1];
    for (std::size_t k = 0; k < num_ins; ++k) v[k] = in[k];
    const S& like = in[0];
    if constexpr (num_eqns <= detail::inline_limit) {
      blocks<0, (num_eqns + detail::block_size - 1) / detail::block_size>(v, m, like);
    } else {
      [&]<std::size_t... C>(std::index_sequence<C...>) {
        (chunk<C>(v, m, like), ...);
      }(std::make_index_sequence<(num_eqns + detail::chunk_size - 1) / detail::chunk_size>{});
    }
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      ((out[K] = output<K>(v, m, like)), ...);
    }(std::make_index_sequence<num_outs>{});
  }

 private:
  template <std::size_t First, std::size_t Count, class S, class M>
  [[gnu::always_inline]] static inline void blocks(S* v, M* m, const S& like) {
    [&]<std::size_t... B>(std::index_sequence<B...>) {
      (block<First + B * detail::block_size>(v, m, like), ...);
    }(std::make_index_sequence<Count>{});
  }

  template <std::size_t C, class S, class M>
  [[gnu::noinline]] static void chunk(S* v, M* m, const S& like) {
    constexpr std::size_t first = C * detail::chunk_size;
    constexpr std::size_t count = (detail::chunk_size + detail::block_size - 1) / detail::block_size;
    blocks<first, count>(v, m, like);
  }

  template <std::size_t First, class S, class M>
  [[gnu::always_inline]] static inline void block(S* v, M* m, const S& like) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (step<First + I>(v, m, like), ...);
    }(std::make_index_sequence<(First < num_eqns ? (num_eqns - First < detail::block_size
                                                        ? num_eqns - First
                                                        : detail::block_size)
                                                 : 0)>{});
  }

  /// The value of equation `I` as an operand.
  template <std::size_t I, class S>
  [[gnu::always_inline]] static inline decltype(auto) get(const S* v, const S& like) {
    constexpr const Eqn& e = P.eqns[I];
    if constexpr (e.prim == Prim::lit)
      return detail::broadcast<S>(e.value(), like);
    else
      return (v[layout.slot[I]]);
  }

  template <std::size_t I, class S, class M>
  [[gnu::always_inline]] static inline void step(S* v, M* m, const S& like) {
    constexpr const Eqn& e = P.eqns[I];
    constexpr Prim p = e.prim;
    if constexpr (p == Prim::arg || p == Prim::lit) {
      // inputs are already in place; literals are read where they are used
    } else if constexpr (p == Prim::select) {
      v[layout.slot[I]] = op::select::number(m[layout.slot[e.in[0]]],
                                             get<static_cast<std::size_t>(e.in[2])>(v, like),
                                             get<static_cast<std::size_t>(e.in[1])>(v, like));
    } else if constexpr (is_comparison(p)) {
      m[layout.slot[I]] = op_t<p>::number(get<static_cast<std::size_t>(e.in[0])>(v, like),
                                          get<static_cast<std::size_t>(e.in[1])>(v, like));
    } else if constexpr (p == Prim::integer_pow) {
      v[layout.slot[I]] = op::integer_pow::number(get<static_cast<std::size_t>(e.in[0])>(v, like),
                                                  static_cast<int>(static_cast<std::int64_t>(e.param)));
    } else if constexpr (arity(p) == 1) {
      v[layout.slot[I]] = op_t<p>::number(get<static_cast<std::size_t>(e.in[0])>(v, like));
    } else {
      v[layout.slot[I]] = op_t<p>::number(get<static_cast<std::size_t>(e.in[0])>(v, like),
                                          get<static_cast<std::size_t>(e.in[1])>(v, like));
    }
  }

  template <std::size_t K, class S, class M>
  [[gnu::always_inline]] static inline S output(const S* v, const M* m, const S& like) {
    constexpr std::size_t o = static_cast<std::size_t>(P.outs[K]);
    if constexpr (is_comparison(P.eqns[o].prim))
      return S(op::select::number(m[layout.slot[o]], detail::broadcast<S>(1, like),
                                  detail::broadcast<S>(0, like)));
    else
      return get<o>(v, like);
  }
};

}  // namespace xpr::ct
