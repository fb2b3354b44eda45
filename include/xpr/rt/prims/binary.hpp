// SPDX-License-Identifier: MIT
// The binary arithmetic primitives: add sub mul div max min pow rem, and the bitwise and or xor.
// Each is `Elementwise<op::X>` (rt/prims/elementwise_primitive.hpp), its rules derived from the
// `xpr::op` struct (core/ops.hpp); this file names them as JAX does (`add_p`). Operands have equal
// dtypes and shapes (a rank-0 operand stands for any shape); jax.numpy's promotion and broadcasting
// happen before binding (rt/numpy_elementwise.hpp).
#pragma once

#include "xpr/core/ops.hpp"
#include "xpr/rt/numpy_elementwise.hpp"
#include "xpr/rt/prims/elementwise_primitive.hpp"

namespace xpr::rt {

// Compiled-library mode (XPR_COMPILED_LIB, the xpr::runtime library): these primitives' rules
// and kernels are instantiated once, in src/runtime.cpp, not in every translation unit.
#ifdef XPR_COMPILED_LIB
extern template class Elementwise<op::add>;
extern template class Elementwise<op::sub>;
extern template class Elementwise<op::mul>;
extern template class Elementwise<op::div>;
extern template class Elementwise<op::max>;
extern template class Elementwise<op::min>;
extern template class Elementwise<op::pow>;
extern template class Elementwise<op::rem>;
extern template class Elementwise<op::and_>;
extern template class Elementwise<op::or_>;
extern template class Elementwise<op::xor_>;
#endif

inline constinit const Elementwise<op::add>& add_p = elementwise_p<op::add>;
inline constinit const Elementwise<op::sub>& sub_p = elementwise_p<op::sub>;
inline constinit const Elementwise<op::mul>& mul_p = elementwise_p<op::mul>;
inline constinit const Elementwise<op::div>& div_p = elementwise_p<op::div>;
inline constinit const Elementwise<op::max>& max_p = elementwise_p<op::max>;
inline constinit const Elementwise<op::min>& min_p = elementwise_p<op::min>;
inline constinit const Elementwise<op::pow>& pow_p = elementwise_p<op::pow>;
inline constinit const Elementwise<op::rem>& rem_p = elementwise_p<op::rem>;
/// and, or, xor of bools and integers: outside the shared list, whose entries all take floats.
inline constinit const Elementwise<op::and_>& and_p = elementwise_p<op::and_>;
inline constinit const Elementwise<op::or_>& or_p = elementwise_p<op::or_>;
inline constinit const Elementwise<op::xor_>& xor_p = elementwise_p<op::xor_>;

}  // namespace xpr::rt
