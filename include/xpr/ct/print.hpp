// SPDX-License-Identifier: MIT
// A frozen program as text in JAX's jaxpr syntax, computed at compile time (a `FixedString`
// usable in static_assert) and printable at run time:
//   { lambda ; a:f64[] b:f64[]. let
//       c:f64[] = sin a
//       d:f64[] = mul c b
//     in (d,) }
#pragma once

#include <cstddef>
#include <cstdint>

#include "xpr/core/dtype.hpp"
#include "xpr/ct/detail/format.hpp"
#include "xpr/ct/graph.hpp"

namespace xpr::ct {

namespace detail {
/// JAX's variable names: a..z, then ba, bb, ...
constexpr void put_var_name(TextWriter& w, int n) {
  char s[8] = {};
  int len = 0;
  do {
    s[len++] = static_cast<char>('a' + n % 26);
    n /= 26;
  } while (n);
  while (len) w.put(s[--len]);
}

constexpr void put_type(TextWriter& w, DType t) {
  w.put(core::short_name(t));
  w.put("[]");
}

template <class P>
constexpr void print_jaxpr(const P& p, TextWriter& w) {
  int names[P::num_eqns > 0 ? P::num_eqns : 1] = {};
  int next = 0;
  for (std::size_t i = 0; i < P::num_eqns; ++i)
    names[i] = p.eqns[i].prim == Prim::lit ? -1 : next++;
  auto atom = [&](int i) {
    const Eqn& e = p.eqns[i];
    if (e.prim != Prim::lit) return put_var_name(w, names[i]);
    if (e.dtype == DType::bool_)
      w.put(e.value() != 0 ? "True" : "False");
    else
      put_float(w, e.value(), e.dtype == DType::float32);
    w.put(':');
    put_type(w, e.dtype);
  };
  auto binder = [&](std::size_t i) {
    put_var_name(w, names[i]);
    w.put(':');
    put_type(w, p.eqns[i].dtype);
  };
  w.put("{ lambda ; ");
  for (std::size_t i = 0; i < P::num_ins; ++i) {
    if (i) w.put(' ');
    binder(i);
  }
  w.put(". let");
  bool any = false;
  for (std::size_t i = P::num_ins; i < P::num_eqns; ++i) {
    const Eqn& e = p.eqns[i];
    if (e.prim == Prim::lit) continue;
    any = true;
    w.put("\n    ");
    binder(i);
    w.put(" = ");
    w.put(prim_name(e.prim));
    if (e.prim == Prim::integer_pow) {
      w.put("[y=");
      w.put_int(static_cast<std::int64_t>(e.param));
      w.put(']');
    }
    for (int k = 0; k < arity(e.prim); ++k) {
      w.put(' ');
      atom(e.in[k]);
    }
  }
  w.put(any ? "\n  in (" : "  in (");
  for (std::size_t k = 0; k < P::num_outs; ++k) {
    if (k) w.put(", ");
    atom(p.outs[k]);
  }
  w.put(P::num_outs == 1 ? ",) }" : ") }");
}

template <const auto& P>
inline constexpr std::size_t text_size_v = [] {
  TextWriter w;
  print_jaxpr(P, w);
  return w.size;
}();
}  // namespace detail

/// The text of the frozen program `P`, in JAX's jaxpr syntax.
template <const auto& P>
inline constexpr FixedString<detail::text_size_v<P>> jaxpr_text_v = [] {
  FixedString<detail::text_size_v<P>> s;
  detail::TextWriter w{s.data, 0};
  detail::print_jaxpr(P, w);
  return s;
}();

}  // namespace xpr::ct
