// SPDX-License-Identifier: MIT
// Primitives: the operations that interpreters give meaning to. A primitive is an object that
// carries all of its rules (JAX attaches them to the Primitive instance too); the core that binds
// primitives never names one. See docs/primitives.md for how to add one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/core/error.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/aval.hpp"
#include "xpr/rt/params.hpp"
#include "xpr/rt/zeros.hpp"

namespace xpr::rt {

using Arrays = std::vector<Array>;
using Avals = std::vector<ShapedArray>;

/// Where a batched value's batch axis is; empty for a value that is not batched (`not_mapped`).
using BatchDim = std::optional<std::int64_t>;
using BatchDims = std::vector<BatchDim>;

/// A tangent or cotangent that may be a symbolic zero (JAX's `ad.Zero`): empty when it is known to
/// be zero, so no multiplication by zero is ever staged and no zero array becomes a residual. Its
/// type is always recoverable from the primal it belongs to.
using Tangent = std::optional<Array>;
using Tangents = std::vector<Tangent>;
using Cotangent = std::optional<Array>;
using Cotangents = std::vector<Cotangent>;

/// An operand of a linear function that transposition solves for (JAX's `UndefinedPrimal`): only
/// its type is known. Transpose rules receive each operand either as a known `Array` (a
/// non-linear operand such as the `y` of `mul(t, y)`) or as an `UndefinedPrimal`.
struct UndefinedPrimal {
  ShapedArray aval;
};
using LinearArg = std::variant<Array, UndefinedPrimal>;

inline bool is_undefined_primal(const LinearArg& x) noexcept {
  return std::holds_alternative<UndefinedPrimal>(x);
}
inline const ShapedArray& aval_of(const LinearArg& x) {
  if (const auto* u = std::get_if<UndefinedPrimal>(&x)) return u->aval;
  return detail::aval_of(std::get<Array>(x));
}

/// A primitive's name as jaxprs print it. It reads as a `std::string_view` and joins strings
/// with `+` as a `std::string` would, so messages are written as before `name()` stopped owning
/// its text (a library primitive's name is a literal, which keeps the primitive
/// constant-initialized; see `Primitive`).
struct PrimitiveName : std::string_view {
  using std::string_view::string_view;
  constexpr PrimitiveName(std::string_view s) noexcept : std::string_view(s) {}  // NOLINT
  operator std::string() const { return std::string(data(), size()); }           // NOLINT
  std::string str() const { return std::string(data(), size()); }

  friend std::string operator+(const std::string& a, PrimitiveName b) {
    std::string r = a;
    r.append(b.data(), b.size());
    return r;
  }
  friend std::string operator+(std::string&& a, PrimitiveName b) {
    a.append(b.data(), b.size());
    return std::move(a);
  }
  friend std::string operator+(const char* a, PrimitiveName b) { return std::string(a) + b; }
  friend std::string operator+(char a, PrimitiveName b) { return std::string(1, a) + b; }
  friend std::string operator+(PrimitiveName a, const std::string& b) { return a.str() + b; }
  friend std::string operator+(PrimitiveName a, const char* b) { return a.str() + b; }
  friend std::string operator+(PrimitiveName a, char b) { return a.str() + b; }
  friend std::string operator+(PrimitiveName a, PrimitiveName b) { return a.str() + b; }
};

/// A primitive operation with its rules. Each rule slot is a virtual function; a slot a primitive
/// does not fill throws JAX's message ("Differentiation rule for 'foo' not implemented"), so a
/// user-defined primitive needs only the rules the transformations it meets use.
///
/// What a translation unit pays for: the library's primitives (`sin_p`, `add_p`...) are
/// constant-initialized `inline` objects (constexpr constructor, no registration, trivial
/// destructor), so a translation unit that never names one emits neither its vtable nor any of
/// its rules and kernels. Before, each constructor registered its object by name at dynamic
/// initialization, which made every translation unit reference every vtable: g++ emitted and
/// optimized every rule of every primitive for every dtype (29 s and 1.2 GB at -O2 for an empty
/// `main` that includes <xpr/xpr.hpp>). The jaxpr parser finds library primitives in a table
/// built only where it is used (`find_primitive`, xpr/rt/primitive_table.hpp).
///
/// A user-defined primitive whose constructor is not `constexpr` (as in
/// examples/custom_primitive.cpp) registers itself by name when it is constructed, so
/// `parse_jaxpr` reads it; one constructed at compile time is registered with
/// `register_primitive`. Registered primitives must outlive their registration (a namespace-scope
/// or function-local static object, as JAX's primitives are module globals); a registered name
/// shadows a library primitive of the same name.
class Primitive;

namespace detail {
/// User-defined primitives by name, for the jaxpr parser. Built lazily (a function-local static),
/// so the order in which translation units initialize their primitive objects never matters.
struct PrimitiveRegistry {
  std::mutex mutex;
  std::map<std::string, const Primitive*, std::less<>> by_name;
};
inline PrimitiveRegistry& primitive_registry() {
  static PrimitiveRegistry registry;
  return registry;
}
void register_primitive_name(std::string_view name, const Primitive* p);
}  // namespace detail

class Primitive {
 public:
  /// `name` as jaxprs print it; a string literal (a library primitive) or a string that outlives
  /// the primitive. Registered by name when constructed at run time (see the class comment).
  constexpr explicit Primitive(std::string_view name, bool multiple_results = false)
      : name_(name), multiple_results_(multiple_results) {
    if (!std::is_constant_evaluated()) detail::register_primitive_name(name_, this);
  }
  /// From a string literal: its length is known without `strlen`, which g++ 12 does not
  /// evaluate for constant initialization unless asked (`constinit`).
  template <std::size_t N>
  constexpr explicit Primitive(const char (&name)[N], bool multiple_results = false)
      : Primitive(std::string_view(name, N - 1), multiple_results) {}
  Primitive(const Primitive&) = delete;
  Primitive& operator=(const Primitive&) = delete;

  PrimitiveName name() const noexcept { return name_; }
  bool multiple_results() const noexcept { return multiple_results_; }

  /// impl: evaluate on concrete arrays (the eager interpreter's rule).
  virtual Arrays impl(std::span<const Array> args, const Params& params) const {
    (void)args, (void)params;
    throw not_implemented("Evaluation rule");
  }
  /// abstract_eval: output shapes and dtypes from input shapes and dtypes; throws `shape_error`,
  /// `dtype_error` or `type_error` for operands the primitive does not accept.
  virtual Avals abstract_eval(std::span<const ShapedArray> args, const Params& params) const {
    (void)args, (void)params;
    throw not_implemented("Abstract evaluation rule");
  }
  /// jvp: (primals, tangents) -> (primal outputs, tangent outputs), written with xpr's functions
  /// so that it binds primitives at the levels below the JVP interpreter.
  virtual std::pair<Arrays, Arrays> jvp(std::span<const Array> primals,
                                        std::span<const Array> tangents,
                                        const Params& params) const {
    (void)primals, (void)tangents, (void)params;
    throw not_implemented("Differentiation rule");
  }
  /// jvp with symbolic zeros: `tangents[i]` is empty where that tangent is known to be zero, and
  /// returned tangents may be empty likewise. The JVP interpreter calls this slot; when every
  /// tangent is zero it does not call it at all (the outputs' tangents are zero). The default
  /// instantiates the zeros and calls `jvp`; primitives of several operands override it so that a
  /// constant operand costs nothing in a linearized program (`mul(tx, y)`, not
  /// `add(mul(tx, y), mul(x, 0.0))`).
  XPR_MEMBER virtual std::pair<Arrays, Tangents> jvp_symbolic(std::span<const Array> primals,
                                                              std::span<const Tangent> tangents,
                                                              const Params& params) const;
  /// transpose: for a primitive that is linear in its `UndefinedPrimal` operands, the cotangents
  /// of those operands given the cotangents `cts` of its outputs (Autodidax Part 4). Returns one
  /// entry per operand: empty for a known (non-linear) operand or a zero cotangent. The backward
  /// pass skips an equation whose output cotangents are all zero, so for a primitive of one
  /// result `cts[0]` is never empty. Cotangents have their operand's shape and dtype.
  virtual Cotangents transpose(std::span<const Cotangent> cts, std::span<const LinearArg> args,
                               const Params& params) const {
    (void)cts, (void)args, (void)params;
    throw not_implemented("Transpose rule");
  }
  /// batch: (values, their batch dims, the batch size) -> (outputs, their batch dims).
  virtual std::pair<Arrays, BatchDims> batch(std::span<const Array> args,
                                             std::span<const BatchDim> dims, std::int64_t axis_size,
                                             const Params& params) const {
    (void)args, (void)dims, (void)axis_size, (void)params;
    throw not_implemented("Batching rule");
  }

 protected:
  // Not virtual and trivial, so a library primitive needs no destructor registered at exit (which
  // would reference its vtable in every translation unit); primitives are not deleted through a
  // `Primitive*`.
  ~Primitive() = default;

  core::not_implemented_error not_implemented(std::string_view rule) const {
    return core::not_implemented_error(std::string(rule) + " for '" + name_ + "' not implemented");
  }

 private:
  PrimitiveName name_;
  bool multiple_results_;
};

/// Registers `p` under its name for `parse_jaxpr` and `find_primitive`: needed only for a
/// user-defined primitive constructed at compile time (a `constexpr` constructor); one constructed
/// at run time registers itself. `p` must outlive its use by the parser.
inline void register_primitive(const Primitive& p) {
  detail::register_primitive_name(p.name(), &p);
}

namespace detail {
/// The registered (user-defined) primitive named `name`, or null.
const Primitive* find_registered_primitive(std::string_view name);
}  // namespace detail

}  // namespace xpr::rt

#if XPR_DEFINITIONS

namespace xpr::rt::detail {

XPR_FUNC void register_primitive_name(std::string_view name, const Primitive* p) {
  auto& r = primitive_registry();
  std::lock_guard lock(r.mutex);
  r.by_name.insert_or_assign(std::string(name), p);  // a later definition shadows, like a later def
}

}  // namespace xpr::rt::detail

namespace xpr::rt {

XPR_FUNC std::pair<Arrays, Tangents> Primitive::jvp_symbolic(std::span<const Array> primals,
                                                             std::span<const Tangent> tangents,
                                                             const Params& params) const {
  Arrays instantiated;
  instantiated.reserve(tangents.size());
  for (std::size_t i = 0; i < tangents.size(); ++i)
    instantiated.push_back(tangents[i] ? *tangents[i]
                                       : zeros_like_aval(detail::aval_of(primals[i])));
  auto [out, tangents_out] = jvp(primals, instantiated, params);
  return {std::move(out), Tangents(tangents_out.begin(), tangents_out.end())};
}

}  // namespace xpr::rt

namespace xpr::rt::detail {

XPR_FUNC const Primitive* find_registered_primitive(std::string_view name) {
  auto& r = primitive_registry();
  std::lock_guard lock(r.mutex);
  auto it = r.by_name.find(name);
  return it == r.by_name.end() ? nullptr : it->second;
}

}  // namespace xpr::rt::detail
#endif  // XPR_DEFINITIONS
