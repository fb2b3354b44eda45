// SPDX-License-Identifier: MIT
// Equation parameters (`axes=(0,)`, `new_dtype=f32`, ...): a typed variant per value, an ordered
// name -> value list per primitive application. Comparable and hashable, because jaxprs are
// compared and hashed structurally (the jit cache keys on them).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/core/dtype.hpp"
#include "xpr/core/error.hpp"
#include "xpr/core/shape.hpp"

namespace xpr::rt {

class ClosedJaxpr;  // defined with the jaxpr IR; parameters of higher-order primitives hold one

/// A tuple of axis numbers (`axes=(0, 1)`), also used for permutations and index tuples.
using Axes = std::vector<std::int64_t>;

/// `pad`'s per-dimension (low, high, interior) padding; low and high may be negative.
struct PaddingConfig {
  std::vector<std::array<std::int64_t, 3>> dims;
  friend bool operator==(const PaddingConfig&, const PaddingConfig&) = default;
};

/// `dot_general`'s ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)).
struct DotDimensionNumbers {
  Axes lhs_contracting, rhs_contracting, lhs_batch, rhs_batch;
  friend bool operator==(const DotDimensionNumbers&, const DotDimensionNumbers&) = default;
};

/// `gather`'s dimension numbers (JAX's `lax.GatherDimensionNumbers`; the index vector is always
/// the last dimension of the indices).
struct GatherDimensionNumbers {
  Axes offset_dims, collapsed_slice_dims, start_index_map, operand_batching_dims,
      start_indices_batching_dims;
  friend bool operator==(const GatherDimensionNumbers&, const GatherDimensionNumbers&) = default;
};

/// The scatters' dimension numbers (JAX's `lax.ScatterDimensionNumbers`).
struct ScatterDimensionNumbers {
  Axes update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims,
      operand_batching_dims, scatter_indices_batching_dims;
  friend bool operator==(const ScatterDimensionNumbers&, const ScatterDimensionNumbers&) = default;
};

/// How gather and the scatters treat out-of-bounds indices (JAX's `lax.GatherScatterMode`):
/// `clip` clamps each window into the operand; `fill_or_drop` makes a gathered window that is
/// not wholly inside the fill value and drops such a scattered window; `promise_in_bounds`
/// promises in-bounds indices (xpr then clamps, for gather and scatters alike, so a gradient is
/// always the transpose of its forward map).
enum class GatherScatterMode : std::uint8_t { clip, fill_or_drop, promise_in_bounds };

/// Sub-jaxprs are shared, immutable and compared by structure.
using JaxprParam = std::shared_ptr<const ClosedJaxpr>;

/// A tuple of sub-jaxprs, such as `cond`'s `branches=(...)`.
using JaxprTuple = std::vector<JaxprParam>;

/// A tuple of flags, such as `scan`'s `linear=(False, True)`.
using BoolTuple = std::vector<bool>;

/// A size known only at run time, named by a dimension variable (`n`) as JAX's shape
/// polymorphism names them; it is bound to a number when a compiled function is called.
struct Dim {
  std::string name;
  friend bool operator==(const Dim&, const Dim&) = default;
};

/// Python's `None`: a parameter that is deliberately absent (`strides=None`).
struct None {
  friend bool operator==(None, None) = default;
};

/// One parameter value. (jaxpr.hpp compares and hashes every alternative, jaxpr_print.hpp prints
/// it and jaxpr_parse.hpp reads it: an alternative added here is added there too.)
using ParamValue =
    std::variant<bool, std::int64_t, double, core::DType, core::Shape, Axes, PaddingConfig,
                 DotDimensionNumbers, JaxprParam, JaxprTuple, Dim, None, GatherDimensionNumbers,
                 ScatterDimensionNumbers, GatherScatterMode, BoolTuple>;

/// The parameters of one primitive application, in the order the primitive declares them.
class Params {
 public:
  using value_type = std::pair<std::string, ParamValue>;

  Params() = default;
  Params(std::initializer_list<value_type> items) : items_(items) {}

  /// The value of `name` as a `T`; throws `type_error` if it is missing or of another type.
  template <class T>
  const T& get(std::string_view name) const {
    const ParamValue* v = find(name);
    if (!v) throw core::type_error("missing parameter '" + std::string(name) + "'");
    const T* t = std::get_if<T>(v);
    if (!t)
      throw core::type_error("parameter '" + std::string(name) +
                             "' has another type than the primitive expects");
    return *t;
  }
  XPR_MEMBER const ParamValue* find(std::string_view name) const noexcept;
  bool contains(std::string_view name) const noexcept { return find(name) != nullptr; }
  XPR_MEMBER void set(std::string name, ParamValue value);

  auto begin() const noexcept { return items_.begin(); }
  auto end() const noexcept { return items_.end(); }
  std::size_t size() const noexcept { return items_.size(); }
  bool empty() const noexcept { return items_.empty(); }

 private:
  std::vector<value_type> items_;
};

}  // namespace xpr::rt

#if XPR_DEFINITIONS

namespace xpr::rt {

XPR_FUNC const ParamValue* Params::find(std::string_view name) const noexcept {
  for (const auto& [k, v] : items_)
    if (k == name) return &v;
  return nullptr;
}

XPR_FUNC void Params::set(std::string name, ParamValue value) {
  for (auto& [k, v] : items_)
    if (k == name) {
      v = std::move(value);
      return;
    }
  items_.emplace_back(std::move(name), std::move(value));
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
