// SPDX-License-Identifier: MIT
// What the reverse-mode rules of the primitives share: reading `LinearArg` operands, fitting a
// cotangent to its operand's exact type (summing over broadcast rank-0 operands, restoring the
// weak-type flag), and fitting a symbolic-zero-aware tangent to its output's type.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <variant>

#include "xpr/core/config.hpp"
#include "xpr/core/error.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/aval.hpp"
#include "xpr/rt/params.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/prims/convert.hpp"
#include "xpr/rt/trace.hpp"

namespace xpr::rt::detail {

/// reduce_sum_p, reached through a function that xpr/rt/prims/reduce.hpp defines: the rules of
/// binary.hpp, select.hpp and shape.hpp sum cotangents, but reduce.hpp includes those headers, so
/// they cannot include it. `primitive()` is a member of a class template declared here and defined
/// there, so it is instantiated at the end of a translation unit that includes reduce.hpp; a
/// program whose transposes sum cotangents without including reduce.hpp anywhere fails at link
/// time (undefined `ReduceSumHook<void>::primitive()`). (It was a pointer set by reduce_sum_p's
/// constructor, but the primitives are constant-initialized now: see xpr/rt/primitive.hpp.)
template <class = void>
struct ReduceSumHook {
  static const Primitive& primitive();
};

inline const Primitive& reduce_sum_primitive() { return ReduceSumHook<>::primitive(); }

/// reduce_sum of `x` over `axes` (no equation when there are none).
inline Array sum_axes(const Array& x, Axes axes) {
  if (axes.empty()) return x;
  return rt::bind1(reduce_sum_primitive(), {x}, {{"axes", std::move(axes)}});
}

/// reduce_sum of `x` over all its axes.
Array sum_all(const Array& x);

/// The known value of a non-linear operand of `prim`'s transpose rule; `type_error` when it is an
/// `UndefinedPrimal` (the equation is not linear in it, as in `mul(t, t)`).
const Array& known_operand(const std::string& prim, const LinearArg& x, const char* what);

/// `ct` made the cotangent of an operand of type `aval`: summed to rank 0 where a rank-0 operand
/// was broadcast (binary primitives accept one for any shape), converted where its weak-type flag
/// (or dtype) differs, so cotangents have their operand's exact type.
Array fit_cotangent(Array ct, const ShapedArray& aval);

/// Whether every tangent is a symbolic zero.
bool all_zero(std::span<const Tangent> ts);

/// Whether outputs of type `aval` have nonzero tangents: integer and bool ones are piecewise
/// constant, so their tangent is a symbolic zero (JAX's float0).
inline bool has_tangent_space(const ShapedArray& aval) { return core::is_floating(aval.dtype); }

/// Each empty tangent replaced by zeros of its primal's type (for rules that need every operand,
/// such as `concatenate` of a zero and a nonzero tangent).
Arrays instantiate_zeros(std::span<const Array> primals, std::span<const Tangent> ts);

/// The index operands `args[first:]` of a transpose rule (`dynamic_slice` and
/// `dynamic_update_slice` start indices), which are never linear.
Arrays known_operands(const std::string& prim, std::span<const LinearArg> args, std::size_t first);

}  // namespace xpr::rt::detail

#if XPR_DEFINITIONS

namespace xpr::rt::detail {

XPR_FUNC Array sum_all(const Array& x) {
  Axes all;
  for (std::size_t i = 0; i < x.ndim(); ++i) all.push_back(static_cast<std::int64_t>(i));
  return sum_axes(x, std::move(all));
}

XPR_FUNC const Array& known_operand(const std::string& prim, const LinearArg& x, const char* what) {
  if (const auto* a = std::get_if<Array>(&x)) return *a;
  throw core::type_error("transpose of '" + prim + "': expected " + what +
                         " to be known (the equation is linear only in the other operands), "
                         "found it undefined, of type " +
                         std::get<UndefinedPrimal>(x).aval.str() + "; the function is not linear");
}

XPR_FUNC Array fit_cotangent(Array ct, const ShapedArray& aval) {
  if (aval.ndim() == 0 && ct.ndim() > 0) ct = sum_all(ct);
  if (ct.shape() != aval.shape)
    throw core::shape_error("transpose rule: expected a cotangent of shape " + aval.shape.str() +
                            ", found shape " + ct.shape().str());
  return convert_element_type(ct, aval.dtype, aval.weak_type);
}

XPR_FUNC bool all_zero(std::span<const Tangent> ts) {
  for (const Tangent& t : ts)
    if (t) return false;
  return true;
}

XPR_FUNC Arrays instantiate_zeros(std::span<const Array> primals, std::span<const Tangent> ts) {
  Arrays out;
  out.reserve(ts.size());
  for (std::size_t i = 0; i < ts.size(); ++i)
    out.push_back(ts[i] ? *ts[i] : zeros_like_aval(detail::aval_of(primals[i])));
  return out;
}

XPR_FUNC Arrays known_operands(const std::string& prim, std::span<const LinearArg> args,
                               std::size_t first) {
  Arrays out;
  for (std::size_t i = first; i < args.size(); ++i)
    out.push_back(known_operand(prim, args[i], "the start indices"));
  return out;
}

}  // namespace xpr::rt::detail
#endif  // XPR_DEFINITIONS
