// SPDX-License-Identifier: MIT
// The unary elementwise primitives: neg sin cos tan tanh exp log log1p expm1 sqrt rsqrt abs sign
// logistic. They differ only in the function applied (the `xpr::op` tag's meaning on numbers), the
// dtypes they accept and their derivative, so they are one table: each row binds an `xpr::op` tag
// to a primitive, and `unary_jvp<Op>` holds each derivative.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "xpr/core/error.hpp"
#include "xpr/core/ops.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/numpy_elementwise.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/prims/convert.hpp"
#include "xpr/rt/prims/elementwise.hpp"
#include "xpr/rt/trace.hpp"

namespace xpr::rt {

namespace detail {
/// `Op::number` on one element or an xsimd batch, except that integer neg and abs wrap around as
/// in XLA (`-INT_MIN == INT_MIN`), where C++ leaves the overflow undefined.
template <class Op, class T>
T unary_element(const T& x) {
  constexpr bool neg_or_abs = std::is_same_v<Op, op::neg> || std::is_same_v<Op, op::abs>;
  if constexpr (std::is_integral_v<T> && neg_or_abs) {
    using U = std::make_unsigned_t<T>;
    const T neg = static_cast<T>(U(0) - static_cast<U>(x));
    return std::is_same_v<Op, op::neg> || x < T(0) ? neg : x;
  } else if constexpr (!std::is_arithmetic_v<T> &&
                       (std::is_same_v<Op, op::exp> || std::is_same_v<Op, op::expm1> ||
                        std::is_same_v<Op, op::logistic> || std::is_same_v<Op, op::tanh> ||
                        std::is_same_v<Op, op::sin> || std::is_same_v<Op, op::cos> ||
                        std::is_same_v<Op, op::tan>)) {
    // xsimd 8.1's range reductions convert x-based values to int64 lane by lane where AVX2 has
    // no instruction for it: undefined behaviour for NaN, infinities and |x| past ~2^62 (found by
    // tests/fuzz under -fsanitize=float-cast-overflow). Such batches go lane by lane through the
    // C library instead; ordinary batches take the vector path.
    using E = typename T::value_type;
    if (xsimd::all(xsimd::abs(x) < T(E(1e15)))) return static_cast<T>(Op::number(x));
    alignas(64) E xs[T::size];
    x.store_aligned(xs);
    for (std::size_t i = 0; i < T::size; ++i) xs[i] = static_cast<E>(Op::number(xs[i]));
    return T::load_aligned(xs);
  } else {
    return static_cast<T>(Op::number(x));
  }
}
}  // namespace detail

/// The tangent of `ans = op(x)` along `t`, for each unary primitive. Written with xpr's functions
/// (templates, so names resolve where the rule is used), the same text binds primitives at every
/// level of the interpreter stack. Constants are C++ integers: a C++ double is a weak float64,
/// which would turn the tangent of a weakly typed float32 primal into float64.
template <class Op>
struct unary_jvp;
template <>
struct unary_jvp<op::neg> {
  template <class A> static A tangent(const A&, const A&, const A& t) { return -t; }
};
template <>
struct unary_jvp<op::sin> {  // cos x
  template <class A> static A tangent(const A& x, const A&, const A& t) { return t * xpr::cos(x); }
};
template <>
struct unary_jvp<op::cos> {  // -sin x
  template <class A> static A tangent(const A& x, const A&, const A& t) { return -(t * xpr::sin(x)); }
};
template <>
struct unary_jvp<op::tan> {  // 1 + tan^2 x
  template <class A> static A tangent(const A&, const A& ans, const A& t) { return t * (1 + ans * ans); }
};
template <>
struct unary_jvp<op::tanh> {  // 1 - tanh^2 x
  template <class A> static A tangent(const A&, const A& ans, const A& t) { return t * (1 - ans * ans); }
};
template <>
struct unary_jvp<op::exp> {  // exp x
  template <class A> static A tangent(const A&, const A& ans, const A& t) { return t * ans; }
};
template <>
struct unary_jvp<op::log> {  // 1 / x
  template <class A> static A tangent(const A& x, const A&, const A& t) { return t / x; }
};
template <>
struct unary_jvp<op::log1p> {  // 1 / (1 + x)
  template <class A> static A tangent(const A& x, const A&, const A& t) { return t / (1 + x); }
};
template <>
struct unary_jvp<op::expm1> {  // exp x = expm1 x + 1
  template <class A> static A tangent(const A&, const A& ans, const A& t) { return t * (ans + 1); }
};
template <>
struct unary_jvp<op::sqrt> {  // 1 / (2 sqrt x)
  template <class A> static A tangent(const A&, const A& ans, const A& t) { return t / (2 * ans); }
};
template <>
struct unary_jvp<op::rsqrt> {  // -x^(-3/2) / 2 = rsqrt(x) / (-2 x)
  template <class A> static A tangent(const A& x, const A& ans, const A& t) { return t * (ans / (-2 * x)); }
};
template <>
struct unary_jvp<op::abs> {  // JAX's where(x >= 0, t, -t): the derivative from the right at 0
  template <class A>
  static A tangent(const A& x, const A&, const A& t) {
    A nonnegative = x >= 0;  // first, as JAX binds it (C++ leaves argument order open)
    return xpr::where(nonnegative, t, -t);
  }
};
template <>
struct unary_jvp<op::sign> {  // 0 almost everywhere
  template <class A> static A tangent(const A&, const A&, const A& t) { return t * 0; }
};
template <>
struct unary_jvp<op::logistic> {  // s (1 - s)
  template <class A> static A tangent(const A&, const A& ans, const A& t) { return t * (ans * (1 - ans)); }
};

/// A unary elementwise primitive computing `Op::number` on every element.
template <class Op>
class UnaryElementwise final : public Primitive {
 public:
  constexpr explicit UnaryElementwise(detail::Accepts accepts)
      : Primitive(Op::name), accepts_(accepts) {}

  detail::Accepts accepts() const noexcept { return accepts_; }

  Arrays impl(std::span<const Array> args, const Params& params) const override {
    if (args.size() != 1)
      throw core::type_error(name() + " expected 1 operand, found " + std::to_string(args.size()));
    ArrayBuilder b(detail::unary_aval(name(), std::span(&args[0].aval(), 1), accepts_));
    (void)params;
    const Array& x = args[0];
    dispatch_dtype(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (!std::is_same_v<T, bool>) {
        detail::map_unary(x.data<T>(), b.data<T>(), static_cast<std::size_t>(x.size()),
                          [](const auto& v) { return detail::unary_element<Op>(v); });
      }
    });
    return {std::move(b).finish()};
  }

  Avals abstract_eval(std::span<const ShapedArray> args, const Params&) const override {
    return {detail::unary_aval(name(), args, accepts_)};
  }

  std::pair<Arrays, Arrays> jvp(std::span<const Array> primals, std::span<const Array> tangents,
                                const Params&) const override {
    Array ans = bind1(*this, {primals[0]});
    Array t = unary_jvp<Op>::tangent(primals[0], ans, tangents[0]);
    return {{std::move(ans)}, {std::move(t)}};
  }

  /// neg is linear, its own transpose: ct ↦ -ct. The other unary primitives are not linear.
  Cotangents transpose(std::span<const Cotangent> cts, std::span<const LinearArg> args,
                       const Params& params) const override {
    if constexpr (std::is_same_v<Op, op::neg>) {
      if (args.size() != 1)
        throw core::type_error(name() + " expected 1 operand, found " +
                               std::to_string(args.size()));
      return {bind1(*this, {*cts[0]})};
    } else {
      return Primitive::transpose(cts, args, params);
    }
  }

  /// Elementwise, so the batched value is processed as it is (JAX's `defvectorized`).
  std::pair<Arrays, BatchDims> batch(std::span<const Array> args, std::span<const BatchDim> dims,
                                     std::int64_t, const Params&) const override {
    return {{bind1(*this, {args[0]})}, {dims[0]}};
  }

 private:
  detail::Accepts accepts_;
};

// Compiled-library mode (XPR_COMPILED_LIB, the xpr::runtime library): these primitives' rules
// and kernels are instantiated once, in src/runtime.cpp, not in every translation unit.
#ifdef XPR_COMPILED_LIB
extern template class UnaryElementwise<op::neg>;
extern template class UnaryElementwise<op::sin>;
extern template class UnaryElementwise<op::cos>;
extern template class UnaryElementwise<op::tan>;
extern template class UnaryElementwise<op::tanh>;
extern template class UnaryElementwise<op::exp>;
extern template class UnaryElementwise<op::log>;
extern template class UnaryElementwise<op::log1p>;
extern template class UnaryElementwise<op::expm1>;
extern template class UnaryElementwise<op::sqrt>;
extern template class UnaryElementwise<op::rsqrt>;
extern template class UnaryElementwise<op::abs>;
extern template class UnaryElementwise<op::sign>;
extern template class UnaryElementwise<op::logistic>;
#endif

//                                      op tag                 accepted dtypes
inline constinit const UnaryElementwise<op::neg> neg_p{detail::Accepts::numeric};
inline constinit const UnaryElementwise<op::sin> sin_p{detail::Accepts::floating};
inline constinit const UnaryElementwise<op::cos> cos_p{detail::Accepts::floating};
inline constinit const UnaryElementwise<op::tan> tan_p{detail::Accepts::floating};
inline constinit const UnaryElementwise<op::tanh> tanh_p{detail::Accepts::floating};
inline constinit const UnaryElementwise<op::exp> exp_p{detail::Accepts::floating};
inline constinit const UnaryElementwise<op::log> log_p{detail::Accepts::floating};
inline constinit const UnaryElementwise<op::log1p> log1p_p{detail::Accepts::floating};
inline constinit const UnaryElementwise<op::expm1> expm1_p{detail::Accepts::floating};
inline constinit const UnaryElementwise<op::sqrt> sqrt_p{detail::Accepts::floating};
inline constinit const UnaryElementwise<op::rsqrt> rsqrt_p{detail::Accepts::floating};
inline constinit const UnaryElementwise<op::abs> abs_p{detail::Accepts::numeric};
inline constinit const UnaryElementwise<op::sign> sign_p{detail::Accepts::numeric};
inline constinit const UnaryElementwise<op::logistic> logistic_p{detail::Accepts::floating};

namespace detail {
// The primitive behind each unary `xpr::op` tag.
template <class Op>
inline constexpr std::nullptr_t unary_primitive = nullptr;  // not a unary op (a type test, not a
                                                             // pointer comparison: GCC 12's UBSan
                                                             // rejects the latter in constraints)
template <> inline constexpr const UnaryElementwise<op::neg>* unary_primitive<op::neg> = &neg_p;
template <> inline constexpr const UnaryElementwise<op::sin>* unary_primitive<op::sin> = &sin_p;
template <> inline constexpr const UnaryElementwise<op::cos>* unary_primitive<op::cos> = &cos_p;
template <> inline constexpr const UnaryElementwise<op::tan>* unary_primitive<op::tan> = &tan_p;
template <> inline constexpr const UnaryElementwise<op::tanh>* unary_primitive<op::tanh> = &tanh_p;
template <> inline constexpr const UnaryElementwise<op::exp>* unary_primitive<op::exp> = &exp_p;
template <> inline constexpr const UnaryElementwise<op::log>* unary_primitive<op::log> = &log_p;
template <> inline constexpr const UnaryElementwise<op::log1p>* unary_primitive<op::log1p> = &log1p_p;
template <> inline constexpr const UnaryElementwise<op::expm1>* unary_primitive<op::expm1> = &expm1_p;
template <> inline constexpr const UnaryElementwise<op::sqrt>* unary_primitive<op::sqrt> = &sqrt_p;
template <> inline constexpr const UnaryElementwise<op::rsqrt>* unary_primitive<op::rsqrt> = &rsqrt_p;
template <> inline constexpr const UnaryElementwise<op::abs>* unary_primitive<op::abs> = &abs_p;
template <> inline constexpr const UnaryElementwise<op::sign>* unary_primitive<op::sign> = &sign_p;
template <> inline constexpr const UnaryElementwise<op::logistic>* unary_primitive<op::logistic> = &logistic_p;
}  // namespace detail

/// `xpr::sin(x)` and friends on arrays, with jax.numpy's promotion: primitives that need a
/// floating operand get integers and bools converted to f64 first (`jnp.sin` of an int array).
template <class Op>
  requires(!std::is_null_pointer_v<std::remove_cv_t<decltype(detail::unary_primitive<Op>)>>)
Array xpr_apply(Op, const Array& x) {
  const auto& prim = *detail::unary_primitive<Op>;
  Array in = x;
  if (prim.accepts() == detail::Accepts::floating && !core::is_floating(x.dtype()))
    in = convert_element_type(x, DType::float64, x.weak_type());
  else if (prim.accepts() == detail::Accepts::numeric && core::is_bool(x.dtype()))
    in = convert_element_type(x, DType::int32, x.weak_type());
  return bind1(prim, {in});
}

/// `-x`.
inline Array operator-(const Array& x) { return xpr_apply(op::neg{}, x); }

}  // namespace xpr::rt
