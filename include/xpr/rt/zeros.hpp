// SPDX-License-Identifier: MIT
// `zeros_like_aval`: a concrete array of zeros of a given type. The JVP interpreter uses it for
// the tangents of values that do not depend on the inputs (JAX's `zeros_like_aval`).
#pragma once

#include <cstring>

#include "xpr/rt/array.hpp"
#include "xpr/rt/aval.hpp"

namespace xpr::rt {

/// Zeros with the shape, dtype and weak flag of `aval`.
inline Array zeros_like_aval(const ShapedArray& aval) {
  ArrayBuilder b(aval);
  std::memset(b.bytes(), 0, static_cast<std::size_t>(aval.size()) * core::itemsize(aval.dtype));
  return std::move(b).finish();
}

}  // namespace xpr::rt
