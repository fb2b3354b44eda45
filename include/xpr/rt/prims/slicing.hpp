// SPDX-License-Identifier: MIT
// The slicing primitives: slice, pad, dynamic_slice, dynamic_update_slice and concatenate, with
// lax's parameters and semantics (negative padding crops; dynamic indices are clamped so the
// window stays inside the operand). Their kernels are strided box copies. All are linear in
// their array operands (jvp applies the primitive to the tangents, indices passed as primals;
// transposes pair them up: slice with pad, dynamic_slice with dynamic_update_slice, concatenate
// with slices); batching extends the params by the batch axis; batched indices become a gather
// or a scatter (gather.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/core/dtype.hpp"
#include "xpr/core/error.hpp"
#include "xpr/core/shape.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/aval.hpp"
#include "xpr/rt/batching.hpp"
#include "xpr/rt/params.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/prims/binary.hpp"
#include "xpr/rt/prims/detail/strided_copy.hpp"
#include "xpr/rt/prims/detail/transpose.hpp"
#include "xpr/rt/prims/gather.hpp"
#include "xpr/rt/prims/select.hpp"
#include "xpr/rt/prims/shape.hpp"
#include "xpr/rt/trace.hpp"
#include "xpr/rt/zeros.hpp"

namespace xpr::rt {

namespace detail {

void check_param_length(const std::string& prim, const char* param, std::size_t found,
                        std::size_t rank);

/// Copies the box `shape` of `src` starting at `start`, read with steps `step`, into `dst` at
/// `dst_start`, written with steps `dst_step` (all in index units; both arrays row-major).
struct Box {
  std::vector<std::int64_t> shape, src_start, src_step, dst_start, dst_step;
  explicit Box(std::size_t rank)
      : shape(rank), src_start(rank, 0), src_step(rank, 1), dst_start(rank, 0), dst_step(rank, 1) {}
};

void copy_box(const std::byte* src, const Shape& src_shape, std::byte* dst, const Shape& dst_shape,
              const Box& box, DType dtype);

/// The scalar value of a dynamic index operand, as int64.
inline std::int64_t index_value(const Array& i) { return i.item<std::int64_t>(); }

/// Checks dynamic_slice / dynamic_update_slice index operands: rank 0, integer dtype.
void check_indices(const std::string& prim, std::span<const ShapedArray> indices, std::size_t rank);

/// The start of a window of `size` in a dimension of `dim`, clamped into [0, dim - size].
inline std::int64_t clamp_start(std::int64_t start, std::int64_t size, std::int64_t dim) {
  return std::clamp<std::int64_t>(start, 0, dim - size);
}

Avals avals_of(std::span<const Array> args);

}  // namespace detail

// ---- slice --------------------------------------------------------------------------------------

/// slice[start_indices, limit_indices, strides](x): the elements start, start + stride, ... below
/// limit in each dimension (`strides` absent means 1). 0 <= start <= limit <= size.
class Slice final : public Primitive {
 public:
  constexpr Slice() : Primitive("slice") {}

  XPR_MEMBER Arrays impl(std::span<const Array> args, const Params& params) const override;

  Avals abstract_eval(std::span<const ShapedArray> args, const Params& params) const override {
    detail::check_operand_count(name(), args.size(), 1);
    return {abstract_eval_one(args[0], params)};
  }

  /// Linear: the tangent is sliced the same way.
  std::pair<Arrays, Arrays> jvp(std::span<const Array> primals, std::span<const Array> tangents,
                                const Params& params) const override {
    detail::check_operand_count(name(), primals.size(), 1);
    return detail::linear_jvp(*this, primals, tangents, params);
  }

  /// Transpose (JAX's `_slice_transpose_rule`): the cotangent padded with zeros back to the
  /// operand's shape, strides becoming interior padding (defined below, after pad).
  XPR_MEMBER Cotangents transpose(std::span<const Cotangent> cts, std::span<const LinearArg> args,
                                  const Params& params) const override;

  /// The batch axis stays in place and is taken whole (start 0, limit its size, stride 1).
  XPR_MEMBER std::pair<Arrays, BatchDims> batch(std::span<const Array> args,
                                                std::span<const BatchDim> dims,
                                                std::int64_t axis_size,
                                                const Params& params) const override;

 private:
  // Absent, or `strides=None`, means unit strides.
  static const Axes* strides(const Params& params) {
    const ParamValue* v = params.find("strides");
    return v ? std::get_if<Axes>(v) : nullptr;
  }
  XPR_MEMBER ShapedArray abstract_eval_one(const ShapedArray& x, const Params& params) const;
};

inline constinit const Slice slice_p{};

// ---- pad ----------------------------------------------------------------------------------------

/// pad[padding_config](x, padding_value): per dimension, `low` values before, `high` after and
/// `interior` between elements; negative low or high remove elements from that end. The output
/// size of a dimension of size d is low + high + d + max(d - 1, 0) · interior.
class Pad final : public Primitive {
 public:
  constexpr Pad() : Primitive("pad") {}

  XPR_MEMBER Arrays impl(std::span<const Array> args, const Params& params) const override;

  Avals abstract_eval(std::span<const ShapedArray> args, const Params& params) const override {
    detail::check_operand_count(name(), args.size(), 2, " (operand, padding_value)");
    return {abstract_eval_one(args[0], args[1], params.get<PaddingConfig>("padding_config"))};
  }

  /// Linear in (operand, padding_value) jointly: the tangents are padded the same way.
  std::pair<Arrays, Arrays> jvp(std::span<const Array> primals, std::span<const Array> tangents,
                                const Params& params) const override {
    detail::check_operand_count(name(), primals.size(), 2, " (operand, padding_value)");
    return detail::linear_jvp(*this, primals, tangents, params);
  }

  /// With symbolic zeros: a zero tangent of the operand or of the padding value becomes zeros.
  XPR_MEMBER std::pair<Arrays, Tangents> jvp_symbolic(std::span<const Array> primals,
                                                      std::span<const Tangent> tangents,
                                                      const Params& params) const override;

  /// Transpose (JAX's `_pad_transpose`): the operand's cotangent is the cotangent with the
  /// padding undone (negated low and high padding, then a slice with stride interior + 1); the
  /// padding value's is the sum of the rest, sum(ct) - sum(operand's cotangent).
  XPR_MEMBER Cotangents transpose(std::span<const Cotangent> cts, std::span<const LinearArg> args,
                                  const Params& params) const override;

  /// An unbatched padding value: the batch axis stays in place, unpadded. A batched one (JAX's
  /// rule too): the operand is padded with zeros and a mask of the padding positions (the same
  /// pad of a false operand with true) selects each example's padding value there.
  XPR_MEMBER std::pair<Arrays, BatchDims> batch(std::span<const Array> args,
                                                std::span<const BatchDim> dims,
                                                std::int64_t axis_size,
                                                const Params& params) const override;

 private:
  XPR_MEMBER ShapedArray abstract_eval_one(const ShapedArray& x, const ShapedArray& v,
                                           const PaddingConfig& cfg) const;
};

inline constinit const Pad pad_p{};

// ---- dynamic_slice ------------------------------------------------------------------------------

/// dynamic_slice[slice_sizes](x, *start_indices): the window of `slice_sizes` at the given rank-0
/// integer indices, each clamped into [0, size - slice_size] so the window stays inside `x`.
class DynamicSlice final : public Primitive {
 public:
  constexpr DynamicSlice() : Primitive("dynamic_slice") {}

  XPR_MEMBER Arrays impl(std::span<const Array> args, const Params& params) const override;

  Avals abstract_eval(std::span<const ShapedArray> args, const Params& params) const override {
    if (args.empty()) throw core::type_error("dynamic_slice expected an operand, found none");
    return {abstract_eval_one(args, params)};
  }

  /// Linear in the operand; the start indices are passed as they are (they have no tangent).
  XPR_MEMBER std::pair<Arrays, Arrays> jvp(std::span<const Array> primals,
                                           std::span<const Array> tangents,
                                           const Params& params) const override;

  /// With symbolic zeros: zero when the operand's tangent is (the indices never have one).
  XPR_MEMBER std::pair<Arrays, Tangents> jvp_symbolic(std::span<const Array> primals,
                                                      std::span<const Tangent> tangents,
                                                      const Params& params) const override;

  /// Transpose: the cotangent written into zeros of the operand's type at the same (clamped)
  /// indices, by dynamic_update_slice (defined below, after it).
  XPR_MEMBER Cotangents transpose(std::span<const Cotangent> cts, std::span<const LinearArg> args,
                                  const Params& params) const override;

  /// Unbatched indices: the batch axis stays in place, taken whole (start 0, size its size).
  /// Batched indices: a gather of one window per example (JAX's rule).
  XPR_MEMBER std::pair<Arrays, BatchDims> batch(std::span<const Array> args,
                                                std::span<const BatchDim> dims,
                                                std::int64_t axis_size,
                                                const Params& params) const override;

 private:
  XPR_MEMBER ShapedArray abstract_eval_one(std::span<const ShapedArray> args,
                                           const Params& params) const;
};

inline constinit const DynamicSlice dynamic_slice_p{};

// ---- dynamic_update_slice -----------------------------------------------------------------------

/// dynamic_update_slice(x, update, *start_indices): `x` with the window at the given indices
/// replaced by `update`; indices are clamped into [0, size - update size] as in dynamic_slice.
class DynamicUpdateSlice final : public Primitive {
 public:
  constexpr DynamicUpdateSlice() : Primitive("dynamic_update_slice") {}

  XPR_MEMBER Arrays impl(std::span<const Array> args, const Params& params) const override;

  Avals abstract_eval(std::span<const ShapedArray> args, const Params& params) const override {
    (void)params;
    return {abstract_eval_one(args)};
  }

  /// Linear in (operand, update) jointly; the start indices are passed as they are.
  XPR_MEMBER std::pair<Arrays, Arrays> jvp(std::span<const Array> primals,
                                           std::span<const Array> tangents,
                                           const Params& params) const override;

  /// With symbolic zeros: zero when both the operand's and the update's tangents are; otherwise
  /// the zero one becomes zeros (a zero update still overwrites its window).
  XPR_MEMBER std::pair<Arrays, Tangents> jvp_symbolic(std::span<const Array> primals,
                                                      std::span<const Tangent> tangents,
                                                      const Params& params) const override;

  /// Transpose (JAX's `_dynamic_update_slice_transpose_rule`): the operand's cotangent is the
  /// cotangent with the update's window zeroed; the update's is that window, by dynamic_slice.
  XPR_MEMBER Cotangents transpose(std::span<const Cotangent> cts, std::span<const LinearArg> args,
                                  const Params& params) const override;

  /// Unbatched indices: operand and update get their batch axis first (an unbatched one is
  /// broadcast) and a start index 0 for it. Batched indices: a scatter of one window per example
  /// (JAX's rule).
  XPR_MEMBER std::pair<Arrays, BatchDims> batch(std::span<const Array> args,
                                                std::span<const BatchDim> dims,
                                                std::int64_t axis_size,
                                                const Params& params) const override;

 private:
  ShapedArray abstract_eval_one(std::span<const ShapedArray> args) const;
};

inline constinit const DynamicUpdateSlice dynamic_update_slice_p{};

// ---- concatenate --------------------------------------------------------------------------------

/// concatenate[dimension](*xs): the operands joined along `dimension`. They share a dtype and a
/// rank, and their shapes agree except along `dimension`.
class Concatenate final : public Primitive {
 public:
  constexpr Concatenate() : Primitive("concatenate") {}

  XPR_MEMBER Arrays impl(std::span<const Array> args, const Params& params) const override;

  Avals abstract_eval(std::span<const ShapedArray> args, const Params& params) const override {
    return {abstract_eval_one(args, params)};
  }

  /// Linear: the tangents are concatenated the same way.
  std::pair<Arrays, Arrays> jvp(std::span<const Array> primals, std::span<const Array> tangents,
                                const Params& params) const override {
    return {rt::bind(*this, primals, params), rt::bind(*this, tangents, params)};
  }

  /// With symbolic zeros: zero when every operand's tangent is; otherwise the zero ones become
  /// zeros.
  XPR_MEMBER std::pair<Arrays, Tangents> jvp_symbolic(std::span<const Array> primals,
                                                      std::span<const Tangent> tangents,
                                                      const Params& params) const override;

  /// Transpose: each undefined operand's cotangent is its block of the cotangent, by slice.
  XPR_MEMBER Cotangents transpose(std::span<const Cotangent> cts, std::span<const LinearArg> args,
                                  const Params& params) const override;

  /// Every operand gets its batch axis first (an unbatched one is broadcast); the dimension
  /// moves right by one.
  XPR_MEMBER std::pair<Arrays, BatchDims> batch(std::span<const Array> args,
                                                std::span<const BatchDim> dims,
                                                std::int64_t axis_size,
                                                const Params& params) const override;

 private:
  XPR_MEMBER ShapedArray abstract_eval_one(std::span<const ShapedArray> args,
                                           const Params& params) const;
};

inline constinit const Concatenate concatenate_p{};

// ---- transpose rules that bind slicing primitives defined after their own ----------------------

// ---- dynamic_slice and dynamic_update_slice with batched start indices --------------------------

namespace detail {

/// The start indices of a dynamic_slice or dynamic_update_slice, some batched, as one index array
/// of shape (n, rank) (JAX's `_batch_dynamic_slice_indices`), in their widest dtype.
Array stacked_start_indices(std::span<const Array> starts, std::span<const BatchDim> dims,
                            std::int64_t n);

Axes iota_axes(std::size_t n);

/// The batching rules for batched start indices, as JAX's: dynamic_slice becomes a gather and
/// dynamic_update_slice a scatter, of one window per example.
std::pair<Arrays, BatchDims> batch_dynamic_slice_as_gather(std::span<const Array> args,
                                                           std::span<const BatchDim> dims,
                                                           std::int64_t axis_size,
                                                           const Axes& slice_sizes);

std::pair<Arrays, BatchDims> batch_dynamic_update_slice_as_scatter(std::span<const Array> args,
                                                                   std::span<const BatchDim> dims,
                                                                   std::int64_t axis_size);

}  // namespace detail

// ---- batching rules that bind other slicing primitives --------------------------------------

namespace detail {

/// Whether any of the start indices `dims[first:]` is batched.
bool indices_batched(std::span<const BatchDim> dims, std::size_t first);

/// A rank-0 start index 0 of the dtype of the first index in `indices` (int32 if there is none).
inline Array zero_index(std::span<const Array> indices) {
  return zeros_like_aval({Shape{}, indices.empty() ? DType::int32 : indices[0].dtype(), false});
}

}  // namespace detail

}  // namespace xpr::rt

#if XPR_DEFINITIONS

namespace xpr::rt::detail {

XPR_FUNC void check_param_length(const std::string& prim, const char* param, std::size_t found,
                                 std::size_t rank) {
  if (found != rank)
    throw core::shape_error(prim + ": expected " + param + " of length " + std::to_string(rank) +
                            " (the operand's rank), found length " + std::to_string(found));
}

XPR_FUNC void copy_box(const std::byte* src, const Shape& src_shape, std::byte* dst,
                       const Shape& dst_shape, const Box& box, DType dtype) {
  std::vector<std::int64_t> ss = core::strides_of(src_shape), ds = core::strides_of(dst_shape);
  std::int64_t so = 0, doff = 0;
  for (std::size_t i = 0; i < box.shape.size(); ++i) {
    so += box.src_start[i] * ss[i];
    doff += box.dst_start[i] * ds[i];
    // A step along a dimension that takes at most one element is never taken, and may be huge
    // (`strides=(2^62,)`): leave it out. Other steps stay inside the arrays, so they fit.
    ss[i] = box.shape[i] <= 1 ? 0 : ss[i] * box.src_step[i];
    ds[i] = box.shape[i] <= 1 ? 0 : ds[i] * box.dst_step[i];
  }
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    strided_box_copy(reinterpret_cast<const T*>(src) + so, std::span<const std::int64_t>(ss),
                     reinterpret_cast<T*>(dst) + doff, std::span<const std::int64_t>(ds),
                     std::span<const std::int64_t>(box.shape));
  });
}

XPR_FUNC void check_indices(const std::string& prim, std::span<const ShapedArray> indices,
                            std::size_t rank) {
  if (indices.size() != rank)
    throw core::type_error(prim + ": expected " + std::to_string(rank) +
                           " start indices (the operand's rank), found " +
                           std::to_string(indices.size()));
  for (std::size_t i = 0; i < indices.size(); ++i) {
    if (!core::is_integer(indices[i].dtype))
      throw core::dtype_error(prim +
                              ": expected start indices of an integer dtype (int32 or "
                              "int64), found index " +
                              std::to_string(i) + " of dtype " +
                              std::string(core::name(indices[i].dtype)));
    if (indices[i].ndim() != 0)
      throw core::shape_error(prim + ": expected rank-0 start indices, found index " +
                              std::to_string(i) + " of shape " + indices[i].shape.str());
  }
}

XPR_FUNC Avals avals_of(std::span<const Array> args) {
  Avals out;
  out.reserve(args.size());
  for (const Array& a : args) out.push_back(detail::aval_of(a));
  return out;
}

}  // namespace xpr::rt::detail

namespace xpr::rt {

XPR_FUNC Arrays Slice::impl(std::span<const Array> args, const Params& params) const {
  detail::check_operand_count(name(), args.size(), 1);
  const Array& x = args[0];
  ShapedArray out = abstract_eval_one(detail::aval_of(x), params);
  ArrayBuilder b(out);
  detail::Box box(x.ndim());
  box.shape = out.shape.dims();
  box.src_start = params.get<Axes>("start_indices");
  if (const Axes* st = strides(params)) box.src_step = *st;
  detail::copy_box(detail::bytes_of(x), x.shape(), b.bytes(), out.shape, box, x.dtype());
  return {std::move(b).finish()};
}

XPR_FUNC std::pair<Arrays, BatchDims> Slice::batch(std::span<const Array> args,
                                                   std::span<const BatchDim> dims,
                                                   std::int64_t axis_size,
                                                   const Params& params) const {
  detail::check_operand_count(name(), args.size(), 1);
  if (!dims[0]) return {rt::bind(*this, args, params), {std::nullopt}};
  const std::int64_t b = *dims[0];
  (void)abstract_eval_one(detail::unbatched_aval(detail::aval_of(args[0]), b), params);
  auto with = [b](Axes axes, std::int64_t v) {
    axes.insert(axes.begin() + b, v);
    return axes;
  };
  Params p{{"start_indices", with(params.get<Axes>("start_indices"), 0)},
           {"limit_indices", with(params.get<Axes>("limit_indices"), axis_size)}};
  if (const Axes* st = strides(params)) p.set("strides", with(*st, 1));
  return {{bind1(*this, {args[0]}, p)}, {b}};
}

XPR_FUNC ShapedArray Slice::abstract_eval_one(const ShapedArray& x, const Params& params) const {
  const Axes& start = params.get<Axes>("start_indices");
  const Axes& limit = params.get<Axes>("limit_indices");
  const Axes* st = strides(params);
  detail::check_param_length(name(), "start_indices", start.size(), x.ndim());
  detail::check_param_length(name(), "limit_indices", limit.size(), x.ndim());
  if (st) detail::check_param_length(name(), "strides", st->size(), x.ndim());
  std::vector<std::int64_t> dims(x.ndim());
  for (std::size_t i = 0; i < x.ndim(); ++i) {
    if (start[i] < 0 || start[i] > limit[i] || limit[i] > x.shape[i])
      throw core::index_error(
          "slice: expected 0 <= start_indices <= limit_indices <= " + std::to_string(x.shape[i]) +
          " along dimension " + std::to_string(i) + " of shape " + x.shape.str() +
          ", found start " + std::to_string(start[i]) + " and limit " + std::to_string(limit[i]));
    std::int64_t step = st ? (*st)[i] : 1;
    if (step <= 0)
      throw core::value_error("slice: expected positive strides, found " + std::to_string(step) +
                              " along dimension " + std::to_string(i));
    // ceil((limit - start) / step), without `+ step - 1`, which overflows for huge strides.
    const std::int64_t extent = limit[i] - start[i];
    dims[i] = extent / step + (extent % step != 0);
  }
  return {Shape(std::move(dims)), x.dtype, x.weak_type};
}

XPR_FUNC Arrays Pad::impl(std::span<const Array> args, const Params& params) const {
  detail::check_operand_count(name(), args.size(), 2, " (operand, padding_value)");
  const Array &x = args[0], &v = args[1];
  const auto& cfg = params.get<PaddingConfig>("padding_config");
  ShapedArray out = abstract_eval_one(detail::aval_of(x), detail::aval_of(v), cfg);
  ArrayBuilder b(out);
  auto n = out.shape.size();
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    std::fill(b.data<T>(), b.data<T>() + n, v.data<T>()[0]);
  });
  if (n == 0 || x.size() == 0) return {std::move(b).finish()};
  // Each dimension keeps the operand indices whose destination lo + i·(interior + 1) is inside.
  detail::Box box(x.ndim());
  for (std::size_t i = 0; i < x.ndim(); ++i) {
    // Checked: the amounts come from the caller (or a jaxpr text) and may be extreme.
    const char* what = "pad: padding_config";
    std::int64_t lo = cfg.dims[i][0], step = core::checked_add(cfg.dims[i][2], 1, what),
                 d = x.shape()[i], od = out.shape[i];
    std::int64_t first = 0;
    if (lo < 0) {
      const std::int64_t cut = core::checked_neg(lo, what);  // elements cut from the front
      first = cut / step + (cut % step != 0);
    }
    const std::int64_t room = core::checked_sub(od - 1, lo, what);
    std::int64_t last = room < 0 ? -1 : std::min(d - 1, room / step);
    if (last < first) return {std::move(b).finish()};
    box.shape[i] = last - first + 1;
    box.src_start[i] = first;
    box.dst_start[i] = lo + first * step;
    box.dst_step[i] = step;
  }
  detail::copy_box(detail::bytes_of(x), x.shape(), b.bytes(), out.shape, box, x.dtype());
  return {std::move(b).finish()};
}

XPR_FUNC std::pair<Arrays, Tangents> Pad::jvp_symbolic(std::span<const Array> primals,
                                                       std::span<const Tangent> tangents,
                                                       const Params& params) const {
  detail::check_operand_count(name(), primals.size(), 2, " (operand, padding_value)");
  Arrays out = rt::bind(*this, primals, params);
  if (!detail::has_tangent_space(detail::aval_of(out[0])) || detail::all_zero(tangents))
    return {std::move(out), {std::nullopt}};
  Array t = rt::bind(*this, detail::instantiate_zeros(primals, tangents), params)[0];
  return {std::move(out), {detail::fit_tangent(std::move(t), detail::aval_of(out[0]))}};
}

XPR_FUNC Cotangents Pad::transpose(std::span<const Cotangent> cts, std::span<const LinearArg> args,
                                   const Params& params) const {
  detail::check_operand_count(name(), args.size(), 2, " (operand, padding_value)");
  Cotangents out(2);
  if (!is_undefined_primal(args[0]) && !is_undefined_primal(args[1])) return out;
  const auto& cfg = params.get<PaddingConfig>("padding_config");
  const Array& ct = *cts[0];
  PaddingConfig unpad;
  for (const auto& [lo, hi, interior] : cfg.dims)
    unpad.dims.push_back({core::checked_neg(lo, "pad transpose: low padding"),
                          core::checked_neg(hi, "pad transpose: high padding"), 0});
  const Array zero = zeros_like_aval({Shape{}, ct.dtype(), ct.weak_type()});
  Array unpadded = bind1(*this, {ct, zero}, {{"padding_config", std::move(unpad)}});
  Axes start(ct.ndim(), 0), limit(unpadded.shape().begin(), unpadded.shape().end()), strides;
  for (const auto& d : cfg.dims) strides.push_back(d[2] + 1);
  Array operand_ct = bind1(slice_p, {unpadded},
                           {{"start_indices", std::move(start)},
                            {"limit_indices", std::move(limit)},
                            {"strides", std::move(strides)}});
  if (is_undefined_primal(args[1]))
    out[1] = detail::fit_cotangent(bind1(sub_p, {detail::sum_all(ct), detail::sum_all(operand_ct)}),
                                   aval_of(args[1]));
  if (is_undefined_primal(args[0])) out[0] = detail::fit_cotangent(operand_ct, aval_of(args[0]));
  return out;
}

XPR_FUNC ShapedArray Pad::abstract_eval_one(const ShapedArray& x, const ShapedArray& v,
                                            const PaddingConfig& cfg) const {
  if (v.dtype != x.dtype)
    throw core::dtype_error("pad: expected padding_value of the operand's dtype " +
                            std::string(core::name(x.dtype)) + ", found " +
                            std::string(core::name(v.dtype)));
  if (v.ndim() != 0)
    throw core::shape_error("pad: expected a rank-0 padding_value, found shape " + v.shape.str());
  detail::check_param_length(name(), "padding_config", cfg.dims.size(), x.ndim());
  std::vector<std::int64_t> dims(x.ndim());
  for (std::size_t i = 0; i < x.ndim(); ++i) {
    auto [lo, hi, interior] = cfg.dims[i];
    if (interior < 0)
      throw core::value_error("pad: expected non-negative interior padding, found " +
                              std::to_string(interior) + " along dimension " + std::to_string(i));
    std::int64_t d = x.shape[i];
    // Checked: extreme amounts (from a jaxpr text, say) must not wrap into a plausible size.
    const char* what = "pad: the padded size";
    dims[i] = core::checked_add(core::checked_add(core::checked_add(lo, hi, what), d, what),
                                core::checked_mul(std::max<std::int64_t>(d - 1, 0), interior, what),
                                what);
    if (dims[i] < 0)
      throw core::shape_error("pad: expected a padded size >= 0, found " + std::to_string(dims[i]) +
                              " for dimension " + std::to_string(i) + " of size " +
                              std::to_string(d) + " padded with (low=" + std::to_string(lo) +
                              ", high=" + std::to_string(hi) +
                              ", interior=" + std::to_string(interior) + ")");
  }
  return {Shape(std::move(dims)), x.dtype, x.weak_type && v.weak_type};
}

XPR_FUNC Arrays DynamicSlice::impl(std::span<const Array> args, const Params& params) const {
  if (args.empty()) throw core::type_error("dynamic_slice expected an operand, found none");
  Avals avals = detail::avals_of(args);
  ShapedArray out = abstract_eval_one(avals, params);
  const Array& x = args[0];
  ArrayBuilder b(out);
  detail::Box box(x.ndim());
  box.shape = out.shape.dims();
  for (std::size_t i = 0; i < x.ndim(); ++i)
    box.src_start[i] =
        detail::clamp_start(detail::index_value(args[i + 1]), box.shape[i], x.shape()[i]);
  detail::copy_box(detail::bytes_of(x), x.shape(), b.bytes(), out.shape, box, x.dtype());
  return {std::move(b).finish()};
}

XPR_FUNC std::pair<Arrays, Arrays> DynamicSlice::jvp(std::span<const Array> primals,
                                                     std::span<const Array> tangents,
                                                     const Params& params) const {
  if (primals.empty()) throw core::type_error("dynamic_slice expected an operand, found none");
  Arrays t_args(primals.begin(), primals.end());
  t_args[0] = tangents[0];
  return {rt::bind(*this, primals, params), rt::bind(*this, t_args, params)};
}

XPR_FUNC std::pair<Arrays, Tangents> DynamicSlice::jvp_symbolic(std::span<const Array> primals,
                                                                std::span<const Tangent> tangents,
                                                                const Params& params) const {
  if (primals.empty()) throw core::type_error("dynamic_slice expected an operand, found none");
  Arrays out = rt::bind(*this, primals, params);
  if (!tangents[0] || !detail::has_tangent_space(detail::aval_of(out[0])))
    return {std::move(out), {std::nullopt}};
  Arrays t_args(primals.begin(), primals.end());
  t_args[0] = *tangents[0];
  return {std::move(out), {rt::bind(*this, t_args, params)[0]}};
}

XPR_FUNC ShapedArray DynamicSlice::abstract_eval_one(std::span<const ShapedArray> args,
                                                     const Params& params) const {
  const ShapedArray& x = args[0];
  detail::check_indices(name(), args.subspan(1), x.ndim());
  const Axes& sizes = params.get<Axes>("slice_sizes");
  detail::check_param_length(name(), "slice_sizes", sizes.size(), x.ndim());
  for (std::size_t i = 0; i < x.ndim(); ++i)
    if (sizes[i] < 0 || sizes[i] > x.shape[i])
      throw core::shape_error(
          "dynamic_slice: expected 0 <= slice_sizes <= operand shape, found "
          "slice size " +
          std::to_string(sizes[i]) + " along dimension " + std::to_string(i) + " of shape " +
          x.shape.str());
  return {Shape(sizes), x.dtype, x.weak_type};
}

XPR_FUNC Arrays DynamicUpdateSlice::impl(std::span<const Array> args, const Params& params) const {
  (void)params;
  Avals avals = detail::avals_of(args);
  ShapedArray out = abstract_eval_one(avals);
  const Array &x = args[0], &u = args[1];
  ArrayBuilder b(out);
  std::memcpy(b.bytes(), detail::bytes_of(x),
              static_cast<std::size_t>(x.size()) * core::itemsize(x.dtype()));
  detail::Box box(x.ndim());
  box.shape = u.shape().dims();
  for (std::size_t i = 0; i < x.ndim(); ++i)
    box.dst_start[i] =
        detail::clamp_start(detail::index_value(args[i + 2]), box.shape[i], x.shape()[i]);
  detail::copy_box(detail::bytes_of(u), u.shape(), b.bytes(), out.shape, box, x.dtype());
  return {std::move(b).finish()};
}

XPR_FUNC std::pair<Arrays, Arrays> DynamicUpdateSlice::jvp(std::span<const Array> primals,
                                                           std::span<const Array> tangents,
                                                           const Params& params) const {
  (void)abstract_eval_one(detail::avals_of(primals));
  Arrays t_args(primals.begin(), primals.end());
  t_args[0] = tangents[0];
  t_args[1] = tangents[1];
  return {rt::bind(*this, primals, params), rt::bind(*this, t_args, params)};
}

XPR_FUNC std::pair<Arrays, Tangents> DynamicUpdateSlice::jvp_symbolic(
    std::span<const Array> primals, std::span<const Tangent> tangents, const Params& params) const {
  Avals avals = detail::avals_of(primals);
  (void)abstract_eval_one(avals);
  Arrays out = rt::bind(*this, primals, params);
  if (!detail::has_tangent_space(detail::aval_of(out[0])) || (!tangents[0] && !tangents[1]))
    return {std::move(out), {std::nullopt}};
  Arrays t_args(primals.begin(), primals.end());
  for (std::size_t i = 0; i < 2; ++i)
    t_args[i] = tangents[i] ? *tangents[i] : zeros_like_aval(avals[i]);
  return {std::move(out), {rt::bind(*this, t_args, params)[0]}};
}

XPR_FUNC Cotangents DynamicUpdateSlice::transpose(std::span<const Cotangent> cts,
                                                  std::span<const LinearArg> args,
                                                  const Params& params) const {
  if (args.size() < 2)
    throw core::type_error("dynamic_update_slice expected an operand and an update, found " +
                           std::to_string(args.size()) + " operands");
  const Array& ct = *cts[0];
  const ShapedArray& update = aval_of(args[1]);
  Arrays indices = detail::known_operands(name(), args, 2);
  Cotangents out(args.size());
  if (is_undefined_primal(args[0])) {
    Arrays ops{ct, zeros_like_aval({update.shape, ct.dtype(), ct.weak_type()})};
    ops.insert(ops.end(), indices.begin(), indices.end());
    out[0] = detail::fit_cotangent(rt::bind(*this, ops, params)[0], aval_of(args[0]));
  }
  if (is_undefined_primal(args[1])) {
    Arrays ops{ct};
    ops.insert(ops.end(), indices.begin(), indices.end());
    out[1] = detail::fit_cotangent(
        rt::bind(dynamic_slice_p, ops, {{"slice_sizes", update.shape.dims()}})[0], update);
  }
  return out;
}

XPR_FUNC ShapedArray
DynamicUpdateSlice::abstract_eval_one(std::span<const ShapedArray> args) const {
  if (args.size() < 2)
    throw core::type_error("dynamic_update_slice expected an operand and an update, found " +
                           std::to_string(args.size()) + " operands");
  const ShapedArray &x = args[0], &u = args[1];
  if (u.dtype != x.dtype)
    throw core::dtype_error("dynamic_update_slice: expected an update of the operand's dtype " +
                            std::string(core::name(x.dtype)) + ", found " +
                            std::string(core::name(u.dtype)));
  if (u.ndim() != x.ndim())
    throw core::shape_error("dynamic_update_slice: expected an update of the operand's rank " +
                            std::to_string(x.ndim()) + ", found shape " + u.shape.str());
  for (std::size_t i = 0; i < x.ndim(); ++i)
    if (u.shape[i] > x.shape[i])
      throw core::shape_error(
          "dynamic_update_slice: expected an update no larger than the "
          "operand in each dimension, found update shape " +
          u.shape.str() + " and operand shape " + x.shape.str());
  detail::check_indices(name(), args.subspan(2), x.ndim());
  return {x.shape, x.dtype, x.weak_type};
}

XPR_FUNC Arrays Concatenate::impl(std::span<const Array> args, const Params& params) const {
  Avals avals = detail::avals_of(args);
  ShapedArray out = abstract_eval_one(avals, params);
  auto dim = static_cast<std::size_t>(params.get<std::int64_t>("dimension"));
  ArrayBuilder b(out);
  // Each operand contributes one contiguous block per index of the dimensions before `dim`.
  std::int64_t outer = 1;
  for (std::size_t i = 0; i < dim; ++i) outer *= out.shape[i];
  std::size_t item = core::itemsize(out.dtype);
  std::size_t out_row = static_cast<std::size_t>(out.size() / std::max<std::int64_t>(outer, 1));
  std::size_t offset = 0;
  for (const Array& x : args) {
    if (x.size() == 0) continue;
    std::size_t row = static_cast<std::size_t>(x.size() / outer) * item;
    const std::byte* src = detail::bytes_of(x);
    for (std::int64_t o = 0; o < outer; ++o)
      std::memcpy(b.bytes() + static_cast<std::size_t>(o) * out_row * item + offset,
                  src + static_cast<std::size_t>(o) * row, row);
    offset += row;
  }
  return {std::move(b).finish()};
}

XPR_FUNC std::pair<Arrays, Tangents> Concatenate::jvp_symbolic(std::span<const Array> primals,
                                                               std::span<const Tangent> tangents,
                                                               const Params& params) const {
  Arrays out = rt::bind(*this, primals, params);
  if (!detail::has_tangent_space(detail::aval_of(out[0])) || detail::all_zero(tangents))
    return {std::move(out), {std::nullopt}};
  Array t = rt::bind(*this, detail::instantiate_zeros(primals, tangents), params)[0];
  return {std::move(out), {detail::fit_tangent(std::move(t), detail::aval_of(out[0]))}};
}

XPR_FUNC Cotangents Concatenate::transpose(std::span<const Cotangent> cts,
                                           std::span<const LinearArg> args,
                                           const Params& params) const {
  const Array& ct = *cts[0];
  const auto dim = static_cast<std::size_t>(params.get<std::int64_t>("dimension"));
  Cotangents out(args.size());
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const ShapedArray& a = aval_of(args[i]);
    const std::int64_t size = a.shape[dim];
    if (is_undefined_primal(args[i])) {
      Axes start(ct.ndim(), 0), limit(ct.shape().begin(), ct.shape().end());
      start[dim] = offset;
      limit[dim] = offset + size;
      out[i] = detail::fit_cotangent(
          bind1(slice_p, {ct},
                {{"start_indices", std::move(start)}, {"limit_indices", std::move(limit)}}),
          a);
    }
    offset += size;
  }
  return out;
}

XPR_FUNC std::pair<Arrays, BatchDims> Concatenate::batch(std::span<const Array> args,
                                                         std::span<const BatchDim> dims,
                                                         std::int64_t axis_size,
                                                         const Params& params) const {
  bool any = false;
  for (const BatchDim& d : dims) any = any || d.has_value();
  if (!any) return {rt::bind(*this, args, params), {std::nullopt}};
  Avals examples;
  Arrays operands;
  for (std::size_t i = 0; i < args.size(); ++i) {
    examples.push_back(dims[i] ? detail::unbatched_aval(detail::aval_of(args[i]), *dims[i])
                               : detail::aval_of(args[i]));
    operands.push_back(bdim_at_front(args[i], dims[i], axis_size));
  }
  (void)abstract_eval_one(examples, params);
  return {rt::bind(*this, operands, {{"dimension", params.get<std::int64_t>("dimension") + 1}}),
          {0}};
}

XPR_FUNC ShapedArray Concatenate::abstract_eval_one(std::span<const ShapedArray> args,
                                                    const Params& params) const {
  if (args.empty())
    throw core::value_error("concatenate: expected at least one operand, found none");
  std::int64_t dim = params.get<std::int64_t>("dimension");
  const ShapedArray& first = args[0];
  auto rank = static_cast<std::int64_t>(first.ndim());
  if (dim < 0 || dim >= rank)
    throw core::index_error("concatenate: dimension " + std::to_string(dim) +
                            " is out of bounds for operands of rank " + std::to_string(rank) +
                            " (expected 0 <= dimension < " + std::to_string(rank) + ")");
  std::vector<std::int64_t> dims = first.shape.dims();
  dims[static_cast<std::size_t>(dim)] = 0;
  bool weak = true;
  for (const ShapedArray& a : args) {
    if (a.dtype != first.dtype)
      throw core::dtype_error("concatenate: expected operands of one dtype, found " +
                              std::string(core::name(first.dtype)) + " and " +
                              std::string(core::name(a.dtype)));
    bool same = a.ndim() == first.ndim();
    for (std::size_t i = 0; same && i < a.ndim(); ++i)
      same = static_cast<std::int64_t>(i) == dim || a.shape[i] == first.shape[i];
    if (!same)
      throw core::shape_error(
          "concatenate: expected operands of equal shapes except along "
          "dimension " +
          std::to_string(dim) + ", found shapes " + first.shape.str() + " and " + a.shape.str());
    dims[static_cast<std::size_t>(dim)] =
        core::checked_add(dims[static_cast<std::size_t>(dim)],
                          a.shape[static_cast<std::size_t>(dim)], "concatenate: the result size");
    weak = weak && a.weak_type;
  }
  return {Shape(std::move(dims)), first.dtype, weak};
}

XPR_FUNC Cotangents Slice::transpose(std::span<const Cotangent> cts,
                                     std::span<const LinearArg> args, const Params& params) const {
  detail::check_operand_count(name(), args.size(), 1);
  const ShapedArray& x = aval_of(args[0]);
  const Array& ct = *cts[0];
  const Axes& start = params.get<Axes>("start_indices");
  const Axes* st = strides(params);
  PaddingConfig cfg;
  for (std::size_t i = 0; i < x.ndim(); ++i) {
    const std::int64_t step = st ? (*st)[i] : 1, n = ct.shape()[i];
    // The limit that the last taken element implies (the given one may be up to step - 1 more).
    const std::int64_t real_limit = start[i] + (n == 0 ? 0 : 1 + (n - 1) * step);
    cfg.dims.push_back({start[i], x.shape[i] - real_limit, step - 1});
  }
  const Array zero = zeros_like_aval({Shape{}, ct.dtype(), ct.weak_type()});
  return {detail::fit_cotangent(bind1(pad_p, {ct, zero}, {{"padding_config", std::move(cfg)}}), x)};
}

XPR_FUNC Cotangents DynamicSlice::transpose(std::span<const Cotangent> cts,
                                            std::span<const LinearArg> args, const Params&) const {
  if (args.empty()) throw core::type_error("dynamic_slice expected an operand, found none");
  const ShapedArray& x = aval_of(args[0]);
  Arrays ops{zeros_like_aval(x), *cts[0]};
  Arrays indices = detail::known_operands(name(), args, 1);
  ops.insert(ops.end(), indices.begin(), indices.end());
  Cotangents out(args.size());
  out[0] = detail::fit_cotangent(rt::bind(dynamic_update_slice_p, ops)[0], x);
  return out;
}

}  // namespace xpr::rt

namespace xpr::rt::detail {

XPR_FUNC Array stacked_start_indices(std::span<const Array> starts, std::span<const BatchDim> dims,
                                     std::int64_t n) {
  DType t = DType::int32;
  for (const Array& s : starts)
    if (s.dtype() == DType::int64) t = DType::int64;
  Arrays cols;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    Array c = bdim_at_front(convert_element_type(starts[i], t), dims[i], n);
    cols.push_back(broadcast_in_dim(c, Shape{n, 1}, Axes{0}));
  }
  if (cols.size() == 1) return cols[0];
  return rt::bind(concatenate_p, cols, {{"dimension", std::int64_t{1}}})[0];
}

XPR_FUNC Axes iota_axes(std::size_t n) {
  Axes a(n);
  for (std::size_t i = 0; i < n; ++i) a[i] = static_cast<std::int64_t>(i);
  return a;
}

XPR_FUNC std::pair<Arrays, BatchDims> batch_dynamic_slice_as_gather(std::span<const Array> args,
                                                                    std::span<const BatchDim> dims,
                                                                    std::int64_t axis_size,
                                                                    const Axes& slice_sizes) {
  const std::size_t rank = args.size() - 1;
  Array idx = stacked_start_indices(args.subspan(1), dims.subspan(1), axis_size);
  const Axes all = iota_axes(rank);
  Params p{{"dimension_numbers", GatherDimensionNumbers{all, {}, all, {}, {}}},
           {"fill_value", None{}},
           {"indices_are_sorted", true},
           {"mode", GatherScatterMode::promise_in_bounds},
           {"slice_sizes", slice_sizes},
           {"unique_indices", true}};
  const Array ops[2] = {args[0], idx};
  const BatchDim bds[2] = {dims[0], 0};
  return gather_p.batch(ops, bds, axis_size, p);
}

XPR_FUNC std::pair<Arrays, BatchDims> batch_dynamic_update_slice_as_scatter(
    std::span<const Array> args, std::span<const BatchDim> dims, std::int64_t axis_size) {
  const std::size_t rank = args.size() - 2;
  Array idx = stacked_start_indices(args.subspan(2), dims.subspan(2), axis_size);
  const Axes all = iota_axes(rank);
  const Params p = gs::scatter_params(ScatterKind::set, args[0].dtype(),
                                      ScatterDimensionNumbers{all, {}, all, {}, {}},
                                      GatherScatterMode::clip, true, true);
  const Array ops[3] = {args[0], idx, args[1]};
  const BatchDim bds[3] = {dims[0], 0, dims[1]};
  return scatter_p.batch(ops, bds, axis_size, p);
}

XPR_FUNC bool indices_batched(std::span<const BatchDim> dims, std::size_t first) {
  for (std::size_t i = first; i < dims.size(); ++i)
    if (dims[i]) return true;
  return false;
}

}  // namespace xpr::rt::detail

namespace xpr::rt {

XPR_FUNC std::pair<Arrays, BatchDims> Pad::batch(std::span<const Array> args,
                                                 std::span<const BatchDim> dims,
                                                 std::int64_t axis_size,
                                                 const Params& params) const {
  detail::check_operand_count(name(), args.size(), 2, " (operand, padding_value)");
  if (!dims[0] && !dims[1]) return {rt::bind(*this, args, params), {std::nullopt}};
  const auto& cfg = params.get<PaddingConfig>("padding_config");
  const ShapedArray example = dims[0] ? detail::unbatched_aval(detail::aval_of(args[0]), *dims[0])
                                      : detail::aval_of(args[0]);
  const ShapedArray value = dims[1] ? detail::unbatched_aval(detail::aval_of(args[1]), *dims[1])
                                    : detail::aval_of(args[1]);
  const ShapedArray out = abstract_eval_one(example, value, cfg);
  auto with_batch_axis = [&](std::int64_t b) {
    PaddingConfig c = cfg;
    c.dims.insert(c.dims.begin() + b, {0, 0, 0});
    return c;
  };
  if (!dims[1]) {
    const std::int64_t b = *dims[0];
    return {{bind1(*this, {args[0], args[1]}, {{"padding_config", with_batch_axis(b)}})}, {b}};
  }
  Array x = bdim_at_front(args[0], dims[0], axis_size);
  Array zero = zeros_like_aval({Shape{}, value.dtype, value.weak_type});
  Array padded = bind1(*this, {x, zero}, {{"padding_config", with_batch_axis(0)}});
  ArrayBuilder yes(ShapedArray{Shape{}, DType::bool_, false});
  yes.data<bool>()[0] = true;
  Array mask =
      bind1(*this, {zeros_like_aval({example.shape, DType::bool_, false}), std::move(yes).finish()},
            params);
  Shape full = detail::insert_dim(out.shape, 0, axis_size);
  Array values = broadcast_in_dim(moveaxis(args[1], *dims[1], 0), full, Axes{0});
  return {{bind1(select_n_p, {broadcast_batch(mask, axis_size, 0), padded, values})}, {0}};
}

XPR_FUNC std::pair<Arrays, BatchDims> DynamicSlice::batch(std::span<const Array> args,
                                                          std::span<const BatchDim> dims,
                                                          std::int64_t axis_size,
                                                          const Params& params) const {
  if (args.empty()) throw core::type_error("dynamic_slice expected an operand, found none");
  if (detail::indices_batched(dims, 1)) {
    Avals examples = detail::avals_of(args);
    for (std::size_t i = 0; i < args.size(); ++i)
      if (dims[i]) examples[i] = detail::unbatched_aval(examples[i], *dims[i]);
    (void)abstract_eval_one(examples, params);
    return detail::batch_dynamic_slice_as_gather(args, dims, axis_size,
                                                 params.get<Axes>("slice_sizes"));
  }
  if (!dims[0]) return {rt::bind(*this, args, params), {std::nullopt}};
  const std::int64_t b = *dims[0];
  Avals examples = detail::avals_of(args);
  examples[0] = detail::unbatched_aval(examples[0], b);
  (void)abstract_eval_one(examples, params);
  Arrays operands(args.begin(), args.end());
  operands.insert(operands.begin() + 1 + b, detail::zero_index(args.subspan(1)));
  Axes sizes = params.get<Axes>("slice_sizes");
  sizes.insert(sizes.begin() + b, axis_size);
  return {rt::bind(*this, operands, {{"slice_sizes", std::move(sizes)}}), {b}};
}

XPR_FUNC std::pair<Arrays, BatchDims> DynamicUpdateSlice::batch(std::span<const Array> args,
                                                                std::span<const BatchDim> dims,
                                                                std::int64_t axis_size,
                                                                const Params& params) const {
  if (args.size() < 2 || (!dims[0] && !dims[1] && !detail::indices_batched(dims, 2)))
    return {rt::bind(*this, args, params), {std::nullopt}};
  if (detail::indices_batched(dims, 2)) {
    Avals examples = detail::avals_of(args);
    for (std::size_t i = 0; i < args.size(); ++i)
      if (dims[i]) examples[i] = detail::unbatched_aval(examples[i], *dims[i]);
    (void)abstract_eval_one(examples);
    return detail::batch_dynamic_update_slice_as_scatter(args, dims, axis_size);
  }
  Avals examples = detail::avals_of(args);
  for (std::size_t i = 0; i < 2; ++i)
    if (dims[i]) examples[i] = detail::unbatched_aval(examples[i], *dims[i]);
  (void)abstract_eval_one(examples);
  Arrays operands{bdim_at_front(args[0], dims[0], axis_size),
                  bdim_at_front(args[1], dims[1], axis_size), detail::zero_index(args.subspan(2))};
  operands.insert(operands.end(), args.begin() + 2, args.end());
  return {rt::bind(*this, operands, params), {0}};
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
