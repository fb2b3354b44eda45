// SPDX-License-Identifier: MIT
// The runtime tier's elementwise primitive, one class template for every entry of the shared list
// (core/ops.hpp) and for integer_pow: `Elementwise<Op>` gets its name, arity, dtypes, parameter,
// kernel and jvp from `Op`'s struct. Its rules: impl (the xsimd kernels of prims/elementwise.hpp,
// with XLA's integer semantics), abstract_eval (`defvectorized` / `defbroadcasting`), jvp
// (`standard_jvp`), transpose (the linear ones' table below) and batch. `elementwise_p<Op>` is the
// primitive object.
//
// Layering (docs/design.md): the rules are templates written with `xpr::` customization points
// (`g * xpr::cos(x)`), which reach jax.numpy's operators on `Array` (rt/numpy_elementwise.hpp, a
// layer above) by argument-dependent lookup. This header therefore never names a concrete
// `elementwise_p<op::sin>`: rt/numpy_elementwise.hpp and the headers above it do.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "xpr/core/dtype.hpp"
#include "xpr/core/error.hpp"
#include "xpr/core/ops.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/batching.hpp"
#include "xpr/rt/params.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/prims/convert.hpp"
#include "xpr/rt/prims/detail/transpose.hpp"
#include "xpr/rt/prims/elementwise.hpp"
#include "xpr/rt/prims/shape.hpp"
#include "xpr/rt/trace.hpp"
#include "xpr/rt/zeros.hpp"

namespace xpr::rt {

// ---- kernels ----------------------------------------------------------------------------------
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
  } else if constexpr (std::is_integral_v<T> && std::is_same_v<Op, op::square>) {
    using U = std::make_unsigned_t<T>;  // wraps around, as XLA's
    return static_cast<T>(static_cast<U>(x) * static_cast<U>(x));
  } else if constexpr (!std::is_arithmetic_v<T> && std::is_same_v<Op, op::erf>) {
    // Lane by lane with the C library's erf: xsimd 8.1's is off by up to 68 ulps in f64
    // (measured over [-6, 6]); glibc's is within one.
    using E = typename T::value_type;
    alignas(64) E xs[T::size];
    x.store_aligned(xs);
    for (std::size_t i = 0; i < T::size; ++i) xs[i] = std::erf(xs[i]);
    return T::load_aligned(xs);
  } else if constexpr (!std::is_arithmetic_v<T> &&
                       (std::is_same_v<Op, op::exp> || std::is_same_v<Op, op::expm1> ||
                        std::is_same_v<Op, op::exp2> || std::is_same_v<Op, op::logistic> ||
                        std::is_same_v<Op, op::tanh> || std::is_same_v<Op, op::sin> ||
                        std::is_same_v<Op, op::cos> || std::is_same_v<Op, op::tan>)) {
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

/// The element function of a binary primitive, on one element or on an xsimd batch of them.
/// Where C++ and XLA disagree, XLA wins: signed integer add, sub and mul wrap around (C++ leaves
/// overflow undefined), integer div truncates with `x / 0 == -1` and `INT_MIN / -1 == INT_MIN`,
/// integer rem has `x rem 0 == x` and `INT_MIN rem -1 == 0` (op::rem), and max/min propagate NaN
/// (x86's max instruction does not). pow is the C library's.
template <class Op, class T>
T binary_element(const T& a, const T& b) {
  constexpr bool is_max = std::is_same_v<Op, op::max>, is_min = std::is_same_v<Op, op::min>;
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = std::make_unsigned_t<T>;
    if constexpr (std::is_same_v<Op, op::div>) {
      if (b == T(0)) return T(-1);
      if (b == T(-1)) return static_cast<T>(U(0) - static_cast<U>(a));
      return static_cast<T>(a / b);
    } else if constexpr (std::is_same_v<Op, op::rem>) {
      return Op::number(a, b);  // signed: the unsigned remainder below would differ
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
    // (b, a): x86's maxpd/minpd return their second operand where the two are equal, so a tie
    // of +0 and -0 gives a, the first operand, as scalar code, jit and XLA's CPU backend do.
    const T m = is_max ? xsimd::max(b, a) : xsimd::min(b, a);
    // isnan, not `a != a`: xsimd 8.1's AVX `!=` is an ordered compare, false for NaN.
    return xsimd::select(xsimd::isnan(a), a, xsimd::select(xsimd::isnan(b), b, m));
  } else {
    return static_cast<T>(Op::number(a, b));
  }
}

// The element type of an element or of an xsimd batch.
template <class T>
struct element_of {
  using type = typename T::value_type;
};
template <class T>
requires std::is_arithmetic_v<T>
struct element_of<T> {
  using type = T;
};

/// integer_pow's element function: `x ** y` by binary exponentiation on one element or an xsimd
/// batch; `x ** 0 == 1` (even for NaN), negative `y` gives `1 / x ** -y`. Integers wrap around on
/// overflow, as in XLA.
template <class T>
T integer_power(const T& x, std::int64_t y) {
  const std::uint64_t m0 =
      y < 0 ? std::uint64_t(0) - static_cast<std::uint64_t>(y) : static_cast<std::uint64_t>(y);
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    U acc = 1, base = static_cast<U>(x);
    for (std::uint64_t m = m0; m; m >>= 1) {
      if (m & 1u) acc = static_cast<U>(acc * base);
      base = static_cast<U>(base * base);
    }
    return static_cast<T>(acc);
  } else {
    using E = typename element_of<T>::type;
    T acc(E(1)), base = x;
    for (std::uint64_t m = m0; m; m >>= 1) {
      if (m & 1u) acc = acc * base;
      if (m > 1) base = base * base;
    }
    return y < 0 ? T(E(1)) / acc : acc;
  }
}

/// The element function of an `Op` with a parameter: integer_pow's repeated squaring (XLA's
/// integer wrap-around), else `Op::number(x, y)` (round's rounding method).
template <class Op, class T>
T parameter_element(const T& x, std::int64_t y) {
  if constexpr (std::is_same_v<Op, op::integer_pow>)
    return integer_power(x, y);
  else
    return static_cast<T>(Op::number(x, y));
}

/// The element function of `Op`, by its arity.
template <class Op, class... T>
auto element(const T&... x) {
  if constexpr (sizeof...(T) == 1)
    return unary_element<Op>(x...);
  else
    return binary_element<Op>(x...);
}
}  // namespace detail

// ---- jvp ----------------------------------------------------------------------------------------

/// JAX's `standard_jvp`: the tangent of `ans = Op(x...)` as the sum of `Op`'s per-operand rules
/// over the operands whose tangent is not a symbolic zero (at least one is not), or `jvp_xy` when
/// both have one and `Op` gives it; `y` is the parameter of an `Op` that has one. A template, so
/// that the jax.numpy-level operators the rules use resolve where it is instantiated.
template <class Op, class A>
A standard_jvp(const A* x, const A& ans, const std::optional<A>* t, std::int64_t y = 0) {
  if constexpr (has_parameter_v<Op>) {
    return Op::jvp(*t[0], ans, x[0], y);
  } else if constexpr (Op::arity == 1) {
    (void)y;
    return Op::jvp(*t[0], ans, x[0]);
  } else {
    if (!t[1]) return Op::jvp_x(*t[0], ans, x[0], x[1]);
    if (!t[0]) return Op::jvp_y(*t[1], ans, x[0], x[1]);
    if constexpr (requires { Op::jvp_xy(*t[0], *t[1], ans, x[0], x[1]); }) {
      return Op::jvp_xy(*t[0], *t[1], ans, x[0], x[1]);
    } else {
      A tx = Op::jvp_x(*t[0], ans, x[0], x[1]);  // x's term first, as JAX sums them
      A ty = Op::jvp_y(*t[1], ans, x[0], x[1]);
      return tx + ty;
    }
  }
}

// ---- transpose ----------------------------------------------------------------------------------

/// Which operands a binary primitive is linear in, and the cotangent of each: the struct's
/// `transpose_x` / `transpose_y` (core/ops.hpp; neg, the one linear unary primitive, has
/// `transpose`). add and sub are linear in both operands together; mul in either one while the
/// other is known; div in its dividend while the divisor is known; max, min and pow in neither.
template <class Op>
struct elementwise_transpose {
  static constexpr bool in_x = requires(const Array& a) { Op::transpose_x(a, a); };
  static constexpr bool in_y = requires(const Array& a) { Op::transpose_y(a, a); };
  static constexpr bool jointly = is_linear_jointly_v<Op>;
  template <class A>
  static A ct_x(const A& ct, const A& other) {
    return Op::transpose_x(ct, other);
  }
  template <class A>
  static A ct_y(const A& ct, const A& other) {
    return Op::transpose_y(ct, other);
  }
};

// ---- the primitive ------------------------------------------------------------------------------

/// An elementwise primitive computing `Op::number` on every element (every pair of elements).
///
/// abstract_eval: operands of a dtype `Op::accepts` allows; for two, equal dtypes and equal shapes
/// or rank 0; the result is weakly typed when every operand is (JAX's `defbroadcasting`).
template <class Op>
class Elementwise final : public Primitive {
  static_assert(ElementwiseOp<Op> && !is_comparison_v<Op>,
                "xpr::rt::Elementwise<Op>: Op must have a name, an arity of 1 "
                "or 2 and accepted dtypes (see docs/primitives.md)");
  static constexpr int arity = Op::arity;

 public:
  constexpr Elementwise() : Primitive(Op::name) {}

  detail::Accepts accepts() const noexcept { return Op::accepts; }

  Arrays impl(std::span<const Array> args, const Params& params) const override {
    check_arity(args.size());
    if constexpr (has_parameter_v<Op>) {
      const Array& x = args[0];
      ArrayBuilder out(abstract_eval_one(std::span(&detail::aval_of(x), 1), params));
      const std::int64_t y = parameter(params);
      dispatch_dtype(x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        if constexpr (detail::accepts_v<T>(Op::accepts)) {
          detail::map_unary(x.data<T>(), out.data<T>(), static_cast<std::size_t>(x.size()),
                            [y](const auto& v) { return detail::parameter_element<Op>(v, y); });
        }
      });
      return {std::move(out).finish()};
    } else if constexpr (arity == 1) {
      const Array& x = args[0];
      ArrayBuilder out(abstract_eval_one(std::span(&detail::aval_of(x), 1), params));
      dispatch_dtype(x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        if constexpr (detail::accepts_v<T>(Op::accepts)) {
          detail::map_unary(x.data<T>(), out.data<T>(), static_cast<std::size_t>(x.size()),
                            [](const auto& v) { return detail::element<Op>(v); });
        }
      });
      return {std::move(out).finish()};
    } else {
      const ShapedArray avals[2] = {detail::aval_of(args[0]), detail::aval_of(args[1])};
      ArrayBuilder out(abstract_eval_one(avals, params));
      const Array &a = args[0], &b = args[1];
      dispatch_dtype(out.aval().dtype, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (detail::accepts_v<T>(Op::accepts)) {
          detail::map_binary(
              a.data<T>(), a.ndim() == 0, b.data<T>(), b.ndim() == 0, out.data<T>(),
              static_cast<std::size_t>(out.aval().size()),
              [](const auto& x, const auto& y) { return detail::element<Op>(x, y); });
        }
      });
      return {std::move(out).finish()};
    }
  }

  Avals abstract_eval(std::span<const ShapedArray> args, const Params& params) const override {
    check_arity(args.size());
    return {abstract_eval_one(args, params)};
  }

  std::pair<Arrays, Arrays> jvp(std::span<const Array> primals, std::span<const Array> tangents,
                                const Params& params) const override {
    Tangents ts(tangents.begin(), tangents.end());
    auto [out, t] = jvp_symbolic(primals, ts, params);
    Array t0 = t[0] ? std::move(*t[0]) : zeros_like_aval(detail::aval_of(out[0]));
    return {std::move(out), {std::move(t0)}};
  }

  /// `standard_jvp` over the nonzero tangents, fitted to the result's type (a rank-0 operand's
  /// tangent broadcast, a weak constant's widening undone). A symbolic zero when every tangent is
  /// one, when the result is an integer or bool (piecewise constant, JAX's float0), or when `Op`
  /// is not differentiable (at this parameter).
  std::pair<Arrays, Tangents> jvp_symbolic(std::span<const Array> primals,
                                           std::span<const Tangent> tangents,
                                           const Params& params) const override {
    check_arity(primals.size());
    std::int64_t y = 0;
    Array ans;
    if constexpr (has_parameter_v<Op>) {
      y = parameter(params);
      ans = rt::bind(*this, primals, params)[0];
    } else {
      ans = rt::bind(*this, primals)[0];
    }
    if constexpr (!is_differentiable_v<Op>) {
      return {{ans}, {std::nullopt}};
    } else {
      if (!detail::has_tangent_space(detail::aval_of(ans)) || detail::all_zero(tangents))
        return {{ans}, {std::nullopt}};
      if constexpr (has_parameter_v<Op>) {
        if (!Op::differentiable_at(y)) return {{ans}, {std::nullopt}};
      }
      Array t = standard_jvp<Op>(primals.data(), ans, tangents.data(), y);
      t = detail::fit_tangent(std::move(t), detail::aval_of(ans));
      return {{std::move(ans)}, {std::move(t)}};
    }
  }

  /// Transpose (`elementwise_transpose<Op>`): the cotangent of each undefined operand, summed to
  /// rank 0 for a rank-0 operand. Throws `type_error` when the operands marked undefined are not
  /// ones the primitive is linear in (`mul(t, t)`, `div(x, t)`); the others have no rule.
  Cotangents transpose(std::span<const Cotangent> cts, std::span<const LinearArg> args,
                       const Params& params) const override {
    if constexpr (arity == 1) {
      if constexpr (requires(const Array& a) { Op::transpose(a); }) {
        check_arity(args.size());
        return {Op::transpose(*cts[0])};
      } else {
        return Primitive::transpose(cts, args, params);
      }
    } else {
      using T = elementwise_transpose<Op>;
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
  }

  /// Elementwise, so the batched value is processed as it is (JAX's `defvectorized`); for two
  /// operands, JAX's `defbroadcasting`.
  std::pair<Arrays, BatchDims> batch(std::span<const Array> args, std::span<const BatchDim> dims,
                                     std::int64_t n, const Params& params) const override {
    if constexpr (arity == 1) {
      (void)n;
      return {{bind1(*this, {args[0]}, params)}, {dims[0]}};
    } else {
      return batch_elementwise(*this, args, dims, n, params);
    }
  }

 private:
  void check_arity(std::size_t n) const {
    if (n != static_cast<std::size_t>(arity))
      throw core::type_error(name() + " expected " + std::to_string(arity) + " operand" +
                             (arity == 1 ? "" : "s") + ", found " + std::to_string(n));
  }
  // Constrained, not only guarded by `if constexpr` at its callers: src/runtime.cpp's explicit
  // instantiations instantiate every member whose constraints hold.
  std::int64_t parameter(const Params& params) const requires has_parameter_v<Op> {
    return params.get<std::int64_t>(Op::parameter);
  }
  ShapedArray abstract_eval_one(std::span<const ShapedArray> args, const Params& params) const {
    if constexpr (arity == 1) {
      ShapedArray out = detail::unary_aval(name(), args, Op::accepts);
      if constexpr (std::is_same_v<Op, op::integer_pow>) {  // no negative powers of integers
        const std::int64_t y = parameter(params);
        if (y < 0 && core::is_integer(out.dtype))
          throw core::dtype_error(
              "integer_pow: integers cannot be raised to negative powers: expected "
              "y >= 0 for dtype " +
              std::string(core::name(out.dtype)) + ", found y=" + std::to_string(y));
      } else if constexpr (std::is_same_v<Op, op::round>) {  // lax.RoundingMethod's two values
        const std::int64_t m = parameter(params);
        if (m != 0 && m != 1)
          throw core::value_error(
              "round: expected rounding_method=0 (AWAY_FROM_ZERO) or 1 (TO_NEAREST_EVEN), "
              "found rounding_method=" +
              std::to_string(m));
      } else {
        (void)params;
      }
      return out;
    } else {
      (void)params;
      return detail::nary_aval(name(), args, Op::accepts);
    }
  }
};

/// The primitive of each elementwise `Op` (`sin_p` is `elementwise_p<op::sin>`).
/// Constant-initialized (no code runs at start-up), so a translation unit that never names it emits
/// none of its rules; the parser finds every entry of the list by name (rt/primitive_table.hpp), a
/// program's own primitives included, with no registration line.
template <class Op>
inline constinit const Elementwise<Op> elementwise_p{};

/// `xpr::sin(x)` and friends on arrays, with jax.numpy's promotion: primitives that need a
/// floating operand get integers and bools converted to f64 first (`jnp.sin` of an int array),
/// and numeric ones bools converted to int32 (`jnp.square`). As jax.numpy: `floor` and `ceil`
/// return integers and bools unchanged, `abs` bools; `-x` and `sign` pass bools to their
/// primitive, whose dtype check rejects them (as lax's `neg` and `sign` do).
template <class Op>
requires ElementwiseOp<Op> &&(Op::arity == 1) && (!has_parameter_v<Op>)Array
    xpr_apply(Op, const Array& x) {
  if constexpr (std::is_same_v<Op, op::floor> || std::is_same_v<Op, op::ceil>) {
    if (!core::is_floating(x.dtype())) return x;
  } else if constexpr (std::is_same_v<Op, op::abs>) {
    if (core::is_bool(x.dtype())) return x;
  }
  constexpr bool promotes_bools = !std::is_same_v<Op, op::neg> && !std::is_same_v<Op, op::sign>;
  Array in = x;
  if (Op::accepts == detail::Accepts::floating && !core::is_floating(x.dtype()))
    in = convert_element_type(x, DType::float64, x.weak_type());
  else if (Op::accepts == detail::Accepts::numeric && promotes_bools && core::is_bool(x.dtype()))
    in = convert_element_type(x, DType::int32, x.weak_type());
  return bind1(elementwise_p<Op>, {in});  // `not` of a float: abstract_eval's dtype_error
}

namespace detail {
/// The primitive behind each binary elementwise `xpr::op` tag (a program's own too); null's type
/// for any other tag (a type test: GCC 12's UBSan rejects pointer comparisons in constraints).
template <class Op>
inline constexpr std::nullptr_t binary_primitive = nullptr;
template <class Op>
requires ElementwiseOp<Op> &&(Op::arity == 2) &&
    (!is_comparison_v<Op>)inline constexpr const Primitive* binary_primitive<Op> =
    &elementwise_p<Op>;
}  // namespace detail

}  // namespace xpr::rt
