// SPDX-License-Identifier: MIT
// The compile-time tier's transformations as users call them: grad, value_and_grad, jvp,
// linearize, vjp, jacfwd, jacrev, hessian, make_jaxpr. Each returns a function object whose
// jaxpr is built stage by stage, each stage (trace, jvp, transpose, ...) its own constexpr
// variable, and evaluated by `Compiled`; called with tracers, it replays its jaxpr into the
// enclosing trace instead, which is how transformations compose.
#pragma once

#include <array>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "xpr/core/dtype.hpp"
#include "xpr/ct/eval.hpp"
#include "xpr/ct/graph.hpp"
#include "xpr/ct/print.hpp"
#include "xpr/ct/trace.hpp"
#include "xpr/ct/tracer.hpp"
#include "xpr/ct/transforms.hpp"

namespace xpr::ct {

/// Tag for `grad(f, has_aux)` and `value_and_grad(f, has_aux)`: `f` returns a pair (value, aux)
/// and only the value is differentiated (JAX's `has_aux=True`).
struct has_aux_t {
  explicit constexpr has_aux_t() = default;
};
inline constexpr has_aux_t has_aux{};

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
concept TracedArg =
    Structure<T> && (std::is_same_v<typename Tree<T>::leaf, Tracer> || std::is_arithmetic_v<typename Tree<T>::leaf>);
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

/// The flat leaf positions of the arguments `argnums`.
template <class... A>
constexpr Buffer<int> argnum_leaves(std::initializer_list<int> argnums) {
  Buffer<int> w;
  for (int a : argnums)
    for (std::size_t i = leaf_offsets<A...>[static_cast<std::size_t>(a)];
         i < leaf_offsets<A...>[static_cast<std::size_t>(a) + 1]; ++i)
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
        using Base = std::remove_cvref_t<decltype(stage_v<typename Fn::base, BaseArgs, base_dtypes,
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
inline constexpr const auto& program_v = stage_v<Fn, ArgTuple, D, stage_count_v<Fn, ArgTuple, D> - 1>;

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
    }(std::make_integer_sequence<int, X::num_stages>{});
    return j;
  }
}

/// The traced result type of `F` called with the types of the tuple `Args`.
template <class F, class Args>
struct traced_result_of;
template <class F, class... A>
  requires(!is_transformed<F>)
struct traced_result_of<F, std::tuple<A...>> {
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
  }(std::index_sequence_for<Args...>{});
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
  }(std::index_sequence_for<Args...>{});
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
    return true;
  } else {
    constexpr int n = tracer_arity<F>(std::make_index_sequence<9>{});
    if constexpr (n >= 0 && static_cast<std::size_t>(n) != sizeof...(A)) {
      return check_arity<static_cast<std::size_t>(n), sizeof...(A)>();
    } else {
      static_assert(std::is_invocable_v<const F&, const A&...>,
                    "xpr::ct: the function cannot be called with traced arguments: write it as a "
                    "generic lambda (auto parameters) using xpr:: functions (xpr::sin, not "
                    "std::sin) and operators");
      return false;
    }
  }
}

template <std::size_t N, int... Argnums>
constexpr bool check_argnums() {
  static_assert(((Argnums >= 0 && static_cast<std::size_t>(Argnums) < N) && ...),
                "xpr::ct: an argnum is out of range: each must be at least 0 and less than the "
                "number of arguments the function is called with");
  return ((Argnums >= 0 && static_cast<std::size_t>(Argnums) < N) && ...);
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

// ---------------------------------------------------------------------------------------------
// The transformations. Each is a descriptor X: its stages (jaxpr rewrites), the base function's
// arguments, the result structure, and the checks that turn misuse into a static_assert.
// ---------------------------------------------------------------------------------------------
namespace detail {

/// Arguments and dtypes passed through unchanged.
struct same_args {
  template <class... A>
  using base_args = std::tuple<A...>;
  template <std::size_t N>
  static constexpr std::array<DType, N> base_dtypes(const std::array<DType, N>& d) {
    return d;
  }
};

/// The gradients' structure: the argument's own for one argnum, a tuple of them for several.
template <class L, class ArgTuple, int... Argnums>
struct grads_of;
template <class L, class... A, int Argnum>
struct grads_of<L, std::tuple<A...>, Argnum> {
  using type = typename Tree<nth_t<static_cast<std::size_t>(Argnum), A...>>::template rebind<L>;
};
template <class L, class... A, int... Argnums>
  requires(sizeof...(Argnums) > 1)
struct grads_of<L, std::tuple<A...>, Argnums...> {
  using type =
      std::tuple<typename Tree<nth_t<static_cast<std::size_t>(Argnums), A...>>::template rebind<L>...>;
};

/// grad and value_and_grad: a jvp stage, then a transpose stage seeded with a literal one.
template <bool Value, bool Aux, int... Argnums>
struct GradX : same_args {
  static constexpr int num_stages = 2;

  template <int K, class... A>
  static constexpr void stage(Jaxpr& j, [[maybe_unused]] int num_stages_here) {
    Buffer<int> which = argnum_leaves<A...>({Argnums...});
    if constexpr (K == 0) {
      jvp_jaxpr(j, which, 1, /*preaccumulate=*/true);
    } else {
      transpose_jaxpr(j, which.size(), 1, false);
      // outs: y, aux..., grads...; keep what this variant returns.
      const std::size_t ng = which.size(), na = j.outs.size() - ng - 1;
      Buffer<int> outs;
      if (Value) outs.push_back(j.outs[0]);
      if (Value && Aux)
        for (std::size_t k = 0; k < na; ++k) outs.push_back(j.outs[1 + k]);
      for (std::size_t k = 0; k < ng; ++k) outs.push_back(j.outs[1 + na + k]);
      if (!Value && Aux)
        for (std::size_t k = 0; k < na; ++k) outs.push_back(j.outs[1 + k]);
      j.outs = static_cast<Buffer<int>&&>(outs);
    }
  }

  template <class L, class R, class... Args>
  struct result_of {
    using G = typename grads_of<L, std::tuple<Args...>, Argnums...>::type;
    using type = std::conditional_t<Value, std::pair<L, G>, G>;
  };
  template <class L, class R, class... Args>
    requires Aux
  struct result_of<L, R, Args...> {
    using G = typename grads_of<L, std::tuple<Args...>, Argnums...>::type;
    using AuxT = typename Tree<typename first_and_rest<R>::rest>::template rebind<L>;
    using type = std::conditional_t<Value, std::pair<std::pair<L, AuxT>, G>, std::pair<G, AuxT>>;
  };
  template <class L, class R, class... Args>
  using result = typename result_of<L, R, Args...>::type;

  template <class F, class... A>
  static constexpr bool check() {
    if constexpr (!check_argnums<sizeof...(A), Argnums...>() || !check_callable<F, A...>()) {
      return false;
    } else {
      using R = traced_result_t_of<F, std::tuple<A...>>;
      if constexpr (Aux) {
        constexpr bool ok = requires { typename first_and_rest<R>::first; };
        static_assert(ok,
                      "xpr::ct::grad(f, has_aux): f must return a pair (value, aux): "
                      "std::pair or std::tuple of two elements");
        if constexpr (ok) {
          static_assert(Tree<typename first_and_rest<R>::first>::size == 1,
                        "xpr::ct::grad(f, has_aux): the value f returns first must be a "
                        "scalar; for vector outputs use xpr::ct::jacrev or xpr::ct::vjp");
          return Tree<typename first_and_rest<R>::first>::size == 1;
        }
        return ok;
      } else {
        static_assert(Structure<R> && Tree<R>::size == 1 && Leaf<R>,
                      "xpr::ct::grad: the function must return a scalar (with has_aux, a pair "
                      "(scalar, aux)); for vector outputs use xpr::ct::jacrev or xpr::ct::vjp");
        return Leaf<R>;
      }
    }
  }
};

/// jacfwd (one forward sweep per input leaf) and jacrev (one reverse sweep per output leaf).
template <bool Forward, int... Argnums>
struct JacX : same_args {
  static constexpr int num_stages = Forward ? 1 : 2;  // on a live jaxpr (a traced call)

  /// jacfwd runs one forward sweep per input leaf: when the program is large, a stage takes only
  /// some of the columns, so each constant evaluation stays within its operation budget.
  template <class... A>
  static constexpr int stage_count(std::size_t base_eqns) {
    if (!Forward) return 2;
    const std::size_t nw = argnum_leaves<A...>({Argnums...}).size();
    const std::size_t per_stage = std::size_t{4000} / (base_eqns + 1);  // columns of equations
    if (per_stage >= nw) return 1;
    return static_cast<int>(per_stage == 0 ? nw : (nw + per_stage - 1) / per_stage);
  }

  template <int K, class... A>
  static constexpr void stage(Jaxpr& j, [[maybe_unused]] int num_stages_here) {
    Buffer<int> which = argnum_leaves<A...>({Argnums...});
    const std::size_t m = j.outs.size();
    if constexpr (Forward) {
      // Stage K of n sweeps columns [K nw / n, (K + 1) nw / n); outs are y... then, column by
      // column, J[.][c]; the last stage reorders them row-major and drops y.
      const std::size_t nw = which.size(), n = static_cast<std::size_t>(num_stages_here);
      const std::size_t first = static_cast<std::size_t>(K) * nw / n;
      const std::size_t last = (static_cast<std::size_t>(K) + 1) * nw / n;
      const std::size_t ny = m / (first + 1);
      for (std::size_t c = first; c < last; ++c) jacfwd_column(j, which[c], ny);
      if (last < nw) return;
      Buffer<int> outs;
      for (std::size_t o = 0; o < ny; ++o)
        for (std::size_t c = 0; c < nw; ++c) outs.push_back(j.outs[ny + c * ny + o]);
      j.outs = static_cast<Buffer<int>&&>(outs);
      return;
    } else if constexpr (K == 0) {
      jvp_jaxpr(j, which, m, /*preaccumulate=*/true);
      return;
    } else {
      transpose_jaxpr(j, which.size(), m / 2, false);
    }
    // drop the primal outputs
    const std::size_t ny = Forward ? m : m / 2;
    Buffer<int> outs;
    for (std::size_t k = ny; k < j.outs.size(); ++k) outs.push_back(j.outs[k]);
    j.outs = static_cast<Buffer<int>&&>(outs);
  }

  template <class L, class Args>
  struct arg_shape;
  // grads_of, so that a single argnum is not summed out of several (both branches of a
  // std::conditional_t are formed: <0, 1, 2, 3> would name argument 6).
  template <class L, class... Args>
  struct arg_shape<L, std::tuple<Args...>> {
    using type = typename grads_of<L, std::tuple<Args...>, Argnums...>::type;
  };

  /// The output structure with each leaf replaced by the argument's structure.
  template <class L, class R, class... Args>
  using result = typename Tree<R>::template rebind<typename arg_shape<L, std::tuple<Args...>>::type>;

  template <class F, class... A>
  static constexpr bool check() {
    return check_argnums<sizeof...(A), Argnums...>() && check_callable<F, A...>();
  }
};

/// jvp: the function of (primals..., tangents...) giving (primal out, tangent out).
struct JvpX {
  static constexpr int num_stages = 1;

  template <class Seq, class... A>
  struct pick;
  template <std::size_t... I, class... A>
  struct pick<std::index_sequence<I...>, A...> {
    using type = std::tuple<nth_t<I, A...>...>;
  };
  template <std::size_t Offset, class Seq>
  struct shifted;
  template <std::size_t Offset, std::size_t... I>
  struct shifted<Offset, std::index_sequence<I...>> {
    using type = std::index_sequence<Offset + I...>;
  };
  template <class... A>
  struct half {
    using type = typename pick<std::make_index_sequence<sizeof...(A) / 2>, A...>::type;
  };
  template <class... A>
  struct second_half {
    using type = typename pick<
        typename shifted<sizeof...(A) / 2, std::make_index_sequence<sizeof...(A) / 2>>::type,
        A...>::type;
  };
  template <class... A>
  using base_args = typename half<A...>::type;
  template <std::size_t N>
  static constexpr std::array<DType, N / 2> base_dtypes(const std::array<DType, N>& d) {
    std::array<DType, N / 2> b{};
    for (std::size_t k = 0; k < N / 2; ++k) b[k] = d[k];
    return b;
  }

  template <int K, class... A>
  static constexpr void stage(Jaxpr& j, [[maybe_unused]] int num_stages_here) {
    Buffer<int> which;
    for (std::size_t k = 0; k < j.ins.size(); ++k) which.push_back(static_cast<int>(k));
    jvp_jaxpr(j, which, j.outs.size());
  }

  template <class L, class R, class... Args>
  using result = std::pair<typename Tree<R>::template rebind<L>, typename Tree<R>::template rebind<L>>;

  template <class F, class... A>
  static constexpr bool check() {
    using B = base_args<A...>;
    constexpr bool same = std::is_same_v<B, typename second_half<A...>::type>;
    static_assert(same,
                  "xpr::ct::jvp: the tangents must have the structure of the primals "
                  "(one tangent per primal, same shapes)");
    if constexpr (same)
      return check_callable_tuple<F>(static_cast<B*>(nullptr));
    else
      return false;
  }
  template <class F, class... B>
  static constexpr bool check_callable_tuple(std::tuple<B...>*) {
    return check_callable<F, B...>();
  }
};

/// linearize: the primal part (outputs and residuals) and the linear part (residuals and
/// tangents to tangent outputs) of the jvp jaxpr; the base function is `f`'s jvp.
template <bool Linear>
struct PartialEvalX {
  static constexpr int num_stages = 1;
  template <class... A>
  using base_args = std::tuple<A..., A...>;
  template <std::size_t N>
  static constexpr std::array<DType, 2 * N> base_dtypes(const std::array<DType, N>& d) {
    std::array<DType, 2 * N> b{};
    for (std::size_t k = 0; k < N; ++k) b[k] = b[N + k] = d[k];
    return b;
  }
  template <int K, class... A>
  static constexpr void stage(Jaxpr& j, [[maybe_unused]] int num_stages_here) {
    const std::size_t nt = j.ins.size() / 2, nl = j.outs.size() / 2;
    if constexpr (Linear)
      j = partial_eval_linear(j, nt, nl);
    else
      partial_eval_primal(j, nt, nl);
  }
  template <class L, class R, class... Args>
  using result = R;  // not called directly
  template <class F, class... A>
  static constexpr bool check() {
    return true;
  }
};

/// vjp: the transpose of the linear part, with one cotangent input per output.
struct VjpX : same_args {
  static constexpr int num_stages = 1;
  template <int K, class... A>
  static constexpr void stage(Jaxpr& j, [[maybe_unused]] int num_stages_here) {
    constexpr std::size_t nt = (Tree<A>::size + ... + 0);
    transpose_jaxpr(j, nt, j.outs.size(), true);
  }
  template <class L, class R, class... Args>
  using result = R;  // not called directly
  template <class F, class... A>
  static constexpr bool check() {
    return true;
  }
};

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// The public transformations.
// ---------------------------------------------------------------------------------------------

/// `grad<argnums...>(f)`: the gradient of a scalar function with respect to the arguments
/// `argnums` (default 0); one argnum gives a value shaped like that argument, several a tuple.
/// See examples/ct_grad.cpp.
template <int... Argnums, class F>
constexpr auto grad(F) {
  if constexpr (sizeof...(Argnums) == 0)
    return Transformed<F, detail::GradX<false, false, 0>>{};
  else
    return Transformed<F, detail::GradX<false, false, Argnums...>>{};
}
/// `grad<argnums...>(f, has_aux)`: `f` returns (value, aux); gives (gradient, aux).
template <int... Argnums, class F>
constexpr auto grad(F, has_aux_t) {
  if constexpr (sizeof...(Argnums) == 0)
    return Transformed<F, detail::GradX<false, true, 0>>{};
  else
    return Transformed<F, detail::GradX<false, true, Argnums...>>{};
}
/// `value_and_grad<argnums...>(f)`: (value, gradient) from one program.
template <int... Argnums, class F>
constexpr auto value_and_grad(F) {
  if constexpr (sizeof...(Argnums) == 0)
    return Transformed<F, detail::GradX<true, false, 0>>{};
  else
    return Transformed<F, detail::GradX<true, false, Argnums...>>{};
}
/// `value_and_grad<argnums...>(f, has_aux)`: ((value, aux), gradient).
template <int... Argnums, class F>
constexpr auto value_and_grad(F, has_aux_t) {
  if constexpr (sizeof...(Argnums) == 0)
    return Transformed<F, detail::GradX<true, true, 0>>{};
  else
    return Transformed<F, detail::GradX<true, true, Argnums...>>{};
}
/// `jacfwd<argnums...>(f)`: the Jacobian by forward mode, the output's structure with each
/// leaf replaced by the argument's structure (`J[i][j] = ∂f_i/∂x_j`).
template <int... Argnums, class F>
constexpr auto jacfwd(F) {
  if constexpr (sizeof...(Argnums) == 0)
    return Transformed<F, detail::JacX<true, 0>>{};
  else
    return Transformed<F, detail::JacX<true, Argnums...>>{};
}
/// `jacrev<argnums...>(f)`: the Jacobian by reverse mode (one reverse sweep per output).
template <int... Argnums, class F>
constexpr auto jacrev(F) {
  if constexpr (sizeof...(Argnums) == 0)
    return Transformed<F, detail::JacX<false, 0>>{};
  else
    return Transformed<F, detail::JacX<false, Argnums...>>{};
}
/// `hessian<argnums...>(f)` = `jacfwd(jacrev(f))`, forward-over-reverse as in JAX.
template <int... Argnums, class F>
constexpr auto hessian(F f) {
  return jacfwd<Argnums...>(jacrev<Argnums...>(f));
}

/// `jvp(f, primals, tangents)`: (f(primals...), the derivative of f at primals along tangents),
/// both shaped like f's output.
template <class F, class... P, class... T>
constexpr auto jvp(F, const std::tuple<P...>& primals, const std::tuple<T...>& tangents) {
  static_assert(sizeof...(P) == sizeof...(T),
                "xpr::ct::jvp: give one tangent per primal (the two tuples differ in length)");
  return std::apply(
      [&](const auto&... all) { return Transformed<F, detail::JvpX>{}(all...); },
      std::tuple_cat(primals, tangents));
}

/// The linear function `linearize` returns: evaluates the linear jaxpr on the stored residuals
/// and the tangents given. See examples/ct_linearize.cpp.
template <const auto& Linear, class S, class Out, class... Args>
class LinearFn {
 public:
  static constexpr std::size_t num_residuals =
      Compiled<Linear>::num_ins - leaf_offsets<Args...>.back();
  constexpr explicit LinearFn(const S* residuals) {
    for (std::size_t k = 0; k < num_residuals; ++k) residuals_[k] = residuals[k];
  }
  template <class... T>
  auto operator()(const T&... tangents) const {
    static_assert(sizeof...(T) == sizeof...(Args) && ((Tree<T>::size == Tree<Args>::size) && ...),
                  "xpr::ct::linearize: give one tangent per primal, shaped like it");
    S in[Compiled<Linear>::num_ins];
    for (std::size_t k = 0; k < num_residuals; ++k) in[k] = residuals_[k];
    constexpr auto offsets = leaf_offsets<T...>;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (Tree<T>::flatten(tangents, in + num_residuals + offsets[I]), ...);
    }(std::index_sequence_for<T...>{});
    S out[Compiled<Linear>::num_outs];
    Compiled<Linear>::run(in, out);
    return Tree<Out>::template unflatten<S>(out);
  }

 private:
  S residuals_[num_residuals > 0 ? num_residuals : 1] = {};
};

/// The function `vjp` returns: maps a cotangent shaped like f's output to one cotangent per
/// argument (a tuple), by the transposed linear jaxpr.
template <const auto& Transposed, class S, class Out, class... Args>
class VjpFn {
 public:
  static constexpr std::size_t num_residuals =
      Compiled<Transposed>::num_ins - Tree<Out>::size;
  constexpr explicit VjpFn(const S* residuals) {
    for (std::size_t k = 0; k < num_residuals; ++k) residuals_[k] = residuals[k];
  }
  template <class C>
  auto operator()(const C& cotangent) const {
    static_assert(Tree<C>::size == Tree<Out>::size,
                  "xpr::ct::vjp: the cotangent must be shaped like the function's output");
    S in[Compiled<Transposed>::num_ins];
    for (std::size_t k = 0; k < num_residuals; ++k) in[k] = residuals_[k];
    Tree<C>::flatten(cotangent, in + num_residuals);
    S out[Compiled<Transposed>::num_outs];
    Compiled<Transposed>::run(in, out);
    constexpr auto offsets = leaf_offsets<Args...>;
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::tuple<typename Tree<Args>::template rebind<S>...>{
          Tree<typename Tree<Args>::template rebind<S>>::template unflatten<S>(out + offsets[I])...};
    }(std::index_sequence_for<Args...>{});
  }

 private:
  S residuals_[num_residuals > 0 ? num_residuals : 1] = {};
};

namespace detail {
template <template <const auto&, class, class, class...> class Fn, class Second, class F,
          class... Args>
auto primal_and(const Args&... primals) {
  static_assert(!(has_tracer<Args> || ...),
                "xpr::ct::linearize / xpr::ct::vjp take numbers; inside a traced function use "
                "xpr::ct::jvp or xpr::ct::grad, which compose");
  if constexpr (!check_function<F>() || (has_tracer<Args> || ...) || !check_args<Args...>()) {
    return;
  } else if constexpr (!check_callable<F, traced_t<Args>...>()) {
    return;
  } else {
    using S = scalar_t<Args...>;
    using Primal = Transformed<Transformed<F, JvpX>, PartialEvalX<false>>;
    using P = Compiled<program_for<Primal, Args...>>;
    using R = traced_result_t<F, traced_t<Args>...>;
    constexpr auto offsets = leaf_offsets<Args...>;
    S in[offsets.back() > 0 ? offsets.back() : 1];
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (Tree<Args>::flatten(primals, in + offsets[I]), ...);
    }(std::index_sequence_for<Args...>{});
    S out[P::num_outs];
    P::run(in, out);
    using Out = typename Tree<R>::template rebind<S>;
    using G = Fn<program_for<Second, Args...>, S, Out, Args...>;
    return std::pair<Out, G>{Tree<Out>::template unflatten<S>(out), G(out + Tree<R>::size)};
  }
}
}  // namespace detail

/// `linearize(f, primals...)`: (f(primals...), f_jvp) where f_jvp(tangents...) evaluates only
/// the linear part, on residuals computed once. See examples/ct_linearize.cpp.
template <class F, class... Args>
auto linearize(F, const Args&... primals) {
  using Linear = Transformed<Transformed<F, detail::JvpX>, detail::PartialEvalX<true>>;
  return detail::primal_and<LinearFn, Linear, F>(primals...);
}

/// `vjp(f, primals...)`: (f(primals...), f_vjp) where f_vjp(cotangent) gives a tuple with one
/// cotangent per argument: the transposed linear jaxpr, on residuals computed once.
template <class F, class... Args>
auto vjp(F, const Args&... primals) {
  using Linear = Transformed<Transformed<F, detail::JvpX>, detail::PartialEvalX<true>>;
  return detail::primal_and<VjpFn, Transformed<Linear, detail::VjpX>, F>(primals...);
}

// ---------------------------------------------------------------------------------------------
// make_jaxpr and the compiled program.
// ---------------------------------------------------------------------------------------------

/// The frozen jaxpr of `F` (a function type, possibly transformed) for arguments of types
/// `Args...`: a `Program` value, inputs first, then equations in SSA order.
template <class F, class... Args>
inline constexpr const auto& jaxpr_of = detail::program_for<F, Args...>;

/// The program `F` compiles to for arguments of types `Args...`: `run(in, out)` on flat arrays
/// of one scalar type, for loops over SIMD batches.
template <class F, class... Args>
using compiled_t = Compiled<detail::program_for<F, Args...>>;

namespace detail {
template <class F>
struct MakeJaxpr {
  template <class... Args>
  std::string_view operator()(const Args&...) const {
    return jaxpr_text_v<program_for<F, Args...>>.view();
  }
};
}  // namespace detail

/// `make_jaxpr<Args...>(f)`: the jaxpr of `f` for arguments of types `Args...`, in JAX's
/// syntax, as a compile-time string (`static_assert(make_jaxpr<double>(f) == "...")`).
/// `make_jaxpr(f)(args...)` gives the same text at run time, JAX-style.
template <class... Args, class F>
constexpr decltype(auto) make_jaxpr(F) {
  if constexpr (!detail::check_function<F>()) {
    return;
  } else if constexpr (sizeof...(Args) == 0) {
    return detail::MakeJaxpr<F>{};
  } else {
    if constexpr (!detail::check_args<Args...>())
      return;
    else
      return (jaxpr_text_v<detail::program_for<F, Args...>>);
  }
}

}  // namespace xpr::ct
