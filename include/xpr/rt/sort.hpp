// SPDX-License-Identifier: MIT
// The sort primitive (`lax.sort`) and jax.numpy's `sort`, `argsort` and `lax.sort_key_val`. Its
// jvp is JAX's `_sort_jvp`: the operands sorted together with an iota along the sorted dimension,
// whose sorted order is the permutation, and each tangent gathered by it (`take_along_axis`).
// That gather is a jax.numpy function, so the primitive lives above rt/indexing.hpp rather than
// in rt/prims/ (docs/design.md, layering point 4).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/core/error.hpp"
#include "xpr/core/shape.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/aval.hpp"
#include "xpr/rt/batching.hpp"
#include "xpr/rt/indexing.hpp"
#include "xpr/rt/numpy_elementwise.hpp"
#include "xpr/rt/numpy_linalg_slicing.hpp"
#include "xpr/rt/numpy_reductions.hpp"
#include "xpr/rt/numpy_shape.hpp"
#include "xpr/rt/params.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/prims/convert.hpp"
#include "xpr/rt/prims/iota.hpp"
#include "xpr/rt/prims/rev.hpp"
#include "xpr/rt/prims/shape.hpp"
#include "xpr/rt/trace.hpp"

namespace xpr::rt {

// ---- sort[dimension, is_stable, num_keys] -------------------------------------------------------

/// sort[dimension, is_stable, num_keys](x₀, …, xₙ): the operands, all of one shape (any dtypes),
/// permuted together along `dimension` so that the first `num_keys` of them are in lexicographic
/// order. Floats order as JAX's comparator orders them: -0 equals 0, NaN is above +inf and equal
/// to every NaN. The sort is always stable (`is_stable` is kept for the printer and the parser).
class Sort final : public Primitive {
 public:
  constexpr Sort() : Primitive("sort", true) {}

  /// Each row along `dimension`: a permutation sorted stably by the keys, least significant
  /// first, then every operand gathered through it.
  XPR_MEMBER Arrays impl(std::span<const Array> args, const Params& params) const override;

  /// The operands' types; `shape_error` for operands of different shapes or of rank 0,
  /// `value_error` for a dimension or a key count out of range.
  XPR_MEMBER Avals abstract_eval(std::span<const ShapedArray> args,
                                 const Params& params) const override;

  /// JAX's `_sort_jvp`: an iota along `dimension` is sorted with the operands; each nonzero
  /// tangent is taken along the dimension at the sorted iota (a gather, whose transpose is a
  /// scatter-add, so reverse mode needs no rule here).
  XPR_MEMBER std::pair<Arrays, Tangents> jvp_symbolic(std::span<const Array> primals,
                                                      std::span<const Tangent> tangents,
                                                      const Params& params) const override;

  /// JAX's `_sort_batch_rule`: the batched operands' axes moved to the first one's, unbatched
  /// operands broadcast there, and the dimension shifted past it.
  XPR_MEMBER std::pair<Arrays, BatchDims> batch(std::span<const Array> args,
                                                std::span<const BatchDim> dims, std::int64_t n,
                                                const Params& params) const override;
};

inline constinit const Sort sort_p{};

/// `jnp.sort(x, axis, descending)`: `x` sorted along `axis` (the last by default; `std::nullopt`
/// sorts the flattened array), smallest first, NaN last; `descending` reverses the result (so NaN
/// comes first, as in JAX). Stable. Its derivative carries each tangent with its element.
Array sort(const Array& x, std::optional<std::int64_t> axis = -1, bool descending = false);

/// `jnp.argsort(x, axis, descending)`: the int64 indices that sort `x` along `axis` (JAX's default
/// integer with x64), so that `take_along_axis(x, argsort(x, a), a)` is `sort(x, a)`. Stable, also
/// when `descending` (equal elements keep their order).
Array argsort(const Array& x, std::optional<std::int64_t> axis = -1, bool descending = false);

/// `lax.sort_key_val(keys, values, dimension)`: `keys` sorted along `dimension`, and `values` (of
/// the same shape) permuted with them. Stable.
std::pair<Array, Array> sort_key_val(const Array& keys, const Array& values,
                                     std::int64_t dimension = -1);

/// `jnp.lexsort(keys, axis)`: the int64 indices that sort by the last key first, ties broken by
/// the one before it, and so on (NumPy's order of keys); one `sort` with `num_keys` keys and an
/// iota. Keys of one shape (`shape_error` otherwise), `type_error` for none; rank-0 keys give 0,
/// as in JAX.
Array lexsort(const std::vector<Array>& keys, std::int64_t axis = -1);

/// `lax.top_k(x, k)`: the `k` largest elements along the last axis, largest first, and their
/// int32 indices, as JAX's (int64 for an axis longer than int32 counts; equal elements by
/// increasing index; NaN counts as the largest). Written as
/// `argsort` descending, then a slice and `take_along_axis` (JAX binds its own `top_k`
/// primitive; the values and derivatives are the same). `value_error` unless 0 <= k <= the
/// axis's length.
std::pair<Array, Array> top_k(const Array& x, std::int64_t k);

/// How `quantile` picks between the two sorted elements around position q (n - 1): jnp.quantile's
/// `method`.
enum class quantile_method { linear, lower, higher, midpoint, nearest };

/// `jnp.quantile(x, q, axis, method, keepdims)`: the q-th quantile along `axis` (of the flattened
/// array by default), q in [0, 1]: `x` sorted, then by `method` from the elements at
/// floor(q (n - 1)) and ceil(q (n - 1)) (`linear` interpolates; `nearest` takes the lower at a
/// tie, as JAX). NaN where the reduced elements hold a NaN; integers and bools in f64. Its
/// derivative flows to the elements it picks, through `sort`. `value_error` for q outside
/// [0, 1], `shape_error` for an empty axis.
Array quantile(const Array& x, double q, std::optional<std::int64_t> axis = std::nullopt,
               quantile_method method = quantile_method::linear, bool keepdims = false);

/// `jnp.percentile(x, p, ...)`: `quantile(x, p / 100, ...)`, p in [0, 100].
Array percentile(const Array& x, double p, std::optional<std::int64_t> axis = std::nullopt,
                 quantile_method method = quantile_method::linear, bool keepdims = false);

/// `jnp.median(x, axis, keepdims)`: `quantile(x, 0.5, axis, linear, keepdims)`, the mean of the
/// two middle elements for an even count.
Array median(const Array& x, std::optional<std::int64_t> axis = std::nullopt,
             bool keepdims = false);

}  // namespace xpr::rt

namespace xpr {
using rt::argsort;
using rt::lexsort;
using rt::median;
using rt::percentile;
using rt::quantile;
using rt::quantile_method;
using rt::sort;
using rt::sort_key_val;
using rt::top_k;
}  // namespace xpr

#if XPR_DEFINITIONS

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace xpr::rt {

namespace detail {

/// JAX's sort order on one key: NaN above everything and equal to NaN, -0 equal to 0.
template <class T>
bool sort_less(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
  }
  return a < b;
}

struct SortParams {
  std::size_t dimension;
  std::size_t num_keys;
};

inline SortParams sort_params(std::span<const ShapedArray> args, const Params& params) {
  if (args.empty()) throw core::type_error("sort: expected at least one operand, found none");
  const Shape& shape = args[0].shape;
  for (std::size_t i = 1; i < args.size(); ++i)
    if (args[i].shape != shape)
      throw core::shape_error("sort: expected operands of one shape, found " + shape.str() +
                              " and " + args[i].shape.str() + " (operand " + std::to_string(i) +
                              ")");
  if (shape.rank() == 0)
    throw core::shape_error("sort: expected operands of rank 1 or more, found rank 0");
  const auto dimension = params.get<std::int64_t>("dimension");
  const auto rank = static_cast<std::int64_t>(shape.rank());
  if (dimension < 0 || dimension >= rank)
    throw core::value_error("sort: expected a dimension in [0, " + std::to_string(rank) +
                            ") for operands of shape " + shape.str() + ", found " +
                            std::to_string(dimension));
  const auto num_keys = params.get<std::int64_t>("num_keys");
  if (num_keys < 1 || num_keys > static_cast<std::int64_t>(args.size()))
    throw core::value_error("sort: expected num_keys in [1, " + std::to_string(args.size()) +
                            "] for " + std::to_string(args.size()) + " operands, found " +
                            std::to_string(num_keys));
  (void)params.get<bool>("is_stable");  // present and a bool
  return {static_cast<std::size_t>(dimension), static_cast<std::size_t>(num_keys)};
}

}  // namespace detail

XPR_FUNC Avals Sort::abstract_eval(std::span<const ShapedArray> args, const Params& params) const {
  (void)detail::sort_params(args, params);
  return Avals(args.begin(), args.end());
}

XPR_FUNC Arrays Sort::impl(std::span<const Array> args, const Params& params) const {
  Avals avals;
  for (const Array& a : args) avals.push_back(detail::aval_of(a));
  const auto [d, num_keys] = detail::sort_params(avals, params);
  const Shape& shape = avals[0].shape;
  // Rows along d: `outer` blocks of `n` elements `inner` apart.
  const std::int64_t n = shape[d];
  std::int64_t outer = 1, inner = 1;
  for (std::size_t i = 0; i < d; ++i) outer *= shape[i];
  for (std::size_t i = d + 1; i < shape.rank(); ++i) inner *= shape[i];
  const std::int64_t rows = outer * inner;
  // perm[r * n + k]: the position, in row r, of the row's k-th smallest element.
  std::vector<std::int64_t> perm(static_cast<std::size_t>(rows * n));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t k = 0; k < n; ++k) perm[static_cast<std::size_t>(r * n + k)] = k;
  auto row_base = [&](std::int64_t r) { return (r / inner) * n * inner + r % inner; };
  // Lexicographic by stable passes from the least significant key to the most significant one.
  for (std::size_t key = num_keys; key-- > 0;)
    dispatch_dtype(args[key].dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* x = args[key].data<T>();
      for (std::int64_t r = 0; r < rows; ++r) {
        const T* row = x + row_base(r);
        std::int64_t* p = perm.data() + r * n;
        std::stable_sort(p, p + n, [row, inner](std::int64_t a, std::int64_t b) {
          return detail::sort_less(row[a * inner], row[b * inner]);
        });
      }
    });
  Arrays out;
  for (std::size_t j = 0; j < args.size(); ++j) {
    ArrayBuilder b(avals[j]);
    dispatch_dtype(avals[j].dtype, [&](auto tag) {
      using T = decltype(tag);
      const T* x = args[j].data<T>();
      T* y = b.data<T>();
      for (std::int64_t r = 0; r < rows; ++r) {
        const std::int64_t base = row_base(r);
        const std::int64_t* p = perm.data() + r * n;
        for (std::int64_t k = 0; k < n; ++k) y[base + k * inner] = x[base + p[k] * inner];
      }
    });
    out.push_back(std::move(b).finish());
  }
  return out;
}

XPR_FUNC std::pair<Arrays, Tangents> Sort::jvp_symbolic(std::span<const Array> primals,
                                                        std::span<const Tangent> tangents,
                                                        const Params& params) const {
  const Shape& shape = primals[0].shape();
  const auto dimension = params.get<std::int64_t>("dimension");
  const auto d = static_cast<std::size_t>(dimension);
  const DType index_dtype =
      d < shape.rank() && shape[d] >= (std::int64_t{1} << 31) ? DType::int64 : DType::int32;
  Arrays operands(primals.begin(), primals.end());
  operands.push_back(broadcasted_iota(index_dtype, shape, dimension));
  Arrays sorted = rt::bind(*this, operands, params);
  const Array permutation = sorted.back();
  sorted.pop_back();
  Tangents out;
  for (std::size_t i = 0; i < tangents.size(); ++i) {
    if (!tangents[i]) {
      out.emplace_back(std::nullopt);
      continue;
    }
    out.emplace_back(take_along_axis(*tangents[i], permutation, dimension));
  }
  return {std::move(sorted), std::move(out)};
}

XPR_FUNC std::pair<Arrays, BatchDims> Sort::batch(std::span<const Array> args,
                                                  std::span<const BatchDim> dims, std::int64_t n,
                                                  const Params& params) const {
  std::optional<std::int64_t> at;
  for (const BatchDim& bd : dims)
    if (bd) {
      at = *bd;
      break;
    }
  if (!at) return {rt::bind(*this, args, params), BatchDims(args.size())};
  Arrays moved;
  for (std::size_t i = 0; i < args.size(); ++i)
    moved.push_back(dims[i] ? moveaxis(args[i], *dims[i], *at) : broadcast_batch(args[i], n, *at));
  const auto dimension = params.get<std::int64_t>("dimension");
  Params p = params;
  p.set("dimension", detail::skip_batch_axis(dimension, *at));
  return {rt::bind(*this, moved, p), BatchDims(args.size(), *at)};
}

namespace detail {
inline Params sort_params_for(std::int64_t dimension, std::int64_t num_keys) {
  return {{"dimension", dimension}, {"is_stable", true}, {"num_keys", num_keys}};
}
}  // namespace detail

XPR_FUNC Array sort(const Array& x, std::optional<std::int64_t> axis, bool descending) {
  const Array in = axis ? x : ravel(x);
  const std::int64_t d = detail::one_axis("sort", axis, x.ndim());
  Array out = rt::bind(sort_p, Arrays{in}, detail::sort_params_for(d, 1))[0];
  return descending ? rev(out, {d}) : out;
}

XPR_FUNC Array argsort(const Array& x, std::optional<std::int64_t> axis, bool descending) {
  Array in = axis ? x : ravel(x);
  const std::int64_t d = detail::one_axis("argsort", axis, x.ndim());
  Array iota = broadcasted_iota(DType::int64, in.shape(), d);
  // jnp.argsort: for a stable descending order, both reversed first, so that equal elements keep
  // their order when the indices are reversed back.
  if (descending) {
    in = rev(in, {d});
    iota = rev(iota, {d});
  }
  Array indices = rt::bind(sort_p, Arrays{in, iota}, detail::sort_params_for(d, 1))[1];
  return descending ? rev(indices, {d}) : indices;
}

XPR_FUNC std::pair<Array, Array> sort_key_val(const Array& keys, const Array& values,
                                              std::int64_t dimension) {
  const std::int64_t d = detail::canonical_axis("sort_key_val", dimension, keys.ndim());
  Arrays out = rt::bind(sort_p, Arrays{keys, values}, detail::sort_params_for(d, 1));
  return {std::move(out[0]), std::move(out[1])};
}

XPR_FUNC Array lexsort(const std::vector<Array>& keys, std::int64_t axis) {
  if (keys.empty()) throw core::type_error("lexsort: expected at least one key, found none");
  for (const Array& k : keys)
    if (k.shape() != keys[0].shape())
      throw core::shape_error("lexsort: expected keys of one shape, found " +
                              keys[0].shape().str() + " and " + k.shape().str());
  // jnp.lexsort: rank-0 keys sort to the index 0.
  if (keys[0].ndim() == 0) return Array(std::int64_t{0});
  const std::int64_t d = detail::canonical_axis("lexsort", axis, keys[0].ndim());
  // The primary key is the last: the sort's keys in reverse, then the iota that it returns.
  Arrays operands(keys.rbegin(), keys.rend());
  operands.push_back(broadcasted_iota(DType::int64, keys[0].shape(), d));
  return rt::bind(sort_p, operands,
                  detail::sort_params_for(d, static_cast<std::int64_t>(keys.size())))
      .back();
}

XPR_FUNC std::pair<Array, Array> top_k(const Array& x, std::int64_t k) {
  if (x.ndim() == 0)
    throw core::shape_error("top_k: expected an array of rank 1 or more, found rank 0");
  const std::int64_t n = x.shape()[x.ndim() - 1];
  if (k < 0 || k > n)
    throw core::value_error("top_k: expected k in [0, " + std::to_string(n) +
                            "] for a last axis of length " + std::to_string(n) + ", found " +
                            std::to_string(k));
  const auto last = static_cast<std::int64_t>(x.ndim()) - 1;
  Array indices = detail::slice_in_dim(argsort(x, last, true), 0, k, 1, x.ndim() - 1);
  if (n <= std::numeric_limits<std::int32_t>::max())
    indices = convert_element_type(indices, DType::int32);
  return {take_along_axis(x, indices, last), indices};
}

XPR_FUNC Array quantile(const Array& x, double q, std::optional<std::int64_t> axis,
                        quantile_method method, bool keepdims) {
  if (!(q >= 0 && q <= 1))
    throw core::value_error("quantile: expected q in [0, 1], found " + std::to_string(q));
  const Array a = core::is_floating(x.dtype()) ? x : convert_element_type(x, DType::float64);
  const Array in = axis ? a : ravel(a);
  const std::int64_t d = detail::one_axis("quantile", axis, x.ndim());
  const std::int64_t n = in.shape()[static_cast<std::size_t>(d)];
  if (n == 0)
    throw core::shape_error("quantile: expected a nonempty axis, found axis " + std::to_string(d) +
                            " of length 0 in shape " + in.shape().str());
  const Array sorted = sort(in, d);
  auto element = [&](std::int64_t i) {
    return squeeze(detail::slice_in_dim(sorted, i, i + 1, 1, static_cast<std::size_t>(d)), d);
  };
  // jnp.quantile: the position q (n - 1), its two neighbours and the weight of the upper one.
  const double pos = q * static_cast<double>(n - 1);
  const auto lo = static_cast<std::int64_t>(std::floor(pos));
  const auto hi = std::min(static_cast<std::int64_t>(std::ceil(pos)), n - 1);
  const double w = pos - static_cast<double>(lo);
  Array r;
  switch (method) {
    case quantile_method::linear:
      r = lo == hi ? element(lo) : element(lo) * (1 - w) + element(hi) * w;
      break;
    case quantile_method::lower:
      r = element(lo);
      break;
    case quantile_method::higher:
      r = element(hi);
      break;
    case quantile_method::midpoint:
      r = lo == hi ? element(lo) : (element(lo) + element(hi)) * 0.5;
      break;
    case quantile_method::nearest:
      r = w <= 0.5 ? element(lo) : element(hi);
      break;
  }
  // A NaN sorts last: the row holds one where its last element is NaN.
  r = xpr::where(isnan(element(n - 1)), std::numeric_limits<double>::quiet_NaN(), r);
  if (!keepdims) return r;
  if (axis) return expand_dims(r, d);
  return reshape(r, Shape(std::vector<std::int64_t>(x.ndim(), 1)));
}

XPR_FUNC Array percentile(const Array& x, double p, std::optional<std::int64_t> axis,
                          quantile_method method, bool keepdims) {
  if (!(p >= 0 && p <= 100))
    throw core::value_error("percentile: expected p in [0, 100], found " + std::to_string(p));
  return quantile(x, p / 100, axis, method, keepdims);
}

XPR_FUNC Array median(const Array& x, std::optional<std::int64_t> axis, bool keepdims) {
  return quantile(x, 0.5, axis, quantile_method::linear, keepdims);
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
