// SPDX-License-Identifier: MIT
// jax.numpy's shape functions: `xpr::reshape` (one size may be -1), `ravel`, `transpose`,
// `squeeze`, `expand_dims` (negative axes count from the end) and `broadcast_to` (NumPy's rules),
// each binding one shape primitive of rt/prims/shape.hpp, or none when nothing changes.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/core/error.hpp"
#include "xpr/core/shape.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/params.hpp"
#include "xpr/rt/prims/shape.hpp"
#include "xpr/rt/trace.hpp"

namespace xpr::rt {

/// `jnp.broadcast_to(x, shape)`: NumPy broadcasting of `x` to exactly `shape` (dimensions aligned
/// from the right, each of size 1 or equal); throws `shape_error` otherwise.
Array broadcast_to(const Array& x, const Shape& shape);

/// `jnp.reshape(x, shape)`: one size may be -1, inferred from the others.
Array reshape(const Array& x, std::span<const std::int64_t> shape);
inline Array reshape(const Array& x, std::initializer_list<std::int64_t> shape) {
  return reshape(x, std::span<const std::int64_t>(shape.begin(), shape.size()));
}
inline Array reshape(const Array& x, const Shape& shape) { return reshape(x, shape.span()); }

/// `jnp.ravel(x)`: the elements as a rank-1 array, row-major.
inline Array ravel(const Array& x) { return reshape(x, {x.size()}); }

/// `jnp.transpose(x, axes)`: result axis `i` is `x`'s axis `axes[i]` (negative counts from the
/// end); `index_error` for an axis out of range, `value_error` if `axes` is not a permutation.
Array transpose(const Array& x, const Axes& axes);
/// `jnp.transpose(x)`: the axes reversed.
Array transpose(const Array& x);

/// `jnp.squeeze(x, axes)`: removes the listed axes, each of size 1 (`shape_error` otherwise).
Array squeeze(const Array& x, const Axes& axes);
inline Array squeeze(const Array& x, std::int64_t axis) { return squeeze(x, Axes{axis}); }
/// `jnp.squeeze(x)`: removes every axis of size 1.
Array squeeze(const Array& x);

/// `jnp.expand_dims(x, axes)`: inserts axes of size 1 at these positions of the result.
Array expand_dims(const Array& x, const Axes& axes);
inline Array expand_dims(const Array& x, std::int64_t axis) { return expand_dims(x, Axes{axis}); }

}  // namespace xpr::rt

namespace xpr {
using rt::broadcast_to;
using rt::expand_dims;
using rt::ravel;
using rt::reshape;
using rt::squeeze;
using rt::transpose;
}  // namespace xpr

#if XPR_DEFINITIONS

namespace xpr::rt {

XPR_FUNC Array broadcast_to(const Array& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  const std::size_t lead = shape.rank() - std::min(shape.rank(), x.ndim());
  bool ok = x.ndim() <= shape.rank();
  for (std::size_t i = 0; ok && i < x.ndim(); ++i)
    ok = x.shape()[i] == 1 || x.shape()[i] == shape[lead + i];
  if (!ok)
    throw core::shape_error("broadcast_to: cannot broadcast array of shape " + x.shape().str() +
                            " to shape " + shape.str() +
                            ": expected each dimension, aligned from the right, to be 1 or "
                            "equal to the target's");
  return detail::broadcast_trailing(x, shape);
}

XPR_FUNC Array reshape(const Array& x, std::span<const std::int64_t> shape) {
  std::vector<std::int64_t> sizes(shape.begin(), shape.end());
  std::size_t unknown = sizes.size();
  std::int64_t known = 1;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1 && unknown == sizes.size()) {
      unknown = i;
    } else if (sizes[i] < 0) {
      throw core::value_error("reshape: expected non-negative sizes and at most one -1, found " +
                              detail::axes_str(shape));
    } else {
      known = core::checked_mul(known, sizes[i], "reshape: the product of the sizes");
    }
  }
  if (unknown != sizes.size()) {
    if (known == 0 || x.size() % known != 0)
      throw core::shape_error("reshape: cannot reshape array of shape " + x.shape().str() +
                              " (size " + std::to_string(x.size()) + ") into shape " +
                              detail::axes_str(shape) + ": expected a size divisible by " +
                              std::to_string(known));
    sizes[unknown] = x.size() / known;
  }
  Shape s(std::move(sizes));
  if (s == x.shape()) return x;
  return bind1(reshape_p, {x}, {{"new_sizes", s}, {"dimensions", None{}}});
}

XPR_FUNC Array transpose(const Array& x, const Axes& axes) {
  Axes perm;
  for (std::int64_t a : axes) {
    try {
      perm.push_back(static_cast<std::int64_t>(core::canonicalize_axis(a, x.ndim())));
    } catch (const core::index_error& e) {
      throw core::index_error(std::string("transpose: ") + e.what());
    }
  }
  if (perm.size() == x.ndim() && detail::is_iota(perm)) return x;
  return bind1(transpose_p, {x}, {{"permutation", perm}});
}

XPR_FUNC Array transpose(const Array& x) {
  Axes perm(x.ndim());
  for (std::size_t i = 0; i < perm.size(); ++i)
    perm[i] = static_cast<std::int64_t>(perm.size() - 1 - i);
  return transpose(x, perm);
}

XPR_FUNC Array squeeze(const Array& x, const Axes& axes) {
  Axes dims;
  for (std::size_t a : detail::unique_axes("squeeze", axes, x.ndim()))
    dims.push_back(static_cast<std::int64_t>(a));
  if (dims.empty()) return x;
  return bind1(squeeze_p, {x}, {{"dimensions", dims}});
}

XPR_FUNC Array squeeze(const Array& x) {
  Axes dims;
  for (std::size_t i = 0; i < x.ndim(); ++i)
    if (x.shape()[i] == 1) dims.push_back(static_cast<std::int64_t>(i));
  return squeeze(x, dims);
}

XPR_FUNC Array expand_dims(const Array& x, const Axes& axes) {
  Axes dims;
  for (std::size_t a : detail::unique_axes("expand_dims", axes, x.ndim() + axes.size()))
    dims.push_back(static_cast<std::int64_t>(a));
  if (dims.empty()) return x;
  return bind1(expand_dims_p, {x}, {{"dimensions", dims}});
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
