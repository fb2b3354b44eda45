// SPDX-License-Identifier: MIT
// `xpr::cond` and `xpr::switch_` (JAX's `lax.cond` / `lax.switch`) and their primitive `cond`
// (`cond[branches=(...)] index operands...`, jax/_src/lax/control_flow/conditionals.py) with all
// of its rules. Autodidax Part 5; see docs/control-flow.md and examples/control_flow.cpp.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/core/error.hpp"
#include "xpr/core/ops.hpp"
#include "xpr/rt/api_transformations.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/detail/higher_order.hpp"
#include "xpr/rt/interp/batch.hpp"
#include "xpr/rt/interp/partial_eval.hpp"
#include "xpr/rt/interp/transpose.hpp"
#include "xpr/rt/jaxpr.hpp"
#include "xpr/rt/jaxpr_eval.hpp"
#include "xpr/rt/numpy_elementwise.hpp"
#include "xpr/rt/numpy_shape.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/prims/convert.hpp"
#include "xpr/rt/prims/select.hpp"
#include "xpr/rt/prims/shape.hpp"
#include "xpr/rt/prims/stop_gradient.hpp"
#include "xpr/rt/pytree.hpp"
#include "xpr/rt/trace.hpp"
#include "xpr/rt/transformations.hpp"

namespace xpr::rt {

namespace detail {

// ---- jaxpr helpers shared by the control-flow primitives -------------------------------------

/// Zeros of type `aval` that cost no constant when staged: a rank-0 zero (a literal), broadcast
/// by `broadcast_in_dim` for larger shapes (JAX's `zeros_like_aval` stages the same).
Array staged_zeros(const ShapedArray& aval);

/// Appends to `j` the equations that make zeros of type `aval` and returns the atom holding them.
Atom append_zeros(Jaxpr& j, const ShapedArray& aval);

inline JaxprParam share(ClosedJaxpr j) { return std::make_shared<const ClosedJaxpr>(std::move(j)); }

/// Branch jaxprs that take one shared list of constants as their leading inputs.
struct JoinedBranches {
  JaxprTuple branches;
  Arrays consts;
};

/// Makes closure-converted branch jaxprs agree on their leading constant inputs (JAX's
/// `_initial_style_jaxprs_with_common_consts`, Autodidax's `_join_jaxpr_consts`): every branch
/// takes the constants of all branches, the same array once, and ignores those it does not read.
JoinedBranches join_consts(std::vector<ConvertedJaxpr> branches);

/// The JVP of `jaxpr` as a closure-converted jaxpr whose tangent outputs are those marked in
/// `instantiate` (symbolic zeros made zeros), so that every branch of a `cond` returns the same
/// tangents (JAX's `jvp_jaxpr(..., instantiate=out_nz)`).
ConvertedJaxpr jvp_jaxpr_instantiated(const ClosedJaxpr& jaxpr, const std::vector<bool>& nonzero,
                                      const std::vector<bool>& instantiate);

/// `jaxpr` batched along `dims` of inputs of (batched) types `in_avals`: an output is batched (at
/// axis 0) when it depends on a batched input or when `instantiate` asks for it; returns which
/// outputs are batched (JAX's `batch_jaxpr(..., instantiate)`).
std::pair<ClosedJaxpr, std::vector<bool>> batch_jaxpr_outs(const ClosedJaxpr& jaxpr,
                                                           std::span<const BatchDim> dims,
                                                           std::span<const ShapedArray> in_avals,
                                                           std::int64_t axis_size,
                                                           const std::vector<bool>& instantiate);

std::vector<bool> any_of_each(const std::vector<std::vector<bool>>& flags, std::size_t n);

inline std::size_t count_true(const std::vector<bool>& v) {
  return static_cast<std::size_t>(std::count(v.begin(), v.end(), true));
}

// ---- cond's partial evaluation ----------------------------------------------------------------

/// The branches of a cond split by partial evaluation with joined residuals (JAX's
/// `_cond_partial_eval`): `known[b]` maps the known operands to the known outputs and the
/// residuals of every branch (zeros where branch b has none of that slot); `unknown[b]` maps the
/// residuals and the unknown operands to the unknown outputs.
struct CondSplit {
  std::vector<bool> out_unknowns;
  JaxprTuple known;
  JaxprTuple unknown;
  Avals res_avals;
};

CondSplit split_cond(const JaxprTuple& branches, const std::vector<bool>& ops_unknown);

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// cond_p
// ---------------------------------------------------------------------------------------------

/// `cond[branches=(b_0, ..., b_{n-1})] index operands...`: applies branch `index` (an int32 scalar,
/// clamped to [0, n)) to the operands. `xpr::cond(pred, t, f, ...)` binds it with
/// `branches=(f, t)` and `index = convert_element_type(pred, int32)`, as JAX does. Every branch
/// takes the same operands (closed-over values are leading operands) and returns the same types.
/// Rules (JAX's conditionals.py): jvp gives a cond of the branches' JVPs with the same nonzero
/// tangents in every branch; vmap keeps a cond when the index is not batched and otherwise
/// evaluates every branch and chooses with `select_n`; partial evaluation computes the known
/// outputs and the residuals of all branches in one known cond (each branch zero-fills the
/// residual slots of the others) and stages the rest as a cond on the residuals; transpose gives
/// a cond of the transposed branches; dce prunes outputs and the operands no branch reads.
class CondP final : public Primitive, public PartialEvalRules {
 public:
  constexpr CondP() : Primitive("cond", true) {}

  XPR_MEMBER static const JaxprTuple& branches(const Params& params);

  XPR_MEMBER Arrays impl(std::span<const Array> args, const Params& params) const override;

  XPR_MEMBER Avals abstract_eval(std::span<const ShapedArray> args,
                                 const Params& params) const override;

  XPR_MEMBER std::pair<Arrays, Tangents> jvp_symbolic(std::span<const Array> primals,
                                                      std::span<const Tangent> tangents,
                                                      const Params& params) const override;

  XPR_MEMBER Cotangents transpose(std::span<const Cotangent> cts, std::span<const LinearArg> args,
                                  const Params& params) const override;

  XPR_MEMBER std::pair<Arrays, BatchDims> batch(std::span<const Array> args,
                                                std::span<const BatchDim> dims,
                                                std::int64_t axis_size,
                                                const Params& params) const override;

  // ---- partial evaluation ----

  XPR_MEMBER std::optional<Arrays> partial_eval(PartialEvalTrace& trace,
                                                std::span<const Array> tracers,
                                                const Params& params) const override;

  XPR_MEMBER std::optional<PartialEvalEqn> partial_eval_jaxpr(const std::vector<bool>& in_unknowns,
                                                              const Eqn& eqn) const override;

  XPR_MEMBER std::optional<DceEqn> dce(const std::vector<bool>& used_outputs,
                                       const Eqn& eqn) const override;
};

inline constinit const CondP cond_p{};

// ---------------------------------------------------------------------------------------------
// xpr::cond, xpr::switch_
// ---------------------------------------------------------------------------------------------

namespace detail {

/// Traces `fns` (flat functions of the operand leaves) to branch jaxprs, checks that they return
/// the same structure and types (`type_error` naming the output and its type in each branch),
/// joins their constants and binds `cond`. `names[b]` names branch b in messages.
Arrays bind_branches(const char* fn, const Array& index, std::span<const FlatFunction> fns,
                     std::span<std::optional<PyTreeDef>> out_defs,
                     std::span<const std::string> names, std::span<const Array> leaves);

/// The predicate or index as a rank-0 Array; `type_error` for anything else.
template <class P>
Array scalar_operand(const char* fn, const char* what, const P& p) {
  Array a = [&] {
    if constexpr (std::is_same_v<P, Array>) {
      return p;
    } else {
      static_assert(std::is_arithmetic_v<P>,
                    "xpr::cond / xpr::switch_: the predicate or index must be an xpr::Array or a "
                    "C++ number");
      return Array(p);
    }
  }();
  if (a.ndim() != 0)
    throw core::type_error(std::string(fn) + ": expected a scalar " + what + ", found shape " +
                           a.shape().str());
  return a;
}

template <class... Ts>
constexpr bool any_array_v = (std::is_same_v<std::remove_cvref_t<Ts>, Array> || ...);

}  // namespace detail

namespace detail {

template <class T>
struct is_std_tuple_like : std::false_type {};
template <class... Ts>
struct is_std_tuple_like<std::tuple<Ts...>> : std::true_type {};

/// The branches as a tuple of callables (a `std::tuple` as is, a range copied element by element
/// into a vector that the flat functions index).
template <class Out, class Branches, class... Ops>
Arrays switch_leaves(const char* fn, const Array& index, const Branches& branch_fns,
                     std::span<const std::string> names, std::span<const Array> leaves,
                     const PyTreeDef& def, std::optional<PyTreeDef>& out_def) {
  using Args = std::tuple<std::remove_cvref_t<Ops>...>;
  std::vector<FlatFunction> flats;
  std::vector<std::optional<PyTreeDef>> out_defs;
  if constexpr (is_std_tuple_like<Branches>::value) {
    constexpr std::size_t n = std::tuple_size_v<Branches>;
    out_defs.resize(n);
    Branches copies = branch_fns;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (flats.push_back(flat_function<std::tuple_element_t<I, Branches>, Args>(std::get<I>(copies),
                                                                              def, out_defs[I])),
       ...);
    }
    (std::make_index_sequence<n>{});
    Arrays outs = bind_branches(fn, index, flats, out_defs, names, leaves);
    out_def = out_defs[0];
    return outs;
  } else {
    using F = std::remove_cvref_t<decltype(*std::begin(branch_fns))>;
    std::vector<F> copies(std::begin(branch_fns), std::end(branch_fns));
    out_defs.resize(copies.size());
    for (std::size_t b = 0; b < copies.size(); ++b)
      flats.push_back(flat_function<F, Args>(copies[b], def, out_defs[b]));
    Arrays outs = bind_branches(fn, index, flats, out_defs, names, leaves);
    out_def = out_defs[0];
    return outs;
  }
}

template <class Branches>
std::size_t num_branches(const Branches& branch_fns) {
  if constexpr (is_std_tuple_like<Branches>::value)
    return std::tuple_size_v<Branches>;
  else
    return static_cast<std::size_t>(std::distance(std::begin(branch_fns), std::end(branch_fns)));
}

/// Calls branch `i` of `branch_fns` on `operands` (the eager path of plain numbers).
template <class Branches, class... Ops>
auto call_branch(const Branches& branch_fns, std::size_t i, const Ops&... operands) {
  if constexpr (is_std_tuple_like<Branches>::value) {
    using R = decltype(std::get<0>(branch_fns)(operands...));
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      R out{};
      ((i == I ? (out = R(std::get<I>(branch_fns)(operands...)), 0) : 0), ...);
      return out;
    }
    (std::make_index_sequence<std::tuple_size_v<Branches>>{});
  } else {
    return std::begin(branch_fns)[static_cast<std::ptrdiff_t>(i)](operands...);
  }
}

template <class Branches, class... Ops>
struct branch0_result;
template <class F0, class... Fs, class... Ops>
struct branch0_result<std::tuple<F0, Fs...>, Ops...> {
  using type = flat_result_t<F0, std::tuple<std::remove_cvref_t<Ops>...>>;
};
template <class Branches, class... Ops>
requires(!is_std_tuple_like<Branches>::value) struct branch0_result<Branches, Ops...> {
  using type = flat_result_t<std::remove_cvref_t<decltype(*std::begin(std::declval<Branches&>()))>,
                             std::tuple<std::remove_cvref_t<Ops>...>>;
};

/// `cond` on an Array predicate (or a C++ bool with Array operands): one `cond` equation.
template <class P, class T, class F, class... Ops>
auto cond_impl(const P& pred, const T& true_fn, const F& false_fn, const Ops&... operands) {
  Array p = scalar_operand("cond", "predicate", pred);
  if (p.dtype() != DType::bool_) {
    if (!core::is_floating(p.dtype()) && !core::is_integer(p.dtype()))
      throw core::type_error("cond: expected a bool or numeric predicate, found " +
                             detail::aval_of(p).str());
    p = p != 0;  // JAX: a number is true when it is nonzero
  }
  Array index = convert_element_type(p, DType::int32);
  using Out = flat_result_t<T, std::tuple<std::remove_cvref_t<Ops>...>>;
  auto flat = tree_flatten(std::forward_as_tuple(operands...));
  std::optional<PyTreeDef> out_def;
  static const std::string names[2] = {"false_fn", "true_fn"};
  Arrays outs = switch_leaves<Out, std::tuple<F, T>, Ops...>(
      "cond", index, std::tuple<F, T>(false_fn, true_fn), names, flat.first, flat.second, out_def);
  return tree_unflatten<Out>(*out_def, outs);
}

}  // namespace detail

/// `xpr::cond(pred, true_fn, false_fn, operands...)` on runtime values: `true_fn(operands...)` if
/// `pred` holds, else `false_fn(operands...)`, staged as one `cond` equation (JAX's `lax.cond`).
/// `pred` is a scalar (a number is true when nonzero); the operands are pytrees; both functions
/// must return the same structure with the same shapes and dtypes (`type_error` naming the output
/// otherwise) and may close over other values, tracers of enclosing transformations included.
template <class P, class T, class F, class... Ops>
requires(std::is_same_v<P, Array> ||
         (std::is_arithmetic_v<P> &&
          detail::any_array_v<Ops...>)) auto xpr_apply(op::cond, const P& pred, const T& true_fn,
                                                       const F& false_fn, const Ops&... operands) {
  return detail::cond_impl(pred, true_fn, false_fn, operands...);
}

/// `switch_(index, branches, operands...)`: `branches[index](operands...)` with `index` clamped to
/// `[0, size(branches))`, as `lax.switch`. `branches` is a `std::tuple` of callables (each may be
/// a different lambda) or a `std::vector` / `std::array` of them; all must return the same pytree
/// structure with the same shapes and dtypes. When `index` or an operand is an `Array` one `cond`
/// equation is staged, whose branches see the operands and the values they close over; with a
/// C++ integer index and numbers the chosen branch is just called. See examples/control_flow.cpp.
template <class I, class Branches, class... Ops>
auto switch_(const I& index, const Branches& branch_fns, const Ops&... operands) {
  const std::size_t n = detail::num_branches(branch_fns);
  if (n == 0) throw core::value_error("switch_: expected at least one branch, found none");
  if constexpr (std::is_same_v<I, Array> || detail::any_array_v<Ops...>) {
    Array i = detail::scalar_operand("switch_", "index", index);
    if (!core::is_integer(i.dtype()))
      throw core::type_error("switch_: expected an integer index, found " +
                             detail::aval_of(i).str());
    // An int64 index is clamped before it is narrowed: converted first (as lax.switch does),
    // 2^32 + 1 would wrap to 1 and pick branch 1 instead of the last.
    const DType index_dtype = i.dtype();
    if (index_dtype == DType::int64) i = xpr::clip(i, 0, static_cast<std::int64_t>(n - 1));
    i = convert_element_type(i, DType::int32);
    if (i.is_concrete()) {
      i = Array(
          std::clamp<std::int32_t>(i.item<std::int32_t>(), 0, static_cast<std::int32_t>(n - 1)));
      i = convert_element_type(i, DType::int32);
    } else if (index_dtype != DType::int64) {
      i = xpr::clip(i, 0, static_cast<std::int32_t>(n - 1));
    }
    using Out = typename detail::branch0_result<Branches, Ops...>::type;
    auto flat = tree_flatten(std::forward_as_tuple(operands...));
    std::vector<std::string> names;
    for (std::size_t b = 0; b < n; ++b) names.push_back("branch " + std::to_string(b));
    std::optional<PyTreeDef> out_def;
    Arrays outs = detail::switch_leaves<Out, Branches, Ops...>("switch_", i, branch_fns, names,
                                                               flat.first, flat.second, out_def);
    return tree_unflatten<Out>(*out_def, outs);
  } else {
    static_assert(std::is_integral_v<I>, "xpr::switch_: the index must be an integer or an Array");
    const auto i = static_cast<std::int64_t>(index);
    return detail::call_branch(
        branch_fns,
        static_cast<std::size_t>(std::clamp<std::int64_t>(i, 0, static_cast<std::int64_t>(n) - 1)),
        operands...);
  }
}

}  // namespace xpr::rt

namespace xpr {
using rt::switch_;
}  // namespace xpr

#if XPR_DEFINITIONS

namespace xpr::rt::detail {

XPR_FUNC Array staged_zeros(const ShapedArray& aval) {
  Array zero = zeros_like_aval(ShapedArray{Shape{}, aval.dtype, aval.weak_type});
  if (aval.ndim() == 0) return zero;
  return broadcast_in_dim(zero, aval.shape, {});
}

XPR_FUNC Atom append_zeros(Jaxpr& j, const ShapedArray& aval) {
  Array zero = zeros_like_aval(ShapedArray{Shape{}, aval.dtype, aval.weak_type});
  if (aval.ndim() == 0) return Literal{zero};
  Var out(aval);
  j.eqns.push_back(Eqn{&broadcast_in_dim_p,
                       {Literal{zero}},
                       {{"shape", aval.shape}, {"broadcast_dimensions", Axes{}}},
                       {out}});
  return out;
}

XPR_FUNC JoinedBranches join_consts(std::vector<ConvertedJaxpr> branches) {
  JoinedBranches out;
  // slot_of[b][k]: the joined position of branch b's constant k.
  std::vector<std::vector<std::size_t>> slot_of(branches.size());
  for (std::size_t b = 0; b < branches.size(); ++b) {
    std::vector<bool> taken;
    for (const Array& c : branches[b].consts) {
      taken.resize(out.consts.size(), false);
      std::size_t s = 0;
      while (s < out.consts.size() && (taken[s] || out.consts[s].impl() != c.impl())) ++s;
      if (s == out.consts.size()) {
        out.consts.push_back(c);
        taken.push_back(false);
      }
      taken[s] = true;
      slot_of[b].push_back(s);
    }
  }
  for (std::size_t b = 0; b < branches.size(); ++b) {
    Jaxpr j = branches[b].jaxpr->jaxpr;
    const std::size_t n = branches[b].consts.size();
    std::vector<std::optional<Var>> slots(out.consts.size());
    for (std::size_t k = 0; k < n; ++k) slots[slot_of[b][k]] = j.invars[k];
    std::vector<Var> invars;
    for (std::size_t s = 0; s < slots.size(); ++s)
      invars.push_back(slots[s] ? *slots[s] : Var(detail::aval_of(out.consts[s])));
    invars.insert(invars.end(), j.invars.begin() + static_cast<std::ptrdiff_t>(n), j.invars.end());
    j.invars = std::move(invars);
    out.branches.push_back(share(ClosedJaxpr{std::move(j), branches[b].jaxpr->consts}));
  }
  return out;
}

XPR_FUNC ConvertedJaxpr jvp_jaxpr_instantiated(const ClosedJaxpr& jaxpr,
                                               const std::vector<bool>& nonzero,
                                               const std::vector<bool>& instantiate) {
  const std::size_t n = jaxpr.jaxpr.invars.size();
  Avals in_avals = jaxpr.in_avals();
  for (std::size_t i = 0; i < n; ++i)
    if (nonzero[i]) in_avals.push_back(jaxpr.jaxpr.invars[i].aval());
  FlatFunction f = [&](std::span<const Array> in) {
    Tangents tangents(n);
    for (std::size_t i = 0, k = n; i < n; ++i)
      if (nonzero[i]) tangents[i] = in[k++];
    FlatFunction body = [&](std::span<const Array> x) { return eval_jaxpr(jaxpr, x); };
    auto [primals_out, tangents_out] = jvp_flat_symbolic(body, in.first(n), tangents);
    const std::size_t m = primals_out.size();
    for (std::size_t i = 0; i < m; ++i)
      if (instantiate[i])
        primals_out.push_back(tangents_out[i] ? *tangents_out[i]
                                              : staged_zeros(detail::aval_of(primals_out[i])));
    return primals_out;
  };
  return trace_to_converted_jaxpr(f, in_avals);
}

XPR_FUNC std::pair<ClosedJaxpr, std::vector<bool>> batch_jaxpr_outs(
    const ClosedJaxpr& jaxpr, std::span<const BatchDim> dims, std::span<const ShapedArray> in_avals,
    std::int64_t axis_size, const std::vector<bool>& instantiate) {
  std::vector<bool> out_batched;
  FlatFunction f = [&](std::span<const Array> in) {
    MainScope scope(std::in_place_type<BatchTrace>, "vmap", axis_size);
    BatchTrace& trace = scope.trace<BatchTrace>();
    Arrays tracers;
    for (std::size_t i = 0; i < in.size(); ++i)
      tracers.push_back(trace.make_tracer(in[i], dims[i]));
    Arrays outs = eval_jaxpr(jaxpr, tracers);
    out_batched.clear();
    Arrays result;
    for (std::size_t k = 0; k < outs.size(); ++k) {
      Array t = full_raise(trace, outs[k]);
      const auto& bt = static_cast<const BatchTracer&>(*t.impl());
      if (bt.batch_dim()) {
        result.push_back(*bt.batch_dim() == 0 ? bt.value()
                                              : moveaxis(bt.value(), *bt.batch_dim(), 0));
      } else if (k < instantiate.size() && instantiate[k]) {
        result.push_back(broadcast_batch(bt.value(), axis_size, 0));
      } else {
        result.push_back(bt.value());
      }
      out_batched.push_back(bt.batch_dim().has_value() ||
                            (k < instantiate.size() && instantiate[k]));
    }
    return result;
  };
  ClosedJaxpr batched = make_jaxpr_flat(f, in_avals);
  return {std::move(batched), std::move(out_batched)};
}

XPR_FUNC std::vector<bool> any_of_each(const std::vector<std::vector<bool>>& flags, std::size_t n) {
  std::vector<bool> out(n, false);
  for (const auto& f : flags)
    for (std::size_t i = 0; i < n && i < f.size(); ++i) out[i] = out[i] || f[i];
  return out;
}

XPR_FUNC CondSplit split_cond(const JaxprTuple& branches, const std::vector<bool>& ops_unknown) {
  const std::size_t n_out = branches[0]->jaxpr.outvars.size();
  std::vector<std::vector<bool>> outs;
  for (const JaxprParam& b : branches)
    outs.push_back(partial_eval_jaxpr(*b, ops_unknown).out_unknowns);
  CondSplit split;
  split.out_unknowns = any_of_each(outs, n_out);
  const std::size_t n_known_out = n_out - count_true(split.out_unknowns);

  std::vector<PartialEvalJaxpr> parts;
  for (const JaxprParam& b : branches)
    parts.push_back(partial_eval_jaxpr(*b, ops_unknown, split.out_unknowns));

  // Residual slots shared by type (JAX's `_merge_branch_residuals`): the k-th residual of a type
  // in one branch shares a slot with the k-th residual of that type in every other branch.
  std::vector<std::vector<std::size_t>> slot_of(parts.size());
  for (std::size_t b = 0; b < parts.size(); ++b) {
    const Jaxpr& kj = parts[b].known.jaxpr;
    std::vector<bool> taken(split.res_avals.size(), false);
    for (std::size_t r = 0; r < parts[b].num_res; ++r) {
      const ShapedArray& a = aval_of(kj.outvars[n_known_out + r]);
      std::size_t s = 0;
      while (s < split.res_avals.size() && (taken[s] || !(split.res_avals[s] == a))) ++s;
      if (s == split.res_avals.size()) {
        split.res_avals.push_back(a);
        taken.push_back(false);
      }
      taken[s] = true;
      slot_of[b].push_back(s);
    }
  }
  for (std::size_t b = 0; b < parts.size(); ++b) {
    if (!parts[b].known.consts.empty() || !parts[b].known.jaxpr.constvars.empty())
      throw core::type_error("cond: expected branches without constants, found a branch with " +
                             std::to_string(parts[b].known.consts.size()));
    // Known: the known outputs, then every slot (this branch's residual or zeros).
    Jaxpr kj = parts[b].known.jaxpr;
    std::vector<std::optional<Atom>> res(split.res_avals.size());
    for (std::size_t r = 0; r < parts[b].num_res; ++r)
      res[slot_of[b][r]] = kj.outvars[n_known_out + r];
    kj.outvars.erase(kj.outvars.begin() + static_cast<std::ptrdiff_t>(n_known_out),
                     kj.outvars.end());
    for (std::size_t s = 0; s < res.size(); ++s)
      kj.outvars.push_back(res[s] ? *res[s] : append_zeros(kj, split.res_avals[s]));
    split.known.push_back(share(ClosedJaxpr{std::move(kj), {}}));
    // Unknown: every slot as an input (this branch's residual or an unused variable).
    Jaxpr uj = parts[b].unknown.jaxpr;
    std::vector<std::optional<Var>> in(split.res_avals.size());
    for (std::size_t r = 0; r < parts[b].num_res; ++r) in[slot_of[b][r]] = uj.invars[r];
    std::vector<Var> invars;
    for (std::size_t s = 0; s < in.size(); ++s)
      invars.push_back(in[s] ? *in[s] : Var(split.res_avals[s]));
    invars.insert(invars.end(), uj.invars.begin() + static_cast<std::ptrdiff_t>(parts[b].num_res),
                  uj.invars.end());
    uj.invars = std::move(invars);
    split.unknown.push_back(share(ClosedJaxpr{std::move(uj), {}}));
  }
  return split;
}

}  // namespace xpr::rt::detail

namespace xpr::rt {

XPR_FUNC const JaxprTuple& CondP::branches(const Params& params) {
  const JaxprTuple& bs = params.get<JaxprTuple>("branches");
  if (bs.empty()) throw core::type_error("cond: expected at least one branch, found none");
  for (const JaxprParam& b : bs)
    if (!b) throw core::type_error("cond: expected a jaxpr for every branch, found None");
  return bs;
}

XPR_FUNC Arrays CondP::impl(std::span<const Array> args, const Params& params) const {
  const JaxprTuple& bs = branches(params);
  if (args.empty()) throw core::type_error("cond: expected an index operand, found none");
  auto i = static_cast<std::int64_t>(args[0].item<std::int32_t>());
  i = std::clamp<std::int64_t>(i, 0, static_cast<std::int64_t>(bs.size()) - 1);
  return eval_jaxpr(*bs[static_cast<std::size_t>(i)], args.subspan(1));
}

XPR_FUNC Avals CondP::abstract_eval(std::span<const ShapedArray> args, const Params& params) const {
  const JaxprTuple& bs = branches(params);
  if (args.empty() || args[0].ndim() != 0 || args[0].dtype != DType::int32)
    throw core::type_error("cond: expected an int32 scalar index as the first operand, found " +
                           (args.empty() ? std::string("no operand") : args[0].str()));
  const Avals out = bs[0]->out_avals();
  for (std::size_t b = 0; b < bs.size(); ++b) {
    const Jaxpr& j = bs[b]->jaxpr;
    if (j.invars.size() + 1 != args.size())
      throw core::type_error("cond: branch " + std::to_string(b) + " takes " +
                             std::to_string(j.invars.size()) + " operands, found " +
                             std::to_string(args.size() - 1));
    for (std::size_t i = 0; i < j.invars.size(); ++i)
      if (!j.invars[i].aval().same_type(args[i + 1]))
        throw core::type_error("cond: branch " + std::to_string(b) + " expects operand " +
                               std::to_string(i) + " of type " + j.invars[i].aval().str() +
                               ", found " + args[i + 1].str());
    const Avals o = bs[b]->out_avals();
    if (o.size() != out.size())
      throw core::type_error("cond: branch 0 has " + std::to_string(out.size()) +
                             " outputs, branch " + std::to_string(b) + " has " +
                             std::to_string(o.size()));
    for (std::size_t k = 0; k < o.size(); ++k)
      if (!o[k].same_type(out[k]))
        throw core::type_error(
            "cond: expected every branch to return the same types, found "
            "output " +
            std::to_string(k) + " of type " + out[k].str() + " in branch 0 and " + o[k].str() +
            " in branch " + std::to_string(b));
  }
  return out;
}

XPR_FUNC std::pair<Arrays, Tangents> CondP::jvp_symbolic(std::span<const Array> primals,
                                                         std::span<const Tangent> tangents,
                                                         const Params& params) const {
  const JaxprTuple& bs = branches(params);
  std::vector<bool> nonzero;
  for (std::size_t i = 1; i < tangents.size(); ++i) nonzero.push_back(tangents[i].has_value());
  const std::size_t n_out = bs[0]->jaxpr.outvars.size();
  std::vector<std::vector<bool>> branch_nz;
  for (const JaxprParam& b : bs) branch_nz.push_back(detail::jvp_jaxpr(*b, nonzero).out_nonzero);
  const std::vector<bool> out_nz = detail::any_of_each(branch_nz, n_out);
  std::vector<detail::ConvertedJaxpr> jvps;
  for (const JaxprParam& b : bs)
    jvps.push_back(detail::jvp_jaxpr_instantiated(*b, nonzero, out_nz));
  detail::JoinedBranches joined = detail::join_consts(std::move(jvps));
  Arrays operands{primals[0]};
  operands.insert(operands.end(), joined.consts.begin(), joined.consts.end());
  operands.insert(operands.end(), primals.begin() + 1, primals.end());
  for (std::size_t i = 1; i < tangents.size(); ++i)
    if (tangents[i]) operands.push_back(*tangents[i]);
  Arrays outs = rt::bind(*this, operands, Params{{"branches", joined.branches}});
  Arrays primals_out(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(n_out));
  Tangents tangents_out;
  for (std::size_t i = 0, k = n_out; i < n_out; ++i)
    tangents_out.push_back(out_nz[i] ? Tangent(outs[k++]) : std::nullopt);
  return {std::move(primals_out), std::move(tangents_out)};
}

XPR_FUNC Cotangents CondP::transpose(std::span<const Cotangent> cts,
                                     std::span<const LinearArg> args, const Params& params) const {
  const JaxprTuple& bs = branches(params);
  if (args.empty() || is_undefined_primal(args[0]))
    throw core::type_error("cond: cannot transpose with respect to the index");
  const Array& index = std::get<Array>(args[0]);
  const std::span<const LinearArg> ops = args.subspan(1);
  Arrays known;
  Avals in_avals;
  for (const LinearArg& a : ops)
    if (!is_undefined_primal(a)) {
      known.push_back(std::get<Array>(a));
      in_avals.push_back(detail::aval_of(known.back()));
    }
  const Avals out_avals = bs[0]->out_avals();
  in_avals.insert(in_avals.end(), out_avals.begin(), out_avals.end());
  // Each transposed branch maps (known operands, output cotangents) to the cotangents of the
  // linear operands (JAX's `_transpose_cond_jaxpr`).
  std::vector<detail::ConvertedJaxpr> transposed;
  for (const JaxprParam& b : bs) {
    FlatFunction f = [&](std::span<const Array> in) {
      std::vector<LinearArg> la;
      std::size_t k = 0;
      for (const LinearArg& a : ops)
        la.push_back(is_undefined_primal(a) ? LinearArg(a) : LinearArg(in[k++]));
      Cotangents cts_out(in.begin() + static_cast<std::ptrdiff_t>(k), in.end());
      Cotangents cts_in = backward_pass(b->jaxpr, b->consts, la, cts_out);
      Arrays out;
      for (std::size_t i = 0; i < ops.size(); ++i)
        if (is_undefined_primal(ops[i]))
          out.push_back(cts_in[i] ? *cts_in[i] : detail::staged_zeros(aval_of(ops[i])));
      return out;
    };
    transposed.push_back(detail::trace_to_converted_jaxpr(f, in_avals));
  }
  detail::JoinedBranches joined = detail::join_consts(std::move(transposed));
  Arrays operands{index};
  operands.insert(operands.end(), joined.consts.begin(), joined.consts.end());
  operands.insert(operands.end(), known.begin(), known.end());
  for (std::size_t k = 0; k < cts.size(); ++k)
    operands.push_back(instantiate_zeros(cts[k], out_avals[k]));
  Arrays outs = rt::bind(*this, operands, Params{{"branches", joined.branches}});
  Cotangents result{std::nullopt};
  for (std::size_t i = 0, k = 0; i < ops.size(); ++i)
    result.push_back(is_undefined_primal(ops[i]) ? Cotangent(outs[k++]) : std::nullopt);
  return result;
}

XPR_FUNC std::pair<Arrays, BatchDims> CondP::batch(std::span<const Array> args,
                                                   std::span<const BatchDim> dims,
                                                   std::int64_t axis_size,
                                                   const Params& params) const {
  const JaxprTuple& bs = branches(params);
  if (!detail::any_batched(dims)) return {rt::bind(*this, args, params), BatchDims(args.size())};
  if (dims[0]) {
    // A batched index: every branch runs on every lane and select_n picks the lanes' results
    // (JAX's `_cond_batching_rule`). Each branch sees its operands through a select that stops
    // their gradient on the lanes it does not own, so a branch that is not taken cannot put a
    // NaN into a derivative (jax-ml/jax#1052).
    Arrays moved;
    for (std::size_t i = 0; i < args.size(); ++i) {
      if (!dims[i]) {
        moved.push_back(broadcast_batch(args[i], axis_size, 0));
      } else {
        moved.push_back(*dims[i] != 0 ? moveaxis(args[i], *dims[i], 0) : args[i]);
      }
    }
    const Array& index = moved[0];
    const std::span<const Array> ops(moved.begin() + 1, moved.end());
    const BatchDims at_front(ops.size(), BatchDim(0));
    const Avals op_avals = detail::avals_of_values(ops);
    std::vector<Arrays> outs;
    for (std::size_t b = 0; b < bs.size(); ++b) {
      ClosedJaxpr batched = detail::batch_jaxpr(*bs[b], at_front, op_avals);
      Array mine = index == static_cast<std::int32_t>(b);
      Arrays ops_b;
      for (const Array& x : ops) {
        Array p = broadcast_in_dim(mine, x.shape(), {0});
        ops_b.push_back(bind1(select_n_p, {p, stop_gradient(x), x}));
      }
      outs.push_back(eval_jaxpr(batched, ops_b));
    }
    Arrays result;
    for (std::size_t k = 0; k < outs[0].size(); ++k) {
      Arrays cases{broadcast_in_dim(index, outs[0][k].shape(), {0})};
      for (const Arrays& o : outs) cases.push_back(o[k]);
      result.push_back(rt::bind(select_n_p, cases).front());
    }
    return {std::move(result), BatchDims(result.size(), BatchDim(0))};
  }
  // An unbatched index stays a cond, of the batched branches: an output is batched (at 0) when
  // it is in some branch, and then in every branch (JAX's `_cond_batching_rule`).
  auto [moved, at_front] = detail::batch_at_front(args.subspan(1), dims.subspan(1));
  const Avals op_avals = detail::avals_of_values(moved);
  std::vector<std::vector<bool>> branch_bat;
  for (const JaxprParam& b : bs)
    branch_bat.push_back(detail::batch_jaxpr_outs(*b, at_front, op_avals, axis_size, {}).second);
  const std::vector<bool> out_bat = detail::any_of_each(branch_bat, bs[0]->jaxpr.outvars.size());
  std::vector<detail::ConvertedJaxpr> batched;
  for (const JaxprParam& b : bs)
    batched.push_back(detail::convert_constvars(
        detail::batch_jaxpr_outs(*b, at_front, op_avals, axis_size, out_bat).first));
  detail::JoinedBranches joined = detail::join_consts(std::move(batched));
  Arrays operands{args[0]};
  operands.insert(operands.end(), joined.consts.begin(), joined.consts.end());
  operands.insert(operands.end(), moved.begin(), moved.end());
  Arrays outs = rt::bind(*this, operands, Params{{"branches", joined.branches}});
  BatchDims out_dims;
  for (bool b : out_bat) out_dims.push_back(b ? BatchDim(0) : std::nullopt);
  return {std::move(outs), std::move(out_dims)};
}

XPR_FUNC std::optional<Arrays> CondP::partial_eval(PartialEvalTrace& trace,
                                                   std::span<const Array> tracers,
                                                   const Params& params) const {
  const JaxprTuple& bs = branches(params);
  const PartialVal& index = detail::as_pe_tracer(tracers[0]).pval();
  if (index.is_unknown()) return std::nullopt;  // the whole cond is staged
  std::vector<bool> ops_unknown;
  Arrays known_in{*index.value};
  Arrays unknown_in;
  for (std::size_t i = 1; i < tracers.size(); ++i) {
    const PartialVal& pv = detail::as_pe_tracer(tracers[i]).pval();
    ops_unknown.push_back(pv.is_unknown());
    if (pv.is_known())
      known_in.push_back(*pv.value);
    else
      unknown_in.push_back(tracers[i]);
  }
  detail::CondSplit split = detail::split_cond(bs, ops_unknown);
  const std::size_t n_out = split.out_unknowns.size();
  const std::size_t n_known = n_out - detail::count_true(split.out_unknowns);
  const std::size_t n_res = split.res_avals.size();
  Arrays known_out;
  if (n_known + n_res > 0) known_out = rt::bind(*this, known_in, Params{{"branches", split.known}});
  Arrays unknown_out;
  if (n_known < n_out) {
    Arrays staged_in{tracers[0]};
    for (std::size_t r = 0; r < n_res; ++r) staged_in.push_back(trace.pure(known_out[n_known + r]));
    staged_in.insert(staged_in.end(), unknown_in.begin(), unknown_in.end());
    unknown_out = trace.stage(*this, staged_in, Params{{"branches", split.unknown}},
                              split.unknown[0]->out_avals());
  }
  Arrays out;
  for (std::size_t i = 0, k = 0, u = 0; i < n_out; ++i)
    out.push_back(split.out_unknowns[i] ? unknown_out[u++] : trace.pure(known_out[k++]));
  return out;
}

XPR_FUNC std::optional<PartialEvalEqn> CondP::partial_eval_jaxpr(
    const std::vector<bool>& in_unknowns, const Eqn& eqn) const {
  if (in_unknowns.empty() || in_unknowns[0] || detail::count_true(in_unknowns) == 0)
    return std::nullopt;  // all known, or an unknown index: the default rule
  std::vector<bool> ops_unknown(in_unknowns.begin() + 1, in_unknowns.end());
  detail::CondSplit split = detail::split_cond(branches(eqn.params), ops_unknown);
  PartialEvalEqn result;
  result.out_unknowns = split.out_unknowns;
  std::vector<Var> res;
  for (const ShapedArray& a : split.res_avals) res.emplace_back(a);
  Eqn known{eqn.primitive, {eqn.inputs[0]}, Params{{"branches", split.known}}, {}};
  Eqn unknown{eqn.primitive, {eqn.inputs[0]}, Params{{"branches", split.unknown}}, {}};
  unknown.inputs.insert(unknown.inputs.end(), res.begin(), res.end());
  for (std::size_t i = 1; i < eqn.inputs.size(); ++i)
    (in_unknowns[i] ? unknown : known).inputs.push_back(eqn.inputs[i]);
  for (std::size_t k = 0; k < eqn.outputs.size(); ++k)
    (split.out_unknowns[k] ? unknown : known).outputs.push_back(eqn.outputs[k]);
  known.outputs.insert(known.outputs.end(), res.begin(), res.end());
  if (!known.outputs.empty()) result.known = std::move(known);
  if (!unknown.outputs.empty()) {
    result.unknown = std::move(unknown);
    if (const Var* v = std::get_if<Var>(&eqn.inputs[0])) result.residuals.push_back(*v);
    result.residuals.insert(result.residuals.end(), res.begin(), res.end());
  }
  return result;
}

XPR_FUNC std::optional<DceEqn> CondP::dce(const std::vector<bool>& used_outputs,
                                          const Eqn& eqn) const {
  const JaxprTuple& bs = branches(eqn.params);
  const std::size_t n_ops = eqn.inputs.size() - 1;
  std::vector<bool> used(n_ops, false);
  for (const JaxprParam& b : bs) {
    std::vector<bool> u = dce_jaxpr(b->jaxpr, used_outputs, false).second;
    for (std::size_t i = 0; i < n_ops; ++i) used[i] = used[i] || u[i];
  }
  JaxprTuple pruned;
  for (const JaxprParam& b : bs) {
    ClosedJaxpr d{dce_jaxpr(b->jaxpr, used_outputs, true).first, b->consts};
    std::vector<Var> invars;
    for (std::size_t i = 0; i < n_ops; ++i)
      if (used[i]) invars.push_back(d.jaxpr.invars[i]);
    d.jaxpr.invars = std::move(invars);
    pruned.push_back(detail::share(std::move(d)));
  }
  Eqn e{eqn.primitive, {eqn.inputs[0]}, detail::with_param(eqn.params, "branches", pruned), {}};
  for (std::size_t i = 0; i < n_ops; ++i)
    if (used[i]) e.inputs.push_back(eqn.inputs[i + 1]);
  for (std::size_t k = 0; k < eqn.outputs.size(); ++k)
    if (used_outputs[k]) e.outputs.push_back(eqn.outputs[k]);
  std::vector<bool> used_inputs{true};
  used_inputs.insert(used_inputs.end(), used.begin(), used.end());
  return DceEqn{std::move(used_inputs), std::move(e)};
}

}  // namespace xpr::rt

namespace xpr::rt::detail {

/// For branch outputs of different dtypes where one is weakly typed (a C++ number returned as
/// it is, `return Array(0.0)` beside an f32 branch): what to write instead. JAX raises too.
inline std::string weak_hint(const ShapedArray& a, const ShapedArray& b) {
  if (a.dtype == b.dtype || a.weak_type == b.weak_type) return "";
  const ShapedArray& strong = a.weak_type ? b : a;
  return " (the " + std::string(core::name((a.weak_type ? a : b).dtype)) +
         " one is weakly typed, a C++ number: give it the other's dtype " +
         std::string(core::name(strong.dtype)) +
         ", e.g. xpr::zeros_like(x) or xpr::full_like(x, value))";
}

XPR_FUNC Arrays bind_branches(const char* fn, const Array& index, std::span<const FlatFunction> fns,
                              std::span<std::optional<PyTreeDef>> out_defs,
                              std::span<const std::string> names, std::span<const Array> leaves) {
  const Avals avals = avals_of_values(leaves);
  std::vector<ConvertedJaxpr> traced;
  for (const FlatFunction& f : fns) traced.push_back(trace_to_converted_jaxpr(f, avals));
  for (std::size_t b = 1; b < fns.size(); ++b) {
    if (*out_defs[b] != *out_defs[0])
      throw core::type_error(std::string(fn) + ": expected " + names[0] + " and " + names[b] +
                             " to return the same structure, found " + out_defs[0]->str() + " in " +
                             names[0] + " and " + out_defs[b]->str() + " in " + names[b]);
    const Avals o0 = traced[0].jaxpr->out_avals(), ob = traced[b].jaxpr->out_avals();
    for (std::size_t k = 0; k < o0.size(); ++k)
      if (!o0[k].same_type(ob[k]))
        throw core::type_error(std::string(fn) + ": expected " + names[0] + " and " + names[b] +
                               " to return the same types, found output " + std::to_string(k) +
                               " of type " + o0[k].str() + " in " + names[0] + " and " +
                               ob[k].str() + " in " + names[b] + weak_hint(o0[k], ob[k]));
  }
  JoinedBranches joined = join_consts(std::move(traced));
  Arrays operands{index};
  operands.insert(operands.end(), joined.consts.begin(), joined.consts.end());
  operands.insert(operands.end(), leaves.begin(), leaves.end());
  return rt::bind(cond_p, operands, Params{{"branches", std::move(joined.branches)}});
}

}  // namespace xpr::rt::detail
#endif  // XPR_DEFINITIONS
