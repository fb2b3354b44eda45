// SPDX-License-Identifier: MIT
// jax.numpy's elementwise functions on arrays: `xpr::add`, `maximum`, `where`, `pow`, `equal`, ...
// and the operators `+ - * /` and comparisons. Each promotes its operands with JAX's lattice
// (C++ numbers are weak, like Python scalars), broadcasts them with NumPy's rules, then binds one
// primitive; the primitives themselves take equal dtypes and shapes only.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "xpr/core/config.hpp"
#include "xpr/core/dtype.hpp"
#include "xpr/core/error.hpp"
#include "xpr/core/ops.hpp"
#include "xpr/core/shape.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/numpy_shape.hpp"
#include "xpr/rt/prims/compare.hpp"
#include "xpr/rt/prims/convert.hpp"
#include "xpr/rt/prims/elementwise_primitive.hpp"
#include "xpr/rt/prims/select.hpp"
#include "xpr/rt/prims/shape.hpp"
#include "xpr/rt/prims/stop_gradient.hpp"
#include "xpr/rt/trace.hpp"

namespace xpr::rt {

namespace detail {

template <class T>
concept ArrayArg = std::same_as<std::remove_cvref_t<T>, Array>;
template <class T>
concept NumberArg = std::is_arithmetic_v<std::remove_cvref_t<T>>;
/// Operands of a jax.numpy function on arrays: arrays and C++ numbers, at least one array (plain
/// numbers alone compute at once, core/ops.hpp).
template <class... Ts>
concept ArrayOperands = ((ArrayArg<Ts> || NumberArg<Ts>)&&...) && (ArrayArg<Ts> || ...);

template <class Op>
constexpr bool is_binary_op =
    !std::is_null_pointer_v<std::remove_cv_t<decltype(binary_primitive<Op>)>> ||
    !std::is_null_pointer_v<std::remove_cv_t<decltype(comparison_primitive<Op>)>>;

inline WeakDType weak_dtype_of(const Array& x) { return detail::aval_of(x).weak_dtype(); }
/// A C++ number is weakly typed, like a Python scalar; a `bool` is not (JAX's bools never are).
template <NumberArg T>
constexpr WeakDType weak_dtype_of(const T&) {
  return {core::dtype_v<T>, !std::is_same_v<T, bool>};
}

/// An operand converted to the promoted type `t`: arrays by `convert_element_type`, numbers
/// directly into a rank-0 array. `value_error` for an integer that does not fit (JAX's
/// OverflowError for a Python int too large for int32).
inline Array promote_to(const Array& x, WeakDType t) {
  return convert_element_type(x, t.dtype, t.weak);
}
template <NumberArg T>
Array promote_to(const T& v, WeakDType t) {
  ArrayBuilder b(ShapedArray{Shape{}, t.dtype, t.weak});
  dispatch_dtype(t.dtype, [&](auto tag) {
    using E = decltype(tag);
    E e = number_as_element<E>(v);
    std::memcpy(b.bytes(), &e, sizeof(E));
  });
  return std::move(b).finish();
}

/// Binds `prim` to `args` after NumPy broadcasting: operands of equal shapes, or of rank 0, are
/// bound as they are (the primitives accept them); otherwise every operand that is not rank 0 is
/// broadcast to the common shape (`shape_error` naming the shapes when there is none).
/// The shapes are read through `aval()`, which `jit` does not count as reading a size
/// (rt/array.hpp): equal shapes bind the primitive, which checks them again on every trace, and
/// unequal ones bind `broadcast_in_dim`, whose shape parameter `jit` sees in the jaxpr.
Array bind_broadcasting(const Primitive& prim, std::initializer_list<Array> operands);

}  // namespace detail

// ---- operators --------------------------------------------------------------------------------
// Declared before anything below names a concrete primitive (`elementwise_p<op::max>`): the
// primitives' rules are written with these operators (core/ops.hpp), and find them by
// argument-dependent lookup where a primitive is instantiated.

template <class A, class B>
requires detail::ArrayOperands<A, B> Array operator+(const A& a, const B& b) {
  return xpr_apply(op::add{}, a, b);
}
template <class A, class B>
requires detail::ArrayOperands<A, B> Array operator-(const A& a, const B& b) {
  return xpr_apply(op::sub{}, a, b);
}
template <class A, class B>
requires detail::ArrayOperands<A, B> Array operator*(const A& a, const B& b) {
  return xpr_apply(op::mul{}, a, b);
}
/// True division, as `/` on NumPy arrays.
template <class A, class B>
requires detail::ArrayOperands<A, B> Array operator/(const A& a, const B& b) {
  return xpr_apply(op::div{}, a, b);
}
/// The comparisons return bool arrays, as NumPy's do; `if (x > 0.0)` works for size-1 arrays.
template <class A, class B>
requires detail::ArrayOperands<A, B> Array operator==(const A& a, const B& b) {
  return xpr_apply(op::eq{}, a, b);
}
template <class A, class B>
requires detail::ArrayOperands<A, B> Array operator!=(const A& a, const B& b) {
  return xpr_apply(op::ne{}, a, b);
}
template <class A, class B>
requires detail::ArrayOperands<A, B> Array operator<(const A& a, const B& b) {
  return xpr_apply(op::lt{}, a, b);
}
template <class A, class B>
requires detail::ArrayOperands<A, B> Array operator<=(const A& a, const B& b) {
  return xpr_apply(op::le{}, a, b);
}
template <class A, class B>
requires detail::ArrayOperands<A, B> Array operator>(const A& a, const B& b) {
  return xpr_apply(op::gt{}, a, b);
}
template <class A, class B>
requires detail::ArrayOperands<A, B> Array operator>=(const A& a, const B& b) {
  return xpr_apply(op::ge{}, a, b);
}
/// `-x`.
inline Array operator-(const Array& x) { return xpr_apply(op::neg{}, x); }
/// `x += y` is `x = x + y`, as Python's `+=` on a JAX array (immutable: no buffer is written,
/// and a traced `x` names the new value), so accumulating loops read as in the compile-time
/// tier. The result's dtype and shape are those of `x + y`.
template <class B>
requires detail::ArrayOperands<Array, B> Array& operator+=(Array& x, const B& y) {
  return x = x + y;
}
template <class B>
requires detail::ArrayOperands<Array, B> Array& operator-=(Array& x, const B& y) {
  return x = x - y;
}
template <class B>
requires detail::ArrayOperands<Array, B> Array& operator*=(Array& x, const B& y) {
  return x = x * y;
}
template <class B>
requires detail::ArrayOperands<Array, B> Array& operator/=(Array& x, const B& y) {
  return x = x / y;
}

namespace detail {
/// jnp.pow with an integer C++ exponent: `integer_pow` (exact repeated multiplication), on the
/// base promoted to a numeric dtype, as `jnp.power` does for a concrete integer exponent.
inline Array integer_pow_numeric(const Array& x, std::int64_t y) {
  Array base = core::is_bool(x.dtype()) ? convert_element_type(x, DType::int32, x.weak_type()) : x;
  return bind1(elementwise_p<op::integer_pow>, {base}, {{"y", y}});
}

/// `x ** y` for a float array `x` and an integer array `y`, differentiated as JAX's `lax.pow`
/// with an integer exponent. (xpr_apply below.)
Array pow_integer_exponent(const Array& x, const Array& y);

}  // namespace detail

/// `xpr::add`, `subtract`, `multiply`, `divide`, `maximum`, `minimum`, `pow`, `equal`, ... on
/// arrays and numbers. Differences from the bare primitives, all as in jax.numpy:
///  * `divide` is true division: integer and bool operands are promoted to f64 first;
///  * `add` and `multiply` of bools are logical or and and (`max`, `min` on bool);
///  * `pow` with a C++ integer exponent is `integer_pow`; a float base to an integer array
///    exponent is differentiated as JAX's `lax.pow` with an integer exponent (zero where the
///    exponent is 0); integer arrays to integer array powers are not supported (`dtype_error`;
///    use `integer_pow` or convert to a float first);
///  * `fmod` of bools is of int32 (`rem` takes numbers); `bitwise_and`, `_or`, `_xor` of floats
///    are a `dtype_error` naming the dtype.
template <class Op, class A, class B>
requires detail::is_binary_op<Op> && detail::ArrayOperands<A, B> Array xpr_apply(Op, const A& a,
                                                                                 const B& b) {
  if constexpr (std::is_same_v<Op, op::pow> && std::is_integral_v<B> && !std::is_same_v<B, bool>) {
    if constexpr (detail::ArrayArg<A>)
      return detail::integer_pow_numeric(a, core::int64_exponent("pow", b));
  }
  WeakDType t = core::result_type(detail::weak_dtype_of(a), detail::weak_dtype_of(b));
  if constexpr (std::is_same_v<Op, op::div>) {
    if (!core::is_floating(t.dtype)) t.dtype = DType::float64;
  }
  if constexpr (std::is_same_v<Op, op::rem>) {
    if (core::is_bool(t.dtype)) t.dtype = DType::int32;
  }
  if constexpr (std::is_same_v<Op, op::pow> && detail::ArrayArg<B>) {
    // jnp.power's case of a float base and an integer exponent array: JAX binds `lax.pow` with
    // the integer exponent, whose derivative in the base is zero where the exponent is 0
    // (`_pow_jvp_lhs`: select(y == 0, 0, y * x^(y - 1))). The float pow's y * x^(y - 1) is
    // 0 * inf = NaN at x = 0 there, so the exponent is converted, and the zeros selected
    // around the pow.
    if (core::is_floating(t.dtype) && core::is_integer(b.dtype()))
      return detail::pow_integer_exponent(detail::promote_to(a, t), b);
  }
  if constexpr (std::is_same_v<Op, op::pow>) {
    if (!core::is_floating(t.dtype))
      throw core::dtype_error("pow: expected a floating base or exponent, found both of dtype " +
                              std::string(core::name(t.dtype)) +
                              " after promotion; use xpr::integer_pow for an integer exponent "
                              "known in C++, or astype a float dtype");
  }
  const Primitive* prim;
  if constexpr (!std::is_null_pointer_v<
                    std::remove_cv_t<decltype(detail::comparison_primitive<Op>)>>) {
    prim = detail::comparison_primitive<Op>;
  } else {
    prim = detail::binary_primitive<Op>;
    if (core::is_bool(t.dtype)) {
      if constexpr (std::is_same_v<Op, op::add>) prim = &elementwise_p<op::max>;  // logical or
      if constexpr (std::is_same_v<Op, op::mul>) prim = &elementwise_p<op::min>;  // logical and
    }
  }
  return detail::bind_broadcasting(*prim, {detail::promote_to(a, t), detail::promote_to(b, t)});
}

/// `xpr::where(c, a, b)`: `a` where `c` holds, else `b`. `c` is converted to bool when it is not
/// one (nonzero is true); `a` and `b` are promoted together; all three broadcast.
template <class C, class A, class B>
requires detail::ArrayOperands<C, A, B> Array xpr_apply(op::select, const C& c, const A& a,
                                                        const B& b) {
  Array pred = detail::promote_to(c, WeakDType{DType::bool_, false});
  WeakDType t = core::result_type(detail::weak_dtype_of(a), detail::weak_dtype_of(b));
  return detail::bind_broadcasting(select_n_p,
                                   {pred, detail::promote_to(b, t), detail::promote_to(a, t)});
}

/// `xpr::integer_pow(x, n)` (`lax.integer_pow`; `xpr::square` is `integer_pow(x, 2)`): bools are
/// promoted to int32 first, as jnp.square does.
template <std::integral N>
requires(!std::is_same_v<N, bool>) Array xpr_apply(op::integer_pow, const Array& x, N n) {
  return detail::integer_pow_numeric(x, core::int64_exponent("integer_pow", n));
}

/// `xpr::stop_gradient(x)`.
inline Array xpr_apply(op::stop_gradient, const Array& x) { return bind1(stop_gradient_p, {x}); }

namespace detail {
Array remainder(const Array& x, const Array& y);
Array floor_divide(const Array& x, const Array& y);
/// A numeric operand pair for jax.numpy's `remainder` and `floor_divide` (JAX's
/// `promote_args_numeric`: bools become int32).
template <class A, class B>
std::pair<Array, Array> promote_numeric(const A& a, const B& b) {
  WeakDType t = core::result_type(weak_dtype_of(a), weak_dtype_of(b));
  if (core::is_bool(t.dtype)) t.dtype = DType::int32;
  return {promote_to(a, t), promote_to(b, t)};
}
/// jax.numpy's logical operators' operand: a bool as it is, anything else `x != 0`.
template <class A>
Array to_bool(const A& a) {
  if constexpr (ArrayArg<A>) {
    if (core::is_bool(a.dtype())) return a;
    return a != 0;
  } else {
    return promote_to(static_cast<bool>(a), WeakDType{DType::bool_, false});
  }
}
}  // namespace detail

/// `xpr::remainder(x, y)` (`jnp.remainder`, `x % y`): `rem`, then `y` added where the remainder
/// is nonzero and its sign differs from `y`'s, as jax.numpy binds it.
template <class A, class B>
requires detail::ArrayOperands<A, B> Array xpr_apply(op::remainder, const A& a, const B& b) {
  auto [x, y] = detail::promote_numeric(a, b);
  return detail::remainder(x, y);
}
/// `xpr::floor_divide(x, y)` (`jnp.floor_divide`): see op::floor_divide.
template <class A, class B>
requires detail::ArrayOperands<A, B> Array xpr_apply(op::floor_divide, const A& a, const B& b) {
  auto [x, y] = detail::promote_numeric(a, b);
  return detail::floor_divide(x, y);
}
/// `xpr::logical_and(x, y)`, `logical_or`, `logical_xor`: `and`, `or`, `xor` of the operands as
/// bools.
template <class Bitwise, class A, class B>
requires detail::ArrayOperands<A, B> Array xpr_apply(op::logical<Bitwise>, const A& a, const B& b) {
  return xpr_apply(Bitwise{}, detail::to_bool(a), detail::to_bool(b));
}

/// The operators `& | ^ ~ %` of jax.numpy's arrays: `bitwise_and`, `bitwise_or`, `bitwise_xor`,
/// `bitwise_not` and `remainder` (Python's `%`, not C++'s: the result has the divisor's sign; C's
/// remainder is `xpr::fmod`).
template <class A, class B>
requires detail::ArrayOperands<A, B> Array operator&(const A& a, const B& b) {
  return xpr_apply(op::and_{}, a, b);
}
template <class A, class B>
requires detail::ArrayOperands<A, B> Array operator|(const A& a, const B& b) {
  return xpr_apply(op::or_{}, a, b);
}
template <class A, class B>
requires detail::ArrayOperands<A, B> Array operator^(const A& a, const B& b) {
  return xpr_apply(op::xor_{}, a, b);
}
template <class A, class B>
requires detail::ArrayOperands<A, B> Array operator%(const A& a, const B& b) {
  return xpr_apply(op::remainder{}, a, b);
}
inline Array operator~(const Array& x) { return xpr_apply(op::not_{}, x); }

/// `jnp.isnan(x)`: bool, true where `x` is NaN (`x != x`; never for integers and bools).
inline Array isnan(const Array& x) { return x != x; }

/// `jnp.isinf(x)`: bool, true where `x` is infinite (`abs(x) == inf`; never for integers and
/// bools).
inline Array isinf(const Array& x) {
  if (!core::is_floating(x.dtype())) return x != x;
  return xpr::abs(x) == std::numeric_limits<double>::infinity();
}

/// `jnp.trunc(x)`: rounded toward zero, as JAX writes it (`where(x < 0, ceil(x), floor(x))`, so
/// its derivative is zero); integers and bools unchanged.
inline Array trunc(const Array& x) {
  if (!core::is_floating(x.dtype())) return x;
  return xpr::where(x < 0, xpr::ceil(x), xpr::floor(x));
}

}  // namespace xpr::rt

namespace xpr {
using rt::isinf;
using rt::isnan;
using rt::trunc;
}  // namespace xpr

#if XPR_DEFINITIONS

namespace xpr::rt::detail {

XPR_FUNC Array bind_broadcasting(const Primitive& prim, std::initializer_list<Array> operands) {
  Arrays args(operands);
  const Shape* common = nullptr;
  bool equal = true;
  for (const Array& a : args) {
    if (a.ndim() == 0) continue;
    if (!common)
      common = &detail::aval_of(a).shape;
    else
      equal = equal && detail::aval_of(a).shape == *common;
  }
  if (!equal) {
    Shape out;
    for (const Array& a : args) out = core::broadcast_shapes(out, detail::aval_of(a).shape);
    for (Array& a : args)
      if (a.ndim() != 0) a = broadcast_to(a, out);
  }
  return std::move(rt::bind(prim, args).front());  // qualified: ADL would find std::bind
}

XPR_FUNC Array remainder(const Array& x, const Array& y0) {
  // jnp.remainder: an integer divisor of 0 is replaced by 1 (XLA's `x rem 0` is x).
  const Array y = core::is_integer(y0.dtype()) ? xpr_apply(op::select{}, y0 == 0, 1, y0) : y0;
  const Array trunc_mod = xpr_apply(op::rem{}, x, y);
  const Array not_zero = trunc_mod != 0;
  const Array mod_negative = trunc_mod < 0;  // bound in jax.numpy's order
  const Array y_negative = y < 0;
  const Array do_plus = xpr_apply(op::and_{}, mod_negative != y_negative, not_zero);
  return xpr_apply(op::select{}, do_plus, trunc_mod + y, trunc_mod);
}

XPR_FUNC Array pow_integer_exponent(const Array& x, const Array& y) {
  // pow(x, 0) is 1 for every x (NaN included), so selecting 1 there changes no value; the
  // exponent 1 under the select keeps the unselected branch's derivative finite (the double
  // `where`), so reverse mode does not multiply a zero cotangent by a NaN.
  const Array zero = y == 0;
  const Array safe = xpr::where(zero, 1, convert_element_type(y, x.dtype()));
  return xpr::where(zero, 1, xpr::pow(x, safe));
}

XPR_FUNC Array floor_divide(const Array& x, const Array& y) {
  if (core::is_integer(x.dtype())) {
    const Array quotient = bind_broadcasting(elementwise_p<op::div>, {x, y});  // truncating
    const Array sx = xpr_apply(op::sign{}, x);  // bound in jax.numpy's order
    const Array sy = xpr_apply(op::sign{}, y);
    const Array signs_differ = sx != sy;
    const Array inexact = xpr_apply(op::rem{}, x, y) != 0;
    const Array select = xpr_apply(op::and_{}, signs_differ, inexact);
    return xpr_apply(op::select{}, select, quotient - 1, quotient);
  }
  // JAX's _float_divmod (CPython's float_divmod).
  const Array mod = xpr_apply(op::rem{}, x, y);
  const Array div = (x - mod) / y;
  const Array mod_nonzero = mod != 0;
  const Array sy = xpr_apply(op::sign{}, y);
  const Array smod = xpr_apply(op::sign{}, mod);
  const Array ind = xpr_apply(op::and_{}, mod_nonzero, sy != smod);
  const Array d = xpr_apply(op::select{}, ind, div - 1, div);
  // lax.round's default (away from zero); round_p is named in prims/unary.hpp, a layer above.
  return bind1(elementwise_p<op::round>, {d},
               {{std::string(op::round::parameter),
                 static_cast<std::int64_t>(rounding_method::away_from_zero)}});
}

}  // namespace xpr::rt::detail
#endif  // XPR_DEFINITIONS
