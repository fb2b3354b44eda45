// SPDX-License-Identifier: MIT
// integer_pow[y](x): `x ** y` for an integer `y` fixed where the operation is written, computed by
// repeated squaring as XLA does (`x * x` is exact where `pow(x, 2.0)` need not be). jnp.square and
// jnp.power with a C++ integer exponent bind it. It is `Elementwise<op::integer_pow>`
// (rt/prims/elementwise_primitive.hpp), its rules derived from the `xpr::op::integer_pow` struct
// (core/ops.hpp), whose jvp takes the parameter `y`; this file names it as JAX does.
#pragma once

#include "xpr/core/ops.hpp"
#include "xpr/rt/numpy_elementwise.hpp"
#include "xpr/rt/prims/elementwise_primitive.hpp"

namespace xpr::rt {

#ifdef XPR_COMPILED_LIB
extern template class Elementwise<op::integer_pow>;
#endif

/// integer_pow[y](x) for int32, int64, float32 and float64 `x`; integer `x` needs `y >= 0`.
inline constinit const Elementwise<op::integer_pow>& integer_pow_p = elementwise_p<op::integer_pow>;

}  // namespace xpr::rt
