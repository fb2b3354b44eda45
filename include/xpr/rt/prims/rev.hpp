// SPDX-License-Identifier: MIT
// The rev primitive (lax.rev): the operand with the listed dimensions reversed. Indexing with a
// negative step (`x(xpr::range(xpr::none, xpr::none, -1))`) lowers to it, as in jax.numpy. It is
// linear and its own transpose.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/core/error.hpp"
#include "xpr/core/shape.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/aval.hpp"
#include "xpr/rt/params.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/prims/detail/transpose.hpp"
#include "xpr/rt/prims/shape.hpp"
#include "xpr/rt/trace.hpp"

namespace xpr::rt {

// ---- rev[dimensions] ----------------------------------------------------------------------------

/// rev[dimensions](x): element j of the result is element j' of `x`, where j'_d = n_d - 1 - j_d
/// along each listed dimension d and j'_d = j_d elsewhere. Same type as `x`.
class Rev final : public Primitive {
 public:
  constexpr Rev() : Primitive("rev") {}

  /// A strided copy that reads the reversed dimensions from their last element backwards.
  XPR_MEMBER Arrays impl(std::span<const Array> args, const Params& params) const override;

  Avals abstract_eval(std::span<const ShapedArray> args, const Params& params) const override {
    detail::check_one_operand(name(), args.size());
    return {abstract_eval_one(args[0], params)};
  }

  /// Linear: the tangent is reversed the same way.
  std::pair<Arrays, Arrays> jvp(std::span<const Array> primals, std::span<const Array> tangents,
                                const Params& params) const override {
    detail::check_one_operand(name(), primals.size());
    return detail::linear_jvp(*this, primals, tangents, params);
  }

  /// Transpose (JAX's `_rev_transpose_rule`): reversing is its own inverse and its own adjoint.
  Cotangents transpose(std::span<const Cotangent> cts, std::span<const LinearArg> args,
                       const Params& params) const override {
    detail::check_one_operand(name(), args.size());
    return {detail::fit_cotangent(bind1(*this, {*cts[0]}, params), aval_of(args[0]))};
  }

  /// The reversed dimensions skip the batch axis, which stays where it is.
  XPR_MEMBER std::pair<Arrays, BatchDims> batch(std::span<const Array> args,
                                                std::span<const BatchDim> dims, std::int64_t,
                                                const Params& params) const override;

 private:
  ShapedArray abstract_eval_one(const ShapedArray& x, const Params& params) const {
    (void)detail::unique_axes(name(), params.get<Axes>("dimensions"), x.ndim());  // checks them
    return x;
  }
};

inline constinit const Rev rev_p{};

/// `lax.rev(x, dimensions)`: `x` with the listed dimensions reversed (negative dimensions count
/// from the end); no equation when the list is empty.
Array rev(const Array& x, const Axes& dimensions);

}  // namespace xpr::rt

namespace xpr {
using rt::rev;
}  // namespace xpr

#if XPR_DEFINITIONS

namespace xpr::rt {

XPR_FUNC Arrays Rev::impl(std::span<const Array> args, const Params& params) const {
  detail::check_one_operand(name(), args.size());
  const Array& x = args[0];
  ShapedArray out = abstract_eval_one(detail::aval_of(x), params);
  std::vector<std::int64_t> strides = core::strides_of(x.shape());
  std::int64_t offset = 0;
  for (std::size_t d : detail::unique_axes(name(), params.get<Axes>("dimensions"), x.ndim())) {
    if (x.shape()[d] == 0) continue;
    offset += (x.shape()[d] - 1) * strides[d];
    strides[d] = -strides[d];
  }
  ArrayBuilder b(out);
  if (out.shape.size() > 0)
    dispatch_dtype(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      detail::strided_copy(x.data<T>() + offset, b.data<T>(), out.shape,
                           std::span<const std::int64_t>(strides));
    });
  return {std::move(b).finish()};
}

XPR_FUNC std::pair<Arrays, BatchDims> Rev::batch(std::span<const Array> args,
                                                 std::span<const BatchDim> dims, std::int64_t,
                                                 const Params& params) const {
  detail::check_one_operand(name(), args.size());
  if (!dims[0]) return {rt::bind(*this, args, params), {std::nullopt}};
  const std::int64_t b = *dims[0];
  const ShapedArray example = detail::unbatched_aval(detail::aval_of(args[0]), b);
  Axes moved;
  for (std::size_t d : detail::unique_axes(name(), params.get<Axes>("dimensions"), example.ndim()))
    moved.push_back(detail::skip_batch_axis(static_cast<std::int64_t>(d), b));
  return {{bind1(*this, {args[0]}, {{"dimensions", std::move(moved)}})}, {b}};
}

XPR_FUNC Array rev(const Array& x, const Axes& dimensions) {
  if (dimensions.empty()) return x;
  Axes dims;
  for (std::size_t d : detail::unique_axes("rev", dimensions, x.ndim()))
    dims.push_back(static_cast<std::int64_t>(d));
  return bind1(rev_p, {x}, {{"dimensions", std::move(dims)}});
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
