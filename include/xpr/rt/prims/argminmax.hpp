// SPDX-License-Identifier: MIT
// argmax and argmin [axes=(k,) index_dtype=int32] (`lax.argmax`, `lax.argmin`): the index along
// axis k of the first largest (smallest) element. As XLA's comparator (`x > y or x != x`), NaN
// counts as larger and smaller than everything, so the first NaN wins; ties go to the lower
// index. The result is an integer: its tangent is a symbolic zero (JAX's `defjvp_zero`), and
// under `vmap` the batch axis goes first and the reduced axis moves right by one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/core/dtype.hpp"
#include "xpr/core/error.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/aval.hpp"
#include "xpr/rt/batching.hpp"
#include "xpr/rt/params.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/prims/detail/zero_jvp.hpp"
#include "xpr/rt/prims/shape.hpp"
#include "xpr/rt/trace.hpp"

namespace xpr::rt {

/// argmax / argmin: one class, the direction a constructor argument (one kernel, compiled once).
class ArgReduce final : public detail::ZeroJvpPrimitive {
 public:
  constexpr ArgReduce(std::string_view name, bool is_max)
      : detail::ZeroJvpPrimitive(name), is_max_(is_max) {}

  XPR_MEMBER Arrays impl(std::span<const Array> args, const Params& params) const override;
  XPR_MEMBER Avals abstract_eval(std::span<const ShapedArray> args,
                                 const Params& params) const override;
  XPR_MEMBER std::pair<Arrays, BatchDims> batch(std::span<const Array> args,
                                                std::span<const BatchDim> dims, std::int64_t n,
                                                const Params& params) const override;

 private:
  XPR_MEMBER ShapedArray abstract_eval_one(const ShapedArray& x, const Params& params) const;
  XPR_MEMBER void check_arity(std::size_t n) const;
  bool is_max_;
};

inline constinit const ArgReduce argmax_p{"argmax", true};
inline constinit const ArgReduce argmin_p{"argmin", false};

}  // namespace xpr::rt

#if XPR_DEFINITIONS

namespace xpr::rt {

XPR_FUNC ShapedArray ArgReduce::abstract_eval_one(const ShapedArray& x,
                                                  const Params& params) const {
  const Axes& axes = params.get<Axes>("axes");
  const DType index = params.get<DType>("index_dtype");
  if (axes.size() != 1)
    throw core::value_error(name() + ": expected one axis, found axes of length " +
                            std::to_string(axes.size()));
  const std::int64_t a = axes[0], r = static_cast<std::int64_t>(x.ndim());
  if (a < 0 || a >= r)
    throw core::index_error(name() + ": axis " + std::to_string(a) +
                            " is out of bounds for array of rank " + std::to_string(r) +
                            " (expected 0 <= axis < " + std::to_string(r) + ")");
  if (x.shape[static_cast<std::size_t>(a)] == 0)
    throw core::shape_error(name() + ": expected a nonempty axis " + std::to_string(a) +
                            ", found size 0 in shape " + x.shape.str() +
                            " (an empty sequence has no " + name() + ")");
  if (!core::is_integer(index))
    throw core::dtype_error(name() + ": expected an integer index_dtype (int32 or int64), found " +
                            std::string(core::name(index)));
  std::vector<std::int64_t> dims;
  for (std::int64_t i = 0; i < r; ++i)
    if (i != a) dims.push_back(x.shape[static_cast<std::size_t>(i)]);
  return {Shape(std::move(dims)), index, false};
}

XPR_FUNC void ArgReduce::check_arity(std::size_t n) const {
  if (n != 1) throw core::type_error(name() + " expected 1 operand, found " + std::to_string(n));
}

XPR_FUNC Avals ArgReduce::abstract_eval(std::span<const ShapedArray> args,
                                        const Params& params) const {
  check_arity(args.size());
  return {abstract_eval_one(args[0], params)};
}

XPR_FUNC Arrays ArgReduce::impl(std::span<const Array> args, const Params& params) const {
  check_arity(args.size());  // before args[0] is read
  const ShapedArray out = abstract_eval_one(detail::aval_of(args[0]), params);
  const Array& x = args[0];
  const auto a = static_cast<std::size_t>(params.get<Axes>("axes")[0]);
  // x as (outer, n, inner): the axis reduced is the middle one.
  std::int64_t outer = 1, inner = 1;
  for (std::size_t i = 0; i < a; ++i) outer *= x.shape()[i];
  for (std::size_t i = a + 1; i < x.ndim(); ++i) inner *= x.shape()[i];
  const std::int64_t n = x.shape()[a];
  std::vector<std::int64_t> best(static_cast<std::size_t>(outer * inner), 0);
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = x.data<T>();
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t i = 0; i < inner; ++i) {
        const T* row = p + o * n * inner + i;
        std::int64_t k = 0;
        T v = row[0];
        for (std::int64_t j = 1; j < n; ++j) {
          const T w = row[j * inner];
          // XLA's comparator: w replaces v when it is strictly better, or a NaN after a number.
          const bool nan_w = w != w, nan_v = v != v;  // never true for integers and bools
          const bool better = is_max_ ? v < w : w < v;
          if (!nan_v && (better || nan_w)) {
            v = w;
            k = j;
          }
        }
        best[static_cast<std::size_t>(o * inner + i)] = k;
      }
  });
  ArrayBuilder b(out);
  dispatch_dtype(out.dtype, [&](auto tag) {
    using I = decltype(tag);
    if constexpr (std::is_integral_v<I> && !std::is_same_v<I, bool>) {
      I* d = b.data<I>();
      for (std::size_t i = 0; i < best.size(); ++i) d[i] = static_cast<I>(best[i]);
    }
  });
  return {std::move(b).finish()};
}

XPR_FUNC std::pair<Arrays, BatchDims> ArgReduce::batch(std::span<const Array> args,
                                                       std::span<const BatchDim> dims, std::int64_t,
                                                       const Params& params) const {
  check_arity(args.size());
  if (!dims[0]) return {rt::bind(*this, args, params), {std::nullopt}};
  const std::int64_t b = *dims[0];
  // Malformed parameters are reported against the per-example shape, as without vmap.
  (void)abstract_eval_one(detail::unbatched_aval(detail::aval_of(args[0]), b), params);
  Params moved = params;
  moved.set("axes", Axes{params.get<Axes>("axes")[0] + 1});
  return {{bind1(*this, {moveaxis(args[0], b, 0)}, moved)}, {0}};
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
