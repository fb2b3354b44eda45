// SPDX-License-Identifier: MIT
// Compile-time rules of the binary arithmetic primitives: add sub mul div max min pow rem. Each
// block holds the primitive's constant folding and its simplifications (x+0, x*1, 0*x, ...). The
// jvp and the linear ones' transpose are the standard ones, from the primitive's struct in
// core/ops.hpp, except div's jvp, which shares its division.
#pragma once

#include <cstdint>
#include <utility>

#include "xpr/core/ops.hpp"
#include "xpr/ct/tracer.hpp"

// `XPR_DETAIL_FOLD(expr, r)`: stores `expr` in `r` and returns true when the compiler can evaluate
// it here (GCC's constant folder, which computes the math builtins exactly); otherwise returns
// false and the equation is kept. The test must see the expression itself, hence a macro.
#define XPR_DETAIL_FOLD(EXPR, R)    \
  if (__builtin_constant_p(EXPR)) { \
    (R) = (EXPR);                   \
    return true;                    \
  }                                 \
  return false

namespace xpr::ct {

namespace rules {
/// `(z * c) * y` as `z * w` when `w = c * y` is already in the graph (and older than `z * c`)
/// and `c` is a power of two (so the two are equal). The jvp of `(c * q) * q` is
/// `(t * c) * q + (c * q) * t`; this makes its two terms one, `x + x`, so derivatives of
/// `-0.5 * a * a` and the like save two operations each.
template <class T>
constexpr Simplified reuse_scaled(const T* x, WeakDType out) {
  Graph* g = x[0].graph();
  if (!g || x[0].is_constant() || x[1].is_constant()) return {};
  for (int k = 0; k < 2; ++k) {
    const Eqn& e = (*g)[static_cast<std::size_t>(x[k].id())];
    if (e.prim != Prim::mul) continue;
    for (int j = 0; j < 2; ++j) {
      const Eqn& lit = (*g)[static_cast<std::size_t>(e.in[j])];
      if (lit.prim != Prim::lit || !power_of_two(lit.value())) continue;
      const T& y = x[1 - k];
      const WeakDType w = detail::join(y.weak_dtype(), {lit.dtype, lit.weak});
      // c * y in either operand order; only towards the older product, so that the rewrite
      // never undoes itself.
      Eqn m{Prim::mul, w.dtype, w.weak, {y.id(), e.in[j], -1}, 0};
      for (int order = 0; order < 2; ++order, std::swap(m.in[0], m.in[1]))
        if (const int id = g->find(m); id >= 0 && id < x[k].id())
          return same(T(g, e.in[1 - j]) * T(g, id), out);
    }
  }
  return {};
}

/// Both operands `select_n p a b` and `select_n p c d` with one predicate and, in each branch,
/// one operand a literal zero: `combine(a, c)` and `combine(b, d)` then cost at most a `neg`
/// each, so the two selects and their sum or difference become one select. Transposing
/// `where` gives such pairs: `where(p, ct, 0)` and `where(p, 0, ct)`.
template <class T, class Combine>
constexpr Simplified merge_selects(const T* x, WeakDType out, Combine combine) {
  T p, a, b, q, c, d;
  if (!selected(x[0], p, a, b) || !selected(x[1], q, c, d) || p.id() != q.id()) return {};
  if ((!a.is_zero() && !c.is_zero()) || (!b.is_zero() && !d.is_zero())) return {};
  return same(xpr::where(p, combine(b, d), combine(a, c)), out);
}
}  // namespace rules

// add: x + 0 = 0 + x = x, x + x = 2 * x, x + -y = x - y, -x + y = y - x, where(p, a, 0) +
// where(p, 0, b) = where(p, a, b); its transpose is the struct's (core/ops.hpp).
template <>
struct Rules<op::add> : rules::standard<op::add> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(x[0] + x[1], r);
  }
  template <class T>
  static constexpr Simplified simplify(const T* x, std::int64_t, WeakDType out) {
    if (x[1].is_zero()) return rules::same(x[0], out);
    if (x[0].is_zero()) return rules::same(x[1], out);
    if (!x[0].is_constant() && x[0].id() == x[1].id()) return rules::same(x[0] * 2, out);
    T y;
    if (rules::negated(x[1], y)) return rules::same(x[0] - y, out);
    if (rules::negated(x[0], y)) return rules::same(x[1] - y, out);
    return rules::merge_selects(x, out, [](const T& a, const T& b) { return a + b; });
  }
};

// sub: x - 0 = x, 0 - x = -x, x - -y = x + y, where(p, a, 0) - where(p, 0, b) = where(p, a, -b);
// its transpose is the struct's.
template <>
struct Rules<op::sub> : rules::standard<op::sub> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(x[0] - x[1], r);
  }
  template <class T>
  static constexpr Simplified simplify(const T* x, std::int64_t, WeakDType out) {
    if (x[1].is_zero()) return rules::same(x[0], out);
    if (x[0].is_zero()) return rules::same(-x[1], out);
    T y;
    if (rules::negated(x[1], y)) return rules::same(x[0] + y, out);
    return rules::merge_selects(x, out, [](const T& a, const T& b) { return a - b; });
  }
};

// mul: x * 1 = x, x * -1 = -x, x * 0 = 0, c * -z = z * -c, (-a) * (-b) = a * b, y * where(p, ±1,
// ±1) = where(p, ±y, ±y), and constants gathered where exact:
// c1 * (c2 * z) = z * (c1 c2), (z * c1) * (w * c2) = (z * w) * (c1 c2), (z * c) * y = z * (c * y);
// its transpose is the struct's.
template <>
struct Rules<op::mul> : rules::standard<op::mul> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(x[0] * x[1], r);
  }
  template <class T>
  static constexpr Simplified simplify(const T* x, std::int64_t, WeakDType out) {
    for (int k = 0; k < 2; ++k) {
      const T& c = x[k];
      const T& y = x[1 - k];
      if (!c.is_constant()) continue;
      if (c.value() == 1) return rules::same(y, out);
      if (c.value() == -1) return rules::same(-y, out);
      if (c.value() == 0) return rules::constant(0, out, y.graph());
      // Constants gather into one: c * -z = z * -c (exact), and c1 * (c2 * z) = z * (c1 c2)
      // when the product is exact (either factor a power of two): derivatives are full of
      // these, 100 * (2 * z) from a square's jvp, and GCC does not reassociate them.
      T z;
      double c2 = 0;
      if (rules::negated(y, z)) return rules::same(z * -c.value(), out);
      if (rules::scaled(y, z, c2) && (rules::power_of_two(c.value()) || rules::power_of_two(c2)) &&
          rules::normal_in(c.value() * c2, out.dtype))
        return rules::same(z * (c.value() * c2), out);
    }
    // Every mul passes here, so each operand's primitive is looked up once, and the patterns
    // below are tried only where they can match.
    const Prim p0 = rules::prim_of(x[0]), p1 = rules::prim_of(x[1]);
    // (-a) * (-b) = a * b (exact): a cotangent -k meets a derivative -d.
    if (T a, b;
        p0 == Prim::neg && p1 == Prim::neg && rules::negated(x[0], a) && rules::negated(x[1], b))
      return rules::same(a * b, out);
    // y * where(p, c1, c2) with c1, c2 each 1 or -1 = where(p, c1 y, c2 y): a sign is a
    // select, not a product, so selects on one predicate meet and merge (select_n's rules).
    for (int k = 0; k < 2 && (p0 == Prim::select || p1 == Prim::select); ++k) {
      T p, f, t;
      if (!rules::selected(x[k], p, f, t) || !f.is_constant() || !t.is_constant()) continue;
      const double cf = f.value(), ct = t.value();
      if ((cf == 1 || cf == -1) && (ct == 1 || ct == -1) && !x[1 - k].is_constant()) {
        const T& y = x[1 - k];
        return rules::same(xpr::where(p, ct == 1 ? y : -y, cf == 1 ? y : -y), out);
      }
    }
    // (z * c1) * (w * c2) = (z * w) * (c1 c2) when both are powers of two (exact): often
    // c1 c2 = 1 or -1, as in 2 * (0.5 * sigma) from the jvp of 0.5 * sigma * sigma.
    T z, w;
    double c1 = 0, c2 = 0;
    if (rules::scaled(x[0], z, c1) && rules::scaled(x[1], w, c2) && rules::power_of_two(c1) &&
        rules::power_of_two(c2) && rules::normal_in(c1 * c2, out.dtype))
      return rules::same((z * w) * (c1 * c2), out);
    return rules::reuse_scaled(x, out);
  }
};

// div: x / 1 = x, x / -1 = -x, 0 / y = 0; jvp ta / y - tb * (ans / y); transpose (ct / y) the
// struct's.
template <>
struct Rules<op::div> : rules::standard<op::div> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(x[0] / x[1], r);
  }
  template <class T>
  static constexpr Simplified simplify(const T* x, std::int64_t, WeakDType out) {
    if (x[1].is_one()) return rules::same(x[0], out);
    if (x[1].is_constant() && x[1].value() == -1) return rules::same(-x[0], out);
    if (x[0].is_zero()) return rules::constant(0, out, x[1].graph());
    return {};
  }
  // jvp: ta / y - tb * (ans / y). Divisions are the slowest arithmetic, so a reciprocal
  // (ans = 1 / y) uses ans * ans for ans / y, and when both operands have tangents the
  // division is shared: (ta - tb * ans) / y, one division (reverse mode: u = ct / y, then
  // ct_a = u and ct_b = -u * ans) where JAX's formula has two.
  template <class T>
  static constexpr T jvp(const T* x, const T& ans, const T* t, std::int64_t) {
    if (t[1].is_zero()) return t[0] / x[1];
    if (x[0].is_one()) return -(t[1] * (ans * ans));
    if (t[0].is_zero()) return -(t[1] * (ans / x[1]));
    return (t[0] - t[1] * ans) / x[1];
  }
};

namespace rules {
// max / min: x op x = x.
template <class Op>
struct extremum : standard<Op> {
  template <class T>
  static constexpr Simplified simplify(const T* x, std::int64_t, WeakDType out) {
    if (!x[0].is_constant() && x[0].id() == x[1].id()) return same(x[0], out);
    return {};
  }
};
}  // namespace rules

template <>
struct Rules<op::max> : rules::extremum<op::max> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    if (x[0] != x[0] || x[1] != x[1]) return false;
    r = x[0] < x[1] ? x[1] : x[0];
    return true;
  }
};

template <>
struct Rules<op::min> : rules::extremum<op::min> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    if (x[0] != x[0] || x[1] != x[1]) return false;
    r = x[1] < x[0] ? x[1] : x[0];
    return true;
  }
};

// pow: x ** 1 = x.
template <>
struct Rules<op::pow> : rules::standard<op::pow> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(__builtin_pow(x[0], x[1]), r);
  }
  template <class T>
  static constexpr Simplified simplify(const T* x, std::int64_t, WeakDType out) {
    if (x[1].is_one()) return rules::same(x[0], out);
    return {};
  }
};

// rem: folded exactly (GCC folds fmod); `rem(x, 1)` is not `x`, so there is nothing to simplify.
template <>
struct Rules<op::rem> : rules::standard<op::rem> {
  static constexpr bool fold(const double* x, std::int64_t, double& r) {
    XPR_DETAIL_FOLD(__builtin_fmod(x[0], x[1]), r);
  }
};

}  // namespace xpr::ct

#undef XPR_DETAIL_FOLD
