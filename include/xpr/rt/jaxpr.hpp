// SPDX-License-Identifier: MIT
// The jaxpr IR of the runtime tier: variables, literals, equations, jaxprs and closed jaxprs, as
// Autodidax Part 2 defines them, with structural equality and hashing (alpha-equivalence), which
// the jit cache keys on. Printing, parsing and evaluation live in jaxpr_{print,parse,eval}.hpp.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/core/dtype.hpp"
#include "xpr/core/shape.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/aval.hpp"
#include "xpr/rt/params.hpp"
#include "xpr/rt/primitive.hpp"

namespace xpr::rt {

// ---------------------------------------------------------------------------------------------
// Var
// ---------------------------------------------------------------------------------------------

/// A jaxpr variable: an abstract value with an identity. Copies of a `Var` are the same variable
/// (they share one node), so `==` and `std::hash<Var>` are by identity; names (`a`, `b`, ...) are
/// given only when a jaxpr is printed, as JAX does.
class Var {
 public:
  /// A fresh variable of type `aval`.
  explicit Var(ShapedArray aval) : node_(std::make_shared<const Node>(Node{std::move(aval)})) {}

  const ShapedArray& aval() const noexcept { return node_->aval; }
  /// The identity of the variable (stable while any copy lives).
  const void* id() const noexcept { return node_.get(); }

  friend bool operator==(const Var& a, const Var& b) noexcept { return a.node_ == b.node_; }

 private:
  struct Node {
    ShapedArray aval;
  };
  std::shared_ptr<const Node> node_;
};

// ---------------------------------------------------------------------------------------------
// Literal, Atom
// ---------------------------------------------------------------------------------------------

/// A constant known when the jaxpr is built, written inline (`3.0:f64[]`). Literals are concrete
/// and of rank 0; larger constants become constvars of a ClosedJaxpr.
struct Literal {
  Array value;
  const ShapedArray& aval() const noexcept { return detail::aval_of(value); }
};

/// An equation input or a jaxpr output: a variable or a literal.
using Atom = std::variant<Var, Literal>;

/// The abstract value of an atom.
inline const ShapedArray& aval_of(const Atom& a) noexcept {
  return std::visit([](const auto& x) -> const ShapedArray& { return x.aval(); }, a);
}

// ---------------------------------------------------------------------------------------------
// Eqn, Jaxpr, ClosedJaxpr
// ---------------------------------------------------------------------------------------------

/// One equation `outputs = primitive[params] inputs`.
struct Eqn {
  const Primitive* primitive = nullptr;
  std::vector<Atom> inputs;
  Params params;
  std::vector<Var> outputs;
};

/// A jaxpr: `{ lambda constvars ; invars . let eqns in outvars }`. Every variable is defined once:
/// as a constvar, an invar, or an equation output, before it is used.
struct Jaxpr {
  std::vector<Var> constvars;
  std::vector<Var> invars;
  std::vector<Eqn> eqns;
  std::vector<Atom> outvars;

  /// The abstract values of the inputs and outputs (the jaxpr's type).
  XPR_MEMBER Avals in_avals() const;
  XPR_MEMBER Avals out_avals() const;
};

/// A jaxpr with the values of its constvars (`consts[i]` is the value of `jaxpr.constvars[i]`).
/// Declared with `class` to match the forward declaration in params.hpp; the members are public,
/// so it is an aggregate: `ClosedJaxpr{jaxpr, consts}`.
class ClosedJaxpr {
 public:
  Jaxpr jaxpr;
  std::vector<Array> consts;

  Avals in_avals() const { return jaxpr.in_avals(); }
  Avals out_avals() const { return jaxpr.out_avals(); }
};

// ---------------------------------------------------------------------------------------------
// Structural equality and hashing
// ---------------------------------------------------------------------------------------------
// Two jaxprs are equal when they are alpha-equivalent: the same equations in the same order, with
// variables compared by the position at which they are defined (constvars, then invars, then
// equation outputs) rather than by identity. Literals compare by dtype, weak flag, shape and value
// bits; primitives by identity; parameters by name and value (in any order), sub-jaxprs
// structurally; the consts of a ClosedJaxpr by shape, dtype and contents. Floating-point values
// (in literals, consts and params) compare by their bits, so `nan == nan` and `0.0 != -0.0`: a
// cache key must be reflexive and must not merge values that print and compute differently.

bool operator==(const Jaxpr& a, const Jaxpr& b);
bool operator==(const ClosedJaxpr& a, const ClosedJaxpr& b);
std::size_t hash_value(const Jaxpr& j);
std::size_t hash_value(const ClosedJaxpr& j);

/// How deeply sub-jaxprs may nest (a checkpoint inside a checkpoint inside ...). The parser, the
/// printer, the type checker and the evaluator walk nesting by recursion, so a bound keeps a
/// hostile text from exhausting the stack; past it they throw a clear error
/// (docs/limitations.md). Chain length (equations in one jaxpr) has no such limit.
inline constexpr std::size_t max_jaxpr_nesting = 200;

namespace detail {

/// The error of a nesting past max_jaxpr_nesting: a `type_error` that walks re-throw as it is
/// (wrapping it at every level, as the type checker wraps errors, would be quadratic).
struct NestingError : core::type_error {
  using core::type_error::type_error;
};

/// Counts, per thread and per `Tag` (one walk: printing, type checking, evaluating), how many
/// sub-jaxprs are being walked; throws `type_error` past max_jaxpr_nesting.
template <class Tag>
class NestingGuard {
 public:
  explicit NestingGuard(const char* what) {
    if (depth() >= max_jaxpr_nesting)
      throw NestingError(std::string(what) + ": expected sub-jaxprs nested at most " +
                         std::to_string(max_jaxpr_nesting) +
                         " deep (docs/limitations.md), found a deeper one");
    ++depth();
  }
  NestingGuard(const NestingGuard&) = delete;
  NestingGuard& operator=(const NestingGuard&) = delete;
  ~NestingGuard() { --depth(); }
  static std::size_t& depth() noexcept {
    thread_local std::size_t d = 0;
    return d;
  }
};

/// Results of hashing and comparing sub-jaxprs during one outermost hash or comparison, keyed by
/// identity: sub-jaxprs are shared, and a DAG whose shared jaxprs refer to each other twice per
/// level would otherwise be walked once per path (exponential in its depth).
struct StructuralMemo {
  std::unordered_map<const ClosedJaxpr*, std::size_t> hashes;
  std::set<std::pair<const ClosedJaxpr*, const ClosedJaxpr*>> equal;
  std::size_t users = 0;
  static StructuralMemo& get() {
    thread_local StructuralMemo memo;
    return memo;
  }
};
/// Holds the memo for one outermost call; cleared when that call ends.
class MemoScope {
 public:
  MemoScope() : memo_(StructuralMemo::get()) { ++memo_.users; }
  MemoScope(const MemoScope&) = delete;
  MemoScope& operator=(const MemoScope&) = delete;
  XPR_MEMBER ~MemoScope();
  StructuralMemo& operator*() const noexcept { return memo_; }

 private:
  StructuralMemo& memo_;
};

inline std::size_t hash_combine(std::size_t seed, std::size_t v) noexcept {
  return seed ^ (v + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2));
}

/// The bytes of a concrete array, or null for a tracer.
std::string_view array_bytes(const Array& a) noexcept;

/// Concrete arrays by aval and bits; tracers (which a finished jaxpr should not hold) by identity.
bool same_array(const Array& a, const Array& b);

std::size_t hash_array(const Array& a);

bool same_jaxpr_param(const JaxprParam& x, const JaxprParam& y);

std::size_t hash_jaxpr_param(const JaxprParam& x);

bool same_param(const ParamValue& a, const ParamValue& b);

std::size_t hash_axes(std::size_t h, const Axes& axes);

std::size_t hash_param(const ParamValue& v);

/// The parameters sorted by name. Their order carries no meaning (names are unique), and JAX
/// prints them sorted, so a parsed equation may hold them in another order than a traced one.
std::vector<const Params::value_type*> sorted_params(const Params& p);

/// Parameters are equal when they have the same names with equal values.
bool same_params(const Params& a, const Params& b);

std::size_t hash_params(const Params& p);

/// Numbers variables by their position of definition, for alpha-equivalence.
class VarNumbering {
 public:
  /// Defines `v`; returns false if it was already defined (a malformed jaxpr).
  bool define(const Var& v) { return index_.emplace(v.id(), index_.size()).second; }
  /// The position of `v`, or -1 if it is not defined (a free variable).
  std::int64_t operator[](const Var& v) const {
    auto it = index_.find(v.id());
    return it == index_.end() ? -1 : static_cast<std::int64_t>(it->second);
  }

 private:
  std::unordered_map<const void*, std::size_t> index_;
};

bool same_atom(const Atom& a, const VarNumbering& na, const Atom& b, const VarNumbering& nb);

std::size_t hash_atom(std::size_t h, const Atom& a, const VarNumbering& n);

bool define_same(const std::vector<Var>& a, VarNumbering& na, const std::vector<Var>& b,
                 VarNumbering& nb);

std::size_t define_hash(std::size_t h, const std::vector<Var>& vs, VarNumbering& n);

}  // namespace detail

bool operator==(const Jaxpr& a, const Jaxpr& b);

bool operator==(const ClosedJaxpr& a, const ClosedJaxpr& b);

/// A hash consistent with `==`: alpha-equivalent jaxprs hash alike.
std::size_t hash_value(const Jaxpr& j);

std::size_t hash_value(const ClosedJaxpr& j);

}  // namespace xpr::rt

template <>
struct std::hash<xpr::rt::Var> {
  std::size_t operator()(const xpr::rt::Var& v) const noexcept {
    return std::hash<const void*>{}(v.id());
  }
};

template <>
struct std::hash<xpr::rt::Jaxpr> {
  std::size_t operator()(const xpr::rt::Jaxpr& j) const { return xpr::rt::hash_value(j); }
};

template <>
struct std::hash<xpr::rt::ClosedJaxpr> {
  std::size_t operator()(const xpr::rt::ClosedJaxpr& j) const { return xpr::rt::hash_value(j); }
};

namespace xpr {
using rt::Atom;
using rt::ClosedJaxpr;
using rt::Eqn;
using rt::Jaxpr;
using rt::Literal;
using rt::Var;
}  // namespace xpr

#if XPR_DEFINITIONS

namespace xpr::rt {

XPR_FUNC Avals Jaxpr::in_avals() const {
  Avals out;
  out.reserve(invars.size());
  for (const Var& v : invars) out.push_back(v.aval());
  return out;
}

XPR_FUNC Avals Jaxpr::out_avals() const {
  Avals out;
  out.reserve(outvars.size());
  for (const Atom& a : outvars) out.push_back(aval_of(a));
  return out;
}

}  // namespace xpr::rt

namespace xpr::rt::detail {

XPR_FUNC MemoScope::~MemoScope() {
  if (--memo_.users == 0) {
    memo_.hashes.clear();
    memo_.equal.clear();
  }
}

XPR_FUNC std::string_view array_bytes(const Array& a) noexcept {
  const ConcreteArray* c = a.concrete();
  if (!c) return {};
  return {reinterpret_cast<const char*>(c->bytes()), c->nbytes()};
}

XPR_FUNC bool same_array(const Array& a, const Array& b) {
  if (!(detail::aval_of(a) == detail::aval_of(b))) return false;
  if (!a.is_concrete() || !b.is_concrete()) return a.impl() == b.impl();
  return array_bytes(a) == array_bytes(b);
}

XPR_FUNC std::size_t hash_array(const Array& a) {
  std::size_t h = std::hash<ShapedArray>{}(detail::aval_of(a));
  if (!a.is_concrete()) return hash_combine(h, std::hash<const void*>{}(a.impl().get()));
  return hash_combine(h, std::hash<std::string_view>{}(array_bytes(a)));
}

XPR_FUNC bool same_jaxpr_param(const JaxprParam& x, const JaxprParam& y) {
  if (x == y) return true;
  if (!x || !y) return false;
  MemoScope memo;
  auto key = std::make_pair(x.get(), y.get());
  if ((*memo).equal.count(key)) return true;
  NestingGuard<struct CompareTag> nest("comparing jaxprs");
  if (!(*x == *y)) return false;
  (*memo).equal.insert(key);
  return true;
}

XPR_FUNC std::size_t hash_jaxpr_param(const JaxprParam& x) {
  if (!x) return 0;
  MemoScope memo;
  auto it = (*memo).hashes.find(x.get());
  if (it != (*memo).hashes.end()) return it->second;
  NestingGuard<struct HashTag> nest("hashing a jaxpr");
  std::size_t h = hash_value(*x);
  (*memo).hashes.emplace(x.get(), h);
  return h;
}

XPR_FUNC bool same_param(const ParamValue& a, const ParamValue& b) {
  if (a.index() != b.index()) return false;
  return std::visit(
      [&](const auto& x) -> bool {
        using T = std::decay_t<decltype(x)>;
        const T& y = std::get<T>(b);
        if constexpr (std::is_same_v<T, double>) {
          return std::bit_cast<std::uint64_t>(x) == std::bit_cast<std::uint64_t>(y);
        } else if constexpr (std::is_same_v<T, JaxprParam>) {
          return same_jaxpr_param(x, y);
        } else if constexpr (std::is_same_v<T, JaxprTuple>) {
          if (x.size() != y.size()) return false;
          for (std::size_t i = 0; i < x.size(); ++i)
            if (!same_jaxpr_param(x[i], y[i])) return false;
          return true;
        } else {
          return x == y;
        }
      },
      a);
}

XPR_FUNC std::size_t hash_axes(std::size_t h, const Axes& axes) {
  h = hash_combine(h, axes.size());
  for (std::int64_t d : axes) h = hash_combine(h, std::hash<std::int64_t>{}(d));
  return h;
}

XPR_FUNC std::size_t hash_param(const ParamValue& v) {
  std::size_t h = v.index();
  return std::visit(
      [&](const auto& x) -> std::size_t {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, std::int64_t>) {
          return hash_combine(h, std::hash<std::int64_t>{}(static_cast<std::int64_t>(x)));
        } else if constexpr (std::is_same_v<T, double>) {
          return hash_combine(h, std::hash<std::uint64_t>{}(std::bit_cast<std::uint64_t>(x)));
        } else if constexpr (std::is_same_v<T, core::DType>) {
          return hash_combine(h, static_cast<std::size_t>(x));
        } else if constexpr (std::is_same_v<T, core::Shape>) {
          return hash_combine(h, std::hash<core::Shape>{}(x));
        } else if constexpr (std::is_same_v<T, Axes>) {
          return hash_axes(h, x);
        } else if constexpr (std::is_same_v<T, PaddingConfig>) {
          h = hash_combine(h, x.dims.size());
          for (const auto& d : x.dims)
            for (std::int64_t e : d) h = hash_combine(h, std::hash<std::int64_t>{}(e));
          return h;
        } else if constexpr (std::is_same_v<T, DotDimensionNumbers>) {
          h = hash_axes(h, x.lhs_contracting);
          h = hash_axes(h, x.rhs_contracting);
          h = hash_axes(h, x.lhs_batch);
          return hash_axes(h, x.rhs_batch);
        } else if constexpr (std::is_same_v<T, JaxprParam>) {
          return hash_combine(h, hash_jaxpr_param(x));
        } else if constexpr (std::is_same_v<T, JaxprTuple>) {
          h = hash_combine(h, x.size());
          for (const JaxprParam& j : x) h = hash_combine(h, hash_jaxpr_param(j));
          return h;
        } else if constexpr (std::is_same_v<T, Dim>) {
          return hash_combine(h, std::hash<std::string_view>{}(x.name));
        } else if constexpr (std::is_same_v<T, None>) {
          return h;
        } else if constexpr (std::is_same_v<T, GatherDimensionNumbers>) {
          for (const Axes* a : {&x.offset_dims, &x.collapsed_slice_dims, &x.start_index_map,
                                &x.operand_batching_dims, &x.start_indices_batching_dims})
            h = hash_axes(h, *a);
          return h;
        } else if constexpr (std::is_same_v<T, ScatterDimensionNumbers>) {
          for (const Axes* a :
               {&x.update_window_dims, &x.inserted_window_dims, &x.scatter_dims_to_operand_dims,
                &x.operand_batching_dims, &x.scatter_indices_batching_dims})
            h = hash_axes(h, *a);
          return h;
        } else if constexpr (std::is_same_v<T, GatherScatterMode>) {
          return hash_combine(h, static_cast<std::size_t>(x));
        } else if constexpr (std::is_same_v<T, BoolTuple>) {
          h = hash_combine(h, x.size());
          for (bool b : x) h = hash_combine(h, b ? 1u : 2u);
          return h;
        } else {
          static_assert(sizeof(T) == 0, "hash_param: a ParamValue alternative has no hash");
          return h;
        }
      },
      v);
}

XPR_FUNC std::vector<const Params::value_type*> sorted_params(const Params& p) {
  std::vector<const Params::value_type*> out;
  out.reserve(p.size());
  for (const auto& item : p) out.push_back(&item);
  std::sort(out.begin(), out.end(),
            [](const auto* x, const auto* y) { return x->first < y->first; });
  return out;
}

XPR_FUNC bool same_params(const Params& a, const Params& b) {
  if (a.size() != b.size()) return false;
  auto sa = sorted_params(a), sb = sorted_params(b);
  for (std::size_t i = 0; i < sa.size(); ++i)
    if (sa[i]->first != sb[i]->first || !same_param(sa[i]->second, sb[i]->second)) return false;
  return true;
}

XPR_FUNC std::size_t hash_params(const Params& p) {
  std::size_t h = p.size();
  for (const auto* item : sorted_params(p)) {
    h = hash_combine(h, std::hash<std::string_view>{}(item->first));
    h = hash_combine(h, hash_param(item->second));
  }
  return h;
}

XPR_FUNC bool same_atom(const Atom& a, const VarNumbering& na, const Atom& b,
                        const VarNumbering& nb) {
  if (a.index() != b.index()) return false;
  if (const Var* va = std::get_if<Var>(&a)) {
    const Var& vb = std::get<Var>(b);
    std::int64_t ia = na[*va], ib = nb[vb];
    if (ia < 0 || ib < 0) return *va == vb && va->aval() == vb.aval();  // free: by identity
    return ia == ib;
  }
  return same_array(std::get<Literal>(a).value, std::get<Literal>(b).value);
}

XPR_FUNC std::size_t hash_atom(std::size_t h, const Atom& a, const VarNumbering& n) {
  if (const Var* v = std::get_if<Var>(&a)) {
    std::int64_t i = n[*v];
    return hash_combine(hash_combine(h, 1),
                        i < 0 ? std::hash<const void*>{}(v->id()) : static_cast<std::size_t>(i));
  }
  return hash_combine(hash_combine(h, 2), hash_array(std::get<Literal>(a).value));
}

XPR_FUNC bool define_same(const std::vector<Var>& a, VarNumbering& na, const std::vector<Var>& b,
                          VarNumbering& nb) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!(a[i].aval() == b[i].aval())) return false;
    na.define(a[i]);
    nb.define(b[i]);
  }
  return true;
}

XPR_FUNC std::size_t define_hash(std::size_t h, const std::vector<Var>& vs, VarNumbering& n) {
  h = hash_combine(h, vs.size());
  for (const Var& v : vs) {
    n.define(v);
    h = hash_combine(h, std::hash<ShapedArray>{}(v.aval()));
  }
  return h;
}

}  // namespace xpr::rt::detail

namespace xpr::rt {

XPR_FUNC bool operator==(const Jaxpr& a, const Jaxpr& b) {
  if (a.eqns.size() != b.eqns.size() || a.outvars.size() != b.outvars.size()) return false;
  detail::VarNumbering na, nb;
  if (!detail::define_same(a.constvars, na, b.constvars, nb)) return false;
  if (!detail::define_same(a.invars, na, b.invars, nb)) return false;
  for (std::size_t e = 0; e < a.eqns.size(); ++e) {
    const Eqn& x = a.eqns[e];
    const Eqn& y = b.eqns[e];
    if (x.primitive != y.primitive || x.inputs.size() != y.inputs.size()) return false;
    for (std::size_t i = 0; i < x.inputs.size(); ++i)
      if (!detail::same_atom(x.inputs[i], na, y.inputs[i], nb)) return false;
    if (!detail::same_params(x.params, y.params)) return false;
    if (!detail::define_same(x.outputs, na, y.outputs, nb)) return false;
  }
  for (std::size_t i = 0; i < a.outvars.size(); ++i)
    if (!detail::same_atom(a.outvars[i], na, b.outvars[i], nb)) return false;
  return true;
}

XPR_FUNC bool operator==(const ClosedJaxpr& a, const ClosedJaxpr& b) {
  if (a.consts.size() != b.consts.size()) return false;
  for (std::size_t i = 0; i < a.consts.size(); ++i)
    if (!detail::same_array(a.consts[i], b.consts[i])) return false;
  return a.jaxpr == b.jaxpr;
}

XPR_FUNC std::size_t hash_value(const Jaxpr& j) {
  detail::VarNumbering n;
  std::size_t h = detail::define_hash(0, j.constvars, n);
  h = detail::define_hash(h, j.invars, n);
  h = detail::hash_combine(h, j.eqns.size());
  for (const Eqn& e : j.eqns) {
    h = detail::hash_combine(h, std::hash<const void*>{}(e.primitive));
    h = detail::hash_combine(h, e.inputs.size());
    for (const Atom& a : e.inputs) h = detail::hash_atom(h, a, n);
    h = detail::hash_combine(h, detail::hash_params(e.params));
    h = detail::define_hash(h, e.outputs, n);
  }
  h = detail::hash_combine(h, j.outvars.size());
  for (const Atom& a : j.outvars) h = detail::hash_atom(h, a, n);
  return h;
}

XPR_FUNC std::size_t hash_value(const ClosedJaxpr& j) {
  std::size_t h = hash_value(j.jaxpr);
  for (const Array& c : j.consts) h = detail::hash_combine(h, detail::hash_array(c));
  return h;
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
