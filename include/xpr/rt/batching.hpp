// SPDX-License-Identifier: MIT
// Helpers for batching rules and vmap: moving a batch axis, materializing one for an unbatched
// value, and aligning the operands of an elementwise primitive (JAX's `broadcast_batcher`).
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/core/shape.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/numpy_shape.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/prims/shape.hpp"

namespace xpr::rt {

/// `x` with its axis `from` moved to position `to` (`jnp.moveaxis`); no equation if they agree.
Array moveaxis(const Array& x, std::int64_t from, std::int64_t to);

/// `x` with a new axis of size `n` at position `axis`, every slice equal to `x`.
Array broadcast_batch(const Array& x, std::int64_t n, std::int64_t axis);

/// `x` with its batch axis first; an unbatched `x` gets one of size `n`.
inline Array bdim_at_front(const Array& x, BatchDim bd, std::int64_t n) {
  return bd ? moveaxis(x, *bd, 0) : broadcast_batch(x, n, 0);
}

/// The operands of an elementwise primitive, aligned for a batched application: batched operands
/// get their batch axis first and the full per-example shape; unbatched rank-0 operands stay as
/// they are (a rank-0 operand stands for any shape); other unbatched operands are broadcast. The
/// result's batch axis is 0.
Arrays batch_elementwise_operands(std::span<const Array> args, std::span<const BatchDim> dims,
                                  std::int64_t n);

/// The batching rule of an elementwise primitive (JAX's `broadcast_batcher`): operands aligned
/// as above, the primitive applied once, the result batched along axis 0 — or along the common
/// batch axis when every batched operand already has it and the same shape.
std::pair<Arrays, BatchDims> batch_elementwise(const Primitive& prim, std::span<const Array> args,
                                               std::span<const BatchDim> dims, std::int64_t n,
                                               const Params& params);

}  // namespace xpr::rt

#if XPR_DEFINITIONS

namespace xpr::rt {

XPR_FUNC Array moveaxis(const Array& x, std::int64_t from, std::int64_t to) {
  auto rank = x.ndim();
  auto f = core::canonicalize_axis(from, rank), t = core::canonicalize_axis(to, rank);
  if (f == t) return x;
  Axes perm;
  for (std::size_t i = 0; i < rank; ++i)
    if (i != f) perm.push_back(static_cast<std::int64_t>(i));
  perm.insert(perm.begin() + static_cast<std::ptrdiff_t>(t), static_cast<std::int64_t>(f));
  return transpose(x, perm);
}

XPR_FUNC Array broadcast_batch(const Array& x, std::int64_t n, std::int64_t axis) {
  // Built in one pass rather than with vector::insert: GCC 12 at -O1 inlines insert's
  // reallocation path and warns (-Wnull-dereference) about a pointer it cannot see is non-null.
  auto a = static_cast<std::size_t>(axis);
  std::vector<std::int64_t> dims;
  dims.reserve(x.ndim() + 1);
  for (std::size_t i = 0; i <= x.ndim(); ++i) {
    if (i == a) dims.push_back(n);
    if (i < x.ndim()) dims.push_back(x.shape()[i]);
  }
  Axes keep;
  for (std::size_t i = 0; i < x.ndim(); ++i)
    keep.push_back(static_cast<std::int64_t>(i < a ? i : i + 1));
  return broadcast_in_dim(x, Shape(std::move(dims)), keep);
}

XPR_FUNC Arrays batch_elementwise_operands(std::span<const Array> args,
                                           std::span<const BatchDim> dims, std::int64_t n) {
  // The per-example shape: that of any operand of per-example rank > 0.
  Shape example;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::size_t rank = args[i].ndim() - (dims[i] ? 1 : 0);
    if (rank > 0) {
      std::vector<std::int64_t> s(args[i].shape().begin(), args[i].shape().end());
      if (dims[i]) s.erase(s.begin() + *dims[i]);
      example = Shape(std::move(s));
      break;
    }
  }
  std::vector<std::int64_t> full{n};
  full.insert(full.end(), example.begin(), example.end());
  Shape full_shape(std::move(full));
  Arrays out;
  out.reserve(args.size());
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (!dims[i]) {
      out.push_back(args[i].ndim() == 0 ? args[i] : broadcast_batch(args[i], n, 0));
      continue;
    }
    Array x = moveaxis(args[i], *dims[i], 0);
    if (x.shape() != full_shape)
      x = broadcast_in_dim(x, full_shape, Axes{0});  // per-example rank 0
    out.push_back(std::move(x));
  }
  return out;
}

XPR_FUNC std::pair<Arrays, BatchDims> batch_elementwise(const Primitive& prim,
                                                        std::span<const Array> args,
                                                        std::span<const BatchDim> dims,
                                                        std::int64_t n, const Params& params) {
  const Array* first = nullptr;
  BatchDim common;
  bool aligned = true;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (!dims[i]) {
      aligned = aligned && args[i].ndim() == 0;
      continue;
    }
    if (!first) {
      first = &args[i];
      common = dims[i];
    } else {
      aligned = aligned && dims[i] == common && args[i].shape() == first->shape();
    }
  }
  if (!first) {  // nothing batched: apply as is
    Arrays out = rt::bind(prim, args, params);
    return {std::move(out), BatchDims(out.size())};
  }
  if (aligned) {
    Arrays out = rt::bind(prim, args, params);
    return {std::move(out), BatchDims(out.size(), common)};
  }
  Arrays out = rt::bind(prim, batch_elementwise_operands(args, dims, n), params);
  return {std::move(out), BatchDims(out.size(), 0)};
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
