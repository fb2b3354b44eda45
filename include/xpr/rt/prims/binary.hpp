// SPDX-License-Identifier: MIT
// The binary arithmetic primitives: add sub mul div max min pow. They differ only in the function
// applied and the dtypes they accept, so they are one table; each row binds an `xpr::op` tag to a
// primitive. Operands have equal dtypes and shapes (a rank-0 operand stands for any shape);
// jax.numpy's promotion and broadcasting happen before binding (rt/numpy_elementwise.hpp).
#pragma once

#include <cmath>
#include <cstddef>
#include <span>
#include <string>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "xpr/core/dtype.hpp"
#include "xpr/core/ops.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/batching.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/prims/convert.hpp"
#include "xpr/rt/prims/detail/transpose.hpp"
#include "xpr/rt/prims/elementwise.hpp"
#include "xpr/rt/prims/shape.hpp"
#include "xpr/rt/trace.hpp"
#include "xpr/rt/zeros.hpp"

namespace xpr::rt {

namespace detail {

template <class T>
constexpr bool accepts_v(Accepts accepts) {
  if constexpr (std::is_same_v<T, bool>) return accepts == Accepts::any;
  if constexpr (std::is_integral_v<T>) return accepts != Accepts::floating;
  return true;
}

/// The element function of a binary primitive, on one element or on an xsimd batch of them.
/// Where C++ and XLA disagree, XLA wins: signed integer add, sub and mul wrap around (C++ leaves
/// overflow undefined), integer div truncates with `x / 0 == -1` and `INT_MIN / -1 == INT_MIN`,
/// and max/min propagate NaN (x86's max instruction does not). pow is the C library's.
template <class Op, class T>
T binary_element(const T& a, const T& b) {
  constexpr bool is_max = std::is_same_v<Op, op::max>, is_min = std::is_same_v<Op, op::min>;
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = std::make_unsigned_t<T>;
    if constexpr (std::is_same_v<Op, op::div>) {
      if (b == T(0)) return T(-1);
      if (b == T(-1)) return static_cast<T>(U(0) - static_cast<U>(a));
      return static_cast<T>(a / b);
    } else if constexpr (is_max) {
      return a < b ? b : a;
    } else if constexpr (is_min) {
      return b < a ? b : a;
    } else {
      return static_cast<T>(Op::number(static_cast<U>(a), static_cast<U>(b)));
    }
  } else if constexpr (std::is_same_v<Op, op::pow> && !std::is_arithmetic_v<T>) {
    // Lane by lane with the C library's pow: xsimd 8.1's pow is off by up to 133 ulps in f64
    // (measured over x in [e^-5, e^5], y in [-30, 30]); glibc's is within one.
    using E = typename T::value_type;
    alignas(64) E xs[T::size], ys[T::size];
    a.store_aligned(xs);
    b.store_aligned(ys);
    for (std::size_t i = 0; i < T::size; ++i) xs[i] = std::pow(xs[i], ys[i]);
    return T::load_aligned(xs);
  } else if constexpr ((is_max || is_min) && !std::is_arithmetic_v<T>) {
    const T m = is_max ? xsimd::max(a, b) : xsimd::min(a, b);
    // isnan, not `a != a`: xsimd 8.1's AVX `!=` is an ordered compare, false for NaN.
    return xsimd::select(xsimd::isnan(a), a, xsimd::select(xsimd::isnan(b), b, m));
  } else {
    return static_cast<T>(Op::number(a, b));
  }
}

}  // namespace detail

/// The tangent of `ans = op(x, y)` along `(tx, ty)`, for each binary primitive. Templates, so the
/// jax.numpy-level operators they use (numpy_elementwise.hpp) resolve where a rule is used.
template <class Op>
struct binary_jvp;
template <>
struct binary_jvp<op::add> {
  template <class A> static A tangent(const A&, const A&, const A&, const A& tx, const A& ty) {
    return tx + ty;
  }
  template <class A> static A tangent_x(const A&, const A&, const A&, const A& tx) { return tx; }
  template <class A> static A tangent_y(const A&, const A&, const A&, const A& ty) { return ty; }
};
template <>
struct binary_jvp<op::sub> {
  template <class A> static A tangent(const A&, const A&, const A&, const A& tx, const A& ty) {
    return tx - ty;
  }
  template <class A> static A tangent_x(const A&, const A&, const A&, const A& tx) { return tx; }
  template <class A> static A tangent_y(const A&, const A&, const A&, const A& ty) { return -ty; }
};
template <>
struct binary_jvp<op::mul> {
  template <class A> static A tangent(const A& x, const A& y, const A&, const A& tx, const A& ty) {
    return tx * y + x * ty;
  }
  template <class A>
  static A tangent_x(const A&, const A& y, const A&, const A& tx) {
    return tx * y;
  }
  template <class A>
  static A tangent_y(const A& x, const A&, const A&, const A& ty) {
    return x * ty;
  }
};
template <>
struct binary_jvp<op::div> {  // d(x/y) = dx/y - dy x/y^2
  template <class A> static A tangent(const A&, const A& y, const A& ans, const A& tx, const A& ty) {
    return tx / y - ty * (ans / y);
  }
  template <class A>
  static A tangent_x(const A&, const A& y, const A&, const A& tx) {
    return tx / y;
  }
  template <class A> static A tangent_y(const A&, const A& y, const A& ans, const A& ty) {
    return -(ty * (ans / y));
  }
};
/// max and min: the tangent of the chosen operand; at ties, half of each (JAX's balanced rule).
template <class Op>
struct chooser_jvp {
  /// The weight of x's tangent: 1 where x is chosen, 1/2 at ties, 0 where y is.
  template <class A> static A weight_x(const A& x, const A& y) {
    A x_wins = std::is_same_v<Op, op::max> ? x > y : x < y;
    return xpr::where(x_wins, 1.0, xpr::where(x == y, 0.5, 0.0));
  }
  template <class A> static A tangent(const A& x, const A& y, const A&, const A& tx, const A& ty) {
    A wx = weight_x(x, y);
    return tx * xpr::astype(wx, tx.dtype()) + ty * xpr::astype(1.0 - wx, ty.dtype());
  }
  template <class A> static A tangent_x(const A& x, const A& y, const A&, const A& tx) {
    return tx * xpr::astype(weight_x(x, y), tx.dtype());
  }
  template <class A> static A tangent_y(const A& x, const A& y, const A&, const A& ty) {
    return ty * xpr::astype(1.0 - weight_x(x, y), ty.dtype());
  }
};
template <>
struct binary_jvp<op::max> : chooser_jvp<op::max> {};
template <>
struct binary_jvp<op::min> : chooser_jvp<op::min> {};
/// d(x^y) = y x^(y-1) dx + log(x) x^y dy, with the dy term 0 where x == 0 (as in JAX). Integer
/// constants, so a weakly typed float32 operand stays float32.
template <>
struct binary_jvp<op::pow> {
  template <class A> static A tangent(const A& x, const A& y, const A& ans, const A& tx, const A& ty) {
    return tangent_x(x, y, ans, tx) + tangent_y(x, y, ans, ty);
  }
  template <class A> static A tangent_x(const A& x, const A& y, const A&, const A& tx) {
    return tx * (y * xpr::pow(x, y - 1));
  }
  template <class A> static A tangent_y(const A& x, const A&, const A& ans, const A& ty) {
    A zero = x == 0;
    return ty * xpr::where(zero, 0, xpr::log(xpr::where(zero, 1, x)) * ans);
  }
};

/// Which operands a binary primitive is linear in, and the cotangent of each (its transpose rule):
/// add and sub are linear in both operands together; mul in either one while the other is known;
/// div in its dividend while the divisor is known; max, min and pow in neither.
template <class Op>
struct binary_transpose {
  static constexpr bool in_x = false, in_y = false, jointly = false;
};
template <>
struct binary_transpose<op::add> {
  static constexpr bool in_x = true, in_y = true, jointly = true;
  template <class A> static A ct_x(const A& ct, const A&) { return ct; }
  template <class A> static A ct_y(const A& ct, const A&) { return ct; }
};
template <>
struct binary_transpose<op::sub> {
  static constexpr bool in_x = true, in_y = true, jointly = true;
  template <class A> static A ct_x(const A& ct, const A&) { return ct; }
  template <class A> static A ct_y(const A& ct, const A&) { return -ct; }
};
template <>
struct binary_transpose<op::mul> {  // mul(t, y)^T ct = ct * y
  static constexpr bool in_x = true, in_y = true, jointly = false;
  template <class A> static A ct_x(const A& ct, const A& y) { return ct * y; }
  template <class A> static A ct_y(const A& ct, const A& x) { return x * ct; }
};
template <>
struct binary_transpose<op::div> {  // div(t, y)^T ct = ct / y
  static constexpr bool in_x = true, in_y = false, jointly = false;
  template <class A> static A ct_x(const A& ct, const A& y) { return ct / y; }
};

/// A binary elementwise primitive computing `Op` on every pair of elements.
///
/// abstract_eval: equal dtypes among those `accepts` allows, equal shapes or rank 0; the result is
/// weakly typed when both operands are (JAX's `defbroadcasting` for n-ary primitives).
template <class Op, detail::Accepts accepts>
class BinaryElementwise final : public Primitive {
 public:
  constexpr BinaryElementwise() : Primitive(Op::name) {}

  Arrays impl(std::span<const Array> args, const Params& params) const override {
    check_arity(args.size());
    const ShapedArray avals[2] = {args[0].aval(), args[1].aval()};
    ArrayBuilder out(abstract_eval_one(avals, params));
    const Array &a = args[0], &b = args[1];
    dispatch_dtype(out.aval().dtype, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (detail::accepts_v<T>(accepts)) {
        detail::map_binary(
            a.data<T>(), a.ndim() == 0, b.data<T>(), b.ndim() == 0, out.data<T>(),
            static_cast<std::size_t>(out.aval().size()),
            [](const auto& x, const auto& y) { return detail::binary_element<Op>(x, y); });
      }
    });
    return {std::move(out).finish()};
  }

  Avals abstract_eval(std::span<const ShapedArray> args, const Params& params) const override {
    check_arity(args.size());
    return {abstract_eval_one(args, params)};
  }

  std::pair<Arrays, Arrays> jvp(std::span<const Array> primals, std::span<const Array> tangents,
                                const Params&) const override {
    Array ans = bind1(*this, {primals[0], primals[1]});
    // Integer and bool results are piecewise constant: zero tangent (JAX's float0), and the
    // formulas below would promote it (true division, float weights).
    if (!core::is_floating(ans.dtype())) return {{ans}, {zeros_like_aval(ans.aval())}};
    Array t = binary_jvp<Op>::tangent(primals[0], primals[1], ans, tangents[0], tangents[1]);
    if (t.shape() != ans.shape()) t = broadcast_to(t, ans.shape());  // both tangents rank 0
    return {{std::move(ans)}, {std::move(t)}};
  }

  /// With symbolic zeros: only the terms of nonzero tangents (`mul(tx, y)` when ty is zero, never
  /// `mul(x, 0.0)`); a zero tangent when both are zero or the result is not floating.
  std::pair<Arrays, Tangents> jvp_symbolic(std::span<const Array> primals,
                                           std::span<const Tangent> tangents,
                                           const Params&) const override {
    check_arity(primals.size());
    const Array &x = primals[0], &y = primals[1];
    Array ans = bind1(*this, {x, y});
    if (!detail::has_tangent_space(ans.aval()) || detail::all_zero(tangents))
      return {{ans}, {std::nullopt}};
    using J = binary_jvp<Op>;
    const Tangent &tx = tangents[0], &ty = tangents[1];
    Array t = tx && ty ? J::tangent(x, y, ans, *tx, *ty)
              : tx     ? J::tangent_x(x, y, ans, *tx)
                       : J::tangent_y(x, y, ans, *ty);
    t = detail::fit_tangent(std::move(t), ans.aval());
    return {{std::move(ans)}, {std::move(t)}};
  }

  /// Transpose (`binary_transpose<Op>`): the cotangent of each undefined operand, summed to rank 0
  /// for a rank-0 operand. Throws `type_error` when the operands marked undefined are not ones
  /// the primitive is linear in (`mul(t, t)`, `div(x, t)`); max, min and pow have no rule.
  Cotangents transpose(std::span<const Cotangent> cts, std::span<const LinearArg> args,
                       const Params& params) const override {
    using T = binary_transpose<Op>;
    if constexpr (!T::in_x && !T::in_y) {
      return Primitive::transpose(cts, args, params);
    } else {
      check_arity(args.size());
      const Array& ct = *cts[0];
      const bool ux = is_undefined_primal(args[0]), uy = is_undefined_primal(args[1]);
      Cotangents out(2);
      if constexpr (T::jointly) {
        if (ux) out[0] = detail::fit_cotangent(T::ct_x(ct, ct), aval_of(args[0]));
        if (uy) out[1] = detail::fit_cotangent(T::ct_y(ct, ct), aval_of(args[1]));
      } else {
        if (ux) {
          const Array& y =
              detail::known_operand(name(), args[1], T::in_y ? "one operand" : "the divisor");
          out[0] = detail::fit_cotangent(T::ct_x(ct, y), aval_of(args[0]));
        } else if constexpr (T::in_y) {
          const Array& x = detail::known_operand(name(), args[0], "one operand");
          if (uy) out[1] = detail::fit_cotangent(T::ct_y(ct, x), aval_of(args[1]));
        } else {
          (void)detail::known_operand(name(), args[1], "the divisor");
        }
      }
      return out;
    }
  }

  std::pair<Arrays, BatchDims> batch(std::span<const Array> args, std::span<const BatchDim> dims,
                                     std::int64_t n, const Params& params) const override {
    return batch_elementwise(*this, args, dims, n, params);
  }

 private:
  void check_arity(std::size_t n) const {
    if (n != 2) throw core::type_error(name() + " expected 2 operands, found " + std::to_string(n));
  }
  ShapedArray abstract_eval_one(std::span<const ShapedArray> args, const Params&) const {
    return detail::nary_aval(name(), args, accepts);
  }
};

// Compiled-library mode (XPR_COMPILED_LIB, the xpr::runtime library): these primitives' rules
// and kernels are instantiated once, in src/runtime.cpp, not in every translation unit.
#ifdef XPR_COMPILED_LIB
extern template class BinaryElementwise<op::add, detail::Accepts::numeric>;
extern template class BinaryElementwise<op::sub, detail::Accepts::numeric>;
extern template class BinaryElementwise<op::mul, detail::Accepts::numeric>;
extern template class BinaryElementwise<op::div, detail::Accepts::numeric>;
extern template class BinaryElementwise<op::max, detail::Accepts::any>;
extern template class BinaryElementwise<op::min, detail::Accepts::any>;
extern template class BinaryElementwise<op::pow, detail::Accepts::floating>;
#endif

//                                  op tag     accepted dtypes
inline constinit const BinaryElementwise<op::add, detail::Accepts::numeric> add_p{};
inline constinit const BinaryElementwise<op::sub, detail::Accepts::numeric> sub_p{};
inline constinit const BinaryElementwise<op::mul, detail::Accepts::numeric> mul_p{};
inline constinit const BinaryElementwise<op::div, detail::Accepts::numeric> div_p{};
inline constinit const BinaryElementwise<op::max, detail::Accepts::any> max_p{};
inline constinit const BinaryElementwise<op::min, detail::Accepts::any> min_p{};
inline constinit const BinaryElementwise<op::pow, detail::Accepts::floating> pow_p{};

namespace detail {
// The primitive behind each binary arithmetic `xpr::op` tag.
template <class Op>
inline constexpr std::nullptr_t binary_primitive = nullptr;  // not a binary op
template <> inline constexpr const Primitive* binary_primitive<op::add> = &add_p;
template <> inline constexpr const Primitive* binary_primitive<op::sub> = &sub_p;
template <> inline constexpr const Primitive* binary_primitive<op::mul> = &mul_p;
template <> inline constexpr const Primitive* binary_primitive<op::div> = &div_p;
template <> inline constexpr const Primitive* binary_primitive<op::max> = &max_p;
template <> inline constexpr const Primitive* binary_primitive<op::min> = &min_p;
template <> inline constexpr const Primitive* binary_primitive<op::pow> = &pow_p;
}  // namespace detail

}  // namespace xpr::rt

// The rules above use jax.numpy-level functions; included last, after the table they build on.
#include "xpr/rt/numpy_elementwise.hpp"
#include "xpr/rt/prims/unary.hpp"
