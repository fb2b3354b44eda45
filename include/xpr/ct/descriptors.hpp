// SPDX-License-Identifier: MIT
// The descriptors of the compile-time tier's transformations (grad, jacfwd/jacrev, jvp,
// linearize's partial evaluation, vjp): each says which jaxpr rewrites its stages apply, how the
// base function's arguments and the result are structured, and which misuses it reports with a
// static_assert. `Transformed<F, X>` (ct/staging.hpp) runs them; ct/api.hpp names them.
#pragma once

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "xpr/core/dtype.hpp"
#include "xpr/ct/graph.hpp"
#include "xpr/ct/rules.hpp"
#include "xpr/ct/staging.hpp"
#include "xpr/ct/transforms.hpp"

namespace xpr::ct {

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
  using type = typename Tree<nth_t<argnum_index<A...>(Argnum), A...>>::template rebind<L>;
};
template <class L, class... A, int... Argnums>
requires(sizeof...(Argnums) > 1) struct grads_of<L, std::tuple<A...>, Argnums...> {
  using type =
      std::tuple<typename Tree<nth_t<argnum_index<A...>(Argnums), A...>>::template rebind<L>...>;
};

/// grad and value_and_grad: a jvp stage, then a transpose stage seeded with a literal one.
template <bool Value, bool Aux, int... Argnums>
struct GradX : same_args {
  static constexpr int num_stages = 2;

  template <int K, class... A>
  static constexpr void stage(Jaxpr& j, [[maybe_unused]] int num_stages_here) {
    Buffer<int> which = argnum_leaves<A...>({Argnums...});
    if constexpr (K == 0) {
      // JAX: "grad requires real-valued outputs". A comparison's bool (or an integer) has no
      // derivative; its gradient would be a silent 0. The throw stops the constant evaluation,
      // and g++ shows this line.
      if (!j.outs.empty() && !core::is_floating(j.graph[static_cast<std::size_t>(j.outs[0])].dtype))
        throw "xpr::ct::grad: the function returns a bool or an integer (a comparison?); grad "
              "requires a floating-point output";
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
  requires Aux struct result_of<L, R, Args...> {
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
  using result =
      typename Tree<R>::template rebind<typename arg_shape<L, std::tuple<Args...>>::type>;

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
  using result =
      std::pair<typename Tree<R>::template rebind<L>, typename Tree<R>::template rebind<L>>;

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

}  // namespace xpr::ct
