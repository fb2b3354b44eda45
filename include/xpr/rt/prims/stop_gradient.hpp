// SPDX-License-Identifier: MIT
// stop_gradient(x): the identity on values that differentiation treats as a constant (its JVP is
// zero). Eagerly it returns its operand itself: arrays are immutable, so nothing needs copying.
#pragma once

#include <span>
#include <string>

#include "xpr/core/config.hpp"
#include "xpr/core/error.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/prims/detail/zero_jvp.hpp"
#include "xpr/rt/prims/elementwise.hpp"
#include "xpr/rt/trace.hpp"

namespace xpr::rt {

/// stop_gradient(x) for `x` of any dtype and shape; abstract_eval is the identity. The value
/// passes; derivatives do not (a zero tangent: `ZeroJvpPrimitive`).
class StopGradient final : public detail::ZeroJvpPrimitive {
 public:
  constexpr StopGradient() : ZeroJvpPrimitive("stop_gradient") {}

  XPR_MEMBER Arrays impl(std::span<const Array> args, const Params& params) const override;

  Avals abstract_eval(std::span<const ShapedArray> args, const Params&) const override {
    return {detail::unary_aval(name(), args, detail::Accepts::any)};
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

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
