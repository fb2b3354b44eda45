// SPDX-License-Identifier: MIT
// jax.numpy's products (`dot`, `matmul`, `inner`, `vdot`) and joining functions (`concatenate`,
// `stack`), and lax's slicing functions (`slice`, `pad`, `dynamic_slice`, `dynamic_update_slice`,
// `dot_general`). Operands are promoted with JAX's lattice; each function then binds few
// primitives.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/core/dtype.hpp"
#include "xpr/core/error.hpp"
#include "xpr/core/shape.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/numpy_elementwise.hpp"
#include "xpr/rt/numpy_shape.hpp"
#include "xpr/rt/params.hpp"
#include "xpr/rt/prims/convert.hpp"
#include "xpr/rt/prims/dot_general.hpp"
#include "xpr/rt/prims/iota.hpp"
#include "xpr/rt/prims/shape.hpp"
#include "xpr/rt/prims/slicing.hpp"
#include "xpr/rt/trace.hpp"

namespace xpr::rt {

namespace detail {

/// The operands converted to their common type (`jnp.result_type`), as jax.numpy promotes.
std::vector<Array> promote_all(std::vector<Array> xs);

inline std::pair<Array, Array> promote_pair(const Array& a, const Array& b) {
  std::vector<Array> p = promote_all({a, b});
  return {p[0], p[1]};
}

std::int64_t canonical_axis(const char* fn, std::int64_t axis, std::size_t rank);

/// A start index of lax.dynamic_slice: negative values count from the end (then the primitive
/// clamps). Concrete eager indices are wrapped here; traced ones with `where`, so the same
/// program is recorded whatever their value.
Array wrap_index(const Array& i, std::int64_t dim);

Arrays wrapped_indices(const char* fn, const Array& x, const std::vector<Array>& starts);

}  // namespace detail

// ---- products -----------------------------------------------------------------------------------

/// `jnp.dot(a, b)`: for rank-0 operands the product; otherwise the sum over the last axis of `a`
/// and the second-to-last of `b` (its only axis when `b` is rank 1), so matrix-matrix,
/// matrix-vector and vector-vector products are the usual ones. The result's shape is
/// a.shape[:-1] + b.shape[:-2] + b.shape[-1:].
Array dot(const Array& a, const Array& b);

/// `jnp.matmul(a, b)` (`a @ b`): matrix products over the last two axes, broadcasting the
/// leading (batch) axes with NumPy's rules. A rank-1 `a` is a row and a rank-1 `b` a column,
/// whose unit axis is dropped from the result.
Array matmul(const Array& a, const Array& b);

/// `jnp.inner(a, b)`: the sum over the last axes of both (the product for rank-0 operands).
Array inner(const Array& a, const Array& b);

/// `jnp.vdot(a, b)`: the dot product of the flattened operands (equal sizes).
Array vdot(const Array& a, const Array& b);

// ---- joining ------------------------------------------------------------------------------------

/// `jnp.concatenate(xs, axis)`: the arrays joined along `axis` (negative counts from the end),
/// promoted to their common dtype. Their shapes agree except along `axis`.
Array concatenate(const std::vector<Array>& xs, std::int64_t axis = 0);

/// `jnp.stack(xs, axis)`: arrays of one shape joined along a new axis at position `axis` of the
/// result.
Array stack(const std::vector<Array>& xs, std::int64_t axis = 0);

// ---- lax slicing --------------------------------------------------------------------------------

/// `lax.slice(x, start_indices, limit_indices, strides)`: elements start, start + stride, ...
/// below limit in each dimension (`strides` empty: all 1). No negative indices, as in lax.
Array slice(const Array& x, const Axes& start_indices, const Axes& limit_indices,
            const Axes& strides = {});

namespace detail {
/// `x` along `axis` from `start` below `limit` by `stride` (`slicing.slice_in_dim`).
Array slice_in_dim(const Array& x, std::int64_t start, std::int64_t limit, std::int64_t stride,
                   std::size_t axis);
}  // namespace detail

/// `lax.pad(x, padding_value, padding_config)` with the arguments in NumPy's order: per dimension
/// (low, high, interior) padding; negative low or high crop. The value is converted to `x`'s
/// dtype.
inline Array pad(const Array& x, const std::vector<std::array<std::int64_t, 3>>& padding_config,
                 const Array& padding_value = 0) {
  Array v = convert_element_type(padding_value, x.dtype(), x.weak_type());
  return bind1(pad_p, {x, v}, {{"padding_config", PaddingConfig{padding_config}}});
}

/// `lax.dynamic_slice(x, start_indices, slice_sizes)`: the window of `slice_sizes` at the given
/// integer indices, which may be traced. Negative indices count from the end; then each is
/// clamped so the window stays inside `x`.
Array dynamic_slice(const Array& x, const std::vector<Array>& start_indices,
                    const Axes& slice_sizes);

/// `lax.dynamic_update_slice(x, update, start_indices)`: `x` with the window at the indices
/// replaced by `update`, of `x`'s dtype as JAX requires (a `dtype_error` otherwise: a silent
/// conversion would truncate a float update into an integer array); a weakly typed update (made
/// from a C++ number) is converted, as JAX converts a Python scalar. Indices as in
/// `dynamic_slice`.
Array dynamic_update_slice(const Array& x, const Array& update,
                           const std::vector<Array>& start_indices);

}  // namespace xpr::rt

namespace xpr {
using rt::concatenate;
using rt::dot;
using rt::dot_general;
using rt::dynamic_slice;
using rt::dynamic_update_slice;
using rt::inner;
using rt::matmul;
using rt::pad;
using rt::slice;
using rt::stack;
using rt::vdot;
}  // namespace xpr

#if XPR_DEFINITIONS

namespace xpr::rt::detail {

XPR_FUNC std::vector<Array> promote_all(std::vector<Array> xs) {
  if (xs.empty()) return xs;
  WeakDType t = detail::aval_of(xs[0]).weak_dtype();
  for (const Array& x : xs) t = core::result_type(t, detail::aval_of(x).weak_dtype());
  for (Array& x : xs) x = convert_element_type(x, t.dtype, t.weak);
  return xs;
}

XPR_FUNC std::int64_t canonical_axis(const char* fn, std::int64_t axis, std::size_t rank) {
  try {
    return static_cast<std::int64_t>(core::canonicalize_axis(axis, rank));
  } catch (const core::index_error& e) {
    throw core::index_error(std::string(fn) + ": " + e.what());
  }
}

XPR_FUNC Array wrap_index(const Array& i, std::int64_t dim) {
  if (!core::is_integer(i.dtype())) return i;  // the primitive reports the dtype
  if (!i.is_tracer() && i.ndim() == 0) {
    std::int64_t v = i.item<std::int64_t>();
    if (v >= 0) return i;
    return convert_element_type(Array(v + dim), i.dtype(), i.weak_type());
  }
  return xpr::where(i < 0, i + dim, i);
}

XPR_FUNC Arrays wrapped_indices(const char* fn, const Array& x, const std::vector<Array>& starts) {
  if (starts.size() != x.ndim())
    throw core::type_error(std::string(fn) + ": expected " + std::to_string(x.ndim()) +
                           " start indices (the operand's rank), found " +
                           std::to_string(starts.size()));
  Arrays out;
  for (std::size_t i = 0; i < starts.size(); ++i)
    out.push_back(wrap_index(starts[i], x.shape()[i]));
  return out;
}

}  // namespace xpr::rt::detail

namespace xpr::rt {

XPR_FUNC Array dot(const Array& a, const Array& b) {
  auto [x, y] = detail::promote_pair(a, b);
  if (x.ndim() == 0 || y.ndim() == 0) return dot_general(x, y, {});
  std::size_t ka = x.ndim() - 1, kb = y.ndim() == 1 ? 0 : y.ndim() - 2;
  if (x.shape()[ka] != y.shape()[kb])
    throw core::shape_error("dot: shapes " + x.shape().str() + " and " + y.shape().str() +
                            " are not aligned: expected a.shape[" + std::to_string(ka) +
                            "] == b.shape[" + std::to_string(kb) + "], found " +
                            std::to_string(x.shape()[ka]) + " and " +
                            std::to_string(y.shape()[kb]));
  return dot_general(x, y,
                     {{static_cast<std::int64_t>(ka)}, {static_cast<std::int64_t>(kb)}, {}, {}});
}

XPR_FUNC Array matmul(const Array& a, const Array& b) {
  if (a.ndim() == 0 || b.ndim() == 0)
    throw core::shape_error("matmul: expected operands of rank >= 1, found shapes " +
                            a.shape().str() + " and " + b.shape().str() +
                            " (use multiply for scalars)");
  auto [x, y] = detail::promote_pair(a, b);
  const std::size_t ra = x.ndim(), rb = y.ndim();
  const std::size_t kb = rb == 1 ? 0 : rb - 2;
  if (x.shape()[ra - 1] != y.shape()[kb])
    throw core::shape_error(
        "matmul: mismatch in the contracted dimension: expected "
        "a.shape[-1] == b.shape[" +
        std::string(rb == 1 ? "0" : "-2") + "], found shapes " + x.shape().str() + " and " +
        y.shape().str());
  const std::size_t nba = ra > 2 ? ra - 2 : 0, nbb = rb > 2 ? rb - 2 : 0;
  auto ka = static_cast<std::int64_t>(ra - 1), kbi = static_cast<std::int64_t>(kb);
  if (nba == 0 || nbb == 0) {
    // At most one side has batch axes: a plain contraction puts them in the right place, except
    // a matrix `a` against a batched `b`, whose row axis comes out first and is moved behind.
    Array out = dot_general(x, y, {{ka}, {kbi}, {}, {}});
    if (ra == 2 && nbb > 0) {
      Axes perm;
      for (std::size_t i = 1; i <= nbb; ++i) perm.push_back(static_cast<std::int64_t>(i));
      perm.push_back(0);
      perm.push_back(static_cast<std::int64_t>(nbb + 1));
      out = transpose(out, perm);
    }
    return out;
  }
  // Both batched: broadcast the batch shapes to a common one, then a batched contraction.
  Shape ba(std::vector<std::int64_t>(x.shape().begin(),
                                     x.shape().begin() + static_cast<std::ptrdiff_t>(nba)));
  Shape bb(std::vector<std::int64_t>(y.shape().begin(),
                                     y.shape().begin() + static_cast<std::ptrdiff_t>(nbb)));
  Shape batch;
  try {
    batch = core::broadcast_shapes(ba, bb);
  } catch (const core::shape_error&) {
    throw core::shape_error("matmul: batch shapes " + ba.str() + " and " + bb.str() +
                            " of operands " + x.shape().str() + " and " + y.shape().str() +
                            " cannot be broadcast together: expected equal sizes or 1 in each "
                            "dimension");
  }
  auto with_batch = [&](const Array& z) {
    std::vector<std::int64_t> dims = batch.dims();
    dims.insert(dims.end(), z.shape().end() - 2, z.shape().end());
    return broadcast_to(z, Shape(std::move(dims)));
  };
  x = with_batch(x);
  y = with_batch(y);
  Axes batch_dims;
  for (std::size_t i = 0; i < batch.rank(); ++i) batch_dims.push_back(static_cast<std::int64_t>(i));
  auto nb = static_cast<std::int64_t>(batch.rank());
  return dot_general(x, y, {{nb + 1}, {nb}, batch_dims, batch_dims});
}

XPR_FUNC Array inner(const Array& a, const Array& b) {
  auto [x, y] = detail::promote_pair(a, b);
  if (x.ndim() == 0 || y.ndim() == 0) return dot_general(x, y, {});
  auto ka = static_cast<std::int64_t>(x.ndim() - 1), kb = static_cast<std::int64_t>(y.ndim() - 1);
  if (x.shape()[x.ndim() - 1] != y.shape()[y.ndim() - 1])
    throw core::shape_error("inner: expected equal last dimensions, found shapes " +
                            x.shape().str() + " and " + y.shape().str());
  return dot_general(x, y, {{ka}, {kb}, {}, {}});
}

XPR_FUNC Array vdot(const Array& a, const Array& b) {
  if (a.size() != b.size())
    throw core::shape_error("vdot: expected operands of equal size, found shapes " +
                            a.shape().str() + " and " + b.shape().str());
  return dot(ravel(a), ravel(b));
}

XPR_FUNC Array concatenate(const std::vector<Array>& xs, std::int64_t axis) {
  if (xs.empty()) throw core::value_error("concatenate: expected at least one array, found none");
  for (const Array& x : xs)
    if (x.ndim() == 0)
      throw core::shape_error(
          "concatenate: zero-dimensional arrays cannot be concatenated: "
          "expected arrays of rank >= 1, found shape ()");
  std::vector<Array> ys = detail::promote_all(xs);
  std::int64_t dim = detail::canonical_axis("concatenate", axis, ys[0].ndim());
  if (ys.size() == 1) return ys[0];
  return std::move(rt::bind(concatenate_p, ys, {{"dimension", dim}}).front());
}

XPR_FUNC Array stack(const std::vector<Array>& xs, std::int64_t axis) {
  if (xs.empty()) throw core::value_error("stack: expected at least one array, found none");
  for (const Array& x : xs)
    if (x.shape() != xs[0].shape())
      throw core::shape_error("stack: expected arrays of one shape, found shapes " +
                              xs[0].shape().str() + " and " + x.shape().str());
  std::int64_t dim = detail::canonical_axis("stack", axis, xs[0].ndim() + 1);
  std::vector<Array> ys;
  for (const Array& x : xs) ys.push_back(expand_dims(x, dim));
  return concatenate(ys, dim);
}

XPR_FUNC Array slice(const Array& x, const Axes& start_indices, const Axes& limit_indices,
                     const Axes& strides) {
  Params p{{"start_indices", start_indices}, {"limit_indices", limit_indices}};
  if (strides.empty())
    p.set("strides", None{});
  else
    p.set("strides", strides);
  return bind1(slice_p, {x}, p);
}

XPR_FUNC Array detail::slice_in_dim(const Array& x, std::int64_t start, std::int64_t limit,
                                    std::int64_t stride, std::size_t axis) {
  Axes starts(x.ndim(), 0), limits, strides(x.ndim(), 1);
  for (std::size_t d = 0; d < x.ndim(); ++d) limits.push_back(x.shape()[d]);
  starts[axis] = start;
  limits[axis] = std::max(start, limit);
  strides[axis] = stride;
  return slice(x, starts, limits, strides);
}

XPR_FUNC Array dynamic_slice(const Array& x, const std::vector<Array>& start_indices,
                             const Axes& slice_sizes) {
  Arrays args{x};
  for (Array& i : detail::wrapped_indices("dynamic_slice", x, start_indices))
    args.push_back(std::move(i));
  return std::move(rt::bind(dynamic_slice_p, args, {{"slice_sizes", slice_sizes}}).front());
}

XPR_FUNC Array dynamic_update_slice(const Array& x, const Array& update,
                                    const std::vector<Array>& start_indices) {
  Arrays args{x, update.weak_type() && update.dtype() != x.dtype()
                     ? convert_element_type(update, x.dtype(), x.weak_type())
                     : update};
  for (Array& i : detail::wrapped_indices("dynamic_update_slice", x, start_indices))
    args.push_back(std::move(i));
  return std::move(rt::bind(dynamic_update_slice_p, args).front());
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
