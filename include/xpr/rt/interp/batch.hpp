// SPDX-License-Identifier: MIT
// The batching interpreter (vmap): a tracer carries a value and the axis along which it is
// batched (or `not_mapped`); each primitive is processed by its `batch` rule. Autodidax Part 1.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <utility>

#include "xpr/core/config.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/trace.hpp"

namespace xpr::rt {

/// A value under `vmap`: the stacked values and where the batch axis is.
class BatchTracer final : public Tracer {
 public:
  BatchTracer(std::shared_ptr<MainTrace> main, Array value, BatchDim batch_dim)
      : Tracer(std::move(main), unbatched_aval(detail::aval_of(value), batch_dim)),
        value_(std::move(value)),
        batch_dim_(batch_dim) {}
  const Array& value() const noexcept { return value_; }
  BatchDim batch_dim() const noexcept { return batch_dim_; }
  /// A value that is not batched is just its value.
  Array full_lower(const Array& self) const override {
    return batch_dim_ ? self : rt::full_lower(value_);
  }

 private:
  XPR_MEMBER static ShapedArray unbatched_aval(ShapedArray aval, BatchDim bd);
  Array value_;
  BatchDim batch_dim_;
};

class BatchTrace final : public Trace {
 public:
  BatchTrace(MainTrace& main, std::int64_t axis_size) : Trace(main), axis_size_(axis_size) {}
  std::int64_t axis_size() const noexcept { return axis_size_; }

  XPR_MEMBER Array make_tracer(Array value, BatchDim batch_dim);
  Array pure(const Array& value) override { return make_tracer(value, std::nullopt); }
  Array lift(const Array& value) override { return make_tracer(value, std::nullopt); }

  XPR_MEMBER Arrays process_primitive(const Primitive& prim, std::span<const Array> tracers,
                                      const Params& params) override;

 private:
  std::int64_t axis_size_;
};

}  // namespace xpr::rt

#if XPR_DEFINITIONS

namespace xpr::rt {

XPR_FUNC ShapedArray BatchTracer::unbatched_aval(ShapedArray aval, BatchDim bd) {
  if (!bd) return aval;
  std::vector<std::int64_t> dims(aval.shape.begin(), aval.shape.end());
  dims.erase(dims.begin() + *bd);
  aval.shape = Shape(std::move(dims));
  return aval;
}

XPR_FUNC Array BatchTrace::make_tracer(Array value, BatchDim batch_dim) {
  if (batch_dim) {
    auto nd = static_cast<std::int64_t>(value.ndim());
    if (*batch_dim < 0 || *batch_dim >= nd ||
        value.shape()[static_cast<std::size_t>(*batch_dim)] != axis_size_)
      throw core::shape_error("vmap: a batched value must have an axis " +
                              std::to_string(*batch_dim) + " of size " +
                              std::to_string(axis_size_) + ", found shape " + value.shape().str());
  }
  return Array(std::make_shared<const BatchTracer>(shared_main(), std::move(value), batch_dim));
}

XPR_FUNC Arrays BatchTrace::process_primitive(const Primitive& prim, std::span<const Array> tracers,
                                              const Params& params) {
  Arrays values;
  BatchDims dims;
  values.reserve(tracers.size());
  dims.reserve(tracers.size());
  for (const Array& t : tracers) {
    const auto& bt = static_cast<const BatchTracer&>(*t.impl());
    values.push_back(bt.value());
    dims.push_back(bt.batch_dim());
  }
  auto [out, out_dims] = prim.batch(values, dims, axis_size_, params);
  Arrays tracers_out;
  tracers_out.reserve(out.size());
  for (std::size_t i = 0; i < out.size(); ++i)
    tracers_out.push_back(make_tracer(std::move(out[i]), out_dims[i]));
  return tracers_out;
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
