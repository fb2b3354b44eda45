// SPDX-License-Identifier: MIT
// The evaluator: a frozen program (a template argument, by reference to its constexpr variable)
// instantiated as straight-line code, generic over the scalar type (float, double, xsimd batches,
// Eigen arrays). Each equation computes `Op::number`, the operation's meaning on plain numbers.
#pragma once

#include <bit>
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

/// One equation as the evaluator reads it: the primitive and the slots of its result and
/// operands in the value array (or, for comparisons, the mask array). Literals take a value slot
/// too, filled by a broadcast, so every operand is a plain array read.
struct Step {
  Prim prim = Prim::arg;
  int out = 0, a = 0, b = 0, c = 0;
  std::int64_t param = 0;
};

template <std::size_t N>
struct Layout {
  Step steps[N > 0 ? N : 1] = {};
  int num_values = 0;
  int num_masks = 0;
};

template <class P>
constexpr auto make_layout(const P& p) {
  Layout<P::num_eqns> l;
  int slot[P::num_eqns > 0 ? P::num_eqns : 1] = {};
  for (std::size_t i = 0; i < P::num_eqns; ++i) {
    const Eqn& e = p.eqns[i];
    slot[i] = is_comparison(e.prim) ? l.num_masks++ : l.num_values++;
    Step& s = l.steps[i];
    s.prim = e.prim;
    s.out = slot[i];
    int* operands[3] = {&s.a, &s.b, &s.c};
    for (int k = 0; k < arity(e.prim); ++k) *operands[k] = slot[e.in[k]];
    s.param = static_cast<std::int64_t>(e.param);
  }
  return l;
}

inline constexpr std::size_t block_size = 64;    // equations per fold expression
inline constexpr std::size_t chunk_size = 128;   // equations per out-of-line function
inline constexpr std::size_t inline_limit = 1024; // larger programs are split into chunks
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
    inputs(v, in, std::make_index_sequence<num_ins>{});
    const S& like = in[0];
    if constexpr (num_eqns <= detail::inline_limit)
      blocks<0>(v, m, like, std::make_index_sequence<num_blocks(num_eqns)>{});
    else
      chunks(v, m, like, std::make_index_sequence<(num_eqns + detail::chunk_size - 1) / detail::chunk_size>{});
    outputs(v, m, like, out, std::make_index_sequence<num_outs>{});
  }

 private:
  // Helpers are functions rather than lambdas: a lambda would not inherit always_inline, and
  // the value array must stay local to one function for the optimizer to keep it in registers.
  static constexpr std::size_t num_blocks(std::size_t n) {
    return (n + detail::block_size - 1) / detail::block_size;
  }

  template <std::size_t First, class S, class M, std::size_t... B>
  [[gnu::always_inline]] static inline void blocks(S* v, M* m, const S& like, std::index_sequence<B...>) {
    (block<First + B * detail::block_size>(
         v, m, like, std::make_index_sequence<block_length(First + B * detail::block_size)>{}),
     ...);
  }

  template <class S, class M, std::size_t... C>
  [[gnu::always_inline]] static inline void chunks(S* v, M* m, const S& like, std::index_sequence<C...>) {
    (chunk<C>(v, m, like), ...);
  }

  template <std::size_t C, class S, class M>
  [[gnu::noinline]] static void chunk(S* v, M* m, const S& like) {
    constexpr std::size_t first = C * detail::chunk_size;
    constexpr std::size_t last = first + detail::chunk_size < num_eqns ? first + detail::chunk_size : num_eqns;
    blocks<first>(v, m, like, std::make_index_sequence<num_blocks(last - first)>{});
  }

  static constexpr std::size_t block_length(std::size_t first) {
    if (first >= num_eqns) return 0;
    return num_eqns - first < detail::block_size ? num_eqns - first : detail::block_size;
  }

  template <std::size_t First, class S, class M, std::size_t... I>
  [[gnu::always_inline]] static inline void block(S* v, M* m, const S& like, std::index_sequence<I...>) {
    (step<layout.steps[First + I].prim>(v, m, like, layout.steps[First + I]), ...);
  }

  template <class S, std::size_t... K>
  [[gnu::always_inline]] static inline void inputs(S* v, const S* in, std::index_sequence<K...>) {
    ((v[K] = in[K]), ...);
  }

  template <class S, class M, std::size_t... K>
  [[gnu::always_inline]] static inline void outputs(const S* v, const M* m, const S& like, S* out,
                                                    std::index_sequence<K...>) {
    ((out[K] = output<K>(v, m, like)), ...);
  }

  /// One equation: `Op::number` on its operands. Instantiated once per primitive; the slots
  /// are constants once inlined, so the value array dissolves into registers.
  template <Prim p, class S, class M>
  [[gnu::always_inline]] static inline void step(S* v, M* m, const S& like, const detail::Step& s) {
    // Operands are copied before the call: kernels take them by reference, and an address
    // taken inside the value array would keep the whole array in memory.
    if constexpr (p == Prim::arg) {
      // inputs are already in place
    } else if constexpr (p == Prim::lit) {
      v[s.out] = detail::broadcast<S>(std::bit_cast<double>(s.param), like);
    } else if constexpr (p == Prim::select) {
      const M c = m[s.a];
      const S on_false = v[s.b], on_true = v[s.c];
      v[s.out] = op::select::number(c, on_true, on_false);
    } else if constexpr (is_comparison(p)) {
      const S a = v[s.a], b = v[s.b];
      m[s.out] = op_t<p>::number(a, b);
    } else if constexpr (p == Prim::integer_pow) {
      const S a = v[s.a];
      v[s.out] = op::integer_pow::number(a, static_cast<int>(s.param));
    } else if constexpr (arity(p) == 1) {
      const S a = v[s.a];
      v[s.out] = op_t<p>::number(a);
    } else {
      const S a = v[s.a], b = v[s.b];
      v[s.out] = op_t<p>::number(a, b);
    }
  }

  template <std::size_t K, class S, class M>
  [[gnu::always_inline]] static inline S output(const S* v, const M* m, const S& like) {
    constexpr const detail::Step& s = layout.steps[P.outs[K]];
    if constexpr (is_comparison(s.prim))
      return S(op::select::number(m[s.out], detail::broadcast<S>(1, like),
                                  detail::broadcast<S>(0, like)));
    else
      return v[s.out];
  }
};

}  // namespace xpr::ct
