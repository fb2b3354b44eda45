// SPDX-License-Identifier: MIT
// Primitives: the operations that interpreters give meaning to. A primitive is an object that
// carries all of its rules (JAX attaches them to the Primitive instance too); the core that binds
// primitives never names one. See docs/primitives.md for how to add one.
#pragma once

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

/// A primitive operation with its rules. Each rule slot is a virtual function; a slot a primitive
/// does not fill throws JAX's message ("Differentiation rule for 'foo' not implemented"), so a
/// user-defined primitive needs only the rules the transformations it meets use.
class Primitive {
 public:
  explicit Primitive(std::string name, bool multiple_results = false)
      : name_(std::move(name)), multiple_results_(multiple_results) {}
  Primitive(const Primitive&) = delete;
  Primitive& operator=(const Primitive&) = delete;
  virtual ~Primitive() = default;

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

 protected:
  core::not_implemented_error not_implemented(std::string_view rule) const {
    return core::not_implemented_error(std::string(rule) + " for '" + name_ + "' not implemented");
  }

 private:
  std::string name_;
  bool multiple_results_;
};

}  // namespace xpr::rt
