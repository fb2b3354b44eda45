// SPDX-License-Identifier: MIT
// Shared pieces of the compile-time tier benchmarks (benchmarks/ct/w*.cpp): aligned inputs, a
// check that every contender computes what the hand-written scalar loop computes, and the
// naming scheme `w1/f64/hand_xsimd` that benchmarks/ct_table.py turns into the table of
// docs/benchmarks.md. Peers (Ceres, ADOL-C, Boost.Math autodiff) are compiled in only when
// CMake found them (XPR_BENCH_CERES, XPR_BENCH_ADOLC, XPR_BENCH_BOOST_AUTODIFF).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <xsimd/xsimd.hpp>

namespace bench {

template <class T>
using Vec = std::vector<T, xsimd::aligned_allocator<T>>;

template <class T>
constexpr const char* dtype_name = sizeof(T) == 8 ? "f64" : "f32";

/// A deterministic input in [lo, hi) with a period that is not a multiple of any batch width.
template <class T>
Vec<T> input(std::size_t n, double lo, double hi, std::size_t salt) {
  Vec<T> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t k = (i * 7919 + salt * 104729) % 1009;
    v[i] = static_cast<T>(lo + (hi - lo) * static_cast<double>(k) / 1009.0);
  }
  return v;
}

/// `v`, hidden from the optimizer (a size the code must treat as known only at run time).
inline std::size_t opaque(std::size_t v) {
  benchmark::DoNotOptimize(v);
  return v;
}

/// The tolerance of a comparison between two evaluation orders (SIMD libm vs glibc, AD vs hand).
template <class T>
constexpr double tolerance = sizeof(T) == 8 ? 1e-9 : 2e-4;

/// Registers `<workload>/<dtype>/<contender>`. Before timing, the outputs are filled with NaN,
/// `run()` computes them once, and they are checked against `reference` (the hand scalar loop),
/// element `i` only when `i % period < prefix` (contenders that run on a prefix of the points).
/// `points` per iteration are recorded so that the table can show ns per point.
template <class T>
void add(const std::string& workload, const std::string& contender, std::size_t points,
         std::function<void()> run, std::function<std::vector<Vec<T>*>()> outputs,
         std::function<std::vector<Vec<T>*>()> reference, double tol = tolerance<T>,
         std::size_t period = 1, std::size_t prefix = 1) {
  const std::string name = workload + "/" + dtype_name<T> + "/" + contender;
  benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& s) {
    for (Vec<T>* o : outputs())
      std::fill(o->begin(), o->end(), std::numeric_limits<T>::quiet_NaN());
    run();
    const auto got = outputs();
    const auto want = reference();
    for (std::size_t k = 0; k < got.size(); ++k) {
      double d = 0;
      for (std::size_t i = 0; i < got[k]->size(); ++i) {
        if (i % period >= prefix) continue;
        const double r = static_cast<double>((*want[k])[i]);
        const double e =
            std::abs(static_cast<double>((*got[k])[i]) - r) / std::max(1.0, std::abs(r));
        if (!(e <= d)) d = e;  // NaN counts as the largest difference
      }
      if (!(d <= tol)) {
        const std::string msg = "output " + std::to_string(k) +
                                " differs from the hand scalar loop by " + std::to_string(d);
        // Not SkipWithError: Google Benchmark 1.7.1 aborts when it aggregates skipped repetitions.
        std::fprintf(stderr, "%s: %s\n", name.c_str(), msg.c_str());
        std::abort();
      }
    }
    for (auto _ : s) {
      run();
      benchmark::ClobberMemory();
    }
    s.counters["points"] = static_cast<double>(points);
    s.SetItemsProcessed(static_cast<std::int64_t>(s.iterations() * points));
  })->Unit(benchmark::kMillisecond);
}

}  // namespace bench
