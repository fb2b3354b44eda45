// SPDX-License-Identifier: MIT
// `zeros_like_aval` and `ones_like_aval`: concrete arrays of a given type. The autodiff
// interpreters use them where a symbolic zero must become an array (JAX's `instantiate_zeros`)
// and to seed reverse mode with a cotangent of one.
#pragma once

#include <cstring>

#include "xpr/core/config.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/aval.hpp"

namespace xpr::rt {

/// Zeros with the shape, dtype and weak flag of `aval`.
Array zeros_like_aval(const ShapedArray& aval);

/// Ones with the shape, dtype and weak flag of `aval`.
Array ones_like_aval(const ShapedArray& aval);

}  // namespace xpr::rt

#if XPR_DEFINITIONS

namespace xpr::rt {

XPR_FUNC Array zeros_like_aval(const ShapedArray& aval) {
  ArrayBuilder b(aval);
  std::memset(b.bytes(), 0, static_cast<std::size_t>(aval.size()) * core::itemsize(aval.dtype));
  return std::move(b).finish();
}

XPR_FUNC Array ones_like_aval(const ShapedArray& aval) {
  ArrayBuilder b(aval);
  dispatch_dtype(aval.dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = b.data<T>();
    for (std::int64_t i = 0; i < aval.size(); ++i) p[i] = T(1);
  });
  return std::move(b).finish();
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
