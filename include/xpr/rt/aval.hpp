// SPDX-License-Identifier: MIT
// Abstract values: what is known about an array when its elements are not (shape, dtype, weak
// type). Abstract evaluation rules map these; jaxprs annotate variables with them (`f32[3]`).
#pragma once

#include <cstddef>
#include <functional>
#include <ostream>
#include <sstream>
#include <string>

#include "xpr/core/config.hpp"
#include "xpr/core/dtype.hpp"
#include "xpr/core/shape.hpp"

namespace xpr::rt {

using core::DType;
using core::Shape;
using core::WeakDType;

/// JAX's ShapedArray: the shape, the dtype and the weak-type flag of an array.
struct ShapedArray {
  Shape shape;
  DType dtype = DType::float64;
  bool weak_type = false;

  std::size_t ndim() const noexcept { return shape.rank(); }
  std::int64_t size() const noexcept { return shape.size(); }
  WeakDType weak_dtype() const noexcept { return {dtype, weak_type}; }
  /// `f32[8,3]`, as jaxprs print it.
  XPR_MEMBER std::string str() const;
  /// Shapes and dtypes agree (the weak flag is a typing hint, not part of the type).
  bool same_type(const ShapedArray& o) const { return shape == o.shape && dtype == o.dtype; }
  friend bool operator==(const ShapedArray&, const ShapedArray&) = default;
};

inline std::ostream& operator<<(std::ostream& os, const ShapedArray& a) { return os << a.str(); }

}  // namespace xpr::rt

template <>
struct std::hash<xpr::rt::ShapedArray> {
  std::size_t operator()(const xpr::rt::ShapedArray& a) const noexcept {
    return std::hash<xpr::core::Shape>{}(a.shape) * 31u + static_cast<std::size_t>(a.dtype) * 2u +
           (a.weak_type ? 1u : 0u);
  }
};

#if XPR_DEFINITIONS

namespace xpr::rt {

XPR_FUNC std::string ShapedArray::str() const {
  // The text of `os << dtype << shape`, without an ostringstream: jit's first call keys its trace
  // cache on this, and stream code run for the first time in a process costs page faults.
  std::string s(core::short_name(dtype));
  s += '[';
  for (std::size_t i = 0; i < shape.rank(); ++i) {
    if (i) s += ',';
    s += std::to_string(shape[i]);
  }
  s += ']';
  return s;
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
