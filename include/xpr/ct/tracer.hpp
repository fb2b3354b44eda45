// SPDX-License-Identifier: MIT
// The compile-time tracer: the value a user's lambda receives while it is traced inside a constant
// evaluation. Every operation on it binds a primitive, which folds constants, simplifies (x*1, x+0,
// 0*x) and records an equation in the graph; C++ numbers mixed in are weakly typed literals.
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>

#include "xpr/core/dtype.hpp"
#include "xpr/core/ops.hpp"
#include "xpr/ct/graph.hpp"

namespace xpr::ct {

class Tracer;

/// The rules of one primitive (`fold`, `simplify`, `jvp`, `transpose`), specialised per `xpr::op`
/// tag in `ct/prims/*.hpp` (ct/rules.hpp includes them all). If you see an error naming this
/// template as incomplete, the operation has no compile-time rules, or its rules header is not
/// included: include "xpr/ct/rules.hpp" (or xpr/ct/ct.hpp).
template <class Op>
struct Rules;

/// The result of a `simplify` rule: `done` when the equation is not needed.
struct Simplified;

/// Binds the primitive `Op` to operands: folds, simplifies or records it.
template <class Op>
constexpr Tracer bind(const Tracer* in, std::int64_t param = 0);

namespace detail {
template <class T>
constexpr bool is_number_v = std::is_arithmetic_v<std::remove_cvref_t<T>>;
template <class T>
constexpr bool is_tracer_v = std::is_same_v<std::remove_cvref_t<T>, Tracer>;
/// JAX's result type of two operands, with the common cases first: constant evaluation pays for
/// every step, and this runs for every equation.
constexpr WeakDType join(WeakDType a, WeakDType b) {
  if (a.dtype == b.dtype) return {a.dtype, a.weak && b.weak};
  if (a.weak != b.weak && is_floating(a.dtype) && is_floating(b.dtype)) return a.weak ? b : a;
  return result_type(a, b);
}
template <class A, class B>
concept TracerOperands = (is_tracer_v<A> || is_tracer_v<B>)&&(is_tracer_v<A> ||
                                                              is_number_v<A>)&&(is_tracer_v<B> ||
                                                                                is_number_v<B>);
}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Tracer: a variable of a graph, or a constant. Constants are kept out of the graph until an
// equation needs them, so symbolic zeros (tangents, cotangents) cost nothing.
// ---------------------------------------------------------------------------------------------
class Tracer {
 public:
  using xpr_traced = void;  // not a plain number: xpr::sin(t) dispatches here

  /// The constant 0, like `double{}`.
  constexpr Tracer() = default;
  /// A C++ number: a weakly typed constant. Integers are weak floats (a weak integer never wins
  /// over a float in JAX's promotion, and traced values are floats).
  template <class T>
  requires std::is_arithmetic_v<T>
  constexpr Tracer(T value)  // NOLINT(google-explicit-constructor): numbers mix with tracers
      : value_(static_cast<double>(value)),
        dtype_(std::is_same_v<T, bool>    ? DType::bool_
               : std::is_same_v<T, float> ? DType::float32
                                          : DType::float64) {}
  /// Variable `id` of `graph`; a literal equation becomes a constant.
  constexpr Tracer(Graph* graph, int id) : graph_(graph) {
    const Eqn& e = (*graph)[static_cast<std::size_t>(id)];
    dtype_ = e.dtype;
    weak_ = e.weak;
    if (e.prim == Prim::lit)
      value_ = e.value();
    else
      id_ = id;
  }
  /// A stand-in for a value not recorded because `graph` is over its cap (see Graph::set_cap):
  /// only its type is right; it is never read.
  static constexpr Tracer untraced(Graph* graph, WeakDType type) {
    Tracer t;
    t.graph_ = graph;
    t.id_ = 0;
    t.dtype_ = type.dtype;
    t.weak_ = type.weak;
    return t;
  }
  static constexpr Tracer constant(double value, DType dtype, bool weak, Graph* graph = nullptr) {
    Tracer t;
    t.value_ = value;
    t.dtype_ = dtype;
    t.weak_ = weak;
    t.graph_ = graph;
    return t;
  }

  constexpr bool is_constant() const { return id_ < 0; }
  constexpr bool is_zero() const { return id_ < 0 && value_ == 0; }
  constexpr bool is_one() const { return id_ < 0 && value_ == 1; }
  constexpr double value() const { return value_; }
  constexpr int id() const { return id_; }
  constexpr Graph* graph() const { return graph_; }
  constexpr DType dtype() const { return dtype_; }
  constexpr bool weak() const { return weak_; }
  constexpr WeakDType weak_dtype() const { return {dtype_, weak_}; }

  /// The variable holding this value in `g`, as a literal of type `dtype` when it is a constant.
  constexpr int materialize(Graph& g, DType dtype) const {
    if (id_ >= 0) return id_;
    return g.literal(rounded(value_, dtype), dtype, weak_);
  }
  /// `v` rounded to the precision of `dtype`.
  static constexpr double rounded(double v, DType dtype) {
    if (dtype == DType::float32) return static_cast<double>(static_cast<float>(v));
    if (dtype == DType::bool_) return v != 0 ? 1.0 : 0.0;
    return v;
  }

  /// A traced value has no value yet, so it cannot decide a C++ branch.
  template <class U = void>
  constexpr explicit operator bool() const {
    static_assert(detail::dependent_false<U>,
                  "xpr::ct: a traced value cannot decide a C++ branch (if, ?:, &&, ||, !, "
                  "std::max, ...): its value is known only at run time. Select with "
                  "xpr::where(cond, a, b) or xpr::cond(pred, true_fn, false_fn, operands...), "
                  "or use xpr::maximum / xpr::minimum / xpr::clip.");
    return false;
  }

  // Operators, as templates so that C++ numbers mix in as weakly typed literals.
  template <class A, class B>
  requires detail::TracerOperands<A, B>
  friend constexpr Tracer operator+(const A& a, const B& b) { return bind2<op::add>(a, b); }
  template <class A, class B>
  requires detail::TracerOperands<A, B>
  friend constexpr Tracer operator-(const A& a, const B& b) { return bind2<op::sub>(a, b); }
  template <class A, class B>
  requires detail::TracerOperands<A, B>
  friend constexpr Tracer operator*(const A& a, const B& b) { return bind2<op::mul>(a, b); }
  template <class A, class B>
  requires detail::TracerOperands<A, B>
  friend constexpr Tracer operator/(const A& a, const B& b) { return bind2<op::div>(a, b); }
  template <class A, class B>
  requires detail::TracerOperands<A, B>
  friend constexpr Tracer operator==(const A& a, const B& b) { return bind2<op::eq>(a, b); }
  template <class A, class B>
  requires detail::TracerOperands<A, B>
  friend constexpr Tracer operator!=(const A& a, const B& b) { return bind2<op::ne>(a, b); }
  template <class A, class B>
  requires detail::TracerOperands<A, B>
  friend constexpr Tracer operator<(const A& a, const B& b) { return bind2<op::lt>(a, b); }
  template <class A, class B>
  requires detail::TracerOperands<A, B>
  friend constexpr Tracer operator<=(const A& a, const B& b) { return bind2<op::le>(a, b); }
  template <class A, class B>
  requires detail::TracerOperands<A, B>
  friend constexpr Tracer operator>(const A& a, const B& b) { return bind2<op::gt>(a, b); }
  template <class A, class B>
  requires detail::TracerOperands<A, B>
  friend constexpr Tracer operator>=(const A& a, const B& b) { return bind2<op::ge>(a, b); }
  template <class A>
  requires detail::is_tracer_v<A>
  friend constexpr Tracer operator-(const A& a) { return bind<op::neg>(&a); }
  template <class A>
  requires detail::is_tracer_v<A>
  friend constexpr Tracer operator+(const A& a) { return a; }
  template <class B>
  requires detail::is_tracer_v<B> || detail::is_number_v<B>
  constexpr Tracer& operator+=(const B& b) { return *this = *this + b; }
  template <class B>
  requires detail::is_tracer_v<B> || detail::is_number_v<B>
  constexpr Tracer& operator-=(const B& b) { return *this = *this - b; }
  template <class B>
  requires detail::is_tracer_v<B> || detail::is_number_v<B>
  constexpr Tracer& operator*=(const B& b) { return *this = *this * b; }
  template <class B>
  requires detail::is_tracer_v<B> || detail::is_number_v<B>
  constexpr Tracer& operator/=(const B& b) { return *this = *this / b; }

  template <class Op, class A, class B>
  static constexpr Tracer bind2(const A& a, const B& b) {
    const Tracer in[2] = {Tracer(a), Tracer(b)};
    return bind<Op>(in);
  }

 private:
  Graph* graph_ = nullptr;
  int id_ = -1;
  double value_ = 0.0;
  DType dtype_ = DType::float64;
  bool weak_ = true;
};

struct Simplified {
  bool done = false;
  Tracer value;
};

// ---------------------------------------------------------------------------------------------
// xpr_apply: the `xpr::` function objects (xpr::sin, xpr::maximum, xpr::where, ...) on tracers.
// ---------------------------------------------------------------------------------------------
namespace detail {
template <class Op>
constexpr bool is_ct_prim = requires {
  prim_v<Op>;
}
&&static_cast<std::uint8_t>(prim_v<Op>) != 0xff;
}  // namespace detail

template <class Op, class A>
requires detail::is_ct_prim<Op> &&(arity(prim_v<Op>) == 1) && (prim_v<Op> != Prim::integer_pow) &&
    detail::is_tracer_v<A> constexpr Tracer xpr_apply(Op, const A& x) {
  return bind<Op>(&x);
}

template <class A, class N>
requires detail::is_tracer_v<A> && std::is_integral_v<N>
constexpr Tracer xpr_apply(op::integer_pow, const A& x, N n) {
  return bind<op::integer_pow>(&x, core::int64_exponent("integer_pow", n));
}

template <class Op, class A, class B>
requires detail::is_ct_prim<Op> &&(arity(prim_v<Op>) == 2) &&
    detail::TracerOperands<A, B> constexpr Tracer xpr_apply(Op, const A& a, const B& b) {
  // pow with an integer exponent is integer_pow: repeated multiplication, exact derivatives.
  if constexpr (std::is_same_v<Op, op::pow> && std::is_integral_v<B> && !std::is_same_v<B, bool>)
    return xpr_apply(op::integer_pow{}, Tracer(a), core::int64_exponent("pow", b));
  else
    return Tracer::bind2<Op>(a, b);
}

/// `where(c, a, b)` records `select_n c b a` (JAX's operand order: pred, on_false, on_true).
template <class C, class A, class B>
requires(detail::is_tracer_v<C> || detail::is_tracer_v<A> || detail::is_tracer_v<B>) &&
    (detail::is_tracer_v<C> ||
     detail::is_number_v<C>)&&(detail::is_tracer_v<A> ||
                               detail::is_number_v<A>)&&(detail::is_tracer_v<B> ||
                                                         detail::is_number_v<B>)constexpr Tracer
    xpr_apply(op::select, const C& c, const A& a, const B& b) {
  const Tracer in[3] = {Tracer(c), Tracer(b), Tracer(a)};
  return bind<op::select>(in);
}

/// `xpr::cond(pred, true_fn, false_fn, operands...)` on tracers: both functions are traced and
/// the result is `where(pred, true_fn(operands...), false_fn(operands...))`, which is what SIMD
/// code does anyway (a numeric predicate is true when nonzero). A C++ `bool` predicate just
/// branches. Each function returns one value (a tracer or a number).
template <class C, class T, class F, class... Ops>
requires(detail::is_tracer_v<C> || (detail::is_number_v<C> && (detail::is_tracer_v<Ops> || ...))) &&
    std::is_invocable_v<const T&, const Ops&...>&& std::is_invocable_v<
        const F&, const Ops&...> constexpr Tracer
    xpr_apply(op::cond, const C& pred, const T& true_fn, const F& false_fn,
              const Ops&... operands) {
  using A = std::remove_cvref_t<std::invoke_result_t<const T&, const Ops&...>>;
  using B = std::remove_cvref_t<std::invoke_result_t<const F&, const Ops&...>>;
  static_assert((detail::is_tracer_v<A> || detail::is_number_v<A>)&&(detail::is_tracer_v<B> ||
                                                                     detail::is_number_v<B>),
                "xpr::cond on compile-time tracers: true_fn and false_fn must each return one "
                "value (a traced value or a number), not a tuple");
  if constexpr (detail::is_number_v<C>) {
    return pred ? Tracer(true_fn(operands...)) : Tracer(false_fn(operands...));
  } else {
    const Tracer p = pred.dtype() == DType::bool_ ? Tracer(pred) : Tracer(pred != 0);
    return xpr_apply(op::select{}, p, true_fn(operands...), false_fn(operands...));
  }
}

// ---------------------------------------------------------------------------------------------
// bind: types, folding, simplification, literals, hash-consing, in that order.
// ---------------------------------------------------------------------------------------------
template <class Op>
constexpr Tracer bind(const Tracer* in, std::int64_t param) {
  constexpr Prim p = prim_v<Op>;
  constexpr int n = arity(p);
  Graph* g = nullptr;
  for (int k = 0; k < n; ++k) {
    Graph* gk = in[k].graph();
    if (gk && g && gk != g)
      detail::fail("xpr::ct: values from two different traces meet in one operation");
    if (gk) g = gk;
  }
  if (g && g->over_cap()) {  // too large: only count, as cheaply as possible (see Graph)
    g->count_past_cap();
    return Tracer::untraced(g, in[0].weak_dtype());
  }
  // Types: the result, and the type the operands are converted to.
  WeakDType out{}, operand{};
  if constexpr (p == Prim::select) {
    if (in[0].dtype() != DType::bool_)
      detail::fail("xpr::ct: xpr::where expects a comparison (a bool) as its condition");
    out = operand = detail::join(in[1].weak_dtype(), in[2].weak_dtype());
  } else if constexpr (n == 2) {
    operand = detail::join(in[0].weak_dtype(), in[1].weak_dtype());
    out = is_comparison(p) ? WeakDType{DType::bool_, false} : operand;
  } else {
    out = operand = in[0].weak_dtype();
  }
  if (operand.dtype == DType::bool_)
    detail::fail("xpr::ct: arithmetic on a comparison result; select with xpr::where instead");
  // Constants are converted to the operand type, as literals would be.
  Tracer x[n];
  bool all_constant = true;
  for (int k = 0; k < n; ++k) {
    x[k] = in[k];
    if (x[k].is_constant()) {
      if (p != Prim::select || k != 0)
        x[k] = Tracer::constant(Tracer::rounded(x[k].value(), operand.dtype), operand.dtype,
                                x[k].weak(), x[k].graph());
    } else {
      all_constant = false;
    }
  }
  if (all_constant) {
    double v[3] = {x[0].value(), n > 1 ? x[n > 1 ? 1 : 0].value() : 0.0,
                   n > 2 ? x[n > 2 ? 2 : 0].value() : 0.0};
    double r = 0;
    if (Rules<Op>::fold(v, param, r))
      return Tracer::constant(Tracer::rounded(r, out.dtype), out.dtype, out.weak, g);
  }
  Simplified s = Rules<Op>::simplify(x, param, out);
  if (s.done) return s.value;
  if (!g)
    detail::fail(
        "xpr::ct: this operation on constants cannot be evaluated at compile time (it overflows, "
        "divides by zero or gives NaN); make the value depend on an argument");
  Eqn e{p, out.dtype, out.weak, {-1, -1, -1}, static_cast<std::uint64_t>(param)};
  for (int k = 0; k < n; ++k)
    e.in[k] = x[k].materialize(*g, p == Prim::select && k == 0 ? DType::bool_ : operand.dtype);
  if (is_commutative(p) && e.in[0] != e.in[1]) {  // a*b merges with an existing b*a; the
    Eqn swapped = e;                              // written order is kept
    swapped.in[0] = e.in[1];
    swapped.in[1] = e.in[0];
    if (int id = g->find(swapped); id >= 0) return Tracer(g, id);
  }
  return Tracer(g, g->emit(e));
}

}  // namespace xpr::ct

// ---------------------------------------------------------------------------------------------
// What every rule table shares: the explicit opt-outs (`not_linear`, `not_differentiable`,
// `no_simplification`), the helpers simplifications return, and the patterns they look for. The
// rule tables themselves (ct/prims/*.hpp) include this header; ct/rules.hpp gathers them.
// ---------------------------------------------------------------------------------------------
namespace xpr::ct::rules {

/// Opt-out of the transpose slot: the primitive is never linear in any operand.
template <class Op>
struct not_linear {
  static constexpr bool linear = false;
  template <class T>
  static constexpr void transpose(const T&, const T*, const bool*, T*, std::int64_t) {
    detail::fail(
        "xpr::ct: Transpose rule for a primitive that is not linear; a tangent jaxpr "
        "may only use add, sub, neg, mul, div and select_n");
  }
};

/// Opt-out of the jvp slot: the derivative is zero (comparisons, sign, stop_gradient).
struct not_differentiable {
  template <class T>
  static constexpr T jvp(const T*, const T&, const T*, std::int64_t) {
    return T{};
  }
};

/// Opt-out of the simplify slot.
struct no_simplification {
  template <class T>
  static constexpr Simplified simplify(const T*, std::int64_t, WeakDType) {
    return {};
  }
};

/// `x`, when it already has the type `out` (a simplification must not change a type).
constexpr Simplified same(const Tracer& x, WeakDType out) {
  if (x.dtype() != out.dtype) return {};
  return {true, x};
}
/// The constant `v` of type `out`.
constexpr Simplified constant(double v, WeakDType out, Graph* g) {
  return {true, Tracer::constant(Tracer::rounded(v, out.dtype), out.dtype, out.weak, g)};
}
/// The equation computing `x` when it is a `p`, else null (a constant or another primitive):
/// the one lookup every pattern below starts from.
template <class T>
constexpr const Eqn* defined_by(const T& x, Prim p) {
  Graph* g = x.graph();
  if (!g || x.is_constant()) return nullptr;
  const Eqn& e = (*g)[static_cast<std::size_t>(x.id())];
  return e.prim == p ? &e : nullptr;
}

/// The primitive computing `x` (`lit` for a constant).
template <class T>
constexpr Prim prim_of(const T& x) {
  if (x.is_constant()) return Prim::lit;
  return (*x.graph())[static_cast<std::size_t>(x.id())].prim;
}

/// The operand of `x` when `x` is `neg y`, else nothing.
template <class T>
constexpr bool negated(const T& x, T& y) {
  const Eqn* e = defined_by(x, Prim::neg);
  if (!e) return false;
  y = T(x.graph(), e->in[0]);
  return true;
}

/// `y` and the literal `c` when `x` is `mul y c` or `mul c y`, else nothing.
template <class T>
constexpr bool scaled(const T& x, T& y, double& c) {
  const Eqn* e = defined_by(x, Prim::mul);
  if (!e) return false;
  Graph* g = x.graph();
  for (int k = 0; k < 2; ++k) {
    const Eqn& lit = (*g)[static_cast<std::size_t>(e->in[k])];
    if (lit.prim != Prim::lit) continue;
    c = lit.value();
    y = T(g, e->in[1 - k]);
    return true;
  }
  return false;
}

/// The predicate and branches when `x` is `select_n p on_false on_true`, else nothing.
template <class T>
constexpr bool selected(const T& x, T& p, T& on_false, T& on_true) {
  const Eqn* e = defined_by(x, Prim::select);
  if (!e) return false;
  p = T(x.graph(), e->in[0]);
  on_false = T(x.graph(), e->in[1]);
  on_true = T(x.graph(), e->in[2]);
  return true;
}

/// `-x` when it costs nothing: `x` a constant, `neg z`, or a value whose negation the graph
/// already holds. Negation is exact, so rewrites built on it are too.
template <class T>
constexpr bool free_negation(const T& x, T& r) {
  if (x.is_constant()) {
    r = T::constant(-x.value(), x.dtype(), x.weak(), x.graph());
    return true;
  }
  if (negated(x, r)) return true;
  Graph* g = x.graph();
  const Eqn n{Prim::neg, x.dtype(), x.weak(), {x.id(), -1, -1}, 0};
  if (const int id = g->find(n); id >= 0) {
    r = T(g, id);
    return true;
  }
  return false;
}

/// `u` and `v` when `x` is `div u v`, else nothing.
template <class T>
constexpr bool quotient(const T& x, T& u, T& v) {
  const Eqn* e = defined_by(x, Prim::div);
  if (!e) return false;
  u = T(x.graph(), e->in[0]);
  v = T(x.graph(), e->in[1]);
  return true;
}

/// Whether `v` is a power of two (a normal number with a zero mantissa): multiplying by it is
/// exact, so `c1 * (c2 * y)` may become `(c1 * c2) * y` when either is one.
constexpr bool power_of_two(double v) {
  const auto bits = std::bit_cast<std::uint64_t>(v);
  const auto exponent = (bits >> 52) & 0x7ff;
  return (bits & ((std::uint64_t{1} << 52) - 1)) == 0 && exponent != 0 && exponent != 0x7ff;
}

/// Whether `v` is a normal number of `dtype` (no overflow, no loss to a subnormal).
constexpr bool normal_in(double v, DType dtype) {
  const double a = v < 0 ? -v : v;
  if (dtype == DType::float32) return a >= 0x1p-126 && a <= 0x1.fffffep127;
  return a >= 0x1p-1022 && a <= 0x1.fffffffffffffp1023;
}

constexpr Graph* graph_of(const Tracer* x, int n) {
  for (int k = 0; k < n; ++k)
    if (x[k].graph()) return x[k].graph();
  return nullptr;
}

}  // namespace xpr::ct::rules

// ---------------------------------------------------------------------------------------------
// What the rules of the elementwise primitives share: `standard_jvp`, built from the per-operand
// rules of the primitive's struct (core/ops.hpp), and `rules::standard`, the rules of any entry
// of the shared list that has no `Rules` of its own (a program's primitives; the library's add
// exact folding, simplifications and special cases in ct/prims/unary.hpp and binary.hpp).
// ---------------------------------------------------------------------------------------------
namespace xpr::ct {

/// JAX's `standard_jvp`: the tangent of `ans = Op(x...)` from the tangents `t`, as the sum of the
/// struct's per-operand rules over the operands whose tangent is not a symbolic zero (the jvp
/// sweep never calls it when all are). `T{}` (zero) for a primitive that is not differentiable
/// (at its parameter `y`, for one that has a parameter).
template <class Op, class T>
constexpr T standard_jvp(const T* x, const T& ans, const T* t, std::int64_t y = 0) {
  if constexpr (!is_differentiable_v<Op>) {
    return T{};
  } else if constexpr (has_parameter_v<Op>) {
    if (!Op::differentiable_at(y)) return T{};
    return Op::jvp(t[0], ans, x[0], y);
  } else if constexpr (Op::arity == 1) {
    return Op::jvp(t[0], ans, x[0]);
  } else {
    if (t[1].is_zero()) return Op::jvp_x(t[0], ans, x[0], x[1]);
    if (t[0].is_zero()) return Op::jvp_y(t[1], ans, x[0], x[1]);
    if constexpr (requires { Op::jvp_xy(t[0], t[1], ans, x[0], x[1]); }) {
      return Op::jvp_xy(t[0], t[1], ans, x[0], x[1]);
    } else {
      const T tx = Op::jvp_x(t[0], ans, x[0], x[1]);  // x's term first, as JAX sums them
      const T ty = Op::jvp_y(t[1], ans, x[0], x[1]);
      return tx + ty;
    }
  }
}

namespace rules {
/// The transpose slot of a linear elementwise primitive, from its struct (core/ops.hpp): unary
/// `Op::transpose(ct)`; binary `Op::transpose_x(ct, y)` / `transpose_y(ct, x)` for the operands
/// it is linear in, both at once only when `Op::linear_jointly`.
template <class Op>
struct linear_from_struct {
  static constexpr bool linear = true;
  template <class T>
  static constexpr void transpose(const T& ct, const T* x, const bool* linear_in, T* ct_x,
                                  std::int64_t) {
    if constexpr (Op::arity == 1) {
      ct_x[0] = Op::transpose(ct);
    } else {
      constexpr bool in_x = requires(const T& a) { Op::transpose_x(a, a); };
      constexpr bool in_y = requires(const T& a) { Op::transpose_y(a, a); };
      if (!is_linear_jointly_v<Op> && linear_in[0] && linear_in[1])
        detail::fail("xpr::ct: a product of two tangents (mul) is not linear");
      if (linear_in[0]) {
        if constexpr (in_x)
          ct_x[0] = Op::transpose_x(ct, x[1]);
        else
          detail::fail("xpr::ct: Transpose rule: not linear in its first operand");
      }
      if (linear_in[1]) {
        if constexpr (in_y)
          ct_x[1] = Op::transpose_y(ct, x[0]);
        else
          detail::fail(
              "xpr::ct: Transpose rule: not linear in its second operand (div's "
              "denominator)");
      }
    }
  }
};

/// The rules an elementwise primitive gets from its struct alone: constant folding by
/// `Op::number` (when the compiler can evaluate it here), no simplification, the struct's
/// transpose if it is linear, and the standard jvp. A `Rules<Op>` specialization derives from it
/// and overrides what it does better.
template <class Op>
struct standard : std::conditional_t<is_linear_v<Op>, linear_from_struct<Op>, not_linear<Op>>,
                  no_simplification {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    if constexpr (Op::arity == 1) {
      if (__builtin_constant_p(Op::number(x[0]))) {
        r = static_cast<double>(Op::number(x[0]));
        return true;
      }
    } else {
      if (__builtin_constant_p(Op::number(x[0], x[1]))) {
        r = static_cast<double>(Op::number(x[0], x[1]));
        return true;
      }
    }
    return false;
  }
  template <class T>
  static constexpr T jvp(const T* x, const T& ans, const T* t, std::int64_t) {
    return standard_jvp<Op>(x, ans, t);
  }
};
}  // namespace rules

/// A program's own entries of the shared list (`user_primitives`) get these rules. The library's
/// primitives each have a specialization in ct/prims/*.hpp (so a translation unit that did not
/// include it fails to compile rather than silently tracing without the library's rules).
template <class Op>
requires ElementwiseOp<Op> &&(!boost::mp11::mp_contains<builtin_elementwise, Op>::value) &&
    (!has_parameter_v<Op>)&&(!is_comparison_v<Op>)struct Rules<Op> : rules::standard<Op> {
};

}  // namespace xpr::ct
