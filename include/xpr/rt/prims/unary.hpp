// SPDX-License-Identifier: MIT
// The unary elementwise primitives: neg sin cos tan tanh exp log log1p expm1 sqrt rsqrt abs sign
// logistic. Each is `Elementwise<op::X>` (rt/prims/elementwise_primitive.hpp), its rules derived
// from the `xpr::op` struct (core/ops.hpp); this file names them as JAX does (`sin_p`).
#pragma once

#include "xpr/core/ops.hpp"
#include "xpr/rt/numpy_elementwise.hpp"
#include "xpr/rt/prims/elementwise_primitive.hpp"

namespace xpr::rt {

// Compiled-library mode (XPR_COMPILED_LIB, the xpr::runtime library): these primitives' rules
// and kernels are instantiated once, in src/runtime.cpp, not in every translation unit.
#ifdef XPR_COMPILED_LIB
extern template class Elementwise<op::neg>;
extern template class Elementwise<op::sin>;
extern template class Elementwise<op::cos>;
extern template class Elementwise<op::tan>;
extern template class Elementwise<op::tanh>;
extern template class Elementwise<op::exp>;
extern template class Elementwise<op::log>;
extern template class Elementwise<op::log1p>;
extern template class Elementwise<op::expm1>;
extern template class Elementwise<op::sqrt>;
extern template class Elementwise<op::rsqrt>;
extern template class Elementwise<op::abs>;
extern template class Elementwise<op::sign>;
extern template class Elementwise<op::logistic>;
#endif

inline constinit const Elementwise<op::neg>& neg_p = elementwise_p<op::neg>;
inline constinit const Elementwise<op::sin>& sin_p = elementwise_p<op::sin>;
inline constinit const Elementwise<op::cos>& cos_p = elementwise_p<op::cos>;
inline constinit const Elementwise<op::tan>& tan_p = elementwise_p<op::tan>;
inline constinit const Elementwise<op::tanh>& tanh_p = elementwise_p<op::tanh>;
inline constinit const Elementwise<op::exp>& exp_p = elementwise_p<op::exp>;
inline constinit const Elementwise<op::log>& log_p = elementwise_p<op::log>;
inline constinit const Elementwise<op::log1p>& log1p_p = elementwise_p<op::log1p>;
inline constinit const Elementwise<op::expm1>& expm1_p = elementwise_p<op::expm1>;
inline constinit const Elementwise<op::sqrt>& sqrt_p = elementwise_p<op::sqrt>;
inline constinit const Elementwise<op::rsqrt>& rsqrt_p = elementwise_p<op::rsqrt>;
inline constinit const Elementwise<op::abs>& abs_p = elementwise_p<op::abs>;
inline constinit const Elementwise<op::sign>& sign_p = elementwise_p<op::sign>;
inline constinit const Elementwise<op::logistic>& logistic_p = elementwise_p<op::logistic>;

}  // namespace xpr::rt
