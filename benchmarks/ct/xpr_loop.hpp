// SPDX-License-Identifier: MIT
// The xpr column of the compile-time tier benchmarks: a compiled function mapped over
// contiguous arrays, W lanes at a time (xsimd batches) with the tail on scalars.
#pragma once

#include <cstddef>
#include <span>
#include <tuple>
#include <utility>
#include <xpr/ct/ct.hpp>

#include <xsimd/xsimd.hpp>

namespace bench {

/// `g` over arrays: outs[k][i] = g(ins[0][i], ins[1][i], ...)'s k-th flat result, through the
/// flat entry point `compiled_t<G, S...>::run(in, out)`.
template <class G, class T, class... Outs, class... Ins>
void xpr_into(G, std::tuple<Outs...> outs, std::span<const T> first, Ins... rest) {
  using B = xsimd::batch<T>;
  constexpr std::size_t ni = 1 + sizeof...(Ins), no = sizeof...(Outs);
  using CB = xpr::ct::compiled_t<G, decltype((void)sizeof(Ins), B{})..., B>;
  using CS = xpr::ct::compiled_t<G, decltype((void)sizeof(Ins), T{})..., T>;
  static_assert(CB::num_ins == ni && CB::num_outs == no);
  const std::size_t n = first.size();
  const T* in[ni] = {first.data(), rest.data()...};
  T* out[no];
  std::apply(
      [&](auto... o) {
        std::size_t k = 0;
        ((out[k++] = o.data()), ...);
      },
      outs);
  std::size_t i = 0;
  for (; i + B::size <= n; i += B::size) {
    B bi[ni], bo[no];
    for (std::size_t k = 0; k < ni; ++k) bi[k] = B::load_unaligned(in[k] + i);
    CB::run(bi, bo);
    for (std::size_t k = 0; k < no; ++k) bo[k].store_unaligned(out[k] + i);
  }
  for (; i < n; ++i) {
    T si[ni], so[no];
    for (std::size_t k = 0; k < ni; ++k) si[k] = in[k][i];
    CS::run(si, so);
    for (std::size_t k = 0; k < no; ++k) out[k][i] = so[k];
  }
}

}  // namespace bench
