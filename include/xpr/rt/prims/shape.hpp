// SPDX-License-Identifier: MIT
// The shape primitives: broadcast_in_dim, reshape, transpose, squeeze, expand_dims, with the
// lax-level functions their rules bind them through (`broadcast_in_dim`, `detail::transpose_axes`,
// ...); jax.numpy's functions on them are in rt/numpy_shape.hpp. Reshapes that keep the row-major
// order share the operand's buffer.
// All five are linear (jvp applies the primitive to the tangent, transpose undoes the shape
// change on the cotangent); batching adjusts their params.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/core/error.hpp"
#include "xpr/core/shape.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/params.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/prims/detail/transpose.hpp"
#include "xpr/rt/trace.hpp"

namespace xpr::rt {

namespace detail {

/// `(1, 0)`: a tuple of axes as Python prints it, for error messages.
std::string axes_str(std::span<const std::int64_t> axes);

inline void check_one_operand(const std::string& prim, std::size_t n) {
  if (n != 1) throw core::type_error(prim + " expected 1 operand, found " + std::to_string(n));
}

/// `type_error` unless a primitive of `expected` operands (`what` says which) got `found`.
void check_operand_count(const std::string& prim, std::size_t found, std::size_t expected,
                         const char* what = "");

/// Whether `perm` is a permutation of 0..rank-1.
bool is_permutation(std::span<const std::int64_t> perm, std::size_t rank);

bool is_iota(std::span<const std::int64_t> axes);

/// `axes` canonicalized against `rank` (negative axes count from the end; `index_error` when out
/// of range) and checked for repeats (`value_error`), sorted.
std::vector<std::size_t> unique_axes(const std::string& prim, const Axes& axes, std::size_t rank);

/// out[j] = in[sum_k j_k * in_strides[k]] for every row-major multi-index j of `out_shape`; a
/// zero stride repeats the operand along that dimension. The innermost dimension is one copy,
/// fill or strided loop.
template <class E>
void strided_copy(const E* in, E* out, const Shape& out_shape,
                  std::span<const std::int64_t> in_strides) {
  const std::size_t rank = out_shape.rank();
  const std::int64_t total = out_shape.size();
  if (total == 0) return;
  if (rank == 0) {
    out[0] = in[0];
    return;
  }
  const std::int64_t inner = out_shape[rank - 1], step = in_strides[rank - 1];
  std::vector<std::int64_t> index(rank - 1, 0);
  std::int64_t offset = 0;
  for (std::int64_t row = 0, rows = total / inner; row < rows; ++row, out += inner) {
    const E* src = in + offset;
    if (step == 1)
      std::copy(src, src + inner, out);
    else if (step == 0)
      std::fill(out, out + inner, *src);
    else
      for (std::int64_t j = 0; j < inner; ++j) out[j] = src[j * step];
    for (std::size_t k = rank - 1; k-- > 0;) {  // the odometer over the outer dimensions
      offset += in_strides[k];
      if (++index[k] < out_shape[k]) break;
      offset -= in_strides[k] * out_shape[k];
      index[k] = 0;
    }
  }
}

/// The elements of `x` gathered into a new array of type `aval` by `strided_copy`.
Array gather_strided(const Array& x, ShapedArray aval, std::span<const std::int64_t> in_strides);

/// The elements' bytes (throws `concretization_error` for a tracer whose value is not known).
const std::byte* bytes_of(const Array& x);

/// `x`'s elements in the same row-major order under another type of equal size: shares `x`'s
/// buffer when it has one (arrays are immutable), copies the few inline bytes otherwise.
Array same_elements(const Array& x, ShapedArray aval);

/// The jvp rule of a linear primitive of one operand: the primitive applied to the tangent.
inline std::pair<Arrays, Arrays> linear_jvp(const Primitive& prim, std::span<const Array> primals,
                                            std::span<const Array> tangents, const Params& params) {
  return {rt::bind(prim, primals, params), rt::bind(prim, tangents, params)};
}

/// The per-example type of a value batched along axis `bd`.
ShapedArray unbatched_aval(ShapedArray aval, std::int64_t bd);

/// `s` with a dimension of size `n` inserted at position `at`.
Shape insert_dim(const Shape& s, std::int64_t at, std::int64_t n);

/// Axis `d` of a per-example value as an axis of the batched value whose batch axis is `bd`.
inline std::int64_t skip_batch_axis(std::int64_t d, std::int64_t bd) { return d < bd ? d : d + 1; }

}  // namespace detail

// ---- broadcast_in_dim[shape, broadcast_dimensions] ------------------------------------------

/// broadcast_in_dim[shape, broadcast_dimensions](x): operand dimension `i` becomes result
/// dimension `broadcast_dimensions[i]` (strictly increasing), where it has size 1 (repeated) or
/// the result's size; the other result dimensions repeat the operand.
class BroadcastInDim final : public Primitive {
 public:
  constexpr BroadcastInDim() : Primitive("broadcast_in_dim") {}

  XPR_MEMBER Arrays impl(std::span<const Array> args, const Params& params) const override;

  Avals abstract_eval(std::span<const ShapedArray> args, const Params& params) const override {
    detail::check_one_operand(name(), args.size());
    return {abstract_eval_one(args[0], params)};
  }

  /// Linear: the tangent is broadcast the same way.
  std::pair<Arrays, Arrays> jvp(std::span<const Array> primals, std::span<const Array> tangents,
                                const Params& params) const override {
    return detail::linear_jvp(*this, primals, tangents, params);
  }

  /// Transpose: the inverse shape change applied to the cotangent (defined below, after the
  /// primitives it binds).
  XPR_MEMBER Cotangents transpose(std::span<const Cotangent> cts, std::span<const LinearArg> args,
                                  const Params& params) const override;

  /// The batch axis stays where it is in the operand and is placed in the result right after the
  /// dimension that receives the operand dimension before it (first if there is none), so
  /// `broadcast_dimensions` stay increasing and no transpose is needed.
  XPR_MEMBER std::pair<Arrays, BatchDims> batch(std::span<const Array> args,
                                                std::span<const BatchDim> dims,
                                                std::int64_t axis_size,
                                                const Params& params) const override;

 private:
  XPR_MEMBER ShapedArray abstract_eval_one(const ShapedArray& x, const Params& params) const;
};

inline constinit const BroadcastInDim broadcast_in_dim_p{};

// ---- transpose[permutation] -----------------------------------------------------------------

/// transpose[permutation](x): result dimension `i` is operand dimension `permutation[i]`.
class Transpose final : public Primitive {
 public:
  constexpr Transpose() : Primitive("transpose") {}

  XPR_MEMBER Arrays impl(std::span<const Array> args, const Params& params) const override;

  Avals abstract_eval(std::span<const ShapedArray> args, const Params& params) const override {
    detail::check_one_operand(name(), args.size());
    return {abstract_eval_one(args[0], params)};
  }

  /// Linear: the tangent is transposed the same way.
  std::pair<Arrays, Arrays> jvp(std::span<const Array> primals, std::span<const Array> tangents,
                                const Params& params) const override {
    return detail::linear_jvp(*this, primals, tangents, params);
  }

  /// Transpose: the inverse shape change applied to the cotangent (defined below, after the
  /// primitives it binds).
  XPR_MEMBER Cotangents transpose(std::span<const Cotangent> cts, std::span<const LinearArg> args,
                                  const Params& params) const override;

  /// The batch axis keeps its position; the permutation moves the other axes around it.
  XPR_MEMBER std::pair<Arrays, BatchDims> batch(std::span<const Array> args,
                                                std::span<const BatchDim> dims, std::int64_t,
                                                const Params& params) const override;

  /// The elements of `x` with its dimensions permuted (`out` is the result's type).
  XPR_MEMBER static Array permuted(const Array& x, ShapedArray out, const Axes& perm);

  /// The result type, or `value_error` if `perm` is not a permutation of the operand's axes.
  XPR_MEMBER static ShapedArray permuted_aval(const std::string& prim, const ShapedArray& x,
                                              const Axes& perm);

 private:
  ShapedArray abstract_eval_one(const ShapedArray& x, const Params& params) const {
    return permuted_aval(name(), x, params.get<Axes>("permutation"));
  }
};

inline constinit const Transpose transpose_p{};

// ---- reshape[new_sizes, dimensions] ---------------------------------------------------------

/// reshape[new_sizes, dimensions](x): the elements in row-major order under the shape
/// `new_sizes` (of equal size). `dimensions` is `None` (also when absent) or a permutation by
/// which the operand is transposed first, as in JAX.
class Reshape final : public Primitive {
 public:
  constexpr Reshape() : Primitive("reshape") {}

  XPR_MEMBER Arrays impl(std::span<const Array> args, const Params& params) const override;

  Avals abstract_eval(std::span<const ShapedArray> args, const Params& params) const override {
    detail::check_one_operand(name(), args.size());
    return {abstract_eval_one(args[0], params)};
  }

  /// Linear: the tangent is reshaped the same way.
  std::pair<Arrays, Arrays> jvp(std::span<const Array> primals, std::span<const Array> tangents,
                                const Params& params) const override {
    return detail::linear_jvp(*this, primals, tangents, params);
  }

  /// Transpose: the inverse shape change applied to the cotangent (defined below, after the
  /// primitives it binds).
  XPR_MEMBER Cotangents transpose(std::span<const Cotangent> cts, std::span<const LinearArg> args,
                                  const Params& params) const override;

  /// As JAX does: the batch axis is moved to the front, becomes the first of `new_sizes`, and
  /// `dimensions` (when given) keeps it first.
  XPR_MEMBER std::pair<Arrays, BatchDims> batch(std::span<const Array> args,
                                                std::span<const BatchDim> dims,
                                                std::int64_t axis_size,
                                                const Params& params) const override;

 private:
  /// The `dimensions` permutation, or null for `None`.
  XPR_MEMBER const Axes* dimensions(const Params& params) const;
  XPR_MEMBER ShapedArray abstract_eval_one(const ShapedArray& x, const Params& params) const;
};

inline constinit const Reshape reshape_p{};

// ---- squeeze[dimensions] --------------------------------------------------------------------

/// squeeze[dimensions](x): removes the listed dimensions, each of size 1.
class Squeeze final : public Primitive {
 public:
  constexpr Squeeze() : Primitive("squeeze") {}

  Arrays impl(std::span<const Array> args, const Params& params) const override {
    detail::check_one_operand(name(), args.size());
    return {detail::same_elements(args[0], abstract_eval_one(detail::aval_of(args[0]), params))};
  }

  Avals abstract_eval(std::span<const ShapedArray> args, const Params& params) const override {
    detail::check_one_operand(name(), args.size());
    return {abstract_eval_one(args[0], params)};
  }

  /// Linear: the tangent is squeezed the same way.
  std::pair<Arrays, Arrays> jvp(std::span<const Array> primals, std::span<const Array> tangents,
                                const Params& params) const override {
    return detail::linear_jvp(*this, primals, tangents, params);
  }

  /// Transpose: the inverse shape change applied to the cotangent (defined below, after the
  /// primitives it binds).
  XPR_MEMBER Cotangents transpose(std::span<const Cotangent> cts, std::span<const LinearArg> args,
                                  const Params& params) const override;

  /// The squeezed dimensions skip the batch axis, which moves left past those before it.
  XPR_MEMBER std::pair<Arrays, BatchDims> batch(std::span<const Array> args,
                                                std::span<const BatchDim> dims, std::int64_t,
                                                const Params& params) const override;

 private:
  XPR_MEMBER ShapedArray abstract_eval_one(const ShapedArray& x, const Params& params) const;
};

inline constinit const Squeeze squeeze_p{};

// ---- expand_dims[dimensions] ----------------------------------------------------------------

/// expand_dims[dimensions](x): inserts a dimension of size 1 at each listed position of the
/// result (whose rank is the operand's plus the number of dimensions).
class ExpandDims final : public Primitive {
 public:
  constexpr ExpandDims() : Primitive("expand_dims") {}

  Arrays impl(std::span<const Array> args, const Params& params) const override {
    detail::check_one_operand(name(), args.size());
    return {detail::same_elements(args[0], abstract_eval_one(detail::aval_of(args[0]), params))};
  }

  Avals abstract_eval(std::span<const ShapedArray> args, const Params& params) const override {
    detail::check_one_operand(name(), args.size());
    return {abstract_eval_one(args[0], params)};
  }

  /// Linear: the tangent is expanded the same way.
  std::pair<Arrays, Arrays> jvp(std::span<const Array> primals, std::span<const Array> tangents,
                                const Params& params) const override {
    return detail::linear_jvp(*this, primals, tangents, params);
  }

  /// Transpose: the inverse shape change applied to the cotangent (defined below, after the
  /// primitives it binds).
  XPR_MEMBER Cotangents transpose(std::span<const Cotangent> cts, std::span<const LinearArg> args,
                                  const Params& params) const override;

  /// The batch axis is placed in the result right after the operand dimension before it (first
  /// if there is none), and the inserted dimensions skip it.
  XPR_MEMBER std::pair<Arrays, BatchDims> batch(std::span<const Array> args,
                                                std::span<const BatchDim> dims, std::int64_t,
                                                const Params& params) const override;

 private:
  XPR_MEMBER ShapedArray abstract_eval_one(const ShapedArray& x, const Params& params) const;
};

inline constinit const ExpandDims expand_dims_p{};

// ---- lax-level functions the rules bind the shape primitives with ----------------------------

/// `lax.broadcast_in_dim`; no equation when nothing changes.
Array broadcast_in_dim(const Array& x, const Shape& shape, const Axes& broadcast_dimensions);

namespace detail {

/// `x` broadcast to `shape` with its dimensions aligned to the right (the caller has checked that
/// they fit: each 1 or equal); no equation when nothing changes.
Array broadcast_trailing(const Array& x, const Shape& shape);

/// `lax.transpose`: no equation for the identity permutation.
inline Array transpose_axes(const Array& x, Axes perm) {
  if (is_iota(perm)) return x;
  return bind1(transpose_p, {x}, {{"permutation", std::move(perm)}});
}

/// `lax.reshape` to `sizes` (no `dimensions`): no equation when the shape does not change.
inline Array reshape_to(const Array& x, const Shape& sizes) {
  if (sizes == x.shape()) return x;
  return bind1(reshape_p, {x}, {{"new_sizes", sizes}, {"dimensions", None{}}});
}

/// `lax.squeeze` of the sorted, distinct axes `dims`: no equation when there are none.
inline Array squeeze_axes(const Array& x, Axes dims) {
  if (dims.empty()) return x;
  return bind1(squeeze_p, {x}, {{"dimensions", std::move(dims)}});
}

/// `lax.expand_dims` at the sorted, distinct result positions `dims`: no equation when there are
/// none.
inline Array expand_axes(const Array& x, Axes dims) {
  if (dims.empty()) return x;
  return bind1(expand_dims_p, {x}, {{"dimensions", std::move(dims)}});
}

/// A tangent computed from only some of an operation's operand tangents, made the tangent of an
/// output of type `out`: broadcast where it came from rank-0 operands only, and given the output's
/// weak-type flag (so a rule that drops zero terms types its result as the full formula does).
inline Array fit_tangent(Array t, const ShapedArray& out) {
  if (t.shape() != out.shape) t = broadcast_trailing(t, out.shape);
  return convert_element_type(t, out.dtype, out.weak_type);
}

}  // namespace detail

// ---- transpose rules, which bind the shape primitives above ---------------------------------

}  // namespace xpr::rt

#if XPR_DEFINITIONS

namespace xpr::rt::detail {

XPR_FUNC std::string axes_str(std::span<const std::int64_t> axes) {
  std::ostringstream os;
  os << '(';
  for (std::size_t i = 0; i < axes.size(); ++i) os << (i ? ", " : "") << axes[i];
  if (axes.size() == 1) os << ',';
  os << ')';
  return os.str();
}

XPR_FUNC void check_operand_count(const std::string& prim, std::size_t found, std::size_t expected,
                                  const char* what) {
  if (found != expected)
    throw core::type_error(prim + " expected " + std::to_string(expected) + " operands" + what +
                           ", found " + std::to_string(found));
}

XPR_FUNC bool is_permutation(std::span<const std::int64_t> perm, std::size_t rank) {
  if (perm.size() != rank) return false;
  std::vector<bool> seen(rank, false);
  for (std::int64_t p : perm) {
    if (p < 0 || p >= static_cast<std::int64_t>(rank) || seen[static_cast<std::size_t>(p)])
      return false;
    seen[static_cast<std::size_t>(p)] = true;
  }
  return true;
}

XPR_FUNC bool is_iota(std::span<const std::int64_t> axes) {
  for (std::size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != static_cast<std::int64_t>(i)) return false;
  return true;
}

XPR_FUNC std::vector<std::size_t> unique_axes(const std::string& prim, const Axes& axes,
                                              std::size_t rank) {
  std::vector<std::size_t> out;
  for (std::int64_t a : axes) {
    try {
      out.push_back(core::canonicalize_axis(a, rank));
    } catch (const core::index_error& e) {
      throw core::index_error(prim + ": " + e.what());
    }
  }
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end())
    throw core::value_error(prim + ": expected distinct dimensions, found repeated ones in " +
                            axes_str(axes));
  return out;
}

XPR_FUNC Array gather_strided(const Array& x, ShapedArray aval,
                              std::span<const std::int64_t> in_strides) {
  ArrayBuilder b(std::move(aval));
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    strided_copy(x.data<T>(), b.data<T>(), b.aval().shape, in_strides);
  });
  return std::move(b).finish();
}

XPR_FUNC const std::byte* bytes_of(const Array& x) {
  return dispatch_dtype(x.dtype(), [&](auto tag) {
    return reinterpret_cast<const std::byte*>(x.data<decltype(tag)>());
  });
}

XPR_FUNC Array same_elements(const Array& x, ShapedArray aval) {
  const auto* bytes = dispatch_dtype(x.dtype(), [&](auto tag) {
    return reinterpret_cast<const std::byte*>(x.data<decltype(tag)>());  // throws for tracers
  });
  const std::shared_ptr<std::byte>& owner = x.concrete()->owner();
  if (owner) return Array(std::make_shared<ConcreteArray>(std::move(aval), owner, bytes));
  ArrayBuilder b(std::move(aval));
  std::memcpy(b.bytes(), bytes, x.concrete()->nbytes());
  return std::move(b).finish();
}

XPR_FUNC ShapedArray unbatched_aval(ShapedArray aval, std::int64_t bd) {
  std::vector<std::int64_t> dims(aval.shape.begin(), aval.shape.end());
  dims.erase(dims.begin() + bd);
  aval.shape = Shape(std::move(dims));
  return aval;
}

XPR_FUNC Shape insert_dim(const Shape& s, std::int64_t at, std::int64_t n) {
  std::vector<std::int64_t> dims(s.begin(), s.end());
  dims.insert(dims.begin() + at, n);
  return Shape(std::move(dims));
}

}  // namespace xpr::rt::detail

namespace xpr::rt {

XPR_FUNC Arrays BroadcastInDim::impl(std::span<const Array> args, const Params& params) const {
  detail::check_one_operand(name(), args.size());
  const Array& x = args[0];
  ShapedArray out = abstract_eval_one(detail::aval_of(x), params);
  if (out.shape == x.shape()) return {x};
  const Axes& dims = params.get<Axes>("broadcast_dimensions");
  std::vector<std::int64_t> in_strides(out.shape.rank(), 0);
  const std::vector<std::int64_t> x_strides = core::strides_of(x.shape());
  for (std::size_t i = 0; i < dims.size(); ++i)
    if (x.shape()[i] != 1) in_strides[static_cast<std::size_t>(dims[i])] = x_strides[i];
  return {detail::gather_strided(x, std::move(out), in_strides)};
}

XPR_FUNC std::pair<Arrays, BatchDims> BroadcastInDim::batch(std::span<const Array> args,
                                                            std::span<const BatchDim> dims,
                                                            std::int64_t axis_size,
                                                            const Params& params) const {
  detail::check_one_operand(name(), args.size());
  if (!dims[0]) return {rt::bind(*this, args, params), {std::nullopt}};
  const std::int64_t b = *dims[0];
  // Malformed params are reported against the per-example shape, as without vmap.
  (void)abstract_eval_one(detail::unbatched_aval(detail::aval_of(args[0]), b), params);
  const Axes& bdims = params.get<Axes>("broadcast_dimensions");
  const std::int64_t at = b == 0 ? 0 : bdims[static_cast<std::size_t>(b - 1)] + 1;
  Axes new_dims;
  for (std::size_t i = 0; i < bdims.size(); ++i) {
    if (static_cast<std::int64_t>(i) == b) new_dims.push_back(at);
    new_dims.push_back(detail::skip_batch_axis(bdims[i], at));
  }
  if (b == static_cast<std::int64_t>(bdims.size())) new_dims.push_back(at);
  Shape shape = detail::insert_dim(params.get<Shape>("shape"), at, axis_size);
  return {{bind1(*this, {args[0]},
                 {{"shape", std::move(shape)}, {"broadcast_dimensions", std::move(new_dims)}})},
          {at}};
}

XPR_FUNC ShapedArray BroadcastInDim::abstract_eval_one(const ShapedArray& x,
                                                       const Params& params) const {
  const Shape& shape = params.get<Shape>("shape");
  const Axes& dims = params.get<Axes>("broadcast_dimensions");
  const std::string where = "broadcast_in_dim of operand shape " + x.shape.str() + " to shape " +
                            shape.str() + " with broadcast_dimensions " + detail::axes_str(dims);
  if (dims.size() != x.ndim())
    throw core::shape_error(where + ": expected " + std::to_string(x.ndim()) +
                            " broadcast dimension(s), one per operand dimension, found " +
                            std::to_string(dims.size()));
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0 || dims[i] >= static_cast<std::int64_t>(shape.rank()))
      throw core::index_error(where + ": expected broadcast dimensions in [0, " +
                              std::to_string(shape.rank()) + "), found " + std::to_string(dims[i]));
    if (i > 0 && dims[i] <= dims[i - 1])
      throw core::value_error(where + ": expected strictly increasing broadcast dimensions");
    std::int64_t want = shape[static_cast<std::size_t>(dims[i])];
    if (x.shape[i] != 1 && x.shape[i] != want)
      throw core::shape_error(where + ": expected operand dimension " + std::to_string(i) +
                              " to have size 1 or " + std::to_string(want) + ", found " +
                              std::to_string(x.shape[i]));
  }
  return {shape, x.dtype, x.weak_type};
}

XPR_FUNC Arrays Transpose::impl(std::span<const Array> args, const Params& params) const {
  detail::check_one_operand(name(), args.size());
  const Array& x = args[0];
  ShapedArray out = abstract_eval_one(detail::aval_of(x), params);
  const Axes& perm = params.get<Axes>("permutation");
  if (detail::is_iota(perm)) return {x};
  return {permuted(x, std::move(out), perm)};
}

XPR_FUNC std::pair<Arrays, BatchDims> Transpose::batch(std::span<const Array> args,
                                                       std::span<const BatchDim> dims, std::int64_t,
                                                       const Params& params) const {
  detail::check_one_operand(name(), args.size());
  if (!dims[0]) return {rt::bind(*this, args, params), {std::nullopt}};
  const std::int64_t b = *dims[0];
  (void)abstract_eval_one(detail::unbatched_aval(detail::aval_of(args[0]), b), params);
  const Axes& perm = params.get<Axes>("permutation");
  Axes new_perm;
  for (std::size_t j = 0; j < perm.size(); ++j) {
    if (static_cast<std::int64_t>(j) == b) new_perm.push_back(b);
    new_perm.push_back(detail::skip_batch_axis(perm[j], b));
  }
  if (b == static_cast<std::int64_t>(perm.size())) new_perm.push_back(b);
  return {{bind1(*this, {args[0]}, {{"permutation", std::move(new_perm)}})}, {b}};
}

XPR_FUNC Array Transpose::permuted(const Array& x, ShapedArray out, const Axes& perm) {
  std::vector<std::int64_t> x_strides = core::strides_of(x.shape()), in_strides(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i)
    in_strides[i] = x_strides[static_cast<std::size_t>(perm[i])];
  return detail::gather_strided(x, std::move(out), in_strides);
}

XPR_FUNC ShapedArray Transpose::permuted_aval(const std::string& prim, const ShapedArray& x,
                                              const Axes& perm) {
  if (!detail::is_permutation(perm, x.ndim()))
    throw core::value_error(prim + ": expected a permutation of the operand's " +
                            std::to_string(x.ndim()) + " axes, found " + detail::axes_str(perm) +
                            " for operand shape " + x.shape.str());
  Shape s;
  for (std::int64_t p : perm) s.push_back(x.shape[static_cast<std::size_t>(p)]);
  return {s, x.dtype, x.weak_type};
}

XPR_FUNC Arrays Reshape::impl(std::span<const Array> args, const Params& params) const {
  detail::check_one_operand(name(), args.size());
  const Array& x = args[0];
  ShapedArray out = abstract_eval_one(detail::aval_of(x), params);
  const Axes* dims = dimensions(params);
  if (!dims || detail::is_iota(*dims)) return {detail::same_elements(x, std::move(out))};
  Array t =
      Transpose::permuted(x, Transpose::permuted_aval(name(), detail::aval_of(x), *dims), *dims);
  return {detail::same_elements(t, std::move(out))};
}

XPR_FUNC std::pair<Arrays, BatchDims> Reshape::batch(std::span<const Array> args,
                                                     std::span<const BatchDim> dims,
                                                     std::int64_t axis_size,
                                                     const Params& params) const {
  detail::check_one_operand(name(), args.size());
  if (!dims[0]) return {rt::bind(*this, args, params), {std::nullopt}};
  const std::int64_t b = *dims[0];
  (void)abstract_eval_one(detail::unbatched_aval(detail::aval_of(args[0]), b), params);
  Array x = args[0];
  if (b != 0) {
    Axes to_front{b};
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(x.ndim()); ++i)
      if (i != b) to_front.push_back(i);
    x = bind1(transpose_p, {x}, {{"permutation", std::move(to_front)}});
  }
  Params batched = params;
  batched.set("new_sizes", detail::insert_dim(params.get<Shape>("new_sizes"), 0, axis_size));
  if (const Axes* perm = dimensions(params)) {
    Axes shifted{0};
    for (std::int64_t p : *perm) shifted.push_back(p + 1);
    batched.set("dimensions", std::move(shifted));
  }
  return {{bind1(*this, {x}, batched)}, {0}};
}

XPR_FUNC const Axes* Reshape::dimensions(const Params& params) const {
  const ParamValue* v = params.find("dimensions");
  if (!v || std::holds_alternative<None>(*v)) return nullptr;
  return &params.get<Axes>("dimensions");  // type_error for any other kind of value
}

XPR_FUNC ShapedArray Reshape::abstract_eval_one(const ShapedArray& x, const Params& params) const {
  const Shape& sizes = params.get<Shape>("new_sizes");
  if (const Axes* dims = dimensions(params)) (void)Transpose::permuted_aval(name(), x, *dims);
  if (sizes.size() != x.size())
    throw core::shape_error("reshape: cannot reshape array of shape " + x.shape.str() + " (size " +
                            std::to_string(x.size()) + ") into shape " + sizes.str() + " (size " +
                            std::to_string(sizes.size()) + "): expected equal sizes");
  return {sizes, x.dtype, x.weak_type};
}

XPR_FUNC std::pair<Arrays, BatchDims> Squeeze::batch(std::span<const Array> args,
                                                     std::span<const BatchDim> dims, std::int64_t,
                                                     const Params& params) const {
  detail::check_one_operand(name(), args.size());
  if (!dims[0]) return {rt::bind(*this, args, params), {std::nullopt}};
  const std::int64_t b = *dims[0];
  const ShapedArray example = detail::unbatched_aval(detail::aval_of(args[0]), b);
  (void)abstract_eval_one(example, params);
  Axes new_dims;
  std::int64_t out = b;
  for (std::size_t d :
       detail::unique_axes(name(), params.get<Axes>("dimensions"), example.ndim())) {
    const auto a = static_cast<std::int64_t>(d);
    if (a < b) --out;
    new_dims.push_back(detail::skip_batch_axis(a, b));
  }
  return {{bind1(*this, {args[0]}, {{"dimensions", std::move(new_dims)}})}, {out}};
}

XPR_FUNC ShapedArray Squeeze::abstract_eval_one(const ShapedArray& x, const Params& params) const {
  std::vector<std::size_t> drop =
      detail::unique_axes(name(), params.get<Axes>("dimensions"), x.ndim());
  Shape s;
  for (std::size_t i = 0, k = 0; i < x.ndim(); ++i) {
    if (k < drop.size() && drop[k] == i) {
      ++k;
      if (x.shape[i] != 1)
        throw core::shape_error("squeeze: expected dimension " + std::to_string(i) +
                                " of operand shape " + x.shape.str() +
                                " to have size 1, found size " + std::to_string(x.shape[i]));
      continue;
    }
    s.push_back(x.shape[i]);
  }
  return {s, x.dtype, x.weak_type};
}

XPR_FUNC std::pair<Arrays, BatchDims> ExpandDims::batch(std::span<const Array> args,
                                                        std::span<const BatchDim> dims,
                                                        std::int64_t, const Params& params) const {
  detail::check_one_operand(name(), args.size());
  if (!dims[0]) return {rt::bind(*this, args, params), {std::nullopt}};
  const std::int64_t b = *dims[0];
  const ShapedArray example = detail::unbatched_aval(detail::aval_of(args[0]), b);
  (void)abstract_eval_one(example, params);
  const Axes& axes = params.get<Axes>("dimensions");
  const std::vector<std::size_t> add =
      detail::unique_axes(name(), axes, example.ndim() + axes.size());
  // The result position of operand dimension b - 1: walk the result, skipping inserted ones.
  std::int64_t at = 0;
  for (std::size_t i = 0, k = 0, operand = 0; b > 0; ++i) {
    if (k < add.size() && add[k] == i) {
      ++k;
    } else if (static_cast<std::int64_t>(++operand) == b) {
      at = static_cast<std::int64_t>(i) + 1;
      break;
    }
  }
  Axes new_dims;
  for (std::size_t d : add)
    new_dims.push_back(detail::skip_batch_axis(static_cast<std::int64_t>(d), at));
  return {{bind1(*this, {args[0]}, {{"dimensions", std::move(new_dims)}})}, {at}};
}

XPR_FUNC ShapedArray ExpandDims::abstract_eval_one(const ShapedArray& x,
                                                   const Params& params) const {
  const Axes& dims = params.get<Axes>("dimensions");
  std::vector<std::size_t> add = detail::unique_axes(name(), dims, x.ndim() + dims.size());
  Shape s;
  for (std::size_t i = 0, k = 0, j = 0; i < x.ndim() + dims.size(); ++i) {
    if (k < add.size() && add[k] == i) {
      ++k;
      s.push_back(1);
    } else {
      s.push_back(x.shape[j++]);
    }
  }
  return {s, x.dtype, x.weak_type};
}

XPR_FUNC Array broadcast_in_dim(const Array& x, const Shape& shape,
                                const Axes& broadcast_dimensions) {
  if (x.shape() == shape && detail::is_iota(broadcast_dimensions) &&
      broadcast_dimensions.size() == x.ndim())
    return x;
  return bind1(broadcast_in_dim_p, {x},
               {{"shape", shape}, {"broadcast_dimensions", broadcast_dimensions}});
}

}  // namespace xpr::rt

namespace xpr::rt::detail {

XPR_FUNC Array broadcast_trailing(const Array& x, const Shape& shape) {
  const std::size_t lead = shape.rank() - x.ndim();
  Axes dims(x.ndim());
  for (std::size_t i = 0; i < dims.size(); ++i) dims[i] = static_cast<std::int64_t>(lead + i);
  return broadcast_in_dim(x, shape, dims);
}

}  // namespace xpr::rt::detail

namespace xpr::rt {

/// broadcast_in_dim (JAX's `_broadcast_in_dim_transpose_rule`): the cotangent summed over the
/// result dimensions the operand did not provide, and over those where an operand dimension of
/// size 1 was repeated; those come back as size 1.
XPR_FUNC Cotangents BroadcastInDim::transpose(std::span<const Cotangent> cts,
                                              std::span<const LinearArg> args,
                                              const Params& params) const {
  detail::check_one_operand(name(), args.size());
  const ShapedArray& x = aval_of(args[0]);
  const Array& ct = *cts[0];
  const Axes& bdims = params.get<Axes>("broadcast_dimensions");
  std::vector<bool> keep(ct.ndim(), false);
  Axes repeated;  // operand dimensions of size 1 broadcast to another size
  for (std::size_t i = 0; i < x.ndim(); ++i) {
    const auto d = static_cast<std::size_t>(bdims[i]);
    if (x.shape[i] == 1 && ct.shape()[d] != 1)
      repeated.push_back(static_cast<std::int64_t>(i));
    else
      keep[d] = true;
  }
  Axes summed;
  for (std::size_t d = 0; d < keep.size(); ++d)
    if (!keep[d]) summed.push_back(static_cast<std::int64_t>(d));
  Array out = detail::sum_axes(ct, std::move(summed));
  out = detail::expand_axes(out, std::move(repeated));
  return {detail::fit_cotangent(out, x)};
}

/// transpose: the inverse permutation.
XPR_FUNC Cotangents Transpose::transpose(std::span<const Cotangent> cts,
                                         std::span<const LinearArg> args,
                                         const Params& params) const {
  detail::check_one_operand(name(), args.size());
  const Axes& perm = params.get<Axes>("permutation");
  Axes inverse(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i)
    inverse[static_cast<std::size_t>(perm[i])] = static_cast<std::int64_t>(i);
  return {
      detail::fit_cotangent(detail::transpose_axes(*cts[0], std::move(inverse)), aval_of(args[0]))};
}

/// reshape: the cotangent reshaped back; with `dimensions`, reshaped to the transposed operand's
/// shape and transposed back (JAX's `_reshape_transpose_rule`).
XPR_FUNC Cotangents Reshape::transpose(std::span<const Cotangent> cts,
                                       std::span<const LinearArg> args,
                                       const Params& params) const {
  detail::check_one_operand(name(), args.size());
  const ShapedArray& x = aval_of(args[0]);
  const Axes* dims = dimensions(params);
  if (!dims) return {detail::fit_cotangent(detail::reshape_to(*cts[0], x.shape), x)};
  Shape permuted;
  Axes inverse(dims->size());
  for (std::size_t i = 0; i < dims->size(); ++i) {
    permuted.push_back(x.shape[static_cast<std::size_t>((*dims)[i])]);
    inverse[static_cast<std::size_t>((*dims)[i])] = static_cast<std::int64_t>(i);
  }
  return {detail::fit_cotangent(
      detail::transpose_axes(detail::reshape_to(*cts[0], permuted), std::move(inverse)), x)};
}

/// squeeze: the removed dimensions inserted back (expand_dims).
XPR_FUNC Cotangents Squeeze::transpose(std::span<const Cotangent> cts,
                                       std::span<const LinearArg> args,
                                       const Params& params) const {
  detail::check_one_operand(name(), args.size());
  const ShapedArray& x = aval_of(args[0]);
  Axes dims;
  for (std::size_t d : detail::unique_axes(name(), params.get<Axes>("dimensions"), x.ndim()))
    dims.push_back(static_cast<std::int64_t>(d));
  return {detail::fit_cotangent(detail::expand_axes(*cts[0], std::move(dims)), x)};
}

/// expand_dims: the inserted dimensions removed (squeeze).
XPR_FUNC Cotangents ExpandDims::transpose(std::span<const Cotangent> cts,
                                          std::span<const LinearArg> args,
                                          const Params& params) const {
  detail::check_one_operand(name(), args.size());
  const ShapedArray& x = aval_of(args[0]);
  const Axes& dims = params.get<Axes>("dimensions");
  Axes added;
  for (std::size_t d : detail::unique_axes(name(), dims, x.ndim() + dims.size()))
    added.push_back(static_cast<std::int64_t>(d));
  return {detail::fit_cotangent(detail::squeeze_axes(*cts[0], std::move(added)), x)};
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
