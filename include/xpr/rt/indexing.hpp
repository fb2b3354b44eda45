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
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "xpr/core/dtype.hpp"
#include "xpr/core/error.hpp"
#include "xpr/core/shape.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/params.hpp"
#include "xpr/rt/prims/binary.hpp"
#include "xpr/rt/prims/compare.hpp"
#include "xpr/rt/prims/rev.hpp"
#include "xpr/rt/prims/select.hpp"
#include "xpr/rt/prims/shape.hpp"
#include "xpr/rt/prims/slicing.hpp"
#include "xpr/rt/trace.hpp"

namespace xpr::rt {

namespace detail {

/// A rank-0 constant of `dtype` (staged as a literal under make_jaxpr).
inline Array index_constant(std::int64_t v, DType dtype, bool weak = false) {
  ArrayBuilder b(ShapedArray{Shape{}, dtype, weak});
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    *b.data<T>() = static_cast<T>(v);
  });
  return std::move(b).finish();
}

/// A traced (or concrete) integer index made non-negative as lax.dynamic_slice does
/// (`_dynamic_slice_indices`): select(i < 0, i + n, i), bound as lt, add, select_n.
inline Array wrap_negative(const Array& i, std::int64_t n) {
  Array negative = bind1(lt_p, {i, index_constant(0, i.dtype(), true)});
  Array shifted = bind1(add_p, {i, index_constant(n, i.dtype())});
  return bind1(select_n_p, {negative, i, shifted});
}

/// Whether nothing is being traced: primitives would run eagerly on concrete data.
inline bool eager(const Array& x) { return !x.is_tracer() && trace_state().dynamic->level() == 0; }

/// Python's `slice.indices(n)` followed by the length of the selection.
struct NormalizedRange {
  std::int64_t start, stop, step, length;
};

inline NormalizedRange normalize_range(const Range& r, std::int64_t n) {
  const std::int64_t step = r.step.value_or(1);
  if (step == 0) throw core::value_error("range: expected a nonzero step, found step 0");
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

inline std::string index_kind_str(const Index& i) {
  switch (i.kind()) {
    case Index::Kind::integer:
      return "integer " + std::to_string(i.integer());
    case Index::Kind::array:
      return "array " + i.array().aval().str();
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

/// Checks the indices of `x[idx]` (dtypes, ellipses, count) and returns them with the ellipsis
/// expanded and trailing `all`s added, so that every axis of `x` has exactly one index (newaxis
/// entries aside).
inline std::vector<Index> canonical_indices(const Array& x, std::vector<Index> idx) {
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
  if (ellipses > 1)
    throw core::index_error("index: an index can only have a single ellipsis, found " +
                            std::to_string(ellipses));
  if (consumed > x.ndim())
    throw core::index_error("index: too many indices: a " + std::to_string(x.ndim()) +
                            "-dimensional array of shape " + x.shape().str() + " indexed with " +
                            std::to_string(consumed) + " regular indices");
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

inline std::int64_t checked_static_index(std::int64_t i, std::size_t axis, std::int64_t n) {
  if (i < -n || i >= n)
    throw core::index_error("index " + std::to_string(i) + " is out of bounds for axis " +
                            std::to_string(axis) + " with size " + std::to_string(n));
  return i < 0 ? i + n : i;
}

/// The concrete fast path of `x(i, j, ...)` with static integers only, outside every
/// transformation: a view into `x`'s buffer (the box starts at the indexed element).
inline Array static_view(const Array& x, const std::vector<Index>& idx) {
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
inline Array basic_index(const Array& x, const std::vector<Index>& idx) {
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

/// Whether `idx` holds an advanced index (an integer array of rank >= 1).
inline bool has_advanced(const std::vector<Index>& idx) {
  return std::any_of(idx.begin(), idx.end(), [](const Index& i) {
    return i.kind() == Index::Kind::array && i.array().ndim() > 0;
  });
}

/// `x[idx]` with advanced indices: a gather (defined with gather below).
inline Array advanced_index(const Array& x, const std::vector<Index>& idx);

/// `x[idx]`: the entry point of every read.
inline Array index_get(const Array& x, std::vector<Index> raw) {
  std::vector<Index> idx = canonical_indices(x, std::move(raw));
  if (has_advanced(idx)) return advanced_index(x, idx);
  auto first_other = std::find_if(idx.begin(), idx.end(),
                                  [](const Index& i) { return i.kind() != Index::Kind::integer; });
  const bool static_prefix = std::all_of(
      first_other, idx.end(), [](const Index& i) { return i.kind() == Index::Kind::whole_axis; });
  if (static_prefix && eager(x)) return static_view(x, idx);  // no equation to record
  return basic_index(x, idx);
}

inline Array advanced_index(const Array&, const std::vector<Index>&) {
  throw core::not_implemented_error("advanced indexing (integer array indices) needs gather");
}

template <class... Is>
struct Indexing {
  static Array get(const Array& x, const Is&... is) { return index_get(x, {Index(is)...}); }
};

}  // namespace detail

}  // namespace xpr::rt
