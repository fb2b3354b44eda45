// SPDX-License-Identifier: MIT
// Array creation, as jax.numpy spells it: `array` (from initializer lists, std::vector and Eigen),
// `zeros`, `ones`, `full`, their `_like` forms, `arange`, `linspace` and `eye`. Each builds a
// concrete array directly with ArrayBuilder: creation binds no primitive, like NumPy constants.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <Eigen/Core>

#include "xpr/core/config.hpp"
#include "xpr/core/dtype.hpp"
#include "xpr/core/error.hpp"
#include "xpr/core/shape.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/aval.hpp"

namespace xpr::rt {

namespace detail {

/// C++ numbers that can become array elements (`bool` included).
template <class T>
concept ElementNumber = std::is_arithmetic_v<std::remove_cvref_t<T>>;

/// C++ numbers that make sense as `arange` / `linspace` bounds (`bool` excluded).
template <class T>
concept RangeNumber = ElementNumber<T> && !std::is_same_v<std::remove_cvref_t<T>, bool>;

// `value` converted to the element type `E` the way NumPy casts: nonzero is true for bool, NaN
// and out-of-range floats as astype gives them, an integer out of the integer dtype's range a
// value_error (NumPy 2's OverflowError).
template <class E, class T>
E element_cast(const T& value) {
  return number_as_element<E>(value);
}

// Builds an array of `shape` and `dtype` whose element i is `at(i)` (any arithmetic type).
template <class At>
Array build_array(Shape shape, DType dtype, bool weak_type, At at) {
  ArrayBuilder b(ShapedArray{std::move(shape), dtype, weak_type});
  auto n = static_cast<std::size_t>(b.aval().size());
  dispatch_dtype(dtype, [&](auto tag) {
    using E = decltype(tag);
    E* out = b.data<E>();
    for (std::size_t i = 0; i < n; ++i) out[i] = element_cast<E>(at(i));
  });
  return std::move(b).finish();
}

void check_fill_size(const char* fn, const Shape& shape, std::size_t found);

/// `array`'s dtype argument: a DType, but not `{}`. A DType parameter takes `{}` as `DType{}`,
/// bool, so `array(values, {})`, written for the empty shape, made a rank-1 bool array of any
/// values. Without a default constructor `{}` selects the overload taking a Shape (or none).
struct ArrayDType {
  DType value;
  constexpr ArrayDType(DType d) : value(d) {}  // NOLINT(google-explicit-constructor): a DType
  constexpr operator DType() const { return value; }
};

}  // namespace detail

// ---- array -----------------------------------------------------------------------------------

/// `xpr::array({1.0, 2.0, 3.0})`: a rank-1 array whose dtype comes from the element type
/// (strongly typed, as `jnp.array` of a list), or `dtype` when given.
template <detail::ElementNumber T>
Array array(std::initializer_list<T> values, detail::ArrayDType dtype = core::dtype_v<T>) {
  const T* p = values.begin();
  return detail::build_array(Shape{static_cast<std::int64_t>(values.size())}, dtype, false,
                             [p](std::size_t i) -> T { return p[i]; });
}

/// `xpr::array({{1., 2.}, {3., 4.}})`: a rank-2 array, one inner list per row. Rows of
/// different lengths throw `shape_error`.
template <detail::ElementNumber T>
Array array(std::initializer_list<std::initializer_list<T>> rows,
            detail::ArrayDType dtype = core::dtype_v<T>) {
  std::size_t cols = rows.size() ? rows.begin()->size() : 0;
  std::vector<T> flat;
  flat.reserve(rows.size() * cols);
  std::size_t r = 0;
  for (const auto& row : rows) {
    if (row.size() != cols)
      throw core::shape_error("array: expected every row to have " + std::to_string(cols) +
                              " elements (the length of row 0), found " +
                              std::to_string(row.size()) + " in row " + std::to_string(r));
    flat.insert(flat.end(), row.begin(), row.end());
    ++r;
  }
  Shape shape{static_cast<std::int64_t>(rows.size()), static_cast<std::int64_t>(cols)};
  return detail::build_array(std::move(shape), dtype, false,
                             [&flat](std::size_t i) -> T { return flat[i]; });
}

/// A copy of `values` with the given shape (row-major); a size mismatch throws `shape_error`.
template <detail::ElementNumber T>
Array array(const std::vector<T>& values, const Shape& shape,
            detail::ArrayDType dtype = core::dtype_v<T>) {
  detail::check_fill_size("array", shape, values.size());
  return detail::build_array(shape, dtype, false,
                             [&values](std::size_t i) -> T { return values[i]; });
}

/// A rank-1 copy of `values`.
template <detail::ElementNumber T>
Array array(const std::vector<T>& values, detail::ArrayDType dtype = core::dtype_v<T>) {
  return array(values, Shape{static_cast<std::int64_t>(values.size())}, dtype);
}

/// A copy of a dense Eigen matrix, array or expression. Vector types (`VectorXd`,
/// `RowVector3f`, ...) give shape (n,); everything else gives (rows, cols), row-major.
template <class Derived>
Array array(const Eigen::DenseBase<Derived>& m,
            detail::ArrayDType dtype = core::dtype_v<typename Derived::Scalar>) {
  using S = typename Derived::Scalar;
  static_assert(std::is_arithmetic_v<S>,
                "xpr::array(Eigen): the Eigen scalar type must be bool, an integer type, float "
                "or double");
  // Evaluated once into a row-major temporary, so expressions are computed a single time.
  const Eigen::Array<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> e = m.derived().array();
  Shape shape = Derived::IsVectorAtCompileTime ? Shape{static_cast<std::int64_t>(e.size())}
                                               : Shape{static_cast<std::int64_t>(e.rows()),
                                                       static_cast<std::int64_t>(e.cols())};
  const S* p = e.data();
  return detail::build_array(std::move(shape), dtype, false,
                             [p](std::size_t i) -> S { return p[i]; });
}

// ---- constants -------------------------------------------------------------------------------

/// An array of `shape` filled with `value`. Without `dtype`, the dtype comes from the C++ type
/// and the result is weakly typed like the number itself (`jnp.full` of a Python scalar).
template <detail::ElementNumber T>
Array full(const Shape& shape, T value) {
  return detail::build_array(shape, core::dtype_v<T>, !std::is_same_v<T, bool>,
                             [value](std::size_t) { return value; });
}
/// An array of `shape` and `dtype` filled with `value` (strongly typed).
template <detail::ElementNumber T>
Array full(const Shape& shape, T value, DType dtype) {
  // The value is converted once, before the elements are made (jnp.full converts the fill value
  // first): an integer out of `dtype`'s range is a value_error even for an empty shape.
  std::optional<Array> out;
  dispatch_dtype(dtype, [&](auto tag) {
    const auto e = detail::element_cast<decltype(tag)>(value);
    out = detail::build_array(shape, dtype, false, [e](std::size_t) { return e; });
  });
  return std::move(*out);
}

/// Zeros of `shape`, f64 unless `dtype` says otherwise.
inline Array zeros(const Shape& shape, DType dtype = DType::float64) {
  return full(shape, 0, dtype);
}
/// Ones of `shape`, f64 unless `dtype` says otherwise.
inline Array ones(const Shape& shape, DType dtype = DType::float64) {
  return full(shape, 1, dtype);
}

/// An array of `x`'s shape and dtype (and weak type) filled with `value`. Only `x`'s abstract
/// value is read, so `x` may be a tracer.
template <detail::ElementNumber T>
Array full_like(const Array& x, T value) {
  return detail::build_array(x.shape(), x.dtype(), x.weak_type(),
                             [value](std::size_t) { return value; });
}
/// An array of `x`'s shape with `dtype`, filled with `value` (strongly typed).
template <detail::ElementNumber T>
Array full_like(const Array& x, T value, DType dtype) {
  return full(x.shape(), value, dtype);
}
inline Array zeros_like(const Array& x) { return full_like(x, 0); }
inline Array zeros_like(const Array& x, DType dtype) { return full_like(x, 0, dtype); }
inline Array ones_like(const Array& x) { return full_like(x, 1); }
inline Array ones_like(const Array& x, DType dtype) { return full_like(x, 1, dtype); }

// ---- ranges ----------------------------------------------------------------------------------

/// `arange(start, stop, step)` in `dtype`: `start + i * step` for i < ceil((stop - start) / step).
template <detail::RangeNumber A, detail::RangeNumber B, detail::RangeNumber C>
Array arange(A start, B stop, C step, DType dtype) {
  using T = std::common_type_t<A, B, C>;
  if (step == C(0))
    throw core::value_error("arange: expected a nonzero step, found " + std::to_string(step));
  std::int64_t n = 0;
  if constexpr (std::is_integral_v<T>) {
    // Exact for integers, where a detour through double could round; checked, since
    // `arange(INT64_MIN, INT64_MAX)` has more elements than int64 counts. Unsigned bounds beyond
    // INT64_MAX are refused, not wrapped.
    const char* what = "arange: the number of elements";
    auto d = core::checked_sub(detail::number_as_element<std::int64_t>(stop),
                               detail::number_as_element<std::int64_t>(start), what);
    auto s = detail::number_as_element<std::int64_t>(step);
    if (s < 0) d = core::checked_neg(d, what), s = core::checked_neg(s, what);
    n = d <= 0 ? 0 : d / s + (d % s != 0);
  } else {
    double len = std::ceil((static_cast<double>(stop) - static_cast<double>(start)) /
                           static_cast<double>(step));
    if (!std::isfinite(len))
      throw core::value_error("arange: expected finite bounds and step, found start " +
                              std::to_string(start) + ", stop " + std::to_string(stop) + ", step " +
                              std::to_string(step));
    if (len >= 0x1p63)
      throw core::shape_error("arange: expected a number of elements that fits in int64, found " +
                              std::to_string(len));
    n = len > 0 ? static_cast<std::int64_t>(len) : 0;
  }
  return detail::build_array(Shape{n}, dtype, false, [start, step](std::size_t i) {
    if constexpr (std::is_integral_v<T>)
      return static_cast<std::int64_t>(start) +
             static_cast<std::int64_t>(i) * static_cast<std::int64_t>(step);
    else
      return static_cast<double>(start) + static_cast<double>(i) * static_cast<double>(step);
  });
}
/// `arange(start, stop, step)`; the dtype is that of the C++ common type of the arguments, like
/// NumPy's (`int` gives i32, `double` f64).
template <detail::RangeNumber A, detail::RangeNumber B, detail::RangeNumber C>
Array arange(A start, B stop, C step) {
  return arange(start, stop, step, core::dtype_v<std::common_type_t<A, B, C>>);
}
/// `arange(start, stop)`: step 1.
template <detail::RangeNumber A, detail::RangeNumber B>
Array arange(A start, B stop) {
  return arange(start, stop, 1, core::dtype_v<std::common_type_t<A, B>>);
}
/// `arange(stop)`: 0, 1, ..., in the dtype of `stop`.
template <detail::RangeNumber T>
Array arange(T stop) {
  return arange(T(0), stop, 1, core::dtype_v<T>);
}

/// `num` evenly spaced values from `start` to `stop` (included when `endpoint`), in `dtype`.
template <detail::RangeNumber A, detail::RangeNumber B>
Array linspace(A start, B stop, std::int64_t num, bool endpoint, DType dtype) {
  if (num < 0)
    throw core::value_error("linspace: expected a non-negative number of samples, found " +
                            std::to_string(num));
  auto a = static_cast<double>(start), z = static_cast<double>(stop);
  std::int64_t div = endpoint ? num - 1 : num;
  double step = div > 0 ? (z - a) / static_cast<double>(div) : 0.0;
  return detail::build_array(Shape{num}, dtype, false, [=](std::size_t i) {
    // NumPy's formula, with the endpoint stored exactly.
    if (endpoint && num > 1 && static_cast<std::int64_t>(i) == num - 1) return z;
    return a + static_cast<double>(i) * step;
  });
}
/// `linspace(start, stop, num = 50, endpoint = true)`: f32 when the bounds are `float`, f64
/// otherwise (integers included), as `jnp.linspace` gives the inexact type of its bounds.
template <detail::RangeNumber A, detail::RangeNumber B>
Array linspace(A start, B stop, std::int64_t num = 50, bool endpoint = true) {
  using T = std::common_type_t<A, B>;
  return linspace(start, stop, num, endpoint,
                  std::is_same_v<T, float> ? DType::float32 : DType::float64);
}

/// The n x m matrix with ones on diagonal `k` (0 the main one, positive above, negative below).
Array eye(std::int64_t n, std::int64_t m, std::int64_t k = 0, DType dtype = DType::float64);
/// The n x n identity.
inline Array eye(std::int64_t n, DType dtype = DType::float64) { return eye(n, n, 0, dtype); }

}  // namespace xpr::rt

namespace xpr {
using rt::arange;
using rt::array;
using rt::eye;
using rt::full;
using rt::full_like;
using rt::linspace;
using rt::ones;
using rt::ones_like;
using rt::zeros;
using rt::zeros_like;
}  // namespace xpr

#if XPR_DEFINITIONS

namespace xpr::rt::detail {

XPR_FUNC void check_fill_size(const char* fn, const Shape& shape, std::size_t found) {
  if (static_cast<std::size_t>(shape.size()) != found)
    throw core::shape_error(std::string(fn) + ": expected " + std::to_string(shape.size()) +
                            " elements to fill shape " + shape.str() + ", found " +
                            std::to_string(found));
}

}  // namespace xpr::rt::detail

namespace xpr::rt {

XPR_FUNC Array eye(std::int64_t n, std::int64_t m, std::int64_t k, DType dtype) {
  auto cols = static_cast<std::size_t>(m < 0 ? 0 : m);
  return detail::build_array(Shape{n, m}, dtype, false, [cols, k](std::size_t i) {
    auto r = static_cast<std::int64_t>(i / cols), c = static_cast<std::int64_t>(i % cols);
    return c - r == k ? 1 : 0;
  });
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
