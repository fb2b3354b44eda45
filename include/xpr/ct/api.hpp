// SPDX-License-Identifier: MIT
// The compile-time tier's transformations as users call them: grad, value_and_grad, jvp,
// linearize, vjp, jacfwd, jacrev, hessian, make_jaxpr, jaxpr_of and compiled_t. Each returns a
// function object `Transformed<F, X>` (ct/staging.hpp) for a descriptor X (ct/descriptors.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "xpr/core/dtype.hpp"
#include "xpr/ct/descriptors.hpp"
#include "xpr/ct/eval.hpp"
#include "xpr/ct/graph.hpp"
#include "xpr/ct/print.hpp"
#include "xpr/ct/rules.hpp"
#include "xpr/ct/staging.hpp"

namespace xpr::ct {

/// Tag for `grad(f, has_aux)` and `value_and_grad(f, has_aux)`: `f` returns a pair (value, aux)
/// and only the value is differentiated (JAX's `has_aux=True`).
struct has_aux_t {
  explicit constexpr has_aux_t() = default;
};
inline constexpr has_aux_t has_aux{};

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
  return std::apply([&](const auto&... all) { return Transformed<F, detail::JvpX>{}(all...); },
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
    static_assert(sizeof...(T) == sizeof...(Args),
                  "xpr::ct::linearize: give one tangent per primal, shaped like it");
    if constexpr (sizeof...(T) == sizeof...(Args))  // else the fold below is ill-formed
      static_assert(((Tree<T>::size == Tree<Args>::size) && ...),
                    "xpr::ct::linearize: give one tangent per primal, shaped like it");
    S in[Compiled<Linear>::num_ins];
    for (std::size_t k = 0; k < num_residuals; ++k) in[k] = residuals_[k];
    constexpr auto offsets = leaf_offsets<T...>;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (Tree<T>::flatten(tangents, in + num_residuals + offsets[I]), ...);
    }
    (std::index_sequence_for<T...>{});
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
  static constexpr std::size_t num_residuals = Compiled<Transposed>::num_ins - Tree<Out>::size;
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
          Tree<typename Tree<Args>::template rebind<S>>::template unflatten<S>(out +
                                                                               offsets[I])...};
    }
    (std::index_sequence_for<Args...>{});
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
    }
    (std::index_sequence_for<Args...>{});
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
