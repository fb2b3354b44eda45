// SPDX-License-Identifier: MIT
// W2: gradient of the extended Rosenbrock function (the chained form of
// examples/ct_rosenbrock.cpp, sum of 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2), f64 and f32, over a
// batch of independent points in SoA layout (coordinate i of every point is one contiguous
// array): xpr::ct::vmap(grad(rosenbrock)) against hand-written gradient code (scalar per point,
// and xsimd over W points at a time), and the peers CMake found. Included by w2_n16.cpp and
// w2_n64.cpp: one process per n, because ADOL-C's tapeless direction count is global and its
// memory pool breaks when the count changes after adoubles were allocated.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <xpr/ct/ct.hpp>

#include "benchmarks/ct/common.hpp"
#include "benchmarks/ct/peers.hpp"

namespace w2 {

constexpr std::size_t points = 4096;  // 4096 x 64 x 8 bytes = 2 MiB per array: fits in L3

constexpr auto rosenbrock = [](const auto& x) {
  decltype(x[0] * x[0]) s = 0;
  for (std::size_t i = 0; i + 1 < x.size(); ++i)
    s += 100 * xpr::square(x[i + 1] - x[i] * x[i]) + xpr::square(1 - x[i]);
  return s;
};

template <class T, std::size_t N>
struct Data {
  bench::Vec<T> x = bench::input<T>(N * points, -1.5, 1.5, N);  // x[i * points + p]
  bench::Vec<T> g = bench::Vec<T>(N * points);
  // The hand-written loops take the number of points (the SoA stride) at run time, as a
  // routine over a batch of points does and as vmap does: a compile-time stride would give them
  // constant address offsets that no library call over run-time arrays can have.
  std::size_t np = bench::opaque(points);
  std::vector<bench::Vec<T>*> outs() { return {&g}; }
};

// Hand-written: with t[i] = x[i+1] - x[i]^2,
//   g[i] = 200 t[i-1] (i > 0)  - 400 x[i] t[i] - 2 (1 - x[i]) (i < n-1).
template <std::size_t N, class V>
[[gnu::always_inline]] inline void rosenbrock_grad(const V* x, V* g) {
  V prev(0);
  for (std::size_t i = 0; i + 1 < N; ++i) {
    const V t = x[i + 1] - x[i] * x[i];
    g[i] = prev - V(400) * x[i] * t - V(2) * (V(1) - x[i]);
    prev = V(200) * t;
  }
  g[N - 1] = prev;
}

template <class T, std::size_t N>
void hand_scalar(Data<T, N>& d) {
  const std::size_t np = d.np;
  for (std::size_t p = 0; p < np; ++p) {
    T x[N], g[N];
    for (std::size_t i = 0; i < N; ++i) x[i] = d.x[i * np + p];
    rosenbrock_grad<N>(x, g);
    for (std::size_t i = 0; i < N; ++i) d.g[i * np + p] = g[i];
  }
}

template <class T, std::size_t N>
void hand_xsimd(Data<T, N>& d) {
  using B = xsimd::batch<T>;
  static_assert(points % B::size == 0);
  const std::size_t np = d.np;
  for (std::size_t p = 0; p < np; p += B::size) {
    B x[N], g[N];
    for (std::size_t i = 0; i < N; ++i) x[i] = B::load_aligned(&d.x[i * np + p]);
    rosenbrock_grad<N>(x, g);
    for (std::size_t i = 0; i < N; ++i) g[i].store_aligned(&d.g[i * np + p]);
  }
}

// xpr: vmap of the gradient over the points; the per-point argument std::array<T, N> is mapped
// as a std::array of N coordinate arrays (structure of arrays), the result likewise.
template <class T, std::size_t N>
void xpr_vmap(Data<T, N>& d) {
  std::array<std::span<const T>, N> x;
  std::array<std::span<T>, N> g;
  for (std::size_t i = 0; i < N; ++i) {
    x[i] = std::span<const T>(d.x).subspan(i * points, points);
    g[i] = std::span<T>(d.g).subspan(i * points, points);
  }
  xpr::ct::vmap(xpr::ct::grad(rosenbrock)).into(g, x);
}

// The gradient on W points at once with batches as the scalar type: grad on
// std::array<xsimd::batch<T>, N>, the loop written by hand.
template <class T, std::size_t N>
void xpr_batch(Data<T, N>& d) {
  using B = xsimd::batch<T>;
  const std::size_t np = d.np;
  for (std::size_t p = 0; p < np; p += B::size) {
    std::array<B, N> x;
    for (std::size_t i = 0; i < N; ++i) x[i] = B::load_aligned(&d.x[i * np + p]);
    const std::array<B, N> g = xpr::ct::grad(rosenbrock)(x);
    for (std::size_t i = 0; i < N; ++i) g[i].store_aligned(&d.g[i * np + p]);
  }
}

/// The function for the peers' number types, with the same operations as `rosenbrock`.
template <class R, class V>
V rosenbrock_peer(const V* x, std::size_t n) {
  V s(R(0));
  for (std::size_t i = 0; i + 1 < n; ++i) {
    const V t = x[i + 1] - x[i] * x[i], u = R(1) - x[i];
    s += R(100) * (t * t) + u * u;
  }
  return s;
}

// Slow peers run on a prefix of the points (ns per point is what the table shows).
constexpr std::size_t slow_points = points / 8;

#if XPR_BENCH_CERES
template <class T, std::size_t N>
void ceres_jet(Data<T, N>& d) {
  using J = ceres::Jet<T, N>;
  for (std::size_t p = 0; p < points; ++p) {
    J x[N];
    for (std::size_t i = 0; i < N; ++i) x[i] = J(d.x[i * points + p], static_cast<int>(i));
    const J r = rosenbrock_peer<T>(x, N);
    for (std::size_t i = 0; i < N; ++i) d.g[i * points + p] = r.v[i];
  }
}
#endif

#if XPR_BENCH_ADOLC
template <std::size_t N>
void adolc_tapeless(Data<double, N>& d) {
  for (std::size_t p = 0; p < slow_points; ++p) {
    adtl::adouble x[N];
    for (std::size_t i = 0; i < N; ++i) {
      x[i] = d.x[i * points + p];
      x[i].setADValue(static_cast<unsigned>(i), 1);
    }
    const adtl::adouble r = rosenbrock_peer<double>(x, N);
    for (std::size_t i = 0; i < N; ++i)
      d.g[i * points + p] = r.getADValue(static_cast<unsigned>(i));
  }
}

template <std::size_t N>
void adolc_record() {
  trace_on(static_cast<short>(N), 1);
  adouble x[N];
  double f = 0;
  for (std::size_t i = 0; i < N; ++i) x[i] <<= 0.5;
  adouble r = rosenbrock_peer<double>(x, N);
  r >>= f;
  trace_off();
}

template <std::size_t N>
void adolc_taped(Data<double, N>& d) {
  for (std::size_t p = 0; p < slow_points; ++p) {
    double x[N], g[N], f = 0, u = 1;
    for (std::size_t i = 0; i < N; ++i) x[i] = d.x[i * points + p];
    zos_forward(static_cast<short>(N), 1, N, 1, x, &f);
    fos_reverse(static_cast<short>(N), 1, N, &u, g);
    for (std::size_t i = 0; i < N; ++i) d.g[i * points + p] = g[i];
  }
}
#endif

#if XPR_BENCH_BOOST_AUTODIFF
// Boost.Math autodiff nests one fvar level per variable (2^n coefficients), so a gradient of n
// variables is n first-order forward passes, one seeded coordinate each.
template <class T, std::size_t N>
void boost_autodiff(Data<T, N>& d) {
  namespace ad = boost::math::differentiation;
  using F = ad::autodiff_fvar<T, 1>;
  for (std::size_t p = 0; p < slow_points; ++p) {
    F x[N];
    for (std::size_t i = 0; i < N; ++i) x[i] = F(d.x[i * points + p], false);  // a constant
    for (std::size_t k = 0; k < N; ++k) {
      x[k] = ad::make_fvar<T, 1>(d.x[k * points + p]);
      d.g[k * points + p] = static_cast<T>(rosenbrock_peer<T>(x, N).derivative(1));
      x[k] = F(d.x[k * points + p], false);
    }
  }
}
#endif

template <class T, std::size_t N>
void register_n() {
  auto ref = std::make_shared<Data<T, N>>();
  hand_scalar(*ref);
  auto reference = [ref] { return ref->outs(); };
  auto d = std::make_shared<Data<T, N>>();
  const std::string w = "w2_n" + std::to_string(N);
  auto add = [&](const char* name, void (*run)(Data<T, N>&), std::size_t pts = points) {
    bench::add<T>(
        w, name, pts, [d, run] { run(*d); }, [d] { return d->outs(); }, reference,
        bench::tolerance<T>, points, pts);
  };
  add("hand_scalar", hand_scalar<T, N>);
  add("hand_xsimd", hand_xsimd<T, N>);
  add("xpr", xpr_vmap<T, N>);
  add("xpr_batch", xpr_batch<T, N>);
#if XPR_BENCH_CERES
  add("ceres_jet", ceres_jet<T, N>);
#endif
#if XPR_BENCH_ADOLC
  if constexpr (std::is_same_v<T, double>) {
    add("adolc_tapeless", adolc_tapeless<N>, slow_points);
    adolc_record<N>();
    add("adolc_taped", adolc_taped<N>, slow_points);
  }
#endif
#if XPR_BENCH_BOOST_AUTODIFF
  add("boost_autodiff", boost_autodiff<T, N>, slow_points);
#endif
}

/// The whole benchmark for one n: f64 and f32.
template <std::size_t N>
int w2_main(int argc, char** argv) {
#if XPR_BENCH_ADOLC
  adtl::setNumDir(N);
#endif
  register_n<double, N>();
  register_n<float, N>();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace w2
