// SPDX-License-Identifier: MIT
// Reverse-mode autodiff of the runtime tier on pytrees, as JAX spells it: xpr::linearize,
// xpr::linear_transpose, xpr::vjp, xpr::grad (with argnums and xpr::has_aux),
// xpr::value_and_grad, xpr::jacfwd, xpr::jacrev, xpr::hessian. Arguments and results are
// flattened around the flat transformations of transformations.hpp; C++ numbers become weakly
// typed rank-0 arrays. See docs/autodiff.md and examples/autodiff.cpp.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/core/dtype.hpp"
#include "xpr/core/error.hpp"
#include "xpr/core/shape.hpp"
#include "xpr/rt/api_transformations.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/jaxpr.hpp"
#include "xpr/rt/numpy_linalg_slicing.hpp"
#include "xpr/rt/numpy_shape.hpp"
#include "xpr/rt/prims/convert.hpp"
#include "xpr/rt/prims/shape.hpp"
#include "xpr/rt/pytree.hpp"
#include "xpr/rt/transformations.hpp"
#include "xpr/rt/zeros.hpp"

namespace xpr::rt {

/// Tag for `grad(f, has_aux)` and `value_and_grad(f, has_aux)`: `f` returns a pair (value, aux)
/// and only the value is differentiated (JAX's `has_aux=True`). The compile-time tier has its own
/// `xpr::ct::has_aux`.
struct has_aux_t {
  explicit constexpr has_aux_t() = default;
};
inline constexpr has_aux_t has_aux{};

namespace detail {

/// `(3,)`, `(2, 3)`, `()`: a shape as Python prints a tuple, for JAX's messages.
std::string python_shape(const Shape& s);

/// The subtree of `def` rooted at child `k` of its root (a tuple of arguments).
PyTreeDef child_def(const PyTreeDef& def, std::size_t k);

/// A tuple node over `children`.
PyTreeDef tuple_def(const std::vector<PyTreeDef>& children);

/// `outer` with every leaf replaced by `inner` (the structure of a Jacobian: the output's
/// structure of the input's structure, JAX's `tree_transpose` layout).
std::size_t compose_defs(const PyTreeDef& outer, std::size_t i, const PyTreeDef& inner,
                         std::vector<PyTreeDef::Node>& out);
PyTreeDef compose_defs(const PyTreeDef& outer, const PyTreeDef& inner);

/// The type of a pytree of type `T` with each leaf replaced by a pytree of type `In`.
template <class T, class In>
struct nest_tree {
  static_assert(std::is_same_v<T, Array>,
                "xpr::jacfwd/jacrev: if you see this error, it means the function returns a "
                "registered struct; Jacobians support outputs built from Array, std::tuple, "
                "std::pair, std::array, std::vector and std::map<std::string, T>");
  using type = In;
};
template <class... Ts, class In>
struct nest_tree<std::tuple<Ts...>, In> {
  using type = std::tuple<typename nest_tree<Ts, In>::type...>;
};
template <class A, class B, class In>
struct nest_tree<std::pair<A, B>, In> {
  using type = std::pair<typename nest_tree<A, In>::type, typename nest_tree<B, In>::type>;
};
template <class T, std::size_t N, class In>
struct nest_tree<std::array<T, N>, In> {
  using type = std::array<typename nest_tree<T, In>::type, N>;
};
template <class T, class A, class In>
struct nest_tree<std::vector<T, A>, In> {
  using type = std::vector<typename nest_tree<T, In>::type>;
};
template <class T, class C, class A, class In>
struct nest_tree<std::map<std::string, T, C, A>, In> {
  using type = std::map<std::string, typename nest_tree<T, In>::type>;
};

/// The argument numbers of a transformation of a call with `NumArgs` arguments: `0` when none
/// are given; a negative one counts from the end, as in JAX.
template <std::size_t NumArgs, int... Argnums>
constexpr auto argnums_array() {
  if constexpr (sizeof...(Argnums) == 0)
    return std::array<int, 1>{0};
  else
    return core::canonicalize_argnums<NumArgs>(std::array<int, sizeof...(Argnums)>{Argnums...});
}

template <std::size_t NumArgs, int... Argnums>
constexpr bool argnums_valid() {
  return core::argnums_valid<NumArgs>(argnums_array<NumArgs, Argnums...>());
}

/// The type of the derivative with respect to the arguments `Argnums` of a function of `Args`
/// (a tuple type): that argument's type with Array leaves, or a tuple of them.
template <class Args, int... Argnums>
struct wrt_type {
  static constexpr auto a = argnums_array<std::tuple_size_v<Args>, Argnums...>();
  template <std::size_t... I>
  static auto pick(std::index_sequence<I...>)
      -> std::tuple<tree_of_arrays_t<std::tuple_element_t<a[I], Args>>...>;
  using all = decltype(pick(std::make_index_sequence<a.size()>{}));
  using type = std::conditional_t<a.size() == 1, std::tuple_element_t<0, all>, all>;
};

/// Splits a call into the leaves being differentiated and the rest: the flat function of the
/// differentiated leaves that calls `f` with the other arguments fixed (JAX's `argnums_partial`),
/// and the structure of the result.
template <class F, class Args, int... Argnums>
struct ArgnumsPartial {
  static constexpr auto argnums = argnums_array<std::tuple_size_v<Args>, Argnums...>();

  F& f;
  std::vector<Array> leaves;           // all arguments' leaves
  PyTreeDef def;                       // the argument tuple's structure
  std::vector<std::size_t> positions;  // where the differentiated leaves are in `leaves`
  PyTreeDef wrt_def;                   // the structure of the differentiated arguments
  std::optional<PyTreeDef> out_def;

  template <class... A>
  ArgnumsPartial(F& fn, const A&... args) : f(fn) {
    auto [l, d] = tree_flatten(std::forward_as_tuple(args...));
    leaves = std::move(l);
    def = std::move(d);
    std::vector<std::size_t> offsets;
    std::vector<PyTreeDef> children;
    const auto& nodes = def.nodes();
    for (std::size_t k = 0, i = 1, off = 0; k < sizeof...(A); ++k) {
      offsets.push_back(off);
      off += nodes[i].num_leaves;
      i += nodes[i].num_nodes;
    }
    for (int a : argnums) {
      PyTreeDef c = child_def(def, static_cast<std::size_t>(a));
      for (std::size_t j = 0; j < c.num_leaves(); ++j)
        positions.push_back(offsets[static_cast<std::size_t>(a)] + j);
      children.push_back(std::move(c));
    }
    wrt_def = argnums.size() == 1 ? children[0] : tuple_def(children);
  }

  Arrays wrt_leaves() const {
    Arrays out;
    out.reserve(positions.size());
    for (std::size_t p : positions) out.push_back(leaves[p]);
    return out;
  }

  FlatFunction flat() {
    check_callable<F, Args>();
    return [this](std::span<const Array> wrt) -> Arrays {
      Arrays all = leaves;
      for (std::size_t k = 0; k < positions.size(); ++k) all[positions[k]] = wrt[k];
      if constexpr (callable_with_v<F, Args>) {
        auto args = tree_unflatten<tree_of_arrays_t<Args>>(def, all);
        auto out = std::apply(f, std::move(args));
        auto [out_leaves, d] = tree_flatten(out);
        out_def = std::move(d);
        return out_leaves;
      } else {
        return Arrays{};  // not callable: check_callable has stopped the compilation
      }
    };
  }

  /// The derivative's value from one leaf per differentiated input leaf.
  auto unflatten_wrt(std::span<const Array> wrt) const {
    return tree_unflatten<typename wrt_type<Args, Argnums...>::type>(wrt_def, wrt);
  }
};

/// Throws JAX's `type_error` for a transformation that needs floating inputs.
void check_inexact_inputs(const char* fn, std::span<const Array> wrt);

/// Throws JAX's `type_error` for a reverse-mode transformation (grad, jacrev) of a function
/// with an integer or bool output: it has no cotangent to pull back, and without this check
/// its derivative would come out as silent zeros.
void check_real_outputs(const char* fn, std::span<const Array> outputs);

/// Checks a cotangent against the output it belongs to; a weakly typed one (a C++ number) is
/// converted to the output's dtype, as JAX accepts a Python scalar.
Array check_cotangent(const char* fn, const Array& ct, const ShapedArray& out);

/// The rows of the standard basis of the space of `leaves` (JAX's `_std_basis`), one array per
/// leaf: `N x shape` with `N` the total size, the leaf's dtype, row `k` the `k`-th unit vector.
Arrays std_basis(std::span<const ShapedArray> avals);

/// `x` restricted to `[start, start + n)` along `axis` and reshaped so that axis becomes `shape`.
Array unravel_block(const Array& x, std::size_t axis, std::int64_t start, std::int64_t n,
                    const Shape& shape);

template <class T>
inline constexpr bool is_pair_like_v = false;
template <class A, class B>
inline constexpr bool is_pair_like_v<std::pair<A, B>> = true;
template <class A, class B>
inline constexpr bool is_pair_like_v<std::tuple<A, B>> = true;

/// The differentiated part of `f`'s result `Out`: all of it, or with `has_aux` the first of the
/// pair (out, aux) `f` must return.
template <class Out, bool HasAux>
struct main_output {
  using type = Out;
};
template <class Out>
struct main_output<Out, true> {
  static_assert(is_pair_like_v<Out>, "xpr: with xpr::has_aux, f must return a pair (out, aux)");
  using type = std::remove_cvref_t<std::tuple_element_t<0, Out>>;
};
template <class Out, bool HasAux>
struct aux_output {
  using type = std::tuple<>;
};
template <class Out>
struct aux_output<Out, true> {
  using type = std::remove_cvref_t<std::tuple_element_t<1, Out>>;
};

/// Whether the last of `P...` is the `has_aux` tag (`vjp(f, x, y, has_aux)`, as JAX's keyword).
template <class... P>
constexpr bool last_is_has_aux() {
  if constexpr (sizeof...(P) == 0)
    return false;
  else
    return std::is_same_v<std::tuple_element_t<sizeof...(P) - 1, std::tuple<P...>>, has_aux_t>;
}

/// `(out, fn)`, or with `HasAux` `(out, fn, aux)` (jax.vjp's and jax.linearize's results).
template <bool HasAux, class Out, class Fn, class Aux>
auto with_aux(Out y, Fn fn, Aux aux) {
  if constexpr (HasAux)
    return std::tuple<Out, Fn, Aux>{std::move(y), std::move(fn), std::move(aux)};
  else
    return std::pair<Out, Fn>{std::move(y), std::move(fn)};
}

/// `g(std::bool_constant<has_aux>, primals...)`, the trailing `has_aux` tag, if any, taken off.
template <class G, class... P>
decltype(auto) split_has_aux(G&& g, const P&... primals) {
  if constexpr (last_is_has_aux<P...>()) {
    auto without_tag = [&]<std::size_t... I>(std::index_sequence<I...>)->decltype(auto) {
      return g(std::true_type{}, std::get<I>(std::forward_as_tuple(primals...))...);
    };
    return without_tag(std::make_index_sequence<sizeof...(P) - 1>{});
  } else {
    return g(std::false_type{}, primals...);
  }
}

/// linearize and vjp: `f` linearized at `primals`, its output's main part and aux split (with
/// `HasAux`, only the main part's leaves get tangents); `state` gets the linear jaxpr and the
/// trees.
template <bool HasAux, class F, class... P>
auto linearize_split(F& f, const char* fn, const P&... primals) {
  using Args = std::tuple<P...>;
  using FullOut = flat_result_t<F, Args>;
  using Out = typename main_output<FullOut, HasAux>::type;
  using Aux = typename aux_output<FullOut, HasAux>::type;
  struct State {
    ClosedJaxpr linear;
    PyTreeDef in_def, out_def;
  };
  auto [leaves, def] = tree_flatten(std::forward_as_tuple(primals...));
  std::optional<PyTreeDef> full_def;
  auto flat = flat_function<F, Args>(f, def, full_def);
  std::function<std::size_t()> num_linear = [&full_def]() -> std::size_t {
    if constexpr (HasAux)
      return child_def(*full_def, 0).num_leaves();
    else
      return static_cast<std::size_t>(-1);
  };
  auto [primals_out, linear] = linearize_flat(flat, leaves, num_linear, fn);
  const PyTreeDef out_def = HasAux ? child_def(*full_def, 0) : *full_def;
  const std::span<const Array> all(primals_out);
  Out y = tree_unflatten<Out>(out_def, all.first(out_def.num_leaves()));
  Aux aux{};
  if constexpr (HasAux)
    aux = tree_unflatten<Aux>(child_def(*full_def, 1), all.subspan(out_def.num_leaves()));
  auto state = std::make_shared<const State>(State{std::move(linear), def, out_def});
  return std::tuple<Out, decltype(state), Aux>{std::move(y), std::move(state), std::move(aux)};
}

// ---- linearize -------------------------------------------------------------------------------

template <bool HasAux, class F, class... P>
auto linearize_impl(F& f, const P&... primals) {
  using Out = typename main_output<flat_result_t<F, std::tuple<P...>>, HasAux>::type;
  auto [y, state, aux] = linearize_split<HasAux>(f, "linearize", primals...);
  auto f_lin = [state](const auto&... tangents) -> Out {
    auto [t_leaves, t_def] = tree_flatten(std::forward_as_tuple(tangents...));
    if (static_cast<const PyTreeDef&>(t_def) != state->in_def)
      throw core::type_error("linearize: expected tangents of the primals' tree structure " +
                             state->in_def.str() + ", found " + t_def.str());
    const auto& in = state->linear.jaxpr.invars;
    for (std::size_t k = 0; k < t_leaves.size() && k < in.size(); ++k) {
      const ShapedArray &want = in[k].aval(), &got = detail::aval_of(t_leaves[k]);
      if (!want.same_type(got))
        throw core::type_error(
            "linearize: the linearized function was called on a tangent inconsistent with its "
            "primal: expected leaf " +
            std::to_string(k) + " of type " + want.str() + ", found " + got.str());
    }
    return tree_unflatten<Out>(state->out_def, eval_linear(state->linear, t_leaves));
  };
  return with_aux<HasAux>(std::move(y), std::move(f_lin), std::move(aux));
}

}  // namespace detail

/// `auto [y, f_lin] = linearize(f, primals...)`: `y = f(primals...)` and the linear function
/// `f_lin(tangents...)` = `jvp(f, primals, tangents).second`, which does no primal work again: it
/// evaluates the tangent equations on stored residuals (`make_jaxpr(f_lin)` shows them as
/// constants). Tangents have the primals' structures, shapes and dtypes. See
/// examples/autodiff.cpp.
///
/// `auto [y, f_lin, aux] = linearize(f, primals..., has_aux)`: `f` returns a pair (out, aux);
/// only `out` is linearized (JAX's `has_aux=True`).
template <class F, class... P>
auto linearize(F f, const P&... primals) {
  return detail::split_has_aux(
      [&](auto aux, const auto&... ps) {
        return detail::linearize_impl<decltype(aux)::value>(f, ps...);
      },
      primals...);
}

// ---- linear_transpose ------------------------------------------------------------------------

/// `linear_transpose(f_lin, primals...)`: the transpose of a linear function `f_lin`, whose
/// inputs have the structures, shapes and dtypes of `primals` (their values are not used):
/// `f_t(cotangent)` returns a std::tuple with one cotangent per input, `<f_t(c), t> == <c,
/// f_lin(t)>`. `f_lin` is traced once, here. See examples/autodiff.cpp.
template <class F, class... P>
auto linear_transpose(F f_lin, const P&... primals) {
  using Args = std::tuple<P...>;
  using Out = detail::flat_result_t<F, Args>;
  using InCts = tree_of_arrays_t<Args>;
  auto [leaves, def] = tree_flatten(std::forward_as_tuple(primals...));
  Avals avals;
  for (const Array& l : leaves) avals.push_back(detail::aval_of(l));
  std::optional<PyTreeDef> out_def;
  ClosedJaxpr linear =
      linear_transpose_flat(detail::flat_function<F, Args>(f_lin, def, out_def), avals);
  struct State {
    ClosedJaxpr linear;
    PyTreeDef in_def, out_def;
  };
  auto state = std::make_shared<const State>(State{std::move(linear), def, *out_def});
  return [state](const Out& ct) -> InCts {
    auto [c_leaves, c_def] = tree_flatten(ct);
    if (static_cast<const PyTreeDef&>(c_def) != state->out_def)
      throw core::type_error(
          "linear_transpose: expected a cotangent of the output's tree "
          "structure " +
          state->out_def.str() + ", found " + c_def.str());
    Avals out_avals = state->linear.out_avals();
    Cotangents cts;
    for (std::size_t i = 0; i < c_leaves.size(); ++i)
      cts.emplace_back(detail::check_cotangent("linear_transpose", c_leaves[i], out_avals[i]));
    return tree_unflatten<InCts>(state->in_def, transpose_linear(state->linear, cts));
  };
}

// ---- vjp -------------------------------------------------------------------------------------

namespace detail {

template <bool HasAux, class F, class... P>
auto vjp_impl(F& f, const P&... primals) {
  using InCts = tree_of_arrays_t<std::tuple<P...>>;
  auto [y, state, aux] = linearize_split<HasAux>(f, "vjp", primals...);
  auto f_vjp = [state]<class C>(const C& ct) -> InCts {
    auto [c_leaves, c_def] = tree_flatten(ct);
    if (static_cast<const PyTreeDef&>(c_def) != state->out_def)
      throw core::type_error("vjp: expected a cotangent of the output's tree structure " +
                             state->out_def.str() + ", found " + c_def.str());
    Avals out_avals = state->linear.out_avals();
    Cotangents cts;
    for (std::size_t i = 0; i < c_leaves.size(); ++i)
      cts.emplace_back(detail::check_cotangent("vjp", c_leaves[i], out_avals[i]));
    return tree_unflatten<InCts>(state->in_def, transpose_linear(state->linear, cts));
  };
  return with_aux<HasAux>(std::move(y), std::move(f_vjp), std::move(aux));
}

}  // namespace detail

/// `auto [y, f_vjp] = vjp(f, primals...)`: `y = f(primals...)` and the pullback: `f_vjp(ct)`, for
/// a cotangent `ct` of `y`'s structure, shapes and dtypes, returns a std::tuple with one
/// cotangent per primal (the primal's structure with Array leaves). Built as the transpose of
/// `linearize`, so the forward work is done once, here. See examples/autodiff.cpp.
///
/// `auto [y, f_vjp, aux] = vjp(f, primals..., has_aux)`: `f` returns a pair (out, aux); `f_vjp`
/// pulls back cotangents of `out` only (JAX's `has_aux=True`).
template <class F, class... P>
auto vjp(F f, const P&... primals) {
  return detail::split_has_aux(
      [&](auto aux, const auto&... ps) { return detail::vjp_impl<decltype(aux)::value>(f, ps...); },
      primals...);
}

// ---- grad, value_and_grad --------------------------------------------------------------------

namespace detail {

/// grad and value_and_grad: one linearization with the arguments `Argnums` unknown, then one
/// backward pass seeded with a cotangent of one.
template <bool ValueAndGrad, bool HasAux, int... Argnums, class F>
auto grad_impl(F fun) {
  return [box = MutableBox<F>{std::move(fun)}](const auto&... args) {
    F& f = box.f;
    using Args = std::tuple<std::remove_cvref_t<decltype(args)>...>;
    using Out = flat_result_t<F, Args>;
    static_assert(argnums_valid<sizeof...(args), Argnums...>(),
                  "xpr::grad: each argnum must name an argument of the call, once");
    const char* fn = ValueAndGrad ? "value_and_grad" : "grad";
    if constexpr (HasAux) {
      static_assert(is_pair_like_v<Out>,
                    "xpr::grad(f, xpr::has_aux): f must return a pair (value, aux)");
      static_assert(std::is_same_v<std::tuple_element_t<0, Out>, Array>,
                    "xpr::grad(f, xpr::has_aux): the value f returns first must be a scalar "
                    "array or number; for vector outputs use xpr::jacrev or xpr::vjp");
    } else {
      static_assert(std::is_same_v<Out, Array>,
                    "xpr::grad: the function must return a scalar (an Array or a number; with "
                    "has_aux, a pair (scalar, aux)); for vector outputs use xpr::jacrev or "
                    "xpr::vjp");
    }
    ArgnumsPartial<F, Args, Argnums...> partial(f, args...);
    Arrays wrt = partial.wrt_leaves();
    check_inexact_inputs(fn, wrt);
    // With has_aux, the leaves of (value, aux) after the value (the first leaf, as checked
    // above) are auxiliary: they get no tangents.
    auto [primals_out, linear] =
        linearize_flat(partial.flat(), wrt, HasAux ? 1 : static_cast<std::size_t>(-1), fn);
    const Array& value = primals_out.front();
    if (value.ndim() != 0)
      throw core::type_error(
          "Gradient only defined for scalar-output functions. Output had "
          "shape: " +
          python_shape(value.shape()) + ".");
    check_real_outputs(fn, std::span<const Array>(&value, 1));
    Cotangents cts(linear.jaxpr.outvars.size());
    cts[0] = ones_like_aval(detail::aval_of(value));
    auto g = partial.unflatten_wrt(transpose_linear(linear, cts));
    if constexpr (HasAux) {
      using Aux = std::remove_cvref_t<std::tuple_element_t<1, Out>>;
      PyTreeDef aux_def = child_def(*partial.out_def, 1);
      Aux aux = tree_unflatten<Aux>(aux_def, std::span<const Array>(primals_out).subspan(1));
      if constexpr (ValueAndGrad)
        return std::pair{std::pair<Array, Aux>{value, std::move(aux)}, std::move(g)};
      else
        return std::pair{std::move(g), std::move(aux)};
    } else {
      if constexpr (ValueAndGrad)
        return std::pair{value, std::move(g)};
      else
        return g;
    }
  };
}

}  // namespace detail

/// `grad<argnums...>(f)`: the gradient of a scalar function with respect to the arguments
/// `argnums` (default 0): one argnum gives a value shaped like that argument (its structure with
/// Array leaves), several a std::tuple. Throws `type_error` for a non-scalar or integer output or
/// integer inputs, with JAX's messages. See examples/autodiff.cpp.
template <int... Argnums, class F>
auto grad(F f) {
  return detail::grad_impl<false, false, Argnums...>(std::move(f));
}
/// `grad<argnums...>(f, has_aux)`: `f` returns (value, aux); gives the pair (gradient, aux).
template <int... Argnums, class F>
auto grad(F f, has_aux_t) {
  return detail::grad_impl<false, true, Argnums...>(std::move(f));
}
/// `value_and_grad<argnums...>(f)`: the pair (value, gradient) from one linearization.
template <int... Argnums, class F>
auto value_and_grad(F f) {
  return detail::grad_impl<true, false, Argnums...>(std::move(f));
}
/// `value_and_grad<argnums...>(f, has_aux)`: ((value, aux), gradient).
template <int... Argnums, class F>
auto value_and_grad(F f, has_aux_t) {
  return detail::grad_impl<true, true, Argnums...>(std::move(f));
}

// ---- jacfwd, jacrev, hessian -----------------------------------------------------------------

namespace detail {

template <bool Forward, bool HasAux, int... Argnums, class F>
auto jacobian_impl(F fun) {
  return [box = MutableBox<F>{std::move(fun)}](const auto&... args) {
    F& f = box.f;
    static_assert(argnums_valid<sizeof...(args), Argnums...>(),
                  "xpr::jacfwd/jacrev: each argnum must name an argument of the call, once");
    using Args = std::tuple<std::remove_cvref_t<decltype(args)>...>;
    using FullOut = flat_result_t<F, Args>;
    using Out = typename main_output<FullOut, HasAux>::type;
    using Wrt = typename wrt_type<Args, Argnums...>::type;
    using Jac = typename nest_tree<Out, Wrt>::type;
    const char* fn = Forward ? "jacfwd" : "jacrev";
    ArgnumsPartial<F, Args, Argnums...> partial(f, args...);
    Arrays wrt = partial.wrt_leaves();
    Avals in_avals;
    for (const Array& x : wrt) in_avals.push_back(detail::aval_of(x));
    if (Forward) {
      for (const Array& x : wrt)
        if (!core::is_floating(x.dtype()))
          throw core::type_error(
              "jacfwd requires real-valued inputs (a floating dtype), but "
              "got " +
              std::string(core::name(x.dtype())) +
              ". Pass a floating-point value (3.0 rather than 3, or "
              "xpr::convert_element_type(x, xpr::float64)); an integer "
              "argument that is not differentiated goes outside argnums "
              "(xpr::jacfwd<0>(f)(x, n)).");
    } else {
      check_inexact_inputs(fn, wrt);
    }
    FlatFunction flat = partial.flat();
    // With has_aux: f is evaluated once for its structure and `aux` (the primal values, as JAX
    // returns them), and differentiated without the aux leaves.
    Arrays aux_leaves;
    std::optional<PyTreeDef> main_def;
    if constexpr (HasAux) {
      Arrays all = flat(wrt);
      main_def = child_def(*partial.out_def, 0);
      const std::size_t n_main = main_def->num_leaves();
      aux_leaves.assign(all.begin() + static_cast<std::ptrdiff_t>(n_main), all.end());
      flat = [inner = std::move(flat), n_main](std::span<const Array> in) {
        Arrays outs = inner(in);
        outs.resize(n_main);
        return outs;
      };
    }
    Arrays blocks;  // blocks[i * n_in + j]
    std::size_t n_in = wrt.size();
    if constexpr (Forward) {
      // vmap of jvp over the standard basis of the inputs; the basis axis goes last.
      Arrays basis = std_basis(in_avals);
      Avals out_avals;
      FlatFunction pushfwd = [&](std::span<const Array> tangents) {
        auto [ys, ts] = jvp_flat(flat, wrt, tangents);
        out_avals.clear();
        for (const Array& y : ys) out_avals.push_back(detail::aval_of(y));
        return ts;
      };
      BatchDims in_axes(n_in, BatchDim(0));
      Arrays jac = n_in == 0 ? Arrays{} : vmap_flat(pushfwd, basis, in_axes, {BatchDim(-1)});
      if (n_in == 0) {
        Arrays none;
        flat(none);
      }
      for (std::size_t i = 0; i < jac.size(); ++i) {
        std::size_t axis = jac[i].ndim() - 1;
        std::int64_t offset = 0;
        for (std::size_t j = 0; j < n_in; ++j) {
          blocks.push_back(
              unravel_block(jac[i], axis, offset, in_avals[j].size(), in_avals[j].shape));
          offset += in_avals[j].size();
        }
      }
    } else {
      // vmap of the pullback over the standard basis of the outputs; the basis axis goes first.
      auto [ys, linear] = linearize_flat(flat, wrt, static_cast<std::size_t>(-1), fn);
      check_real_outputs(fn, ys);
      Avals out_avals;
      for (const Array& y : ys) out_avals.push_back(detail::aval_of(y));
      Arrays basis = std_basis(out_avals);
      FlatFunction pullback = [&](std::span<const Array> cts) {
        Cotangents c(cts.begin(), cts.end());
        return transpose_linear(linear, c);
      };
      std::vector<Arrays> per_in;  // per_in[j]: M x in_j
      Arrays cts_in;
      if (!ys.empty() && n_in > 0) {
        BatchDims in_axes(ys.size(), BatchDim(0));
        cts_in = vmap_flat(pullback, basis, in_axes, {BatchDim(0)});
      }
      std::int64_t offset = 0;
      blocks.resize(ys.size() * n_in);
      for (std::size_t i = 0; i < ys.size(); ++i) {
        for (std::size_t j = 0; j < n_in; ++j)
          blocks[i * n_in + j] =
              unravel_block(cts_in[j], 0, offset, out_avals[i].size(), out_avals[i].shape);
        offset += out_avals[i].size();
      }
    }
    if constexpr (HasAux) {
      using Aux = std::remove_cvref_t<std::tuple_element_t<1, FullOut>>;
      Jac jac = tree_unflatten<Jac>(compose_defs(*main_def, partial.wrt_def), blocks);
      return std::pair{std::move(jac),
                       tree_unflatten<Aux>(child_def(*partial.out_def, 1), aux_leaves)};
    } else {
      return tree_unflatten<Jac>(compose_defs(*partial.out_def, partial.wrt_def), blocks);
    }
  };
}

}  // namespace detail

/// `jacfwd<argnums...>(f)`: the Jacobian of `f` by forward mode (vmap of jvp over the standard
/// basis of the inputs). The result has the output's structure with each leaf replaced by the
/// structure of the arguments `argnums` (default 0; several: a tuple), and the block for output
/// leaf `y` and input leaf `x` has shape `y.shape + x.shape` (JAX's layout). See
/// examples/autodiff.cpp.
template <int... Argnums, class F>
auto jacfwd(F f) {
  return detail::jacobian_impl<true, false, Argnums...>(std::move(f));
}
/// `jacfwd<argnums...>(f, has_aux)`: `f` returns a pair (out, aux); gives the pair (Jacobian of
/// out, aux) (JAX's `has_aux=True`; `f` runs once more for aux).
template <int... Argnums, class F>
auto jacfwd(F f, has_aux_t) {
  return detail::jacobian_impl<true, true, Argnums...>(std::move(f));
}
/// `jacrev<argnums...>(f)`: the same Jacobian by reverse mode (vmap of the pullback over the
/// standard basis of the outputs).
template <int... Argnums, class F>
auto jacrev(F f) {
  return detail::jacobian_impl<false, false, Argnums...>(std::move(f));
}
/// `jacrev<argnums...>(f, has_aux)`: as `jacfwd(f, has_aux)`.
template <int... Argnums, class F>
auto jacrev(F f, has_aux_t) {
  return detail::jacobian_impl<false, true, Argnums...>(std::move(f));
}
/// `hessian<argnums...>(f)` = `jacfwd(jacrev(f))`: forward over reverse, as in JAX.
template <int... Argnums, class F>
auto hessian(F f) {
  return jacfwd<Argnums...>(jacrev<Argnums...>(std::move(f)));
}
/// `hessian<argnums...>(f, has_aux)` = `jacfwd(jacrev(f, has_aux), has_aux)`: (Hessian, aux).
template <int... Argnums, class F>
auto hessian(F f, has_aux_t) {
  return jacfwd<Argnums...>(jacrev<Argnums...>(std::move(f), has_aux), has_aux);
}

}  // namespace xpr::rt

namespace xpr {
using rt::grad;
using rt::has_aux;
using rt::has_aux_t;
using rt::hessian;
using rt::jacfwd;
using rt::jacrev;
using rt::linear_transpose;
using rt::linearize;
using rt::value_and_grad;
using rt::vjp;
}  // namespace xpr

#if XPR_DEFINITIONS

namespace xpr::rt::detail {

XPR_FUNC std::string python_shape(const Shape& s) {
  std::string out = "(";
  for (std::size_t i = 0; i < s.rank(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.rank() == 1 ? ",)" : ")");
}

XPR_FUNC PyTreeDef child_def(const PyTreeDef& def, std::size_t k) {
  const auto& nodes = def.nodes();
  std::size_t i = 1;
  for (std::size_t c = 0; c < k; ++c) i += nodes[i].num_nodes;
  return PyTreeDef(std::vector<PyTreeDef::Node>(
      nodes.begin() + static_cast<std::ptrdiff_t>(i),
      nodes.begin() + static_cast<std::ptrdiff_t>(i + nodes[i].num_nodes)));
}

XPR_FUNC PyTreeDef tuple_def(const std::vector<PyTreeDef>& children) {
  std::vector<PyTreeDef::Node> nodes(1);
  nodes[0].kind = NodeKind::tuple;
  nodes[0].arity = children.size();
  nodes[0].num_leaves = 0;
  for (const PyTreeDef& c : children) {
    nodes[0].num_leaves += c.num_leaves();
    nodes.insert(nodes.end(), c.nodes().begin(), c.nodes().end());
  }
  nodes[0].num_nodes = nodes.size();
  return PyTreeDef(std::move(nodes));
}

XPR_FUNC std::size_t compose_defs(const PyTreeDef& outer, std::size_t i, const PyTreeDef& inner,
                                  std::vector<PyTreeDef::Node>& out) {
  const PyTreeDef::Node& n = outer.nodes()[i];
  if (n.kind == NodeKind::leaf) {
    out.insert(out.end(), inner.nodes().begin(), inner.nodes().end());
    return i + 1;
  }
  std::size_t at = out.size();
  out.push_back(n);
  std::size_t next = i + 1, leaves = 0;
  for (std::size_t c = 0; c < n.arity; ++c) {
    std::size_t start = out.size();
    next = compose_defs(outer, next, inner, out);
    leaves += out[start].num_leaves;
  }
  out[at].num_leaves = leaves;
  out[at].num_nodes = out.size() - at;
  return next;
}

XPR_FUNC PyTreeDef compose_defs(const PyTreeDef& outer, const PyTreeDef& inner) {
  std::vector<PyTreeDef::Node> nodes;
  compose_defs(outer, 0, inner, nodes);
  return PyTreeDef(std::move(nodes));
}

XPR_FUNC void check_inexact_inputs(const char* fn, std::span<const Array> wrt) {
  for (const Array& x : wrt)
    if (!core::is_floating(x.dtype()))
      throw core::type_error(std::string(fn) +
                             " requires real-valued inputs (a floating "
                             "dtype), but got " +
                             std::string(core::name(x.dtype())) +
                             ". Pass a floating-point value (3.0 rather than 3, or "
                             "xpr::convert_element_type(x, xpr::float64)); an integer argument "
                             "that is not differentiated goes outside argnums "
                             "(xpr::grad<0>(f)(x, n)).");
}

XPR_FUNC void check_real_outputs(const char* fn, std::span<const Array> outputs) {
  for (const Array& y : outputs)
    if (!core::is_floating(y.dtype()))
      throw core::type_error(std::string(fn) +
                             " requires real-valued outputs (output dtype that is a sub-dtype "
                             "of np.floating), but got " +
                             std::string(core::name(y.dtype())) +
                             ". For differentiation of functions with integer outputs, use "
                             "xpr::vjp directly.");
}

XPR_FUNC Array check_cotangent(const char* fn, const Array& ct, const ShapedArray& out) {
  if (ct.shape() != out.shape || (ct.dtype() != out.dtype && !ct.weak_type()))
    throw core::type_error(std::string(fn) + ": unexpected type for a cotangent: got " +
                           detail::aval_of(ct).str() + ", but expected " + out.str() +
                           " because the corresponding output of the function had that type");
  return ct.dtype() == out.dtype ? ct : convert_element_type(ct, out.dtype, out.weak_type);
}

XPR_FUNC Arrays std_basis(std::span<const ShapedArray> avals) {
  std::int64_t total = 0;
  for (const ShapedArray& a : avals) total += a.size();
  Arrays out;
  std::int64_t offset = 0;
  for (const ShapedArray& a : avals) {
    std::vector<std::int64_t> dims{total};
    dims.insert(dims.end(), a.shape.begin(), a.shape.end());
    ShapedArray basis{Shape(std::move(dims)), a.dtype, false};
    ArrayBuilder b(basis);
    dispatch_dtype(a.dtype, [&](auto tag) {
      using T = decltype(tag);
      T* p = b.template data<T>();
      std::int64_t n = a.size();
      for (std::int64_t i = 0; i < total * n; ++i) p[i] = T(0);
      for (std::int64_t k = 0; k < n; ++k) p[(offset + k) * n + k] = T(1);
    });
    out.push_back(std::move(b).finish());
    offset += a.size();
  }
  return out;
}

XPR_FUNC Array unravel_block(const Array& x, std::size_t axis, std::int64_t start, std::int64_t n,
                             const Shape& shape) {
  Array block = x;
  if (start != 0 || n != x.shape()[axis]) {
    Axes lo(x.ndim(), 0), hi(x.shape().begin(), x.shape().end());
    lo[axis] = start;
    hi[axis] = start + n;
    block = slice(x, lo, hi);
  }
  std::vector<std::int64_t> dims(block.shape().begin(),
                                 block.shape().begin() + static_cast<std::ptrdiff_t>(axis));
  dims.insert(dims.end(), shape.begin(), shape.end());
  dims.insert(dims.end(), block.shape().begin() + static_cast<std::ptrdiff_t>(axis) + 1,
              block.shape().end());
  Shape target(std::move(dims));
  return target == block.shape() ? block : reshape(block, target);
}

}  // namespace xpr::rt::detail
#endif  // XPR_DEFINITIONS
