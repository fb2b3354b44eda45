// SPDX-License-Identifier: MIT
// Partial evaluation (Autodidax Part 4): values are known or unknown; the partial-evaluation
// interpreter computes what depends only on known values as it traces and records the rest as a
// graph of recipes, which `tracers_to_jaxpr` turns into a jaxpr. `partial_eval_jaxpr` does the
// same split on a jaxpr ("unzipping" it), and `dce_jaxpr` removes what no output needs. linearize,
// vjp and checkpoint are built on these.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/core/error.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/jaxpr.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/trace.hpp"

namespace xpr::rt {

// ---------------------------------------------------------------------------------------------
// PartialVal
// ---------------------------------------------------------------------------------------------

/// A value that is either known (`value` holds it) or unknown (only its type is known).
struct PartialVal {
  ShapedArray aval;
  std::optional<Array> value;

  static PartialVal known(Array v) {
    ShapedArray a = detail::aval_of(v);
    return PartialVal{std::move(a), std::move(v)};
  }
  static PartialVal unknown(ShapedArray aval) { return PartialVal{std::move(aval), std::nullopt}; }
  bool is_known() const noexcept { return value.has_value(); }
  bool is_unknown() const noexcept { return !value.has_value(); }
};

// ---------------------------------------------------------------------------------------------
// Recipes and the partial-evaluation tracer
// ---------------------------------------------------------------------------------------------

class PartialEvalTracer;
class PartialEvalTrace;

/// An input of the staged function: becomes an input variable of the jaxpr.
struct LambdaBindingRecipe {};
/// A known value used by unknown work: becomes a constvar (a residual of linearize).
struct ConstRecipe {
  Array value;
};
/// A staged primitive application. Holds its inputs strongly and its outputs weakly, so the
/// graph has no cycle (tracers own their recipe); an output nobody holds still gets a variable.
struct JaxprEqnRecipe {
  const Primitive* prim = nullptr;
  std::vector<std::shared_ptr<const PartialEvalTracer>> tracers_in;
  Params params;
  Avals avals_out;
  std::vector<std::weak_ptr<const PartialEvalTracer>> tracer_refs_out;
};
/// How an unknown value is computed; known values have none (`std::monostate`).
using JaxprRecipe = std::variant<std::monostate, LambdaBindingRecipe, ConstRecipe,
                                 std::shared_ptr<const JaxprEqnRecipe>>;

/// A value under partial evaluation: a known value, or an unknown one with the recipe that will
/// compute it. A known tracer is as concrete as its value, so control flow on it works.
class PartialEvalTracer final : public Tracer {
 public:
  PartialEvalTracer(std::shared_ptr<MainTrace> main, PartialVal pval, JaxprRecipe recipe)
      : Tracer(std::move(main), pval.aval), pval_(std::move(pval)), recipe_(std::move(recipe)) {}
  PartialEvalTracer(const PartialEvalTracer&) = delete;
  PartialEvalTracer& operator=(const PartialEvalTracer&) = delete;
  /// Iterative: a chain of a million staged equations (an unrolled time loop under `grad`) is a
  /// chain of tracers owning recipes owning tracers, whose default destructors would recurse
  /// once per link and exhaust the stack. The recipes this tracer is the last owner of are
  /// moved into a work list instead, and each is destroyed after its inputs' recipes are
  /// taken out of the inputs it is the last owner of.
  XPR_MEMBER ~PartialEvalTracer() override;
  const PartialVal& pval() const noexcept { return pval_; }
  const JaxprRecipe& recipe() const noexcept { return recipe_; }
  const detail::ConcreteArray* concrete() const noexcept override {
    return pval_.value ? pval_.value->concrete() : nullptr;
  }
  /// A known value is just its value.
  Array full_lower(const Array& self) const override {
    return pval_.value ? rt::full_lower(*pval_.value) : self;
  }

 private:
  PartialVal pval_;
  // Mutable only for the destructor, which takes the recipes of inputs about to die.
  mutable JaxprRecipe recipe_;
};

namespace detail {
inline const PartialEvalTracer& as_pe_tracer(const Array& x) {
  return static_cast<const PartialEvalTracer&>(*x.impl());
}
inline std::shared_ptr<const PartialEvalTracer> pe_tracer_ptr(const Array& x) {
  return std::static_pointer_cast<const PartialEvalTracer>(x.impl());
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// The hook for higher-order primitives
// ---------------------------------------------------------------------------------------------

/// What a primitive's `partial_eval_jaxpr` rule returns for one equation: the equation for the
/// known jaxpr and the one for the unknown jaxpr (either may be absent), which outputs are
/// unknown, and the residuals: variables defined by the known equation (or known before it) that
/// the unknown equation reads.
struct PartialEvalEqn {
  std::optional<Eqn> known;
  std::optional<Eqn> unknown;
  std::vector<bool> out_unknowns;
  std::vector<Var> residuals;
};

/// What a primitive's `dce` rule returns: which inputs the pruned equation still reads, and the
/// pruned equation (absent: remove it).
struct DceEqn {
  std::vector<bool> used_inputs;
  std::optional<Eqn> eqn;
};

/// Partial-evaluation rule slots for higher-order primitives (JAX's `partial_eval_rules`,
/// `partial_eval_jaxpr_custom_rules` and `dce_rules`; Autodidax's `partial_eval_rules` and
/// `partial_eval_jaxpr_rules`). A primitive whose semantics are a sub-jaxpr (jit, checkpoint,
/// custom_jvp/custom_vjp calls, control flow) derives from both `Primitive` and this class:
///
///     class CheckpointP final : public Primitive, public PartialEvalRules { ... };
///
/// and the partial-evaluation interpreter, `partial_eval_jaxpr` and `dce_jaxpr` find the rules
/// by `dynamic_cast` (so `Primitive` itself stays unchanged). Each slot may return `std::nullopt`
/// to get the default treatment: stage the whole application when any input is unknown; keep the
/// equation whole when any output is used.
class PartialEvalRules {
 public:
  constexpr PartialEvalRules() = default;
  PartialEvalRules(const PartialEvalRules&) = delete;
  PartialEvalRules& operator=(const PartialEvalRules&) = delete;

  /// partial_eval: apply the primitive to `tracers` of `trace`, at least one of them unknown,
  /// computing what can be known now and staging the rest (with `trace.instantiate_const` and
  /// `trace.stage`). Returns the output tracers.
  virtual std::optional<Arrays> partial_eval(PartialEvalTrace& trace,
                                             std::span<const Array> tracers,
                                             const Params& params) const {
    (void)trace, (void)tracers, (void)params;
    return std::nullopt;
  }
  /// partial_eval_jaxpr: split equation `eqn`, whose inputs are unknown where `in_unknowns` says
  /// so, into its known and unknown parts.
  virtual std::optional<PartialEvalEqn> partial_eval_jaxpr(const std::vector<bool>& in_unknowns,
                                                           const Eqn& eqn) const {
    (void)in_unknowns, (void)eqn;
    return std::nullopt;
  }
  /// dce: the equation pruned to the outputs `used_outputs` (at least one is used).
  virtual std::optional<DceEqn> dce(const std::vector<bool>& used_outputs, const Eqn& eqn) const {
    (void)used_outputs, (void)eqn;
    return std::nullopt;
  }

 protected:
  // Trivial, like `Primitive`'s, so the primitives deriving from both stay constant-initialized
  // with nothing to run at exit (see xpr/rt/primitive.hpp).
  ~PartialEvalRules() = default;
};

/// The partial-evaluation rules of `prim`, or null if it has none.
inline const PartialEvalRules* partial_eval_rules(const Primitive& prim) noexcept {
  return dynamic_cast<const PartialEvalRules*>(&prim);
}

// ---------------------------------------------------------------------------------------------
// PartialEvalTrace
// ---------------------------------------------------------------------------------------------

/// The partial-evaluation interpreter (Autodidax's `PartialEvalTrace`; JAX's `JaxprTrace`, a
/// name this library gives to the staging interpreter of make_jaxpr instead). A primitive whose
/// inputs are all known is applied to their values at the levels below; otherwise its
/// application is recorded as a `JaxprEqnRecipe` with unknown outputs.
class PartialEvalTrace final : public Trace {
 public:
  using Trace::Trace;

  /// An input of the function being partially evaluated.
  Array new_arg(PartialVal pval) { return make_tracer(std::move(pval), LambdaBindingRecipe{}); }

  Array pure(const Array& value) override { return make_tracer(PartialVal::known(value), {}); }
  Array lift(const Array& value) override { return pure(value); }

  /// `tracer` as an unknown value: a known one becomes a constant of the staged jaxpr.
  XPR_MEMBER Array instantiate_const(const Array& tracer);

  /// Stages `prim` applied to `tracers` (this trace's, known ones instantiated as constants) as
  /// one equation with outputs of types `avals_out`; returns the unknown output tracers.
  XPR_MEMBER Arrays stage(const Primitive& prim, std::span<const Array> tracers,
                          const Params& params, Avals avals_out);

  /// The default rule: evaluate when everything is known, else stage one equation.
  XPR_MEMBER Arrays default_process_primitive(const Primitive& prim, std::span<const Array> tracers,
                                              const Params& params);

  XPR_MEMBER Arrays process_primitive(const Primitive& prim, std::span<const Array> tracers,
                                      const Params& params) override;

 private:
  Array make_tracer(PartialVal pval, JaxprRecipe recipe) {
    return Array(std::make_shared<const PartialEvalTracer>(shared_main(), std::move(pval),
                                                           std::move(recipe)));
  }
};

// ---------------------------------------------------------------------------------------------
// tracers_to_jaxpr
// ---------------------------------------------------------------------------------------------

namespace detail {

std::vector<const PartialEvalTracer*> tracer_parents(const PartialEvalTracer* t);

/// The tracers `outs` depend on, parents before children (Autodidax's `toposort`).
std::vector<const PartialEvalTracer*> toposort(std::vector<const PartialEvalTracer*> outs);

}  // namespace detail

/// The jaxpr of the unknown work recorded by a partial-evaluation trace: inputs `tracers_in`
/// (unknown tracers made by `new_arg`), outputs `tracers_out` (unknown tracers), the known values
/// it reads as constvars with their values (Autodidax's `tracers_to_jaxpr`). Only the work and the
/// constants that the outputs depend on are included.
ClosedJaxpr tracers_to_jaxpr(std::span<const Array> tracers_in, std::span<const Array> tracers_out);

// ---------------------------------------------------------------------------------------------
// partial_eval_flat
// ---------------------------------------------------------------------------------------------

/// The result of partial evaluation: the jaxpr of the unknown work (inputs: the unknown inputs;
/// outputs: the unknown outputs; constants: the known values it reads) and every output as a
/// PartialVal.
struct PartialEvalResult {
  ClosedJaxpr jaxpr;
  std::vector<PartialVal> pvals_out;
};

/// Partially evaluates `f` on `pvals_in`: known inputs are computed with now, the work that
/// depends on unknown inputs is staged. Output `i` is made unknown even when it is known if
/// `instantiate[i]` (one entry for all outputs, or one per output; empty: none), so that it is an
/// output of the jaxpr; `instantiate` is read after `f` has run, so `f` may fill it in once it
/// knows its outputs. `name` names the transformation in error messages.
PartialEvalResult partial_eval_flat(const std::function<Arrays(std::span<const Array>)>& f,
                                    std::span<const PartialVal> pvals_in,
                                    const std::vector<bool>& instantiate = {},
                                    std::string name = "partial_eval");

// ---------------------------------------------------------------------------------------------
// dce_jaxpr
// ---------------------------------------------------------------------------------------------

/// Dead-code elimination (JAX's `dce_jaxpr`): `jaxpr` with only the outputs `used_outputs`, the
/// equations they need and, unless `instantiate`, the inputs they read; returns it with the
/// inputs used. Constvars are kept (prune them with the ClosedJaxpr overload). Primitives with
/// `PartialEvalRules::dce` may shrink their equations instead of keeping them whole.
std::pair<Jaxpr, std::vector<bool>> dce_jaxpr(const Jaxpr& jaxpr,
                                              const std::vector<bool>& used_outputs,
                                              bool instantiate = false);

/// `dce_jaxpr` of a closed jaxpr that also drops the constants no kept equation reads.
std::pair<ClosedJaxpr, std::vector<bool>> dce_jaxpr(const ClosedJaxpr& closed,
                                                    const std::vector<bool>& used_outputs,
                                                    bool instantiate = false);

// ---------------------------------------------------------------------------------------------
// partial_eval_jaxpr
// ---------------------------------------------------------------------------------------------

/// The two halves of a jaxpr split by `partial_eval_jaxpr`:
/// `known`: known inputs -> (known outputs, residuals), with the original's constants;
/// `unknown`: (residuals, unknown inputs) -> unknown outputs.
struct PartialEvalJaxpr {
  ClosedJaxpr known;
  ClosedJaxpr unknown;
  std::vector<bool> out_unknowns;
  std::size_t num_res = 0;
};

/// Splits `closed` into the part computable from the inputs that `in_unknowns` marks known and
/// the part that must wait for the unknown ones (Autodidax's `partial_eval_jaxpr`, JAX's
/// `partial_eval_jaxpr_nounits`). Outputs marked in `instantiate` (one flag for all, or one per
/// output) are unknown even when they could be known. Residuals are only the known values the
/// unknown equations read, after dead code is removed from both halves.
PartialEvalJaxpr partial_eval_jaxpr(const ClosedJaxpr& closed, const std::vector<bool>& in_unknowns,
                                    const std::vector<bool>& instantiate = {});

}  // namespace xpr::rt

namespace xpr {
using rt::dce_jaxpr;
using rt::partial_eval_jaxpr;
using rt::PartialVal;
}  // namespace xpr

#if XPR_DEFINITIONS

namespace xpr::rt {

XPR_FUNC PartialEvalTracer::~PartialEvalTracer() {
  auto* first = std::get_if<std::shared_ptr<const JaxprEqnRecipe>>(&recipe_);
  if (!first || !*first) return;
  std::vector<std::shared_ptr<const JaxprEqnRecipe>> work;
  work.push_back(std::move(*first));
  while (!work.empty()) {
    std::shared_ptr<const JaxprEqnRecipe> r = std::move(work.back());
    work.pop_back();
    if (r.use_count() != 1) continue;  // someone else still holds it: not destroyed now
    for (const auto& in : r->tracers_in) {
      if (!in || in.use_count() != 1) continue;  // survives r
      if (auto* e = std::get_if<std::shared_ptr<const JaxprEqnRecipe>>(&in->recipe_); e && *e)
        work.push_back(std::move(*e));
    }
  }  // each `r` dies here, its inputs with empty recipes: no recursion
}

XPR_FUNC Array PartialEvalTrace::instantiate_const(const Array& tracer) {
  const PartialEvalTracer& t = detail::as_pe_tracer(tracer);
  if (t.pval().is_unknown()) return tracer;
  return make_tracer(PartialVal::unknown(t.aval()), ConstRecipe{*t.pval().value});
}

XPR_FUNC Arrays PartialEvalTrace::stage(const Primitive& prim, std::span<const Array> tracers,
                                        const Params& params, Avals avals_out) {
  auto recipe = std::make_shared<JaxprEqnRecipe>();
  recipe->prim = &prim;
  recipe->params = params;
  recipe->tracers_in.reserve(tracers.size());
  for (const Array& t : tracers)
    recipe->tracers_in.push_back(detail::pe_tracer_ptr(instantiate_const(t)));
  recipe->avals_out = std::move(avals_out);
  std::shared_ptr<const JaxprEqnRecipe> shared = recipe;
  Arrays out;
  out.reserve(recipe->avals_out.size());
  for (const ShapedArray& a : recipe->avals_out) {
    out.push_back(make_tracer(PartialVal::unknown(a), shared));
    recipe->tracer_refs_out.push_back(detail::pe_tracer_ptr(out.back()));
  }
  return out;
}

XPR_FUNC Arrays PartialEvalTrace::default_process_primitive(const Primitive& prim,
                                                            std::span<const Array> tracers,
                                                            const Params& params) {
  Avals avals_in;
  avals_in.reserve(tracers.size());
  for (const Array& t : tracers) avals_in.push_back(detail::aval_of(t));
  return stage(prim, tracers, params, prim.abstract_eval(avals_in, params));
}

XPR_FUNC Arrays PartialEvalTrace::process_primitive(const Primitive& prim,
                                                    std::span<const Array> tracers,
                                                    const Params& params) {
  bool all_known = std::all_of(tracers.begin(), tracers.end(), [](const Array& t) {
    return detail::as_pe_tracer(t).pval().is_known();
  });
  if (all_known) {
    Arrays values;
    values.reserve(tracers.size());
    for (const Array& t : tracers) values.push_back(*detail::as_pe_tracer(t).pval().value);
    return rt::bind(prim, values, params);
  }
  if (const PartialEvalRules* rules = partial_eval_rules(prim))
    if (auto out = rules->partial_eval(*this, tracers, params)) return std::move(*out);
  return default_process_primitive(prim, tracers, params);
}

}  // namespace xpr::rt

namespace xpr::rt::detail {

XPR_FUNC std::vector<const PartialEvalTracer*> tracer_parents(const PartialEvalTracer* t) {
  std::vector<const PartialEvalTracer*> out;
  if (const auto* eqn = std::get_if<std::shared_ptr<const JaxprEqnRecipe>>(&t->recipe()))
    for (const auto& p : (*eqn)->tracers_in) out.push_back(p.get());
  return out;
}

XPR_FUNC std::vector<const PartialEvalTracer*> toposort(
    std::vector<const PartialEvalTracer*> outs) {
  if (outs.empty()) return {};
  {
    std::unordered_set<const PartialEvalTracer*> seen;
    std::vector<const PartialEvalTracer*> unique;
    for (const auto* t : outs)
      if (seen.insert(t).second) unique.push_back(t);
    outs = std::move(unique);
  }
  std::unordered_map<const PartialEvalTracer*, std::size_t> child_counts;
  std::vector<const PartialEvalTracer*> stack(outs.begin(), outs.end());
  while (!stack.empty()) {
    const PartialEvalTracer* node = stack.back();
    stack.pop_back();
    auto [it, fresh] = child_counts.emplace(node, 1);
    if (!fresh) {
      ++it->second;
      continue;
    }
    for (const auto* p : tracer_parents(node)) stack.push_back(p);
  }
  for (const auto* node : outs) --child_counts[node];
  std::vector<const PartialEvalTracer*> sorted, childless;
  for (const auto* node : outs)
    if (child_counts[node] == 0) childless.push_back(node);
  while (!childless.empty()) {
    const PartialEvalTracer* node = childless.back();
    childless.pop_back();
    sorted.push_back(node);
    for (const auto* p : tracer_parents(node)) {
      if (child_counts[p] == 1)
        childless.push_back(p);
      else
        --child_counts[p];
    }
  }
  std::reverse(sorted.begin(), sorted.end());
  return sorted;
}

}  // namespace xpr::rt::detail

namespace xpr::rt {

XPR_FUNC ClosedJaxpr tracers_to_jaxpr(std::span<const Array> tracers_in,
                                      std::span<const Array> tracers_out) {
  std::unordered_map<const PartialEvalTracer*, Var> tracer_to_var;
  Jaxpr jaxpr;
  std::vector<Array> consts;
  for (const Array& t : tracers_in) {
    Var v(detail::aval_of(t));
    tracer_to_var.insert_or_assign(&detail::as_pe_tracer(t), v);
    jaxpr.invars.push_back(std::move(v));
  }
  std::unordered_map<const void*, Var> const_to_var;
  std::unordered_set<const JaxprEqnRecipe*> processed;
  std::vector<const PartialEvalTracer*> outs;
  outs.reserve(tracers_out.size());
  for (const Array& t : tracers_out) outs.push_back(&detail::as_pe_tracer(t));
  auto var_of = [&](const PartialEvalTracer* t) -> const Var& {
    auto it = tracer_to_var.find(t);
    if (it == tracer_to_var.end())
      throw core::type_error("tracers_to_jaxpr: a staged value of type " + t->aval().str() +
                             " depends on an input that is not among the jaxpr's inputs");
    return it->second;
  };
  for (const PartialEvalTracer* t : detail::toposort(outs)) {
    const JaxprRecipe& r = t->recipe();
    if (std::holds_alternative<LambdaBindingRecipe>(r)) {
      (void)var_of(t);  // must be an input
    } else if (const auto* c = std::get_if<ConstRecipe>(&r)) {
      auto [it, fresh] = const_to_var.try_emplace(c->value.impl().get(), detail::aval_of(c->value));
      if (fresh) {
        jaxpr.constvars.push_back(it->second);
        consts.push_back(c->value);
      }
      tracer_to_var.insert_or_assign(t, it->second);
    } else if (const auto* e = std::get_if<std::shared_ptr<const JaxprEqnRecipe>>(&r)) {
      const JaxprEqnRecipe& recipe = **e;
      if (!processed.insert(&recipe).second) continue;
      Eqn eqn{recipe.prim, {}, recipe.params, {}};
      for (const auto& in : recipe.tracers_in) eqn.inputs.emplace_back(var_of(in.get()));
      for (std::size_t i = 0; i < recipe.avals_out.size(); ++i) {
        Var v(recipe.avals_out[i]);
        if (auto out = recipe.tracer_refs_out[i].lock())
          tracer_to_var.insert_or_assign(out.get(), v);
        eqn.outputs.push_back(std::move(v));
      }
      jaxpr.eqns.push_back(std::move(eqn));
    } else {
      throw core::type_error(
          "tracers_to_jaxpr: expected unknown tracers, found a known value of "
          "type " +
          t->aval().str());
    }
  }
  for (const PartialEvalTracer* t : outs) jaxpr.outvars.emplace_back(var_of(t));
  return ClosedJaxpr{std::move(jaxpr), std::move(consts)};
}

XPR_FUNC PartialEvalResult partial_eval_flat(const std::function<Arrays(std::span<const Array>)>& f,
                                             std::span<const PartialVal> pvals_in,
                                             const std::vector<bool>& instantiate,
                                             std::string name) {
  MainScope scope(std::in_place_type<PartialEvalTrace>, std::move(name));
  PartialEvalTrace& trace = scope.trace<PartialEvalTrace>();
  Arrays tracers_in;
  tracers_in.reserve(pvals_in.size());
  for (const PartialVal& p : pvals_in) tracers_in.push_back(trace.new_arg(p));
  Arrays outs = f(tracers_in);
  if (instantiate.size() > 1 && instantiate.size() != outs.size())
    throw core::type_error("partial_eval: expected one instantiate flag per output (" +
                           std::to_string(outs.size()) + "), found " +
                           std::to_string(instantiate.size()));
  Arrays tracers_out;
  tracers_out.reserve(outs.size());
  for (std::size_t i = 0; i < outs.size(); ++i) {
    Array t = full_raise(trace, outs[i]);
    bool inst = instantiate.size() == 1 ? instantiate[0] : (!instantiate.empty() && instantiate[i]);
    tracers_out.push_back(inst ? trace.instantiate_const(t) : t);
  }
  PartialEvalResult result;
  Arrays unknown_in, unknown_out;
  for (const Array& t : tracers_in)
    if (detail::as_pe_tracer(t).pval().is_unknown()) unknown_in.push_back(t);
  for (const Array& t : tracers_out) {
    const PartialVal& p = detail::as_pe_tracer(t).pval();
    result.pvals_out.push_back(p);
    if (p.is_unknown()) unknown_out.push_back(t);
  }
  result.jaxpr = tracers_to_jaxpr(unknown_in, unknown_out);
  return result;
}

XPR_FUNC std::pair<Jaxpr, std::vector<bool>> dce_jaxpr(const Jaxpr& jaxpr,
                                                       const std::vector<bool>& used_outputs,
                                                       bool instantiate) {
  if (used_outputs.size() != jaxpr.outvars.size())
    throw core::type_error("dce_jaxpr: expected one used flag per output (" +
                           std::to_string(jaxpr.outvars.size()) + "), found " +
                           std::to_string(used_outputs.size()));
  std::unordered_set<const void*> live;
  Jaxpr out;
  out.constvars = jaxpr.constvars;
  for (std::size_t i = 0; i < jaxpr.outvars.size(); ++i) {
    if (!used_outputs[i]) continue;
    out.outvars.push_back(jaxpr.outvars[i]);
    if (const Var* v = std::get_if<Var>(&jaxpr.outvars[i])) live.insert(v->id());
  }
  std::vector<Eqn> kept;
  for (auto it = jaxpr.eqns.rbegin(); it != jaxpr.eqns.rend(); ++it) {
    const Eqn& e = *it;
    std::vector<bool> used(e.outputs.size());
    bool any = false;
    for (std::size_t k = 0; k < e.outputs.size(); ++k)
      any |= (used[k] = live.count(e.outputs[k].id()) > 0);
    if (!any) continue;
    std::optional<DceEqn> custom;
    if (const PartialEvalRules* rules = e.primitive ? partial_eval_rules(*e.primitive) : nullptr)
      custom = rules->dce(used, e);
    if (custom) {
      if (!custom->eqn) continue;
      for (std::size_t i = 0; i < custom->eqn->inputs.size(); ++i)
        if (const Var* v = std::get_if<Var>(&custom->eqn->inputs[i])) live.insert(v->id());
      kept.push_back(std::move(*custom->eqn));
    } else {
      for (const Atom& a : e.inputs)
        if (const Var* v = std::get_if<Var>(&a)) live.insert(v->id());
      kept.push_back(e);
    }
  }
  out.eqns.assign(std::make_move_iterator(kept.rbegin()), std::make_move_iterator(kept.rend()));
  std::vector<bool> used_inputs;
  used_inputs.reserve(jaxpr.invars.size());
  for (const Var& v : jaxpr.invars) {
    bool used = instantiate || live.count(v.id()) > 0;
    used_inputs.push_back(used);
    if (used) out.invars.push_back(v);
  }
  return {std::move(out), std::move(used_inputs)};
}

XPR_FUNC std::pair<ClosedJaxpr, std::vector<bool>> dce_jaxpr(const ClosedJaxpr& closed,
                                                             const std::vector<bool>& used_outputs,
                                                             bool instantiate) {
  auto [jaxpr, used_inputs] = dce_jaxpr(closed.jaxpr, used_outputs, instantiate);
  std::unordered_set<const void*> read;
  for (const Eqn& e : jaxpr.eqns)
    for (const Atom& a : e.inputs)
      if (const Var* v = std::get_if<Var>(&a)) read.insert(v->id());
  for (const Atom& a : jaxpr.outvars)
    if (const Var* v = std::get_if<Var>(&a)) read.insert(v->id());
  ClosedJaxpr out;
  for (std::size_t i = 0; i < jaxpr.constvars.size(); ++i) {
    if (!read.count(jaxpr.constvars[i].id())) continue;
    out.jaxpr.constvars.push_back(jaxpr.constvars[i]);
    out.consts.push_back(closed.consts[i]);
  }
  out.jaxpr.invars = std::move(jaxpr.invars);
  out.jaxpr.eqns = std::move(jaxpr.eqns);
  out.jaxpr.outvars = std::move(jaxpr.outvars);
  return {std::move(out), std::move(used_inputs)};
}

XPR_FUNC PartialEvalJaxpr partial_eval_jaxpr(const ClosedJaxpr& closed,
                                             const std::vector<bool>& in_unknowns,
                                             const std::vector<bool>& instantiate) {
  const Jaxpr& jaxpr = closed.jaxpr;
  if (in_unknowns.size() != jaxpr.invars.size())
    throw core::type_error("partial_eval_jaxpr: expected one unknown flag per input (" +
                           std::to_string(jaxpr.invars.size()) + "), found " +
                           std::to_string(in_unknowns.size()));
  if (instantiate.size() > 1 && instantiate.size() != jaxpr.outvars.size())
    throw core::type_error("partial_eval_jaxpr: expected one instantiate flag per output (" +
                           std::to_string(jaxpr.outvars.size()) + "), found " +
                           std::to_string(instantiate.size()));
  std::unordered_map<const void*, bool> unknown;  // var -> is unknown
  std::vector<Var> residuals;
  std::unordered_set<const void*> is_residual;
  auto read = [&](const Atom& a) {
    const Var* v = std::get_if<Var>(&a);
    if (!v) return false;
    auto it = unknown.find(v->id());
    return it != unknown.end() && it->second;
  };
  auto new_res = [&](const Atom& a) {
    if (const Var* v = std::get_if<Var>(&a))
      if (is_residual.insert(v->id()).second) residuals.push_back(*v);
  };
  for (const Var& v : jaxpr.constvars) unknown[v.id()] = false;
  for (std::size_t i = 0; i < jaxpr.invars.size(); ++i)
    unknown[jaxpr.invars[i].id()] = in_unknowns[i];

  std::vector<Eqn> eqns1, eqns2;
  for (const Eqn& e : jaxpr.eqns) {
    std::vector<bool> unks_in;
    unks_in.reserve(e.inputs.size());
    for (const Atom& a : e.inputs) unks_in.push_back(read(a));
    bool any_unknown = std::find(unks_in.begin(), unks_in.end(), true) != unks_in.end();
    std::optional<PartialEvalEqn> custom;
    if (const PartialEvalRules* rules = e.primitive ? partial_eval_rules(*e.primitive) : nullptr)
      custom = rules->partial_eval_jaxpr(unks_in, e);
    if (custom) {
      if (custom->known) eqns1.push_back(std::move(*custom->known));
      if (custom->unknown) eqns2.push_back(std::move(*custom->unknown));
      for (const Var& r : custom->residuals)
        if (is_residual.insert(r.id()).second) residuals.push_back(r);
      for (std::size_t k = 0; k < e.outputs.size(); ++k)
        unknown[e.outputs[k].id()] = k < custom->out_unknowns.size() && custom->out_unknowns[k];
    } else if (any_unknown) {
      for (std::size_t i = 0; i < e.inputs.size(); ++i)
        if (!unks_in[i]) new_res(e.inputs[i]);
      eqns2.push_back(e);
      for (const Var& v : e.outputs) unknown[v.id()] = true;
    } else {
      eqns1.push_back(e);
      for (const Var& v : e.outputs) unknown[v.id()] = false;
    }
  }
  std::vector<bool> out_unknowns;
  for (std::size_t i = 0; i < jaxpr.outvars.size(); ++i) {
    bool uk = read(jaxpr.outvars[i]);
    bool inst = instantiate.size() == 1 ? instantiate[0] : (!instantiate.empty() && instantiate[i]);
    if (inst && !uk) new_res(jaxpr.outvars[i]);
    out_unknowns.push_back(uk || inst);
  }

  // The unknown half: residuals, then unknown inputs. Drop residuals it does not read.
  Jaxpr j2;
  j2.invars = residuals;
  for (std::size_t i = 0; i < jaxpr.invars.size(); ++i)
    if (in_unknowns[i]) j2.invars.push_back(jaxpr.invars[i]);
  j2.eqns = std::move(eqns2);
  for (std::size_t i = 0; i < jaxpr.outvars.size(); ++i)
    if (out_unknowns[i]) j2.outvars.push_back(jaxpr.outvars[i]);
  auto [j2_dce, used2] = dce_jaxpr(j2, std::vector<bool>(j2.outvars.size(), true), false);
  std::vector<Var> used_residuals;
  for (std::size_t i = 0; i < residuals.size(); ++i)
    if (used2[i]) used_residuals.push_back(residuals[i]);
  // Unknown inputs stay inputs even when unused, so the caller's argument list keeps its shape.
  j2_dce.invars = used_residuals;
  for (std::size_t i = 0; i < jaxpr.invars.size(); ++i)
    if (in_unknowns[i]) j2_dce.invars.push_back(jaxpr.invars[i]);

  // The known half: known inputs -> known outputs, residuals.
  Jaxpr j1;
  j1.constvars = jaxpr.constvars;
  for (std::size_t i = 0; i < jaxpr.invars.size(); ++i)
    if (!in_unknowns[i]) j1.invars.push_back(jaxpr.invars[i]);
  j1.eqns = std::move(eqns1);
  for (std::size_t i = 0; i < jaxpr.outvars.size(); ++i)
    if (!out_unknowns[i]) j1.outvars.push_back(jaxpr.outvars[i]);
  for (const Var& r : used_residuals) j1.outvars.emplace_back(r);
  std::vector<bool> all_used(j1.outvars.size(), true);
  ClosedJaxpr j1_closed{std::move(j1), closed.consts};
  ClosedJaxpr j1_dce = dce_jaxpr(j1_closed, all_used, true).first;

  PartialEvalJaxpr result;
  result.known = std::move(j1_dce);
  result.unknown = ClosedJaxpr{std::move(j2_dce), {}};
  result.out_unknowns = std::move(out_unknowns);
  result.num_res = used_residuals.size();
  return result;
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
