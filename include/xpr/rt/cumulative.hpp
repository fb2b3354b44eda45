// SPDX-License-Identifier: MIT
// cumprod, cummax, cummin and cumlogsumexp (`lax.cumprod`, `lax.cummax`, `lax.cummin`,
// `lax.cumlogsumexp`) and `lax.associative_scan`. Their evaluation, types and batching are cumsum's
// (rt/prims/cumsum.hpp, `CumulativeReduction`); their derivative is JAX's `_cumulative_jvp_rule`:
// the jvp of the same reduction written as a parallel prefix scan (`associative_scan` of `mul`,
// `max`, `min` or `logaddexp` (rt/nn.hpp, included by the definitions only), made of strided
// slices, pads and concatenations), whose linear part reverse mode then transposes. reduce_prod and
// `jnp.prod` are here for the same reason: reduce_prod's jvp is JAX's, the jvp of a pairwise tree
// of multiplications. The rules run a transformation, so this file sits above
// rt/transformations.hpp (docs/design.md, "Layering").
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/core/error.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/creation.hpp"
#include "xpr/rt/numpy_elementwise.hpp"
#include "xpr/rt/numpy_linalg_slicing.hpp"
#include "xpr/rt/numpy_reductions.hpp"
#include "xpr/rt/params.hpp"
#include "xpr/rt/prims/cumsum.hpp"
#include "xpr/rt/prims/rev.hpp"
#include "xpr/rt/transformations.hpp"
#if XPR_DEFINITIONS
#include "xpr/rt/nn.hpp"  // logaddexp, cumlogsumexp's combining function (definitions only)
#endif

namespace xpr::rt {

/// `lax.associative_scan(fn, x, reverse, axis)` for one array: the running combination
/// `fn(...fn(fn(x0, x1), x2)..., xk)` along `axis` (negative counts from the end), computed as
/// JAX computes it: pairs combined, the half-length scan recursed on, the even positions filled
/// in, interleaved; about 2 log2(n) calls of `fn` on slices, so `fn` must be associative and act
/// elementwise on arrays (`xpr::maximum`, `std::multiplies<>`, a lambda). `reverse` scans from
/// the last element.
template <class F>
Array associative_scan(F&& fn, const Array& x, bool reverse = false, std::int64_t axis = 0);

/// cumprod, cummax, cummin, cumlogsumexp [axis reverse]: the running product, maximum, minimum,
/// log of the sum of exponentials.
class CumulativeScan final : public CumulativeReduction {
 public:
  using CumulativeReduction::CumulativeReduction;

  /// JAX's `_cumulative_jvp_rule`: the jvp of `associative_scan` of the combining primitive.
  XPR_MEMBER std::pair<Arrays, Arrays> jvp(std::span<const Array> primals,
                                           std::span<const Array> tangents,
                                           const Params& params) const override;
};

inline constinit const CumulativeScan cumprod_p{"cumprod", Cumulative::prod};
inline constinit const CumulativeScan cummax_p{"cummax", Cumulative::max};
inline constinit const CumulativeScan cummin_p{"cummin", Cumulative::min};
inline constinit const CumulativeScan cumlogsumexp_p{"cumlogsumexp", Cumulative::logsumexp};

/// reduce_prod [axes](x): the product over `axes` (1 over an empty axis). Every rule but the jvp
/// is the other reductions' (rt/prims/reduce.hpp); the jvp lives here, at the layer of the
/// functions it calls: JAX's `_reduce_prod_jvp_rule`, the jvp of a pairwise tree of
/// multiplications over the reduced elements, exact where elements are zero (no division).
class ReduceProd final : public ReduceBase<detail::ProdMonoid> {
 public:
  XPR_MEMBER std::pair<Arrays, Arrays> jvp(std::span<const Array> primals,
                                           std::span<const Array> tangents,
                                           const Params& params) const override;
};

inline constinit const ReduceProd reduce_prod_p{};

/// `jnp.prod(x, axis, keepdims)`: the product over `axis` (every axis by default). Bools and
/// int32 multiply in int64, as in `sum`; the product of nothing is 1.
Array prod(const Array& x, const AxisArg& axis = {}, bool keepdims = false);

/// `jnp.cumprod(x, axis)`: the running product along `axis` (of the flattened array by default;
/// bools count in int64, the default integer), from the last element with `reverse`
/// (`lax.cumprod`).
Array cumprod(const Array& x, std::optional<std::int64_t> axis = std::nullopt,
              bool reverse = false);

/// `lax.cummax(x, axis, reverse)` (of the flattened array when no axis is given): the running
/// maximum; a NaN carries forward.
Array cummax(const Array& x, std::optional<std::int64_t> axis = std::nullopt, bool reverse = false);

/// `lax.cummin(x, axis, reverse)`: the running minimum, as `cummax`.
Array cummin(const Array& x, std::optional<std::int64_t> axis = std::nullopt, bool reverse = false);

/// `lax.cumlogsumexp(x, axis, reverse)`: the running `log(sum(exp(x)))`, each step a `logaddexp`
/// (so large values do not overflow); floating dtypes only.
Array cumlogsumexp(const Array& x, std::optional<std::int64_t> axis = std::nullopt,
                   bool reverse = false);

namespace detail {
/// JAX's `_interleave`: a0 b0 a1 b1 ... along `axis`, where `a` has as many elements as `b` or
/// one more.
Array interleave(const Array& a, const Array& b, std::size_t axis);

}  // namespace detail

template <class F>
Array associative_scan(F&& fn, const Array& x, bool reverse, std::int64_t axis) {
  std::size_t a = 0;
  try {
    a = core::canonicalize_axis(axis, x.ndim());
  } catch (const core::index_error& e) {
    throw core::index_error(std::string("associative_scan: ") + e.what());
  }
  auto scan = [&](auto& self, const Array& e) -> Array {
    const std::int64_t n = e.shape()[a];
    if (n < 2) return e;
    // Adjacent pairs combined, then the scan of those: the odd positions.
    const Array odd = self(self, Array(fn(detail::slice_in_dim(e, 0, n - 1, 2, a),
                                          detail::slice_in_dim(e, 1, n, 2, a))));
    const Array rest = detail::slice_in_dim(e, 2, n, 2, a);
    const std::int64_t m = odd.shape()[a];
    const Array even = n % 2 == 0 ? Array(fn(detail::slice_in_dim(odd, 0, m - 1, 1, a), rest))
                                  : Array(fn(odd, rest));
    // The first element of a scan is the first element of the input.
    return detail::interleave(
        concatenate({detail::slice_in_dim(e, 0, 1, 1, a), even}, static_cast<std::int64_t>(a)), odd,
        a);
  };
  const Axes along{static_cast<std::int64_t>(a)};
  if (!reverse) return scan(scan, x);
  return rev(scan(scan, rev(x, along)), along);
}

}  // namespace xpr::rt

namespace xpr {
using rt::associative_scan;
using rt::cumlogsumexp;
using rt::cummax;
using rt::cummin;
using rt::cumprod;
using rt::prod;
}  // namespace xpr

#if XPR_DEFINITIONS

namespace xpr::rt {

namespace detail {

XPR_FUNC Array interleave(const Array& a, const Array& b, std::size_t axis) {
  const bool same = a.shape()[axis] == b.shape()[axis];
  std::vector<std::array<std::int64_t, 3>> pa(a.ndim(), {0, 0, 0}), pb(b.ndim(), {0, 0, 0});
  pa[axis] = {0, same ? 1 : 0, 1};
  pb[axis] = {1, same ? 0 : 1, 1};
  // Padded with zeros of the operands' type, as JAX's `lax._const(a, 0)`: literals, not a
  // converted integer.
  return pad(a, pa, zeros(Shape{}, a.dtype())) + pad(b, pb, zeros(Shape{}, b.dtype()));
}

}  // namespace detail

XPR_FUNC std::pair<Arrays, Arrays> CumulativeScan::jvp(std::span<const Array> primals,
                                                       std::span<const Array> tangents,
                                                       const Params& params) const {
  detail::check_one_operand(name(), primals.size());
  (void)abstract_eval_one(detail::aval_of(primals[0]),
                          params);  // malformed parameters fail here first
  const std::int64_t axis = params.get<std::int64_t>("axis");
  const bool reverse = params.get<bool>("reverse");
  const Cumulative k = kind();
  FlatFunction scan = [k, axis, reverse](std::span<const Array> xs) -> Arrays {
    auto combine = [k](const Array& u, const Array& v) {
      switch (k) {
        case Cumulative::prod:
          return u * v;
        case Cumulative::max:
          return xpr::maximum(u, v);
        case Cumulative::min:
          return xpr::minimum(u, v);
        default:
          return logaddexp(u, v);
      }
    };
    return {associative_scan(combine, xs[0], reverse, axis)};
  };
  // The tangent of the scan; the primal from this primitive's own sequential evaluation (JAX
  // returns the scan's, which rounds differently), so `jvp(f)` reports the values `f` does.
  auto [scanned, tangents_out] = jvp_flat(scan, primals, tangents);
  (void)scanned;
  return {rt::bind(*this, primals, params), std::move(tangents_out)};
}

XPR_FUNC std::pair<Arrays, Arrays> ReduceProd::jvp(std::span<const Array> primals,
                                                   std::span<const Array> tangents,
                                                   const Params& params) const {
  detail::check_one_operand(name(), primals.size());
  Array ans = bind1(*this, {primals[0]}, params);  // malformed axes fail here first
  const Array& x = primals[0];
  const std::vector<bool> reduced =
      detail::reduced_axes(name(), params.get<Axes>("axes"), x.ndim());
  // The reduced axes moved to the front and flattened into one of n elements (JAX's
  // `_reduce_jvp`), the kept ones after it in order.
  Axes perm;
  std::vector<std::int64_t> flat{1};
  for (std::size_t i = 0; i < x.ndim(); ++i)
    if (reduced[i]) {
      perm.push_back(static_cast<std::int64_t>(i));
      flat[0] *= x.shape()[i];
    }
  for (std::size_t i = 0; i < x.ndim(); ++i)
    if (!reduced[i]) {
      perm.push_back(static_cast<std::int64_t>(i));
      flat.push_back(x.shape()[i]);
    }
  // Integers have no tangent; nor has a product of nothing (the constant 1).
  if (!core::is_floating(x.dtype()) || flat[0] == 0)
    return {{ans}, {zeros_like_aval(detail::aval_of(ans))}};
  // JAX's `_reduce_tree`: halves multiplied until one row is left, an odd half padded with 1.
  FlatFunction tree = [&](std::span<const Array> xs) -> Arrays {
    Array v = reshape(rt::transpose(xs[0], perm), std::span<const std::int64_t>(flat));
    while (v.shape()[0] > 1) {
      const std::int64_t m = v.shape()[0], half = (m + 1) / 2;
      Array a = detail::slice_in_dim(v, 0, half, 1, 0);
      Array b = detail::slice_in_dim(v, half, m, 1, 0);
      if (m % 2 == 1) {
        std::vector<std::array<std::int64_t, 3>> one_more(v.ndim(), {0, 0, 0});
        one_more[0] = {0, 1, 0};
        b = pad(b, one_more, ones(Shape{}, b.dtype()));
      }
      v = a * b;
    }
    return {squeeze(v, 0)};
  };
  auto [tree_product, tangents_out] = jvp_flat(tree, primals, tangents);
  (void)tree_product;  // the primal is this primitive's own, as for the cumulative scans
  return {{std::move(ans)}, std::move(tangents_out)};
}

XPR_FUNC Array prod(const Array& x, const AxisArg& axis, bool keepdims) {
  Axes axes = axis.canonical("prod", x.ndim());
  return detail::bind_reduction(reduce_prod_p, detail::promote_integers(x), axes, keepdims);
}

XPR_FUNC Array cumprod(const Array& x, std::optional<std::int64_t> axis, bool reverse) {
  return detail::bind_cumulative(cumprod_p, x, axis, reverse);
}

XPR_FUNC Array cummax(const Array& x, std::optional<std::int64_t> axis, bool reverse) {
  return detail::bind_cumulative(cummax_p, x, axis, reverse);
}

XPR_FUNC Array cummin(const Array& x, std::optional<std::int64_t> axis, bool reverse) {
  return detail::bind_cumulative(cummin_p, x, axis, reverse);
}

XPR_FUNC Array cumlogsumexp(const Array& x, std::optional<std::int64_t> axis, bool reverse) {
  return detail::bind_cumulative(cumlogsumexp_p, x, axis, reverse);
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
