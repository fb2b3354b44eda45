// SPDX-License-Identifier: MIT
// The JVP interpreter (forward mode): a tracer carries a primal and a tangent, which may be a
// symbolic zero (JAX's `ad.Zero`); each primitive is processed by its `jvp_symbolic` rule, and not
// at all when every tangent is zero. Autodidax Part 1, with JAX's symbolic zeros.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <utility>

#include "xpr/core/config.hpp"
#include "xpr/core/error.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/trace.hpp"
#include "xpr/rt/zeros.hpp"

namespace xpr::rt {

/// A value under `jvp`: (primal, tangent), the tangent empty when it is a symbolic zero. Its
/// concrete value is its primal's, so Python-style control flow on it works when the primal is
/// concrete (as in JAX).
class JvpTracer final : public Tracer {
 public:
  JvpTracer(std::shared_ptr<MainTrace> main, Array primal, Tangent tangent)
      : Tracer(std::move(main), detail::aval_of(primal)),
        primal_(std::move(primal)),
        tangent_(std::move(tangent)) {}
  const Array& primal() const noexcept { return primal_; }
  /// The tangent; empty for a symbolic zero.
  const Tangent& tangent() const noexcept { return tangent_; }
  /// The tangent, zeros of the primal's type for a symbolic zero (JAX's `instantiate_zeros`).
  Array instantiated_tangent() const {
    return tangent_ ? *tangent_ : zeros_like_aval(detail::aval_of(primal_));
  }
  const detail::ConcreteArray* concrete() const noexcept override { return primal_.concrete(); }
  /// A value with a zero tangent is just its primal (JAX's JVPTracer.full_lower), so work that
  /// does not depend on the inputs leaves the JVP interpreter at once.
  Array full_lower(const Array& self) const override {
    return tangent_ ? self : rt::full_lower(primal_);
  }

 private:
  Array primal_;
  Tangent tangent_;
};

class JvpTrace final : public Trace {
 public:
  using Trace::Trace;

  /// A tracer with this primal and tangent (empty: a symbolic zero).
  XPR_MEMBER Array make_tracer(Array primal, Tangent tangent);
  /// Values from outside the transformation have zero tangents, symbolically: no zero array is
  /// built, and no rule ever multiplies by one.
  Array pure(const Array& value) override { return make_tracer(value, std::nullopt); }
  Array lift(const Array& value) override { return make_tracer(value, std::nullopt); }

  XPR_MEMBER Arrays process_primitive(const Primitive& prim, std::span<const Array> tracers,
                                      const Params& params) override;
};

}  // namespace xpr::rt

#if XPR_DEFINITIONS

namespace xpr::rt {

XPR_FUNC Array JvpTrace::make_tracer(Array primal, Tangent tangent) {
  if (tangent && !detail::aval_of(primal).same_type(detail::aval_of(*tangent)))
    throw core::type_error("jvp: a tangent must have its primal's shape and dtype: expected " +
                           detail::aval_of(primal).str() + ", found " +
                           detail::aval_of(*tangent).str());
  return Array(
      std::make_shared<const JvpTracer>(shared_main(), std::move(primal), std::move(tangent)));
}

XPR_FUNC Arrays JvpTrace::process_primitive(const Primitive& prim, std::span<const Array> tracers,
                                            const Params& params) {
  Arrays primals;
  Tangents tangents;
  primals.reserve(tracers.size());
  tangents.reserve(tracers.size());
  bool any_nonzero = false;
  for (const Array& t : tracers) {
    const auto& jt = static_cast<const JvpTracer&>(*t.impl());
    primals.push_back(jt.primal());
    tangents.push_back(jt.tangent());
    any_nonzero = any_nonzero || jt.tangent().has_value();
  }
  Arrays out;
  if (!any_nonzero) {
    // Nothing to differentiate: the primitive applies to the primals at the levels below and
    // every output's tangent is zero (JAX's JVPTrace skips the rule likewise).
    Arrays primals_out = rt::bind(prim, primals, params);
    out.reserve(primals_out.size());
    for (Array& p : primals_out) out.push_back(make_tracer(std::move(p), std::nullopt));
    return out;
  }
  auto [primals_out, tangents_out] = prim.jvp_symbolic(primals, tangents, params);
  if (tangents_out.size() != primals_out.size())
    throw core::type_error("jvp rule for '" + prim.name() + "': expected one tangent per " +
                           "output (" + std::to_string(primals_out.size()) + "), found " +
                           std::to_string(tangents_out.size()));
  out.reserve(primals_out.size());
  for (std::size_t i = 0; i < primals_out.size(); ++i)
    out.push_back(make_tracer(std::move(primals_out[i]), std::move(tangents_out[i])));
  return out;
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
