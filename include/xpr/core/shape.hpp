// SPDX-License-Identifier: MIT
// Array shapes: a list of dimension sizes, row-major. Shared by both tiers; printed the way
// jaxprs print them (`f32[8,3]`) and the way NumPy's errors print them (`(8, 3)`).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <ostream>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "xpr/core/error.hpp"

namespace xpr::core {

/// An `in_axes` / `out_axes` entry meaning "this value has no batch axis" (Python's None), for
/// both tiers' `vmap` (`xpr::not_mapped`). Here rather than beside either `vmap`: a
/// `std::tuple{0, xpr::not_mapped}` then brings neither tier's `vmap` in by argument-dependent
/// lookup, so `using namespace xpr::ct;` and `vmap(f, in_axes)` are not ambiguous.
struct NotMapped {
  friend constexpr bool operator==(NotMapped, NotMapped) { return true; }
};
inline constexpr NotMapped not_mapped{};

// Checked arithmetic for sizes, byte counts and index bounds: input (a jaxpr text, a user's
// shape) may ask for sizes past int64, and a wrapped product would allocate a small buffer and
// write past it. Each helper throws `shape_error` saying what overflowed instead of wrapping.

/// a * b, or `shape_error` naming `what` if it does not fit in int64.
inline std::int64_t checked_mul(std::int64_t a, std::int64_t b, const char* what) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    throw shape_error(std::string(what) + ": expected a value that fits in int64, found " +
                      std::to_string(a) + " * " + std::to_string(b) + ", which overflows");
  return r;
}
/// a + b, or `shape_error` naming `what` if it does not fit in int64.
inline std::int64_t checked_add(std::int64_t a, std::int64_t b, const char* what) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r))
    throw shape_error(std::string(what) + ": expected a value that fits in int64, found " +
                      std::to_string(a) + " + " + std::to_string(b) + ", which overflows");
  return r;
}
/// a - b, or `shape_error` naming `what` if it does not fit in int64.
inline std::int64_t checked_sub(std::int64_t a, std::int64_t b, const char* what) {
  std::int64_t r = 0;
  if (__builtin_sub_overflow(a, b, &r))
    throw shape_error(std::string(what) + ": expected a value that fits in int64, found " +
                      std::to_string(a) + " - " + std::to_string(b) + ", which overflows");
  return r;
}
/// -a, or `shape_error` naming `what` for INT64_MIN.
inline std::int64_t checked_neg(std::int64_t a, const char* what) {
  return checked_sub(0, a, what);
}
/// The bytes of `count` elements of `itemsize` bytes, or `shape_error` if that does not fit in
/// size_t (a wrapped count would allocate a small buffer and write past it).
inline std::size_t checked_nbytes(std::int64_t count, std::size_t itemsize) {
  std::size_t r = 0;
  if (count < 0 || __builtin_mul_overflow(static_cast<std::size_t>(count), itemsize, &r))
    throw shape_error(
        "array of " + std::to_string(count) + " elements of " + std::to_string(itemsize) +
        " bytes: expected a byte count that fits in size_t, found one that overflows");
  return r;
}

/// The sizes of an array's dimensions, outermost first.
class Shape {
 public:
  using value_type = std::int64_t;

  Shape() = default;
  /// Throws `value_error` for a negative size and `shape_error` when the number of elements (the
  /// product of the nonzero sizes, which bounds every stride) does not fit in int64.
  Shape(std::initializer_list<std::int64_t> dims) : dims_(dims) { check(); }
  explicit Shape(std::vector<std::int64_t> dims) : dims_(std::move(dims)) { check(); }
  explicit Shape(std::span<const std::int64_t> dims) : dims_(dims.begin(), dims.end()) { check(); }

  std::size_t rank() const noexcept { return dims_.size(); }
  std::int64_t operator[](std::size_t i) const noexcept { return dims_[i]; }
  /// Product of the dimensions (1 for rank 0); fits in int64, as the constructors check.
  std::int64_t size() const noexcept {
    std::int64_t n = 1;
    for (auto d : dims_) n *= d;
    return n;
  }
  auto begin() const noexcept { return dims_.begin(); }
  auto end() const noexcept { return dims_.end(); }
  const std::vector<std::int64_t>& dims() const noexcept { return dims_; }
  std::span<const std::int64_t> span() const noexcept { return dims_; }
  void push_back(std::int64_t d) {
    if (d < 0)
      throw value_error("shape: expected non-negative dimension sizes, found " + std::to_string(d));
    dims_.push_back(d);
    try {
      check();
    } catch (...) {
      dims_.pop_back();
      throw;
    }
  }

  friend bool operator==(const Shape&, const Shape&) = default;

  /// `(8, 3)`, `(4,)`, `()`: NumPy's spelling, used in error messages.
  std::string str() const {
    std::ostringstream os;
    os << '(';
    for (std::size_t i = 0; i < dims_.size(); ++i) os << (i ? ", " : "") << dims_[i];
    if (dims_.size() == 1) os << ',';
    os << ')';
    return os.str();
  }

 private:
  void check() const {
    std::int64_t n = 1;
    for (auto d : dims_) {
      if (d < 0)
        throw value_error("shape: expected non-negative dimension sizes, found " +
                          std::to_string(d));
      if (d != 0 && __builtin_mul_overflow(n, d, &n)) {
        std::ostringstream os;
        os << "shape " << '(';
        for (std::size_t i = 0; i < dims_.size(); ++i) os << (i ? ", " : "") << dims_[i];
        os << (dims_.size() == 1 ? ",)" : ")");
        throw shape_error(os.str() +
                          ": expected a number of elements that fits in int64, found "
                          "a product of sizes that overflows");
      }
    }
  }
  std::vector<std::int64_t> dims_;
};

/// `[8,3]`: the jaxpr spelling (after the dtype).
inline std::ostream& operator<<(std::ostream& os, const Shape& s) {
  os << '[';
  for (std::size_t i = 0; i < s.rank(); ++i) os << (i ? "," : "") << s[i];
  return os << ']';
}

/// Row-major strides, in elements.
inline std::vector<std::int64_t> strides_of(const Shape& s) {
  std::vector<std::int64_t> st(s.rank(), 1);
  for (std::size_t i = s.rank(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

/// Normalizes a possibly negative axis against `rank`, as NumPy does; throws `index_error`.
inline std::size_t canonicalize_axis(std::int64_t axis, std::size_t rank) {
  auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r)
    throw index_error(
        "axis " + std::to_string(axis) + " is out of bounds for array of rank " +
        std::to_string(rank) +
        (r == 0 ? std::string(" (a rank-0 array has no axes)")
                : " (expected -" + std::to_string(r) + " <= axis < " + std::to_string(r) + ")"));
  return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}

/// The argument position `argnum` names in a transformation (`grad<argnum>`) of a call with
/// `num_args` arguments: a negative one counts from the end, as in JAX (`grad<-1>`
/// differentiates with respect to the last argument). Both tiers' transformations.
constexpr int canonicalize_argnum(int argnum, std::size_t num_args) {
  return argnum < 0 ? argnum + static_cast<int>(num_args) : argnum;
}
template <std::size_t NumArgs, std::size_t K>
constexpr std::array<int, K> canonicalize_argnums(std::array<int, K> argnums) {
  for (int& a : argnums) a = canonicalize_argnum(a, NumArgs);
  return argnums;
}

/// Whether canonical `argnums` each name an argument of a call with `NumArgs` arguments, once.
/// A repeated argnum is refused rather than differentiated twice: which of the two would
/// receive the gradient is not defined (the compile-time tier once gave one of them 0).
template <std::size_t NumArgs, std::size_t K>
constexpr bool argnums_valid(const std::array<int, K>& argnums) {
  for (std::size_t i = 0; i < K; ++i) {
    if (argnums[i] < 0 || static_cast<std::size_t>(argnums[i]) >= NumArgs) return false;
    for (std::size_t j = 0; j < i; ++j)
      if (argnums[i] == argnums[j]) return false;
  }
  return true;
}

/// NumPy broadcasting of two shapes; throws `shape_error` naming both.
inline Shape broadcast_shapes(const Shape& a, const Shape& b) {
  std::size_t r = a.rank() > b.rank() ? a.rank() : b.rank();
  std::vector<std::int64_t> out(r);
  for (std::size_t i = 0; i < r; ++i) {
    std::int64_t da = i < r - a.rank() ? 1 : a[i - (r - a.rank())];
    std::int64_t db = i < r - b.rank() ? 1 : b[i - (r - b.rank())];
    if (da != db && da != 1 && db != 1)
      throw shape_error(
          "operands could not be broadcast together: expected equal sizes or 1 in "
          "each dimension, found shapes " +
          a.str() + " and " + b.str());
    out[i] = da == 1 ? db : da;
  }
  return Shape(std::move(out));
}

}  // namespace xpr::core

template <>
struct std::hash<xpr::core::Shape> {
  std::size_t operator()(const xpr::core::Shape& s) const noexcept {
    std::size_t h = s.rank();
    for (auto d : s) h = h * 1000003u ^ std::hash<std::int64_t>{}(d);
    return h;
  }
};

namespace xpr {
using core::Shape;
}
