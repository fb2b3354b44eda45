// SPDX-License-Identifier: MIT
// xpr::Array: the runtime tier's value. An immutable handle to either concrete data (a shared,
// row-major buffer) or a tracer owned by a transformation; user code sees one type in every mode,
// the way JAX code sees jax.Array both eagerly and under tracing.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <Eigen/Core>

#include "xpr/core/config.hpp"
#include "xpr/core/dtype.hpp"
#include "xpr/core/error.hpp"
#include "xpr/core/shape.hpp"
#include "xpr/rt/aval.hpp"
#include "xpr/rt/params.hpp"

namespace xpr::rt {

class Array;
class Index;

namespace detail {
/// The indexing members of Array (`x[i]`, `x(i, j)`, `x.at(i)`) forward to this class template,
/// which rt/indexing.hpp defines: indexing binds primitives, which this header cannot name (the
/// primitives include it). The members are templates whose bodies name `Indexing<...>`, so they
/// are instantiated where they are used; a translation unit that uses them without including
/// rt/indexing.hpp (the runtime tier's umbrella rt/api.hpp includes it) fails to compile on the
/// incomplete type instead of calling a member that was declared and never defined.
template <class... Is>
struct Indexing;

/// The C++ number `v` as the element type `E`: an integer into an integer type must fit
/// (`value_error` otherwise, as NumPy 2 and JAX raise OverflowError for a Python int out of the
/// dtype's range; a `std::size_t` above INT64_MAX would otherwise wrap negative), anything else
/// converts as `astype` does.
template <class E, class T>
E number_as_element(T v) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool> && std::is_integral_v<E> &&
                !std::is_same_v<E, bool>) {
    if (!core::integer_fits<E>(v))
      throw core::value_error("the integer " + std::to_string(v) + " does not fit in " +
                              std::string(core::name(core::dtype_v<E>)) +
                              ": expected a value in [" +
                              std::to_string(std::numeric_limits<E>::min()) + ", " +
                              std::to_string(std::numeric_limits<E>::max()) + "]");
  }
  return core::convert_element<E>(v);
}
}  // namespace detail

namespace detail {

/// What an Array handle points to: concrete data or a tracer. Immutable once built.
class ArrayImpl {
 public:
  explicit ArrayImpl(ShapedArray aval) : aval_(std::move(aval)) {}
  ArrayImpl(const ArrayImpl&) = delete;
  ArrayImpl& operator=(const ArrayImpl&) = delete;
  virtual ~ArrayImpl() = default;

  const ShapedArray& aval() const noexcept { return aval_; }
  /// The concrete value behind this one, if it is known (a JVP tracer's primal, say), else null.
  virtual const class ConcreteArray* concrete() const noexcept = 0;
  /// Tracers say which transformation they belong to; concrete data says nothing.
  virtual bool is_tracer() const noexcept { return false; }
  /// Throws when the value may not be read here: a tracer whose transformation has ended
  /// (`escaped_tracer_error`) or that belongs to another thread's trace. Data may always be read.
  virtual void check_usable() const {}

 private:
  ShapedArray aval_;
};

/// Recently freed large buffers, reused for allocations of the same size. A fresh multi-megabyte
/// allocation costs one page fault per 4 KiB page when the kernel first writes it, which is more
/// than an elementwise kernel spends computing; eager code repeats the same sizes, so a few
/// cached buffers remove that cost (XLA's allocators do the same). Thread-safe; never destroyed,
/// so arrays that outlive static destruction can still return their buffers.
class BufferCache {
 public:
  static constexpr std::size_t min_bytes = std::size_t{1} << 16;  // smaller ones: plain new
  static constexpr std::size_t max_bytes = std::size_t{1} << 27;  // at most 128 MiB kept
  static constexpr std::size_t max_entries = 8;

  XPR_MEMBER std::byte* take(std::size_t bytes);
  XPR_MEMBER void give(std::size_t bytes, std::byte* p);
  static void release(std::byte* p) noexcept { ::operator delete[](p, std::align_val_t{64}); }

 private:
  std::mutex mutex_;
  std::vector<std::pair<std::size_t, std::byte*>> entries_;
  std::size_t held_ = 0;
};

inline BufferCache& buffer_cache() {
  static BufferCache& cache = *new BufferCache;  // intentionally never destroyed (see above)
  return cache;
}

/// Aligned, shared, never-written-after-construction element storage.
struct BufferDelete {
  std::size_t bytes;
  void operator()(std::byte* p) const noexcept { buffer_cache().give(bytes, p); }
};

/// More bytes than any 64-bit machine maps (x86-64 and AArch64 user space is 2^47 bytes): such a
/// request is refused with a clear error before the allocator (or a sanitizer's) sees it.
inline constexpr std::size_t max_buffer_bytes = std::size_t{1} << 47;

std::shared_ptr<std::byte> allocate_buffer(std::size_t bytes);

/// Concrete data. Small values (up to 16 bytes) live inline, so a rank-0 result costs one
/// allocation; larger ones share a 64-byte-aligned buffer (views such as `a[i]` share it too).
class ConcreteArray final : public ArrayImpl {
 public:
  static constexpr std::size_t inline_bytes = 16;

  /// Uninitialized storage for `aval`; the creator fills it through `mutable_data` before the
  /// array is shared.
  explicit ConcreteArray(ShapedArray aval) : ArrayImpl(std::move(aval)) {
    // Checked: a byte count that wrapped would allocate a small buffer that kernels write past.
    std::size_t bytes =
        core::checked_nbytes(this->aval().size(), core::itemsize(this->aval().dtype));
    if (bytes <= inline_bytes) {
      data_ = small_;
    } else {
      owner_ = allocate_buffer(bytes);
      data_ = owner_.get();
    }
  }
  /// A view into a shared buffer.
  ConcreteArray(ShapedArray aval, std::shared_ptr<std::byte> owner, const std::byte* data)
      : ArrayImpl(std::move(aval)), owner_(std::move(owner)), data_(const_cast<std::byte*>(data)) {}

  const ConcreteArray* concrete() const noexcept override { return this; }
  std::size_t nbytes() const noexcept {
    return static_cast<std::size_t>(aval().size()) * core::itemsize(aval().dtype);
  }
  const std::byte* bytes() const noexcept { return data_; }
  std::byte* mutable_bytes() noexcept { return data_; }
  /// The buffer's owner, for views; null when the data is inline.
  const std::shared_ptr<std::byte>& owner() const noexcept { return owner_; }

 private:
  std::shared_ptr<std::byte> owner_;
  std::byte* data_ = nullptr;
  alignas(16) std::byte small_[inline_bytes];
};

template <class T>
constexpr bool is_element_type_v =
    std::is_same_v<T, bool> || std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t> ||
    std::is_same_v<T, float> || std::is_same_v<T, double>;

}  // namespace detail

namespace detail {
/// While `jit` traces a function, counts the sizes read through `Array::aval()`, `shape()` and
/// `size()`: a trace that read none (and whose jaxpr names no size, rt/jit.hpp) is reused
/// for inputs of other sizes without tracing the function again. Null otherwise.
inline thread_local std::size_t* size_reads = nullptr;
}  // namespace detail

/// An n-dimensional array: immutable, row-major, any rank, buffers shared between copies.
///
/// Concrete arrays hold data; inside a transformation an Array may hold a tracer instead, and the
/// same user code runs on both. Element access on a tracer whose value is not known throws
/// `concretization_error`.
class Array {
 public:
  using xpr_traced = void;  // takes Array out of the plain-number family of core/ops.hpp

  /// A rank-0 f64 zero (so that `Array` is regular; `xpr::zeros` states intent better).
  Array() : Array(0.0) {}
  /// A C++ number becomes a weakly typed rank-0 array, as a Python scalar does in JAX.
  template <class T>
  requires std::is_arithmetic_v<T> Array(
      T value) {  // NOLINT(google-explicit-constructor): numbers mix with arrays freely
    using E = core::element_t<core::dtype_v<T>>;
    auto impl = std::make_shared<detail::ConcreteArray>(
        ShapedArray{Shape{}, core::dtype_v<T>, !std::is_same_v<T, bool>});
    E e = detail::number_as_element<E>(value);
    std::memcpy(impl->mutable_bytes(), &e, sizeof(E));
    impl_ = std::move(impl);
  }
  explicit Array(std::shared_ptr<const detail::ArrayImpl> impl) : impl_(std::move(impl)) {}

  // ---- what it is ---------------------------------------------------------------------------
  /// The type (shape, dtype, weak flag). Inside a jitted function `aval()`, `shape()` and
  /// `size()` count as reading a size, so the trace holds for this size only (`jit` traces again
  /// at another); `ndim()`, `dtype()` and `weak_type()` do not. The library reads types through
  /// `detail::aval_of(x)`, which does not count (below).
  const ShapedArray& aval() const noexcept {
    if (detail::size_reads) ++*detail::size_reads;
    return impl_->aval();
  }
  const Shape& shape() const noexcept {
    if (detail::size_reads) ++*detail::size_reads;
    return impl_->aval().shape;
  }
  std::size_t ndim() const noexcept { return impl_->aval().shape.rank(); }
  std::int64_t size() const noexcept {
    if (detail::size_reads) ++*detail::size_reads;
    return impl_->aval().shape.size();
  }
  DType dtype() const noexcept { return impl_->aval().dtype; }
  bool weak_type() const noexcept { return impl_->aval().weak_type; }
  const std::shared_ptr<const detail::ArrayImpl>& impl() const noexcept { return impl_; }
  bool is_tracer() const noexcept { return impl_->is_tracer(); }
  /// The concrete data, or null if this is a tracer whose value is not known.
  const detail::ConcreteArray* concrete() const noexcept { return impl_->concrete(); }
  bool is_concrete() const noexcept { return concrete() != nullptr; }

  // ---- elements ------------------------------------------------------------------------------
  /// The elements, row-major. `T` must be the array's element type.
  template <class T>
  const T* data() const {
    static_assert(detail::is_element_type_v<T>,
                  "Array::data<T>: T must be bool, std::int32_t, std::int64_t, float or double");
    check_dtype<T>("data");
    return reinterpret_cast<const T*>(concrete_or_throw("data")->bytes());
  }
  /// The only element of a size-1 array, converted to `T`.
  template <class T>
  T item() const {
    if (size() != 1)
      throw type_error("item(): expected an array of size 1, found shape " + shape().str() +
                       " (size " + std::to_string(size()) + ")");
    return element_as<T>(0, "item");
  }
  /// A copy of the elements, converted to `T`.
  template <class T>
  std::vector<T> to_vector() const {
    std::vector<T> out(static_cast<std::size_t>(size()));
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = element_as<T>(i, "to_vector");
    return out;
  }
  /// A const Eigen view of the elements: rows = the first dimension, columns = the product of the
  /// others (a rank-1 array is a column, a rank-0 array is 1x1).
  template <class T>
  Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> eigen() const {
    Eigen::Index rows = ndim() == 0 ? 1 : static_cast<Eigen::Index>(shape()[0]);
    Eigen::Index cols = rows == 0 ? 0 : static_cast<Eigen::Index>(size()) / rows;
    return {data<T>(), rows, cols};
  }
  // ---- indexing (rt/indexing.hpp; docs/indexing.md) --------------------------------------------
  /// `x[i]`: NumPy/JAX indexing with one index: a C++ integer (negative counts from the end), a
  /// rank-0 integer array (traced or not), an integer array (advanced indexing), `xpr::range`,
  /// `xpr::all`, `xpr::newaxis` or `xpr::ellipsis`. Traced in every transformation.
  template <class I>
  requires std::constructible_from<Index, const I&> Array operator[](const I& i) const {
    return detail::Indexing<I>::get(*this, i);
  }
  /// `x(i, j, ...)`: NumPy/JAX indexing with one index per axis (`x[i, j, ...]` in Python).
  template <class... Is>
  requires(std::constructible_from<Index, const Is&>&&...) Array operator()(const Is&... is) const {
    return detail::Indexing<Is...>::get(*this, is...);
  }
  /// `x.at(i, j, ...)`: JAX's `x.at[i, j, ...]`, a reference to the indexed elements whose
  /// `.set(v)`, `.add(v)`, `.mul(v)`, `.min(v)`, `.max(v)` return an updated copy of `x` and
  /// `.get()` reads them.
  template <class... Is>
  requires(std::constructible_from<Index, const Is&>&&...) auto at(const Is&... is) const {
    return detail::Indexing<Is...>::at(*this, is...);
  }

  /// `if (x > 0.0)`: the truth of a size-1 array. Throws `type_error` for larger arrays and
  /// `concretization_error` for tracers whose value is not known.
  XPR_MEMBER explicit operator bool() const;

 private:
  template <class T>
  void check_dtype(const char* what) const {
    if (core::dtype_v<T> != dtype())
      throw dtype_error(std::string(what) + "<T>: expected T to match the array's dtype " +
                        std::string(core::name(dtype())) + ", found T of dtype " +
                        std::string(core::name(core::dtype_v<T>)));
  }
  XPR_MEMBER const detail::ConcreteArray* concrete_or_throw(const char* what) const;
  template <class T>
  T element_as(std::size_t i, const char* what) const {
    const std::byte* p = concrete_or_throw(what)->bytes();
    switch (dtype()) {
      // convert_element: `item<int>()` of NaN or 1e300 is defined (as astype defines it).
      case DType::bool_:
        return core::convert_element<T>(reinterpret_cast<const bool*>(p)[i]);
      case DType::int32:
        return core::convert_element<T>(reinterpret_cast<const std::int32_t*>(p)[i]);
      case DType::int64:
        return core::convert_element<T>(reinterpret_cast<const std::int64_t*>(p)[i]);
      case DType::float32:
        return core::convert_element<T>(reinterpret_cast<const float*>(p)[i]);
      case DType::float64:
        return core::convert_element<T>(reinterpret_cast<const double*>(p)[i]);
    }
    return T{};
  }

  std::shared_ptr<const detail::ArrayImpl> impl_;
};

namespace detail {
/// The type of `x`, its sizes not counted as read (JAX's `core.get_aval`). The library checks and
/// propagates types this way: what it computes from a size lands in the jaxpr (a shape parameter,
/// a literal), where `jit` sees it. User code reads types through `Array::aval()`, `shape()` and
/// `size()`, which count, because `jit` cannot see what a user computes from a size. Called
/// qualified (`detail::aval_of(x)`): the overload below is deleted.
inline const ShapedArray& aval_of(const Array& x) noexcept { return x.impl()->aval(); }
}  // namespace detail

/// `aval_of` reads the type of a jaxpr atom or a linear operand (rt/jaxpr.hpp, rt/primitive.hpp);
/// an Array's type is `x.aval()`. Deleted so that `aval_of(x)` on an Array, found by
/// argument-dependent lookup, does not compile to the library's uncounted read (which would let a
/// jitted function reuse one size's trace at another) or convert to a linear operand.
const ShapedArray& aval_of(const Array& x) = delete;

/// Builds a concrete array of the given type by filling its buffer once; used by every kernel.
class ArrayBuilder {
 public:
  explicit ArrayBuilder(ShapedArray aval)
      : impl_(std::make_shared<detail::ConcreteArray>(std::move(aval))) {}
  template <class T>
  T* data() noexcept {
    return reinterpret_cast<T*>(impl_->mutable_bytes());
  }
  std::byte* bytes() noexcept { return impl_->mutable_bytes(); }
  const ShapedArray& aval() const noexcept { return impl_->aval(); }
  Array finish() && { return Array(std::shared_ptr<const detail::ArrayImpl>(std::move(impl_))); }

 private:
  std::shared_ptr<detail::ConcreteArray> impl_;
};

// Calls `f(T{})` with `T` the element type of `dtype`; kernels dispatch on dtype this way.
template <class F>
decltype(auto) dispatch_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::bool_:
      return f(bool{});
    case DType::int32:
      return f(std::int32_t{});
    case DType::int64:
      return f(std::int64_t{});
    case DType::float32:
      return f(float{});
    case DType::float64:
      break;
  }
  return f(double{});
}

// ---- index objects ------------------------------------------------------------------------------

/// Python's `start:stop:step` (`slice(start, stop, step)`); an omitted part is `xpr::none`.
struct Range {
  std::optional<std::int64_t> start, stop, step;
};

namespace detail {
/// A part of a range: a C++ integer or `xpr::none`.
struct RangeBound {
  std::optional<std::int64_t> value;
  RangeBound(None) {}  // NOLINT(google-explicit-constructor)
  template <std::integral I>
  requires(!std::is_same_v<I, bool>) RangeBound(I i) {  // NOLINT(google-explicit-constructor)
    if (!std::in_range<std::int64_t>(i))
      throw index_error("range: expected a bound that fits in int64, found " + std::to_string(i));
    value = static_cast<std::int64_t>(i);
  }
};
}  // namespace detail

/// `xpr::range(start, stop, step)`: Python's `start:stop:step` as an index (`xpr::slice` is
/// lax.slice). Negative bounds count from the end; a negative step walks backwards.
inline Range range(detail::RangeBound start, detail::RangeBound stop,
                   detail::RangeBound step = None{}) {
  return {start.value, stop.value, step.value};
}

/// `:` (a whole axis), `None`/`np.newaxis` (a new axis of size 1) and `...` (as many whole axes
/// as the other indices leave), named as in xtensor.
struct AllIndex {
  /// `xpr::all(x, axis, keepdims)` is also jnp.all (as xtensor's `all` is both): bool, whether
  /// every element over `axis` (every axis by default) is nonzero. Defined with the reductions
  /// (xpr/rt/numpy_reductions.hpp, `numpy_all`), where `AxisArg` is.
  XPR_MEMBER Array operator()(const Array& x) const;
  XPR_MEMBER Array operator()(const Array& x, const class AxisArg& axis,
                              bool keepdims = false) const;
};
struct NewAxis {};
struct EllipsisIndex {};

/// The index objects, in a namespace of their own that `xpr` imports with a using-directive: so
/// `xpr::all` names them, while a local variable called `all` in xpr's own code (or a user's)
/// shadows nothing (GCC's -Wshadow).
namespace index_objects {
/// `None` in a range (`xpr::range(2, xpr::none)` is Python's `2:`).
inline constexpr None none{};
inline constexpr AllIndex all{};
inline constexpr NewAxis newaxis{};
inline constexpr EllipsisIndex ellipsis{};
}  // namespace index_objects

/// One index of `x[i]`, `x(i, j, ...)` or `x.at(...)`: a static C++ integer, an array (a rank-0
/// integer array indexes like an integer but may be traced; a larger one is an advanced index), a
/// range, `all`, `newaxis` or `ellipsis`. A C++ floating-point or bool index becomes an array, so
/// indexing reports its dtype.
class Index {
 public:
  enum class Kind { integer, array, range, whole_axis, new_axis, ellipsis_axes };

  template <std::integral I>
  requires(!std::is_same_v<I, bool>) Index(I i)  // NOLINT(google-explicit-constructor)
      : kind_(Kind::integer),
        integer_dtype_(sizeof(I) <= 4 && std::is_signed_v<I> ? DType::int32 : DType::int64) {
    if (!std::in_range<std::int64_t>(i))
      throw index_error("index " + std::to_string(i) + " does not fit in int64");
    integer_ = static_cast<std::int64_t>(i);
  }
  template <class T>
  requires(std::is_floating_point_v<T> || std::is_same_v<T, bool>) Index(T v)
      : kind_(Kind::array), array_(v) {}  // NOLINT(google-explicit-constructor)
  Index(Array a) : kind_(Kind::array), array_(std::move(a)) {}  // NOLINT
  Index(Range r) : kind_(Kind::range), range_(r) {}             // NOLINT
  Index(AllIndex) : kind_(Kind::whole_axis) {}                  // NOLINT
  Index(NewAxis) : kind_(Kind::new_axis) {}                     // NOLINT
  Index(EllipsisIndex) : kind_(Kind::ellipsis_axes) {}          // NOLINT

  Kind kind() const noexcept { return kind_; }
  std::int64_t integer() const noexcept { return integer_; }
  /// The dtype a static integer takes when it must become an array (int32 for `int`).
  DType integer_dtype() const noexcept { return integer_dtype_; }
  const Array& array() const noexcept { return array_; }
  const Range& range() const noexcept { return range_; }

 private:
  Kind kind_;
  std::int64_t integer_ = 0;
  DType integer_dtype_ = DType::int32;
  Array array_;
  Range range_;
};

}  // namespace xpr::rt

namespace xpr {
using namespace rt::index_objects;  // xpr::none, xpr::all, xpr::newaxis, xpr::ellipsis
using rt::Array;
using rt::Index;
using rt::range;
using rt::ShapedArray;
}  // namespace xpr

#if XPR_DEFINITIONS

namespace xpr::rt::detail {

XPR_FUNC std::byte* BufferCache::take(std::size_t bytes) {
  if (bytes < min_bytes) return nullptr;
  std::lock_guard lock(mutex_);
  for (std::size_t i = entries_.size(); i-- > 0;) {
    if (entries_[i].first != bytes) continue;
    std::byte* p = entries_[i].second;
    entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(i));
    held_ -= bytes;
    return p;
  }
  return nullptr;
}

XPR_FUNC void BufferCache::give(std::size_t bytes, std::byte* p) {
  if (bytes >= min_bytes && bytes <= max_bytes) {
    std::lock_guard lock(mutex_);
    while (!entries_.empty() && (entries_.size() >= max_entries || held_ + bytes > max_bytes)) {
      release(entries_.front().second);  // the oldest goes first
      held_ -= entries_.front().first;
      entries_.erase(entries_.begin());
    }
    entries_.emplace_back(bytes, p);
    held_ += bytes;
    return;
  }
  release(p);
}

XPR_FUNC std::shared_ptr<std::byte> allocate_buffer(std::size_t bytes) {
  if (bytes == 0) bytes = 1;
  if (bytes > max_buffer_bytes)
    throw core::shape_error("array of " + std::to_string(bytes) +
                            " bytes: expected at most 2^47 bytes (more than any machine's "
                            "address space), found a larger request");
  std::byte* p = buffer_cache().take(bytes);
  if (!p) p = static_cast<std::byte*>(::operator new[](bytes, std::align_val_t{64}));
  return std::shared_ptr<std::byte>(p, BufferDelete{bytes});
}

}  // namespace xpr::rt::detail

namespace xpr::rt {

XPR_FUNC Array::operator bool() const {
  if (size() != 1)
    throw type_error(
        "the truth value of an array with more than one element is ambiguous: "
        "expected an array of size 1, found shape " +
        shape().str() + "; use xpr::any or xpr::all");
  return element_as<bool>(0, "bool");
}

XPR_FUNC const detail::ConcreteArray* Array::concrete_or_throw(const char* what) const {
  impl_->check_usable();  // an escaped jvp tracer's primal is not to be read, as `+` refuses it
  const detail::ConcreteArray* c = concrete();
  if (!c)
    throw core::concretization_error(
        std::string("Abstract tracer value encountered where a concrete value is expected: ") +
        what + "() needs the elements of a traced array " + detail::aval_of(*this).str() +
        ". Python-style control flow on traced values is not possible inside make_jaxpr, vmap "
        "or jit; use xpr::where for elementwise choices, xpr::cond / xpr::switch_ for branches, "
        "and xpr::while_loop / xpr::fori_loop / xpr::scan for loops");
  return c;
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
