// SPDX-License-Identifier: MIT
// The cumsum primitive (`lax.cumsum`): cumsum[axis=k reverse=False](x) is the running sum of `x`
// along axis k, from its first element, or from its last with reverse=True. As in JAX it is
// linear; its transpose is the cumulative sum the other way (`_cumsum_transpose_rule`), and under
// `vmap` the axis moves past the batch axis (which stays where it is).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

#include "xpr/core/config.hpp"
#include "xpr/core/dtype.hpp"
#include "xpr/core/error.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/aval.hpp"
#include "xpr/rt/params.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/prims/detail/transpose.hpp"
#include "xpr/rt/prims/shape.hpp"
#include "xpr/rt/trace.hpp"

namespace xpr::rt {

/// cumsum[axis reverse](x): element j of the result is the sum of the elements of `x` at
/// positions i with i_k <= j_k (i_k >= j_k when `reverse`) and i_d = j_d on every other axis d,
/// added in that order. Same type as `x`, which must be a number type (not bool).
class Cumsum final : public Primitive {
 public:
  constexpr Cumsum() : Primitive("cumsum") {}

  XPR_MEMBER Arrays impl(std::span<const Array> args, const Params& params) const override;

  Avals abstract_eval(std::span<const ShapedArray> args, const Params& params) const override {
    detail::check_one_operand(name(), args.size());
    return {abstract_eval_one(args[0], params)};
  }

  /// Linear: the tangent's running sum.
  std::pair<Arrays, Arrays> jvp(std::span<const Array> primals, std::span<const Array> tangents,
                                const Params& params) const override {
    detail::check_one_operand(name(), primals.size());
    return detail::linear_jvp(*this, primals, tangents, params);
  }

  /// The adjoint of a running sum from the front is the running sum from the back.
  XPR_MEMBER Cotangents transpose(std::span<const Cotangent> cts, std::span<const LinearArg> args,
                                  const Params& params) const override;

  XPR_MEMBER std::pair<Arrays, BatchDims> batch(std::span<const Array> args,
                                                std::span<const BatchDim> dims, std::int64_t,
                                                const Params& params) const override;

 private:
  XPR_MEMBER ShapedArray abstract_eval_one(const ShapedArray& x, const Params& params) const;
};

inline constinit const Cumsum cumsum_p{};

}  // namespace xpr::rt

#if XPR_DEFINITIONS

namespace xpr::rt {

XPR_FUNC ShapedArray Cumsum::abstract_eval_one(const ShapedArray& x, const Params& params) const {
  const std::int64_t a = params.get<std::int64_t>("axis");
  (void)params.get<bool>("reverse");  // present and a bool
  const auto r = static_cast<std::int64_t>(x.ndim());
  if (a < 0 || a >= r)
    throw core::index_error(name() + ": axis " + std::to_string(a) +
                            " is out of bounds for array of rank " + std::to_string(r) +
                            " (expected 0 <= axis < " + std::to_string(r) + ")");
  if (core::is_bool(x.dtype))
    throw core::dtype_error(name() +
                            ": expected a number type, found bool (xpr::cumsum counts "
                            "bools in int32)");
  return x;
}

XPR_FUNC Arrays Cumsum::impl(std::span<const Array> args, const Params& params) const {
  detail::check_one_operand(name(), args.size());  // before args[0] is read
  const ShapedArray out = abstract_eval_one(args[0].aval(), params);
  const Array& x = args[0];
  const auto a = static_cast<std::size_t>(params.get<std::int64_t>("axis"));
  const bool reverse = params.get<bool>("reverse");
  // x as (outer, n, inner): the running sum runs along the middle axis.
  std::int64_t outer = 1, inner = 1;
  for (std::size_t i = 0; i < a; ++i) outer *= x.shape()[i];
  for (std::size_t i = a + 1; i < x.ndim(); ++i) inner *= x.shape()[i];
  const std::int64_t n = x.shape()[a];
  ArrayBuilder b(out);
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      const T* p = x.data<T>();
      T* o = b.data<T>();
      for (std::int64_t u = 0; u < outer; ++u)
        for (std::int64_t i = 0; i < inner; ++i) {
          const std::int64_t base = u * n * inner + i;
          T s = T(0);
          for (std::int64_t j = 0; j < n; ++j) {
            const std::int64_t at = base + (reverse ? n - 1 - j : j) * inner;
            if constexpr (std::is_integral_v<T>) {
              using U = std::make_unsigned_t<T>;  // wraps around, as XLA's
              s = static_cast<T>(static_cast<U>(s) + static_cast<U>(p[at]));
            } else {
              s = s + p[at];
            }
            o[at] = s;
          }
        }
    }
  });
  return {std::move(b).finish()};
}

XPR_FUNC Cotangents Cumsum::transpose(std::span<const Cotangent> cts,
                                      std::span<const LinearArg> args, const Params& params) const {
  detail::check_one_operand(name(), args.size());
  Params flipped = params;
  flipped.set("reverse", !params.get<bool>("reverse"));
  return {detail::fit_cotangent(bind1(*this, {*cts[0]}, flipped), aval_of(args[0]))};
}

XPR_FUNC std::pair<Arrays, BatchDims> Cumsum::batch(std::span<const Array> args,
                                                    std::span<const BatchDim> dims, std::int64_t,
                                                    const Params& params) const {
  detail::check_one_operand(name(), args.size());
  if (!dims[0]) return {rt::bind(*this, args, params), {std::nullopt}};
  const std::int64_t b = *dims[0];
  // Malformed parameters are reported against the per-example shape, as without vmap.
  (void)abstract_eval_one(detail::unbatched_aval(args[0].aval(), b), params);
  Params moved = params;
  moved.set("axis", detail::skip_batch_axis(params.get<std::int64_t>("axis"), b));
  return {{bind1(*this, {args[0]}, moved)}, {b}};
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
