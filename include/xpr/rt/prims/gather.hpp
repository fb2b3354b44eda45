// SPDX-License-Identifier: MIT
// The gather/scatter family: gather, scatter, scatter-add, scatter-mul, scatter-min and
// scatter-max with JAX's (XLA's) dimension numbers and out-of-bounds modes, all of their rules,
// and lax's functions `gather`, `scatter`, `scatter_add`, ... They are the primitives behind
// NumPy-style indexing, `x.at[...]` updates and segment sums.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/core/dtype.hpp"
#include "xpr/core/error.hpp"
#include "xpr/core/ops.hpp"
#include "xpr/core/shape.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/aval.hpp"
#include "xpr/rt/batching.hpp"
#include "xpr/rt/jaxpr.hpp"
#include "xpr/rt/numpy_shape.hpp"
#include "xpr/rt/params.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/prims/binary.hpp"
#include "xpr/rt/prims/compare.hpp"
#include "xpr/rt/prims/convert.hpp"
#include "xpr/rt/prims/detail/transpose.hpp"
#include "xpr/rt/prims/iota.hpp"
#include "xpr/rt/prims/select.hpp"
#include "xpr/rt/prims/shape.hpp"
#include "xpr/rt/trace.hpp"
#include "xpr/rt/zeros.hpp"

namespace xpr::rt {

namespace detail::gs {

std::string tuple_str(const Axes& a);

inline bool contains(const Axes& a, std::int64_t v) {
  return std::find(a.begin(), a.end(), v) != a.end();
}

/// Checks that the dimension numbers `field` lie in [0, bound) (`what` names the bound), are
/// distinct, and increase when `sorted`.
void check_dims(const std::string& prim, const char* field, const Axes& axes, std::int64_t bound,
                const char* what, bool sorted);

void check_disjoint(const std::string& prim, const char* fa, const Axes& a, const char* fb,
                    const Axes& b);

void check_indices_type(const std::string& prim, const ShapedArray& idx);

Shape checked_shape(const std::string& prim, std::vector<std::int64_t> dims);

/// The operand dimensions that are window dimensions (neither collapsed/inserted nor batching),
/// in increasing order.
std::vector<std::size_t> window_dims(std::size_t rank, const Axes& dropped, const Axes& batching);

/// Checks the parts that gather and scatter share: the batching dimensions and the index map.
void check_common(const std::string& prim, const ShapedArray& x, const ShapedArray& idx,
                  const Axes& dropped, const char* dropped_name, const Axes& obd, const Axes& ibd,
                  const char* ibd_name, const Axes& index_map, const char* map_name);

/// Gather's output shape (XLA's shape rule), after checking every dimension number.
Shape gather_shape(const std::string& prim, const ShapedArray& x, const ShapedArray& idx,
                   const GatherDimensionNumbers& dn, const Axes& ss);

/// Checks a scatter's operands and dimension numbers (XLA's shape rule); the output is the
/// operand's type.
void check_scatter(const std::string& prim, const ShapedArray& x, const ShapedArray& idx,
                   const ShapedArray& u, const ScatterDimensionNumbers& dn);

/// Calls `f(a, b)` for each index of `shape` in row-major order (not at all if a size is 0), with
/// `a` and `b` its offsets under the steps `sa` and `sb`, kept incrementally.
template <class F>
void walk(std::span<const std::int64_t> shape, std::span<const std::int64_t> sa,
          std::span<const std::int64_t> sb, F&& f) {
  for (std::int64_t n : shape)
    if (n <= 0) return;
  const std::size_t r = shape.size();
  if (r == 0) {
    f(std::int64_t{0}, std::int64_t{0});
    return;
  }
  std::vector<std::int64_t> c(r, 0);
  std::int64_t a = 0, b = 0;
  const std::int64_t n_last = shape[r - 1], la = sa[r - 1], lb = sb[r - 1];
  for (;;) {
    for (std::int64_t i = 0; i < n_last; ++i) f(a + i * la, b + i * lb);
    std::size_t k = r - 1;
    for (;;) {
      if (k == 0) return;
      --k;
      a += sa[k];
      b += sb[k];
      if (++c[k] < shape[k]) break;
      a -= sa[k] * shape[k];
      b -= sb[k] * shape[k];
      c[k] = 0;
    }
  }
}

/// The coordinate along batch dimension `d` of the index vector number `row` (row-major over
/// `shape` with strides `strides`).
inline std::int64_t coordinate(std::int64_t row, std::span<const std::int64_t> shape,
                               std::span<const std::int64_t> strides, std::int64_t d) {
  const auto k = static_cast<std::size_t>(d);
  return (row / strides[k]) % shape[k];
}

/// The indices as int64, whatever their integer dtype.
std::vector<std::int64_t> index_values(const Array& idx);

inline GatherScatterMode mode_of(const Params& p) { return p.get<GatherScatterMode>("mode"); }
bool flag(const Params& p, const char* name);

/// The start of a window of `size` along a dimension of `dim` at index `i`: clamped into
/// [0, dim - size], or empty when out of bounds and `drop` (fill_or_drop).
std::optional<std::int64_t> window_start(std::int64_t i, std::int64_t size, std::int64_t dim,
                                         bool drop);

/// gather's `fill_value` parameter checked against the operand's dtype: None, or a number that
/// converts to it exactly (a bool for bool).
void check_fill_value(const std::string& prim, const Params& p, DType dtype);

/// The value gather writes for an out-of-bounds window: `fill_value`, or JAX's default (NaN for
/// floats, the least value for signed integers, true for bool).
template <class T>
T fill_value_as(const Params& p) {
  const ParamValue* v = p.find("fill_value");
  if (v) {
    if (const double* d = std::get_if<double>(v)) {
      if constexpr (std::is_same_v<T, float>) {  // beyond float's range: inf, not UB
        if (std::abs(*d) > std::numeric_limits<float>::max() && std::isfinite(*d))
          return *d > 0 ? std::numeric_limits<float>::infinity()
                        : -std::numeric_limits<float>::infinity();
        return static_cast<T>(*d);
      } else if constexpr (std::is_floating_point_v<T>) {
        return static_cast<T>(*d);
      }
    } else if (const std::int64_t* i = std::get_if<std::int64_t>(v)) {
      return static_cast<T>(*i);
    } else if (const bool* b = std::get_if<bool>(v)) {
      return static_cast<T>(*b);
    }
  }
  if constexpr (std::is_same_v<T, bool>)
    return true;
  else if constexpr (std::is_floating_point_v<T>)
    return std::numeric_limits<T>::quiet_NaN();
  else
    return std::numeric_limits<T>::min();
}

}  // namespace detail::gs

// ---- gather -------------------------------------------------------------------------------------

/// gather[dimension_numbers, slice_sizes, mode, fill_value, indices_are_sorted,
/// unique_indices](operand, indices): for each index vector (the last dimension of `indices`), the
/// window of `slice_sizes` of `operand` starting there (XLA's Gather with index_vector_dim last).
/// Linear in the operand; its transpose is scatter-add.
class Gather final : public Primitive {
 public:
  constexpr Gather() : Primitive("gather") {}

  XPR_MEMBER Arrays impl(std::span<const Array> args, const Params& params) const override;

  Avals abstract_eval(std::span<const ShapedArray> args, const Params& params) const override {
    detail::check_operand_count(name(), args.size(), 2, " (operand, indices)");
    return {abstract_eval_one(args[0], args[1], params)};
  }

  XPR_MEMBER std::pair<Arrays, Arrays> jvp(std::span<const Array> primals,
                                           std::span<const Array> tangents,
                                           const Params& params) const override;

  /// Linear in the operand (JAX's `_gather_jvp_rule`): the tangent gathered the same way, with
  /// fill value 0 for out-of-bounds windows; zero when the operand's tangent is.
  XPR_MEMBER std::pair<Arrays, Tangents> jvp_symbolic(std::span<const Array> primals,
                                                      std::span<const Tangent> tangents,
                                                      const Params& params) const override;

  /// Transpose (JAX's `_gather_transpose_rule`): the cotangent scatter-added into zeros of the
  /// operand's type at the same windows (defined below, after scatter-add).
  XPR_MEMBER Cotangents transpose(std::span<const Cotangent> cts, std::span<const LinearArg> args,
                                  const Params& params) const override;

  /// Batched operand: its batch axis becomes a leading window dimension taken whole. Batched
  /// indices: a leading batch dimension of the indices. Both: a batching dimension pair
  /// (operand_batching_dims / start_indices_batching_dims), so example k reads operand k.
  XPR_MEMBER std::pair<Arrays, BatchDims> batch(std::span<const Array> args,
                                                std::span<const BatchDim> dims,
                                                std::int64_t axis_size,
                                                const Params& params) const override;

  /// The parameters of the tangent's gather: fill value 0 where the primal fills.
  XPR_MEMBER static Params tangent_params(const Params& params);

 private:
  XPR_MEMBER ShapedArray abstract_eval_one(const ShapedArray& x, const ShapedArray& idx,
                                           const Params& params) const;
};

inline constinit const Gather gather_p{};

// ---- scatters -----------------------------------------------------------------------------------

/// How a scatter combines an update with the value already there.
enum class ScatterKind : std::uint8_t { set, add, mul, min, max };

namespace detail::gs {

constexpr std::string_view scatter_name(ScatterKind k) {
  switch (k) {
    case ScatterKind::set:
      return "scatter";
    case ScatterKind::add:
      return "scatter-add";
    case ScatterKind::mul:
      return "scatter-mul";
    case ScatterKind::min:
      return "scatter-min";
    case ScatterKind::max:
      break;
  }
  return "scatter-max";
}

/// The combiner's binary primitive (none for scatter, which replaces).
const Primitive* combiner(ScatterKind k);

/// JAX's `update_jaxpr` for a combining scatter of `dtype`: `{ lambda ; a:f32[] b:f32[]. let
/// c:f32[] = add a b in (c,) }`. Built once per kind and dtype; null for scatter (JAX's None).
JaxprParam update_jaxpr(ScatterKind kind, DType dtype);

/// A scatter's parameters, as lax's functions bind them.
Params scatter_params(ScatterKind kind, DType dtype, const ScatterDimensionNumbers& dn,
                      GatherScatterMode mode, bool indices_are_sorted, bool unique_indices);

/// The gather that reads back the windows a scatter of `dn` writes (JAX builds it the same way
/// in its scatter rules): its dimension numbers and slice sizes.
std::pair<GatherDimensionNumbers, Axes> inverse_gather(const ScatterDimensionNumbers& dn,
                                                       std::size_t operand_rank,
                                                       const Shape& updates);

/// The scatter's dimension numbers of gather's transpose.
inline ScatterDimensionNumbers scatter_of(const GatherDimensionNumbers& g) {
  return {g.offset_dims, g.collapsed_slice_dims, g.start_index_map, g.operand_batching_dims,
          g.start_indices_batching_dims};
}

}  // namespace detail::gs

/// scatter / scatter-add / scatter-mul / scatter-min / scatter-max[dimension_numbers,
/// indices_are_sorted, mode, unique_indices, update_consts, update_jaxpr](operand, indices,
/// updates): `operand` with each window of `updates` written at its index vector, replacing
/// (scatter; with repeated indices the last update in row-major order wins) or combined with
/// add, mul, min or max.
template <ScatterKind Kind>
class Scatter final : public Primitive {
 public:
  constexpr Scatter() : Primitive(detail::gs::scatter_name(Kind)) {}

  Arrays impl(std::span<const Array> args, const Params& params) const override {
    detail::check_operand_count(name(), args.size(), 3, " (operand, indices, updates)");
    const Array &x = args[0], &idx = args[1], &u = args[2];
    const ShapedArray out =
        abstract_eval_one(detail::aval_of(x), detail::aval_of(idx), detail::aval_of(u), params);
    const auto& dn = params.get<ScatterDimensionNumbers>("dimension_numbers");
    const bool drop = detail::gs::mode_of(params) == GatherScatterMode::fill_or_drop;
    const std::size_t rank = x.ndim(), batch_rank = idx.ndim() - 1;
    const std::vector<std::int64_t> xs = core::strides_of(x.shape()),
                                    us = core::strides_of(u.shape());
    const std::vector<std::size_t> window =
        detail::gs::window_dims(rank, dn.inserted_window_dims, dn.operand_batching_dims);
    std::vector<std::int64_t> size(rank, 1);  // the window's extent in each operand dimension
    std::vector<std::int64_t> wsize, wsrc, wdst;
    for (std::size_t k = 0; k < window.size(); ++k) {
      const auto ud = static_cast<std::size_t>(dn.update_window_dims[k]);
      size[window[k]] = u.shape()[ud];
      wsize.push_back(u.shape()[ud]);
      wsrc.push_back(us[ud]);
      wdst.push_back(xs[window[k]]);
    }
    std::vector<std::int64_t> bsrc;  // per scatter dimension of the updates: its step
    for (std::size_t d = 0; d < u.ndim(); ++d)
      if (!detail::gs::contains(dn.update_window_dims, static_cast<std::int64_t>(d)))
        bsrc.push_back(us[d]);
    const std::vector<std::int64_t> iv = detail::gs::index_values(idx);
    const std::size_t k_len = dn.scatter_dims_to_operand_dims.size();
    const std::span<const std::int64_t> batch_shape(idx.shape().dims().data(), batch_rank);
    const std::vector<std::int64_t> rows =
        core::strides_of(Shape(std::vector<std::int64_t>(batch_shape.begin(), batch_shape.end())));
    ArrayBuilder b(out);
    std::memcpy(b.bytes(), detail::bytes_of(x),
                static_cast<std::size_t>(x.size()) * core::itemsize(x.dtype()));
    // An empty operand has no place for any update (an inserted dimension of size 0 would give
    // a window start of -1).
    if (x.size() == 0) return {std::move(b).finish()};
    dispatch_dtype(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* src = u.data<T>();
      T* dst = b.data<T>();
      detail::gs::walk(batch_shape, rows, bsrc, [&](std::int64_t row, std::int64_t src0) {
        std::int64_t dst0 = 0;
        for (std::size_t k = 0; k < k_len; ++k) {
          const auto d = static_cast<std::size_t>(dn.scatter_dims_to_operand_dims[k]);
          const auto s = detail::gs::window_start(iv[static_cast<std::size_t>(row) * k_len + k],
                                                  size[d], x.shape()[d], drop);
          if (!s) return;  // fill_or_drop: the whole window is dropped
          dst0 += *s * xs[d];
        }
        for (std::size_t i = 0; i < dn.operand_batching_dims.size(); ++i)
          dst0 +=
              detail::gs::coordinate(row, batch_shape, rows, dn.scatter_indices_batching_dims[i]) *
              xs[static_cast<std::size_t>(dn.operand_batching_dims[i])];
        detail::gs::walk(wsize, wsrc, wdst, [&](std::int64_t so, std::int64_t dof) {
          T& o = dst[dst0 + dof];
          o = combine(o, src[src0 + so]);
        });
      });
    });
    return {std::move(b).finish()};
  }

  Avals abstract_eval(std::span<const ShapedArray> args, const Params& params) const override {
    detail::check_operand_count(name(), args.size(), 3, " (operand, indices, updates)");
    return {abstract_eval_one(args[0], args[1], args[2], params)};
  }

  std::pair<Arrays, Arrays> jvp(std::span<const Array> primals, std::span<const Array> tangents,
                                const Params& params) const override {
    Tangents ts(tangents.begin(), tangents.end());
    auto [out, t] = jvp_symbolic(primals, ts, params);
    return {out, {t[0] ? *t[0] : zeros_like_aval(detail::aval_of(out[0]))}};
  }

  inline std::pair<Arrays, Tangents> jvp_symbolic(std::span<const Array> primals,
                                                  std::span<const Tangent> tangents,
                                                  const Params& params) const override;

  inline Cotangents transpose(std::span<const Cotangent> cts, std::span<const LinearArg> args,
                              const Params& params) const override;

  /// Operand and updates get the batch axis first (broadcast when unbatched). Unbatched indices:
  /// the batch axis is a leading window dimension of the updates taken whole. Batched indices: a
  /// batching dimension pair, so example k's updates go to operand k.
  inline std::pair<Arrays, BatchDims> batch(std::span<const Array> args,
                                            std::span<const BatchDim> dims, std::int64_t axis_size,
                                            const Params& params) const override;

 private:
  template <class T>
  static T combine(T old, T update) {
    if constexpr (Kind == ScatterKind::set) {
      (void)old;
      return update;
    } else if constexpr (Kind == ScatterKind::add) {
      return detail::binary_element<op::add, T>(old, update);
    } else if constexpr (Kind == ScatterKind::mul) {
      return detail::binary_element<op::mul, T>(old, update);
    } else if constexpr (Kind == ScatterKind::min) {
      return detail::binary_element<op::min, T>(old, update);
    } else {
      return detail::binary_element<op::max, T>(old, update);
    }
  }

  ShapedArray abstract_eval_one(const ShapedArray& x, const ShapedArray& idx, const ShapedArray& u,
                                const Params& params) const {
    const auto& dn = params.get<ScatterDimensionNumbers>("dimension_numbers");
    (void)detail::gs::mode_of(params);
    if ((Kind == ScatterKind::add || Kind == ScatterKind::mul) && x.dtype == DType::bool_)
      throw core::dtype_error(name() +
                              ": expected a numeric operand (int32, int64, float32 or float64), "
                              "found bool");
    detail::gs::check_scatter(name(), x, idx, u, dn);
    // The combiner is the primitive's; a jaxpr text must not claim another one.
    const ParamValue* j = params.find("update_jaxpr");
    const JaxprParam expected = detail::gs::update_jaxpr(Kind, x.dtype);
    const JaxprParam* given = j ? std::get_if<JaxprParam>(j) : nullptr;
    const bool ok = expected ? (given && *given && **given == *expected)
                             : (!j || std::holds_alternative<None>(*j));
    if (!ok)
      throw core::type_error(name() + ": expected update_jaxpr " +
                             (expected
                                  ? std::string("to be the ") + detail::gs::combiner(Kind)->name() +
                                        " of two " + std::string(core::name(x.dtype)) + " scalars"
                                  : std::string("None")) +
                             ", found another value");
    return {x.shape, x.dtype, x.weak_type};
  }
};

// Compiled-library mode (XPR_COMPILED_LIB, the xpr::runtime library): these primitives' rules
// and kernels are instantiated once, in src/runtime.cpp, not in every translation unit.
#ifdef XPR_COMPILED_LIB
extern template class Scatter<ScatterKind::set>;
extern template class Scatter<ScatterKind::add>;
extern template class Scatter<ScatterKind::mul>;
extern template class Scatter<ScatterKind::min>;
extern template class Scatter<ScatterKind::max>;
#endif

inline constinit const Scatter<ScatterKind::set> scatter_p{};
inline constinit const Scatter<ScatterKind::add> scatter_add_p{};
inline constinit const Scatter<ScatterKind::mul> scatter_mul_p{};
inline constinit const Scatter<ScatterKind::min> scatter_min_p{};
inline constinit const Scatter<ScatterKind::max> scatter_max_p{};

// ---- lax's functions ----------------------------------------------------------------------------

/// `lax.gather(operand, indices, dimension_numbers, slice_sizes, mode, fill_value)`: the windows
/// of `slice_sizes` at the index vectors in the last dimension of `indices`. `mode` as JAX's
/// (default promise_in_bounds, which xpr clamps like clip); with fill_or_drop, a window not
/// wholly inside is `fill_value` (default NaN for floats, the least value for signed integers,
/// true for bool).
Array gather(const Array& operand, const Array& indices,
             const GatherDimensionNumbers& dimension_numbers, const Axes& slice_sizes,
             GatherScatterMode mode = GatherScatterMode::promise_in_bounds,
             std::optional<double> fill_value = std::nullopt, bool indices_are_sorted = false,
             bool unique_indices = false);

namespace detail::gs {
template <ScatterKind Kind>
Array scatter_with(const Scatter<Kind>& prim, const Array& operand, const Array& indices,
                   const Array& updates, const ScatterDimensionNumbers& dn, GatherScatterMode mode,
                   bool sorted, bool unique) {
  return bind1(prim, {operand, indices, updates},
               scatter_params(Kind, operand.dtype(), dn, mode, sorted, unique));
}

}  // namespace detail::gs

/// `lax.scatter(operand, indices, updates, dimension_numbers, mode)`: `operand` with the windows
/// of `updates` written at the index vectors in the last dimension of `indices`. With repeated
/// indices the last update (row-major order) wins. `mode` defaults to fill_or_drop, as in JAX:
/// windows not wholly inside are dropped; clip clamps them inside.
inline Array scatter(const Array& operand, const Array& indices, const Array& updates,
                     const ScatterDimensionNumbers& dimension_numbers,
                     GatherScatterMode mode = GatherScatterMode::fill_or_drop,
                     bool indices_are_sorted = false, bool unique_indices = false) {
  return detail::gs::scatter_with(scatter_p, operand, indices, updates, dimension_numbers, mode,
                                  indices_are_sorted, unique_indices);
}

/// `lax.scatter_add`: as `scatter`, the updates added (repeated indices add up).
inline Array scatter_add(const Array& operand, const Array& indices, const Array& updates,
                         const ScatterDimensionNumbers& dimension_numbers,
                         GatherScatterMode mode = GatherScatterMode::fill_or_drop,
                         bool indices_are_sorted = false, bool unique_indices = false) {
  return detail::gs::scatter_with(scatter_add_p, operand, indices, updates, dimension_numbers, mode,
                                  indices_are_sorted, unique_indices);
}

/// `lax.scatter_mul`: as `scatter`, the values multiplied by the updates.
inline Array scatter_mul(const Array& operand, const Array& indices, const Array& updates,
                         const ScatterDimensionNumbers& dimension_numbers,
                         GatherScatterMode mode = GatherScatterMode::fill_or_drop,
                         bool indices_are_sorted = false, bool unique_indices = false) {
  return detail::gs::scatter_with(scatter_mul_p, operand, indices, updates, dimension_numbers, mode,
                                  indices_are_sorted, unique_indices);
}

/// `lax.scatter_min`: as `scatter`, the minimum of the value and the updates.
inline Array scatter_min(const Array& operand, const Array& indices, const Array& updates,
                         const ScatterDimensionNumbers& dimension_numbers,
                         GatherScatterMode mode = GatherScatterMode::fill_or_drop,
                         bool indices_are_sorted = false, bool unique_indices = false) {
  return detail::gs::scatter_with(scatter_min_p, operand, indices, updates, dimension_numbers, mode,
                                  indices_are_sorted, unique_indices);
}

/// `lax.scatter_max`: as `scatter`, the maximum of the value and the updates.
inline Array scatter_max(const Array& operand, const Array& indices, const Array& updates,
                         const ScatterDimensionNumbers& dimension_numbers,
                         GatherScatterMode mode = GatherScatterMode::fill_or_drop,
                         bool indices_are_sorted = false, bool unique_indices = false) {
  return detail::gs::scatter_with(scatter_max_p, operand, indices, updates, dimension_numbers, mode,
                                  indices_are_sorted, unique_indices);
}

// ---- rules that bind other members of the family ------------------------------------------------

template <ScatterKind Kind>
std::pair<Arrays, BatchDims> Scatter<Kind>::batch(std::span<const Array> args,
                                                  std::span<const BatchDim> dims,
                                                  std::int64_t axis_size,
                                                  const Params& params) const {
  detail::check_operand_count(name(), args.size(), 3, " (operand, indices, updates)");
  if (!dims[0] && !dims[1] && !dims[2]) return {rt::bind(*this, args, params), {std::nullopt}};
  ShapedArray e[3];
  for (std::size_t i = 0; i < 3; ++i)
    e[i] = dims[i] ? detail::unbatched_aval(detail::aval_of(args[i]), *dims[i])
                   : detail::aval_of(args[i]);
  (void)abstract_eval_one(e[0], e[1], e[2], params);
  auto shifted = [](const Axes& a) {
    Axes r;
    for (std::int64_t d : a) r.push_back(d + 1);
    return r;
  };
  auto with_zero = [](Axes a) {
    a.insert(a.begin(), 0);
    return a;
  };
  const auto& dn = params.get<ScatterDimensionNumbers>("dimension_numbers");
  Array x = bdim_at_front(args[0], dims[0], axis_size);
  Array u = bdim_at_front(args[2], dims[2], axis_size);
  Array idx = args[1];
  ScatterDimensionNumbers nd{shifted(dn.update_window_dims), shifted(dn.inserted_window_dims),
                             shifted(dn.scatter_dims_to_operand_dims),
                             shifted(dn.operand_batching_dims), dn.scatter_indices_batching_dims};
  if (!dims[1]) {
    nd.update_window_dims = with_zero(nd.update_window_dims);
  } else {
    idx = moveaxis(idx, *dims[1], 0);
    nd.operand_batching_dims = with_zero(nd.operand_batching_dims);
    nd.scatter_indices_batching_dims = with_zero(shifted(dn.scatter_indices_batching_dims));
  }
  Params p = params;
  p.set("dimension_numbers", nd);
  return {{bind1(*this, {x, idx, u}, p)}, {0}};
}

template <ScatterKind Kind>
std::pair<Arrays, Tangents> Scatter<Kind>::jvp_symbolic(std::span<const Array> primals,
                                                        std::span<const Tangent> tangents,
                                                        const Params& params) const {
  detail::check_operand_count(name(), primals.size(), 3, " (operand, indices, updates)");
  const Array &x = primals[0], &idx = primals[1], &u = primals[2];
  (void)abstract_eval_one(detail::aval_of(x), detail::aval_of(idx), detail::aval_of(u), params);
  Arrays out = rt::bind(*this, primals, params);
  if (!detail::has_tangent_space(detail::aval_of(out[0])) || (!tangents[0] && !tangents[2]))
    return {std::move(out), {std::nullopt}};
  const auto& dn = params.get<ScatterDimensionNumbers>("dimension_numbers");
  const GatherScatterMode mode = detail::gs::mode_of(params);
  const bool sorted = detail::gs::flag(params, "indices_are_sorted");
  const bool unique = detail::gs::flag(params, "unique_indices");
  auto tx = [&] { return tangents[0] ? *tangents[0] : zeros_like_aval(detail::aval_of(x)); };
  auto tu = [&] { return tangents[2] ? *tangents[2] : zeros_like_aval(detail::aval_of(u)); };
  auto [gdn, ss] = detail::gs::inverse_gather(dn, x.ndim(), u.shape());
  // Gathers that read back what the scatter wrote: clip, since a dropped window's value is
  // dropped again by the scatter-add that uses it.
  auto read = [&](const Array& a) {
    return gather(a, idx, gdn, ss, GatherScatterMode::clip, std::nullopt, sorted, unique);
  };
  Array t;
  if constexpr (Kind == ScatterKind::add) {
    // Linear in operand and updates.
    t = scatter_add(tx(), idx, tu(), dn, mode, sorted, unique);
  } else if constexpr (Kind == ScatterKind::mul) {
    // JAX's rule: d(x * y) = scatter_mul(dx, y) + x * scatter_add(0, dy), right only when no two
    // updates meet (JAX raises otherwise, as does xpr).
    if (tangents[0]) t = scatter_mul(*tangents[0], idx, u, dn, mode, sorted, unique);
    if (tangents[2]) {
      if (!unique)
        throw core::not_implemented_error(
            "scatter-mul: the derivative with respect to the updates is only implemented for "
            "unique_indices=True (as in JAX)");
      Array ty = bind1(mul_p, {x, scatter_add(zeros_like_aval(detail::aval_of(x)), idx,
                                              *tangents[2], dn, mode, sorted, unique)});
      t = tangents[0] ? bind1(add_p, {t, ty}) : ty;
    }
  } else if constexpr (Kind == ScatterKind::set) {
    if (unique) {
      t = scatter(tx(), idx, tu(), dn, mode, sorted, unique);
    } else {
      // JAX's `_scatter_jvp` for indices that may repeat: scatter an id per update, read the ids
      // back to find each location's winner, and scatter-add the winners' tangents (and the
      // operand's where nothing was written).
      std::vector<std::int64_t> id_dims = u.shape().dims();
      for (std::int64_t d : dn.update_window_dims) id_dims[static_cast<std::size_t>(d)] = 1;
      const Shape id_shape(id_dims);
      const DType id_dtype =
          id_shape.size() < std::numeric_limits<std::int32_t>::max() ? DType::int32 : DType::int64;
      Axes all;
      for (std::size_t d = 0; d < u.ndim(); ++d) all.push_back(static_cast<std::int64_t>(d));
      Array ids = bind1(add_p, {reshape(iota(id_dtype, id_shape.size()), id_shape),
                                ones_like_aval({id_shape, id_dtype, false})});
      ids = broadcast_in_dim(ids, u.shape(), all);
      Array scattered = scatter(zeros_like_aval({x.shape(), id_dtype, false}), idx, ids, dn, mode,
                                sorted, unique);
      Array kept = bind1(eq_p, {scattered, zeros_like_aval({x.shape(), id_dtype, false})});
      Array won = bind1(eq_p, {ids, read(scattered)});
      Array mx = bind1(select_n_p, {kept, zeros_like_aval(detail::aval_of(x)), tx()});
      Array mu = bind1(select_n_p, {won, zeros_like_aval(detail::aval_of(u)), tu()});
      t = scatter_add(mx, idx, mu, dn, mode, sorted, unique);
    }
  } else {
    // JAX's `_scatter_extremal_jvp`: each location's tangent is the average of the tangents of
    // the values that attain the result (the operand's and the winning updates').
    const ShapedArray& xa = detail::aval_of(x);
    const ShapedArray& ua = detail::aval_of(u);
    Array initial = read(x), target = read(out[0]);
    Array successful = bind1(eq_p, {u, target});
    Array retained = bind1(eq_p, {initial, target});
    Array zx = zeros_like_aval(xa), zu = zeros_like_aval(ua), ou = ones_like_aval(ua);
    Array num_updates = read(
        scatter_add(zx, idx, bind1(select_n_p, {successful, zu, ou}), dn, mode, sorted, unique));
    Array num_refs = read(scatter_add(zx, idx, ou, dn, mode, sorted, unique));
    Array one = ones_like_aval(ua);
    Array plus_one = bind1(add_p, {num_updates, one});
    // At least 1 where JAX divides by a count: a dropped update reads some other location's
    // counts, and its coefficient, though unused, must stay finite (0 * inf is NaN in the
    // transpose). NaN results, which nothing equals, would give a count of 0 too.
    num_updates = bind1(max_p, {num_updates, one});
    num_refs = bind1(max_p, {num_refs, one});
    Array updates_normalizer = bind1(
        select_n_p, {retained, bind1(div_p, {one, num_updates}), bind1(div_p, {one, plus_one})});
    Array updates_coef = bind1(select_n_p, {successful, zu, updates_normalizer});
    Array operand_normalizer = bind1(select_n_p, {retained, zu, bind1(div_p, {one, plus_one})});
    Array operand_coef = bind1(div_p, {bind1(sub_p, {operand_normalizer, one}), num_refs});
    Array target_tangents = read(tx());
    Array tangent_updates = bind1(
        add_p, {bind1(mul_p, {target_tangents, operand_coef}), bind1(mul_p, {tu(), updates_coef})});
    t = scatter_add(tx(), idx, tangent_updates, dn, mode, sorted, unique);
  }
  return {std::move(out), {detail::fit_tangent(std::move(t), detail::aval_of(out[0]))}};
}

template <ScatterKind Kind>
Cotangents Scatter<Kind>::transpose(std::span<const Cotangent> cts, std::span<const LinearArg> args,
                                    const Params& params) const {
  detail::check_operand_count(name(), args.size(), 3, " (operand, indices, updates)");
  const Array idx = detail::known_operand(name(), args[1], "the indices");
  const ShapedArray &xa = aval_of(args[0]), &ua = aval_of(args[2]);
  const Array& ct = *cts[0];
  const auto& dn = params.get<ScatterDimensionNumbers>("dimension_numbers");
  const GatherScatterMode mode = detail::gs::mode_of(params);
  const bool sorted = detail::gs::flag(params, "indices_are_sorted");
  const bool unique = detail::gs::flag(params, "unique_indices");
  auto [gdn, ss] = detail::gs::inverse_gather(dn, xa.ndim(), ua.shape);
  // The updates' cotangent: the windows read back, 0 for a dropped window.
  auto read_back = [&](const Array& a) {
    return gather(
        a, idx, gdn, ss, mode,
        mode == GatherScatterMode::fill_or_drop ? std::optional<double>(0.0) : std::nullopt, sorted,
        unique);
  };
  Cotangents out(3);
  if constexpr (Kind == ScatterKind::add) {
    // Linear in operand and updates (JAX's `_scatter_add_transpose_rule`).
    if (is_undefined_primal(args[0])) out[0] = detail::fit_cotangent(ct, xa);
    if (is_undefined_primal(args[2])) out[2] = detail::fit_cotangent(read_back(ct), ua);
  } else if constexpr (Kind == ScatterKind::mul) {
    // Linear in the operand for known updates (JAX's `_scatter_mul_transpose_rule`).
    if (is_undefined_primal(args[0])) {
      const Array u = detail::known_operand(name(), args[2], "the updates");
      out[0] = detail::fit_cotangent(scatter_mul(ct, idx, u, dn, mode, sorted, unique), xa);
    }
    if (is_undefined_primal(args[2])) {
      const Array x = detail::known_operand(name(), args[0], "the operand");
      if (!unique)
        throw core::not_implemented_error(
            "scatter-mul: the transpose with respect to the updates is only implemented for "
            "unique_indices=True (as in JAX)");
      out[2] = detail::fit_cotangent(read_back(bind1(mul_p, {ct, x})), ua);
    }
  } else if constexpr (Kind == ScatterKind::set) {
    // JAX's `_scatter_transpose_rule`: the operand's cotangent is zero where a window was
    // written, the updates' is the windows read back. Only for unique indices, as in JAX (the
    // jvp of a scatter with repeated indices uses scatter-add, so reverse mode never needs it).
    if (!unique)
      throw core::not_implemented_error(
          "scatter: the transpose is only implemented for unique_indices=True (as in JAX)");
    if (is_undefined_primal(args[0]))
      out[0] = detail::fit_cotangent(
          scatter(ct, idx, zeros_like_aval({ua.shape, ct.dtype(), ct.weak_type()}), dn, mode,
                  sorted, unique),
          xa);
    if (is_undefined_primal(args[2])) out[2] = detail::fit_cotangent(read_back(ct), ua);
  } else {
    (void)read_back;
    (void)out;
    throw not_implemented("Transpose rule");
  }
  return out;
}

}  // namespace xpr::rt

namespace xpr {
using rt::gather;
using rt::GatherDimensionNumbers;
using rt::GatherScatterMode;
using rt::scatter;
using rt::scatter_add;
using rt::scatter_max;
using rt::scatter_min;
using rt::scatter_mul;
using rt::ScatterDimensionNumbers;
}  // namespace xpr

#if XPR_DEFINITIONS

namespace xpr::rt::detail::gs {

XPR_FUNC std::string tuple_str(const Axes& a) {
  std::string s = "(";
  for (std::size_t i = 0; i < a.size(); ++i) s += (i ? ", " : "") + std::to_string(a[i]);
  return s + (a.size() == 1 ? ",)" : ")");
}

XPR_FUNC void check_dims(const std::string& prim, const char* field, const Axes& axes,
                         std::int64_t bound, const char* what, bool sorted) {
  for (std::size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || axes[i] >= bound)
      throw core::shape_error(prim + ": expected " + field + " in [0, " + std::to_string(bound) +
                              ") (" + what + "), found " + tuple_str(axes));
    for (std::size_t j = 0; j < i; ++j)
      if (axes[j] == axes[i] || (sorted && axes[j] > axes[i]))
        throw core::shape_error(prim + ": expected " + field + " to be " +
                                (sorted ? "sorted and " : "") + "without repeats, found " +
                                tuple_str(axes));
  }
}

XPR_FUNC void check_disjoint(const std::string& prim, const char* fa, const Axes& a, const char* fb,
                             const Axes& b) {
  for (std::int64_t d : a)
    if (contains(b, d))
      throw core::shape_error(prim + ": expected " + fa + " " + tuple_str(a) + " and " + fb + " " +
                              tuple_str(b) + " to have no dimension in common, found " +
                              std::to_string(d) + " in both");
}

XPR_FUNC void check_indices_type(const std::string& prim, const ShapedArray& idx) {
  if (!core::is_integer(idx.dtype))
    throw core::dtype_error(prim +
                            ": expected indices of an integer dtype (int32 or int64), found " +
                            std::string(core::name(idx.dtype)));
  if (idx.ndim() == 0)
    throw core::shape_error(prim +
                            ": expected indices of rank >= 1 (the last dimension holds the index "
                            "vectors), found shape ()");
}

XPR_FUNC Shape checked_shape(const std::string& prim, std::vector<std::int64_t> dims) {
  std::int64_t n = 1;
  for (std::int64_t d : dims)
    if (__builtin_mul_overflow(n, d, &n))
      throw core::shape_error(prim + ": the result's size overflows int64 (shape " +
                              Shape(dims).str() + ")");
  return Shape(std::move(dims));
}

XPR_FUNC std::vector<std::size_t> window_dims(std::size_t rank, const Axes& dropped,
                                              const Axes& batching) {
  std::vector<std::size_t> w;
  for (std::size_t d = 0; d < rank; ++d) {
    const auto s = static_cast<std::int64_t>(d);
    if (!contains(dropped, s) && !contains(batching, s)) w.push_back(d);
  }
  return w;
}

XPR_FUNC void check_common(const std::string& prim, const ShapedArray& x, const ShapedArray& idx,
                           const Axes& dropped, const char* dropped_name, const Axes& obd,
                           const Axes& ibd, const char* ibd_name, const Axes& index_map,
                           const char* map_name) {
  const auto rank = static_cast<std::int64_t>(x.ndim());
  const auto batch_rank = static_cast<std::int64_t>(idx.ndim()) - 1;
  check_dims(prim, dropped_name, dropped, rank, "the operand's dimensions", true);
  check_dims(prim, "operand_batching_dims", obd, rank, "the operand's dimensions", true);
  check_disjoint(prim, dropped_name, dropped, "operand_batching_dims", obd);
  check_dims(prim, ibd_name, ibd, batch_rank,
             "the indices' dimensions except the last, which holds the index vectors", false);
  if (ibd.size() != obd.size())
    throw core::shape_error(prim + ": expected as many " + ibd_name + " as operand_batching_dims " +
                            tuple_str(obd) + ", found " + tuple_str(ibd));
  for (std::size_t i = 0; i < obd.size(); ++i) {
    const std::int64_t a = x.shape[static_cast<std::size_t>(obd[i])],
                       b = idx.shape[static_cast<std::size_t>(ibd[i])];
    if (a != b)
      throw core::shape_error(prim + ": expected operand batching dimension " +
                              std::to_string(obd[i]) + " (size " + std::to_string(a) +
                              ") and indices batching dimension " + std::to_string(ibd[i]) +
                              " (size " + std::to_string(b) + ") to have equal sizes; shapes " +
                              x.shape.str() + " and " + idx.shape.str());
  }
  check_dims(prim, map_name, index_map, rank, "the operand's dimensions", false);
  check_disjoint(prim, map_name, index_map, "operand_batching_dims", obd);
  const std::int64_t k = idx.shape[idx.ndim() - 1];
  if (static_cast<std::int64_t>(index_map.size()) != k)
    throw core::shape_error(prim + ": expected " + map_name + " " + tuple_str(index_map) +
                            " to have one entry per index vector element, the last dimension of "
                            "the indices' shape " +
                            idx.shape.str() + ", found " + std::to_string(index_map.size()) +
                            " entries for " + std::to_string(k) + " elements");
}

XPR_FUNC Shape gather_shape(const std::string& prim, const ShapedArray& x, const ShapedArray& idx,
                            const GatherDimensionNumbers& dn, const Axes& ss) {
  check_indices_type(prim, idx);
  const std::size_t rank = x.ndim(), batch_rank = idx.ndim() - 1;
  if (ss.size() != rank)
    throw core::shape_error(prim + ": expected slice_sizes of length " + std::to_string(rank) +
                            " (the operand's rank), found " + tuple_str(ss));
  check_common(prim, x, idx, dn.collapsed_slice_dims, "collapsed_slice_dims",
               dn.operand_batching_dims, dn.start_indices_batching_dims,
               "start_indices_batching_dims", dn.start_index_map, "start_index_map");
  for (std::size_t d = 0; d < rank; ++d)
    if (ss[d] < 0 || ss[d] > x.shape[d])
      throw core::shape_error(prim +
                              ": expected 0 <= slice_sizes <= operand shape, found "
                              "slice_sizes " +
                              tuple_str(ss) + " for operand shape " + x.shape.str());
  for (const Axes* a : {&dn.collapsed_slice_dims, &dn.operand_batching_dims})
    for (std::int64_t d : *a)
      if (ss[static_cast<std::size_t>(d)] != 1)
        throw core::shape_error(prim +
                                ": expected slice size 1 in each collapsed or batching "
                                "dimension, found slice_sizes " +
                                tuple_str(ss) + " with dimension " + std::to_string(d) +
                                " collapsed or batching");
  const std::vector<std::size_t> window =
      window_dims(rank, dn.collapsed_slice_dims, dn.operand_batching_dims);
  const std::size_t out_rank = batch_rank + dn.offset_dims.size();
  check_dims(prim, "offset_dims", dn.offset_dims, static_cast<std::int64_t>(out_rank),
             "the output's dimensions", true);
  if (dn.offset_dims.size() != window.size())
    throw core::shape_error(prim + ": expected " + std::to_string(window.size()) +
                            " offset_dims (the operand's rank " + std::to_string(rank) +
                            " minus its collapsed and batching dimensions), found " +
                            tuple_str(dn.offset_dims));
  std::vector<std::int64_t> out(out_rank);
  std::size_t w = 0, b = 0;
  for (std::size_t o = 0; o < out_rank; ++o)
    out[o] =
        contains(dn.offset_dims, static_cast<std::int64_t>(o)) ? ss[window[w++]] : idx.shape[b++];
  return checked_shape(prim, std::move(out));
}

XPR_FUNC void check_scatter(const std::string& prim, const ShapedArray& x, const ShapedArray& idx,
                            const ShapedArray& u, const ScatterDimensionNumbers& dn) {
  check_indices_type(prim, idx);
  if (u.dtype != x.dtype)
    throw core::dtype_error(prim + ": expected updates of the operand's dtype " +
                            std::string(core::name(x.dtype)) + ", found " +
                            std::string(core::name(u.dtype)));
  check_common(prim, x, idx, dn.inserted_window_dims, "inserted_window_dims",
               dn.operand_batching_dims, dn.scatter_indices_batching_dims,
               "scatter_indices_batching_dims", dn.scatter_dims_to_operand_dims,
               "scatter_dims_to_operand_dims");
  const std::size_t batch_rank = idx.ndim() - 1;
  const std::vector<std::size_t> window =
      window_dims(x.ndim(), dn.inserted_window_dims, dn.operand_batching_dims);
  if (dn.update_window_dims.size() != window.size())
    throw core::shape_error(prim + ": expected " + std::to_string(window.size()) +
                            " update_window_dims (the operand's rank " + std::to_string(x.ndim()) +
                            " minus its inserted and batching dimensions), found " +
                            tuple_str(dn.update_window_dims));
  if (u.ndim() != batch_rank + window.size())
    throw core::shape_error(prim + ": expected updates of rank " +
                            std::to_string(batch_rank + window.size()) +
                            " (the indices' batch dimensions plus the window dimensions), found "
                            "shape " +
                            u.shape.str());
  check_dims(prim, "update_window_dims", dn.update_window_dims, static_cast<std::int64_t>(u.ndim()),
             "the updates' dimensions", true);
  std::size_t w = 0, b = 0;
  for (std::size_t d = 0; d < u.ndim(); ++d) {
    if (contains(dn.update_window_dims, static_cast<std::int64_t>(d))) {
      const std::size_t od = window[w++];
      if (u.shape[d] > x.shape[od])
        throw core::shape_error(prim +
                                ": expected the update window no larger than the "
                                "operand, found updates dimension " +
                                std::to_string(d) + " of size " + std::to_string(u.shape[d]) +
                                " for operand dimension " + std::to_string(od) + " of size " +
                                std::to_string(x.shape[od]));
    } else {
      const std::int64_t want = idx.shape[b++];
      if (u.shape[d] != want)
        throw core::shape_error(
            prim +
            ": expected the updates' scatter dimensions to match the "
            "indices' batch dimensions " +
            Shape(std::vector<std::int64_t>(idx.shape.begin(), idx.shape.end() - 1)).str() +
            ", found updates shape " + u.shape.str());
    }
  }
}

XPR_FUNC std::vector<std::int64_t> index_values(const Array& idx) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(idx.size()));
  if (idx.dtype() == DType::int32) {
    const std::int32_t* p = idx.data<std::int32_t>();
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = p[i];
  } else {
    const std::int64_t* p = idx.data<std::int64_t>();
    std::copy(p, p + v.size(), v.begin());
  }
  return v;
}

XPR_FUNC bool flag(const Params& p, const char* name) {
  const ParamValue* v = p.find(name);
  const bool* b = v ? std::get_if<bool>(v) : nullptr;
  return b && *b;
}

XPR_FUNC std::optional<std::int64_t> window_start(std::int64_t i, std::int64_t size,
                                                  std::int64_t dim, bool drop) {
  const std::int64_t hi = dim - size;
  if (i >= 0 && i <= hi) return i;
  if (drop) return std::nullopt;
  return i < 0 ? 0 : hi;
}

XPR_FUNC void check_fill_value(const std::string& prim, const Params& p, DType dtype) {
  const ParamValue* v = p.find("fill_value");
  if (!v || std::holds_alternative<None>(*v)) return;
  bool ok = false;
  if (std::holds_alternative<double>(*v)) {
    ok = core::is_floating(dtype);
  } else if (const std::int64_t* i = std::get_if<std::int64_t>(v)) {
    ok = core::is_floating(dtype) || dtype == DType::int64 ||
         (dtype == DType::int32 && *i >= std::numeric_limits<std::int32_t>::min() &&
          *i <= std::numeric_limits<std::int32_t>::max()) ||
         (dtype == DType::bool_ && (*i == 0 || *i == 1));
  } else if (std::holds_alternative<bool>(*v)) {
    ok = true;
  }
  if (!ok)
    throw core::type_error(prim + ": expected fill_value None or a number representable in " +
                           std::string(core::name(dtype)) + ", found another value");
}

}  // namespace xpr::rt::detail::gs

namespace xpr::rt {

XPR_FUNC Arrays Gather::impl(std::span<const Array> args, const Params& params) const {
  detail::check_operand_count(name(), args.size(), 2, " (operand, indices)");
  const Array &x = args[0], &idx = args[1];
  const ShapedArray out = abstract_eval_one(detail::aval_of(x), detail::aval_of(idx), params);
  const auto& dn = params.get<GatherDimensionNumbers>("dimension_numbers");
  const Axes& ss = params.get<Axes>("slice_sizes");
  const bool drop = detail::gs::mode_of(params) == GatherScatterMode::fill_or_drop;
  const std::size_t rank = x.ndim(), batch_rank = idx.ndim() - 1;
  const std::vector<std::int64_t> xs = core::strides_of(x.shape()),
                                  os = core::strides_of(out.shape);
  const std::vector<std::size_t> window =
      detail::gs::window_dims(rank, dn.collapsed_slice_dims, dn.operand_batching_dims);
  std::vector<std::int64_t> wsize, wsrc, wdst;  // per window dimension: size, steps
  for (std::size_t k = 0; k < window.size(); ++k) {
    wsize.push_back(ss[window[k]]);
    wsrc.push_back(xs[window[k]]);
    wdst.push_back(os[static_cast<std::size_t>(dn.offset_dims[k])]);
  }
  std::vector<std::int64_t> bdst;  // per batch dimension: the output step
  for (std::size_t o = 0; o < out.ndim(); ++o)
    if (!detail::gs::contains(dn.offset_dims, static_cast<std::int64_t>(o))) bdst.push_back(os[o]);
  const std::vector<std::int64_t> iv = detail::gs::index_values(idx);
  const std::size_t k_len = dn.start_index_map.size();
  const std::span<const std::int64_t> batch_shape(idx.shape().dims().data(), batch_rank);
  const std::vector<std::int64_t> rows =
      core::strides_of(Shape(std::vector<std::int64_t>(batch_shape.begin(), batch_shape.end())));
  ArrayBuilder b(out);
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* src = x.data<T>();
    T* dst = b.data<T>();
    const T fill = detail::gs::fill_value_as<T>(params);
    detail::gs::walk(batch_shape, rows, bdst, [&](std::int64_t row, std::int64_t dst0) {
      // The window's first element: the clamped starts along start_index_map, the index
      // vector's own coordinates along the batching dimensions.
      bool oob = false;
      std::int64_t src0 = 0;
      for (std::size_t k = 0; k < k_len; ++k) {
        const auto d = static_cast<std::size_t>(dn.start_index_map[k]);
        const auto s = detail::gs::window_start(iv[static_cast<std::size_t>(row) * k_len + k],
                                                ss[d], x.shape()[d], drop);
        if (!s) oob = true;
        src0 += s.value_or(0) * xs[d];
      }
      for (std::size_t i = 0; i < dn.operand_batching_dims.size(); ++i)
        src0 += detail::gs::coordinate(row, batch_shape, rows, dn.start_indices_batching_dims[i]) *
                xs[static_cast<std::size_t>(dn.operand_batching_dims[i])];
      detail::gs::walk(wsize, wsrc, wdst, [&](std::int64_t so, std::int64_t dof) {
        dst[dst0 + dof] = oob ? fill : src[src0 + so];
      });
    });
  });
  return {std::move(b).finish()};
}

XPR_FUNC std::pair<Arrays, Arrays> Gather::jvp(std::span<const Array> primals,
                                               std::span<const Array> tangents,
                                               const Params& params) const {
  detail::check_operand_count(name(), primals.size(), 2, " (operand, indices)");
  Arrays out = rt::bind(*this, primals, params);
  return {out, {bind1(*this, {tangents[0], primals[1]}, tangent_params(params))}};
}

XPR_FUNC std::pair<Arrays, Tangents> Gather::jvp_symbolic(std::span<const Array> primals,
                                                          std::span<const Tangent> tangents,
                                                          const Params& params) const {
  detail::check_operand_count(name(), primals.size(), 2, " (operand, indices)");
  Arrays out = rt::bind(*this, primals, params);
  if (!tangents[0] || !detail::has_tangent_space(detail::aval_of(out[0])))
    return {std::move(out), {std::nullopt}};
  return {std::move(out), {bind1(*this, {*tangents[0], primals[1]}, tangent_params(params))}};
}

XPR_FUNC Params Gather::tangent_params(const Params& params) {
  Params p = params;
  if (detail::gs::mode_of(params) == GatherScatterMode::fill_or_drop)
    p.set("fill_value", std::int64_t{0});
  return p;
}

XPR_FUNC ShapedArray Gather::abstract_eval_one(const ShapedArray& x, const ShapedArray& idx,
                                               const Params& params) const {
  const auto& dn = params.get<GatherDimensionNumbers>("dimension_numbers");
  (void)detail::gs::mode_of(params);
  detail::gs::check_fill_value(name(), params, x.dtype);
  return {detail::gs::gather_shape(name(), x, idx, dn, params.get<Axes>("slice_sizes")), x.dtype,
          x.weak_type};
}

}  // namespace xpr::rt

namespace xpr::rt::detail::gs {

XPR_FUNC const Primitive* combiner(ScatterKind k) {
  switch (k) {
    case ScatterKind::set:
      return nullptr;
    case ScatterKind::add:
      return &add_p;
    case ScatterKind::mul:
      return &mul_p;
    case ScatterKind::min:
      return &min_p;
    case ScatterKind::max:
      break;
  }
  return &max_p;
}

XPR_FUNC JaxprParam update_jaxpr(ScatterKind kind, DType dtype) {
  const Primitive* prim = combiner(kind);
  if (!prim) return nullptr;
  static const auto table = [] {
    std::array<std::array<JaxprParam, core::num_dtypes>, 5> t{};
    for (ScatterKind k : {ScatterKind::add, ScatterKind::mul, ScatterKind::min, ScatterKind::max})
      for (int d = 0; d < core::num_dtypes; ++d) {
        const ShapedArray s{Shape{}, static_cast<DType>(d), false};
        Var a(s), b(s), c(s);
        Jaxpr j{{}, {a, b}, {Eqn{combiner(k), {a, b}, {}, {c}}}, {c}};
        t[static_cast<std::size_t>(k)][static_cast<std::size_t>(d)] =
            std::make_shared<const ClosedJaxpr>(ClosedJaxpr{std::move(j), {}});
      }
    return t;
  }();
  return table[static_cast<std::size_t>(kind)][static_cast<std::size_t>(dtype)];
}

XPR_FUNC Params scatter_params(ScatterKind kind, DType dtype, const ScatterDimensionNumbers& dn,
                               GatherScatterMode mode, bool indices_are_sorted,
                               bool unique_indices) {
  Params p{{"dimension_numbers", dn},
           {"indices_are_sorted", indices_are_sorted},
           {"mode", mode},
           {"unique_indices", unique_indices},
           {"update_consts", Axes{}}};
  if (JaxprParam j = update_jaxpr(kind, dtype))
    p.set("update_jaxpr", std::move(j));
  else
    p.set("update_jaxpr", None{});
  return p;
}

XPR_FUNC std::pair<GatherDimensionNumbers, Axes> inverse_gather(const ScatterDimensionNumbers& dn,
                                                                std::size_t operand_rank,
                                                                const Shape& updates) {
  GatherDimensionNumbers g{dn.update_window_dims, dn.inserted_window_dims,
                           dn.scatter_dims_to_operand_dims, dn.operand_batching_dims,
                           dn.scatter_indices_batching_dims};
  Axes ss;
  std::size_t pos = 0;
  for (std::size_t d = 0; d < operand_rank; ++d) {
    const auto s = static_cast<std::int64_t>(d);
    if (contains(dn.inserted_window_dims, s) || contains(dn.operand_batching_dims, s))
      ss.push_back(1);
    else
      ss.push_back(updates[static_cast<std::size_t>(dn.update_window_dims[pos++])]);
  }
  return {std::move(g), std::move(ss)};
}

}  // namespace xpr::rt::detail::gs

namespace xpr::rt {

XPR_FUNC Array gather(const Array& operand, const Array& indices,
                      const GatherDimensionNumbers& dimension_numbers, const Axes& slice_sizes,
                      GatherScatterMode mode, std::optional<double> fill_value,
                      bool indices_are_sorted, bool unique_indices) {
  ParamValue fill = None{};
  if (mode == GatherScatterMode::fill_or_drop) {
    const DType t = operand.dtype();
    if (!fill_value) {
      if (core::is_floating(t))
        fill = std::numeric_limits<double>::quiet_NaN();
      else if (t == DType::bool_)
        fill = true;
      else
        fill = t == DType::int32 ? std::int64_t{std::numeric_limits<std::int32_t>::min()}
                                 : std::numeric_limits<std::int64_t>::min();
    } else if (core::is_floating(t)) {
      fill = *fill_value;
    } else if (t == DType::bool_) {
      fill = *fill_value != 0.0;
    } else {
      // Converted as NumPy converts to the dtype, with NaN and out-of-range values an error.
      const double v = *fill_value;
      const double lo = t == DType::int32 ? -2147483648.0 : -9223372036854775808.0;
      if (!(v >= lo && v < -lo) || v != std::trunc(v))
        throw core::value_error("gather: fill_value " + std::to_string(v) +
                                " is not representable in " + std::string(core::name(t)));
      fill = static_cast<std::int64_t>(v);
    }
  }
  return bind1(gather_p, {operand, indices},
               {{"dimension_numbers", dimension_numbers},
                {"fill_value", std::move(fill)},
                {"indices_are_sorted", indices_are_sorted},
                {"mode", mode},
                {"slice_sizes", slice_sizes},
                {"unique_indices", unique_indices}});
}

XPR_FUNC Cotangents Gather::transpose(std::span<const Cotangent> cts,
                                      std::span<const LinearArg> args, const Params& params) const {
  detail::check_operand_count(name(), args.size(), 2, " (operand, indices)");
  const Array idx = detail::known_operand(name(), args[1], "the indices");
  const ShapedArray& x = aval_of(args[0]);
  Cotangents out(2);
  if (!is_undefined_primal(args[0])) return out;
  const Array& ct = *cts[0];
  out[0] = detail::fit_cotangent(
      scatter_add(zeros_like_aval({x.shape, ct.dtype(), ct.weak_type()}), idx, ct,
                  detail::gs::scatter_of(params.get<GatherDimensionNumbers>("dimension_numbers")),
                  detail::gs::mode_of(params), detail::gs::flag(params, "indices_are_sorted"),
                  detail::gs::flag(params, "unique_indices")),
      x);
  return out;
}

XPR_FUNC std::pair<Arrays, BatchDims> Gather::batch(std::span<const Array> args,
                                                    std::span<const BatchDim> dims,
                                                    std::int64_t axis_size,
                                                    const Params& params) const {
  detail::check_operand_count(name(), args.size(), 2, " (operand, indices)");
  if (!dims[0] && !dims[1]) return {rt::bind(*this, args, params), {std::nullopt}};
  const ShapedArray xe = dims[0] ? detail::unbatched_aval(detail::aval_of(args[0]), *dims[0])
                                 : detail::aval_of(args[0]);
  const ShapedArray ie = dims[1] ? detail::unbatched_aval(detail::aval_of(args[1]), *dims[1])
                                 : detail::aval_of(args[1]);
  (void)abstract_eval_one(xe, ie, params);
  auto shifted = [](const Axes& a) {
    Axes r;
    for (std::int64_t d : a) r.push_back(d + 1);
    return r;
  };
  auto with_zero = [](Axes a) {
    a.insert(a.begin(), 0);
    return a;
  };
  const auto& dn = params.get<GatherDimensionNumbers>("dimension_numbers");
  GatherDimensionNumbers nd{shifted(dn.offset_dims), shifted(dn.collapsed_slice_dims),
                            shifted(dn.start_index_map), shifted(dn.operand_batching_dims),
                            dn.start_indices_batching_dims};
  Axes ss = params.get<Axes>("slice_sizes");
  Array x = args[0], idx = args[1];
  if (dims[0]) x = moveaxis(x, *dims[0], 0);
  if (dims[1]) idx = moveaxis(idx, *dims[1], 0);
  if (dims[0] && !dims[1]) {
    nd.offset_dims = with_zero(nd.offset_dims);  // the batch axis, a window taken whole
    nd.start_index_map = shifted(dn.start_index_map);
    ss.insert(ss.begin(), axis_size);
  } else if (!dims[0]) {
    nd = {shifted(dn.offset_dims), dn.collapsed_slice_dims, dn.start_index_map,
          dn.operand_batching_dims, shifted(dn.start_indices_batching_dims)};
  } else {
    if (axis_size == 0) {
      // No example to gather from, and gather's shape rule does not allow the size-1 slice of a
      // batching dimension of size 0: the empty result directly, as JAX's batching rule does.
      ShapedArray out = abstract_eval_one(xe, ie, params);
      std::vector<std::int64_t> d{0};
      d.insert(d.end(), out.shape.dims().begin(), out.shape.dims().end());
      out.shape = Shape(std::move(d));
      return {{ArrayBuilder(out).finish()}, {0}};
    }
    nd.operand_batching_dims = with_zero(nd.operand_batching_dims);
    nd.start_indices_batching_dims = with_zero(shifted(dn.start_indices_batching_dims));
    ss.insert(ss.begin(), 1);
  }
  Params p = params;
  p.set("dimension_numbers", nd);
  p.set("slice_sizes", ss);
  return {{bind1(*this, {x, idx}, p)}, {0}};
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
