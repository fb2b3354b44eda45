// SPDX-License-Identifier: MIT
// The unary elementwise primitives: neg sin cos tan tanh exp log log1p expm1 sqrt rsqrt abs sign
// logistic square exp2 cbrt erf floor ceil copy, and two outside the shared list: round (a
// parameter, `rounding_method`) and not (bools and integers only). Each is `Elementwise<op::X>`
// (rt/prims/elementwise_primitive.hpp), its rules derived from the `xpr::op` struct
// (core/ops.hpp); this file names them as JAX does (`sin_p`).
#pragma once

#include <cstdint>
#include <string>

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
extern template class Elementwise<op::square>;
extern template class Elementwise<op::exp2>;
extern template class Elementwise<op::cbrt>;
extern template class Elementwise<op::erf>;
extern template class Elementwise<op::floor>;
extern template class Elementwise<op::ceil>;
extern template class Elementwise<op::copy>;
extern template class Elementwise<op::round>;
extern template class Elementwise<op::not_>;
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
inline constinit const Elementwise<op::square>& square_p = elementwise_p<op::square>;
inline constinit const Elementwise<op::exp2>& exp2_p = elementwise_p<op::exp2>;
inline constinit const Elementwise<op::cbrt>& cbrt_p = elementwise_p<op::cbrt>;
inline constinit const Elementwise<op::erf>& erf_p = elementwise_p<op::erf>;
inline constinit const Elementwise<op::floor>& floor_p = elementwise_p<op::floor>;
inline constinit const Elementwise<op::ceil>& ceil_p = elementwise_p<op::ceil>;
inline constinit const Elementwise<op::copy>& copy_p = elementwise_p<op::copy>;
/// round[rounding_method](x): outside the shared list, as integer_pow, for its parameter.
inline constinit const Elementwise<op::round>& round_p = elementwise_p<op::round>;
/// not(x) of bools and integers: outside the shared list, whose entries all take floats.
inline constinit const Elementwise<op::not_>& not_p = elementwise_p<op::not_>;

/// `xpr::round(x, method)`: `round[rounding_method=...]`, ties to even unless told otherwise
/// (`jnp.round`). Integers and bools are already integral: returned as they are, as jnp.round
/// does for integer arrays.
inline Array xpr_apply(op::round, const Array& x,
                       rounding_method m = rounding_method::to_nearest_even) {
  if (!core::is_floating(x.dtype())) return x;
  return bind1(round_p, {x}, {{std::string(op::round::parameter), static_cast<std::int64_t>(m)}});
}

/// `xpr::logical_not(x)` (`jnp.logical_not`): `x` converted to bool (nonzero is true), then
/// `not`.
inline Array xpr_apply(op::logical_not, const Array& x) {
  Array b = core::is_bool(x.dtype()) ? x : convert_element_type(x, DType::bool_, false);
  return bind1(not_p, {b});
}

}  // namespace xpr::rt
