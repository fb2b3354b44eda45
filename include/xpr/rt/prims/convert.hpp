// SPDX-License-Identifier: MIT
// convert_element_type: change an array's dtype (and weak-type flag). jax.numpy's dtype
// promotion inserts it; `astype` is its user-facing name.
#pragma once

#include <cstddef>
#include <optional>
#include <span>

#include "xpr/core/config.hpp"
#include "xpr/core/dtype.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/params.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/trace.hpp"
#include "xpr/rt/zeros.hpp"

namespace xpr::rt {

/// convert_element_type[new_dtype, weak_type](x): elementwise C++ conversion (float to int
/// truncates toward zero, nonzero to bool is true).
class ConvertElementType final : public Primitive {
 public:
  constexpr ConvertElementType() : Primitive("convert_element_type") {}

  XPR_MEMBER Arrays impl(std::span<const Array> args, const Params& params) const override;

  /// Linear between floating dtypes; a conversion to an integer or bool dtype has zero tangent.
  XPR_MEMBER std::pair<Arrays, Arrays> jvp(std::span<const Array> primals,
                                           std::span<const Array> tangents,
                                           const Params& params) const override;

  /// With symbolic zeros: a conversion from or to an integer or bool dtype has a zero tangent.
  XPR_MEMBER std::pair<Arrays, Tangents> jvp_symbolic(std::span<const Array> primals,
                                                      std::span<const Tangent> tangents,
                                                      const Params& params) const override;

  /// Linear between floating dtypes (JAX's `_convert_element_type_transpose_rule`): the
  /// cotangent converted back to the operand's dtype and weak flag. An integer or bool operand has
  /// a zero cotangent.
  XPR_MEMBER Cotangents transpose(std::span<const Cotangent> cts, std::span<const LinearArg> args,
                                  const Params&) const override;

  std::pair<Arrays, BatchDims> batch(std::span<const Array> args, std::span<const BatchDim> dims,
                                     std::int64_t, const Params& params) const override {
    return {rt::bind(*this, args, params), {dims[0]}};
  }

  XPR_MEMBER Avals abstract_eval(std::span<const ShapedArray> args,
                                 const Params& params) const override;

 private:
  static ShapedArray abstract_eval_one(const ShapedArray& x, const Params& params) {
    return {x.shape, params.get<core::DType>("new_dtype"), params.get<bool>("weak_type")};
  }
};

inline constinit const ConvertElementType convert_element_type_p{};

/// `x` converted to `dtype` (strongly typed unless `weak_type`); no equation when nothing changes.
inline Array convert_element_type(const Array& x, DType dtype, bool weak_type = false) {
  if (x.dtype() == dtype && x.weak_type() == weak_type) return x;
  return bind1(convert_element_type_p, {x}, {{"new_dtype", dtype}, {"weak_type", weak_type}});
}

/// `x.astype(dtype)` of NumPy.
inline Array astype(const Array& x, DType dtype) { return convert_element_type(x, dtype); }

}  // namespace xpr::rt

namespace xpr {
using rt::astype;
using rt::convert_element_type;
}  // namespace xpr

#if XPR_DEFINITIONS

namespace xpr::rt {

XPR_FUNC Arrays ConvertElementType::impl(std::span<const Array> args, const Params& params) const {
  ShapedArray out = abstract_eval_one(detail::aval_of(args[0]), params);
  const Array& x = args[0];
  ArrayBuilder b(out);
  auto n = static_cast<std::size_t>(x.size());
  dispatch_dtype(x.dtype(), [&](auto in_tag) {
    using I = decltype(in_tag);
    const I* in = x.data<I>();
    dispatch_dtype(out.dtype, [&](auto out_tag) {
      using O = decltype(out_tag);
      O* o = b.data<O>();
      for (std::size_t i = 0; i < n; ++i) {
        o[i] = core::convert_element<O>(in[i]);
      }
    });
  });
  return {std::move(b).finish()};
}

XPR_FUNC std::pair<Arrays, Arrays> ConvertElementType::jvp(std::span<const Array> primals,
                                                           std::span<const Array> tangents,
                                                           const Params& params) const {
  Arrays out = rt::bind(*this, primals, params);
  const ShapedArray& a = detail::aval_of(out[0]);
  Array t = core::is_floating(a.dtype) && core::is_floating(tangents[0].dtype())
                ? rt::bind(*this, tangents, params)[0]
                : zeros_like_aval(a);
  return {std::move(out), {std::move(t)}};
}

XPR_FUNC std::pair<Arrays, Tangents> ConvertElementType::jvp_symbolic(
    std::span<const Array> primals, std::span<const Tangent> tangents, const Params& params) const {
  Arrays out = rt::bind(*this, primals, params);
  if (!tangents[0] || !core::is_floating(out[0].dtype()) ||
      !core::is_floating(tangents[0]->dtype()))
    return {std::move(out), {std::nullopt}};
  return {std::move(out), {rt::bind(*this, std::span(&*tangents[0], 1), params)[0]}};
}

XPR_FUNC Cotangents ConvertElementType::transpose(std::span<const Cotangent> cts,
                                                  std::span<const LinearArg> args,
                                                  const Params&) const {
  if (args.size() != 1)
    throw core::type_error("convert_element_type expected 1 operand, found " +
                           std::to_string(args.size()));
  const ShapedArray& x = aval_of(args[0]);
  const Array& ct = *cts[0];
  if (!core::is_floating(x.dtype) || !core::is_floating(ct.dtype())) return {std::nullopt};
  if (ct.dtype() == x.dtype && ct.weak_type() == x.weak_type) return {ct};
  return {bind1(*this, {ct}, {{"new_dtype", x.dtype}, {"weak_type", x.weak_type}})};
}

XPR_FUNC Avals ConvertElementType::abstract_eval(std::span<const ShapedArray> args,
                                                 const Params& params) const {
  if (args.size() != 1)
    throw core::type_error("convert_element_type expected 1 operand, found " +
                           std::to_string(args.size()));
  return {abstract_eval_one(args[0], params)};
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
