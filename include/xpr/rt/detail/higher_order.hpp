// SPDX-License-Identifier: MIT
// What the higher-order primitives of custom_derivatives.hpp and checkpoint.hpp share: tracing a
// function to a closure-converted jaxpr, the jaxpr-to-jaxpr transformations their rules are built
// from (jvp_jaxpr, batch_jaxpr), and rule callables carried in an equation's parameters.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/jaxpr.hpp"
#include "xpr/rt/jaxpr_eval.hpp"
#include "xpr/rt/params.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/trace.hpp"
#include "xpr/rt/transformations.hpp"

namespace xpr::rt::detail {

/// True when no transformation is active on this thread, so a call can run its function directly
/// (JAX's eager `custom_jvp_call` and `checkpoint` just call the function too).
inline bool no_transformation_active() {
  const TraceState& st = trace_state();
  return st.stack.size() == 1 && st.dynamic->level() == 0;
}

Avals avals_of_values(std::span<const Array> xs);

Arrays concat(std::span<const Array> a, std::span<const Array> b);

/// A jaxpr without constants and the values it closes over, which callers pass as its leading
/// operands (JAX's `convert_constvars_jaxpr`): a higher-order primitive then sees every value it
/// depends on as an operand, so enclosing transformations see them too.
struct ConvertedJaxpr {
  JaxprParam jaxpr;
  Arrays consts;
};

/// `closed` with its constvars made leading invars. Staging writes a rank-0 value whose concrete
/// value is known as a literal even when it is a tracer of an enclosing transformation (a JVP
/// tracer with a concrete primal); such literals become constvars too, so the enclosing
/// transformation sees them as operands instead of constants.
ConvertedJaxpr convert_constvars(ClosedJaxpr closed);

/// `f` traced on inputs of types `in_avals`, closure-converted.
inline ConvertedJaxpr trace_to_converted_jaxpr(const FlatFunction& f,
                                               std::span<const ShapedArray> in_avals) {
  return convert_constvars(make_jaxpr_flat(f, in_avals));
}

/// The JVP of `jaxpr` as a jaxpr (JAX's `ad.jvp_jaxpr`): inputs are the primals and the tangents
/// marked `nonzero`; outputs are the primal outputs and the output tangents that are not
/// symbolically zero (`out_nonzero` says which).
struct JvpJaxpr {
  ConvertedJaxpr converted;
  std::vector<bool> out_nonzero;
};
/// Output tangents marked in `instantiate` are never symbolic zeros (JAX's `instantiate`): a loop
/// carry's tangent must exist in every iteration once it exists in one.
JvpJaxpr jvp_jaxpr(const ClosedJaxpr& jaxpr, const std::vector<bool>& nonzero,
                   const std::vector<bool>& instantiate = {});

/// `jaxpr` batched along the axes `dims` of inputs of (batched) types `in_avals`, every output
/// batched along axis 0 (JAX's `batch_jaxpr` with all outputs instantiated): the batching rules
/// of higher-order primitives rebind them on a batched jaxpr at the level below.
ClosedJaxpr batch_jaxpr(const ClosedJaxpr& jaxpr, std::span<const BatchDim> dims,
                        std::span<const ShapedArray> in_avals);

/// The operands of a batching rule with every batch axis moved to the front (JAX's rules for
/// call-like primitives do the same), and their dims (0 or not mapped).
std::pair<Arrays, BatchDims> batch_at_front(std::span<const Array> args,
                                            std::span<const BatchDim> dims);

bool any_batched(std::span<const BatchDim> dims);

// ---- rules in parameters ----------------------------------------------------------------------

/// A value computed on first use and kept (JAX's `_memoize` for jaxpr thunks). Thread-safe; the
/// computation runs outside the lock, because tracing a rule may trace other memoized rules.
template <class T>
class Memo {
 public:
  explicit Memo(std::function<T()> fn) : fn_(std::move(fn)) {}
  Memo(Memo&& other) noexcept : fn_(std::move(other.fn_)), value_(std::move(other.value_)) {}
  const T& get() const {
    {
      std::lock_guard lock(mutex_);
      if (value_) return *value_;
    }
    T v = fn_();
    std::lock_guard lock(mutex_);
    if (!value_) value_.emplace(std::move(v));
    return *value_;
  }

 private:
  std::function<T()> fn_;
  mutable std::mutex mutex_;
  mutable std::optional<T> value_;
};

/// The deleter of an opaque parameter's stub jaxpr, which also owns the rule it stands for.
template <class T>
struct OpaqueParamOwner {
  std::shared_ptr<const T> value;
  void operator()(const ClosedJaxpr* stub) const noexcept { delete stub; }
};

/// A rule (a C++ callable: JAX's `jvp_jaxpr_fun`, `fwd_jaxpr_thunk`, `bwd`) kept in an
/// equation's parameters. A parameter value is data (ParamValue has no alternative for a
/// function), so the rule rides in the deleter of an empty stub jaxpr: copies of the equation
/// share it, it lives as long as any of them, `opaque_value` gets it back with
/// `std::get_deleter`, and it prints as `{ lambda ; . let  in () }` where JAX prints
/// `<function ...>`. A jaxpr parsed from text has no rule behind its stub.
template <class T>
JaxprParam opaque_param(std::shared_ptr<const T> value) {
  return JaxprParam(new ClosedJaxpr{}, OpaqueParamOwner<T>{std::move(value)});
}

/// The rule behind the opaque parameter `name`, or null when there is none.
template <class T>
const T* opaque_value(const Params& params, std::string_view name) {
  const ParamValue* v = params.find(name);
  const JaxprParam* p = v ? std::get_if<JaxprParam>(v) : nullptr;
  if (!p || !*p) return nullptr;
  const auto* owner = std::get_deleter<OpaqueParamOwner<T>>(*p);
  return owner ? owner->value.get() : nullptr;
}

/// The rule behind the opaque parameter `name`, shared, or null when there is none.
template <class T>
std::shared_ptr<const T> opaque_shared(const Params& params, std::string_view name) {
  const ParamValue* v = params.find(name);
  const JaxprParam* p = v ? std::get_if<JaxprParam>(v) : nullptr;
  if (!p || !*p) return nullptr;
  const auto* owner = std::get_deleter<OpaqueParamOwner<T>>(*p);
  return owner ? owner->value : nullptr;
}

/// The sub-jaxpr parameter `name` of a higher-order equation.
const ClosedJaxpr& jaxpr_param(const Params& params, std::string_view name);

/// `params` with `name` set to `value`.
inline Params with_param(Params params, std::string name, ParamValue value) {
  params.set(std::move(name), std::move(value));
  return params;
}

}  // namespace xpr::rt::detail

#if XPR_DEFINITIONS

namespace xpr::rt::detail {

XPR_FUNC Avals avals_of_values(std::span<const Array> xs) {
  Avals out;
  out.reserve(xs.size());
  for (const Array& x : xs) out.push_back(detail::aval_of(x));
  return out;
}

XPR_FUNC Arrays concat(std::span<const Array> a, std::span<const Array> b) {
  Arrays out(a.begin(), a.end());
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

XPR_FUNC ConvertedJaxpr convert_constvars(ClosedJaxpr closed) {
  Jaxpr j = std::move(closed.jaxpr);
  std::unordered_map<const void*, Var> hoisted;
  auto hoist = [&](Atom& a) {
    const Literal* l = std::get_if<Literal>(&a);
    if (!l || !l->value.is_tracer()) return;
    auto [it, fresh] = hoisted.try_emplace(l->value.impl().get(), detail::aval_of(l->value));
    if (fresh) {
      j.constvars.push_back(it->second);
      closed.consts.push_back(l->value);
    }
    a = it->second;
  };
  for (Eqn& e : j.eqns)
    for (Atom& a : e.inputs) hoist(a);
  for (Atom& a : j.outvars) hoist(a);
  std::vector<Var> invars = std::move(j.constvars);
  invars.insert(invars.end(), j.invars.begin(), j.invars.end());
  j.constvars.clear();
  j.invars = std::move(invars);
  return {std::make_shared<const ClosedJaxpr>(ClosedJaxpr{std::move(j), {}}),
          std::move(closed.consts)};
}

XPR_FUNC JvpJaxpr jvp_jaxpr(const ClosedJaxpr& jaxpr, const std::vector<bool>& nonzero,
                            const std::vector<bool>& instantiate) {
  const std::size_t n = jaxpr.jaxpr.invars.size();
  Avals in_avals = jaxpr.in_avals();
  for (std::size_t i = 0; i < n; ++i)
    if (nonzero[i]) in_avals.push_back(jaxpr.jaxpr.invars[i].aval());
  std::vector<bool> out_nonzero;
  FlatFunction f = [&](std::span<const Array> in) {
    Tangents tangents(n);
    for (std::size_t i = 0, k = n; i < n; ++i)
      if (nonzero[i]) tangents[i] = in[k++];
    FlatFunction body = [&](std::span<const Array> x) { return eval_jaxpr(jaxpr, x); };
    auto [primals_out, tangents_out] = jvp_flat_symbolic(body, in.first(n), tangents);
    out_nonzero.clear();
    const std::size_t m = primals_out.size();
    for (std::size_t i = 0; i < m; ++i) {
      Tangent& t = tangents_out[i];
      if (!t && i < instantiate.size() && instantiate[i])
        t = zeros_like_aval(detail::aval_of(primals_out[i]));
      out_nonzero.push_back(t.has_value());
      if (t) primals_out.push_back(std::move(*t));
    }
    return primals_out;
  };
  ConvertedJaxpr converted = trace_to_converted_jaxpr(f, in_avals);
  return {std::move(converted), std::move(out_nonzero)};
}

XPR_FUNC ClosedJaxpr batch_jaxpr(const ClosedJaxpr& jaxpr, std::span<const BatchDim> dims,
                                 std::span<const ShapedArray> in_avals) {
  FlatFunction f = [&](std::span<const Array> in) {
    FlatFunction body = [&](std::span<const Array> x) { return eval_jaxpr(jaxpr, x); };
    return vmap_flat(body, in, dims, {BatchDim(0)});
  };
  return make_jaxpr_flat(f, in_avals);
}

XPR_FUNC std::pair<Arrays, BatchDims> batch_at_front(std::span<const Array> args,
                                                     std::span<const BatchDim> dims) {
  Arrays moved;
  BatchDims at_front;
  moved.reserve(args.size());
  for (std::size_t i = 0; i < args.size(); ++i) {
    moved.push_back(dims[i] && *dims[i] != 0 ? moveaxis(args[i], *dims[i], 0) : args[i]);
    at_front.push_back(dims[i] ? BatchDim(0) : std::nullopt);
  }
  return {std::move(moved), std::move(at_front)};
}

XPR_FUNC bool any_batched(std::span<const BatchDim> dims) {
  for (const BatchDim& d : dims)
    if (d) return true;
  return false;
}

XPR_FUNC const ClosedJaxpr& jaxpr_param(const Params& params, std::string_view name) {
  const JaxprParam& p = params.get<JaxprParam>(name);
  if (!p)
    throw core::type_error("expected a jaxpr in parameter '" + std::string(name) + "', found None");
  return *p;
}

}  // namespace xpr::rt::detail
#endif  // XPR_DEFINITIONS
