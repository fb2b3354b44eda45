// SPDX-License-Identifier: MIT
// The unary elementwise primitives: neg sin cos tan tanh exp log log1p expm1 sqrt rsqrt abs sign
// logistic. Each is `Elementwise<op::X>` (rt/prims/elementwise_primitive.hpp), its rules derived
// from the `xpr::op` struct (core/ops.hpp); this file names them as JAX does (`sin_p`).
#pragma once

#include "xpr/core/ops.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/prims/binary.hpp"
#include "xpr/rt/prims/elementwise_primitive.hpp"

namespace xpr::rt {

inline const Elementwise<op::neg>& neg_p = elementwise_p<op::neg>;
inline const Elementwise<op::sin>& sin_p = elementwise_p<op::sin>;
inline const Elementwise<op::cos>& cos_p = elementwise_p<op::cos>;
inline const Elementwise<op::tan>& tan_p = elementwise_p<op::tan>;
inline const Elementwise<op::tanh>& tanh_p = elementwise_p<op::tanh>;
inline const Elementwise<op::exp>& exp_p = elementwise_p<op::exp>;
inline const Elementwise<op::log>& log_p = elementwise_p<op::log>;
inline const Elementwise<op::log1p>& log1p_p = elementwise_p<op::log1p>;
inline const Elementwise<op::expm1>& expm1_p = elementwise_p<op::expm1>;
inline const Elementwise<op::sqrt>& sqrt_p = elementwise_p<op::sqrt>;
inline const Elementwise<op::rsqrt>& rsqrt_p = elementwise_p<op::rsqrt>;
inline const Elementwise<op::abs>& abs_p = elementwise_p<op::abs>;
inline const Elementwise<op::sign>& sign_p = elementwise_p<op::sign>;
inline const Elementwise<op::logistic>& logistic_p = elementwise_p<op::logistic>;

/// `-x`.
inline Array operator-(const Array& x) { return xpr_apply(op::neg{}, x); }

}  // namespace xpr::rt
