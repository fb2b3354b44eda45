// SPDX-License-Identifier: MIT
// The staging machinery behind the compile-time tier's transformations: `Transformed<F, X>` (a
// transformation X applied to a function F), the argument traits, the stages that build its
// jaxpr (each stage, trace, jvp, transpose, ..., its own constexpr variable, so each is a separate
// constant evaluation with its own budget), the calls (evaluated by `Compiled`, or replayed into
// an enclosing trace, which is how transformations compose) and the checks that turn misuse into
// one static_assert. The descriptors X are in ct/descriptors.hpp, the public API in ct/api.hpp.
#pragma once

#include <array>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "xpr/core/dtype.hpp"
#include "xpr/core/shape.hpp"
#include "xpr/ct/eval.hpp"
#include "xpr/ct/graph.hpp"
#include "xpr/ct/print.hpp"
#include "xpr/ct/rules.hpp"
#include "xpr/ct/trace.hpp"

namespace xpr::ct {

/// A transformation `X` applied to a function `F`: a captureless function object itself.
template <class F, class X>
struct Transformed;

namespace detail {

template <class T>
constexpr bool is_transformed = false;
template <class F, class X>
constexpr bool is_transformed<Transformed<F, X>> = true;

template <class T>
constexpr bool is_float_leaf = [] {
  if constexpr (Leaf<T> && !std::is_same_v<T, Tracer>) {
    using E = typename leaf_traits<T>::scalar;
    return std::is_same_v<E, float> || std::is_same_v<E, double>;
  } else {
    return false;
  }
}();

/// An argument the numeric path accepts: a structure of float/double leaves (or batches).
template <class T>
concept NumericArg = Structure<T> && is_float_leaf<typename Tree<T>::leaf>;
/// An argument of a traced call: tracers, or numbers mixed in.
template <class T>
concept TracedArg = Structure<T> &&(std::is_same_v<typename Tree<T>::leaf, Tracer> ||
                                    std::is_arithmetic_v<typename Tree<T>::leaf>);
template <class T>
concept HasTracer = Structure<T> && std::is_same_v<typename Tree<T>::leaf, Tracer>;
template <class T>
constexpr bool has_tracer = HasTracer<T>;

/// The scalar type one evaluation computes in: the common batch type, or float when every leaf
/// is float and double otherwise.
template <class... Args>
struct scalar_of {
  using leaves = std::tuple<typename Tree<Args>::leaf...>;
  static constexpr bool all_arith = (std::is_arithmetic_v<typename Tree<Args>::leaf> && ...);
  static constexpr bool all_float = (std::is_same_v<typename Tree<Args>::leaf, float> && ...);
  using first = std::tuple_element_t<0, leaves>;
  static constexpr bool uniform = (std::is_same_v<typename Tree<Args>::leaf, first> && ...);
  using type = std::conditional_t<all_arith, std::conditional_t<all_float, float, double>, first>;
};
template <class... Args>
using scalar_t = typename scalar_of<Args...>::type;

/// The dtype of every leaf of `Args...`, in order.
template <class... Args>
constexpr auto dtypes_of() {
  std::array<DType, (Tree<Args>::size + ... + 0)> d{};
  std::size_t k = 0;
  auto put = [&]<class A>(std::type_identity<A>) {
    for (std::size_t i = 0; i < Tree<A>::size; ++i)
      d[k++] = core::dtype_of<typename leaf_traits<typename Tree<A>::leaf>::scalar>();
  };
  (put(std::type_identity<Args>{}), ...);
  return d;
}

/// The argument position `argnum` names in a call with arguments `A...` (a negative one counts
/// from the end, as in JAX).
template <class... A>
constexpr std::size_t argnum_index(int argnum) {
  return static_cast<std::size_t>(core::canonicalize_argnum(argnum, sizeof...(A)));
}

/// The flat leaf positions of the arguments `argnums`.
template <class... A>
constexpr Buffer<int> argnum_leaves(std::initializer_list<int> argnums) {
  Buffer<int> w;
  for (int a : argnums)
    for (std::size_t i = leaf_offsets<A...>[argnum_index<A...>(a)];
         i < leaf_offsets<A...>[argnum_index<A...>(a) + 1]; ++i)
      w.push_back(static_cast<int>(i));
  return w;
}

template <std::size_t I, class... T>
using nth_t = std::tuple_element_t<I, std::tuple<T...>>;

template <class T>
struct first_and_rest;
template <class A, class B>
struct first_and_rest<std::pair<A, B>> {
  using first = A;
  using rest = B;
};
template <class A, class B>
struct first_and_rest<std::tuple<A, B>> {
  using first = A;
  using rest = B;
};

// ---------------------------------------------------------------------------------------------
// Staging: the frozen program of `Fn` called with arguments of traced types `A...` whose leaves
// have dtypes `D`. Stage K of a transformation thaws stage K-1 (stage 0 thaws the base
// function's program), rewrites it, and freezes it again in two passes (sizes, then values):
// every stage is a separate constant evaluation with its own operation budget.
// ---------------------------------------------------------------------------------------------
template <class Fn, class ArgTuple, auto D, int K>
constexpr Jaxpr build_stage();

template <class Fn, class ArgTuple, auto D, int K>
inline constexpr Sizes stage_sizes_v = frozen_sizes(build_stage<Fn, ArgTuple, D, K>());

template <class Fn, class ArgTuple, auto D>
constexpr int stage_count();

/// The sizes of the program stage K of `Fn` starts from.
template <class Fn, class ArgTuple, auto D, int K>
constexpr Sizes input_sizes();

// Room for a transformation stage's draft: generous, since a stage that does not fit is built
// again in two passes (the trace, whose size nothing bounds, always is).
template <class Fn, class ArgTuple, auto D, int K>
inline constexpr Sizes draft_room_v = [] {
  const Sizes in = input_sizes<Fn, ArgTuple, D, K>();
  return Sizes{8 * in.eqns + 256, 0, in.outs * (in.ins + 1) + in.ins + 16};
}();

template <class Fn, class ArgTuple, auto D, int K>
inline constexpr auto stage_draft_v =
    freeze_draft<draft_room_v<Fn, ArgTuple, D, K>.eqns, draft_room_v<Fn, ArgTuple, D, K>.outs>(
        build_stage<Fn, ArgTuple, D, K>());

/// The size of the innermost function of `Fn` (the one traced): the equations its trace
/// counted when it went over `max_traced_equations`, else its program's equations.
template <class Fn, class ArgTuple, auto D>
constexpr std::size_t traced_size() {
  if constexpr (!is_transformed<Fn>) {
    constexpr Sizes s = stage_sizes_v<Fn, ArgTuple, D, 0>;
    return s.too_large ? s.too_large : s.eqns;
  } else {
    return []<class... A>(std::tuple<A...>*) {
      using X = typename Fn::transform;
      return traced_size<typename Fn::base, typename X::template base_args<A...>,
                         X::base_dtypes(D)>();
    }(static_cast<ArgTuple*>(nullptr));
  }
}

/// Stops the compilation of a function larger than `limit` equations (the note under the
/// message shows the comparison with both numbers, "equations <= limit"). Checked where the
/// user's call is instantiated, so that the message comes with a short context.
template <std::size_t equations, std::size_t limit>
constexpr bool check_traced_size() {
  static_assert(equations <= limit,
                "xpr::ct: the function is too large for the compile-time tier: it has more "
                "equations than g++ can trace and transform within its constant-evaluation "
                "budget (the note below gives the count and the limit: "
                "xpr::ct::max_transformed_equations under a transformation, else "
                "xpr::ct::max_traced_equations). Ways out: write the repeated part as a small "
                "kernel and apply it with xpr::ct::vmap over arrays (e.g. one pair interaction "
                "instead of a loop over all pairs), or use the runtime tier (xpr::grad, "
                "xpr::jit), which has no size limit");
  return equations <= limit;
}

template <class Fn, class ArgTuple, auto D, int K>
constexpr auto make_stage() {
  if constexpr (is_transformed<Fn>) {
    if constexpr (stage_draft_v<Fn, ArgTuple, D, K>.fits)
      return from_draft<stage_draft_v<Fn, ArgTuple, D, K>.sizes>(stage_draft_v<Fn, ArgTuple, D, K>);
    else
      return freeze<stage_sizes_v<Fn, ArgTuple, D, K>>(build_stage<Fn, ArgTuple, D, K>());
  } else {
    if constexpr (stage_sizes_v<Fn, ArgTuple, D, K>.too_large) {
      // Over the cap: checked_program reports it; a stub of the right sizes (inputs, then zero
      // literals) stands in, without tracing again, so that nothing else fails.
      constexpr Sizes s = stage_sizes_v<Fn, ArgTuple, D, K>;
      Program<s.eqns, s.ins, s.outs> p{};
      for (std::size_t i = 0; i < s.eqns; ++i)
        p.eqns[i] = i < s.ins ? Eqn{Prim::arg, D[i], false, {-1, -1, -1}, 0} : Eqn{};
      for (std::size_t k = 0; k < s.outs; ++k) p.outs[k] = static_cast<int>(s.ins);
      return p;
    } else {
      return freeze<stage_sizes_v<Fn, ArgTuple, D, K>>(build_stage<Fn, ArgTuple, D, K>());
    }
  }
}

template <class Fn, class ArgTuple, auto D, int K>
inline constexpr auto stage_v = make_stage<Fn, ArgTuple, D, K>();

template <class Fn, class ArgTuple, auto D, int K>
constexpr Sizes input_sizes() {
  using P = std::remove_cvref_t<decltype([] {
    if constexpr (K > 0) {
      return stage_v<Fn, ArgTuple, D, K - 1>;
    } else {
      return []<class... A>(std::tuple<A...>*) {
        using X = typename Fn::transform;
        using BaseArgs = typename X::template base_args<A...>;
        constexpr auto base_dtypes = X::base_dtypes(D);
        return stage_v<typename Fn::base, BaseArgs, base_dtypes,
                       stage_count<typename Fn::base, BaseArgs, base_dtypes>() - 1>;
      }(static_cast<ArgTuple*>(nullptr));
    }
  }())>;
  return Sizes{P::num_eqns, P::num_ins, P::num_outs};
}

/// How many stages (constant evaluations) `Fn` takes: a transformation's fixed `num_stages`, or
/// as many as its `stage_count` asks for given the size of the program it transforms, so that
/// work growing with the program is split across evaluations.
template <class Fn, class ArgTuple, auto D>
constexpr int stage_count() {
  if constexpr (!is_transformed<Fn>) {
    return 1;
  } else {
    using X = typename Fn::transform;
    return []<class... A>(std::tuple<A...>*) {
      if constexpr (requires { X::template stage_count<A...>(std::size_t{}); }) {
        using BaseArgs = typename X::template base_args<A...>;
        constexpr auto base_dtypes = X::base_dtypes(D);
        using Base = std::remove_cvref_t<
            decltype(stage_v<typename Fn::base, BaseArgs, base_dtypes,
                             stage_count<typename Fn::base, BaseArgs, base_dtypes>() - 1>)>;
        return X::template stage_count<A...>(Base::num_eqns);
      } else {
        return X::num_stages;
      }
    }(static_cast<ArgTuple*>(nullptr));
  }
}

template <class Fn, class ArgTuple, auto D>
inline constexpr int stage_count_v = stage_count<Fn, ArgTuple, D>();

template <class Fn, class ArgTuple, auto D>
inline constexpr const auto& program_v =
    stage_v<Fn, ArgTuple, D, stage_count_v<Fn, ArgTuple, D> - 1>;

template <class Fn, auto D, int K, class... A>
constexpr Jaxpr build_stage_impl(std::tuple<A...>*) {
  if constexpr (!is_transformed<Fn>) {
    return trace<Fn, A...>(D.data());
  } else {
    using X = typename Fn::transform;
    Jaxpr j = [] {
      if constexpr (K == 0) {
        using BaseArgs = typename X::template base_args<A...>;
        constexpr auto base_dtypes = X::base_dtypes(D);
        return thaw(program_v<typename Fn::base, BaseArgs, base_dtypes>);
      } else {
        return thaw(stage_v<Fn, std::tuple<A...>, D, K - 1>);
      }
    }();
    X::template stage<K, A...>(j, stage_count_v<Fn, std::tuple<A...>, D>);
    return j;
  }
}

template <class Fn, class ArgTuple, auto D, int K>
constexpr Jaxpr build_stage() {
  return build_stage_impl<Fn, D, K>(static_cast<ArgTuple*>(nullptr));
}

/// All stages at once on a live jaxpr (the traced path: dtypes are data here, not types).
template <class Fn, class... A>
constexpr Jaxpr build_live(const DType* d);

template <class Fn, class... B>
constexpr Jaxpr build_live_tuple(std::tuple<B...>*, const DType* d) {
  return build_live<Fn, B...>(d);
}

template <class Fn, class... A>
constexpr Jaxpr build_live(const DType* d) {
  if constexpr (!is_transformed<Fn>) {
    Jaxpr j = trace<Fn, A...>(d);
    if (j.too_large)
      fail(
          "xpr::ct: the function is too large for the compile-time tier: its trace has more "
          "equations than xpr::ct::max_traced_equations. Ways out: a small kernel applied with "
          "xpr::ct::vmap, or the runtime tier (xpr::grad, xpr::jit)");
    return j;
  } else {
    using X = typename Fn::transform;
    constexpr std::size_t n = (Tree<A>::size + ... + 0);
    std::array<DType, n> dn{};
    for (std::size_t k = 0; k < n; ++k) dn[k] = d[k];
    auto bd = X::base_dtypes(dn);
    Jaxpr j = build_live_tuple<typename Fn::base>(
        static_cast<typename X::template base_args<A...>*>(nullptr), bd.data());
    [&]<int... K>(std::integer_sequence<int, K...>) {
      (X::template stage<K, A...>(j, X::num_stages), ...);
    }
    (std::make_integer_sequence<int, X::num_stages>{});
    return j;
  }
}

/// The traced result type of `F` called with the types of the tuple `Args`.
template <class F, class Args>
struct traced_result_of;
template <class F, class... A>
requires(!is_transformed<F>) struct traced_result_of<F, std::tuple<A...>> {
  using type = traced_result_t<F, A...>;
};
template <class F, class... A>
requires is_transformed<F>
struct traced_result_of<F, std::tuple<A...>> {
  using type = typename F::template result<Tracer, A...>;
};
template <class F, class Args>
using traced_result_t_of = typename traced_result_of<F, Args>::type;

template <class Fn, class... Args>
inline constexpr auto program_key_dtypes = dtypes_of<Args...>();

/// The program of `Fn` for numeric arguments `Args...`, once its trace is known to fit: every
/// use of a program (calls, vmap, compiled_t, make_jaxpr) comes through here, where the
/// instantiation context is short, so a function too large stops in one clear static_assert.
template <class Fn, class... Args>
constexpr const auto& checked_program() {
  using ArgTuple = std::tuple<traced_t<Args>...>;
  constexpr auto& d = program_key_dtypes<Fn, Args...>;
  check_traced_size<traced_size<Fn, ArgTuple, d>(),
                    is_transformed<Fn> ? max_transformed_equations : max_traced_equations>();
  return program_v<Fn, ArgTuple, d>;
}

/// The program of `Fn` for a call with numeric arguments `Args...`.
template <class Fn, class... Args>
inline constexpr const auto& program_for = checked_program<Fn, Args...>();

// ---------------------------------------------------------------------------------------------
// Calls.
// ---------------------------------------------------------------------------------------------
// Inlined into the caller's loop, so that the whole evaluation is one basic block there.
template <class Fn, class... Args>
[[gnu::always_inline]] inline auto call_numbers(const Args&... args) {
  using S = scalar_t<Args...>;
  using C = Compiled<program_for<Fn, Args...>>;
  constexpr auto offsets = leaf_offsets<Args...>;
  S in[offsets.back() > 0 ? offsets.back() : 1];
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (Tree<Args>::flatten(args, in + offsets[I]), ...);
  }
  (std::index_sequence_for<Args...>{});
  S out[C::num_outs];
  C::run(in, out);
  using R = typename Fn::template result<S, Args...>;
  return Tree<R>::template unflatten<S>(out);
}

template <class Fn, class... Args>
constexpr auto call_traced(const Args&... args) {
  constexpr auto offsets = leaf_offsets<Args...>;
  constexpr std::size_t n = offsets.back();
  Tracer leaves[n > 0 ? n : 1];
  DType d[n > 0 ? n : 1] = {};
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (Tree<Args>::flatten(args, leaves + offsets[I]), ...);
  }
  (std::index_sequence_for<Args...>{});
  for (std::size_t k = 0; k < n; ++k) d[k] = leaves[k].dtype();
  Jaxpr j = build_live<Fn, traced_t<Args>...>(d);
  Buffer<Tracer> outs = inline_jaxpr(j, leaves);
  using R = typename Fn::template result<Tracer, traced_t<Args>...>;
  return Tree<R>::template unflatten<Tracer>(outs.begin());
}

template <class F>
constexpr bool check_function() {
  static_assert(std::is_empty_v<F> && std::is_default_constructible_v<F>,
                "xpr::ct: the function must be a captureless lambda (or an empty, default-"
                "constructible function object): it is traced at compile time, where run-time "
                "values do not exist. Pass a captured value as an extra, non-differentiated "
                "argument instead: xpr::ct::grad<0>([](auto x, auto p) { ... })(x, p)");
  return std::is_empty_v<F> && std::is_default_constructible_v<F>;
}

template <class... Args>
constexpr bool check_args() {
  constexpr bool traced = (has_tracer<Args> || ...);
  if constexpr (traced) {
    static_assert((TracedArg<Args> && ...),
                  "xpr::ct: unsupported argument type in a traced call: pass tracers, "
                  "std::array of tracers, or C++ numbers");
  } else {
    static_assert((NumericArg<Args> && ...),
                  "xpr::ct: unsupported argument type. xpr::ct takes float, double, xsimd "
                  "batches of them, std::array<float|double, N> and Eigen fixed-size vectors "
                  "(include xpr/interop/eigen.hpp); convert integers to double; for sizes known "
                  "only at run time use the runtime tier (xpr::grad)");
    if constexpr ((NumericArg<Args> && ...)) {
      static_assert(scalar_of<Args...>::all_arith || scalar_of<Args...>::uniform,
                    "xpr::ct: all arguments of one call must use the same SIMD batch type");
    }
  }
  return (NumericArg<Args> && ...) || (traced && (TracedArg<Args> && ...));
}

/// Whether `F` can be called with as many scalar arguments as `I...` has.
template <class F, std::size_t... I>
constexpr bool invocable_with_tracers(std::index_sequence<I...>) {
  return std::is_invocable_v<const F&, std::conditional_t<true, const Tracer&, decltype(I)>...>;
}

/// The number of scalar arguments `F` takes (the first of 0..8 that works), or -1.
template <class F, std::size_t... N>
constexpr int tracer_arity(std::index_sequence<N...>) {
  constexpr bool works[] = {invocable_with_tracers<F>(std::make_index_sequence<N>{})...};
  for (std::size_t n = 0; n < sizeof...(N); ++n)
    if (works[n]) return static_cast<int>(n);
  return -1;
}

/// Fails when the function takes `expected` arguments and was called with `found` (the note
/// under the message, "expected == found", gives both numbers).
template <std::size_t expected, std::size_t found>
constexpr bool check_arity() {
  static_assert(expected == found,
                "xpr::ct: wrong number of arguments: the function takes `expected` arguments but "
                "the transformed function was called with `found` (both shown above and in the "
                "note below, expected == found). Pass one argument per parameter (argnums choose "
                "which are differentiated: xpr::ct::grad<0>(f)(x, p))");
  return expected == found;
}

template <class F, class... A>
constexpr bool check_callable() {
  if constexpr (std::is_invocable_v<const F&, const A&...>) {
    using R = std::invoke_result_t<const F&, const A&...>;
    static_assert(Structure<R>,
                  "xpr::ct: the function returns a type the compile-time tier does not take as a "
                  "result: return a traced value or number, or a std::array, std::tuple or "
                  "std::pair of them, or an Eigen fixed-size vector (not a std::vector: sizes "
                  "are part of the compiled program; the runtime tier, xpr::grad, takes them)");
    return Structure<R>;
  } else {
    constexpr int n = tracer_arity<F>(std::make_index_sequence<9>{});
    if constexpr (n >= 0 && static_cast<std::size_t>(n) != sizeof...(A)) {
      return check_arity<static_cast<std::size_t>(n), sizeof...(A)>();
    } else {
      static_assert(std::is_invocable_v<const F&, const A&...>,
                    "xpr::ct: the function cannot be called with traced arguments: write it as a "
                    "generic lambda (auto parameters) using xpr:: functions (xpr::sin, not "
                    "std::sin) and operators. Some xpr:: functions (xpr::round, xpr::isfinite, "
                    "the bitwise ones) exist only in the runtime tier (xpr::grad): the "
                    "compiler's 'no match for call' error above names the call");
      return false;
    }
  }
}

template <std::size_t N, int... Argnums>
constexpr bool check_argnums() {
  constexpr bool in_range =
      ((Argnums >= -static_cast<int>(N) && Argnums < static_cast<int>(N)) && ...);
  static_assert(in_range,
                "xpr::ct: an argnum is out of range: each must be less than the number of "
                "arguments the function is called with, and at least minus that number "
                "(negative ones count from the end)");
  constexpr bool valid = core::argnums_valid<N>(
      core::canonicalize_argnums<N>(std::array<int, sizeof...(Argnums)>{Argnums...}));
  static_assert(!in_range || valid,
                "xpr::ct: an argument is named twice in argnums (grad<0, 0>, or grad<1, -1> of "
                "two arguments): name each argument once");
  return valid;
}

}  // namespace detail

template <class F, class X>
struct Transformed {
  using base = F;
  using transform = X;

  /// The result structure with leaves of type L, for a call with arguments `Args...` (numbers
  /// or traced structures).
  template <class L, class... Args>
  using result = typename X::template result<
      L, detail::traced_result_t_of<F, typename X::template base_args<traced_t<Args>...>>, Args...>;

  template <class... Args>
  [[gnu::always_inline]] constexpr auto operator()(const Args&... args) const {
    // Each check stops here with its static_assert, before anything else fails less clearly.
    if constexpr (!detail::check_function<F>() || !detail::check_args<Args...>()) {
      return;
    } else if constexpr (!X::template check<F, traced_t<Args>...>()) {
      return;
    } else if constexpr ((detail::has_tracer<Args> || ...)) {
      return detail::call_traced<Transformed>(args...);
    } else {
      return detail::call_numbers<Transformed>(args...);
    }
  }
};

}  // namespace xpr::ct
