// SPDX-License-Identifier: MIT
// The evaluator: a frozen program (a template argument, by reference to its constexpr variable)
// instantiated as straight-line code, generic over the scalar type (float, double, xsimd batches,
// Eigen arrays). Each equation computes `Op::number`, the operation's meaning on plain numbers.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "xpr/core/ops.hpp"
#include "xpr/ct/graph.hpp"

namespace xpr::ct {

namespace detail {
/// The comparison result type of scalar S: bool, an xsimd batch_bool, an Eigen bool array.
template <class S>
using mask_t =
    decltype(op::detail::plain(op::lt::number(std::declval<const S&>(), std::declval<const S&>())));

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

/// One step of the evaluation as the evaluator reads it: an equation (the primitive and the
/// slots of its result and operands in the value array, or for comparisons the mask array), the
/// load of an input (`arg`, `param` = the input's position), or the store of an output (`store`,
/// `a` = the slot, `param` = the output's position, `prim` = the primitive that computed it).
/// Literals take a value slot too, filled by a broadcast, so every operand is a plain array read.
/// `mask`: the value is a bool, held in the mask array (a comparison, or a bool input such as a
/// predicate a linear jaxpr receives among its residuals, loaded as `x != 0`).
struct Step {
  Prim prim = Prim::arg;
  bool store = false;
  bool mask = false;
  int out = 0, a = 0, b = 0, c = 0;
  std::int64_t param = 0;
};

template <std::size_t N>
struct Layout {
  Step steps[N > 0 ? N : 1] = {};
  int num_steps = 0;
  int num_values = 0;
  int num_masks = 0;
};

/// Whether the evaluator holds `e`'s value in the mask array: a comparison or a bool input.
/// (Two statements: GCC 12 folds `prim == arg && dtype == bool_`, adjacent bytes, into one
/// bit-field test that its constant evaluator then fails on.)
constexpr bool held_as_mask(const Eqn& e) {
  if (is_comparison(e.prim)) return true;
  if (e.prim != Prim::arg) return false;
  return e.dtype == DType::bool_;
}

// The schedule: the inputs, then the equations in the depth-first post-order of the outputs,
// each output stored as soon as it is computed. The program's own order is the order the
// transformations wrote, a reverse sweep after the whole forward sweep, so every residual is
// live across the program and large gradients spill; and GCC keeps the order it is given on
// x86 (no register-pressure scheduling before register allocation). Post-order puts each value
// just before its first use, as a person writes the code by hand. Inputs are all read first:
// a store into an output array followed by a load from an input array whose address agrees in
// its low 12 bits (arrays a power-of-two apart) stalls on a false dependence; and with every
// input read before any output is written, an output may be an input (in place).
template <class P>
constexpr auto make_layout(const P& p) {
  constexpr std::size_t ne = P::num_eqns, no = P::num_outs;
  Layout<ne + no> l;
  int slot[ne > 0 ? ne : 1] = {};
  bool done[ne > 0 ? ne : 1] = {};
  // The explicit stack of the depth-first walk: an equation and how many operands it has visited.
  int stack[ne > 0 ? ne : 1] = {};
  int next[ne > 0 ? ne : 1] = {};
  auto emit = [&](int i) {
    const Eqn& e = p.eqns[i];
    const bool mask = held_as_mask(e);
    slot[i] = mask ? l.num_masks++ : l.num_values++;
    Step& s = l.steps[l.num_steps++];
    s.prim = e.prim;
    s.mask = mask;
    s.out = slot[i];
    int* operands[3] = {&s.a, &s.b, &s.c};
    for (int k = 0; k < arity(e.prim); ++k) *operands[k] = slot[e.in[k]];
    s.param = e.prim == Prim::arg ? i : static_cast<std::int64_t>(e.param);
    done[i] = true;
  };
  for (std::size_t i = 0; i < P::num_ins; ++i) emit(static_cast<int>(i));
  for (std::size_t o = 0; o < no; ++o) {
    const int root = p.outs[o];
    if (!done[root]) {
      int depth = 0;
      stack[depth] = root;
      next[depth++] = 0;
      while (depth > 0) {
        const int i = stack[depth - 1];
        const Eqn& e = p.eqns[i];
        if (next[depth - 1] < arity(e.prim)) {
          const int operand = e.in[next[depth - 1]++];
          if (!done[operand]) {
            stack[depth] = operand;
            next[depth++] = 0;
          }
        } else {
          emit(i);
          --depth;
        }
      }
    }
    Step& s = l.steps[l.num_steps++];
    s.prim = p.eqns[root].prim;
    s.store = true;
    s.mask = held_as_mask(p.eqns[root]);
    s.a = slot[root];
    s.param = static_cast<std::int64_t>(o);
  }
  return l;
}

inline constexpr std::size_t block_size = 64;      // steps per fold expression
inline constexpr std::size_t chunk_size = 128;     // steps per out-of-line function
inline constexpr std::size_t inline_limit = 1024;  // larger programs are split into chunks

/// Reads inputs from and writes outputs to flat arrays.
template <class S>
struct ArrayIo {
  const S* in;
  S* out;
  [[gnu::always_inline]] S load(std::size_t k) const { return in[k]; }
  [[gnu::always_inline]] void store(std::size_t k, const S& v) const { out[k] = v; }
};
}  // namespace detail

/// A frozen program `P` as straight-line code. `run(in, out)` evaluates it on arrays of a scalar
/// type S: `num_ins` inputs, `num_outs` outputs. `run_io(io, like)` reads every input k first,
/// as `io.load(k)`, and writes output k by `io.store(k, value)` as soon as it is computed
/// (`like`: any value of S, which gives literals their size when S is an Eigen array), so a
/// loop over arrays keeps only live values in registers.
template <const auto& P>
class Compiled {
  using Program = std::remove_cvref_t<decltype(P)>;
  static constexpr auto layout = detail::make_layout(P);
  static constexpr std::size_t num_steps = static_cast<std::size_t>(layout.num_steps);

 public:
  static constexpr std::size_t num_eqns = Program::num_eqns;
  static constexpr std::size_t num_ins = Program::num_ins;
  static constexpr std::size_t num_outs = Program::num_outs;

  template <class S>
  [[gnu::always_inline]] static inline void run(const S* in, S* out) {
    // Dynamic Eigen arrays as the scalar type: every input (argument, tangent, cotangent,
    // residual) is one lane per element, so all must have one length (Eigen would assert, or
    // read past the shorter one under NDEBUG).
    if constexpr (requires(const S& s) {
                    s.derived();
                    s.size();
                  })
      for (std::size_t k = 1; k < num_ins; ++k)
        if (in[k].size() != in[0].size())
          throw core::shape_error(
              "xpr::ct: the Eigen arrays given as arguments (and tangents or cotangents) must "
              "all have one length; found lengths " +
              std::to_string(in[0].size()) + " and " + std::to_string(in[k].size()));
    run_io(detail::ArrayIo<S>{in, out}, in[0]);
  }

  template <class S, class Io>
  [[gnu::always_inline]] static inline void run_io(const Io& io, const S& like) {
    using M = detail::mask_t<S>;
    S v[layout.num_values > 0 ? layout.num_values : 1];
    M m[layout.num_masks > 0 ? layout.num_masks : 1];
    if constexpr (num_steps <= detail::inline_limit)
      blocks<0>(v, m, like, io, std::make_index_sequence<num_blocks(num_steps)>{});
    else
      chunks(v, m, like, io,
             std::make_index_sequence<(num_steps + detail::chunk_size - 1) / detail::chunk_size>{});
  }

 private:
  // Helpers are functions rather than lambdas: a lambda would not inherit always_inline, and
  // the value array must stay local to one function for the optimizer to keep it in registers.
  static constexpr std::size_t num_blocks(std::size_t n) {
    return (n + detail::block_size - 1) / detail::block_size;
  }

  template <std::size_t First, class S, class M, class Io, std::size_t... B>
  [[gnu::always_inline]] static inline void blocks(S* v, M* m, const S& like, const Io& io,
                                                   std::index_sequence<B...>) {
    (block<First + B * detail::block_size>(
         v, m, like, io, std::make_index_sequence<block_length(First + B * detail::block_size)>{}),
     ...);
  }

  template <class S, class M, class Io, std::size_t... C>
  [[gnu::always_inline]] static inline void chunks(S* v, M* m, const S& like, const Io& io,
                                                   std::index_sequence<C...>) {
    (chunk<C>(v, m, like, io), ...);
  }

  template <std::size_t C, class S, class M, class Io>
  [[gnu::noinline]] static void chunk(S* v, M* m, const S& like, const Io& io) {
    constexpr std::size_t first = C * detail::chunk_size;
    constexpr std::size_t last =
        first + detail::chunk_size < num_steps ? first + detail::chunk_size : num_steps;
    blocks<first>(v, m, like, io, std::make_index_sequence<num_blocks(last - first)>{});
  }

  static constexpr std::size_t block_length(std::size_t first) {
    if (first >= num_steps) return 0;
    return num_steps - first < detail::block_size ? num_steps - first : detail::block_size;
  }

  template <std::size_t First, class S, class M, class Io, std::size_t... I>
  [[gnu::always_inline]] static inline void block(S* v, M* m, const S& like, const Io& io,
                                                  std::index_sequence<I...>) {
    (step<layout.steps[First + I].prim, layout.steps[First + I].store>(v, m, like, io,
                                                                       layout.steps[First + I]),
     ...);
  }

  /// One step: `Op::number` on its operands, a load or a store. Instantiated once per primitive;
  /// the slots are constants once inlined, so the value array dissolves into registers.
  template <Prim p, bool Store, class S, class M, class Io>
  [[gnu::always_inline]] static inline void step(S* v, M* m, const S& like, const Io& io,
                                                 const detail::Step& s) {
    (void)like;
    // Operands are copied before the call: kernels take them by reference, and an address
    // taken inside the value array would keep the whole array in memory.
    if constexpr (Store) {
      const auto k = static_cast<std::size_t>(s.param);
      if constexpr (is_comparison(p) || p == Prim::arg) {
        if (s.mask) {  // a constant once inlined
          const M c = m[s.a];
          io.store(k, S(op::select::number(c, detail::broadcast<S>(1, like),
                                           detail::broadcast<S>(0, like))));
          return;
        }
      }
      if constexpr (!is_comparison(p)) io.store(k, v[s.a]);
    } else if constexpr (p == Prim::arg) {
      const S x = io.load(static_cast<std::size_t>(s.param));
      if (s.mask)  // a constant once inlined
        m[s.out] = op::ne::number(x, detail::broadcast<S>(0, like));
      else
        v[s.out] = x;
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
      v[s.out] = op::integer_pow::number(a, s.param);
    } else if constexpr (arity(p) == 1) {
      const S a = v[s.a];
      v[s.out] = op_t<p>::number(a);
    } else {
      const S a = v[s.a], b = v[s.b];
      v[s.out] = op_t<p>::number(a, b);
    }
  }
};

}  // namespace xpr::ct
