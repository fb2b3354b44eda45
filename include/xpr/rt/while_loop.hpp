// SPDX-License-Identifier: MIT
// `xpr::while_loop(cond_fn, body_fn, init)` (JAX's `lax.while_loop`, unbounded) and its primitive
// `while[cond_jaxpr=... body_jaxpr=... cond_nconsts=.. body_nconsts=..]` with all of its rules
// (jax/_src/lax/control_flow/loops.py). Reverse mode through it throws, as in JAX; the bounded
// form with `xpr::max_trips(N)` lives elsewhere. See docs/control-flow.md.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/core/error.hpp"
#include "xpr/rt/api_transformations.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/cond.hpp"
#include "xpr/rt/detail/higher_order.hpp"
#include "xpr/rt/interp/batch.hpp"
#include "xpr/rt/interp/partial_eval.hpp"
#include "xpr/rt/jaxpr.hpp"
#include "xpr/rt/jaxpr_eval.hpp"
#include "xpr/rt/loop_iteration_limit.hpp"
#include "xpr/rt/numpy_reductions.hpp"
#include "xpr/rt/numpy_shape.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/prims/convert.hpp"
#include "xpr/rt/prims/select.hpp"
#include "xpr/rt/prims/shape.hpp"
#include "xpr/rt/pytree.hpp"
#include "xpr/rt/trace.hpp"
#include "xpr/rt/transformations.hpp"

namespace xpr::rt {

namespace detail {

inline std::vector<bool> or_each(std::vector<bool> a, const std::vector<bool>& b) {
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) a[i] = a[i] || b[i];
  return a;
}

std::vector<bool> concat_flags(const std::vector<bool>& a, const std::vector<bool>& b);

template <class T>
std::vector<T> slice(const std::vector<T>& v, std::size_t from, std::size_t to) {
  return std::vector<T>(v.begin() + static_cast<std::ptrdiff_t>(from),
                        v.begin() + static_cast<std::ptrdiff_t>(to));
}

/// `j` taking only the inputs marked in `keep` (the others must be unused).
JaxprParam keep_invars(const ClosedJaxpr& j, const std::vector<bool>& keep);

/// A loop body traced on its initial carry `leaves` (structure `def`; `body` sets `body_def` to
/// the structure it returns): checks the structure, converts weakly typed leaves (C++ numbers) to
/// the types the body gives them (JAX's `_promote_weak_typed_inputs`), tracing again if one
/// changed, and checks that the body keeps every leaf's type, naming the first that it does not.
ConvertedJaxpr trace_loop_body(const FlatFunction& body, Arrays& leaves, const PyTreeDef& def,
                               const std::optional<PyTreeDef>& body_def);

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// while_p
// ---------------------------------------------------------------------------------------------

/// `while[body_jaxpr=.. body_nconsts=nb cond_jaxpr=.. cond_nconsts=nc] cconsts bconsts init`: the
/// carry starts at `init` and is replaced by `body_jaxpr(bconsts, carry)` while
/// `cond_jaxpr(cconsts, carry)` (a bool scalar) holds. Rules (JAX's loops.py): jvp carries the
/// tangents of the carries that can become nonzero (a fixed point over the body); vmap with an
/// unbatched predicate batches the body, and with a batched one runs until every lane is done,
/// each finished lane keeping its value through a select; partial evaluation computes the known
/// carries with a known loop when the predicate is known and stages the whole loop for the
/// unknown ones; transpose throws (the number of iterations is not known, so the residuals of
/// reverse mode cannot be stored: JAX's `_while_transpose_error`); dce prunes the carries no
/// output or predicate needs.
class WhileP final : public Primitive, public PartialEvalRules {
 public:
  constexpr WhileP() : Primitive("while", true) {}

  struct Parts {
    const ClosedJaxpr& cond;
    const ClosedJaxpr& body;
    std::size_t nc, nb;
  };
  XPR_MEMBER static Parts parts(const Params& params);
  XPR_MEMBER static Params make_params(JaxprParam cond, std::size_t nc, JaxprParam body,
                                       std::size_t nb);

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

  /// Which carries are unknown (a fixed point over the body) and whether the predicate is.
  XPR_MEMBER static std::pair<std::vector<bool>, bool> unknown_carries(
      const Parts& p, const std::vector<bool>& unknowns);

  /// The loop over the known carries only, on the known constants.
  XPR_MEMBER static Params known_params(const Parts& p, const std::vector<bool>& unknowns,
                                        const std::vector<bool>& carry_uk);

  XPR_MEMBER std::optional<Arrays> partial_eval(PartialEvalTrace& trace,
                                                std::span<const Array> tracers,
                                                const Params& params) const override;

  XPR_MEMBER std::optional<PartialEvalEqn> partial_eval_jaxpr(const std::vector<bool>& in_unknowns,
                                                              const Eqn& eqn) const override;

  XPR_MEMBER std::optional<DceEqn> dce(const std::vector<bool>& used_outputs,
                                       const Eqn& eqn) const override;
};

inline constinit const WhileP while_p{};

// ---------------------------------------------------------------------------------------------
// xpr::while_loop
// ---------------------------------------------------------------------------------------------

/// `while_loop(cond_fn, body_fn, init)`: `val = init; while (cond_fn(val)) val = body_fn(val);
/// return val;` as JAX's `lax.while_loop`, staged as one `while` equation (also eagerly, where it
/// runs at once). The carry is a pytree; `body_fn` must return it with the same structure, shapes
/// and dtypes (`type_error` otherwise; weakly typed C++ numbers in `init` take the body's types)
/// and `cond_fn` a bool scalar. Both may close over other values, tracers included. Forward mode
/// and vmap work (a batched predicate runs until every lane is done); reverse mode throws
/// `type_error`, because the number of iterations has no bound: use `xpr::scan`, `xpr::fori_loop`
/// with static bounds, or `xpr::max_trips(N)`. See examples/control_flow.cpp.
template <class C, class B, class T>
requires Pytree<T>
auto while_loop(const C& cond_fn, const B& body_fn, const T& init) {
  using Carry = tree_of_arrays_t<T>;
  auto flat = tree_flatten(init);
  Arrays leaves = std::move(flat.first);
  const PyTreeDef def = flat.second;
  std::optional<PyTreeDef> body_def, cond_def;
  C cf = cond_fn;
  B bf = body_fn;
  FlatFunction cond_flat = [&](std::span<const Array> in) {
    auto out = cf(tree_unflatten<Carry>(def, in));
    auto o = tree_flatten(out);
    cond_def = o.second;
    return o.first;
  };
  FlatFunction body_flat = [&](std::span<const Array> in) {
    auto out = bf(tree_unflatten<Carry>(def, in));
    auto o = tree_flatten(out);
    body_def = o.second;
    return o.first;
  };
  detail::ConvertedJaxpr body = detail::trace_loop_body(body_flat, leaves, def, body_def);
  detail::ConvertedJaxpr cond =
      detail::trace_to_converted_jaxpr(cond_flat, detail::avals_of_values(leaves));
  const Avals pred = cond.jaxpr->out_avals();
  if (pred.size() != 1 || pred[0].ndim() != 0 || pred[0].dtype != DType::bool_)
    throw core::type_error("while_loop: expected cond_fn to return a bool scalar, found " +
                           (pred.size() == 1 ? pred[0].str() : cond_def->str()));
  Arrays operands = detail::concat(cond.consts, body.consts);
  operands.insert(operands.end(), leaves.begin(), leaves.end());
  Arrays outs =
      rt::bind(while_p, operands,
               WhileP::make_params(cond.jaxpr, cond.consts.size(), body.jaxpr, body.consts.size()));
  return tree_unflatten<Carry>(def, outs);
}

}  // namespace xpr::rt

namespace xpr {
using rt::while_loop;
}  // namespace xpr

#if XPR_DEFINITIONS

namespace xpr::rt::detail {

XPR_FUNC ConvertedJaxpr trace_loop_body(const FlatFunction& body, Arrays& leaves,
                                        const PyTreeDef& def,
                                        const std::optional<PyTreeDef>& body_def) {
  ConvertedJaxpr traced = trace_to_converted_jaxpr(body, avals_of_values(leaves));
  if (*body_def != def)
    throw core::type_error("while_loop: expected body_fn to return the carry's structure " +
                           def.str() + ", found " + body_def->str());
  Avals out = traced.jaxpr->out_avals();
  bool changed = false;
  for (std::size_t k = 0; k < leaves.size(); ++k) {
    const ShapedArray& a = detail::aval_of(leaves[k]);
    if (a.weak_type && a.shape == out[k].shape && (a.dtype != out[k].dtype || !out[k].weak_type)) {
      leaves[k] = convert_element_type(leaves[k], out[k].dtype, out[k].weak_type);
      changed = true;
    }
  }
  if (changed) {
    traced = trace_to_converted_jaxpr(body, avals_of_values(leaves));
    out = traced.jaxpr->out_avals();
  }
  for (std::size_t k = 0; k < leaves.size(); ++k)
    if (!out[k].same_type(detail::aval_of(leaves[k])))
      throw core::type_error(
          "while_loop: expected body_fn to return the carry's types, found leaf " +
          std::to_string(k) + " of the carry of type " + detail::aval_of(leaves[k]).str() +
          " returned as " + out[k].str());
  return traced;
}

XPR_FUNC std::vector<bool> concat_flags(const std::vector<bool>& a, const std::vector<bool>& b) {
  std::vector<bool> out = a;
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

XPR_FUNC JaxprParam keep_invars(const ClosedJaxpr& j, const std::vector<bool>& keep) {
  ClosedJaxpr out = j;
  std::vector<Var> invars;
  for (std::size_t i = 0; i < keep.size(); ++i)
    if (keep[i]) invars.push_back(j.jaxpr.invars[i]);
  out.jaxpr.invars = std::move(invars);
  return share(std::move(out));
}

}  // namespace xpr::rt::detail

namespace xpr::rt {

XPR_FUNC WhileP::Parts WhileP::parts(const Params& params) {
  auto count = [&](const char* name) {
    std::int64_t n = params.get<std::int64_t>(name);
    if (n < 0) throw core::type_error(std::string("while: expected ") + name + " >= 0");
    return static_cast<std::size_t>(n);
  };
  return {detail::jaxpr_param(params, "cond_jaxpr"), detail::jaxpr_param(params, "body_jaxpr"),
          count("cond_nconsts"), count("body_nconsts")};
}

XPR_FUNC Params WhileP::make_params(JaxprParam cond, std::size_t nc, JaxprParam body,
                                    std::size_t nb) {
  return Params{{"body_jaxpr", std::move(body)},
                {"body_nconsts", static_cast<std::int64_t>(nb)},
                {"cond_jaxpr", std::move(cond)},
                {"cond_nconsts", static_cast<std::int64_t>(nc)}};
}

XPR_FUNC Arrays WhileP::impl(std::span<const Array> args, const Params& params) const {
  const Parts p = parts(params);
  const Arrays cconsts(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(p.nc));
  const Arrays bconsts(args.begin() + static_cast<std::ptrdiff_t>(p.nc),
                       args.begin() + static_cast<std::ptrdiff_t>(p.nc + p.nb));
  Arrays carry(args.begin() + static_cast<std::ptrdiff_t>(p.nc + p.nb), args.end());
  while (eval_jaxpr(p.cond, detail::concat(cconsts, carry)).front().item<bool>()) {
    LoopIterationLimit::count("while");  // a no-op unless a guard bounds untrusted loops
    carry = eval_jaxpr(p.body, detail::concat(bconsts, carry));
  }
  return carry;
}

XPR_FUNC Avals WhileP::abstract_eval(std::span<const ShapedArray> args,
                                     const Params& params) const {
  const Parts p = parts(params);
  if (p.nc + p.nb > args.size())
    throw core::type_error("while: expected at least " + std::to_string(p.nc + p.nb) +
                           " operands (the constants), found " + std::to_string(args.size()));
  const std::size_t n_carry = args.size() - p.nc - p.nb;
  auto check_inputs = [&](const char* what, const ClosedJaxpr& j, std::size_t from, std::size_t n) {
    if (j.jaxpr.invars.size() != n + n_carry)
      throw core::type_error(std::string("while: expected ") + what + " to take " +
                             std::to_string(n + n_carry) + " inputs, found " +
                             std::to_string(j.jaxpr.invars.size()));
    for (std::size_t i = 0; i < n + n_carry; ++i) {
      const ShapedArray& a = args[i < n ? from + i : p.nc + p.nb + (i - n)];
      if (!j.jaxpr.invars[i].aval().same_type(a))
        throw core::type_error(std::string("while: ") + what + " expects input " +
                               std::to_string(i) + " of type " + j.jaxpr.invars[i].aval().str() +
                               ", found " + a.str());
    }
  };
  check_inputs("cond_jaxpr", p.cond, 0, p.nc);
  check_inputs("body_jaxpr", p.body, p.nc, p.nb);
  const Avals pred = p.cond.out_avals();
  if (pred.size() != 1 || pred[0].ndim() != 0 || pred[0].dtype != DType::bool_)
    throw core::type_error("while: expected cond_jaxpr to return a bool scalar, found " +
                           detail::avals_str(pred));
  const Avals out = p.body.out_avals();
  if (out.size() != n_carry)
    throw core::type_error("while: expected body_jaxpr to return the " + std::to_string(n_carry) +
                           " carries, found " + std::to_string(out.size()) + " outputs");
  for (std::size_t k = 0; k < n_carry; ++k)
    if (!out[k].same_type(args[p.nc + p.nb + k]))
      throw core::type_error(
          "while: expected body_jaxpr to preserve the carry's type, found "
          "carry " +
          std::to_string(k) + " of type " + args[p.nc + p.nb + k].str() + " returned as " +
          out[k].str());
  return out;
}

XPR_FUNC std::pair<Arrays, Tangents> WhileP::jvp_symbolic(std::span<const Array> primals,
                                                          std::span<const Tangent> tangents,
                                                          const Params& params) const {
  const Parts p = parts(params);
  const std::size_t n = primals.size(), n_carry = n - p.nc - p.nb;
  std::vector<bool> nz;
  for (const Tangent& t : tangents) nz.push_back(t.has_value());
  const std::vector<bool> bconst_nz = detail::slice(nz, p.nc, p.nc + p.nb);
  // The carries whose tangents can be nonzero: those of `init`, and whatever the body makes
  // nonzero from them, to a fixed point (JAX's `_while_loop_jvp`).
  std::vector<bool> carry_nz = detail::slice(nz, p.nc + p.nb, n);
  for (std::size_t it = 0; it <= n_carry; ++it) {
    std::vector<bool> out =
        detail::jvp_jaxpr(p.body, detail::concat_flags(bconst_nz, carry_nz)).out_nonzero;
    std::vector<bool> joined = detail::or_each(carry_nz, out);
    if (joined == carry_nz) break;
    carry_nz = std::move(joined);
  }
  detail::ConvertedJaxpr body_jvp =
      detail::jvp_jaxpr_instantiated(p.body, detail::concat_flags(bconst_nz, carry_nz), carry_nz);
  // Its inputs are (new consts, bconsts, carry, bconst tangents, carry tangents); the loop
  // wants (consts..., carry...): move the bconst tangents before the carry.
  const std::size_t n_new = body_jvp.consts.size();
  const std::size_t n_bdot = detail::count_true(bconst_nz);
  {
    ClosedJaxpr j = *body_jvp.jaxpr;
    const std::vector<Var>& in = j.jaxpr.invars;
    std::vector<Var> reordered(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n_new + p.nb));
    auto at = [&](std::size_t k) { return in.begin() + static_cast<std::ptrdiff_t>(k); };
    const std::size_t carry_at = n_new + p.nb, bdot_at = carry_at + n_carry;
    reordered.insert(reordered.end(), at(bdot_at), at(bdot_at + n_bdot));
    reordered.insert(reordered.end(), at(carry_at), at(carry_at + n_carry));
    reordered.insert(reordered.end(), at(bdot_at + n_bdot), in.end());
    j.jaxpr.invars = std::move(reordered);
    body_jvp.jaxpr = detail::share(std::move(j));
  }
  // The predicate ignores the tangents.
  ClosedJaxpr cond = p.cond;
  for (std::size_t k = 0; k < n_carry; ++k)
    if (carry_nz[k]) cond.jaxpr.invars.emplace_back(detail::aval_of(primals[p.nc + p.nb + k]));
  Arrays operands(primals.begin(), primals.begin() + static_cast<std::ptrdiff_t>(p.nc));
  operands.insert(operands.end(), body_jvp.consts.begin(), body_jvp.consts.end());
  operands.insert(operands.end(), primals.begin() + static_cast<std::ptrdiff_t>(p.nc),
                  primals.begin() + static_cast<std::ptrdiff_t>(p.nc + p.nb));
  for (std::size_t i = 0; i < p.nb; ++i)
    if (bconst_nz[i]) operands.push_back(*tangents[p.nc + i]);
  operands.insert(operands.end(), primals.begin() + static_cast<std::ptrdiff_t>(p.nc + p.nb),
                  primals.end());
  for (std::size_t k = 0; k < n_carry; ++k)
    if (carry_nz[k])
      operands.push_back(
          instantiate_zeros(tangents[p.nc + p.nb + k], detail::aval_of(primals[p.nc + p.nb + k])));
  Arrays outs = rt::bind(
      *this, operands,
      make_params(detail::share(std::move(cond)), p.nc, body_jvp.jaxpr, n_new + p.nb + n_bdot));
  Arrays primals_out(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(n_carry));
  Tangents tangents_out;
  for (std::size_t k = 0, j = n_carry; k < n_carry; ++k)
    tangents_out.push_back(carry_nz[k] ? Tangent(outs[j++]) : std::nullopt);
  return {std::move(primals_out), std::move(tangents_out)};
}

XPR_FUNC Cotangents WhileP::transpose(std::span<const Cotangent> cts,
                                      std::span<const LinearArg> args, const Params& params) const {
  (void)cts, (void)args, (void)params;
  throw core::type_error(
      "Reverse-mode differentiation does not work for xpr::while_loop or xpr::fori_loop with "
      "dynamic start/stop values: expected a loop whose number of iterations is bounded, found "
      "a `while` whose carries depend on the differentiated inputs. Try using xpr::scan, or "
      "using xpr::fori_loop with static start/stop, or bound the loop with "
      "xpr::while_loop(cond_fn, body_fn, init, xpr::max_trips(N))");
}

XPR_FUNC std::pair<Arrays, BatchDims> WhileP::batch(std::span<const Array> args,
                                                    std::span<const BatchDim> dims,
                                                    std::int64_t axis_size,
                                                    const Params& params) const {
  const Parts p = parts(params);
  const std::size_t n = args.size(), n_carry = n - p.nc - p.nb;
  if (!detail::any_batched(dims)) return {rt::bind(*this, args, params), BatchDims(n_carry)};
  auto [moved, at_front] = detail::batch_at_front(args, dims);
  std::vector<bool> bat;
  for (const BatchDim& d : at_front) bat.push_back(d.has_value());
  const std::vector<bool> cconst_bat = detail::slice(bat, 0, p.nc);
  const std::vector<bool> bconst_bat = detail::slice(bat, p.nc, p.nc + p.nb);
  std::vector<bool> carry_bat = detail::slice(bat, p.nc + p.nb, n);

  // The avals and dims of (consts, carry) once the carries in `carry_bat` are batched at 0.
  auto inputs = [&](std::size_t from, std::size_t nconsts, const std::vector<bool>& cb) {
    Avals avals;
    BatchDims ds;
    for (std::size_t i = 0; i < nconsts; ++i) {
      avals.push_back(detail::aval_of(moved[from + i]));
      ds.push_back(at_front[from + i]);
    }
    for (std::size_t k = 0; k < n_carry; ++k) {
      ShapedArray a = detail::aval_of(args[p.nc + p.nb + k]);
      if (dims[p.nc + p.nb + k]) a = detail::aval_of(moved[p.nc + p.nb + k]);
      if (cb[k] && !dims[p.nc + p.nb + k]) {
        std::vector<std::int64_t> s{axis_size};
        s.insert(s.end(), a.shape.begin(), a.shape.end());
        a.shape = Shape(std::move(s));
      }
      avals.push_back(a);
      ds.push_back(cb[k] ? BatchDim(0) : std::nullopt);
    }
    return std::pair{avals, ds};
  };
  // Which carries are batched: those of `init`, and those the body batches, to a fixed point.
  for (std::size_t it = 0; it <= n_carry; ++it) {
    auto [avals, ds] = inputs(p.nc, p.nb, carry_bat);
    std::vector<bool> out =
        detail::batch_jaxpr_outs(p.body, ds, avals, axis_size, carry_bat).second;
    std::vector<bool> joined = detail::or_each(carry_bat, out);
    if (joined == carry_bat) break;
    carry_bat = std::move(joined);
  }
  bool pred_bat = false;
  {
    auto [avals, ds] = inputs(0, p.nc, carry_bat);
    pred_bat = detail::batch_jaxpr_outs(p.cond, ds, avals, axis_size, {false}).second[0];
  }
  if (pred_bat) carry_bat.assign(n_carry, true);
  auto [cavals, cds] = inputs(0, p.nc, carry_bat);
  auto [bavals, bds] = inputs(p.nc, p.nb, carry_bat);
  detail::ConvertedJaxpr cond = detail::convert_constvars(
      detail::batch_jaxpr_outs(p.cond, cds, cavals, axis_size, {pred_bat}).first);
  detail::ConvertedJaxpr body = detail::convert_constvars(
      detail::batch_jaxpr_outs(p.body, bds, bavals, axis_size, carry_bat).first);
  Arrays init;
  for (std::size_t k = 0; k < n_carry; ++k) {
    const Array& x = moved[p.nc + p.nb + k];
    init.push_back(carry_bat[k] && !dims[p.nc + p.nb + k] ? broadcast_batch(x, axis_size, 0) : x);
  }
  const Arrays cconsts = detail::concat(cond.consts, detail::slice(moved, 0, p.nc));
  const Arrays bconsts = detail::concat(body.consts, detail::slice(moved, p.nc, p.nc + p.nb));
  BatchDims out_dims;
  for (bool b : carry_bat) out_dims.push_back(b ? BatchDim(0) : std::nullopt);
  // No lane: a batched predicate holds on none (JAX's `reduce_or` of nothing is false), so the
  // loop runs zero times; `max` of nothing has no value.
  if (pred_bat && axis_size == 0) return {init, out_dims};
  if (!pred_bat) {
    Arrays operands = detail::concat(cconsts, bconsts);
    operands.insert(operands.end(), init.begin(), init.end());
    return {rt::bind(*this, operands,
                     make_params(cond.jaxpr, cconsts.size(), body.jaxpr, bconsts.size())),
            out_dims};
  }
  // A batched predicate: loop while any lane's predicate holds; the body recomputes the lanes'
  // predicates and keeps the carry of the lanes that are done (JAX does the same select in its
  // lowering, `_pred_bcast_select_hlo`).
  const ClosedJaxpr& cj = *cond.jaxpr;
  const ClosedJaxpr& bj = *body.jaxpr;
  const std::size_t nc = cconsts.size(), nb = bconsts.size();
  Avals carry_avals = detail::avals_of_values(init);
  FlatFunction any_fn = [&](std::span<const Array> in) {
    return Arrays{rt::max(eval_jaxpr(cj, in).front())};
  };
  Avals any_in = detail::avals_of_values(cconsts);
  any_in.insert(any_in.end(), carry_avals.begin(), carry_avals.end());
  detail::ConvertedJaxpr any_cond = detail::trace_to_converted_jaxpr(any_fn, any_in);
  FlatFunction step = [&](std::span<const Array> in) {
    std::span<const Array> cc = in.first(nc), bc = in.subspan(nc, nb), carry = in.subspan(nc + nb);
    Array pred = eval_jaxpr(cj, detail::concat(cc, carry)).front();
    Arrays next = eval_jaxpr(bj, detail::concat(bc, carry));
    for (std::size_t k = 0; k < next.size(); ++k) {
      Array pk = broadcast_in_dim(pred, next[k].shape(), {0});
      next[k] = bind1(select_n_p, {pk, carry[k], next[k]});
    }
    return next;
  };
  Avals step_in = detail::avals_of_values(detail::concat(cconsts, bconsts));
  step_in.insert(step_in.end(), carry_avals.begin(), carry_avals.end());
  detail::ConvertedJaxpr step_body = detail::trace_to_converted_jaxpr(step, step_in);
  Arrays operands = detail::concat(any_cond.consts, cconsts);
  operands.insert(operands.end(), step_body.consts.begin(), step_body.consts.end());
  operands.insert(operands.end(), cconsts.begin(), cconsts.end());
  operands.insert(operands.end(), bconsts.begin(), bconsts.end());
  operands.insert(operands.end(), init.begin(), init.end());
  return {rt::bind(*this, operands,
                   make_params(any_cond.jaxpr, any_cond.consts.size() + nc, step_body.jaxpr,
                               step_body.consts.size() + nc + nb)),
          out_dims};
}

XPR_FUNC std::pair<std::vector<bool>, bool> WhileP::unknown_carries(
    const Parts& p, const std::vector<bool>& unknowns) {
  const std::size_t n = unknowns.size(), n_carry = n - p.nc - p.nb;
  const std::vector<bool> bconst_uk = detail::slice(unknowns, p.nc, p.nc + p.nb);
  std::vector<bool> carry_uk = detail::slice(unknowns, p.nc + p.nb, n);
  for (std::size_t it = 0; it <= n_carry; ++it) {
    std::vector<bool> out =
        rt::partial_eval_jaxpr(p.body, detail::concat_flags(bconst_uk, carry_uk), carry_uk)
            .out_unknowns;
    std::vector<bool> joined = detail::or_each(carry_uk, out);
    if (joined == carry_uk) break;
    carry_uk = std::move(joined);
  }
  const std::vector<bool> cond_in =
      detail::concat_flags(detail::slice(unknowns, 0, p.nc), carry_uk);
  bool cond_uk = rt::partial_eval_jaxpr(p.cond, cond_in).out_unknowns[0];
  return {std::move(carry_uk), cond_uk};
}

XPR_FUNC Params WhileP::known_params(const Parts& p, const std::vector<bool>& unknowns,
                                     const std::vector<bool>& carry_uk) {
  const std::vector<bool> cconst_uk = detail::slice(unknowns, 0, p.nc);
  const std::vector<bool> bconst_uk = detail::slice(unknowns, p.nc, p.nc + p.nb);
  std::vector<bool> cond_keep, body_keep;
  for (bool u : cconst_uk) cond_keep.push_back(!u);
  for (bool u : bconst_uk) body_keep.push_back(!u);
  for (bool u : carry_uk) {
    cond_keep.push_back(!u);
    body_keep.push_back(!u);
  }
  std::vector<bool> known_out;
  for (bool u : carry_uk) known_out.push_back(!u);
  // The body restricted to the known carries: prune the unknown outputs, then the inputs.
  ClosedJaxpr body = dce_jaxpr(p.body, known_out, true).first;
  return make_params(detail::keep_invars(p.cond, cond_keep), p.nc - detail::count_true(cconst_uk),
                     detail::keep_invars(body, body_keep), p.nb - detail::count_true(bconst_uk));
}

XPR_FUNC std::optional<Arrays> WhileP::partial_eval(PartialEvalTrace& trace,
                                                    std::span<const Array> tracers,
                                                    const Params& params) const {
  const Parts p = parts(params);
  std::vector<bool> unknowns;
  for (const Array& t : tracers) unknowns.push_back(detail::as_pe_tracer(t).pval().is_unknown());
  auto [carry_uk, cond_uk] = unknown_carries(p, unknowns);
  const std::size_t n_carry = carry_uk.size();
  if (cond_uk || detail::count_true(carry_uk) == n_carry) return std::nullopt;
  // The known carries by a loop of their own; the unknown ones by the whole loop, staged, which
  // recomputes the known ones (JAX's `_while_partial_eval`: linearize works, and transposing
  // the staged loop raises the reverse-mode error).
  Arrays known_in;
  for (std::size_t i = 0; i < tracers.size(); ++i) {
    const bool uk = i < p.nc + p.nb ? unknowns[i] : carry_uk[i - p.nc - p.nb];
    if (!uk) known_in.push_back(*detail::as_pe_tracer(tracers[i]).pval().value);
  }
  Arrays known_out = rt::bind(*this, known_in, known_params(p, unknowns, carry_uk));
  Avals avals;
  for (const Array& t : tracers) avals.push_back(detail::aval_of(t));
  Arrays staged = trace.stage(*this, tracers, params, abstract_eval(avals, params));
  Arrays out;
  for (std::size_t k = 0, j = 0; k < n_carry; ++k)
    out.push_back(carry_uk[k] ? staged[k] : trace.pure(known_out[j++]));
  return out;
}

XPR_FUNC std::optional<PartialEvalEqn> WhileP::partial_eval_jaxpr(
    const std::vector<bool>& in_unknowns, const Eqn& eqn) const {
  if (detail::count_true(in_unknowns) == 0) return std::nullopt;
  const Parts p = parts(eqn.params);
  auto [carry_uk, cond_uk] = unknown_carries(p, in_unknowns);
  const std::size_t n_carry = carry_uk.size();
  if (cond_uk || detail::count_true(carry_uk) == n_carry) return std::nullopt;
  PartialEvalEqn result;
  result.out_unknowns = carry_uk;
  Eqn known{eqn.primitive, {}, known_params(p, in_unknowns, carry_uk), {}};
  Eqn unknown = eqn;
  for (std::size_t i = 0; i < eqn.inputs.size(); ++i) {
    const bool uk = i < p.nc + p.nb ? in_unknowns[i] : carry_uk[i - p.nc - p.nb];
    if (!uk) known.inputs.push_back(eqn.inputs[i]);
    if (!in_unknowns[i])
      if (const Var* v = std::get_if<Var>(&eqn.inputs[i])) result.residuals.push_back(*v);
  }
  for (std::size_t k = 0; k < n_carry; ++k) {
    if (carry_uk[k]) continue;
    known.outputs.push_back(eqn.outputs[k]);
    unknown.outputs[k] = Var(eqn.outputs[k].aval());  // the known loop defines this one
  }
  result.known = std::move(known);
  result.unknown = std::move(unknown);
  return result;
}

XPR_FUNC std::optional<DceEqn> WhileP::dce(const std::vector<bool>& used_outputs,
                                           const Eqn& eqn) const {
  const Parts p = parts(eqn.params);
  const std::size_t n_carry = eqn.outputs.size();
  // A carry is needed when an output is used, or the predicate or a needed carry reads it.
  std::vector<bool> used_carry = used_outputs;
  const std::vector<bool> cond_used = dce_jaxpr(p.cond.jaxpr, {true}, false).second;
  used_carry = detail::or_each(used_carry, detail::slice(cond_used, p.nc, p.nc + n_carry));
  std::vector<bool> body_used;
  for (std::size_t it = 0; it <= n_carry; ++it) {
    body_used = dce_jaxpr(p.body.jaxpr, used_carry, false).second;
    std::vector<bool> joined =
        detail::or_each(used_carry, detail::slice(body_used, p.nb, p.nb + n_carry));
    if (joined == used_carry) break;
    used_carry = std::move(joined);
  }
  std::vector<bool> cond_keep = detail::concat_flags(detail::slice(cond_used, 0, p.nc), used_carry);
  std::vector<bool> body_keep = detail::concat_flags(detail::slice(body_used, 0, p.nb), used_carry);
  ClosedJaxpr body = dce_jaxpr(p.body, used_carry, true).first;
  ClosedJaxpr cond = dce_jaxpr(p.cond, {true}, true).first;
  Eqn e{eqn.primitive,
        {},
        make_params(detail::keep_invars(cond, cond_keep),
                    detail::count_true(detail::slice(cond_keep, 0, p.nc)),
                    detail::keep_invars(body, body_keep),
                    detail::count_true(detail::slice(body_keep, 0, p.nb))),
        {}};
  std::vector<bool> used_inputs = detail::concat_flags(
      detail::concat_flags(detail::slice(cond_keep, 0, p.nc), detail::slice(body_keep, 0, p.nb)),
      used_carry);
  for (std::size_t i = 0; i < eqn.inputs.size(); ++i)
    if (used_inputs[i]) e.inputs.push_back(eqn.inputs[i]);
  for (std::size_t k = 0; k < n_carry; ++k)
    if (used_carry[k]) e.outputs.push_back(eqn.outputs[k]);
  return DceEqn{std::move(used_inputs), std::move(e)};
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
