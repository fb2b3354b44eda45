// SPDX-License-Identifier: MIT
// The forward-mode, batching and staging transformations on flat lists of arrays: jvp_flat,
// vmap_flat, make_jaxpr_flat. Each pushes its interpreter, traces the function and reads the
// results off the output tracers. The pytree-level API (xpr::jvp, xpr::vmap, xpr::make_jaxpr)
// in api_transformations.hpp flattens arguments and results around these.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "xpr/core/error.hpp"
#include "xpr/core/shape.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/batching.hpp"
#include "xpr/rt/interp/batch.hpp"
#include "xpr/rt/interp/jaxpr_trace.hpp"
#include "xpr/rt/interp/jvp.hpp"
#include "xpr/rt/jaxpr.hpp"
#include "xpr/rt/trace.hpp"
#include "xpr/rt/zeros.hpp"

namespace xpr::rt {

/// A function of a flat list of arrays to a flat list of arrays.
using FlatFunction = std::function<Arrays(std::span<const Array>)>;

/// Forward mode with symbolic zeros: the outputs of `f` at `primals` and their directional
/// derivatives along `tangents`, where an empty tangent (in or out) is a known zero. Transformations
/// built on jvp (linearize, vjp) use this form so that zeros are never materialized.
inline std::pair<Arrays, Tangents> jvp_flat_symbolic(const FlatFunction& f,
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
    if (tangents[i] && !primals[i].aval().same_type(tangents[i]->aval()))
      throw core::type_error("jvp: primal and tangent arguments must have equal shapes and "
                             "dtypes: expected " + primals[i].aval().str() + " for argument " +
                             std::to_string(i) + ", found tangent " + tangents[i]->aval().str());
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

/// Forward mode: the outputs of `f` at `primals` and their directional derivatives along
/// `tangents`. Output tangents that are symbolically zero come back as arrays of zeros.
inline std::pair<Arrays, Arrays> jvp_flat(const FlatFunction& f, std::span<const Array> primals,
                                          std::span<const Array> tangents) {
  Tangents in(tangents.begin(), tangents.end());
  auto [primals_out, tangents_out] = jvp_flat_symbolic(f, primals, in);
  Arrays instantiated;
  instantiated.reserve(tangents_out.size());
  for (std::size_t i = 0; i < tangents_out.size(); ++i)
    instantiated.push_back(tangents_out[i] ? std::move(*tangents_out[i])
                                           : zeros_like_aval(primals_out[i].aval()));
  return {std::move(primals_out), std::move(instantiated)};
}

/// Batching: maps `f` over axis `in_axes[i]` of argument `i` (`std::nullopt` = not mapped) and
/// stacks the results along `out_axes[j]` (`std::nullopt`: output `j` must not depend on the
/// mapped axis; a single entry applies to every output). `out_axes` is read after `f` has run,
/// so `f` may fill it in once it knows its outputs.
inline Arrays vmap_flat(const FlatFunction& f, std::span<const Array> args,
                        std::span<const BatchDim> in_axes, const BatchDims& out_axes) {
  if (args.size() != in_axes.size())
    throw core::type_error("vmap: in_axes must have one entry per argument: expected " +
                           std::to_string(args.size()) + ", found " +
                           std::to_string(in_axes.size()));
  std::optional<std::int64_t> axis_size;
  std::vector<BatchDim> dims(in_axes.begin(), in_axes.end());
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (!dims[i]) continue;
    dims[i] = static_cast<std::int64_t>(core::canonicalize_axis(*dims[i], args[i].ndim()));
    std::int64_t n = args[i].shape()[static_cast<std::size_t>(*dims[i])];
    if (axis_size && *axis_size != n)
      throw core::shape_error("vmap got inconsistent sizes for the mapped axes: expected " +
                              std::to_string(*axis_size) + " (from an earlier argument), found " +
                              std::to_string(n) + " for argument " + std::to_string(i) +
                              " of shape " + args[i].shape().str());
    axis_size = n;
  }
  if (!axis_size)
    throw core::value_error("vmap must have at least one mapped argument: expected an integer in "
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
                                std::to_string(j) + ": expected an output that does not depend "
                                "on the mapped axis");
      results.push_back(bt.value());
      continue;
    }
    auto rank = bt.value().ndim() + (bt.batch_dim() ? 0 : 1);
    auto to = static_cast<std::int64_t>(core::canonicalize_axis(*want, rank));
    results.push_back(bt.batch_dim() ? moveaxis(bt.value(), *bt.batch_dim(), to)
                                     : broadcast_batch(bt.value(), *axis_size, to));
  }
  return results;
}

/// Staging: the jaxpr of `f` on inputs of the given types. `f` runs once on tracers; every
/// primitive it applies (even on constants) becomes an equation.
inline ClosedJaxpr make_jaxpr_flat(const FlatFunction& f, std::span<const ShapedArray> in_avals) {
  MainScope scope(std::in_place_type<JaxprTrace>, "make_jaxpr");
  DynamicScope dynamic(scope.main());
  JaxprTrace& trace = scope.trace<JaxprTrace>();
  Arrays in;
  in.reserve(in_avals.size());
  for (const ShapedArray& a : in_avals) in.push_back(trace.new_arg(a));
  Arrays out = f(in);
  return trace.build(out);
}

}  // namespace xpr::rt
