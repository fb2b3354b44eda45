// SPDX-License-Identifier: MIT
// The cumulative reductions' shared rules, and the cumsum primitive (`lax.cumsum`):
// cumsum[axis=k reverse=False](x) is the running sum of `x` along axis k, from its first element,
// or from its last with reverse=True. As in JAX it is linear; its transpose is the cumulative sum
// the other way (`_cumsum_transpose_rule`). Every cumulative reduction (cumsum here; cumprod,
// cummax, cummin and cumlogsumexp in rt/cumulative.hpp, whose derivatives need the
// transformations) keeps the operand's type, and under `vmap` its axis moves past the batch axis
// (which stays where it is).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
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

/// Which running reduction a cumulative primitive computes.
enum class Cumulative { sum, prod, max, min, logsumexp };

/// The rules every cumulative reduction shares (JAX's `_cumred_*` rules): cumulative[axis
/// reverse](x) has the type of `x` (a number type, not bool), and its element j combines, in
/// order, the elements of `x` at positions i with i_k <= j_k (i_k >= j_k when `reverse`) and
/// i_d = j_d on every other axis d. Sums start from 0 (as XLA's reduce_window from its identity,
/// so a leading -0.0 sums to +0.0); max and min propagate NaN; integers wrap around; logsumexp
/// (floats only) combines by `logaddexp`.
class CumulativeReduction : public Primitive {
 public:
  constexpr CumulativeReduction(std::string_view name, Cumulative kind)
      : Primitive(name), kind_(kind) {}

  Cumulative kind() const { return kind_; }

  XPR_MEMBER Arrays impl(std::span<const Array> args, const Params& params) const override;

  Avals abstract_eval(std::span<const ShapedArray> args, const Params& params) const override {
    detail::check_one_operand(name(), args.size());
    return {abstract_eval_one(args[0], params)};
  }

  XPR_MEMBER std::pair<Arrays, BatchDims> batch(std::span<const Array> args,
                                                std::span<const BatchDim> dims, std::int64_t,
                                                const Params& params) const override;

 protected:
  ~CumulativeReduction() = default;  // constinit objects: not destroyed through a base pointer

  XPR_MEMBER ShapedArray abstract_eval_one(const ShapedArray& x, const Params& params) const;

 private:
  Cumulative kind_;
};

/// cumsum[axis reverse](x): the running sum.
class Cumsum final : public CumulativeReduction {
 public:
  constexpr Cumsum() : CumulativeReduction("cumsum", Cumulative::sum) {}

  /// Linear: the tangent's running sum.
  std::pair<Arrays, Arrays> jvp(std::span<const Array> primals, std::span<const Array> tangents,
                                const Params& params) const override {
    detail::check_one_operand(name(), primals.size());
    return detail::linear_jvp(*this, primals, tangents, params);
  }

  /// The adjoint of a running sum from the front is the running sum from the back.
  XPR_MEMBER Cotangents transpose(std::span<const Cotangent> cts, std::span<const LinearArg> args,
                                  const Params& params) const override;
};

inline constinit const Cumsum cumsum_p{};

}  // namespace xpr::rt

#if XPR_DEFINITIONS

namespace xpr::rt {

XPR_FUNC ShapedArray CumulativeReduction::abstract_eval_one(const ShapedArray& x,
                                                            const Params& params) const {
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
  if (kind_ == Cumulative::logsumexp && !core::is_floating(x.dtype))
    throw core::dtype_error(name() + ": expected a floating dtype, found " +
                            std::string(core::name(x.dtype)));
  return x;
}

XPR_FUNC Arrays CumulativeReduction::impl(std::span<const Array> args, const Params& params) const {
  detail::check_one_operand(name(), args.size());  // before args[0] is read
  const ShapedArray out = abstract_eval_one(detail::aval_of(args[0]), params);
  const Array& x = args[0];
  const auto a = static_cast<std::size_t>(params.get<std::int64_t>("axis"));
  const bool reverse = params.get<bool>("reverse");
  // x as (outer, n, inner): the running reduction runs along the middle axis.
  std::int64_t outer = 1, inner = 1;
  for (std::size_t i = 0; i < a; ++i) outer *= x.shape()[i];
  for (std::size_t i = a + 1; i < x.ndim(); ++i) inner *= x.shape()[i];
  const std::int64_t n = x.shape()[a];
  ArrayBuilder b(out);
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      // jit emits the same expressions (codegen/emit.hpp), so compiled results equal these.
      auto combine = [this](T acc, T v) -> T {
        using U = typename std::conditional_t<std::is_integral_v<T>, std::make_unsigned<T>,
                                              std::type_identity<T>>::type;
        switch (kind_) {
          case Cumulative::sum:
            return static_cast<T>(static_cast<U>(acc) + static_cast<U>(v));
          case Cumulative::prod:
            return static_cast<T>(static_cast<U>(acc) * static_cast<U>(v));
          case Cumulative::max:
            return acc != acc ? acc : v != v ? v : v > acc ? v : acc;
          case Cumulative::min:
            return acc != acc ? acc : v != v ? v : v < acc ? v : acc;
          case Cumulative::logsumexp:
            if constexpr (std::is_floating_point_v<T>) {
              // logaddexp (rt/nn.hpp): a NaN difference is a NaN operand or two infinities of
              // one sign, whose sum is the answer.
              const T d = acc - v;
              return d != d ? acc + v : (acc > v ? acc : v) + std::log1p(std::exp(-std::abs(d)));
            }
            break;
        }
        return acc;
      };
      const T* p = x.data<T>();
      T* o = b.data<T>();
      for (std::int64_t u = 0; u < outer; ++u)
        for (std::int64_t i = 0; i < inner; ++i) {
          const std::int64_t base = u * n * inner + i;
          T s = T(0);
          for (std::int64_t j = 0; j < n; ++j) {
            const std::int64_t at = base + (reverse ? n - 1 - j : j) * inner;
            s = j == 0 && kind_ != Cumulative::sum ? p[at] : combine(s, p[at]);
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

XPR_FUNC std::pair<Arrays, BatchDims> CumulativeReduction::batch(std::span<const Array> args,
                                                                 std::span<const BatchDim> dims,
                                                                 std::int64_t,
                                                                 const Params& params) const {
  detail::check_one_operand(name(), args.size());
  if (!dims[0]) return {rt::bind(*this, args, params), {std::nullopt}};
  const std::int64_t b = *dims[0];
  // Malformed parameters are reported against the per-example shape, as without vmap.
  (void)abstract_eval_one(detail::unbatched_aval(detail::aval_of(args[0]), b), params);
  Params moved = params;
  moved.set("axis", detail::skip_batch_axis(params.get<std::int64_t>("axis"), b));
  return {{bind1(*this, {args[0]}, moved)}, {b}};
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
