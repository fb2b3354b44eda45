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
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <utility>

namespace xpr::core {

/// Values that belong to a tracing family (runtime `Array`, compile-time tracers) declare a member
/// type `xpr_traced`; everything else is a plain number.
template <class T>
concept Traced = requires { typename std::remove_cvref_t<T>::xpr_traced; };

template <class... Ts>
concept Numbers = (!Traced<Ts> && ...);

void xpr_apply() = delete;  // makes the name known; the overloads are found by ADL

/// The function object behind each user-facing name.
template <class Op>
struct function {
  using op_type = Op;
  template <class... Args>
    requires requires(Args&&... args) { xpr_apply(Op{}, static_cast<Args&&>(args)...); }
  constexpr decltype(auto) operator()(Args&&... args) const {
    return xpr_apply(Op{}, static_cast<Args&&>(args)...);
  }
};

}  // namespace xpr::core

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
  } else if constexpr (requires { x.derived(); x.cwiseAbs(); }) {
    return 1;  // Eigen: scalar-op-array expressions accept a plain 1
  } else {
    return T(1);  // xsimd batches are constructible from a scalar
  }
}
// xsimd's `select(mask, a, b)`, found by ADL (a member named `select` would hide it).
template <class C, class A, class B>
constexpr auto adl_select(const C& c, const A& a, const B& b) {
  return select(c, a, b);
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

#define XPR_DETAIL_STD_UNARY(NAME)                              \
  struct NAME {                                                 \
    static constexpr std::string_view name = #NAME;             \
    template <class T>                                          \
    static constexpr auto number(const T& x) {                  \
      using std::NAME;                                          \
      return NAME(x);                                           \
    }                                                           \
  };
XPR_DETAIL_STD_UNARY(sin)
XPR_DETAIL_STD_UNARY(cos)
XPR_DETAIL_STD_UNARY(tan)
XPR_DETAIL_STD_UNARY(tanh)
XPR_DETAIL_STD_UNARY(exp)
XPR_DETAIL_STD_UNARY(log)
XPR_DETAIL_STD_UNARY(log1p)
XPR_DETAIL_STD_UNARY(expm1)
XPR_DETAIL_STD_UNARY(sqrt)
#undef XPR_DETAIL_STD_UNARY

struct neg {
  static constexpr std::string_view name = "neg";
  template <class T>
  static constexpr auto number(const T& x) {
    return -x;
  }
};
struct abs {
  static constexpr std::string_view name = "abs";
  template <class T>
  static constexpr auto number(const T& x) {
    if constexpr (detail::is_arith<T>) {
      return x < T(0) ? -x : x;
    } else {
      using std::abs;
      return abs(x);
    }
  }
};
struct rsqrt {
  static constexpr std::string_view name = "rsqrt";
  template <class T>
  static constexpr auto number(const T& x) {
    if constexpr (requires { x.rsqrt(); }) {
      return x.rsqrt();
    } else {
      using std::sqrt;  // xsimd::rsqrt is an approximation; 1/sqrt is exact to 1 ulp
      return detail::one_like(x) / sqrt(x);
    }
  }
};
struct sign {
  static constexpr std::string_view name = "sign";
  template <class T>
  static constexpr auto number(const T& x) {
    if constexpr (detail::is_arith<T>) {
      if constexpr (std::is_floating_point_v<T>)
        if (x != x) return x;  // NaN stays NaN, as in JAX
      return static_cast<T>((T(0) < x) - (x < T(0)));
    } else if constexpr (requires { x.sign(); }) {
      return x.sign();
    } else {
      return detail::adl_select(x > T(0), T(1), detail::adl_select(x < T(0), T(-1), x));
    }
  }
};
struct logistic {
  static constexpr std::string_view name = "logistic";
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
};
/// Identity on values; blocks derivatives in the tracing tiers.
struct stop_gradient {
  static constexpr std::string_view name = "stop_gradient";
  template <class T>
  static constexpr T number(const T& x) {
    return x;
  }
};

#define XPR_DETAIL_INFIX(NAME, OP)                                  \
  struct NAME {                                                     \
    static constexpr std::string_view name = #NAME;                 \
    template <class A, class B>                                     \
    static constexpr auto number(const A& a, const B& b) {          \
      return a OP b;                                                \
    }                                                               \
  };
XPR_DETAIL_INFIX(add, +)
XPR_DETAIL_INFIX(sub, -)
XPR_DETAIL_INFIX(mul, *)
XPR_DETAIL_INFIX(div, /)
XPR_DETAIL_INFIX(eq, ==)
XPR_DETAIL_INFIX(ne, !=)
XPR_DETAIL_INFIX(lt, <)
XPR_DETAIL_INFIX(le, <=)
XPR_DETAIL_INFIX(gt, >)
XPR_DETAIL_INFIX(ge, >=)
#undef XPR_DETAIL_INFIX

/// Elementwise maximum; NaN propagates, as in `jnp.maximum`.
struct max {
  static constexpr std::string_view name = "max";
  template <class A, class B>
  static constexpr auto number(const A& a, const B& b) {
    if constexpr (detail::is_arith<A> && detail::is_arith<B>) {
      using C = std::common_type_t<A, B>;
      C x = static_cast<C>(a), y = static_cast<C>(b);
      return x != x ? x : (y != y ? y : (x < y ? y : x));
    } else if constexpr (requires { a.max(b); }) {
      return a.max(b);
    } else {
      using std::max;
      return max(a, b);
    }
  }
};
/// Elementwise minimum; NaN propagates, as in `jnp.minimum`.
struct min {
  static constexpr std::string_view name = "min";
  template <class A, class B>
  static constexpr auto number(const A& a, const B& b) {
    if constexpr (detail::is_arith<A> && detail::is_arith<B>) {
      using C = std::common_type_t<A, B>;
      C x = static_cast<C>(a), y = static_cast<C>(b);
      return x != x ? x : (y != y ? y : (y < x ? y : x));
    } else if constexpr (requires { a.min(b); }) {
      return a.min(b);
    } else {
      using std::min;
      return min(a, b);
    }
  }
};
struct pow {
  static constexpr std::string_view name = "pow";
  template <class A, class B>
  static constexpr auto number(const A& a, const B& b) {
    using std::pow;
    return pow(a, b);
  }
};
/// `x ** n` for an integer `n` known where the operation is written, as repeated multiplication
/// (`lax.integer_pow`).
struct integer_pow {
  static constexpr std::string_view name = "integer_pow";
  template <class T>
  static constexpr auto number(const T& x, int n) {
    using R = decltype(detail::plain(x * x));
    if (n == 0) return R(detail::plain(detail::one_like(x) + 0 * x));
    // 0u - n, not -n: -INT_MIN overflows.
    unsigned m = n < 0 ? 0u - static_cast<unsigned>(n) : static_cast<unsigned>(n);
    R acc = x, base = x;
    bool first = true;
    for (; m; m >>= 1) {
      if (m & 1u) {
        acc = first ? R(base) : R(detail::plain(acc * base));
        first = false;
      }
      if (m > 1) base = detail::plain(base * base);
    }
    if (n < 0) return R(detail::plain(detail::one_like(x) / acc));
    return acc;
  }
};
/// `where(c, a, b)`: `a` where `c` holds, else `b` (`lax.select_n` with the operands swapped).
struct select {
  static constexpr std::string_view name = "select";
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
constexpr auto xpr_apply(Op, const Args&... args) {
  return Op::number(args...);
}

}  // namespace xpr::op

namespace xpr {

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
inline constexpr core::function<op::stop_gradient> stop_gradient{};
inline constexpr core::function<op::max> maximum{};
inline constexpr core::function<op::min> minimum{};
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

/// `clip(x, lo, hi)` = `minimum(maximum(x, lo), hi)`, in every tier.
inline constexpr auto clip = [](const auto& x, const auto& lo, const auto& hi) {
  return minimum(maximum(x, lo), hi);
};
/// `square(x)` = `integer_pow(x, 2)`, as `jnp.square`.
inline constexpr auto square = [](const auto& x) { return integer_pow(x, 2); };

}  // namespace xpr
