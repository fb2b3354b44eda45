// SPDX-License-Identifier: MIT
// The user-facing elementwise functions of namespace xpr (`xpr::sin`, `xpr::maximum`, ...), one
// function object per name, and the tags (`xpr::op::sin`) that name the operation in every tier.
//
// A call `xpr::sin(x)` becomes `xpr_apply(op::sin{}, x)`, found by argument-dependent lookup:
//  * plain numbers (arithmetic types, xsimd batches, Eigen arrays) use the overload below, which
//    computes at once and returns the same kind of number;
//  * the runtime tier's `xpr::rt::Array` and the compile-time tier's tracer declare their own
//    `xpr_apply` overloads next to their types (and a member type `xpr_traced`, which takes them
//    out of the number family).
// A qualified call gets no ADL, which is why `xpr::sin` is an object and not a function template:
// generic user code written with `xpr::sin` runs unchanged in every tier.
#pragma once

#include <cmath>
#include <concepts>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <boost/mp11/algorithm.hpp>
#include <boost/mp11/list.hpp>

#include "xpr/core/dtype.hpp"
#include "xpr/core/error.hpp"

namespace xpr::core {

/// Which dtypes an elementwise primitive accepts: floats only (sin, pow), numbers (add, abs), or
/// bools too (max, min: logical or and and).
/// `integral` is bools and integers, not floats (`not`: logical not of bools, bitwise of integers).
enum class Accepts { floating, numeric, any, integral };

/// Values that belong to a tracing family (runtime `Array`, compile-time tracers) declare a member
/// type `xpr_traced`; everything else is a plain number.
template <class T>
concept Traced = requires {
  typename std::remove_cvref_t<T>::xpr_traced;
};

template <class... Ts>
concept Numbers = (!Traced<Ts> && ...);

void xpr_apply() = delete;  // makes the name known; the overloads are found by ADL

/// The function object behind each user-facing name.
/// Plain numbers compute `Op::number` at once (for a program's own `Op` too, whose namespace
/// ADL would not search); traced values go to the `xpr_apply` of their tier.
template <class Op>
struct function {
  using op_type = Op;
  template <class... Args>
  requires(Numbers<Args...>&& requires(const Args&... args) { Op::number(args...); }) ||
      requires(Args&&... args) {
    xpr_apply(Op{}, static_cast<Args&&>(args)...);
  }
  constexpr decltype(auto) operator()(Args&&... args) const {
    if constexpr (Numbers<Args...>) {
      if constexpr (requires(const Args&... a) { Op::number(a...); })
        return Op::number(args...);
      else
        return xpr_apply(Op{}, static_cast<Args&&>(args)...);
    } else {
      return xpr_apply(Op{}, static_cast<Args&&>(args)...);
    }
  }
};

/// A C++ integer exponent as the int64 `integer_pow` takes, or `value_error` naming `fn` when it
/// does not fit (an unsigned 2^64 - 1 would otherwise become -1, `x ** -1`).
template <std::integral N>
constexpr std::int64_t int64_exponent(const char* fn, N n) {
  if (!integer_fits<std::int64_t>(n))
    throw value_error(std::string(fn) + ": expected an exponent that fits in int64, found " +
                      std::to_string(n));
  return static_cast<std::int64_t>(n);
}
}  // namespace xpr::core

// The tags, declared first: the rules below are written with the function objects (`xpr::cos`),
// which are declared next.
namespace xpr::op {
struct neg;
struct sin;
struct cos;
struct tan;
struct tanh;
struct exp;
struct log;
struct log1p;
struct expm1;
struct sqrt;
struct rsqrt;
struct abs;
struct sign;
struct logistic;
struct square;
struct exp2;
struct cbrt;
struct erf;
struct floor;
struct ceil;
struct copy;
struct round;
struct is_finite;
struct not_;
struct logical_not;
struct stop_gradient;
struct add;
struct sub;
struct mul;
struct div;
struct max;
struct min;
struct pow;
struct rem;
struct and_;
struct or_;
struct xor_;
struct remainder;
struct floor_divide;
struct logical_and;
struct logical_or;
struct logical_xor;
struct integer_pow;
struct eq;
struct ne;
struct lt;
struct le;
struct gt;
struct ge;
struct select;
struct cond;
}  // namespace xpr::op

namespace xpr {

/// `round`'s parameter, as `lax.RoundingMethod` numbers it (jaxprs print the number:
/// `round[rounding_method=1]`).
enum class rounding_method : int { away_from_zero = 0, to_nearest_even = 1 };

// jax.numpy's names for the elementwise operations.
inline constexpr core::function<op::neg> negative{};
inline constexpr core::function<op::add> add{};
inline constexpr core::function<op::sub> subtract{};
inline constexpr core::function<op::mul> multiply{};
inline constexpr core::function<op::div> divide{};
inline constexpr core::function<op::sin> sin{};
inline constexpr core::function<op::cos> cos{};
inline constexpr core::function<op::tan> tan{};
inline constexpr core::function<op::tanh> tanh{};
inline constexpr core::function<op::exp> exp{};
inline constexpr core::function<op::log> log{};
inline constexpr core::function<op::log1p> log1p{};
inline constexpr core::function<op::expm1> expm1{};
inline constexpr core::function<op::sqrt> sqrt{};
inline constexpr core::function<op::rsqrt> rsqrt{};
inline constexpr core::function<op::abs> abs{};
inline constexpr core::function<op::sign> sign{};
inline constexpr core::function<op::logistic> logistic{};
inline constexpr core::function<op::square> square{};
inline constexpr core::function<op::exp2> exp2{};
inline constexpr core::function<op::cbrt> cbrt{};
/// `lax.erf` (`jax.scipy.special.erf`): the error function.
inline constexpr core::function<op::erf> erf{};
inline constexpr core::function<op::floor> floor{};
inline constexpr core::function<op::ceil> ceil{};
/// `jnp.round(x)`: to the nearest integer, ties to even (`round[rounding_method=1]`);
/// `xpr::round(x, xpr::rounding_method::away_from_zero)` is `lax.round`'s default.
inline constexpr core::function<op::round> round{};
/// `jnp.isfinite`: neither infinite nor NaN, a bool result (`is_finite`).
inline constexpr core::function<op::is_finite> isfinite{};
/// `jnp.bitwise_not` (`jnp.invert`): `~x` of integers, logical not of bools (`not`).
inline constexpr core::function<op::not_> bitwise_not{};
inline constexpr core::function<op::not_> invert{};
/// `jnp.logical_not`: the operand converted to bool (nonzero is true), then `not`.
inline constexpr core::function<op::logical_not> logical_not{};
/// `jnp.copy` (`copy_p`): the identity as an operation of its own; linear.
inline constexpr core::function<op::copy> copy{};
inline constexpr core::function<op::stop_gradient> stop_gradient{};
inline constexpr core::function<op::max> maximum{};
inline constexpr core::function<op::min> minimum{};
/// `jnp.fmod` (`lax.rem`, `rem`): the remainder of division truncated toward zero, with the sign
/// of the dividend.
inline constexpr core::function<op::rem> fmod{};
/// `jnp.remainder` (`jnp.mod`, Python's `%`, the operator `%` on arrays): the remainder of
/// division rounded toward minus infinity, with the sign of the divisor. Runtime tier only.
inline constexpr core::function<op::remainder> remainder{};
inline constexpr core::function<op::remainder> mod{};
/// `jnp.floor_divide` (Python's `//`): the quotient rounded toward minus infinity. Runtime tier
/// only.
inline constexpr core::function<op::floor_divide> floor_divide{};
/// `jnp.bitwise_and`, `bitwise_or`, `bitwise_xor` (`and`, `or`, `xor`; the operators `& | ^` on
/// arrays): of bools and integers, logical for bools. Runtime tier only.
inline constexpr core::function<op::and_> bitwise_and{};
inline constexpr core::function<op::or_> bitwise_or{};
inline constexpr core::function<op::xor_> bitwise_xor{};
/// `jnp.logical_and`, `logical_or`, `logical_xor`: the operands converted to bool (nonzero is
/// true), then `and`, `or`, `xor`. Runtime tier only.
inline constexpr core::function<op::logical_and> logical_and{};
inline constexpr core::function<op::logical_or> logical_or{};
inline constexpr core::function<op::logical_xor> logical_xor{};
inline constexpr core::function<op::pow> pow{};
inline constexpr core::function<op::pow> power{};
inline constexpr core::function<op::integer_pow> integer_pow{};
inline constexpr core::function<op::eq> equal{};
inline constexpr core::function<op::ne> not_equal{};
inline constexpr core::function<op::lt> less{};
inline constexpr core::function<op::le> less_equal{};
inline constexpr core::function<op::gt> greater{};
inline constexpr core::function<op::ge> greater_equal{};
inline constexpr core::function<op::select> where{};
/// `xpr::cond(pred, true_fn, false_fn, operands...)` (`lax.cond`) in every tier: see op::cond,
/// rt/cond.hpp (a staged `cond` equation) and ct/tracer.hpp (a select of both branches).
inline constexpr core::function<op::cond> cond{};

}  // namespace xpr

/// Operation tags: the identity of each elementwise operation across tiers. `number` is its
/// meaning on plain numbers.
namespace xpr::op {

namespace detail {
template <class T>
constexpr bool is_arith = std::is_arithmetic_v<std::remove_cvref_t<T>>;

template <class T>
constexpr auto one_like(const T& x) {
  if constexpr (is_arith<T>) {
    return T(1);
  } else if constexpr (requires {
                         x.derived();
                         x.cwiseAbs();
                       }) {
    return 1;  // Eigen: scalar-op-array expressions accept a plain 1
  } else {
    return T(1);  // xsimd batches are constructible from a scalar
  }
}
// xsimd's `select(mask, a, b)`, found by ADL (a member named `select` would hide it, and so would
// the tag `op::select` but for this declaration, which stops the ordinary lookup here).
void select() = delete;
template <class C, class A, class B>
constexpr auto adl_select(const C& c, const A& a, const B& b) {
  return select(c, a, b);
}

// xsimd's `isfinite(x)`, found by ADL (the declaration stops the ordinary lookup at
// `xpr::isfinite`, an object, which would turn ADL off).
void isfinite() = delete;
template <class T>
constexpr auto adl_isfinite(const T& x) {
  return isfinite(x);
}

/// An xsimd batch (not a number, not an Eigen expression).
template <class T>
concept simd_batch = !is_arith<T> && !requires(const T& x) {
  x.derived();
}
&&requires {
  T::size;
  typename T::value_type;
};

// xsimd's `all(mask)`, found by ADL.
void all() = delete;
template <class M>
constexpr bool adl_all(const M& m) {
  return all(m);
}

/// xsimd's `exp`, `log`, `pow`, `cbrt`, `erf` ... differ from the C library's where their
/// arguments are special: denormals (flushed), arguments near overflow, the zeros and infinities
/// of `pow`, huge arguments of `erf` (NaN). The lanes where `fine` fails are computed by `f`, the
/// C library's function, as on plain numbers; the others are `r`'s. (Comparisons with NaN are
/// false, so NaN lanes take `f` too.)
template <class T, class M, class F, class... X>
[[gnu::noinline, gnu::cold]] T libm_lanes(const M& fine, const T& r, F f, const X&... x) {
  using E = typename T::value_type;
  alignas(64) E xs[sizeof...(X)][T::size], out[T::size], special[T::size];
  r.store_aligned(out);
  adl_select(fine, T(E(0)), T(E(1))).store_aligned(special);
  return [&]<std::size_t... K>(std::index_sequence<K...>) {
    (T(x).store_aligned(xs[K]), ...);
    for (std::size_t i = 0; i < T::size; ++i)
      if (special[i] != E(0)) out[i] = static_cast<E>(f(xs[K][i]...));
    return T::load_aligned(out);
  }
  (std::index_sequence_for<X...>{});
}
template <class T, class M, class R, class F, class... X>
[[gnu::always_inline]] inline T libm_unless(const M& fine, const R& r, F f, const X&... x) {
  if (adl_all(fine)) [[likely]]
    return r;
  // Only the special lanes: a lane's value must not depend on its neighbours (vmap equals the
  // loop, bit for bit). Out of line: the loop that computes r stays compact.
  return libm_lanes<T>(fine, T(r), f, x...);
}

/// `r` (an Eigen expression of `x`) evaluated, with the elements where `fine` is false recomputed
/// by `f`, libm's function. Eigen's vectorized `exp` and `log` clamp their argument to the normal
/// range (exp(-inf) = 5.6e-309, log(1e-310) = -708.4), and with EIGEN_FAST_MATH (its default) its
/// float `sqrt` and `rsqrt` go through an approximate reciprocal square root that flushes
/// denormals and turns inf into NaN. One more pass over the array tests the mask.
template <class M, class R, class F, class X>
auto eigen_libm_unless(const M& fine, const R& r, F f, const X& x) {
  auto out = r.eval();
  const auto ok = fine.eval();
  if (!ok.all()) [[unlikely]] {
    const auto xs = x.eval();
    for (decltype(out.size()) i = 0; i < out.size(); ++i)
      if (!ok.data()[i]) out.data()[i] = f(xs.data()[i]);
  }
  return out;
}

/// The least positive normal number and a bound below which `exp` neither overflows nor leaves
/// the normal range, for a batch's element type.
template <class T>
constexpr typename T::value_type tiny() {
  return std::numeric_limits<typename T::value_type>::min();
}
/// The largest finite number of a batch's (or an Eigen array's) element type.
template <class T>
constexpr typename T::value_type huge() {
  return std::numeric_limits<typename T::value_type>::max();
}
/// `r` = sqrt(x) or rsqrt(x) of an Eigen expression, with float elements outside the normal
/// range recomputed by `f` (EIGEN_FAST_MATH's approximate reciprocal square root; see above).
template <class X, class R, class F>
auto eigen_float_sqrt(const X& x, const R& r, F f) {
  if constexpr (std::is_same_v<typename X::Scalar, float>)
    return eigen_libm_unless((x >= tiny<X>()) && (x <= huge<X>()), r, f, x);
  else
    return r;
}
template <class T>
constexpr typename T::value_type exp_bound() {  // 706 for double, 88 for float
  using E = typename T::value_type;
  return static_cast<E>(0.69 * std::numeric_limits<E>::max_exponent);
}

/// max and min on batches: x86's `maxpd` returns the other operand where one is NaN; JAX's
/// propagate the NaN.
template <class T>
constexpr T keep_nan(const T& x, const T& y, const T& m) {
  return adl_select(y == y, adl_select(x == x, m, x), y);  // x == x is false for NaN only
}

// The value type of an expression: Eigen expressions are evaluated, anything else kept.
template <class T>
constexpr auto plain(const T& x) {
  if constexpr (requires { x.eval(); }) {
    return x.eval();
  } else {
    return x;
  }
}
}  // namespace detail

// ---------------------------------------------------------------------------------------------
// The elementwise primitives, one struct each: everything both tiers derive their rules from.
//
//   name      JAX's name, as jaxprs print it
//   arity     number of operands
//   accepts   the dtypes the primitive takes (`core::Accepts`)
//   number    its meaning on plain numbers (one element, an xsimd batch, an Eigen array)
//   jvp       unary: the tangent of `ans = op(x)` along `g`; binary: `jvp_x` and `jvp_y`, the
//             tangent contributed by each operand's tangent (JAX's `defjvp` rules). The tiers'
//             `standard_jvp` skips operands whose tangent is a symbolic zero and adds the rest.
//             An entry with a zero derivative says `differentiable = false` instead; one may
//             add `jvp_xy`, the tangent when both operands have one, where that is simpler.
//   commutative, linear   algebraic traits (operand order free; linear in some operands)
//   transpose   a linear entry's transpose rule, written once for both tiers: unary
//   `transpose(ct)`,
//             the cotangent of x; binary `transpose_x(ct, y)` and `transpose_y(ct, x)`, the
//             cotangent of the operand it names while the other is known, for each operand the
//             entry is linear in; `linear_jointly` when it is linear in both at once (add, sub).
//
// The rules are written once with xpr's functions, so that the same text binds primitives in the
// runtime tier and records equations in the compile-time tier. Constants are C++ numbers, weakly
// typed like Python scalars; integers where they serve, since a C++ double is a weak float64 and
// widens a weakly typed float32 (the tiers fit each tangent to its primal's type afterwards). Where
// a rule binds two primitives, it names the first, so that the jaxpr lists them in the order
// written (C++ leaves the order of an operator's operands open).
// ---------------------------------------------------------------------------------------------

/// neg x = -x; linear.
struct neg {
  static constexpr std::string_view name = "neg";
  static constexpr int arity = 1;
  static constexpr core::Accepts accepts = core::Accepts::numeric;
  static constexpr bool linear = true;
  template <class T>
  static constexpr auto number(const T& x) {
    return -x;
  }
  template <class T>
  static constexpr T jvp(const T& g, const T&, const T&) {
    return -g;
  }
  template <class T>
  static constexpr T transpose(const T& ct) {
    return -ct;
  }
};
/// d sin x = cos x.
struct sin {
  static constexpr std::string_view name = "sin";
  static constexpr int arity = 1;
  static constexpr core::Accepts accepts = core::Accepts::floating;
  template <class T>
  static constexpr auto number(const T& x) {
    using std::sin;
    return sin(x);
  }
  template <class T>
  static constexpr T jvp(const T& g, const T&, const T& x) {
    return g * xpr::cos(x);
  }
};
/// d cos x = -sin x (JAX: `neg(mul(g, sin(x)))`).
struct cos {
  static constexpr std::string_view name = "cos";
  static constexpr int arity = 1;
  static constexpr core::Accepts accepts = core::Accepts::floating;
  template <class T>
  static constexpr auto number(const T& x) {
    using std::cos;
    return cos(x);
  }
  template <class T>
  static constexpr T jvp(const T& g, const T&, const T& x) {
    return -(g * xpr::sin(x));
  }
};
/// d tan x = 1 + tan² x.
struct tan {
  static constexpr std::string_view name = "tan";
  static constexpr int arity = 1;
  static constexpr core::Accepts accepts = core::Accepts::floating;
  template <class T>
  static constexpr auto number(const T& x) {
    using std::tan;
    return tan(x);
  }
  template <class T>
  static constexpr T jvp(const T& g, const T& ans, const T&) {
    return g * (1 + xpr::integer_pow(ans, 2));
  }
};
/// d tanh x = 1 - tanh² x.
struct tanh {
  static constexpr std::string_view name = "tanh";
  static constexpr int arity = 1;
  static constexpr core::Accepts accepts = core::Accepts::floating;
  template <class T>
  static constexpr auto number(const T& x) {
    using std::tanh;
    return tanh(x);
  }
  template <class T>
  static constexpr T jvp(const T& g, const T& ans, const T&) {
    return g * (1 - xpr::integer_pow(ans, 2));
  }
};
/// d exp x = exp x.
struct exp {
  static constexpr std::string_view name = "exp";
  static constexpr int arity = 1;
  static constexpr core::Accepts accepts = core::Accepts::floating;
  template <class T>
  static constexpr auto number(const T& x) {
    using std::exp;
    if constexpr (detail::simd_batch<T>) {
      using std::abs;  // xsimd's, by ADL
      const T b(detail::exp_bound<T>());
      return detail::libm_unless<T>(
          abs(x) <= b, exp(x), [](auto v) { return std::exp(v); }, x);
    } else if constexpr (requires { x.derived(); }) {
      using S = typename T::Scalar;
      const S b = detail::exp_bound<T>();
      return detail::eigen_libm_unless(
          x.abs() <= b, exp(x), [](S v) { return std::exp(v); }, x);
    } else {
      return exp(x);
    }
  }
  template <class T>
  static constexpr T jvp(const T& g, const T& ans, const T&) {
    return g * ans;
  }
};
/// d log x = 1 / x.
struct log {
  static constexpr std::string_view name = "log";
  static constexpr int arity = 1;
  static constexpr core::Accepts accepts = core::Accepts::floating;
  template <class T>
  static constexpr auto number(const T& x) {
    using std::log;
    if constexpr (detail::simd_batch<T>) {
      return detail::libm_unless<T>(
          x >= T(detail::tiny<T>()), log(x), [](auto v) { return std::log(v); }, x);
    } else if constexpr (requires { x.derived(); }) {
      using S = typename T::Scalar;
      return detail::eigen_libm_unless(
          x >= detail::tiny<T>(), log(x), [](S v) { return std::log(v); }, x);
    } else {
      return log(x);
    }
  }
  template <class T>
  static constexpr T jvp(const T& g, const T&, const T& x) {
    return g / x;
  }
};
/// d log1p x = 1 / (1 + x).
struct log1p {
  static constexpr std::string_view name = "log1p";
  static constexpr int arity = 1;
  static constexpr core::Accepts accepts = core::Accepts::floating;
  template <class T>
  static constexpr auto number(const T& x) {
    using std::log1p;
    if constexpr (detail::simd_batch<T>) {
      return detail::adl_select(x == T(0), x, log1p(x));  // log1p(-0.0) is -0.0
    } else {
      return log1p(x);
    }
  }
  template <class T>
  static constexpr T jvp(const T& g, const T&, const T& x) {
    return g / (1 + x);
  }
};
/// d expm1 x = exp x = expm1 x + 1.
struct expm1 {
  static constexpr std::string_view name = "expm1";
  static constexpr int arity = 1;
  static constexpr core::Accepts accepts = core::Accepts::floating;
  template <class T>
  static constexpr auto number(const T& x) {
    using std::expm1;
    if constexpr (detail::simd_batch<T>) {
      const T r = detail::adl_select(x == T(0), x, expm1(x));  // expm1(-0.0) is -0.0
      // Below -(digits - 2) ln 2 the answer is -1 + e^x with e^x under 4 ulps of 1: xsimd's
      // rounds it to -1 from about -36.4 (f64), where the correctly rounded value is
      // -0.99999999999999989 until -37.4, and log1p(expm1(x)) turned -inf: libm's there.
      using E = typename T::value_type;
      constexpr E lo = -(std::numeric_limits<E>::digits - 2) * E(0.6931471805599453);
      return detail::libm_unless<T>((x <= T(detail::exp_bound<T>())) & (x >= T(lo)), r,
                                    [](auto v) { return std::expm1(v); }, x);
    } else {
      return expm1(x);
    }
  }
  template <class T>
  static constexpr T jvp(const T& g, const T& ans, const T&) {
    return g * (ans + 1);
  }
};
/// d sqrt x = 1 / (2 sqrt x).
struct sqrt {
  static constexpr std::string_view name = "sqrt";
  static constexpr int arity = 1;
  static constexpr core::Accepts accepts = core::Accepts::floating;
  template <class T>
  static constexpr auto number(const T& x) {
    using std::sqrt;
    if constexpr (requires { x.derived(); }) {
      return detail::eigen_float_sqrt(x, sqrt(x), [](auto v) { return std::sqrt(v); });
    } else {
      return sqrt(x);
    }
  }
  template <class T>
  static constexpr T jvp(const T& g, const T& ans, const T&) {
    return g / (2 * ans);
  }
};
/// d rsqrt x = -x^(-3/2) / 2 = -0.5 rsqrt(x) / x (JAX's formula).
struct rsqrt {
  static constexpr std::string_view name = "rsqrt";
  static constexpr int arity = 1;
  static constexpr core::Accepts accepts = core::Accepts::floating;
  template <class T>
  static constexpr auto number(const T& x) {
    if constexpr (requires { x.rsqrt(); }) {
      return detail::eigen_float_sqrt(x, x.rsqrt(), [](auto v) { return 1 / std::sqrt(v); });
    } else {
      using std::sqrt;  // xsimd::rsqrt is an approximation; 1/sqrt is exact to 1 ulp
      return detail::one_like(x) / sqrt(x);
    }
  }
  template <class T>
  static constexpr T jvp(const T& g, const T& ans, const T& x) {
    return g * (-0.5 * (ans / x));
  }
};
/// d |x| = where(x >= 0, 1, -1): JAX's rule, the derivative from the right at 0.
struct abs {
  static constexpr std::string_view name = "abs";
  static constexpr int arity = 1;
  static constexpr core::Accepts accepts = core::Accepts::numeric;
  template <class T>
  static constexpr auto number(const T& x) {
    if constexpr (detail::is_arith<T>) {
      return x < T(0) ? -x : (x == T(0) ? T(0) : x);  // |-0.0| is +0.0, as fabs gives
    } else {
      using std::abs;
      return abs(x);
    }
  }
  template <class T>
  static constexpr T jvp(const T& g, const T&, const T& x) {
    const T nonnegative = x >= 0;  // first, as JAX binds it
    return xpr::where(nonnegative, g, -g);
  }
};
/// sign x: -1, 0 or 1 (NaN stays NaN, and a zero keeps its sign, as XLA's sign does: -0.0 gives
/// -0.0); its derivative is zero almost everywhere.
struct sign {
  static constexpr std::string_view name = "sign";
  static constexpr int arity = 1;
  static constexpr core::Accepts accepts = core::Accepts::numeric;
  static constexpr bool differentiable = false;
  template <class T>
  static constexpr auto number(const T& x) {
    if constexpr (detail::is_arith<T>) {
      if constexpr (std::is_floating_point_v<T>)
        if (!(x < T(0)) && !(T(0) < x)) return x;  // NaN and ±0 are their own sign
      return static_cast<T>((T(0) < x) - (x < T(0)));
    } else if constexpr (requires { x.sign(); }) {
      return x.sign();
    } else {
      return detail::adl_select(x > T(0), T(1), detail::adl_select(x < T(0), T(-1), x));
    }
  }
};
/// logistic x = 1 / (1 + exp(-x)); d logistic x = s (1 - s).
struct logistic {
  static constexpr std::string_view name = "logistic";
  static constexpr int arity = 1;
  static constexpr core::Accepts accepts = core::Accepts::floating;
  template <class T>
  static constexpr auto number(const T& x) {
    using std::exp;
    if constexpr (detail::is_arith<T>) {
      return T(1) / (T(1) + exp(-x));
    } else if constexpr (requires { x.derived(); }) {
      return (1 + exp(-x)).inverse();
    } else {
      return T(1) / (T(1) + exp(-x));
    }
  }
  template <class T>
  static constexpr T jvp(const T& g, const T& ans, const T&) {
    return g * (ans * (1 - ans));
  }
};

namespace detail {
/// `f` on one number, an xsimd batch (found by ADL: `xsimd::erf`) or an Eigen array (element by
/// element: Eigen's core has no erf, cbrt or exp2).
template <class T, class F>
constexpr auto map_number(const T& x, F f) {
  if constexpr (requires { x.derived(); }) {
    return x.unaryExpr([f](const auto& v) { return f(v); });
  } else {
    return f(x);
  }
}
/// `f` on two numbers, xsimd batches (lane by lane; either may be a number) or Eigen arrays
/// (element by element; either may be a number).
template <class A, class B, class F>
constexpr auto map_number2(const A& a, const B& b, F f) {
  if constexpr (
      requires { a.derived(); } && requires { b.derived(); }) {
    return a.binaryExpr(b, [f](const auto& x, const auto& y) { return f(x, y); });
  } else if constexpr (requires { a.derived(); }) {
    using S = typename A::Scalar;
    return a.unaryExpr([f, b](const S& x) { return static_cast<S>(f(x, static_cast<S>(b))); });
  } else if constexpr (requires { b.derived(); }) {
    using S = typename B::Scalar;
    return b.unaryExpr([f, a](const S& y) { return static_cast<S>(f(static_cast<S>(a), y)); });
  } else if constexpr (is_arith<A> && is_arith<B>) {
    return f(a, b);
  } else {
    using Batch = std::conditional_t<is_arith<A>, B, A>;
    using E = typename Batch::value_type;
    alignas(64) E xs[Batch::size], ys[Batch::size];
    Batch(a).store_aligned(xs);
    Batch(b).store_aligned(ys);
    for (std::size_t i = 0; i < Batch::size; ++i) xs[i] = static_cast<E>(f(xs[i], ys[i]));
    return Batch::load_aligned(xs);
  }
}
}  // namespace detail

/// square x = x²; d square x = 2x (`jnp.square`, JAX's `square_p`).
struct square {
  static constexpr std::string_view name = "square";
  static constexpr int arity = 1;
  static constexpr core::Accepts accepts = core::Accepts::numeric;
  template <class T>
  static constexpr auto number(const T& x) {
    return detail::plain(x * x);
  }
  template <class T>
  static constexpr T jvp(const T& g, const T&, const T& x) {
    return g * (2 * x);
  }
};
/// exp2 x = 2^x; d exp2 x = ln 2 · 2^x (JAX: `mul(log(2), mul(g, ans))`).
struct exp2 {
  static constexpr std::string_view name = "exp2";
  static constexpr int arity = 1;
  static constexpr core::Accepts accepts = core::Accepts::floating;
  template <class T>
  static constexpr auto number(const T& x) {
    const auto r = detail::map_number(x, [](const auto& v) {
      using std::exp2;
      return exp2(v);
    });
    if constexpr (detail::simd_batch<T>) {
      // xsimd's exp2 overflows to inf from 2^(max_exponent - 1) (f64: 1023, where 2^1023 is
      // finite) and flushes subnormal results to 0 (below 2^-1022): libm's there.
      using E = typename T::value_type;
      constexpr E hi = std::numeric_limits<E>::max_exponent - 1;
      constexpr E lo = std::numeric_limits<E>::min_exponent - 1;
      return detail::libm_unless<T>((x < T(hi)) & (x >= T(lo)), r,
                                    [](auto v) { return std::exp2(v); }, x);
    } else {
      return r;
    }
  }
  template <class T>
  static constexpr T jvp(const T& g, const T& ans, const T&) {
    return 0.6931471805599453 * (g * ans);  // ln 2, as JAX folds log(2.0)
  }
};
/// cbrt x = x^(1/3); d cbrt x = x^(-2/3) / 3 = ans^-2 / 3 (JAX's formula).
struct cbrt {
  static constexpr std::string_view name = "cbrt";
  static constexpr int arity = 1;
  static constexpr core::Accepts accepts = core::Accepts::floating;
  template <class T>
  static constexpr auto number(const T& x) {
    const auto r = detail::map_number(x, [](const auto& v) {
      using std::cbrt;
      return cbrt(v);
    });
    if constexpr (detail::simd_batch<T>) {
      using std::abs;  // xsimd's, by ADL
      const T a = abs(x);
      return detail::libm_unless<T>((a >= T(detail::tiny<T>())) | (a == T(0)), r,
                                    [](auto v) { return std::cbrt(v); }, x);
    } else {
      return r;
    }
  }
  template <class T>
  static constexpr T jvp(const T& g, const T& ans, const T&) {
    return g * ((1.0 / 3.0) * xpr::integer_pow(ans, -2));
  }
};
/// erf x = 2/√π ∫₀ˣ e^(-t²) dt; d erf x = 2/√π e^(-x²) (JAX's formula).
struct erf {
  static constexpr std::string_view name = "erf";
  static constexpr int arity = 1;
  static constexpr core::Accepts accepts = core::Accepts::floating;
  template <class T>
  static constexpr auto number(const T& x) {
    const auto r = detail::map_number(x, [](const auto& v) {
      using std::erf;
      return erf(v);
    });
    if constexpr (detail::simd_batch<T>) {
      return detail::libm_unless<T>((x <= T(6)) & (x >= T(-6)), r,
                                    [](auto v) { return std::erf(v); }, x);
    } else {
      return r;
    }
  }
  template <class T>
  static constexpr T jvp(const T& g, const T&, const T& x) {
    return 1.1283791670955126 * (g * xpr::exp(-xpr::square(x)));  // 2 / sqrt(pi)
  }
};
/// floor x: the largest integer not above x; piecewise constant (JAX: `defjvp_zero`).
struct floor {
  static constexpr std::string_view name = "floor";
  static constexpr int arity = 1;
  static constexpr core::Accepts accepts = core::Accepts::floating;
  static constexpr bool differentiable = false;
  template <class T>
  static constexpr auto number(const T& x) {
    return detail::map_number(x, [](const auto& v) {
      using std::floor;
      return floor(v);
    });
  }
};
/// ceil x: the smallest integer not below x; piecewise constant (JAX: `defjvp_zero`).
struct ceil {
  static constexpr std::string_view name = "ceil";
  static constexpr int arity = 1;
  static constexpr core::Accepts accepts = core::Accepts::floating;
  static constexpr bool differentiable = false;
  template <class T>
  static constexpr auto number(const T& x) {
    return detail::map_number(x, [](const auto& v) {
      using std::ceil;
      return ceil(v);
    });
  }
};
/// copy x = x as an operation of its own (`copy_p`, what `jnp.copy` and `jnp.array(x)` bind);
/// linear, its own jvp and transpose (JAX: `deflinear(copy_p, lambda t: [copy_p.bind(t)])`).
struct copy {
  static constexpr std::string_view name = "copy";
  static constexpr int arity = 1;
  static constexpr core::Accepts accepts = core::Accepts::any;
  static constexpr bool linear = true;
  template <class T>
  static constexpr T number(const T& x) {
    return x;
  }
  template <class T>
  static constexpr T jvp(const T& g, const T&, const T&) {
    return xpr::copy(g);
  }
  template <class T>
  static constexpr T transpose(const T& ct) {
    return xpr::copy(ct);
  }
};

/// x + y; linear.
struct add {
  static constexpr std::string_view name = "add";
  static constexpr int arity = 2;
  static constexpr core::Accepts accepts = core::Accepts::numeric;
  static constexpr bool commutative = true, linear = true, linear_jointly = true;
  template <class A, class B>
  static constexpr auto number(const A& a, const B& b) {
    return a + b;
  }
  template <class T>
  static constexpr T transpose_x(const T& ct, const T&) {
    return ct;
  }
  template <class T>
  static constexpr T transpose_y(const T& ct, const T&) {
    return ct;
  }
  template <class T>
  static constexpr T jvp_x(const T& g, const T&, const T&, const T&) {
    return g;
  }
  template <class T>
  static constexpr T jvp_y(const T& g, const T&, const T&, const T&) {
    return g;
  }
};
/// x - y; linear.
struct sub {
  static constexpr std::string_view name = "sub";
  static constexpr int arity = 2;
  static constexpr core::Accepts accepts = core::Accepts::numeric;
  static constexpr bool linear = true, linear_jointly = true;
  template <class A, class B>
  static constexpr auto number(const A& a, const B& b) {
    return a - b;
  }
  template <class T>
  static constexpr T transpose_x(const T& ct, const T&) {
    return ct;
  }
  template <class T>
  static constexpr T transpose_y(const T& ct, const T&) {
    return -ct;
  }
  template <class T>
  static constexpr T jvp_x(const T& g, const T&, const T&, const T&) {
    return g;
  }
  template <class T>
  static constexpr T jvp_y(const T& g, const T&, const T&, const T&) {
    return -g;
  }
  template <class T>  // both tangents: one sub, not add and neg (JAX's `_sub_jvp`)
  static constexpr T jvp_xy(const T& gx, const T& gy, const T&, const T&, const T&) {
    return gx - gy;
  }
};
/// x y; linear in either operand while the other is known.
struct mul {
  static constexpr std::string_view name = "mul";
  static constexpr int arity = 2;
  static constexpr core::Accepts accepts = core::Accepts::numeric;
  static constexpr bool commutative = true, linear = true;
  template <class A, class B>
  static constexpr auto number(const A& a, const B& b) {
    return a * b;
  }
  template <class T>  // mul(t, y)^T ct = ct * y
  static constexpr T transpose_x(const T& ct, const T& y) {
    return ct * y;
  }
  template <class T>
  static constexpr T transpose_y(const T& ct, const T& x) {
    return x * ct;
  }
  template <class T>
  static constexpr T jvp_x(const T& g, const T&, const T&, const T& y) {
    return g * y;
  }
  template <class T>
  static constexpr T jvp_y(const T& g, const T&, const T& x, const T&) {
    return x * g;
  }
};
/// x / y; linear in x while y is known. d(x/y) = dx / y - dy x / y².
struct div {
  static constexpr std::string_view name = "div";
  static constexpr int arity = 2;
  static constexpr core::Accepts accepts = core::Accepts::numeric;
  static constexpr bool linear = true;
  template <class A, class B>
  static constexpr auto number(const A& a, const B& b) {
    return a / b;
  }
  template <class T>  // div(t, y)^T ct = ct / y; not linear in y
  static constexpr T transpose_x(const T& ct, const T& y) {
    return ct / y;
  }
  template <class T>
  static constexpr T jvp_x(const T& g, const T&, const T&, const T& y) {
    return g / y;
  }
  template <class T>
  static constexpr T jvp_y(const T& g, const T& ans, const T&, const T& y) {
    return -(g * (ans / y));
  }
  template <class T>  // both tangents: a sub, not add and neg (the compile-time tier does better)
  static constexpr T jvp_xy(const T& gx, const T& gy, const T& ans, const T&, const T& y) {
    return gx / y - gy * (ans / y);
  }
};

namespace detail {
/// JAX's `_balanced_eq(x, ans, other)` for max and min: the weight of x's tangent, 1 where x is
/// the result, 1/2 where both are (ties split the derivative evenly), 0 where the other is.
template <class T>
constexpr T balanced_eq(const T& x, const T& ans, const T& other) {
  const T x_is = x == ans;  // first, as JAX binds it
  const T other_is = other == ans;
  const T chosen = xpr::where(x_is, 1.0, 0.0);
  return chosen / xpr::where(other_is, 2.0, 1.0);
}
/// Both tangents of max and min: the comparisons are shared by the two weights.
template <class T>
constexpr T balanced_jvp_xy(const T& gx, const T& gy, const T& ans, const T& x, const T& y) {
  const T x_is = x == ans;
  const T y_is = y == ans;
  const T x_chosen = xpr::where(x_is, 1.0, 0.0);
  const T wx = x_chosen / xpr::where(y_is, 2.0, 1.0);
  const T y_chosen = xpr::where(y_is, 1.0, 0.0);
  const T wy = y_chosen / xpr::where(x_is, 2.0, 1.0);
  const T tx = gx * wx;
  return tx + gy * wy;
}
}  // namespace detail

/// Elementwise maximum; NaN propagates, as in `jnp.maximum`.
struct max {
  static constexpr std::string_view name = "max";
  static constexpr int arity = 2;
  static constexpr core::Accepts accepts = core::Accepts::any;
  static constexpr bool commutative = true;
  template <class A, class B>
  static constexpr auto number(const A& a, const B& b) {
    if constexpr (detail::is_arith<A> && detail::is_arith<B>) {
      using C = std::common_type_t<A, B>;
      C x = static_cast<C>(a), y = static_cast<C>(b);
      return x != x ? x : (y != y ? y : (x < y ? y : x));
    } else if constexpr (
        requires { a.derived(); } || requires { b.derived(); }) {
      // Eigen's max returns the other operand where one is NaN; JAX's propagates the NaN.
      return detail::map_number2(a, b, [](auto x, auto y) { return max::number(x, y); });
    } else {
      using T = std::conditional_t<detail::simd_batch<A>, A, B>;
      using std::max;
      const T x(a), y(b);
      // (y, x): x86's maxpd returns its second operand where the two are equal, so a tie of
      // +0 and -0 gives x, as the scalar code, the generated code and XLA's CPU backend give.
      return detail::keep_nan(x, y, max(y, x));
    }
  }
  template <class T>
  static constexpr T jvp_x(const T& g, const T& ans, const T& x, const T& y) {
    return g * detail::balanced_eq(x, ans, y);
  }
  template <class T>
  static constexpr T jvp_y(const T& g, const T& ans, const T& x, const T& y) {
    return g * detail::balanced_eq(y, ans, x);
  }
  template <class T>
  static constexpr T jvp_xy(const T& gx, const T& gy, const T& ans, const T& x, const T& y) {
    return detail::balanced_jvp_xy(gx, gy, ans, x, y);
  }
};
/// Elementwise minimum; NaN propagates, as in `jnp.minimum`.
struct min {
  static constexpr std::string_view name = "min";
  static constexpr int arity = 2;
  static constexpr core::Accepts accepts = core::Accepts::any;
  static constexpr bool commutative = true;
  template <class A, class B>
  static constexpr auto number(const A& a, const B& b) {
    if constexpr (detail::is_arith<A> && detail::is_arith<B>) {
      using C = std::common_type_t<A, B>;
      C x = static_cast<C>(a), y = static_cast<C>(b);
      return x != x ? x : (y != y ? y : (y < x ? y : x));
    } else if constexpr (
        requires { a.derived(); } || requires { b.derived(); }) {
      // Eigen's min returns the other operand where one is NaN; JAX's propagates the NaN.
      return detail::map_number2(a, b, [](auto x, auto y) { return min::number(x, y); });
    } else {
      using T = std::conditional_t<detail::simd_batch<A>, A, B>;
      using std::min;
      const T x(a), y(b);
      return detail::keep_nan(x, y, min(y, x));  // x on a tie of ±0, as max above
    }
  }
  template <class T>
  static constexpr T jvp_x(const T& g, const T& ans, const T& x, const T& y) {
    return g * detail::balanced_eq(x, ans, y);
  }
  template <class T>
  static constexpr T jvp_y(const T& g, const T& ans, const T& x, const T& y) {
    return g * detail::balanced_eq(y, ans, x);
  }
  template <class T>
  static constexpr T jvp_xy(const T& gx, const T& gy, const T& ans, const T& x, const T& y) {
    return detail::balanced_jvp_xy(gx, gy, ans, x, y);
  }
};
/// x ** y. d(x^y) = y x^(y-1) dx + log(x) x^y dy, the dy term 0 where x == 0 (as in JAX).
struct pow {
  static constexpr std::string_view name = "pow";
  static constexpr int arity = 2;
  static constexpr core::Accepts accepts = core::Accepts::floating;
  template <class A, class B>
  static constexpr auto number(const A& a, const B& b) {
    using std::pow;
    if constexpr (detail::simd_batch<A> || detail::simd_batch<B>) {
      // xsimd's pow is exp(y log x) with a sign: wrong at x = ±0 and ±inf, with y = ±inf or
      // NaN, for denormal x, and for x < 0 with a huge y (its parity); those lanes take the C
      // library's pow (tests/ct/special_values.cpp).
      using T = std::conditional_t<detail::simd_batch<A>, A, B>;
      using E = typename T::value_type;
      const T x(a), y(b), inf(std::numeric_limits<E>::infinity()), tiny(detail::tiny<T>());
      const T big(static_cast<E>(std::uint64_t{1} << (std::numeric_limits<E>::digits - 1)));
      const auto ordinary = ((x >= tiny) & (x < inf) & (y > -inf) & (y < inf)) |
                            ((x <= -tiny) & (x > -inf) & (y > -big) & (y < big));
      // Results near the ends of the normal range too: xsimd's exp flushes and overflows early.
      using std::abs;  // xsimd's, by ADL
      const T r = pow(x, y), m = abs(r);
      return detail::libm_unless<T>(
          ordinary & (m >= T(4) * tiny) & (m < T(std::numeric_limits<E>::max() / 4)), r,
          [](auto u, auto v) { return std::pow(u, v); }, x, y);
    } else {
      return pow(a, b);
    }
  }
  template <class T>
  static constexpr T jvp_x(const T& g, const T&, const T& x, const T& y) {
    return g * (y * xpr::pow(x, y - 1));
  }
  template <class T>
  static constexpr T jvp_y(const T& g, const T& ans, const T& x, const T&) {
    // JAX's `_pow_jvp_rhs`: log(_replace_zero(x)) * ans, so 0 at x = 0 for y > 0 (ans = 0), and
    // 0 * inf = NaN for y < 0 (ans = inf), where pow is not differentiable in y.
    return g * (xpr::log(xpr::where(x == 0, 1, x)) * ans);
  }
};

/// rem x y: the remainder of x / y truncated toward zero, with the sign of x (C's `fmod` and `%`;
/// `lax.rem`, `jnp.fmod`). Integers follow XLA, where C++ leaves them undefined: `x rem 0 == x`
/// and `INT_MIN rem -1 == 0`. d rem = dx - dy · trunc(x / y), JAX's
/// `mul(neg(g), mul(sign(div(x, y)), floor(abs(div(x, y)))))` with its one division bound once
/// (the compile-time tier would merge the two, and both tiers print the same jvp).
struct rem {
  static constexpr std::string_view name = "rem";
  static constexpr int arity = 2;
  static constexpr core::Accepts accepts = core::Accepts::numeric;
  template <class A, class B>
  static constexpr auto number(const A& a, const B& b) {
    if constexpr (detail::is_arith<A> && detail::is_arith<B>) {
      using C = std::common_type_t<A, B>;
      const C x = static_cast<C>(a), y = static_cast<C>(b);
      if constexpr (std::is_integral_v<C>) {
        static_assert(!std::is_same_v<C, bool>, "xpr::fmod: expected numbers, found bools");
        if (y == C(0)) return x;
        if constexpr (std::is_signed_v<C>) {
          if (y == C(-1)) return C(0);
        }
        return static_cast<C>(x % y);
      } else if constexpr (std::is_same_v<C, float>) {
        return __builtin_fmodf(x, y);  // constexpr in GCC, where std::fmod is not
      } else {
        return static_cast<C>(__builtin_fmod(static_cast<double>(x), static_cast<double>(y)));
      }
    } else {
      // Batches and Eigen arrays element by element: xsimd's fmod computes x - trunc(x / y) · y,
      // which loses the remainder when the quotient is large.
      return detail::map_number2(a, b, [](const auto& x, const auto& y) { return number(x, y); });
    }
  }
  template <class T>
  static constexpr T jvp_x(const T& g, const T&, const T&, const T&) {
    return g;
  }
  template <class T>
  static constexpr T jvp_y(const T& g, const T&, const T& x, const T& y) {
    const T ng = -g;
    const T q = x / y;
    const T s = xpr::sign(q);  // one statement each: operands' order of evaluation is unspecified
    const T t = xpr::floor(xpr::abs(q));
    return ng * (s * t);
  }
};

/// Identity on values; blocks derivatives in the tracing tiers.
struct stop_gradient {
  static constexpr std::string_view name = "stop_gradient";
  static constexpr int arity = 1;
  template <class T>
  static constexpr T number(const T& x) {
    return x;
  }
};

/// The comparisons eq ne lt le gt ge: operands of any one dtype, a bool result (strongly typed),
/// IEEE semantics for NaN (only `ne` holds). Piecewise constant: the tangent is a symbolic zero in
/// both tiers (`differentiable = false`); never linear.
template <class Derived>
struct comparison {
  static constexpr int arity = 2;
  static constexpr core::Accepts accepts = core::Accepts::any;
  static constexpr bool differentiable = false;
};
#define XPR_DETAIL_COMPARISON(NAME, OP, COMMUTATIVE)       \
  struct NAME : comparison<NAME> {                         \
    static constexpr std::string_view name = #NAME;        \
    static constexpr bool commutative = COMMUTATIVE;       \
    template <class A, class B>                            \
    static constexpr auto number(const A& a, const B& b) { \
      return a OP b;                                       \
    }                                                      \
  };
XPR_DETAIL_COMPARISON(eq, ==, true)
XPR_DETAIL_COMPARISON(ne, !=, true)
XPR_DETAIL_COMPARISON(lt, <, false)
XPR_DETAIL_COMPARISON(le, <=, false)
XPR_DETAIL_COMPARISON(gt, >, false)
XPR_DETAIL_COMPARISON(ge, >=, false)
#undef XPR_DETAIL_COMPARISON

/// `x ** y` for an integer `y` known where the operation is written, as repeated multiplication
/// (`lax.integer_pow`). `y` is a parameter of the equation (`integer_pow[y=3]`), not an operand.
/// d(x^y) = y x^(y-1) dx; zero for y = 0 (the tiers return a symbolic zero).
struct integer_pow {
  static constexpr std::string_view name = "integer_pow";
  static constexpr int arity = 1;
  static constexpr core::Accepts accepts = core::Accepts::numeric;
  static constexpr std::string_view parameter = "y";
  static constexpr bool differentiable_at(std::int64_t y) { return y != 0; }
  template <class T>
  static constexpr T jvp(const T& g, const T&, const T& x, std::int64_t y) {
    if (y == 1) return g;  // no `integer_pow[y=0]` equation for x ** 1
    if (y == std::numeric_limits<std::int64_t>::min())
      throw core::value_error(
          "integer_pow: the derivative of x ** y needs x ** (y - 1), which is not an int64 power "
          "for y = " +
          std::to_string(y) + ": expected y > INT64_MIN");
    // `y` as a C++ integer (a weak constant): a double would widen a weak float32 `x`.
    return g * (y * xpr::integer_pow(x, y - 1));
  }
  template <class T, std::integral N>
  requires(!std::is_same_v<N, bool>) static constexpr auto number(const T& x, N exponent) {
    const std::int64_t n = core::int64_exponent("integer_pow", exponent);
    using R = decltype(detail::plain(x * x));
    if (n == 0) return R(detail::plain(detail::one_like(x) + 0 * x));
    // In 64 bits (an int would cut 2^32 + 1 to 1), and 0 - n unsigned: -INT64_MIN overflows.
    std::uint64_t m =
        n < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(n) : static_cast<std::uint64_t>(n);
    R acc = x, base = x;
    bool first = true;
    for (; m; m >>= 1) {
      if (m & 1) {
        acc = first ? R(base) : R(detail::plain(acc * base));
        first = false;
      }
      if (m > 1) base = detail::plain(base * base);
    }
    if (n < 0) return R(detail::plain(detail::one_like(x) / acc));
    return acc;
  }
};
/// round[rounding_method](x): to the nearest integer, halves away from zero (0, `lax.round`'s
/// default) or to even (1, `jnp.round`'s). The method is a parameter of the equation, as
/// integer_pow's `y`; piecewise constant (JAX: `defjvp_zero`).
struct round {
  static constexpr std::string_view name = "round";
  static constexpr int arity = 1;
  static constexpr core::Accepts accepts = core::Accepts::floating;
  static constexpr std::string_view parameter = "rounding_method";
  static constexpr bool differentiable = false;
  static constexpr bool differentiable_at(std::int64_t) { return false; }
  template <class T>
  static constexpr auto number(const T& x, rounding_method m = rounding_method::to_nearest_even) {
    if (m == rounding_method::away_from_zero)
      return detail::plain(detail::map_number(x, [](const auto& v) {
        using std::round;
        return round(v);
      }));
    // nearbyint rounds ties to even in the default floating-point environment, as XLA does.
    return detail::plain(detail::map_number(x, [](const auto& v) {
      using std::nearbyint;
      return nearbyint(v);
    }));
  }
  template <class T>
  static constexpr auto number(const T& x, std::int64_t m) {
    return number(x, static_cast<rounding_method>(m));
  }
};
/// is_finite x: neither infinite nor NaN. Floats in, a strong bool out (like the comparisons);
/// piecewise constant.
struct is_finite {
  static constexpr std::string_view name = "is_finite";
  static constexpr int arity = 1;
  static constexpr core::Accepts accepts = core::Accepts::floating;
  static constexpr bool differentiable = false;
  template <class T>
  static constexpr auto number(const T& x) {
    if constexpr (detail::is_arith<T>) {
      return std::isfinite(x);
    } else if constexpr (requires { x.isFinite(); }) {
      return x.isFinite();
    } else {
      return detail::adl_isfinite(x);  // xsimd's
    }
  }
};
/// not x: logical not of bools, bitwise not (`~x`) of integers (`lax.bitwise_not`, JAX's
/// `not_p`); no floats. Its results have no tangent space.
struct not_ {
  static constexpr std::string_view name = "not";
  static constexpr int arity = 1;
  static constexpr core::Accepts accepts = core::Accepts::integral;
  static constexpr bool differentiable = false;
  template <class T>
  static constexpr auto number(const T& x) {
    if constexpr (std::is_same_v<T, bool>) {
      return !x;
    } else if constexpr (detail::is_arith<T>) {
      static_assert(std::is_integral_v<T>, "xpr::bitwise_not: expected an integer or a bool");
      return static_cast<T>(~x);
    } else {
      return ~x;
    }
  }
};
/// and, or, xor of bools (logical) and integers (bitwise) (`lax.bitwise_and`..., JAX's `and_p`,
/// `or_p`, `xor_p`; named `and`, `or`, `xor` in jaxprs); no floats. Piecewise constant: no
/// tangent space (JAX: `defjvp_zero`).
template <class Derived>
struct bitwise {
  static constexpr int arity = 2;
  static constexpr core::Accepts accepts = core::Accepts::integral;
  static constexpr bool commutative = true;
  static constexpr bool differentiable = false;
  template <class A, class B>
  static constexpr auto number(const A& a, const B& b) {
    if constexpr (detail::is_arith<A> && detail::is_arith<B>) {
      static_assert(std::is_integral_v<A> && std::is_integral_v<B>,
                    "xpr::bitwise_and/or/xor: expected integers or bools");
      using C = std::common_type_t<A, B>;
      return static_cast<C>(Derived::apply(static_cast<C>(a), static_cast<C>(b)));
    } else {
      return Derived::apply(a, b);
    }
  }
};
struct and_ : bitwise<and_> {
  static constexpr std::string_view name = "and";
  template <class A, class B>
  static constexpr auto apply(const A& a, const B& b) {
    return a & b;
  }
};
struct or_ : bitwise<or_> {
  static constexpr std::string_view name = "or";
  template <class A, class B>
  static constexpr auto apply(const A& a, const B& b) {
    return a | b;
  }
};
struct xor_ : bitwise<xor_> {
  static constexpr std::string_view name = "xor";
  template <class A, class B>
  static constexpr auto apply(const A& a, const B& b) {
    return a ^ b;
  }
};
/// `jnp.logical_and/or/xor(x, y)`: not primitives; the runtime tier converts to bool and binds
/// `and`, `or`, `xor`.
template <class Bitwise>
struct logical {
  static constexpr std::string_view name = Bitwise::name;
  template <class A, class B>
  static constexpr auto number(const A& a, const B& b) {
    return static_cast<bool>(Bitwise::apply(static_cast<bool>(a), static_cast<bool>(b)));
  }
};
struct logical_and : logical<and_> {};
struct logical_or : logical<or_> {};
struct logical_xor : logical<xor_> {};
/// `jnp.remainder(x, y)`: `rem` moved into the divisor's sign (Python's `%`); an integer divisor
/// of 0 counts as 1, as jnp.remainder replaces it (the result is 0). Not a primitive.
struct remainder {
  static constexpr std::string_view name = "remainder";
  template <class A, class B>
  static constexpr auto number(const A& a, const B& b) {
    using C = std::common_type_t<A, B>;
    const C x = static_cast<C>(a);
    C y = static_cast<C>(b);
    if constexpr (std::is_integral_v<C>) {
      if (y == C(0)) y = C(1);
    }
    const C r = rem::number(x, y);
    return r != C(0) && ((r < C(0)) != (y < C(0))) ? static_cast<C>(r + y) : r;
  }
};
/// `jnp.floor_divide(x, y)`: the quotient rounded toward minus infinity (Python's `//`), built as
/// jax.numpy builds it: for integers `div` (XLA's: `x / 0 == -1`), less one where the signs
/// differ and `rem` is not 0; for floats CPython's float_divmod (JAX's `_float_divmod`). Not a
/// primitive.
struct floor_divide {
  static constexpr std::string_view name = "floor_divide";
  template <class A, class B>
  static constexpr auto number(const A& a, const B& b) {
    using C = std::common_type_t<A, B>;
    const C x = static_cast<C>(a), y = static_cast<C>(b);
    if constexpr (std::is_integral_v<C>) {
      using U = std::make_unsigned_t<C>;
      const C q = y == C(0)    ? C(-1)
                  : y == C(-1) ? static_cast<C>(U(0) - static_cast<U>(x))
                               : static_cast<C>(x / y);
      const bool differ = ((x > C(0)) - (x < C(0))) != ((y > C(0)) - (y < C(0)));
      return differ && rem::number(x, y) != C(0) ? static_cast<C>(static_cast<U>(q) - U(1)) : q;
    } else {
      const C m = rem::number(x, y);
      C d = (x - m) / y;
      if (m != C(0) && ((y < C(0)) != (m < C(0)))) d = d - C(1);
      return static_cast<C>(__builtin_round(d));  // lax.round: d is integral but for rounding
    }
  }
};
/// `jnp.logical_not(x)`: not of `x` converted to bool (nonzero is true). Not a primitive: the
/// runtime tier binds `ne` (for non-bools) and `not`.
struct logical_not {
  static constexpr std::string_view name = "logical_not";
  template <class T>
  static constexpr auto number(const T& x) {
    if constexpr (detail::is_arith<T>)
      return !static_cast<bool>(x);
    else
      return !x;
  }
};
/// `where(c, a, b)`: `a` where `c` holds, else `b` (`lax.select_n` with the operands swapped).
struct select {
  static constexpr std::string_view name = "select";
  static constexpr int arity = 3;
  template <class C, class A, class B>
  static constexpr auto number(const C& c, const A& a, const B& b) {
    if constexpr (detail::is_arith<C>) {
      using R = std::common_type_t<A, B>;
      return c ? static_cast<R>(a) : static_cast<R>(b);
    } else if constexpr (requires { c.select(a, b); }) {
      return c.select(a, b);
    } else {
      return detail::adl_select(c, a, b);
    }
  }
};

/// `cond(pred, true_fn, false_fn, operands...)`: `true_fn(operands...)` if `pred` holds, else
/// `false_fn(operands...)` (`lax.cond`). On plain numbers a C++ `bool` just branches; a SIMD or
/// Eigen mask evaluates both functions and selects lane by lane.
struct cond {
  static constexpr std::string_view name = "cond";
  template <class P, class T, class F, class... Ops>
  requires std::is_invocable_v<const T&, const Ops&...> &&
      std::is_invocable_v<const F&, const Ops&...>
  static constexpr auto number(const P& pred, const T& true_fn, const F& false_fn,
                               const Ops&... ops) {
    if constexpr (detail::is_arith<P>) {
      using R = std::common_type_t<std::invoke_result_t<const T&, const Ops&...>,
                                   std::invoke_result_t<const F&, const Ops&...>>;
      return pred ? R(true_fn(ops...)) : R(false_fn(ops...));
    } else {
      return select::number(pred, true_fn(ops...), false_fn(ops...));
    }
  }
};

/// Plain numbers compute at once.
template <class Op, class... Args>
requires core::Numbers<Args...> && requires(const Args&... args) { Op::number(args...); }
constexpr auto xpr_apply(Op, const Args&... args) { return Op::number(args...); }

}  // namespace xpr::op

// ---------------------------------------------------------------------------------------------
// The list of elementwise primitives both tiers are generated from.
// ---------------------------------------------------------------------------------------------
namespace xpr {

/// An elementwise primitive's struct: a name, an arity of 1 or 2, the dtypes it accepts, its
/// meaning on numbers, and a jvp rule per operand or `differentiable = false`.
template <class Op>
concept ElementwiseOp = requires {
  { Op::name } -> std::convertible_to<std::string_view>;
  { Op::arity } -> std::convertible_to<int>;
  { Op::accepts } -> std::convertible_to<core::Accepts>;
}
&&(Op::arity == 1 || Op::arity == 2);

/// Whether `Op`'s derivative is zero (it says `differentiable = false`).
template <class Op>
inline constexpr bool is_differentiable_v = [] {
  if constexpr (requires { Op::differentiable; })
    return bool{Op::differentiable};
  else
    return true;
}();
/// Whether `Op` is linear (in some operands, given the others: the tiers' transpose rules).
template <class Op>
inline constexpr bool is_linear_v = [] {
  if constexpr (requires { Op::linear; })
    return bool{Op::linear};
  else
    return false;
}();
/// Whether `Op` takes an integer parameter besides its operands (`Op::parameter` names it, as
/// jaxprs print it: `integer_pow[y=3]`).
template <class Op>
inline constexpr bool has_parameter_v = requires {
  Op::parameter;
};
/// Whether a linear binary `Op` is linear in both operands at once (add, sub), not only in each
/// while the other is known (mul).
template <class Op>
inline constexpr bool is_linear_jointly_v = [] {
  if constexpr (requires { Op::linear_jointly; })
    return bool{Op::linear_jointly};
  else
    return false;
}();
/// Whether `Op`'s operands commute (hash-consing in the compile-time tier sorts them).
template <class Op>
inline constexpr bool is_commutative_v = [] {
  if constexpr (requires { Op::commutative; })
    return bool{Op::commutative};
  else
    return false;
}();

/// Elementwise primitives a program adds to the library's: specialize `user_primitives<void>`
/// with `using type = boost::mp11::mp_list<my_op...>;` after including this header and before any
/// other xpr header, identically in every translation unit of a program (as Eigen's plugin macros
/// are). See docs/primitives.md and examples/primitives.cpp.
template <class = void>
struct user_primitives {
  using type = boost::mp11::mp_list<>;
};

/// The library's elementwise primitives, in the order of the compile-time tier's `Prim`.
using builtin_elementwise =
    boost::mp11::mp_list<op::neg, op::sin, op::cos, op::tan, op::tanh, op::exp, op::log, op::log1p,
                         op::expm1, op::sqrt, op::rsqrt, op::abs, op::sign, op::logistic,  // unary
                         op::square, op::exp2, op::cbrt, op::erf, op::floor, op::ceil, op::copy,
                         op::add, op::sub, op::mul, op::div, op::max, op::min, op::pow,  // binary
                         op::rem>;

/// The comparisons, in the order of the compile-time tier's `Prim`: each tier derives its
/// comparison primitives from this list (rt `comparison_p<Op>`, ct `rules::comparison<Op>`).
using comparison_ops = boost::mp11::mp_list<op::eq, op::ne, op::lt, op::le, op::gt, op::ge>;

/// Whether `Op` is one of the comparisons (a bool result; each tier has a primitive class of its
/// own for them).
template <class Op>
inline constexpr bool is_comparison_v = boost::mp11::mp_contains<comparison_ops, Op>::value;

/// Every elementwise primitive: the library's, then the program's (`user_primitives`).
template <class V = void>  // a parameter, so that user_primitives is read where this is used
using elementwise_t =
    boost::mp11::mp_append<builtin_elementwise, typename user_primitives<V>::type>;

/// `clip(x, lo, hi)` = `minimum(maximum(x, lo), hi)`, in every tier.
inline constexpr auto clip = [](const auto& x, const auto& lo, const auto& hi) {
  return minimum(maximum(x, lo), hi);
};

}  // namespace xpr
