// SPDX-License-Identifier: MIT
// The comparison primitives: eq ne lt le gt ge. Operands of any one dtype and equal shapes (a
// rank-0 operand stands for any shape); the result is bool. One table, each row binding an
// `xpr::op` tag to a primitive, like the arithmetic ones in binary.hpp. And the unary predicate
// is_finite, a bool of a float operand, for the same reason outside the shared list.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "xpr/core/ops.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/batching.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/prims/detail/zero_jvp.hpp"
#include "xpr/rt/prims/elementwise.hpp"
#include "xpr/rt/trace.hpp"

namespace xpr::rt {

/// A comparison primitive: `Op` on every pair of elements, with IEEE semantics for NaN (only `ne`
/// holds); name, dtypes and kernel from `Op`'s struct (core/ops.hpp).
///
/// abstract_eval: equal dtypes (`Op::accepts`), equal shapes or rank 0; the result is a strong
/// bool.
template <class Op>
class Comparison final : public detail::ZeroJvpPrimitive {
  static_assert(is_comparison_v<Op> && !is_differentiable_v<Op> && Op::arity == 2);

 public:
  constexpr Comparison() : ZeroJvpPrimitive(Op::name) {}

  Arrays impl(std::span<const Array> args, const Params& params) const override {
    check_arity(args.size());
    const ShapedArray avals[2] = {detail::aval_of(args[0]), detail::aval_of(args[1])};
    ArrayBuilder out(abstract_eval_one(avals, params));
    const Array &a = args[0], &b = args[1];
    dispatch_dtype(a.dtype(), [&](auto tag) {
      using T = decltype(tag);
      // A plain loop (R = bool has no batch type); the compiler vectorizes it.
      detail::map_binary<T, bool>(a.data<T>(), a.ndim() == 0, b.data<T>(), b.ndim() == 0,
                                  out.data<bool>(), static_cast<std::size_t>(out.aval().size()),
                                  [](T x, T y) { return Op::number(x, y); });
    });
    return {std::move(out).finish()};
  }

  std::pair<Arrays, BatchDims> batch(std::span<const Array> args, std::span<const BatchDim> dims,
                                     std::int64_t n, const Params& params) const override {
    return batch_elementwise(*this, args, dims, n, params);
  }

  Avals abstract_eval(std::span<const ShapedArray> args, const Params& params) const override {
    check_arity(args.size());
    return {abstract_eval_one(args, params)};
  }

 private:
  void check_arity(std::size_t n) const {
    if (n != 2) throw core::type_error(name() + " expected 2 operands, found " + std::to_string(n));
  }
  ShapedArray abstract_eval_one(std::span<const ShapedArray> args, const Params&) const {
    ShapedArray out = detail::nary_aval(name(), args, Op::accepts);
    out.dtype = DType::bool_;
    out.weak_type = false;
    return out;
  }
};

/// A unary predicate (`is_finite`): `Op` on every element, a strong bool result of the operand's
/// shape; name, dtypes and kernel from `Op`'s struct (core/ops.hpp). Piecewise constant: the
/// tangent is a symbolic zero.
template <class Op>
class Predicate final : public detail::ZeroJvpPrimitive {
  static_assert(Op::arity == 1 && !is_differentiable_v<Op>);

 public:
  constexpr Predicate() : ZeroJvpPrimitive(Op::name) {}

  Arrays impl(std::span<const Array> args, const Params& params) const override {
    if (args.size() != 1)
      throw core::type_error(name() + " expected 1 operand, found " + std::to_string(args.size()));
    const Array& x = args[0];
    ArrayBuilder out(abstract_eval_one(std::span(&detail::aval_of(x), 1), params));
    dispatch_dtype(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (detail::accepts_v<T>(Op::accepts)) {
        // A plain loop (R = bool has no batch type); the compiler vectorizes it.
        detail::map_unary<T, bool>(x.data<T>(), out.data<bool>(),
                                   static_cast<std::size_t>(x.size()),
                                   [](T v) { return static_cast<bool>(Op::number(v)); });
      }
    });
    return {std::move(out).finish()};
  }

  std::pair<Arrays, BatchDims> batch(std::span<const Array> args, std::span<const BatchDim> dims,
                                     std::int64_t, const Params& params) const override {
    return {rt::bind(*this, args, params), {dims[0]}};
  }

  Avals abstract_eval(std::span<const ShapedArray> args, const Params& params) const override {
    return {abstract_eval_one(args, params)};
  }

 private:
  ShapedArray abstract_eval_one(std::span<const ShapedArray> args, const Params&) const {
    ShapedArray out = detail::unary_aval(name(), args, Op::accepts);
    out.dtype = DType::bool_;
    out.weak_type = false;
    return out;
  }
};

// Compiled-library mode (XPR_COMPILED_LIB, the xpr::runtime library): these primitives' rules
// and kernels are instantiated once, in src/runtime.cpp, not in every translation unit.
#ifdef XPR_COMPILED_LIB
extern template class Comparison<op::eq>;
extern template class Comparison<op::ne>;
extern template class Comparison<op::lt>;
extern template class Comparison<op::le>;
extern template class Comparison<op::gt>;
extern template class Comparison<op::ge>;
extern template class Predicate<op::is_finite>;
#endif

/// The primitive of each comparison in the shared list (`comparison_ops`, core/ops.hpp).
template <class Op>
requires is_comparison_v<Op>
inline constinit const Comparison<Op> comparison_p{};

inline constinit const Comparison<op::eq>& eq_p = comparison_p<op::eq>;
inline constinit const Comparison<op::ne>& ne_p = comparison_p<op::ne>;
inline constinit const Comparison<op::lt>& lt_p = comparison_p<op::lt>;
inline constinit const Comparison<op::le>& le_p = comparison_p<op::le>;
inline constinit const Comparison<op::gt>& gt_p = comparison_p<op::gt>;
inline constinit const Comparison<op::ge>& ge_p = comparison_p<op::ge>;

/// is_finite(x) of float32 or float64 `x`.
inline constinit const Predicate<op::is_finite> is_finite_p{};

/// `xpr::isfinite(x)` (`jnp.isfinite`): `is_finite` of floats; integers and bools are always
/// finite (`eq x x`, all true, keeps the operand's shape and any trace).
inline Array xpr_apply(op::is_finite, const Array& x) {
  if (core::is_floating(x.dtype())) return bind1(is_finite_p, {x});
  return bind1(eq_p, {x, x});
}

namespace detail {
/// The primitive behind each comparison `xpr::op` tag; null's type for any other tag.
template <class Op>
inline constexpr std::nullptr_t comparison_primitive = nullptr;  // not a comparison
template <class Op>
requires is_comparison_v<Op>
inline constexpr const Primitive* comparison_primitive<Op> = &comparison_p<Op>;
}  // namespace detail

}  // namespace xpr::rt
