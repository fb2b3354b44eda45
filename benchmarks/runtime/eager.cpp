// Eager primitives against hand-written xsimd loops on 1M elements (f64 and f32), and the eager
// dispatch cost of one primitive on rank-0 arrays. Run through benchmarks/run_eager.sh, which
// prints the ratios; the figures are in docs/benchmarks.md.
#include <cstddef>
#include <vector>

#include <benchmark/benchmark.h>
#include <xsimd/xsimd.hpp>

#include "xpr/xpr.hpp"

namespace {

constexpr std::size_t n = 1 << 20;

template <class T>
xpr::Array input(T lo) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = lo + static_cast<T>(i % 1000) * T(0.001);
  return xpr::array(v);
}

// Hand-written baselines: what a careful person writes with xsimd into an aligned output (n is a
// multiple of every batch width, so there is no tail).
template <class T, class F>
void hand_unary(const T* in, T* out, F f) {
  using B = xsimd::batch<T>;
  static_assert(n % B::size == 0);
  for (std::size_t i = 0; i < n; i += B::size) f(B::load_unaligned(in + i)).store_aligned(out + i);
}
template <class T, class F>
void hand_binary(const T* a, const T* b, T* out, F f) {
  using B = xsimd::batch<T>;
  static_assert(n % B::size == 0);
  for (std::size_t i = 0; i < n; i += B::size)
    f(B::load_unaligned(a + i), B::load_unaligned(b + i)).store_aligned(out + i);
}

template <class T>
void BM_hand_sin(benchmark::State& s) {
  xpr::Array x = input<T>(T(0.5));
  std::vector<T, xsimd::aligned_allocator<T>> out(n);
  for (auto _ : s) {
    hand_unary(x.data<T>(), out.data(), [](auto v) { return xsimd::sin(v); });
    benchmark::DoNotOptimize(out.data());
  }
}
template <class T>
void BM_xpr_sin(benchmark::State& s) {
  xpr::Array x = input<T>(T(0.5));
  for (auto _ : s) benchmark::DoNotOptimize(xpr::sin(x));
}
template <class T>
void BM_hand_exp(benchmark::State& s) {
  xpr::Array x = input<T>(T(0.5));
  std::vector<T, xsimd::aligned_allocator<T>> out(n);
  for (auto _ : s) {
    hand_unary(x.data<T>(), out.data(), [](auto v) { return xsimd::exp(v); });
    benchmark::DoNotOptimize(out.data());
  }
}
template <class T>
void BM_xpr_exp(benchmark::State& s) {
  xpr::Array x = input<T>(T(0.5));
  for (auto _ : s) benchmark::DoNotOptimize(xpr::exp(x));
}
template <class T>
void BM_hand_mul(benchmark::State& s) {
  xpr::Array x = input<T>(T(0.5)), y = input<T>(T(1.5));
  std::vector<T, xsimd::aligned_allocator<T>> out(n);
  for (auto _ : s) {
    hand_binary(x.data<T>(), y.data<T>(), out.data(), [](auto a, auto b) { return a * b; });
    benchmark::DoNotOptimize(out.data());
  }
}
template <class T>
void BM_xpr_mul(benchmark::State& s) {
  xpr::Array x = input<T>(T(0.5)), y = input<T>(T(1.5));
  for (auto _ : s) benchmark::DoNotOptimize(x * y);
}
template <class T>
void BM_hand_add(benchmark::State& s) {
  xpr::Array x = input<T>(T(0.5)), y = input<T>(T(1.5));
  std::vector<T, xsimd::aligned_allocator<T>> out(n);
  for (auto _ : s) {
    hand_binary(x.data<T>(), y.data<T>(), out.data(), [](auto a, auto b) { return a + b; });
    benchmark::DoNotOptimize(out.data());
  }
}
template <class T>
void BM_xpr_add(benchmark::State& s) {
  xpr::Array x = input<T>(T(0.5)), y = input<T>(T(1.5));
  for (auto _ : s) benchmark::DoNotOptimize(x + y);
}

// Dispatch: one primitive on rank-0 arrays, against the same arithmetic on doubles.
void BM_dispatch_rank0_mul(benchmark::State& s) {
  xpr::Array x(1.5), y(2.5);
  for (auto _ : s) benchmark::DoNotOptimize(x * y);
}
void BM_dispatch_rank0_sin(benchmark::State& s) {
  xpr::Array x(1.5);
  for (auto _ : s) benchmark::DoNotOptimize(xpr::sin(x));
}

BENCHMARK(BM_hand_sin<double>);
BENCHMARK(BM_xpr_sin<double>);
BENCHMARK(BM_hand_sin<float>);
BENCHMARK(BM_xpr_sin<float>);
BENCHMARK(BM_hand_exp<double>);
BENCHMARK(BM_xpr_exp<double>);
BENCHMARK(BM_hand_exp<float>);
BENCHMARK(BM_xpr_exp<float>);
BENCHMARK(BM_hand_mul<double>);
BENCHMARK(BM_xpr_mul<double>);
BENCHMARK(BM_hand_mul<float>);
BENCHMARK(BM_xpr_mul<float>);
BENCHMARK(BM_hand_add<double>);
BENCHMARK(BM_xpr_add<double>);
BENCHMARK(BM_hand_add<float>);
BENCHMARK(BM_xpr_add<float>);
BENCHMARK(BM_dispatch_rank0_mul);
BENCHMARK(BM_dispatch_rank0_sin);

}  // namespace

BENCHMARK_MAIN();
