// SPDX-License-Identifier: MIT
// jax.numpy's indexing on runtime Arrays: `x[i]`, `x(i, j, ...)` (integers, rank-0 integer arrays,
// ranges, all, newaxis, ellipsis, integer arrays), and the functions built on the same machinery.
// Every index binds JAX's primitives, so indexing is traced under every transformation. Defines
// the members Array declares (see detail::Indexing in rt/array.hpp for why they live here).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/core/dtype.hpp"
#include "xpr/core/error.hpp"
#include "xpr/core/shape.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/numpy_linalg_slicing.hpp"
#include "xpr/rt/numpy_shape.hpp"
#include "xpr/rt/params.hpp"
#include "xpr/rt/prims/binary.hpp"
#include "xpr/rt/prims/compare.hpp"
#include "xpr/rt/prims/convert.hpp"
#include "xpr/rt/prims/gather.hpp"
#include "xpr/rt/prims/iota.hpp"
#include "xpr/rt/prims/rev.hpp"
#include "xpr/rt/prims/select.hpp"
#include "xpr/rt/prims/shape.hpp"
#include "xpr/rt/prims/slicing.hpp"
#include "xpr/rt/trace.hpp"
#include "xpr/rt/zeros.hpp"

namespace xpr::rt {

namespace detail {

/// A rank-0 constant of `dtype` (staged as a literal under make_jaxpr).
Array index_constant(std::int64_t v, DType dtype, bool weak = false);

/// A traced (or concrete) integer index made non-negative as lax.dynamic_slice does
/// (`_dynamic_slice_indices`): select(i < 0, i + n, i), bound as lt, add, select_n.
Array wrap_negative(const Array& i, std::int64_t n);

/// Whether nothing is being traced: primitives would run eagerly on concrete data.
inline bool eager(const Array& x) { return !x.is_tracer() && trace_state().dynamic->level() == 0; }

/// Python's `slice.indices(n)` followed by the length of the selection.
struct NormalizedRange {
  std::int64_t start, stop, step, length;
};

NormalizedRange normalize_range(const Range& r, std::int64_t n);

std::string index_kind_str(const Index& i);

/// Checks the indices of `x[idx]` (dtypes, ellipses, count) and returns them with the ellipsis
/// expanded and trailing `all`s added, so that every axis of `x` has exactly one index (newaxis
/// entries aside).
std::vector<Index> canonical_indices(const Array& x, std::vector<Index> idx);

std::int64_t checked_static_index(std::int64_t i, std::size_t axis, std::int64_t n);

/// The concrete fast path of `x(i, j, ...)` with static integers only, outside every
/// transformation: a view into `x`'s buffer (the box starts at the indexed element).
Array static_view(const Array& x, const std::vector<Index>& idx);

/// `x[idx]` for indices without advanced (rank >= 1 array) entries, by slice, dynamic_slice, rev,
/// squeeze and expand_dims; `idx` is canonical (one entry per axis of `x`, plus newaxes).
///
/// When every range has step 1 (or is a plain `::-1`) and there is no newaxis, the equations are
/// those of jax.numpy (`_attempt_rewriting_take_via_slice`): rev of the plain reversals, then one
/// `slice` when every start is static and non-negative as written, else one `dynamic_slice`
/// (static negative integers become the literal i + n, traced ones are wrapped with lt, add and
/// select_n), then `squeeze` of the integer-indexed axes. Other strides and newaxis, which
/// jax.numpy lowers to a gather, are a strided `slice`, a `rev` and an `expand_dims` here (the
/// same values; a cheaper program).
Array basic_index(const Array& x, const std::vector<Index>& idx);

/// Whether `idx` holds an advanced index (an integer array of rank >= 1).
bool has_advanced(const std::vector<Index>& idx);

/// Whether the advanced indices of `idx` (integers and integer arrays, as NumPy counts them when
/// an array is among them) are next to each other, before the ellipsis is expanded: NumPy puts
/// the broadcast advanced dimensions where they stand if so, else first.
bool advanced_contiguous(const std::vector<Index>& idx);

/// jax.numpy's `_Indexer`: `x[idx]` as one gather (and the scatter of `x.at(idx)`), with the
/// reversals and new axes applied around it.
struct Indexer {
  Shape slice_shape;
  Axes gather_slice_shape;
  Array gather_indices;
  GatherDimensionNumbers dnums;
  bool unique_indices = true;
  Axes reversed_y_dims, newaxis_dims;
};

/// The index dtype of a gather into `shape`: int32 unless a dimension needs int64
/// (`int_dtype_for_shape`).
DType index_dtype_for(const Shape& shape);

/// Index array `a` in the gather's index dtype. An int64 index narrowed to int32 is clamped to
/// int32's range first: a value beyond it is out of bounds of every axis an int32 index serves
/// and must stay so (a read clamps it, an update drops it), where the conversion alone would
/// wrap it into range (2^32 + 1 to 1). JAX's `_index_to_gather` converts without clamping.
Array narrow_index(const Array& a, DType dtype);

/// A static or array index as an array of `dtype` (no equation for a static one).
Array index_as_array(const Index& i, std::int64_t n, DType dtype, bool normalize);

/// jax.numpy's `index_to_gather` for canonical indices `idx` (one per axis of `x`, plus newaxes):
/// the gather's indices, dimension numbers and slice sizes. Negative indices are wrapped (select
/// on lt and add for arrays) when `normalize`.
Indexer index_to_gather(const Shape& x_shape, const std::vector<Index>& idx, bool contiguous,
                        bool normalize = true);

/// `x[idx]` with advanced indices: jax.numpy's `_gather` (a gather, then rev and expand_dims for
/// negative steps and newaxes). Out-of-bound array indices are clamped (gather's default mode,
/// promise_in_bounds, which JAX's CPU backend and xpr clamp).
Array advanced_index(const Array& x, const std::vector<Index>& idx, bool contiguous);

/// `x[idx]`: the entry point of every read.
Array index_get(const Array& x, std::vector<Index> raw);

/// The lax scatter function of `kind`.
Array scatter_of_kind(ScatterKind kind, const Array& x, const Array& indices, const Array& updates,
                      const ScatterDimensionNumbers& dn, GatherScatterMode mode, bool unique);

/// `x.at(idx).op(y)`: jax's `_scatter_impl`. The operands are promoted to their common dtype, the
/// update broadcast to the indexed shape, the scatter applied (out-of-bound indices dropped,
/// JAX's default mode for updates), and the result converted back to `x`'s type.
Array index_update(const Array& x, std::vector<Index> raw, const Array& update, ScatterKind kind,
                   bool normalize = true, GatherScatterMode mode = GatherScatterMode::fill_or_drop);

/// What `x.at(i, j, ...)` returns: JAX's `_IndexUpdateRef`, a reference to the indexed elements
/// of an immutable array. Each update returns a new array; `x` is unchanged.
class IndexUpdateRef {
 public:
  IndexUpdateRef(Array x, std::vector<Index> idx) : x_(std::move(x)), idx_(std::move(idx)) {}
  /// `x[idx]` (out-of-bound array indices clamp).
  Array get() const { return index_get(x_, idx_); }
  /// `x[idx] = v` (with repeated indices one of the updates wins: the last one, in row-major
  /// order of the indices, here).
  Array set(const Array& v) const { return index_update(x_, idx_, v, ScatterKind::set); }
  /// `x[idx] += v`; repeated indices add up all their updates (unlike NumPy's `+=`).
  Array add(const Array& v) const { return index_update(x_, idx_, v, ScatterKind::add); }
  /// `x[idx] *= v`; repeated indices multiply all their updates.
  Array mul(const Array& v) const { return index_update(x_, idx_, v, ScatterKind::mul); }
  /// `x[idx] = minimum(x[idx], v)`, over all updates of a repeated index.
  Array min(const Array& v) const { return index_update(x_, idx_, v, ScatterKind::min); }
  /// `x[idx] = maximum(x[idx], v)`, over all updates of a repeated index.
  Array max(const Array& v) const { return index_update(x_, idx_, v, ScatterKind::max); }

  // A C++ number as the update is typed as in `x + v`: a weak number takes `x`'s dtype, and an
  // integer out of that dtype's range is a value_error instead of wrapping.
  template <NumberArg T>
  Array set(T v) const {
    return set(number_update(v));
  }
  template <NumberArg T>
  Array add(T v) const {
    return add(number_update(v));
  }
  template <NumberArg T>
  Array mul(T v) const {
    return mul(number_update(v));
  }
  template <NumberArg T>
  Array min(T v) const {
    return min(number_update(v));
  }
  template <NumberArg T>
  Array max(T v) const {
    return max(number_update(v));
  }

 private:
  template <class T>
  Array number_update(T v) const {
    return promote_to(v, core::result_type(weak_dtype_of(x_), weak_dtype_of(v)));
  }

  Array x_;
  std::vector<Index> idx_;
};

template <class... Is>
struct Indexing {
  static Array get(const Array& x, const Is&... is) { return index_get(x, {Index(is)...}); }
  static IndexUpdateRef at(const Array& x, const Is&... is) {
    return IndexUpdateRef(x, {Index(is)...});
  }
};

void check_integer_indices(const char* fn, const Array& indices);

}  // namespace detail

using detail::IndexUpdateRef;

// ---- take, take_along_axis, segment_sum
// ----------------------------------------------------------

/// `jnp.take(a, indices, axis)`: the elements of `a` at `indices` along `axis` (the flattened `a`
/// when `axis` is empty); the result's shape is a.shape[:axis] + indices.shape + a.shape[axis+1:].
/// Negative indices count from the end; out-of-bound ones give NaN for floats (the least value
/// for signed integers, true for bool), jnp.take's default mode "fill". One gather.
Array take(const Array& a, const Array& indices, std::optional<std::int64_t> axis = {});

/// `jnp.take_along_axis(a, indices, axis)`: `indices` has `a`'s rank and selects along `axis`
/// (the other dimensions broadcast against `a`'s, with `a`'s size 1 along `axis`), as
/// `np.take_along_axis`. Negative indices count from the end; out-of-bound ones give NaN for
/// floats (jnp's default mode "fill"). One gather with batching dimensions, as jax.numpy builds it.
Array take_along_axis(const Array& a, const Array& indices, std::int64_t axis);

/// `jax.ops.segment_sum(data, segment_ids, num_segments)`: out[s] = the sum of the `data[i]`
/// whose `segment_ids[i]` is s, for s in [0, num_segments); ids outside that range (negative ones
/// too) are dropped. `segment_ids` indexes the leading dimensions of `data`. One scatter-add into
/// zeros, the building block of finite-element and graph assembly.
Array segment_sum(const Array& data, const Array& segment_ids, std::int64_t num_segments);

}  // namespace xpr::rt

namespace xpr {
using rt::segment_sum;
using rt::take;
using rt::take_along_axis;
}  // namespace xpr

#if XPR_DEFINITIONS

namespace xpr::rt::detail {

XPR_FUNC Array index_constant(std::int64_t v, DType dtype, bool weak) {
  ArrayBuilder b(ShapedArray{Shape{}, dtype, weak});
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    *b.data<T>() = static_cast<T>(v);
  });
  return std::move(b).finish();
}

XPR_FUNC Array wrap_negative(const Array& i, std::int64_t n) {
  Array negative = bind1(lt_p, {i, index_constant(0, i.dtype(), true)});
  Array shifted = bind1(add_p, {i, index_constant(n, i.dtype())});
  return bind1(select_n_p, {negative, i, shifted});
}

XPR_FUNC NormalizedRange normalize_range(const Range& r, std::int64_t n) {
  std::int64_t step = r.step.value_or(1);
  if (step == 0) throw core::value_error("range: expected a nonzero step, found step 0");
  // A step as long as the axis or longer takes one element, as Python's: clamped to the axis'
  // length, so that -step and the length's arithmetic stay in range (x[::INT64_MIN] negated
  // INT64_MIN and failed with "expected positive strides").
  const std::int64_t most = std::max<std::int64_t>(n, 1);
  step = std::clamp(step, -most, most);
  auto clip = [n, step](std::optional<std::int64_t> v, std::int64_t omitted) {
    if (!v) return omitted;
    std::int64_t i = *v;
    if (i < 0) {
      i = i < -n ? (step < 0 ? -1 : 0) : i + n;
    } else if (i >= n) {
      i = step < 0 ? n - 1 : n;
    }
    return i;
  };
  const std::int64_t start = clip(r.start, step < 0 ? n - 1 : 0);
  const std::int64_t stop = clip(r.stop, step < 0 ? -1 : n);
  std::int64_t length = 0;
  if (step > 0 && stop > start) length = (stop - start + step - 1) / step;
  if (step < 0 && start > stop) length = (start - stop + (-step) - 1) / (-step);
  return {start, stop, step, length};
}

XPR_FUNC std::string index_kind_str(const Index& i) {
  switch (i.kind()) {
    case Index::Kind::integer:
      return "integer " + std::to_string(i.integer());
    case Index::Kind::array:
      return "array " + detail::aval_of(i.array()).str();
    case Index::Kind::range:
      return "range";
    case Index::Kind::whole_axis:
      return "all";
    case Index::Kind::new_axis:
      return "newaxis";
    case Index::Kind::ellipsis_axes:
      return "ellipsis";
  }
  return "index";
}

XPR_FUNC std::vector<Index> canonical_indices(const Array& x, std::vector<Index> idx) {
  std::size_t consumed = 0, ellipses = 0;
  for (std::size_t k = 0; k < idx.size(); ++k) {
    const Index& i = idx[k];
    if (i.kind() == Index::Kind::array && !core::is_integer(i.array().dtype()))
      throw core::dtype_error(
          "index: expected an integer index (a C++ integer or an integer array), found an index "
          "of dtype " +
          std::string(core::name(i.array().dtype())) + " at position " + std::to_string(k) +
          (core::is_bool(i.array().dtype())
               ? " (boolean masks are not supported; use xpr::where)"
               : " (convert it with xpr::astype or lax convert_element_type)"));
    if (i.kind() == Index::Kind::ellipsis_axes) ++ellipses;
    if (i.kind() != Index::Kind::new_axis && i.kind() != Index::Kind::ellipsis_axes) ++consumed;
  }
  // JAX's words: a slice, `all` and an integer each count as one "regular index".
  auto regular = [](std::size_t n) {
    return std::to_string(n) + (n == 1 ? " regular index" : " regular indices");
  };
  if (ellipses > 1)
    throw core::index_error("index: an index can only have a single ellipsis, found " +
                            std::to_string(ellipses));
  if (consumed > 0 && x.ndim() == 0)
    throw core::index_error(
        "index: too many indices: expected an array of rank >= 1, found a "
        "rank-0 array indexed with " +
        regular(consumed));
  if (consumed > x.ndim())
    throw core::index_error("index: too many indices: a " + std::to_string(x.ndim()) +
                            "-dimensional array of shape " + x.shape().str() + " indexed with " +
                            regular(consumed));
  std::vector<Index> out;
  bool expanded = false;
  for (const Index& i : idx) {
    if (i.kind() == Index::Kind::ellipsis_axes) {
      for (std::size_t k = consumed; k < x.ndim(); ++k) out.emplace_back(AllIndex{});
      expanded = true;
    } else {
      out.push_back(i);
    }
  }
  if (!expanded)
    for (std::size_t k = consumed; k < x.ndim(); ++k) out.emplace_back(AllIndex{});
  return out;
}

XPR_FUNC std::int64_t checked_static_index(std::int64_t i, std::size_t axis, std::int64_t n) {
  if (i < -n || i >= n)
    throw core::index_error("index " + std::to_string(i) + " is out of bounds for axis " +
                            std::to_string(axis) + " with size " + std::to_string(n));
  return i < 0 ? i + n : i;
}

XPR_FUNC Array static_view(const Array& x, const std::vector<Index>& idx) {
  const detail::ConcreteArray* c = x.concrete();
  std::size_t k = 0;
  std::int64_t offset = 0;
  std::vector<std::int64_t> strides = core::strides_of(x.shape());
  for (; k < idx.size() && idx[k].kind() == Index::Kind::integer; ++k)
    offset += checked_static_index(idx[k].integer(), k, x.shape()[k]) * strides[k];
  Shape rest(std::vector<std::int64_t>(x.shape().begin() + static_cast<std::ptrdiff_t>(k),
                                       x.shape().end()));
  ShapedArray aval{rest, x.dtype(), x.weak_type()};
  const std::size_t item = core::itemsize(x.dtype());
  const std::size_t bytes = static_cast<std::size_t>(rest.size()) * item;
  const std::byte* p = c->bytes() + static_cast<std::size_t>(offset) * item;
  if (c->owner() && bytes > detail::ConcreteArray::inline_bytes)
    return Array(std::make_shared<detail::ConcreteArray>(std::move(aval), c->owner(), p));
  ArrayBuilder b(std::move(aval));  // small results are copied into inline storage
  std::memcpy(b.bytes(), p, bytes);
  return std::move(b).finish();
}

XPR_FUNC Array basic_index(const Array& x, const std::vector<Index>& idx) {
  const std::size_t rank = x.ndim();
  Axes start(rank, 0), extent(x.shape().begin(), x.shape().end()), stride(rank, 1);
  Axes squeezed, reversed, simple_reversed, newaxes;
  std::vector<std::optional<Array>> dynamic(rank);
  bool any_dynamic = false, negative_static = false, jax_slice_path = true;
  std::size_t axis = 0;
  std::int64_t out_axis = 0;  // position in the result, for newaxis
  for (const Index& i : idx) {
    if (i.kind() == Index::Kind::new_axis) {
      newaxes.push_back(out_axis++);
      jax_slice_path = false;
      continue;
    }
    const auto a = static_cast<std::int64_t>(axis);
    const std::int64_t n = x.shape()[axis];
    if (i.kind() == Index::Kind::integer) {
      start[axis] = checked_static_index(i.integer(), axis, n);
      negative_static = negative_static || i.integer() < 0;
      extent[axis] = 1;
      squeezed.push_back(a);
    } else if (i.kind() == Index::Kind::array) {  // rank 0 here
      if (n == 0)
        throw core::index_error("index is out of bounds for axis " + std::to_string(axis) +
                                " with size 0");
      dynamic[axis] = i.array();
      any_dynamic = true;
      extent[axis] = 1;
      squeezed.push_back(a);
    } else if (i.kind() == Index::Kind::range) {
      const Range& r = i.range();
      const NormalizedRange nr = normalize_range(r, n);
      if (nr.step == -1 && !r.start && !r.stop) {
        simple_reversed.push_back(a);  // a plain `::-1`: the whole axis, reversed
      } else {
        if (nr.step != 1) jax_slice_path = false;
        if (nr.step < 0) reversed.push_back(a);
        const std::int64_t step = nr.step < 0 ? -nr.step : nr.step;
        if (nr.length > 0)  // the lowest selected element starts the box
          start[axis] = nr.step > 0 ? nr.start : nr.start + (nr.length - 1) * nr.step;
        extent[axis] = nr.length == 0 ? 0 : (nr.length - 1) * step + 1;
        stride[axis] = step;
      }
      ++out_axis;
    } else {  // all
      ++out_axis;
    }
    ++axis;
  }
  Array y = x;
  if (jax_slice_path) {
    y = rev(y, simple_reversed);  // jax.numpy reverses plain `::-1` axes first
  } else {
    reversed.insert(reversed.end(), simple_reversed.begin(), simple_reversed.end());
    std::sort(reversed.begin(), reversed.end());
  }
  bool whole = true;
  for (std::size_t k = 0; k < rank; ++k)
    whole = whole && start[k] == 0 && extent[k] == x.shape()[k] && stride[k] == 1;
  const bool strided = std::any_of(stride.begin(), stride.end(), [](auto s) { return s != 1; });
  if (any_dynamic || (negative_static && jax_slice_path)) {
    // dynamic_slice's start indices share one dtype: that of the traced ones (int64 if one of them
    // is), else that of the static integers (int64 for a 64-bit C++ integer).
    DType dtype = DType::int32;
    bool traced_dtype = false;
    for (const auto& d : dynamic)
      if (d && (!traced_dtype || d->dtype() == DType::int64)) {
        dtype = d->dtype();
        traced_dtype = true;
      }
    if (!traced_dtype)
      for (const Index& i : idx)
        if (i.kind() == Index::Kind::integer && i.integer_dtype() == DType::int64)
          dtype = DType::int64;
    Arrays args{y};
    for (std::size_t k = 0; k < rank; ++k) {
      if (!dynamic[k]) {
        args.push_back(index_constant(start[k], dtype));
        continue;
      }
      Array d = *dynamic[k];
      if (d.dtype() != dtype) d = convert_element_type(d, dtype);
      args.push_back(wrap_negative(d, x.shape()[k]));
    }
    y = std::move(rt::bind(dynamic_slice_p, args, {{"slice_sizes", extent}}).front());
    if (strided) {
      Axes zero(rank, 0);
      y = bind1(slice_p, {y},
                {{"start_indices", zero}, {"limit_indices", extent}, {"strides", stride}});
    }
  } else if (!whole) {
    Axes limit(rank);
    for (std::size_t k = 0; k < rank; ++k) limit[k] = start[k] + extent[k];
    Params p{{"start_indices", start}, {"limit_indices", limit}};
    if (strided)
      p.set("strides", stride);
    else
      p.set("strides", None{});
    y = bind1(slice_p, {y}, p);
  }
  if (!reversed.empty()) y = bind1(rev_p, {y}, {{"dimensions", reversed}});
  if (!squeezed.empty()) y = bind1(squeeze_p, {y}, {{"dimensions", squeezed}});
  if (!newaxes.empty()) y = bind1(expand_dims_p, {y}, {{"dimensions", newaxes}});
  return y;
}

XPR_FUNC bool has_advanced(const std::vector<Index>& idx) {
  return std::any_of(idx.begin(), idx.end(), [](const Index& i) {
    return i.kind() == Index::Kind::array && i.array().ndim() > 0;
  });
}

XPR_FUNC bool advanced_contiguous(const std::vector<Index>& idx) {
  std::optional<std::size_t> last;
  for (std::size_t k = 0; k < idx.size(); ++k) {
    const auto kind = idx[k].kind();
    if (kind != Index::Kind::integer && kind != Index::Kind::array) continue;
    if (last && *last + 1 != k) return false;
    last = k;
  }
  return true;
}

XPR_FUNC DType index_dtype_for(const Shape& shape) {
  for (std::int64_t d : shape)
    if (d > std::int64_t{0x7fffffff}) return DType::int64;
  return DType::int32;
}

XPR_FUNC Array index_as_array(const Index& i, std::int64_t n, DType dtype, bool normalize) {
  if (i.kind() == Index::Kind::integer) {
    std::int64_t v = i.integer();
    if (normalize && v < 0) v += n;
    return index_constant(v, dtype);
  }
  Array a = i.array();
  if (normalize) a = wrap_negative(a, n);
  return narrow_index(a, dtype);
}

XPR_FUNC Array narrow_index(const Array& a, DType dtype) {
  if (a.dtype() == dtype) return a;
  if (a.dtype() != DType::int64 || dtype != DType::int32) return convert_element_type(a, dtype);
  return convert_element_type(xpr::clip(a, std::int64_t{std::numeric_limits<std::int32_t>::min()},
                                        std::int64_t{std::numeric_limits<std::int32_t>::max()}),
                              dtype);
}

XPR_FUNC Indexer index_to_gather(const Shape& x_shape, const std::vector<Index>& idx,
                                 bool contiguous, bool normalize) {
  const DType index_dtype = index_dtype_for(x_shape);
  const bool advanced = has_advanced(idx);
  Arrays advanced_indexes;
  std::vector<std::size_t> idx_advanced_axes;
  Axes x_advanced_axes;
  if (advanced) {
    for (std::size_t k = 0, j = 0; k < idx.size(); ++k) {
      if (idx[k].kind() == Index::Kind::new_axis) continue;
      if (idx[k].kind() == Index::Kind::integer || idx[k].kind() == Index::Kind::array) {
        const std::int64_t n = x_shape[j];
        if (idx[k].kind() == Index::Kind::integer)
          (void)checked_static_index(idx[k].integer(), j, n);
        advanced_indexes.push_back(index_as_array(idx[k], n, index_dtype, normalize));
        idx_advanced_axes.push_back(k);
        x_advanced_axes.push_back(static_cast<std::int64_t>(j));
      }
      ++j;
    }
  }
  Indexer out;
  std::size_t x_axis = 0;
  std::int64_t y_axis = 0, collapsed_y_axis = 0;
  Axes offset_dims, collapsed_slice_dims, start_index_map;
  std::vector<std::pair<Array, std::int64_t>> gather_indices;
  std::vector<std::int64_t> gather_indices_shape, slice_shape;
  for (std::size_t pos = 0; pos < idx.size(); ++pos) {
    const Index& i = idx[pos];
    if (advanced && ((contiguous && pos == idx_advanced_axes[0]) || (!contiguous && pos == 0))) {
      Shape shape = advanced_indexes[0].shape();
      for (const Array& a : advanced_indexes) shape = core::broadcast_shapes(shape, a.shape());
      const auto start_dim = static_cast<std::int64_t>(gather_indices_shape.size());
      for (const Array& a : advanced_indexes)
        gather_indices.emplace_back(broadcast_to(a, shape), start_dim);
      gather_indices_shape.insert(gather_indices_shape.end(), shape.begin(), shape.end());
      start_index_map.insert(start_index_map.end(), x_advanced_axes.begin(), x_advanced_axes.end());
      collapsed_slice_dims.insert(collapsed_slice_dims.end(), x_advanced_axes.begin(),
                                  x_advanced_axes.end());
      slice_shape.insert(slice_shape.end(), shape.begin(), shape.end());
      y_axis += static_cast<std::int64_t>(shape.rank());
      collapsed_y_axis += static_cast<std::int64_t>(shape.rank());
    }
    if (advanced && std::find(idx_advanced_axes.begin(), idx_advanced_axes.end(), pos) !=
                        idx_advanced_axes.end()) {
      ++x_axis;
      out.gather_slice_shape.push_back(1);
      continue;
    }
    const auto xa = static_cast<std::int64_t>(x_axis);
    if (i.kind() == Index::Kind::integer || i.kind() == Index::Kind::array) {
      const std::int64_t n = x_shape[x_axis];
      if (n == 0)
        throw core::index_error("index is out of bounds for axis " + std::to_string(x_axis) +
                                " with size 0");
      if (i.kind() == Index::Kind::integer) (void)checked_static_index(i.integer(), x_axis, n);
      gather_indices.emplace_back(index_as_array(i, n, index_dtype, normalize),
                                  static_cast<std::int64_t>(gather_indices_shape.size()));
      collapsed_slice_dims.push_back(xa);
      out.gather_slice_shape.push_back(1);
      start_index_map.push_back(xa);
      ++x_axis;
    } else if (i.kind() == Index::Kind::new_axis) {
      slice_shape.push_back(1);
      out.newaxis_dims.push_back(y_axis++);
    } else {  // a range or all
      const std::int64_t n = x_shape[x_axis];
      const NormalizedRange r =
          normalize_range(i.kind() == Index::Kind::range ? i.range() : Range{}, n);
      slice_shape.push_back(r.length);
      if (r.step == 1) {
        if (r.length != n) {
          gather_indices.emplace_back(index_constant(r.start, index_dtype),
                                      static_cast<std::int64_t>(gather_indices_shape.size()));
          start_index_map.push_back(xa);
        }
        out.gather_slice_shape.push_back(r.length);
        offset_dims.push_back(collapsed_y_axis);
      } else {
        // start + step * iota: the selected positions, in increasing order for a negative step
        // (the result is reversed after the gather).
        Array positions =
            bind1(add_p,
                  {index_constant(r.start, index_dtype),
                   bind1(mul_p, {broadcast_to(index_constant(r.step, index_dtype), Shape{r.length}),
                                 iota(index_dtype, r.length)})});
        if (r.step < 0) {
          out.reversed_y_dims.push_back(collapsed_y_axis);
          positions = rev(positions, {0});
        }
        out.gather_slice_shape.push_back(1);
        gather_indices.emplace_back(positions,
                                    static_cast<std::int64_t>(gather_indices_shape.size()));
        start_index_map.push_back(xa);
        gather_indices_shape.push_back(r.length);
        collapsed_slice_dims.push_back(xa);
      }
      ++collapsed_y_axis;
      ++y_axis;
      ++x_axis;
    }
  }
  if (gather_indices.empty()) {
    out.gather_indices = ArrayBuilder(ShapedArray{Shape{0}, index_dtype, false}).finish();
  } else if (gather_indices.size() == 1) {
    const Array& g = gather_indices[0].first;
    out.gather_indices = expand_dims(g, static_cast<std::int64_t>(g.ndim()));
  } else {
    const auto last = static_cast<std::int64_t>(gather_indices_shape.size());
    std::vector<std::int64_t> full = gather_indices_shape;
    full.push_back(1);
    Arrays parts;
    for (const auto& [g, at] : gather_indices) {
      Axes dims;
      for (std::size_t d = 0; d < g.ndim(); ++d) dims.push_back(at + static_cast<std::int64_t>(d));
      parts.push_back(broadcast_in_dim(g, Shape(full), dims));
    }
    out.gather_indices = std::move(rt::bind(concatenate_p, parts, {{"dimension", last}}).front());
  }
  std::sort(collapsed_slice_dims.begin(), collapsed_slice_dims.end());
  out.dnums = {offset_dims, collapsed_slice_dims, start_index_map, {}, {}};
  out.slice_shape = Shape(slice_shape);
  out.unique_indices = !advanced;
  return out;
}

XPR_FUNC Array advanced_index(const Array& x, const std::vector<Index>& idx, bool contiguous) {
  Indexer ix = index_to_gather(x.shape(), idx, contiguous);
  if (ix.slice_shape.size() == 0)
    return zeros_like_aval({ix.slice_shape, x.dtype(), x.weak_type()});
  Array y = x;
  if (ix.gather_indices.size() != 0)
    y = gather(y, ix.gather_indices, ix.dnums, ix.gather_slice_shape,
               GatherScatterMode::promise_in_bounds, std::nullopt, ix.unique_indices,
               ix.unique_indices);
  if (!ix.reversed_y_dims.empty()) y = rev(y, ix.reversed_y_dims);
  if (!ix.newaxis_dims.empty()) y = expand_dims(y, ix.newaxis_dims);
  return y;
}

XPR_FUNC Array index_get(const Array& x, std::vector<Index> raw) {
  const bool contiguous = advanced_contiguous(raw);
  std::vector<Index> idx = canonical_indices(x, std::move(raw));
  if (has_advanced(idx)) return advanced_index(x, idx, contiguous);
  auto first_other = std::find_if(idx.begin(), idx.end(),
                                  [](const Index& i) { return i.kind() != Index::Kind::integer; });
  const bool static_prefix = std::all_of(
      first_other, idx.end(), [](const Index& i) { return i.kind() == Index::Kind::whole_axis; });
  if (static_prefix && eager(x)) return static_view(x, idx);  // no equation to record
  return basic_index(x, idx);
}

XPR_FUNC Array scatter_of_kind(ScatterKind kind, const Array& x, const Array& indices,
                               const Array& updates, const ScatterDimensionNumbers& dn,
                               GatherScatterMode mode, bool unique) {
  switch (kind) {
    case ScatterKind::set:
      return scatter(x, indices, updates, dn, mode, unique, unique);
    case ScatterKind::add:
      return scatter_add(x, indices, updates, dn, mode, unique, unique);
    case ScatterKind::mul:
      return scatter_mul(x, indices, updates, dn, mode, unique, unique);
    case ScatterKind::min:
      return scatter_min(x, indices, updates, dn, mode, unique, unique);
    case ScatterKind::max:
      break;
  }
  return scatter_max(x, indices, updates, dn, mode, unique, unique);
}

XPR_FUNC Array index_update(const Array& x, std::vector<Index> raw, const Array& update,
                            ScatterKind kind, bool normalize, GatherScatterMode mode) {
  const bool contiguous = advanced_contiguous(raw);
  std::vector<Index> idx = canonical_indices(x, std::move(raw));
  Indexer ix = index_to_gather(x.shape(), idx, contiguous, normalize);
  if (ix.slice_shape.size() == 0) return x;
  const WeakDType t =
      core::result_type(detail::aval_of(x).weak_dtype(), detail::aval_of(update).weak_dtype());
  Array xs = x.dtype() == t.dtype ? x : convert_element_type(x, t.dtype, t.weak);
  Array y = update.dtype() == t.dtype ? update : convert_element_type(update, t.dtype, t.weak);
  y = broadcast_to(y, ix.slice_shape);
  if (!ix.newaxis_dims.empty()) y = squeeze(y, ix.newaxis_dims);
  if (!ix.reversed_y_dims.empty()) y = rev(y, ix.reversed_y_dims);
  const ScatterDimensionNumbers dn{
      ix.dnums.offset_dims, ix.dnums.collapsed_slice_dims, ix.dnums.start_index_map, {}, {}};
  Array out = scatter_of_kind(kind, xs, ix.gather_indices, y, dn, mode, ix.unique_indices);
  if (out.dtype() != x.dtype() || out.weak_type() != x.weak_type())
    out = convert_element_type(out, x.dtype(), x.weak_type());
  return out;
}

XPR_FUNC void check_integer_indices(const char* fn, const Array& indices) {
  if (!core::is_integer(indices.dtype()))
    throw core::dtype_error(std::string(fn) +
                            ": expected integer indices, found indices of dtype " +
                            std::string(core::name(indices.dtype())));
}

}  // namespace xpr::rt::detail

namespace xpr::rt {

XPR_FUNC Array take(const Array& a, const Array& indices, std::optional<std::int64_t> axis) {
  detail::check_integer_indices("take", indices);
  Array x = axis ? a : ravel(a);
  const std::size_t ax =
      axis ? static_cast<std::size_t>(detail::canonical_axis("take", *axis, a.ndim())) : 0;
  if (x.ndim() == 0)
    throw core::index_error("take: expected an array of rank >= 1, found a rank-0 array");
  const std::int64_t n = x.shape()[ax];
  std::vector<std::int64_t> sizes(x.shape().begin(), x.shape().end());
  if (n == 0) {
    if (indices.size() != 0)
      throw core::index_error("take: cannot take a non-empty selection from an empty axis");
    return x;
  }
  const auto index_dims = static_cast<std::int64_t>(indices.ndim());
  if (indices.size() == 0) {
    std::vector<std::int64_t> shape(sizes.begin(), sizes.begin() + static_cast<std::ptrdiff_t>(ax));
    shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
    shape.insert(shape.end(), sizes.begin() + static_cast<std::ptrdiff_t>(ax) + 1, sizes.end());
    return zeros_like_aval({Shape(shape), x.dtype(), x.weak_type()});
  }
  Array wrapped = detail::wrap_negative(indices, n);
  sizes[ax] = 1;
  Axes offset_dims;
  const auto axi = static_cast<std::int64_t>(ax);
  for (std::int64_t d = 0; d < axi; ++d) offset_dims.push_back(d);
  for (std::int64_t d = axi + index_dims; d < static_cast<std::int64_t>(x.ndim()) + index_dims - 1;
       ++d)
    offset_dims.push_back(d);
  return gather(x, expand_dims(wrapped, index_dims), {offset_dims, {axi}, {axi}, {}, {}}, sizes,
                GatherScatterMode::fill_or_drop);
}

XPR_FUNC Array take_along_axis(const Array& a, const Array& indices, std::int64_t axis) {
  detail::check_integer_indices("take_along_axis", indices);
  const std::size_t rank = a.ndim();
  if (indices.ndim() != rank)
    throw core::shape_error("take_along_axis: expected indices of the array's rank " +
                            std::to_string(rank) + ", found indices of shape " +
                            indices.shape().str() + " for an array of shape " + a.shape().str());
  const auto ax = static_cast<std::size_t>(detail::canonical_axis("take_along_axis", axis, rank));
  const DType index_dtype = detail::index_dtype_for(a.shape());
  Array idx = detail::narrow_index(indices, index_dtype);
  const Shape& idx_shape = idx.shape();
  const std::int64_t axis_size = a.shape()[ax];
  std::vector<std::int64_t> arr_dims(a.shape().begin(), a.shape().end());
  arr_dims[ax] = 1;
  Shape out_shape;
  try {
    out_shape = core::broadcast_shapes(idx_shape, Shape(arr_dims));
  } catch (const core::shape_error&) {
    throw core::shape_error("take_along_axis: indices of shape " + idx_shape.str() +
                            " do not broadcast against the array's shape " + a.shape().str() +
                            " outside axis " + std::to_string(ax));
  }
  if (axis_size == 0) return zeros_like_aval({out_shape, a.dtype(), a.weak_type()});
  std::vector<std::int64_t> gather_index_shape;
  for (std::size_t i = 0; i < rank; ++i)
    if (i == ax || idx_shape[i] != 1) gather_index_shape.push_back(out_shape[i]);
  gather_index_shape.push_back(1);
  Axes slice_sizes, offset_dims, start_index_map, collapsed, operand_batching, indices_batching,
      squeezed;
  Array gather_indices;
  std::int64_t new_i = 0, j = 0;
  for (std::size_t i = 0; i < rank; ++i) {
    if (i == ax) {
      gather_indices = reshape(detail::wrap_negative(idx, axis_size), Shape(gather_index_shape));
      slice_sizes.push_back(1);
      start_index_map.push_back(new_i);
      collapsed.push_back(new_i);
      ++new_i;
      ++j;
    } else if (idx_shape[i] == 1) {
      offset_dims.push_back(static_cast<std::int64_t>(i));
      slice_sizes.push_back(arr_dims[i]);
      ++new_i;
    } else if (arr_dims[i] == 1) {
      squeezed.push_back(static_cast<std::int64_t>(i));
      ++j;
    } else {
      slice_sizes.push_back(arr_dims[i] == 0 ? 0 : 1);
      operand_batching.push_back(new_i);
      indices_batching.push_back(j);
      ++new_i;
      ++j;
    }
  }
  Array x = squeezed.empty() ? a : squeeze(a, squeezed);
  return gather(x, gather_indices,
                {offset_dims, collapsed, start_index_map, operand_batching, indices_batching},
                slice_sizes, GatherScatterMode::fill_or_drop);
}

XPR_FUNC Array segment_sum(const Array& data, const Array& segment_ids, std::int64_t num_segments) {
  detail::check_integer_indices("segment_sum", segment_ids);
  if (num_segments < 0)
    throw core::value_error("segment_sum: expected num_segments >= 0, found " +
                            std::to_string(num_segments));
  if (segment_ids.ndim() > data.ndim() ||
      !std::equal(segment_ids.shape().begin(), segment_ids.shape().end(), data.shape().begin()))
    throw core::shape_error(
        "segment_sum: expected segment_ids of a shape that starts data's shape " +
        data.shape().str() + ", found " + segment_ids.shape().str());
  std::vector<std::int64_t> shape{num_segments};
  shape.insert(shape.end(), data.shape().begin() + static_cast<std::ptrdiff_t>(segment_ids.ndim()),
               data.shape().end());
  Array out = zeros_like_aval({Shape(shape), data.dtype(), data.weak_type()});
  std::vector<Index> idx{Index(segment_ids)};
  return detail::index_update(out, std::move(idx), data, ScatterKind::add, /*normalize=*/false);
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
