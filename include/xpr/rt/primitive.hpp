// SPDX-License-Identifier: MIT
// Primitives: the operations that interpreters give meaning to. A primitive is an object that
// carries all of its rules (JAX attaches them to the Primitive instance too); the core that binds
// primitives never names one. See docs/primitives.md for how to add one.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "xpr/core/error.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/aval.hpp"
#include "xpr/rt/params.hpp"

namespace xpr::rt {

using Arrays = std::vector<Array>;
using Avals = std::vector<ShapedArray>;

/// Where a batched value's batch axis is; empty for a value that is not batched (`not_mapped`).
using BatchDim = std::optional<std::int64_t>;
using BatchDims = std::vector<BatchDim>;

/// A primitive operation with its rules. Each rule slot is a virtual function; a slot a primitive
/// does not fill throws JAX's message ("Differentiation rule for 'foo' not implemented"), so a
/// user-defined primitive needs only the rules the transformations it meets use.
class Primitive;

namespace detail {
/// Every live primitive by name, for the jaxpr parser. Built lazily (a function-local static), so
/// the order in which translation units initialize their `inline` primitive objects never matters.
struct PrimitiveRegistry {
  std::mutex mutex;
  std::map<std::string, const Primitive*, std::less<>> by_name;
};
inline PrimitiveRegistry& primitive_registry() {
  static PrimitiveRegistry registry;
  return registry;
}
}  // namespace detail

class Primitive {
 public:
  explicit Primitive(std::string name, bool multiple_results = false)
      : name_(std::move(name)), multiple_results_(multiple_results) {
    auto& r = detail::primitive_registry();
    std::lock_guard lock(r.mutex);
    r.by_name[name_] = this;  // a user primitive of the same name shadows, like a later def
  }
  Primitive(const Primitive&) = delete;
  Primitive& operator=(const Primitive&) = delete;
  virtual ~Primitive() {
    auto& r = detail::primitive_registry();
    std::lock_guard lock(r.mutex);
    auto it = r.by_name.find(name_);
    if (it != r.by_name.end() && it->second == this) r.by_name.erase(it);
  }

  const std::string& name() const noexcept { return name_; }
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
  /// batch: (values, their batch dims, the batch size) -> (outputs, their batch dims).
  virtual std::pair<Arrays, BatchDims> batch(std::span<const Array> args,
                                             std::span<const BatchDim> dims,
                                             std::int64_t axis_size, const Params& params) const {
    (void)args, (void)dims, (void)axis_size, (void)params;
    throw not_implemented("Batching rule");
  }

 protected:
  core::not_implemented_error not_implemented(std::string_view rule) const {
    return core::not_implemented_error(std::string(rule) + " for '" + name_ + "' not implemented");
  }

 private:
  std::string name_;
  bool multiple_results_;
};

/// The primitive named `name` (as jaxprs print it), or null if there is none.
inline const Primitive* find_primitive(std::string_view name) {
  auto& r = detail::primitive_registry();
  std::lock_guard lock(r.mutex);
  auto it = r.by_name.find(name);
  return it == r.by_name.end() ? nullptr : it->second;
}

}  // namespace xpr::rt
