// Jitted elementwise chains (issue 14) against a hand-written xsimd loop and against eager
// evaluation, on 1M and 10M f64; the call overhead of a cached kernel on rank-0 inputs; a STREAM
// scale and a STREAM triad for the memory bandwidth the 1e7-element chains are measured against,
// and the triad on every thread for jitted loops split among threads (workers.hpp). Wall times
// (`UseRealTime`): a split loop's CPU time is spread over threads.
// Every variant allocates its output array per call, as the jitted and eager calls do. Figures:
// docs/benchmarks.md.
#include <cstddef>
#include <cstdlib>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>
#include <xsimd/xsimd.hpp>

#include "xpr/codegen/execute.hpp"
#include "xpr/xpr.hpp"

namespace {

using xpr::Array;

Array input(std::int64_t n) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.5 + static_cast<double>(i % 1000) * 0.001;
  return xpr::array(v);
}

Array chain1(const Array& x) { return xpr::sin(x) * 2.0 - x; }

Array chain10(const Array& x) {
  Array t = xpr::sin(x);   // 1
  t = t * 1.5;             // 2
  t = t + x;               // 3
  t = xpr::abs(t);         // 4
  t = -t;                  // 5
  t = xpr::exp(t);         // 6
  t = t * x;               // 7
  t = t - 0.5;             // 8
  t = xpr::maximum(t, x);  // 9
  return xpr::tanh(t);     // 10
}

template <class F>
Array hand(const Array& x, F f) {
  using B = xsimd::batch<double>;
  xpr::rt::ArrayBuilder out(x.aval());
  const double* in = x.data<double>();
  double* o = out.data<double>();
  const auto n = static_cast<std::size_t>(x.size());
  std::size_t i = 0;
  for (; i + B::size <= n; i += B::size) f(B::load_unaligned(in + i)).store_unaligned(o + i);
  for (; i < n; ++i) o[i] = f(B(in[i])).get(0);
  return std::move(out).finish();
}

auto hand1 = [](auto v) { return xsimd::sin(v) * 2.0 - v; };
auto hand10 = [](auto x) {
  auto t = xsimd::sin(x);
  t = t * 1.5;
  t = t + x;
  t = xsimd::abs(t);
  t = -t;
  t = xsimd::exp(t);
  t = t * x;
  t = t - 0.5;
  t = xsimd::max(t, x);
  return xsimd::tanh(t);
};

void set_bytes(benchmark::State& s, std::int64_t n) {
  s.SetBytesProcessed(static_cast<std::int64_t>(s.iterations()) * n * 16);  // 8 read + 8 written
}

/// The hand-written xsimd loop `f` on s.range(0) elements.
template <class F>
void run_hand(benchmark::State& s, F f) {
  Array x = input(s.range(0));
  for (auto _ : s) benchmark::DoNotOptimize(hand(x, f));
  set_bytes(s, s.range(0));
}
/// `fn`'s jaxpr compiled once, its kernel run per iteration.
void run_jit(benchmark::State& s, Array (*fn)(const Array&)) {
  Array x = input(s.range(0));
  auto k = xpr::codegen::compile(xpr::make_jaxpr(fn)(x).jaxpr);
  std::vector<Array> args{x};
  for (auto _ : s) benchmark::DoNotOptimize(k->run(args));
  set_bytes(s, s.range(0));
}
/// `fn` evaluated eagerly, primitive by primitive.
void run_eager(benchmark::State& s, Array (*fn)(const Array&)) {
  Array x = input(s.range(0));
  for (auto _ : s) benchmark::DoNotOptimize(fn(x));
  set_bytes(s, s.range(0));
}

void BM_hand_chain1(benchmark::State& s) { run_hand(s, hand1); }
void BM_jit_chain1(benchmark::State& s) { run_jit(s, chain1); }
void BM_eager_chain1(benchmark::State& s) { run_eager(s, chain1); }
void BM_hand_chain10(benchmark::State& s) { run_hand(s, hand10); }
void BM_jit_chain10(benchmark::State& s) { run_jit(s, chain10); }
void BM_eager_chain10(benchmark::State& s) { run_eager(s, chain10); }

// A chain with almost no arithmetic, x * 2 + 1 (the call-overhead function below, on 1e7
// elements): bound by memory alone, so it shows what fraction of the bandwidth a generated loop
// reaches, where the chains above also wait on sin, exp and tanh.
Array small(const Array& x);
auto hand_small = [](auto v) { return v * 2.0 + 1.0; };
void BM_hand_axpb(benchmark::State& s) { run_hand(s, hand_small); }
void BM_jit_axpb(benchmark::State& s) { run_jit(s, small); }

// STREAM scale a = s b: one array read and one written per element, as in the chains (16 bytes
// counted per element, as STREAM counts them; reported as bytes per second).
void BM_stream_scale(benchmark::State& s) {
  const auto n = static_cast<std::size_t>(s.range(0));
  std::vector<double> a(n), b(n, 1.0);
  for (auto _ : s) {
    double* __restrict pa = a.data();
    const double* __restrict pb = b.data();
    for (std::size_t i = 0; i < n; ++i) pa[i] = 3.0 * pb[i];
    benchmark::DoNotOptimize(a.data());
    benchmark::ClobberMemory();
  }
  s.SetBytesProcessed(static_cast<std::int64_t>(s.iterations()) * s.range(0) * 16);
}

// STREAM triad a = b + s c (24 bytes per element; reported as bytes per second).
void BM_stream_triad(benchmark::State& s) {
  const auto n = static_cast<std::size_t>(s.range(0));
  std::vector<double> a(n), b(n, 1.0), c(n, 2.0);
  for (auto _ : s) {
    double* __restrict pa = a.data();
    const double* __restrict pb = b.data();
    const double* __restrict pc = c.data();
    for (std::size_t i = 0; i < n; ++i) pa[i] = pb[i] + 3.0 * pc[i];
    benchmark::DoNotOptimize(a.data());
    benchmark::ClobberMemory();
  }
  s.SetBytesProcessed(static_cast<std::int64_t>(s.iterations()) * s.range(0) * 24);
}

// The triad on as many threads as jit splits a long loop among (`XPR_NUM_THREADS`, else the
// CPUs; the threads are started per iteration, which costs more than the workers' wake-up): the
// bandwidth of the whole machine, against which chains that run in parts are measured.
void BM_stream_triad_threads(benchmark::State& s) {
  const auto n = static_cast<std::size_t>(s.range(0));
  const std::size_t t = xpr::codegen::detail::jit_threads();
  std::vector<double> a(n), b(n, 1.0), c(n, 2.0);
  auto part = [&](std::size_t k) {
    double* __restrict pa = a.data();
    const double* __restrict pb = b.data();
    const double* __restrict pc = c.data();
    for (std::size_t i = n * k / t, e = n * (k + 1) / t; i < e; ++i) pa[i] = pb[i] + 3.0 * pc[i];
  };
  for (auto _ : s) {
    std::vector<std::thread> threads;
    for (std::size_t k = 1; k < t; ++k) threads.emplace_back(part, k);
    part(0);
    for (std::thread& th : threads) th.join();
    benchmark::DoNotOptimize(a.data());
    benchmark::ClobberMemory();
  }
  s.SetBytesProcessed(static_cast<std::int64_t>(s.iterations()) * s.range(0) * 24);
  s.counters["threads"] = static_cast<double>(t);
}

// Call overhead on rank-0 inputs: x * 2 + 1.
Array small(const Array& x) { return x * 2.0 + 1.0; }
void BM_hand_scalar(benchmark::State& s) {
  double x = 0.5;
  for (auto _ : s) {
    benchmark::DoNotOptimize(x);
    double y = x * 2.0 + 1.0;
    benchmark::DoNotOptimize(y);
  }
}
void BM_jit_scalar_kernel(benchmark::State& s) {
  Array x(0.5);
  auto k = xpr::codegen::compile(xpr::make_jaxpr(small)(x).jaxpr);
  std::vector<Array> args{x};
  for (auto _ : s) benchmark::DoNotOptimize(k->run(args));
}
void BM_jit_scalar_execute(benchmark::State& s) {
  Array x(0.5);
  auto j = xpr::make_jaxpr(small)(x);
  std::vector<Array> args{x};
  for (auto _ : s) benchmark::DoNotOptimize(xpr::codegen::execute(j, args));
}
// What a user writes: the jitted function called on a rank-0 Array (trace and kernel cached).
void BM_jit_scalar_call(benchmark::State& s) {
  Array x(0.5);
  auto f = xpr::jit(small);
  if (f(x).item<double>() != 2.0) std::abort();
  for (auto _ : s) benchmark::DoNotOptimize(f(x));
}
// The same through the interpreter backend (the jaxpr evaluated per call).
void BM_jit_scalar_call_interpreter(benchmark::State& s) {
  Array x(0.5);
  auto f = xpr::jit(small, {.backend = xpr::JitBackend::interpreter});
  for (auto _ : s) benchmark::DoNotOptimize(f(x));
}
void BM_eager_scalar(benchmark::State& s) {
  Array x(0.5);
  for (auto _ : s) benchmark::DoNotOptimize(small(x));
}

}  // namespace

// Wall time: a loop jit splits among threads spends its CPU time on several of them.
void chains(benchmark::internal::Benchmark* b) {
  b->Arg(1 << 20)->Arg(10'000'000)->Unit(benchmark::kMicrosecond)->UseRealTime();
}
void bandwidth(benchmark::internal::Benchmark* b) {
  b->Arg(10'000'000)->Unit(benchmark::kMicrosecond)->UseRealTime();
}
BENCHMARK(BM_hand_chain1)->Apply(chains);
BENCHMARK(BM_jit_chain1)->Apply(chains);
BENCHMARK(BM_eager_chain1)->Apply(chains);
BENCHMARK(BM_hand_chain10)->Apply(chains);
BENCHMARK(BM_jit_chain10)->Apply(chains);
BENCHMARK(BM_eager_chain10)->Apply(chains);
BENCHMARK(BM_hand_axpb)->Apply(bandwidth);
BENCHMARK(BM_jit_axpb)->Apply(bandwidth);
BENCHMARK(BM_stream_scale)->Apply(bandwidth);
BENCHMARK(BM_stream_triad)->Apply(bandwidth);
BENCHMARK(BM_stream_triad_threads)->Apply(bandwidth);
BENCHMARK(BM_hand_scalar);
BENCHMARK(BM_jit_scalar_kernel);
BENCHMARK(BM_jit_scalar_execute);
BENCHMARK(BM_jit_scalar_call);
BENCHMARK(BM_jit_scalar_call_interpreter);
BENCHMARK(BM_eager_scalar);
BENCHMARK_MAIN();
