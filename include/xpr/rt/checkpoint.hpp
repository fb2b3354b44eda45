// SPDX-License-Identifier: MIT
// `xpr::checkpoint` (alias `xpr::remat`) and its primitive `checkpoint` (JAX's `remat_p`, in
// ad_checkpoint.py): under reverse mode the wrapped function's residuals are recomputed in the
// backward pass from its inputs instead of being stored. See docs/custom-derivatives.md.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/core/error.hpp"
#include "xpr/rt/api_transformations.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/detail/higher_order.hpp"
#include "xpr/rt/detail/sub_jaxpr.hpp"
#include "xpr/rt/interp/partial_eval.hpp"
#include "xpr/rt/interp/transpose.hpp"
#include "xpr/rt/jaxpr.hpp"
#include "xpr/rt/jaxpr_eval.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/pytree.hpp"
#include "xpr/rt/trace.hpp"
#include "xpr/rt/transformations.hpp"

namespace xpr::rt {

namespace detail {

/// The jaxpr that computes the outputs of `j` that are unknown when the inputs `in_unknowns` are,
/// from all of `j`'s inputs, recomputing the known values it needs rather than reading them as
/// residuals (JAX's `partial_eval_jaxpr_custom` with nothing saveable): the known half of the
/// split followed by the unknown half, pruned to the unknown outputs. Going through the split,
/// rather than pruning `j` itself, matters when `j` holds higher-order equations: a nested
/// `checkpoint` of known and unknown operands is split too, so every equation of the result is
/// either all known (recomputed forward when transposing) or linear in the unknown inputs.
/// `split` is `partial_eval_jaxpr(j, in_unknowns)`. Returns the jaxpr and the inputs it reads.
std::pair<ClosedJaxpr, std::vector<bool>> staged_recompute(const ClosedJaxpr& j,
                                                           const PartialEvalJaxpr& split);

}  // namespace detail

/// `checkpoint[jaxpr=... prevent_cse=True differentiated=False policy=None]`: applies `jaxpr` (no
/// constants) to its operands. Its rules keep the application whole through every
/// transformation: jvp gives a `checkpoint` of the JVP jaxpr (`differentiated=True`), vmap one of
/// the batched jaxpr; partial evaluation computes the known outputs now but stages the unknown
/// ones as a `checkpoint` that recomputes the primal values it needs from the known inputs
/// (`staged_recompute`), so those inputs are the only residuals (JAX's `remat_partial_eval` with
/// the policy that saves nothing). The transpose recomputes them while running backwards.
class CheckpointP final : public Primitive, public PartialEvalRules {
 public:
  constexpr CheckpointP() : Primitive("checkpoint", true) {}

  Arrays impl(std::span<const Array> args, const Params& params) const override {
    return eval_jaxpr(detail::jaxpr_param(params, "jaxpr"), args);
  }

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

  std::optional<DceEqn> dce(const std::vector<bool>& used_outputs, const Eqn& eqn) const override {
    auto [dj, used] = memo_dce(eqn.params.get<JaxprParam>("jaxpr"), used_outputs);
    return DceEqn{used, sub_eqn(eqn, dj, used, used_outputs)};
  }

 private:
  /// What partial evaluation derives from the sub-jaxpr and the unknown inputs, memoized.
  struct Split {
    std::vector<bool> out_unknowns;
    JaxprParam known_only;  // the known outputs from the known inputs, no residuals
    JaxprParam staged;      // the unknown outputs, recomputing the known values they need
    std::vector<bool> staged_used;
  };

  using Transposed = detail::TransposedJaxpr;

  XPR_MEMBER static std::shared_ptr<const Transposed> memo_transpose(
      const JaxprParam& j, const std::vector<bool>& flags, std::span<const LinearArg> args);

  static void check_jaxpr(const JaxprParam& j) {
    if (!j) throw core::type_error("checkpoint: expected a jaxpr in parameter 'jaxpr', found None");
  }

  XPR_MEMBER static detail::JvpJaxpr memo_jvp(const JaxprParam& j,
                                              const std::vector<bool>& nonzero);

  XPR_MEMBER static std::shared_ptr<const Split> memo_split(const JaxprParam& j,
                                                            const std::vector<bool>& in_unknowns);

  XPR_MEMBER static std::pair<JaxprParam, std::vector<bool>> memo_dce(
      const JaxprParam& j, const std::vector<bool>& used_outputs);

  /// `eqn` restricted to the inputs `used_in` and outputs `used_out`, applying `jaxpr`.
  XPR_MEMBER static Eqn sub_eqn(const Eqn& eqn, const JaxprParam& jaxpr,
                                const std::vector<bool>& used_in,
                                const std::vector<bool>& used_out);
};

inline constinit const CheckpointP checkpoint_p{};

namespace detail {

/// The function `checkpoint(f)` returns.
template <class F>
class Checkpointed {
 public:
  Checkpointed(F f, bool prevent_cse) : f_(std::move(f)), prevent_cse_(prevent_cse) {}

  template <class... A>
  auto operator()(const A&... args) const {
    using Args = std::tuple<std::remove_cvref_t<A>...>;
    using Out = flat_result_t<F, Args>;
    auto [leaves, def] = tree_flatten(std::forward_as_tuple(args...));
    std::optional<PyTreeDef> out_def;
    F f = f_;
    FlatFunction flat = flat_function<F, Args>(f, def, out_def);
    if (no_transformation_active()) return tree_unflatten<Out>(*out_def, flat(leaves));
    ConvertedJaxpr traced = trace_to_converted_jaxpr(flat, avals_of_values(leaves));
    Params params{{"jaxpr", traced.jaxpr},
                  {"prevent_cse", prevent_cse_},
                  {"differentiated", false},
                  {"policy", None{}}};
    Arrays outs = rt::bind(checkpoint_p, concat(traced.consts, leaves), params);
    return tree_unflatten<Out>(*out_def, outs);
  }

 private:
  F f_;
  bool prevent_cse_;
};

}  // namespace detail

/// `checkpoint(f)`: `f` with the same values and derivatives, whose intermediate values are not
/// stored for reverse mode but recomputed from its inputs when the backward pass needs them
/// (rematerialization): less memory for more computation. Under any transformation a call stages
/// one `checkpoint` equation; eagerly it just calls `f`. `prevent_cse` is kept as a parameter for
/// compilers, as in JAX. See examples/custom_derivatives.cpp.
template <class F>
auto checkpoint(F f, bool prevent_cse = true) {
  return detail::Checkpointed<F>(std::move(f), prevent_cse);
}

/// `remat(f)`: another name for `checkpoint(f)`, as in JAX.
template <class F>
auto remat(F f, bool prevent_cse = true) {
  return checkpoint(std::move(f), prevent_cse);
}

}  // namespace xpr::rt

namespace xpr {
using rt::checkpoint;
using rt::remat;
}  // namespace xpr

#if XPR_DEFINITIONS

namespace xpr::rt::detail {

XPR_FUNC std::pair<ClosedJaxpr, std::vector<bool>> staged_recompute(const ClosedJaxpr& j,
                                                                    const PartialEvalJaxpr& split) {
  Jaxpr composed;
  composed.constvars = split.known.jaxpr.constvars;
  composed.invars = j.jaxpr.invars;
  composed.eqns = split.known.jaxpr.eqns;
  composed.eqns.insert(composed.eqns.end(), split.unknown.jaxpr.eqns.begin(),
                       split.unknown.jaxpr.eqns.end());
  composed.outvars = split.unknown.jaxpr.outvars;
  return dce_jaxpr(ClosedJaxpr{std::move(composed), split.known.consts},
                   std::vector<bool>(split.unknown.jaxpr.outvars.size(), true), false);
}

}  // namespace xpr::rt::detail

namespace xpr::rt {

XPR_FUNC Avals CheckpointP::abstract_eval(std::span<const ShapedArray> args,
                                          const Params& params) const {
  const ClosedJaxpr& j = detail::jaxpr_param(params, "jaxpr");
  if (args.size() != j.jaxpr.invars.size())
    throw core::type_error("checkpoint: expected " + std::to_string(j.jaxpr.invars.size()) +
                           " operands, found " + std::to_string(args.size()));
  for (std::size_t i = 0; i < args.size(); ++i)
    if (!args[i].same_type(j.jaxpr.invars[i].aval()))
      throw core::type_error("checkpoint: expected operand " + std::to_string(i) + " of type " +
                             j.jaxpr.invars[i].aval().str() + ", found " + args[i].str());
  return j.out_avals();
}

XPR_FUNC std::pair<Arrays, Tangents> CheckpointP::jvp_symbolic(std::span<const Array> primals,
                                                               std::span<const Tangent> tangents,
                                                               const Params& params) const {
  const ClosedJaxpr& j = detail::jaxpr_param(params, "jaxpr");
  std::vector<bool> nonzero;
  Arrays operands;
  for (const Tangent& t : tangents) nonzero.push_back(t.has_value());
  detail::JvpJaxpr jj = memo_jvp(params.get<JaxprParam>("jaxpr"), nonzero);
  operands = jj.converted.consts;
  operands.insert(operands.end(), primals.begin(), primals.end());
  for (const Tangent& t : tangents)
    if (t) operands.push_back(*t);
  Params p = detail::with_param(params, "jaxpr", jj.converted.jaxpr);
  p.set("differentiated", true);
  Arrays outs = rt::bind(*this, operands, p);
  const std::size_t n_out = j.jaxpr.outvars.size();
  Arrays primals_out(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(n_out));
  Tangents tangents_out;
  for (std::size_t i = 0, k = n_out; i < n_out; ++i)
    tangents_out.push_back(jj.out_nonzero[i] ? Tangent(outs[k++]) : std::nullopt);
  return {std::move(primals_out), std::move(tangents_out)};
}

XPR_FUNC Cotangents CheckpointP::transpose(std::span<const Cotangent> cts,
                                           std::span<const LinearArg> args,
                                           const Params& params) const {
  // Running the jaxpr backwards first evaluates its non-linear equations on the known operands:
  // that is the recomputation of the residuals. As in JAX's remat_transpose, the backward pass
  // is itself a checkpoint of the transposed jaxpr, built once per sub-jaxpr (and pattern of
  // known operands and zero cotangents): shared sub-jaxprs are transposed once, not once per
  // path through them.
  std::vector<bool> flags;
  Arrays operands;
  for (const LinearArg& a : args) flags.push_back(is_undefined_primal(a));
  for (const Cotangent& c : cts) flags.push_back(c.has_value());
  const std::shared_ptr<const Transposed> t =
      memo_transpose(params.get<JaxprParam>("jaxpr"), flags, args);
  operands = t->jaxpr.consts;
  for (const LinearArg& a : args)
    if (!is_undefined_primal(a)) operands.push_back(std::get<Array>(a));
  for (const Cotangent& c : cts)
    if (c) operands.push_back(*c);
  Cotangents out(args.size());
  if (t->jaxpr.jaxpr->jaxpr.outvars.empty()) return out;
  Params p = detail::with_param(params, "jaxpr", t->jaxpr.jaxpr);
  p.set("differentiated", true);
  Arrays results = rt::bind(*this, operands, p);
  for (std::size_t i = 0, k = 0; i < args.size(); ++i)
    if (t->out_nonzero[i]) out[i] = results[k++];
  return out;
}

XPR_FUNC std::pair<Arrays, BatchDims> CheckpointP::batch(std::span<const Array> args,
                                                         std::span<const BatchDim> dims,
                                                         std::int64_t axis_size,
                                                         const Params& params) const {
  (void)axis_size;
  if (!detail::any_batched(dims)) return {rt::bind(*this, args, params), BatchDims(args.size())};
  auto [moved, at_front] = detail::batch_at_front(args, dims);
  detail::ConvertedJaxpr batched = detail::convert_constvars(detail::batch_jaxpr(
      detail::jaxpr_param(params, "jaxpr"), at_front, detail::avals_of_values(moved)));
  Arrays operands = detail::concat(batched.consts, moved);
  Arrays outs = rt::bind(*this, operands, detail::with_param(params, "jaxpr", batched.jaxpr));
  return {std::move(outs), BatchDims(outs.size(), BatchDim(0))};
}

XPR_FUNC std::optional<Arrays> CheckpointP::partial_eval(PartialEvalTrace& trace,
                                                         std::span<const Array> tracers,
                                                         const Params& params) const {
  std::vector<bool> in_unknowns;
  Arrays known_values;
  for (const Array& t : tracers) {
    const PartialVal& pv = detail::as_pe_tracer(t).pval();
    in_unknowns.push_back(pv.is_unknown());
    if (pv.is_known()) known_values.push_back(*pv.value);
  }
  const std::shared_ptr<const Split> held =
      memo_split(params.get<JaxprParam>("jaxpr"), in_unknowns);
  const Split& split = *held;
  const std::vector<bool>& out_unknowns = split.out_unknowns;
  std::size_t num_known_out = 0;
  for (bool u : out_unknowns) num_known_out += u ? 0 : 1;

  // Known outputs: computed now, without the residual outputs the split would save.
  Arrays known_out = eval_jaxpr(*split.known_only, known_values);

  // Unknown outputs: staged, recomputing the known values they need from the known inputs.
  Arrays unknown_out;
  if (num_known_out < out_unknowns.size()) {
    Arrays operands;
    for (std::size_t i = 0; i < tracers.size(); ++i)
      if (split.staged_used[i]) operands.push_back(tracers[i]);
    Params p = detail::with_param(params, "jaxpr", split.staged);
    p.set("differentiated", true);
    unknown_out = trace.stage(*this, operands, p, split.staged->out_avals());
  }
  Arrays out;
  for (std::size_t i = 0, k = 0, u = 0; i < out_unknowns.size(); ++i)
    out.push_back(out_unknowns[i] ? unknown_out[u++] : trace.pure(known_out[k++]));
  return out;
}

XPR_FUNC std::optional<PartialEvalEqn> CheckpointP::partial_eval_jaxpr(
    const std::vector<bool>& in_unknowns, const Eqn& eqn) const {
  bool any = false;
  for (bool u : in_unknowns) any = any || u;
  if (!any) return std::nullopt;
  const JaxprParam& j = eqn.params.get<JaxprParam>("jaxpr");
  const std::shared_ptr<const Split> held = memo_split(j, in_unknowns);
  const Split& split = *held;
  PartialEvalEqn result;
  result.out_unknowns = split.out_unknowns;
  std::vector<bool> known_outs;
  for (bool u : split.out_unknowns) known_outs.push_back(!u);
  if (std::find(known_outs.begin(), known_outs.end(), true) != known_outs.end()) {
    auto [kj, used] = memo_dce(j, known_outs);
    result.known = sub_eqn(eqn, kj, used, known_outs);
  }
  if (std::find(split.out_unknowns.begin(), split.out_unknowns.end(), true) !=
      split.out_unknowns.end()) {
    const std::vector<bool>& used = split.staged_used;
    result.unknown = sub_eqn(eqn, split.staged, used, split.out_unknowns);
    result.unknown->params.set("differentiated", true);
    for (std::size_t i = 0; i < eqn.inputs.size(); ++i)
      if (used[i] && !in_unknowns[i])
        if (const Var* v = std::get_if<Var>(&eqn.inputs[i])) result.residuals.push_back(*v);
  }
  return result;
}

XPR_FUNC std::shared_ptr<const CheckpointP::Transposed> CheckpointP::memo_transpose(
    const JaxprParam& j, const std::vector<bool>& flags, std::span<const LinearArg> args) {
  thread_local detail::SubJaxprMemo<std::shared_ptr<const Transposed>> memo;
  check_jaxpr(j);
  return memo.get(
      j, flags, [&] { return detail::transpose_sub_jaxpr(*j, flags, args); },
      [](const std::shared_ptr<const Transposed>& r) {
        return detail::all_concrete(r->jaxpr.consts);
      });
}

XPR_FUNC detail::JvpJaxpr CheckpointP::memo_jvp(const JaxprParam& j,
                                                const std::vector<bool>& nonzero) {
  thread_local detail::SubJaxprMemo<detail::JvpJaxpr> memo;
  check_jaxpr(j);
  return memo.get(
      j, nonzero, [&] { return detail::jvp_jaxpr(*j, nonzero); },
      [](const detail::JvpJaxpr& r) { return detail::all_concrete(r.converted.consts); });
}

XPR_FUNC std::shared_ptr<const CheckpointP::Split> CheckpointP::memo_split(
    const JaxprParam& j, const std::vector<bool>& in_unknowns) {
  thread_local detail::SubJaxprMemo<std::shared_ptr<const Split>> memo;
  check_jaxpr(j);
  return memo.get(
      j, in_unknowns,
      [&] {
        PartialEvalJaxpr split = rt::partial_eval_jaxpr(*j, in_unknowns);
        auto s = std::make_shared<Split>();
        s->out_unknowns = split.out_unknowns;
        std::size_t num_known_out = 0;
        for (bool u : split.out_unknowns) num_known_out += u ? 0 : 1;
        std::vector<bool> keep(num_known_out + split.num_res, false);
        std::fill(keep.begin(), keep.begin() + static_cast<std::ptrdiff_t>(num_known_out), true);
        s->known_only =
            std::make_shared<const ClosedJaxpr>(dce_jaxpr(split.known, keep, true).first);
        auto [staged, used] = detail::staged_recompute(*j, split);
        s->staged = std::make_shared<const ClosedJaxpr>(std::move(staged));
        s->staged_used = std::move(used);
        return std::shared_ptr<const Split>(std::move(s));
      },
      [](const std::shared_ptr<const Split>& r) {
        return detail::all_concrete(r->known_only->consts) &&
               detail::all_concrete(r->staged->consts);
      });
}

XPR_FUNC std::pair<JaxprParam, std::vector<bool>> CheckpointP::memo_dce(
    const JaxprParam& j, const std::vector<bool>& used_outputs) {
  thread_local detail::SubJaxprMemo<std::pair<JaxprParam, std::vector<bool>>> memo;
  check_jaxpr(j);
  return memo.get(
      j, used_outputs,
      [&] {
        auto [dj, used] = dce_jaxpr(*j, used_outputs, false);
        return std::pair{JaxprParam(std::make_shared<const ClosedJaxpr>(std::move(dj))),
                         std::move(used)};
      },
      [](const auto& r) { return detail::all_concrete(r.first->consts); });
}

XPR_FUNC Eqn CheckpointP::sub_eqn(const Eqn& eqn, const JaxprParam& jaxpr,
                                  const std::vector<bool>& used_in,
                                  const std::vector<bool>& used_out) {
  Eqn e{eqn.primitive, {}, detail::with_param(eqn.params, "jaxpr", jaxpr), {}};
  for (std::size_t i = 0; i < eqn.inputs.size(); ++i)
    if (used_in[i]) e.inputs.push_back(eqn.inputs[i]);
  for (std::size_t k = 0; k < eqn.outputs.size(); ++k)
    if (used_out[k]) e.outputs.push_back(eqn.outputs[k]);
  return e;
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
