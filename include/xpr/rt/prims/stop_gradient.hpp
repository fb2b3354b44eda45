// SPDX-License-Identifier: MIT
// stop_gradient(x): the identity on values that differentiation treats as a constant (its JVP is
// zero). Eagerly it returns its operand itself: arrays are immutable, so nothing needs copying.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "xpr/core/config.hpp"
#include "xpr/core/error.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/prims/elementwise.hpp"
#include "xpr/rt/trace.hpp"
#include "xpr/rt/zeros.hpp"

namespace xpr::rt {

/// stop_gradient(x) for `x` of any dtype and shape; abstract_eval is the identity.
class StopGradient final : public Primitive {
 public:
  constexpr StopGradient() : Primitive("stop_gradient") {}

  XPR_MEMBER Arrays impl(std::span<const Array> args, const Params& params) const override;

  Avals abstract_eval(std::span<const ShapedArray> args, const Params&) const override {
    return {detail::unary_aval(name(), args, detail::Accepts::any)};
  }

  /// The value passes; derivatives do not.
  XPR_MEMBER std::pair<Arrays, Arrays> jvp(std::span<const Array> primals, std::span<const Array>,
                                           const Params& params) const override;

  /// With symbolic zeros: the tangent is a symbolic zero, nothing is computed.
  std::pair<Arrays, Tangents> jvp_symbolic(std::span<const Array> primals, std::span<const Tangent>,
                                           const Params& params) const override {
    return {rt::bind(*this, primals, params), {std::nullopt}};
  }

  std::pair<Arrays, BatchDims> batch(std::span<const Array> args, std::span<const BatchDim> dims,
                                     std::int64_t, const Params& params) const override {
    return {rt::bind(*this, args, params), {dims[0]}};
  }
};

inline constinit const StopGradient stop_gradient_p{};

}  // namespace xpr::rt

#if XPR_DEFINITIONS

namespace xpr::rt {

XPR_FUNC Arrays StopGradient::impl(std::span<const Array> args, const Params& params) const {
  (void)params;
  if (args.size() != 1)
    throw core::type_error("stop_gradient expected 1 operand, found " +
                           std::to_string(args.size()));
  return {args[0]};
}

XPR_FUNC std::pair<Arrays, Arrays> StopGradient::jvp(std::span<const Array> primals,
                                                     std::span<const Array>,
                                                     const Params& params) const {
  Arrays out = rt::bind(*this, primals, params);
  Array zero = zeros_like_aval(out[0].aval());
  return {std::move(out), {std::move(zero)}};
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
