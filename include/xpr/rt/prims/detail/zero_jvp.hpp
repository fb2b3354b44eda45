// SPDX-License-Identifier: MIT
// The jvp rule of primitives whose outputs do not vary differentiably with their inputs
// (comparisons, is_finite, stop_gradient): JAX's `ad.defjvp_zero`, written once.
#pragma once

#include <optional>
#include <span>
#include <utility>

#include "xpr/core/config.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/trace.hpp"
#include "xpr/rt/zeros.hpp"

namespace xpr::rt::detail {

/// A primitive whose every output has a zero tangent: `jvp` binds the primitive to the primals
/// and pairs each output with zeros of its type; `jvp_symbolic` with a symbolic zero, so nothing
/// is computed for the tangents.
class ZeroJvpPrimitive : public Primitive {
 public:
  using Primitive::Primitive;

  XPR_MEMBER std::pair<Arrays, Arrays> jvp(std::span<const Array> primals, std::span<const Array>,
                                           const Params& params) const override;

  XPR_MEMBER std::pair<Arrays, Tangents> jvp_symbolic(std::span<const Array> primals,
                                                      std::span<const Tangent>,
                                                      const Params& params) const override;

 protected:
  ~ZeroJvpPrimitive() = default;  // as Primitive's: never deleted through a base pointer
};

}  // namespace xpr::rt::detail

#if XPR_DEFINITIONS

namespace xpr::rt::detail {

XPR_FUNC std::pair<Arrays, Arrays> ZeroJvpPrimitive::jvp(std::span<const Array> primals,
                                                         std::span<const Array>,
                                                         const Params& params) const {
  Arrays out = rt::bind(*this, primals, params);
  Arrays zeros;
  zeros.reserve(out.size());
  for (const Array& o : out) zeros.push_back(zeros_like_aval(detail::aval_of(o)));
  return {std::move(out), std::move(zeros)};
}

XPR_FUNC std::pair<Arrays, Tangents> ZeroJvpPrimitive::jvp_symbolic(std::span<const Array> primals,
                                                                    std::span<const Tangent>,
                                                                    const Params& params) const {
  Arrays out = rt::bind(*this, primals, params);
  Tangents zeros(out.size());  // std::nullopt: symbolic zeros
  return {std::move(out), std::move(zeros)};
}

}  // namespace xpr::rt::detail
#endif  // XPR_DEFINITIONS
