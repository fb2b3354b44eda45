// SPDX-License-Identifier: MIT
// Private kernel helper of the data-movement primitives (slice, pad, dynamic_slice,
// dynamic_update_slice, dot_general's operand layouts): copy an n-dimensional box between two
// strided views, with the innermost dimension copied as a run when both sides are contiguous.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace xpr::rt::detail {

/// dst[i·dst_strides] = src[i·src_strides] for every index i of `shape` (strides in elements).
template <class T>
void strided_box_copy(const T* src, std::span<const std::int64_t> src_strides, T* dst,
                      std::span<const std::int64_t> dst_strides,
                      std::span<const std::int64_t> shape) {
  const std::size_t rank = shape.size();
  for (std::int64_t d : shape)
    if (d == 0) return;
  if (rank == 0) {
    *dst = *src;
    return;
  }
  const std::int64_t n = shape[rank - 1], ss = src_strides[rank - 1], ds = dst_strides[rank - 1];
  auto copy_row = [&](const T* s, T* d) {
    if (ss == 1 && ds == 1) {
      std::copy(s, s + n, d);
    } else {
      for (std::int64_t i = 0; i < n; ++i) d[i * ds] = s[i * ss];
    }
  };
  // An odometer over the outer dimensions; the offsets move with it instead of being recomputed.
  std::vector<std::int64_t> idx(rank - 1, 0);
  std::int64_t so = 0, doff = 0;
  while (true) {
    copy_row(src + so, dst + doff);
    for (std::size_t k = rank - 1;;) {
      if (k == 0) return;  // every outer dimension wrapped around: done
      --k;
      if (++idx[k] < shape[k]) {
        so += src_strides[k];
        doff += dst_strides[k];
        break;
      }
      so -= src_strides[k] * (shape[k] - 1);
      doff -= dst_strides[k] * (shape[k] - 1);
      idx[k] = 0;
    }
  }
}

/// Copies `src` (row-major, shape `shape`) into `dst` laid out with its axes permuted: output axis
/// i is input axis perm[i] (the layout `transpose[permutation=perm]` produces).
template <class T>
void permute_copy(const T* src, std::span<const std::int64_t> shape,
                  std::span<const std::int64_t> perm, T* dst) {
  const std::size_t rank = shape.size();
  std::vector<std::int64_t> in_strides(rank, 1), out_shape(rank), src_strides(rank),
      dst_strides(rank, 1);
  for (std::size_t i = rank; i-- > 1;) in_strides[i - 1] = in_strides[i] * shape[i];
  for (std::size_t i = 0; i < rank; ++i) {
    out_shape[i] = shape[static_cast<std::size_t>(perm[i])];
    src_strides[i] = in_strides[static_cast<std::size_t>(perm[i])];
  }
  for (std::size_t i = rank; i-- > 1;) dst_strides[i - 1] = dst_strides[i] * out_shape[i];
  strided_box_copy(src, std::span<const std::int64_t>(src_strides), dst,
                   std::span<const std::int64_t>(dst_strides),
                   std::span<const std::int64_t>(out_shape));
}

}  // namespace xpr::rt::detail
