// SPDX-License-Identifier: MIT
// The JVP interpreter (forward mode): a tracer carries a primal and a tangent; each primitive is
// processed by its `jvp` rule. Autodidax Part 1.
#pragma once

#include <memory>
#include <span>
#include <utility>

#include "xpr/core/error.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/trace.hpp"
#include "xpr/rt/zeros.hpp"

namespace xpr::rt {

/// A value under `jvp`: (primal, tangent). Its concrete value is its primal's, so Python-style
/// control flow on it works when the primal is concrete (as in JAX).
class JvpTracer final : public Tracer {
 public:
  JvpTracer(std::shared_ptr<MainTrace> main, Array primal, Array tangent)
      : Tracer(std::move(main), primal.aval()),
        primal_(std::move(primal)),
        tangent_(std::move(tangent)) {}
  const Array& primal() const noexcept { return primal_; }
  const Array& tangent() const noexcept { return tangent_; }
  const detail::ConcreteArray* concrete() const noexcept override { return primal_.concrete(); }

 private:
  Array primal_, tangent_;
};

class JvpTrace final : public Trace {
 public:
  using Trace::Trace;

  Array make_tracer(Array primal, Array tangent) {
    if (!primal.aval().same_type(tangent.aval()))
      throw core::type_error("jvp: a tangent must have its primal's shape and dtype: expected " +
                             primal.aval().str() + ", found " + tangent.aval().str());
    return Array(std::make_shared<const JvpTracer>(shared_main(), std::move(primal),
                                                   std::move(tangent)));
  }
  Array pure(const Array& value) override { return make_tracer(value, zeros_like_aval(value.aval())); }
  Array lift(const Array& value) override { return pure(value); }

  Arrays process_primitive(const Primitive& prim, std::span<const Array> tracers,
                           const Params& params) override {
    Arrays primals, tangents;
    primals.reserve(tracers.size());
    tangents.reserve(tracers.size());
    for (const Array& t : tracers) {
      const auto& jt = static_cast<const JvpTracer&>(*t.impl());
      primals.push_back(jt.primal());
      tangents.push_back(jt.tangent());
    }
    auto [primals_out, tangents_out] = prim.jvp(primals, tangents, params);
    Arrays out;
    out.reserve(primals_out.size());
    for (std::size_t i = 0; i < primals_out.size(); ++i)
      out.push_back(make_tracer(std::move(primals_out[i]), std::move(tangents_out[i])));
    return out;
  }

};

}  // namespace xpr::rt
