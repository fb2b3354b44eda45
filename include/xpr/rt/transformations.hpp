// SPDX-License-Identifier: MIT
// The transformations on flat lists of arrays: jvp_flat, vmap_flat, make_jaxpr_flat, and reverse
// mode built from them (Autodidax Part 4): linearize_flat (jvp + partial evaluation),
// linear_transpose_flat and transpose_linear (backward_pass). Each pushes its interpreter, traces
// the function and reads the results off the output tracers. The pytree-level API (xpr::jvp,
// xpr::vmap, xpr::make_jaxpr, xpr::linearize, xpr::vjp, xpr::grad, ...) in api_transformations.hpp
// and api_autodiff.hpp flattens arguments and results around these.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/core/error.hpp"
#include "xpr/core/shape.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/batching.hpp"
#include "xpr/rt/interp/batch.hpp"
#include "xpr/rt/interp/jaxpr_trace.hpp"
#include "xpr/rt/interp/jvp.hpp"
#include "xpr/rt/interp/partial_eval.hpp"
#include "xpr/rt/interp/transpose.hpp"
#include "xpr/rt/jaxpr.hpp"
#include "xpr/rt/jaxpr_eval.hpp"
#include "xpr/rt/trace.hpp"
#include "xpr/rt/zeros.hpp"

namespace xpr::rt {

/// A function of a flat list of arrays to a flat list of arrays.
using FlatFunction = std::function<Arrays(std::span<const Array>)>;

/// Forward mode with symbolic zeros: the outputs of `f` at `primals` and their directional
/// derivatives along `tangents`, where an empty tangent (in or out) is a known zero.
/// Transformations built on jvp (linearize, vjp) use this form so that zeros are never
/// materialized.
std::pair<Arrays, Tangents> jvp_flat_symbolic(const FlatFunction& f, std::span<const Array> primals,
                                              std::span<const Tangent> tangents);

/// Forward mode: the outputs of `f` at `primals` and their directional derivatives along
/// `tangents`. Output tangents that are symbolically zero come back as arrays of zeros.
std::pair<Arrays, Arrays> jvp_flat(const FlatFunction& f, std::span<const Array> primals,
                                   std::span<const Array> tangents);

/// Batching: maps `f` over axis `in_axes[i]` of argument `i` (`std::nullopt` = not mapped) and
/// stacks the results along `out_axes[j]` (`std::nullopt`: output `j` must not depend on the
/// mapped axis; a single entry applies to every output). `out_axes` is read after `f` has run,
/// so `f` may fill it in once it knows its outputs.
Arrays vmap_flat(const FlatFunction& f, std::span<const Array> args,
                 std::span<const BatchDim> in_axes, const BatchDims& out_axes);

/// Staging: the jaxpr of `f` on inputs of the given types. `f` runs once on tracers; every
/// primitive it applies (even on constants) becomes an equation.
ClosedJaxpr make_jaxpr_flat(const FlatFunction& f, std::span<const ShapedArray> in_avals);

// ---- reverse mode ----------------------------------------------------------------------------

/// Linearization: the outputs of `f` at `primals` and the linear part of its JVP there, as a
/// closed jaxpr from input tangents to output tangents whose constants are the residuals (the
/// primal values the tangent computation reads). Built by partially evaluating `jvp(f)` with the
/// primals known and the tangents unknown (Autodidax's `linearize_flat`), so all primal work is
/// done now and the jaxpr holds only tangent work. Only the first `num_linear` outputs (default:
/// all) get tangent outputs; the others are auxiliary (has_aux).
std::pair<Arrays, ClosedJaxpr> linearize_flat(const FlatFunction& f, std::span<const Array> primals,
                                              std::size_t num_linear = static_cast<std::size_t>(-1),
                                              std::string name = "linearize");

/// `linearize_flat` where the number of linear outputs is known only once `f` has run
/// (`vjp(f, ..., has_aux)`: the leaves of `f`'s first result): `num_linear()` is called after `f`
/// returns, inside the trace.
std::pair<Arrays, ClosedJaxpr> linearize_flat(const FlatFunction& f, std::span<const Array> primals,
                                              const std::function<std::size_t()>& num_linear,
                                              std::string name);

/// Applies the linear function `linearize_flat` returned to `tangents`: evaluates its jaxpr on
/// the stored residuals, doing no primal work. Under make_jaxpr the residuals appear as constvars.
inline Arrays eval_linear(const ClosedJaxpr& linear, std::span<const Array> tangents) {
  KeepAsConstvars keep(linear.consts);
  return eval_jaxpr(linear.jaxpr, linear.consts, tangents);
}

/// The transpose of a linear jaxpr (inputs -> outputs, all inputs linear): the cotangents of its
/// inputs from the cotangents `cts` of its outputs (empty: zero). Zero results are instantiated.
Arrays transpose_linear(const ClosedJaxpr& linear, std::span<const Cotangent> cts);

/// The jaxpr of a function `f` that is linear in its inputs of types `in_avals`, traced with
/// every input unknown (so work on constants is done now) for `linear_transpose`. Throws
/// `type_error` unless inputs and outputs are all floating or all integer (JAX's condition).
ClosedJaxpr linear_transpose_flat(const FlatFunction& f, std::span<const ShapedArray> in_avals);

}  // namespace xpr::rt

#if XPR_DEFINITIONS

namespace xpr::rt {

XPR_FUNC std::pair<Arrays, Tangents> jvp_flat_symbolic(const FlatFunction& f,
                                                       std::span<const Array> primals,
                                                       std::span<const Tangent> tangents) {
  if (primals.size() != tangents.size())
    throw core::type_error("jvp: expected one tangent per primal, found " +
                           std::to_string(primals.size()) + " primals and " +
                           std::to_string(tangents.size()) + " tangents");
  MainScope scope(std::in_place_type<JvpTrace>, "jvp");
  JvpTrace& trace = scope.trace<JvpTrace>();
  Arrays in;
  in.reserve(primals.size());
  for (std::size_t i = 0; i < primals.size(); ++i) {
    if (tangents[i] && !detail::aval_of(primals[i]).same_type(detail::aval_of(*tangents[i])))
      throw core::type_error(
          "jvp: primal and tangent arguments must have equal shapes and "
          "dtypes: expected " +
          detail::aval_of(primals[i]).str() + " for argument " + std::to_string(i) +
          ", found tangent " + detail::aval_of(*tangents[i]).str());
    in.push_back(trace.make_tracer(primals[i], tangents[i]));
  }
  Arrays out = f(in);
  Arrays primals_out;
  Tangents tangents_out;
  primals_out.reserve(out.size());
  tangents_out.reserve(out.size());
  for (const Array& o : out) {
    Array t = full_raise(trace, o);
    const auto& jt = static_cast<const JvpTracer&>(*t.impl());
    primals_out.push_back(jt.primal());
    tangents_out.push_back(jt.tangent());
  }
  return {std::move(primals_out), std::move(tangents_out)};
}

XPR_FUNC std::pair<Arrays, Arrays> jvp_flat(const FlatFunction& f, std::span<const Array> primals,
                                            std::span<const Array> tangents) {
  Tangents in(tangents.begin(), tangents.end());
  auto [primals_out, tangents_out] = jvp_flat_symbolic(f, primals, in);
  Arrays instantiated;
  instantiated.reserve(tangents_out.size());
  for (std::size_t i = 0; i < tangents_out.size(); ++i)
    instantiated.push_back(tangents_out[i] ? std::move(*tangents_out[i])
                                           : zeros_like_aval(detail::aval_of(primals_out[i])));
  return {std::move(primals_out), std::move(instantiated)};
}

XPR_FUNC Arrays vmap_flat(const FlatFunction& f, std::span<const Array> args,
                          std::span<const BatchDim> in_axes, const BatchDims& out_axes) {
  if (args.size() != in_axes.size())
    throw core::type_error("vmap: in_axes must have one entry per argument: expected " +
                           std::to_string(args.size()) + ", found " +
                           std::to_string(in_axes.size()));
  std::optional<std::int64_t> axis_size;
  std::vector<BatchDim> dims(in_axes.begin(), in_axes.end());
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (!dims[i]) continue;
    const auto r = static_cast<std::int64_t>(args[i].ndim());
    if (*dims[i] < -r || *dims[i] >= r)  // JAX's message names the axis, the rank and the shape
      throw core::index_error("vmap was requested to map leaf " + std::to_string(i) +
                              " of its arguments (shape " + args[i].shape().str() +
                              ") along axis " + std::to_string(*dims[i]) +
                              " (in_axes): expected an array of rank at least " +
                              std::to_string(*dims[i] < 0 ? -*dims[i] : *dims[i] + 1) +
                              ", found rank " + std::to_string(r));
    dims[i] = static_cast<std::int64_t>(core::canonicalize_axis(*dims[i], args[i].ndim()));
    std::int64_t n = args[i].shape()[static_cast<std::size_t>(*dims[i])];
    if (axis_size && *axis_size != n)
      throw core::shape_error("vmap got inconsistent sizes for the mapped axes: expected " +
                              std::to_string(*axis_size) + " (from an earlier argument), found " +
                              std::to_string(n) + " for leaf " + std::to_string(i) +
                              " of the arguments (in order, containers flattened), of shape " +
                              args[i].shape().str());
    axis_size = n;
  }
  if (!axis_size)
    throw core::value_error(
        "vmap must have at least one mapped argument: expected an integer in "
        "in_axes, found only not_mapped");
  MainScope scope(std::in_place_type<BatchTrace>, "vmap", *axis_size);
  BatchTrace& trace = scope.trace<BatchTrace>();
  Arrays in;
  in.reserve(args.size());
  for (std::size_t i = 0; i < args.size(); ++i) in.push_back(trace.make_tracer(args[i], dims[i]));
  Arrays out = f(in);
  if (out_axes.size() != out.size() && out_axes.size() != 1)
    throw core::type_error("vmap: out_axes must have one entry per output: expected " +
                           std::to_string(out.size()) + ", found " +
                           std::to_string(out_axes.size()));
  Arrays results;
  results.reserve(out.size());
  for (std::size_t j = 0; j < out.size(); ++j) {
    BatchDim want = out_axes.size() == 1 ? out_axes[0] : out_axes[j];
    Array t = full_raise(trace, out[j]);
    const auto& bt = static_cast<const BatchTracer&>(*t.impl());
    if (!want) {
      if (bt.batch_dim())
        throw core::value_error("vmap has mapped output but out_axes is not_mapped for output " +
                                std::to_string(j) +
                                ": expected an output that does not depend "
                                "on the mapped axis");
      results.push_back(bt.value());
      continue;
    }
    auto rank = bt.value().ndim() + (bt.batch_dim() ? 0 : 1);
    const auto r = static_cast<std::int64_t>(rank);
    if (*want < -r || *want >= r)
      throw core::index_error("vmap: out_axes puts the mapped axis of output leaf " +
                              std::to_string(j) + " at axis " + std::to_string(*want) +
                              ": expected -" + std::to_string(r) + " <= axis < " +
                              std::to_string(r) + " for its batched rank " + std::to_string(r));
    auto to = static_cast<std::int64_t>(core::canonicalize_axis(*want, rank));
    results.push_back(bt.batch_dim() ? moveaxis(bt.value(), *bt.batch_dim(), to)
                                     : broadcast_batch(bt.value(), *axis_size, to));
  }
  return results;
}

XPR_FUNC ClosedJaxpr make_jaxpr_flat(const FlatFunction& f, std::span<const ShapedArray> in_avals) {
  MainScope scope(std::in_place_type<JaxprTrace>, "make_jaxpr");
  DynamicScope dynamic(scope.main());
  JaxprTrace& trace = scope.trace<JaxprTrace>();
  Arrays in;
  in.reserve(in_avals.size());
  for (const ShapedArray& a : in_avals) in.push_back(trace.new_arg(a));
  Arrays out = f(in);
  return trace.build(out);
}

XPR_FUNC std::pair<Arrays, ClosedJaxpr> linearize_flat(const FlatFunction& f,
                                                       std::span<const Array> primals,
                                                       std::size_t num_linear, std::string name) {
  return linearize_flat(
      f, primals, [num_linear] { return num_linear; }, std::move(name));
}

XPR_FUNC std::pair<Arrays, ClosedJaxpr> linearize_flat(
    const FlatFunction& f, std::span<const Array> primals,
    const std::function<std::size_t()>& num_linear_of, std::string name) {
  const std::size_t n = primals.size();
  std::vector<PartialVal> pvals_in;
  pvals_in.reserve(2 * n);
  for (const Array& p : primals) pvals_in.push_back(PartialVal::known(p));
  for (const Array& p : primals) pvals_in.push_back(PartialVal::unknown(detail::aval_of(p)));
  std::size_t num_out = 0;
  std::vector<bool> instantiate;  // filled once the outputs are known: the tangents must be unknown
  FlatFunction f_jvp = [&](std::span<const Array> primals_tangents) {
    Tangents tangents(primals_tangents.begin() + static_cast<std::ptrdiff_t>(n),
                      primals_tangents.end());
    auto [primals_out, tangents_out] = jvp_flat_symbolic(f, primals_tangents.first(n), tangents);
    num_out = primals_out.size();
    const std::size_t num_linear = num_linear_of();
    Arrays out = std::move(primals_out);
    // Zero tangents are instantiated: the linear function returns arrays for every output.
    for (std::size_t i = 0; i < num_out && i < num_linear; ++i)
      out.push_back(tangents_out[i] ? std::move(*tangents_out[i])
                                    : zeros_like_aval(detail::aval_of(out[i])));
    instantiate.assign(out.size(), false);
    std::fill(instantiate.begin() + static_cast<std::ptrdiff_t>(num_out), instantiate.end(), true);
    return out;
  };
  PartialEvalResult pe = partial_eval_flat(f_jvp, pvals_in, instantiate, name);
  Arrays primals_out;
  primals_out.reserve(num_out);
  for (std::size_t i = 0; i < num_out; ++i) {
    if (pe.pvals_out[i].is_unknown())
      throw core::type_error(name +
                             ": a primal output depends on the tangents (a primitive's jvp "
                             "rule mixed them up)");
    primals_out.push_back(*pe.pvals_out[i].value);
  }
  return {std::move(primals_out), std::move(pe.jaxpr)};
}

XPR_FUNC Arrays transpose_linear(const ClosedJaxpr& linear, std::span<const Cotangent> cts) {
  std::vector<LinearArg> args;
  args.reserve(linear.jaxpr.invars.size());
  for (const Var& v : linear.jaxpr.invars) args.emplace_back(UndefinedPrimal{v.aval()});
  KeepAsConstvars keep(linear.consts);  // residuals stay constvars under make_jaxpr
  Cotangents in_cts = backward_pass(linear.jaxpr, linear.consts, args, cts);
  Arrays out;
  out.reserve(in_cts.size());
  for (std::size_t i = 0; i < in_cts.size(); ++i)
    out.push_back(instantiate_zeros(in_cts[i], linear.jaxpr.invars[i].aval()));
  return out;
}

XPR_FUNC ClosedJaxpr linear_transpose_flat(const FlatFunction& f,
                                           std::span<const ShapedArray> in_avals) {
  std::vector<PartialVal> pvals;
  pvals.reserve(in_avals.size());
  for (const ShapedArray& a : in_avals) pvals.push_back(PartialVal::unknown(a));
  PartialEvalResult pe = partial_eval_flat(f, pvals, {true}, "linear_transpose");
  bool all_float = true, all_int = true;
  std::string in_str = "(", out_str = "(";
  auto note = [&](std::string& str, DType d) {
    all_float = all_float && core::is_floating(d);
    all_int = all_int && !core::is_floating(d) && d != DType::bool_;
    str += (str.size() > 1 ? ", " : "") + std::string(core::name(d));
  };
  for (const ShapedArray& a : in_avals) note(in_str, a.dtype);
  for (const PartialVal& p : pe.pvals_out) note(out_str, p.aval.dtype);
  if (!all_float && !all_int)
    throw core::type_error(
        "linear_transpose only supports [float] -> [float] and integer -> "
        "integer functions, but got " +
        in_str + ") -> " + out_str + ")");
  return std::move(pe.jaxpr);
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
