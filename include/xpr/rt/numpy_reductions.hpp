// SPDX-License-Identifier: MIT
// jax.numpy's reductions on arrays: `xpr::sum`, `max`, `min`, `mean`, `var`, `std` over all axes,
// one axis or several (negative axes count from the end), with `keepdims`. Each canonicalizes its
// axes, applies jax.numpy's dtype rules (bools and int32 sum in int64, means of integers are f64),
// then binds reduction primitives.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "xpr/core/config.hpp"
#include "xpr/core/dtype.hpp"
#include "xpr/core/error.hpp"
#include "xpr/core/shape.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/creation.hpp"
#include "xpr/rt/numpy_elementwise.hpp"
#include "xpr/rt/numpy_shape.hpp"
#include "xpr/rt/params.hpp"
#include "xpr/rt/prims/argminmax.hpp"
#include "xpr/rt/prims/convert.hpp"
#include "xpr/rt/prims/cumsum.hpp"
#include "xpr/rt/prims/reduce.hpp"
#include "xpr/rt/prims/shape.hpp"
#include "xpr/rt/trace.hpp"

namespace xpr::rt {

/// The `axis=` argument of a reduction: every axis (Python's `None`, the default), one axis
/// (`xpr::sum(m, 0)`), or several (`xpr::sum(m, {0, 2})`, `xpr::sum(m, Axes{...})`). `Axes{}`
/// names no axis, as NumPy's `axis=()` does.
class AxisArg {
 public:
  AxisArg() = default;
  AxisArg(std::nullopt_t) {}  // NOLINT(google-explicit-constructor): spells `axis=None`
  // NOLINTNEXTLINE(google-explicit-constructor)
  AxisArg(std::int64_t axis) : axes_(Axes{axis}), all_(false) {}
  AxisArg(Axes axes)
      : axes_(std::move(axes)), all_(false) {}  // NOLINT(google-explicit-constructor)
  AxisArg(std::initializer_list<std::int64_t> axes) : axes_(Axes(axes)), all_(false) {}

  /// The axes normalized against `rank`, sorted; every axis when none were named. Throws
  /// `index_error` for an axis out of range and `value_error` for a repeated one, naming `fn`.
  XPR_MEMBER Axes canonical(const char* fn, std::size_t rank) const;

 private:
  // Not std::optional<Axes>: GCC 12 warns that a default-constructed optional vector "may be
  // used uninitialized" where `xpr::sum(x) > 0.0` is inlined into a traced lambda (-O1 -Wall),
  // an error in users' -Werror builds.
  Axes axes_;
  bool all_ = true;  // no axis named: every axis
};

namespace detail {
/// jax.numpy's `promote_integers=True` for sums and products, with x64: bools and int32 are
/// reduced in int64, the widest integer, as NumPy does (so a sum of int32 counts does not wrap).
inline Array promote_integers(const Array& x) {
  return core::is_bool(x.dtype()) || x.dtype() == DType::int32
             ? convert_element_type(x, DType::int64)
             : x;
}

/// How many elements a reduction over `axes` (canonical) of `shape` combines into each result.
inline std::int64_t reduced_count(const Shape& shape, const Axes& axes) {
  std::int64_t count = 1;
  for (std::int64_t a : axes) count *= shape[static_cast<std::size_t>(a)];
  return count;
}

/// Binds a reduction over `axes` (canonical) and restores them as size-1 axes for `keepdims`.
inline Array bind_reduction(const Primitive& prim, const Array& x, const Axes& axes,
                            bool keepdims) {
  Array out = bind1(prim, {x}, {{"axes", axes}});
  return keepdims ? expand_dims(out, axes) : out;
}

}  // namespace detail

/// `jnp.sum(x, axis, keepdims)`: the sum over `axis` (every axis by default). Bools and int32
/// are summed in int64 (`promote_integers`, with x64); the sum of nothing is 0.
Array sum(const Array& x, const AxisArg& axis = {}, bool keepdims = false);

/// `jnp.max(x, axis, keepdims)`: the maximum over `axis` (every axis by default); NaN
/// propagates. Throws `shape_error` for an empty reduced axis (there is no identity).
inline Array max(const Array& x, const AxisArg& axis = {}, bool keepdims = false) {
  return detail::bind_reduction(reduce_max_p, x, axis.canonical("max", x.ndim()), keepdims);
}

/// `jnp.min(x, axis, keepdims)`: the minimum over `axis`, as `max`.
inline Array min(const Array& x, const AxisArg& axis = {}, bool keepdims = false) {
  return detail::bind_reduction(reduce_min_p, x, axis.canonical("min", x.ndim()), keepdims);
}

/// `jnp.mean(x, axis, keepdims)`: sum / count. Integer and bool arrays are averaged in f64; the
/// mean of nothing is NaN (0 / 0).
Array mean(const Array& x, const AxisArg& axis = {}, bool keepdims = false);

/// `jnp.var(x, axis, ddof, keepdims)`: the mean squared deviation from the mean over `axis`,
/// the sum of squares divided by N - `ddof` (N the number of elements reduced). Integer and bool
/// arrays are taken in f64. NaN where N - `ddof` <= 0, as JAX gives it; its gradient there is zero
/// (the NaN does not depend on `x`; JAX's reverse mode divides a zero cotangent by N - ddof, NaN
/// where that is 0).
Array var(const Array& x, const AxisArg& axis = {}, std::int64_t ddof = 0, bool keepdims = false);
/// `keepdims` comes after `ddof`, as in jnp.var's positional order: `var(x, axis, true)` would
/// silently mean ddof = 1, so it does not compile. Write `var(x, axis, 0, true)`.
template <std::same_as<bool> B>
Array var(const Array& x, const AxisArg& axis, B keepdims) = delete;

/// `jnp.std(x, axis, ddof, keepdims)`: `sqrt(var(x, axis, ddof, keepdims))`. Its gradient where
/// the elements are all equal is NaN, as JAX's (the derivative of sqrt at 0 is infinite).
Array std(const Array& x, const AxisArg& axis = {}, std::int64_t ddof = 0, bool keepdims = false);
/// As for `var`: `std(x, axis, true)` does not compile. Write `std(x, axis, 0, true)`.
template <std::same_as<bool> B>
Array std(const Array& x, const AxisArg& axis, B keepdims) = delete;

/// `jnp.any(x, axis, keepdims)`: bool, whether some element over `axis` (every axis by default)
/// is nonzero (NaN is); false over no elements. The nonzero elements are counted with `sum`
/// (JAX binds `reduce_or`, which xpr does not have).
Array any(const Array& x, const AxisArg& axis = {}, bool keepdims = false);

/// `jnp.all(x, axis, keepdims)`, reached as `xpr::all(x, ...)` (`xpr::all` is also the index
/// `:`): bool, whether every element over `axis` is nonzero; true over no elements. Counts the
/// zeros with `sum` (JAX binds `reduce_and`).
Array numpy_all(const Array& x, const AxisArg& axis = {}, bool keepdims = false);

/// `jnp.argmax(x, axis, keepdims)`: the int32 index of the first largest element along `axis`
/// (of the flattened array by default; `argmax[axes=(k,) index_dtype=int32]`). NaN counts as the
/// largest. Throws `shape_error` for an empty axis.
Array argmax(const Array& x, std::optional<std::int64_t> axis = std::nullopt,
             bool keepdims = false);

/// `jnp.argmin(x, axis, keepdims)`: the index of the first smallest element, as `argmax`.
Array argmin(const Array& x, std::optional<std::int64_t> axis = std::nullopt,
             bool keepdims = false);

/// `jnp.cumsum(x, axis)`: the running sum along `axis` (negative counts from the end); with no
/// axis, of the flattened array. Bools count in int64, the default integer (jnp.cumsum; int32
/// stays int32, unlike `xpr::sum`). `reverse` sums from the last element
/// (`lax.cumsum(x, axis, reverse=True)`).
Array cumsum(const Array& x, std::optional<std::int64_t> axis = std::nullopt, bool reverse = false);

namespace detail {
/// The cumulative primitive `p` bound as jax.numpy binds it: axis=None flattens; bools count in
/// int64 for sums and products.
Array bind_cumulative(const CumulativeReduction& p, const Array& x,
                      std::optional<std::int64_t> axis, bool reverse);
}  // namespace detail

}  // namespace xpr::rt

namespace xpr {
using rt::any;
using rt::argmax;
using rt::argmin;
using rt::AxisArg;
using rt::cumsum;
using rt::max;
using rt::mean;
using rt::min;
using rt::std;
using rt::sum;
using rt::var;
}  // namespace xpr

#if XPR_DEFINITIONS

namespace xpr::rt {

XPR_FUNC Axes AxisArg::canonical(const char* fn, std::size_t rank) const {
  Axes out;
  if (all_) {
    for (std::size_t i = 0; i < rank; ++i) out.push_back(static_cast<std::int64_t>(i));
    return out;
  }
  for (std::int64_t a : axes_) {
    try {
      out.push_back(static_cast<std::int64_t>(core::canonicalize_axis(a, rank)));
    } catch (const core::index_error& e) {
      throw core::index_error(std::string(fn) + ": " + e.what());
    }
  }
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end())
    throw core::value_error(std::string(fn) + ": expected distinct axes, found axis " +
                            std::to_string(*std::adjacent_find(out.begin(), out.end())) +
                            " named more than once");
  return out;
}

XPR_FUNC Array sum(const Array& x, const AxisArg& axis, bool keepdims) {
  Axes axes = axis.canonical("sum", x.ndim());
  return detail::bind_reduction(reduce_sum_p, detail::promote_integers(x), axes, keepdims);
}

XPR_FUNC Array mean(const Array& x, const AxisArg& axis, bool keepdims) {
  Axes axes = axis.canonical("mean", x.ndim());
  const std::int64_t count = detail::reduced_count(x.shape(), axes);
  Array in = core::is_floating(x.dtype()) ? x : convert_element_type(x, DType::float64);
  // The count is a C++ number, weakly typed: an f32 mean stays f32.
  return detail::bind_reduction(reduce_sum_p, in, axes, keepdims) / static_cast<double>(count);
}

XPR_FUNC Array any(const Array& x, const AxisArg& axis, bool keepdims) {
  return sum(x != 0, axis, keepdims) > 0;
}

XPR_FUNC Array numpy_all(const Array& x, const AxisArg& axis, bool keepdims) {
  return sum(x == 0, axis, keepdims) == 0;
}

XPR_FUNC Array AllIndex::operator()(const Array& x) const { return numpy_all(x); }

XPR_FUNC Array AllIndex::operator()(const Array& x, const AxisArg& axis, bool keepdims) const {
  return numpy_all(x, axis, keepdims);
}

XPR_FUNC Array var(const Array& x, const AxisArg& axis, std::int64_t ddof, bool keepdims) {
  Axes axes = axis.canonical("var", x.ndim());
  const std::int64_t count = detail::reduced_count(x.shape(), axes);
  // jnp.var: the mean with kept axes, the squares of the deviations summed, then divided by the
  // count less ddof (weakly typed, so an f32 variance stays f32).
  Array in = core::is_floating(x.dtype()) ? x : convert_element_type(x, DType::float64);
  Array centered = in - mean(in, AxisArg(axes), true);
  Array result = detail::bind_reduction(reduce_sum_p, xpr::square(centered), axes, keepdims);
  if (count <= ddof) return full_like(result, std::numeric_limits<double>::quiet_NaN());
  return result / static_cast<double>(count - ddof);
}

XPR_FUNC Array std(const Array& x, const AxisArg& axis, std::int64_t ddof, bool keepdims) {
  return xpr::sqrt(var(x, axis, ddof, keepdims));
}

namespace detail {
/// The one axis a jax.numpy function reduces along: `axis` against `rank` (negative counts from
/// the end), 0 when there is none (the caller flattens); an index_error naming `fn` otherwise.
XPR_FUNC std::int64_t one_axis(const std::string& fn, std::optional<std::int64_t> axis,
                               std::size_t rank) {
  if (!axis) return 0;
  try {
    return static_cast<std::int64_t>(core::canonicalize_axis(*axis, rank));
  } catch (const core::index_error& e) {
    throw core::index_error(fn + ": " + e.what());
  }
}

/// jax.numpy's argmax and argmin: `axis=None` reduces the flattened array (and `keepdims` then
/// keeps every axis as size 1).
XPR_FUNC Array arg_reduce(const ArgReduce& prim, const Array& x, std::optional<std::int64_t> axis,
                          bool keepdims) {
  const std::int64_t a = one_axis(prim.name(), axis, x.ndim());
  const Array in = axis ? x : ravel(x);
  Array out = bind1(prim, {in}, {{"axes", Axes{a}}, {"index_dtype", DType::int32}});
  if (!keepdims) return out;
  if (axis) return expand_dims(out, a);
  return reshape(out, Shape(std::vector<std::int64_t>(x.ndim(), 1)));
}
}  // namespace detail

XPR_FUNC Array argmax(const Array& x, std::optional<std::int64_t> axis, bool keepdims) {
  return detail::arg_reduce(argmax_p, x, axis, keepdims);
}

XPR_FUNC Array argmin(const Array& x, std::optional<std::int64_t> axis, bool keepdims) {
  return detail::arg_reduce(argmin_p, x, axis, keepdims);
}

namespace detail {
XPR_FUNC Array bind_cumulative(const CumulativeReduction& p, const Array& x,
                               std::optional<std::int64_t> axis, bool reverse) {
  const std::int64_t a = one_axis(p.name(), axis, x.ndim());
  Array in = axis ? x : ravel(x);
  const bool counts = p.kind() == Cumulative::sum || p.kind() == Cumulative::prod;
  // jax.numpy counts bools in the default integer, int64 with x64 (int32 stays int32).
  if (counts && core::is_bool(in.dtype())) in = convert_element_type(in, DType::int64);
  return bind1(p, {in}, {{"axis", a}, {"reverse", reverse}});
}
}  // namespace detail

XPR_FUNC Array cumsum(const Array& x, std::optional<std::int64_t> axis, bool reverse) {
  return detail::bind_cumulative(cumsum_p, x, axis, reverse);
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
