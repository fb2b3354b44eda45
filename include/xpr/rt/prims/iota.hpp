// SPDX-License-Identifier: MIT
// iota: the array whose elements count along one dimension (`lax.broadcasted_iota`; a rank-1
// iota is `lax.iota`). It has no operands, so it is how index arrays enter a traced program; for
// the same reason its tangent is zero and vmap never meets it batched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "xpr/core/config.hpp"
#include "xpr/core/dtype.hpp"
#include "xpr/core/error.hpp"
#include "xpr/core/shape.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/aval.hpp"
#include "xpr/rt/params.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/trace.hpp"
#include "xpr/rt/zeros.hpp"

namespace xpr::rt {

/// iota[dtype, shape, dimension](): out[i₀, …, iₙ] = i_dimension, converted to `dtype` (numeric).
class Iota final : public Primitive {
 public:
  constexpr Iota() : Primitive("iota") {}

  XPR_MEMBER Arrays impl(std::span<const Array> args, const Params& params) const override;

  Avals abstract_eval(std::span<const ShapedArray> args, const Params& params) const override {
    return {abstract_eval_one(args.size(), params)};
  }

  /// No operands, so nothing to differentiate: a zero tangent.
  XPR_MEMBER std::pair<Arrays, Arrays> jvp(std::span<const Array> primals, std::span<const Array>,
                                           const Params& params) const override;

  /// No operands, so none is batched: the unbatched result.
  /// With symbolic zeros: the tangent is a symbolic zero, nothing is computed.
  std::pair<Arrays, Tangents> jvp_symbolic(std::span<const Array> primals, std::span<const Tangent>,
                                           const Params& params) const override {
    return {rt::bind(*this, primals, params), {std::nullopt}};
  }

  std::pair<Arrays, BatchDims> batch(std::span<const Array> args, std::span<const BatchDim>,
                                     std::int64_t, const Params& params) const override {
    return {rt::bind(*this, args, params), {std::nullopt}};
  }

 private:
  XPR_MEMBER ShapedArray abstract_eval_one(std::size_t num_args, const Params& params) const;
};

inline constinit const Iota iota_p{};

/// `lax.iota(dtype, n)`: 0, 1, …, n - 1.
Array iota(DType dtype, std::int64_t n);

/// `lax.broadcasted_iota(dtype, shape, dimension)`: counts along `dimension` of `shape`.
inline Array broadcasted_iota(DType dtype, const Shape& shape, std::int64_t dimension) {
  return bind1(iota_p, {}, {{"dtype", dtype}, {"shape", shape}, {"dimension", dimension}});
}

}  // namespace xpr::rt

namespace xpr {
using rt::broadcasted_iota;
using rt::iota;
}  // namespace xpr

#if XPR_DEFINITIONS

namespace xpr::rt {

XPR_FUNC Arrays Iota::impl(std::span<const Array> args, const Params& params) const {
  ShapedArray out = abstract_eval_one(args.size(), params);
  auto dim = static_cast<std::size_t>(params.get<std::int64_t>("dimension"));
  // Row-major: blocks of `inner` equal values, counting to `n`, repeated `outer` times.
  std::int64_t n = out.shape[dim], inner = 1, outer = 1;
  for (std::size_t i = 0; i < dim; ++i) outer *= out.shape[i];
  for (std::size_t i = dim + 1; i < out.ndim(); ++i) inner *= out.shape[i];
  ArrayBuilder b(out);
  dispatch_dtype(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = b.data<T>();
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < inner; ++j) *p++ = static_cast<T>(i);
  });
  return {std::move(b).finish()};
}

XPR_FUNC std::pair<Arrays, Arrays> Iota::jvp(std::span<const Array> primals, std::span<const Array>,
                                             const Params& params) const {
  Array ans = rt::bind(*this, primals, params)[0];
  Array t = zeros_like_aval(detail::aval_of(ans));
  return {{std::move(ans)}, {std::move(t)}};
}

XPR_FUNC ShapedArray Iota::abstract_eval_one(std::size_t num_args, const Params& params) const {
  if (num_args != 0)
    throw core::type_error("iota expected no operands, found " + std::to_string(num_args));
  DType dtype = params.get<DType>("dtype");
  const Shape& shape = params.get<Shape>("shape");
  std::int64_t dim = params.get<std::int64_t>("dimension");
  if (core::is_bool(dtype))
    throw core::dtype_error(
        "iota: expected a numeric dtype (int32, int64, float32 or float64), "
        "found bool");
  auto rank = static_cast<std::int64_t>(shape.rank());
  if (dim < 0 || dim >= rank)
    throw core::index_error("iota: dimension " + std::to_string(dim) +
                            " is out of bounds for shape " + shape.str() + " of rank " +
                            std::to_string(rank) + " (expected 0 <= dimension < " +
                            std::to_string(rank) + ")");
  return {shape, dtype, false};
}

XPR_FUNC Array iota(DType dtype, std::int64_t n) {
  if (n < 0)
    throw core::value_error("iota: expected a non-negative size, found " + std::to_string(n));
  return bind1(iota_p, {}, {{"dtype", dtype}, {"shape", Shape{n}}, {"dimension", std::int64_t{0}}});
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
