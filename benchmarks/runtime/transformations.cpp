// Overheads of the runtime tier's interpreters, each against plain eager evaluation in the same
// run: jvp (primal + tangent) against one eager evaluation, vmap of a per-example function
// against the same function applied eagerly to the whole batch, and make_jaxpr's cost per
// equation. benchmarks/run.sh prints the ratios; docs/benchmarks.md records them.
#include <tuple>

#include <benchmark/benchmark.h>

#include "xpr/xpr.hpp"

namespace {

// A small elementwise program of 8 primitives.
auto f = [](const auto& x) { return xpr::sin(x) * x + xpr::exp(x * 0.5) - xpr::log1p(x * x); };

template <int N>
void BM_eager(benchmark::State& s) {
  xpr::Array x = xpr::linspace(0.1, 1.0, N);
  for (auto _ : s) benchmark::DoNotOptimize(f(x));
}
template <int N>
void BM_jvp(benchmark::State& s) {
  xpr::Array x = xpr::linspace(0.1, 1.0, N), t = xpr::ones({N});
  for (auto _ : s) benchmark::DoNotOptimize(xpr::jvp(f, std::tuple{x}, std::tuple{t}));
}
// vmap over N examples of rank 0 against eager on the (N,) array.
template <int N>
void BM_vmap(benchmark::State& s) {
  xpr::Array x = xpr::linspace(0.1, 1.0, N);
  auto vf = xpr::vmap([](const xpr::Array& e) { return f(e); });
  for (auto _ : s) benchmark::DoNotOptimize(vf(x));
}
// make_jaxpr of a chain of N equations; the time per equation is reported as a counter.
template <int N>
void BM_make_jaxpr_chain(benchmark::State& s) {
  auto chain = [](const xpr::Array& x) {
    xpr::Array y = x;
    for (int i = 0; i < N / 2; ++i) y = xpr::sin(y) * 1.5;
    return y;
  };
  for (auto _ : s) benchmark::DoNotOptimize(xpr::make_jaxpr(chain)(1.0));
  s.counters["equations"] = N;  // ratios.py divides the time by this
}

BENCHMARK(BM_eager<1>);
BENCHMARK(BM_jvp<1>);
BENCHMARK(BM_eager<1000>);
BENCHMARK(BM_jvp<1000>);
BENCHMARK(BM_vmap<1000>);
BENCHMARK(BM_eager<100000>);
BENCHMARK(BM_jvp<100000>);
BENCHMARK(BM_vmap<100000>);
BENCHMARK(BM_make_jaxpr_chain<1000>);

}  // namespace

BENCHMARK_MAIN();
