// SPDX-License-Identifier: MIT
// Element types and JAX's type-promotion lattice with weak types, shared by both tiers.
// C++ numbers are weakly typed like Python scalars in JAX (see docs/dtypes.md).
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <ostream>
#include <string_view>
#include <type_traits>
#include <utility>

#include "xpr/core/error.hpp"

namespace xpr::core {

/// The element types. The order is the promotion order of the strong types.
enum class DType : std::uint8_t { bool_, int32, int64, float32, float64 };

inline constexpr int num_dtypes = 5;

/// JAX's short names, as jaxprs print them: `bool`, `i32`, `i64`, `f32`, `f64`.
constexpr std::string_view short_name(DType t) {
  constexpr std::array<std::string_view, num_dtypes> names{"bool", "i32", "i64", "f32", "f64"};
  return names[static_cast<int>(t)];
}

/// NumPy's names, used in error messages and `dtype=` printing.
constexpr std::string_view name(DType t) {
  constexpr std::array<std::string_view, num_dtypes> names{"bool", "int32", "int64", "float32",
                                                           "float64"};
  return names[static_cast<int>(t)];
}

inline std::ostream& operator<<(std::ostream& os, DType t) { return os << short_name(t); }

constexpr bool is_floating(DType t) { return t == DType::float32 || t == DType::float64; }
constexpr bool is_integer(DType t) { return t == DType::int32 || t == DType::int64; }
constexpr bool is_bool(DType t) { return t == DType::bool_; }
constexpr std::size_t itemsize(DType t) {
  constexpr std::array<std::size_t, num_dtypes> sizes{1, 4, 8, 4, 8};
  return sizes[static_cast<int>(t)];
}

/// The element type that stores a dtype (`bool` is one byte).
template <DType T>
using element_t = std::conditional_t<
    T == DType::bool_, bool,
    std::conditional_t<T == DType::int32, std::int32_t,
                       std::conditional_t<T == DType::int64, std::int64_t,
                                          std::conditional_t<T == DType::float32, float, double>>>>;

namespace detail {
template <class T>
constexpr bool dependent_false = false;
}

/// Whether the C++ integer `v` is a value of the integer type `E`.
template <class E, class T>
constexpr bool integer_fits(T v) {
  using W = std::conditional_t<std::is_signed_v<T>, long long, unsigned long long>;
  return std::in_range<E>(static_cast<W>(v));  // W: in_range rejects bool and character types
}

/// `x` converted to the element type `To` as XLA's convert (so JAX's astype) defines it where C++
/// leaves it undefined: a float to an integer truncates toward zero, NaN gives 0 and values
/// beyond the integer's range saturate to its min or max; nonzero is true for bool. Every
/// float-to-integer conversion of arbitrary values goes through here.
template <class To, class From>
constexpr To convert_element(From x) noexcept {
  if constexpr (std::is_same_v<To, bool>) {
    return x != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    constexpr To lo = std::numeric_limits<To>::min(), hi = std::numeric_limits<To>::max();
    if (x != x) return To(0);
    if (x <= static_cast<From>(lo)) return lo;
    if (x >= static_cast<From>(hi)) return hi;  // hi rounds up to a power of two: excluded
    return static_cast<To>(x);
  } else {
    return static_cast<To>(x);
  }
}

/// The dtype of a C++ arithmetic type: `double` f64, `float` f32, `int` i32, `bool` bool, 64-bit
/// integers i64. Unsigned integers map to the signed type that holds all their values.
template <class T>
constexpr DType dtype_of() {
  using U = std::remove_cvref_t<T>;
  if constexpr (std::is_same_v<U, bool>) {
    return DType::bool_;
  } else if constexpr (std::is_integral_v<U>) {
    return (std::is_signed_v<U> ? sizeof(U) <= 4 : sizeof(U) < 4) ? DType::int32 : DType::int64;
  } else if constexpr (std::is_same_v<U, float>) {
    return DType::float32;
  } else if constexpr (std::is_same_v<U, double>) {
    return DType::float64;
  } else {
    static_assert(
        detail::dependent_false<U>,
        "xpr: this C++ type has no xpr dtype; use bool, an integer type, float or double");
    return DType::float64;
  }
}

template <class T>
inline constexpr DType dtype_v = dtype_of<T>();

/// A dtype with JAX's weak-type flag. C++ numbers are weak: they adopt the dtype of a strongly
/// typed operand of the same kind, like Python scalars in JAX.
struct WeakDType {
  DType dtype;
  bool weak = false;
  friend constexpr bool operator==(WeakDType, WeakDType) = default;
};

// ---------------------------------------------------------------------------------------------
// The promotion lattice. JAX's lattice restricted to xpr's dtypes is a chain:
//   bool < i* < i32 < i64 < f* < f32 < f64
// where i* and f* are the weak integer and weak float nodes. The join of a set of types is its
// maximum in this chain; the result is weak exactly when the join is a weak node.
// ---------------------------------------------------------------------------------------------
namespace detail {
// Lattice positions: 0 bool, 1 i*, 2 i32, 3 i64, 4 f*, 5 f32, 6 f64.
constexpr int lattice_position(WeakDType t) {
  switch (t.dtype) {
    case DType::bool_:
      return 0;
    case DType::int32:
      return t.weak ? 1 : 2;
    case DType::int64:
      return t.weak ? 1 : 3;
    case DType::float32:
      return t.weak ? 4 : 5;
    case DType::float64:
      return t.weak ? 4 : 6;
  }
  return 0;
}
}  // namespace detail

/// The promotion of two strong dtypes (`jnp.promote_types`).
constexpr DType promote_types(DType a, DType b) { return a < b ? b : a; }

/// The result type of an operation on operands of these (possibly weak) types, as
/// `jax.numpy.result_type` computes it. When the result is a weak node, its width is the widest
/// of the weak operands of that kind (a lone `float` stays f32, a lone `double` f64).
constexpr WeakDType result_type(std::initializer_list<WeakDType> ts) {
  if (ts.size() == 0) throw value_error("result_type: expected at least one operand, found none");
  bool all_weak = true;
  for (WeakDType t : ts) all_weak = all_weak && t.weak;
  if (all_weak) {
    DType out = ts.begin()->dtype;
    for (WeakDType t : ts) out = promote_types(out, t.dtype);
    return {out, true};
  }
  int top = 0;
  for (WeakDType t : ts) {
    int p = detail::lattice_position(t);
    if (p > top) top = p;
  }
  if (top != 1 && top != 4) {
    // A strong node won. bool is never weak here: a weak bool is a bool.
    constexpr std::array<DType, 7> strong{DType::bool_,  DType::int32,   DType::int32,
                                          DType::int64,  DType::float64, DType::float32,
                                          DType::float64};
    return {top == 0 ? DType::bool_ : strong[static_cast<std::size_t>(top)], false};
  }
  // A weak node won over every strong operand: take the widest weak operand of that kind.
  DType out = top == 1 ? DType::int32 : DType::float32;
  for (WeakDType t : ts)
    if (t.weak && detail::lattice_position(t) == top) out = promote_types(out, t.dtype);
  return {out, true};
}

constexpr WeakDType result_type(WeakDType a, WeakDType b) { return result_type({a, b}); }

}  // namespace xpr::core

namespace xpr {
using core::DType;
using core::dtype_of;
using core::promote_types;
using core::result_type;
using core::WeakDType;
inline constexpr DType bool_ = DType::bool_;
inline constexpr DType int32 = DType::int32;
inline constexpr DType int64 = DType::int64;
inline constexpr DType float32 = DType::float32;
inline constexpr DType float64 = DType::float64;
}  // namespace xpr
