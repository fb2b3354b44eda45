// SPDX-License-Identifier: MIT
// select_n(which, *cases): elementwise choice among cases, JAX's current form of `select`. A bool
// `which` picks between exactly two cases (false picks the first); an int32 `which` indexes any
// number of them. `xpr::where(c, a, b)` binds `select_n(c, b, a)` (rt/numpy_elementwise.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/core/ops.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/batching.hpp"
#include "xpr/rt/numpy_shape.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/prims/detail/transpose.hpp"
#include "xpr/rt/prims/elementwise.hpp"
#include "xpr/rt/prims/shape.hpp"
#include "xpr/rt/trace.hpp"

namespace xpr::rt {

/// select_n(which, case_0, ..., case_{n-1}): `case_{which[i]}[i]` at every index `i`.
///
/// abstract_eval: `which` is bool (then n == 2) or int32; the cases share one dtype; all shapes
/// are equal except that rank-0 operands stand for any shape (like the other elementwise
/// primitives). The result is weakly typed when every case is. An int32 `which` outside [0, n)
/// is clamped (JAX leaves it undefined).
class SelectN final : public Primitive {
 public:
  constexpr SelectN() : Primitive("select_n") {}

  XPR_MEMBER Arrays impl(std::span<const Array> args, const Params& params) const override;

  Avals abstract_eval(std::span<const ShapedArray> args, const Params& params) const override {
    return {abstract_eval_one(args, params)};
  }

  /// Linear in the cases: the tangent selects among the cases' tangents with the same predicate.
  XPR_MEMBER std::pair<Arrays, Arrays> jvp(std::span<const Array> primals,
                                           std::span<const Array> tangents,
                                           const Params& params) const override;

  /// With symbolic zeros: the predicate's tangent never matters; a zero case tangent becomes a
  /// rank-0 zero (which stands for any shape) when some other case's tangent is nonzero.
  XPR_MEMBER std::pair<Arrays, Tangents> jvp_symbolic(std::span<const Array> primals,
                                                      std::span<const Tangent> tangents,
                                                      const Params& params) const override;

  /// Linear in the cases for a known predicate (JAX's `_select_transpose_rule`): each undefined
  /// case gets the cotangent where it was selected and zero elsewhere, `select_n(which, 0, .., ct,
  /// .., 0)`; `type_error` for an undefined predicate.
  XPR_MEMBER Cotangents transpose(std::span<const Cotangent> cts, std::span<const LinearArg> args,
                                  const Params& params) const override;

  std::pair<Arrays, BatchDims> batch(std::span<const Array> args, std::span<const BatchDim> dims,
                                     std::int64_t n, const Params& params) const override {
    return batch_elementwise(*this, args, dims, n, params);
  }

 private:
  XPR_MEMBER ShapedArray abstract_eval_one(std::span<const ShapedArray> args, const Params&) const;
};

inline constinit const SelectN select_n_p{};

}  // namespace xpr::rt

#if XPR_DEFINITIONS

namespace xpr::rt {

XPR_FUNC Arrays SelectN::impl(std::span<const Array> args, const Params& params) const {
  std::vector<ShapedArray> avals;
  avals.reserve(args.size());
  for (const Array& a : args) avals.push_back(detail::aval_of(a));
  ArrayBuilder out(abstract_eval_one(avals, params));
  auto n = static_cast<std::size_t>(out.aval().size());
  const Array& which = args[0];
  dispatch_dtype(out.aval().dtype, [&](auto tag) {
    using T = decltype(tag);
    if (which.dtype() == DType::bool_) {
      const Array &f = args[1], &t = args[2];
      detail::map_ternary(which.data<bool>(), which.ndim() == 0, f.data<T>(), f.ndim() == 0,
                          t.data<T>(), t.ndim() == 0, out.data<T>(), n,
                          [](bool c, T x, T y) { return c ? y : x; });
    } else {
      std::vector<const T*> cases;  // element i of case k is cases[k][i * steps[k]]
      std::vector<std::size_t> steps;
      for (std::size_t k = 1; k < args.size(); ++k) {
        cases.push_back(args[k].data<T>());
        steps.push_back(args[k].ndim() == 0 ? 0 : 1);
      }
      const std::int32_t* w = which.data<std::int32_t>();
      const std::size_t w_step = which.ndim() == 0 ? 0 : 1;
      const auto last = static_cast<std::int32_t>(cases.size() - 1);
      T* o = out.data<T>();
      for (std::size_t i = 0; i < n; ++i) {
        std::int32_t k = w[i * w_step];
        auto c = static_cast<std::size_t>(k < 0 ? 0 : (k > last ? last : k));
        o[i] = cases[c][i * steps[c]];
      }
    }
  });
  return {std::move(out).finish()};
}

XPR_FUNC std::pair<Arrays, Arrays> SelectN::jvp(std::span<const Array> primals,
                                                std::span<const Array> tangents,
                                                const Params& params) const {
  Arrays out = rt::bind(*this, primals, params);
  Arrays t_args(tangents.begin(), tangents.end());
  t_args[0] = primals[0];
  Array t = rt::bind(*this, t_args, params)[0];
  if (t.shape() != out[0].shape()) t = broadcast_to(t, out[0].shape());
  return {std::move(out), {std::move(t)}};
}

XPR_FUNC std::pair<Arrays, Tangents> SelectN::jvp_symbolic(std::span<const Array> primals,
                                                           std::span<const Tangent> tangents,
                                                           const Params& params) const {
  Arrays out = rt::bind(*this, primals, params);
  if (!detail::has_tangent_space(detail::aval_of(out[0])) || detail::all_zero(tangents.subspan(1)))
    return {std::move(out), {std::nullopt}};
  Arrays t_args{primals[0]};
  for (std::size_t i = 1; i < primals.size(); ++i) {
    const ShapedArray& a = detail::aval_of(primals[i]);
    t_args.push_back(tangents[i] ? *tangents[i] : zeros_like_aval({Shape{}, a.dtype, a.weak_type}));
  }
  Array t = detail::fit_tangent(rt::bind(*this, t_args, params)[0], detail::aval_of(out[0]));
  return {std::move(out), {std::move(t)}};
}

XPR_FUNC Cotangents SelectN::transpose(std::span<const Cotangent> cts,
                                       std::span<const LinearArg> args,
                                       const Params& params) const {
  if (args.size() < 2)
    throw core::type_error("select_n expected a predicate and at least one case, found " +
                           std::to_string(args.size()) + " operand(s)");
  const Array& which = detail::known_operand(name(), args[0], "the predicate");
  const Array& ct = *cts[0];
  const Array zero = zeros_like_aval({Shape{}, ct.dtype(), ct.weak_type()});
  Cotangents out(args.size());
  for (std::size_t i = 1; i < args.size(); ++i) {
    if (!is_undefined_primal(args[i])) continue;
    Arrays cases{which};
    for (std::size_t j = 1; j < args.size(); ++j) cases.push_back(i == j ? ct : zero);
    out[i] = detail::fit_cotangent(rt::bind(*this, cases, params)[0], aval_of(args[i]));
  }
  return out;
}

XPR_FUNC ShapedArray SelectN::abstract_eval_one(std::span<const ShapedArray> args,
                                                const Params&) const {
  if (args.size() < 2)
    throw core::type_error("select_n expected a predicate and at least one case, found " +
                           std::to_string(args.size()) + " operand(s)");
  DType w = args[0].dtype;
  if (w != DType::bool_ && w != DType::int32)
    throw core::dtype_error("select_n expected a bool or int32 predicate, found " +
                            std::string(core::name(w)));
  if (w == DType::bool_ && args.size() != 3)
    throw core::type_error("select_n with a bool predicate expected exactly 2 cases, found " +
                           std::to_string(args.size() - 1));
  return detail::nary_aval(name(), args, detail::Accepts::any, 1);
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
