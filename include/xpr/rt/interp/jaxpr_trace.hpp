// SPDX-License-Identifier: MIT
// The jaxpr-building interpreter behind make_jaxpr (and, later, jit): each primitive application
// becomes an equation; values from outside become constvars, rank-0 ones inline literals (except
// those held by KeepAsConstvars, such as linearize's residuals). It is made the dynamic trace
// (omnistaging), so every primitive applied while it is active is staged out. Autodidax Part 2.
// Partial evaluation, which JAX also calls JaxprTrace, is PartialEvalTrace in partial_eval.hpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/core/error.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/jaxpr.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/trace.hpp"

namespace xpr::rt {

namespace detail {
/// The arrays that staging keeps as constvars even when they are concrete and of rank 0.
inline std::vector<const void*>& kept_constvars() {
  thread_local std::vector<const void*> kept;
  return kept;
}

}  // namespace detail

/// While alive, `make_jaxpr` stages the given arrays as constvars rather than inline literals.
/// `linearize`'s linear function holds its residuals this way, so its jaxpr shows them before the
/// `;` as JAX does (JAX inlines only Python scalars; a computed jax.Array stays a constant).
class KeepAsConstvars {
 public:
  explicit KeepAsConstvars(std::span<const Array> values) : count_(values.size()) {
    for (const Array& v : values) detail::kept_constvars().push_back(v.impl().get());
  }
  KeepAsConstvars(const KeepAsConstvars&) = delete;
  KeepAsConstvars& operator=(const KeepAsConstvars&) = delete;
  ~KeepAsConstvars() {
    auto& kept = detail::kept_constvars();
    kept.resize(kept.size() >= count_ ? kept.size() - count_ : 0);
  }

 private:
  std::size_t count_;
};

/// A value being staged into a jaxpr: just its variable.
class JaxprTracer final : public Tracer {
 public:
  JaxprTracer(std::shared_ptr<MainTrace> main, Var var)
      : Tracer(std::move(main), var.aval()), var_(std::move(var)) {}
  const Var& var() const noexcept { return var_; }

 private:
  Var var_;
};

class JaxprTrace final : public Trace {
 public:
  using Trace::Trace;

  /// A new input variable of type `aval`, as a tracer.
  XPR_MEMBER Array new_arg(const ShapedArray& aval);

  Array pure(const Array& value) override { return make_tracer(const_var(value)); }
  Array lift(const Array& value) override { return make_tracer(const_var(value)); }

  XPR_MEMBER Arrays process_primitive(const Primitive& prim, std::span<const Array> tracers,
                                      const Params& params) override;

  /// The jaxpr of everything staged so far with `outs` (tracers of this trace) as its outputs.
  /// Rank-0 concrete constants are written inline as literals, as JAX does.
  XPR_MEMBER ClosedJaxpr build(std::span<const Array> outs);

 private:
  Array make_tracer(Var v) {
    return Array(std::make_shared<const JaxprTracer>(shared_main(), std::move(v)));
  }

  /// The constvar holding `value` (one per distinct array object).
  XPR_MEMBER const Var& const_var(const Array& value);

  std::vector<Var> invars_;
  std::vector<Eqn> eqns_;
  std::vector<std::pair<Array, Var>> consts_;  // holds each constant alive, so its key is stable
  std::unordered_map<const void*, std::size_t> const_index_;
  std::unordered_set<const void*> kept_;  // constvars never inlined (see KeepAsConstvars)
};

}  // namespace xpr::rt

#if XPR_DEFINITIONS

namespace xpr::rt {

XPR_FUNC Array JaxprTrace::new_arg(const ShapedArray& aval) {
  Var v(aval);
  invars_.push_back(v);
  return make_tracer(std::move(v));
}

XPR_FUNC Arrays JaxprTrace::process_primitive(const Primitive& prim, std::span<const Array> tracers,
                                              const Params& params) {
  Eqn eqn{&prim, {}, params, {}};
  Avals in_avals;
  eqn.inputs.reserve(tracers.size());
  in_avals.reserve(tracers.size());
  for (const Array& t : tracers) {
    const Var& v = static_cast<const JaxprTracer&>(*t.impl()).var();
    eqn.inputs.emplace_back(v);
    in_avals.push_back(v.aval());
  }
  Avals out_avals = prim.abstract_eval(in_avals, params);
  Arrays out;
  out.reserve(out_avals.size());
  for (ShapedArray& a : out_avals) {
    Var v(std::move(a));
    eqn.outputs.push_back(v);
    out.push_back(make_tracer(std::move(v)));
  }
  eqns_.push_back(std::move(eqn));
  return out;
}

XPR_FUNC ClosedJaxpr JaxprTrace::build(std::span<const Array> outs) {
  // Raise the outputs first: an output that is a constant (it does not depend on the inputs)
  // becomes a constvar here, and must be among the constants collected below.
  std::vector<Var> out_vars;
  out_vars.reserve(outs.size());
  for (const Array& o : outs) {
    const Array raised = full_raise(*this, o);
    out_vars.push_back(static_cast<const JaxprTracer&>(*raised.impl()).var());
  }
  Jaxpr jaxpr;
  jaxpr.invars = invars_;
  std::vector<Array> consts;
  std::unordered_map<const void*, Literal> literals;  // var id -> literal
  for (const auto& [value, var] : consts_) {
    if (value.ndim() == 0 && value.is_concrete() && !kept_.count(var.id())) {
      literals.emplace(var.id(), Literal{value});
    } else {
      jaxpr.constvars.push_back(var);
      consts.push_back(value);
    }
  }
  auto atom = [&](const Var& v) -> Atom {
    auto it = literals.find(v.id());
    if (it != literals.end()) return it->second;
    return v;
  };
  jaxpr.eqns.reserve(eqns_.size());
  for (const Eqn& e : eqns_) {
    Eqn copy = e;
    for (Atom& in : copy.inputs)
      if (const Var* v = std::get_if<Var>(&in)) in = atom(*v);
    jaxpr.eqns.push_back(std::move(copy));
  }
  for (const Var& v : out_vars) jaxpr.outvars.push_back(atom(v));
  return ClosedJaxpr{std::move(jaxpr), std::move(consts)};
}

XPR_FUNC const Var& JaxprTrace::const_var(const Array& value) {
  auto it = const_index_.find(value.impl().get());
  if (it != const_index_.end()) return consts_[it->second].second;
  const_index_.emplace(value.impl().get(), consts_.size());
  consts_.emplace_back(value, Var(detail::aval_of(value)));
  const auto& kept = detail::kept_constvars();
  if (std::find(kept.begin(), kept.end(), value.impl().get()) != kept.end())
    kept_.insert(consts_.back().second.id());
  return consts_.back().second;
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
