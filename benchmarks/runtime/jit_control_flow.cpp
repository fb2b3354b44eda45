// Control flow in jitted code (issue 14, item 6): a Newton iteration (`while_loop`) for sqrt(a),
// an RK4 integration (`fori_loop`, a scan) of 1000 steps, and a finite-element assembly
// (`fori_loop` of scatter-adds), each jitted (native code), interpreted (the same jaxpr through
// `eval_jaxpr`, what jit ran before control flow was lowered) and hand-written in C++, in the same
// run. Figures: docs/benchmarks.md.
#include <cmath>
#include <vector>

#include <benchmark/benchmark.h>

#include "xpr/xpr.hpp"

namespace {

using xpr::Array;

Array newton_sqrt(Array a) {
  return xpr::while_loop([&](const Array& x) { return xpr::abs(x * x - a) > 1e-14 * a; },
                         [&](const Array& x) { return 0.5 * (x + a / x); }, a);
}

double newton_sqrt_hand(double a) {
  double x = a;
  while (std::abs(x * x - a) > 1e-14 * a) x = 0.5 * (x + a / x);
  return x;
}

Array rk4(Array w, Array y0) {
  using S = std::pair<Array, Array>;
  const double h = 0.001;
  auto rhs = [&](const Array& y, const Array& v) { return S{v, -w * w * y}; };
  auto body = [&](Array, S s) {
    auto [y, v] = s;
    auto [k1y, k1v] = rhs(y, v);
    auto [k2y, k2v] = rhs(y + 0.5 * h * k1y, v + 0.5 * h * k1v);
    auto [k3y, k3v] = rhs(y + 0.5 * h * k2y, v + 0.5 * h * k2v);
    auto [k4y, k4v] = rhs(y + h * k3y, v + h * k3v);
    return S{y + h / 6.0 * (k1y + 2.0 * k2y + 2.0 * k3y + k4y),
             v + h / 6.0 * (k1v + 2.0 * k2v + 2.0 * k3v + k4v)};
  };
  return xpr::fori_loop(0, 1000, body, S{y0, Array(0.0)}).first;
}

double rk4_hand(double w, double y) {
  const double h = 0.001;
  double v = 0;
  for (int i = 0; i < 1000; ++i) {
    double k1y = v, k1v = -w * w * y;
    double k2y = v + 0.5 * h * k1v, k2v = -w * w * (y + 0.5 * h * k1y);
    double k3y = v + 0.5 * h * k2v, k3v = -w * w * (y + 0.5 * h * k2y);
    double k4y = v + h * k3v, k4v = -w * w * (y + h * k3y);
    y = y + h / 6.0 * (k1y + 2.0 * k2y + 2.0 * k3y + k4y);
    v = v + h / 6.0 * (k1v + 2.0 * k2v + 2.0 * k3v + k4v);
  }
  return y;
}

constexpr int nodes = 64;

Array assemble(Array k) {
  auto body = [&](Array e, Array K) {
    Array i0 = e * nodes + e;
    Array at = xpr::stack({i0, i0 + 1, i0 + nodes, i0 + nodes + 1});
    Array ke = k[e];
    return K.at(at).add(xpr::stack({ke, -ke, -ke, ke}));
  };
  return xpr::fori_loop(0, nodes - 1, body, xpr::zeros({nodes * nodes}));
}

std::vector<double> assemble_hand(const std::vector<double>& k) {
  std::vector<double> K(nodes * nodes, 0.0);
  for (int e = 0; e + 1 < nodes; ++e) {
    const int i0 = e * nodes + e;
    K[i0] += k[e];
    K[i0 + 1] -= k[e];
    K[i0 + nodes] -= k[e];
    K[i0 + nodes + 1] += k[e];
  }
  return K;
}

template <class F>
auto backend(F f, xpr::JitBackend b) {
  return xpr::jit(f, {.backend = b});
}

void BM_newton_jit(benchmark::State& s) {
  auto f = backend(newton_sqrt, xpr::JitBackend::compiled);
  for (auto _ : s) benchmark::DoNotOptimize(f(2.0));
}
void BM_newton_interpreted(benchmark::State& s) {
  auto f = backend(newton_sqrt, xpr::JitBackend::interpreter);
  for (auto _ : s) benchmark::DoNotOptimize(f(2.0));
}
void BM_newton_hand(benchmark::State& s) {
  double a = 2.0;
  for (auto _ : s) {
    benchmark::DoNotOptimize(a);
    benchmark::DoNotOptimize(newton_sqrt_hand(a));
  }
}
void BM_rk4_jit(benchmark::State& s) {
  auto f = backend(rk4, xpr::JitBackend::compiled);
  for (auto _ : s) benchmark::DoNotOptimize(f(2.0, 1.0));
}
void BM_rk4_interpreted(benchmark::State& s) {
  auto f = backend(rk4, xpr::JitBackend::interpreter);
  for (auto _ : s) benchmark::DoNotOptimize(f(2.0, 1.0));
}
void BM_rk4_hand(benchmark::State& s) {
  double w = 2.0;
  for (auto _ : s) {
    benchmark::DoNotOptimize(w);
    benchmark::DoNotOptimize(rk4_hand(w, 1.0));
  }
}
Array stiffness() { return xpr::linspace(1.0, 2.0, nodes - 1); }
void BM_assembly_jit(benchmark::State& s) {
  auto f = backend(assemble, xpr::JitBackend::compiled);
  Array k = stiffness();
  for (auto _ : s) benchmark::DoNotOptimize(f(k));
}
void BM_assembly_interpreted(benchmark::State& s) {
  auto f = backend(assemble, xpr::JitBackend::interpreter);
  Array k = stiffness();
  for (auto _ : s) benchmark::DoNotOptimize(f(k));
}
void BM_assembly_hand(benchmark::State& s) {
  std::vector<double> k(nodes - 1);
  for (int i = 0; i + 1 < nodes; ++i) k[i] = 1.0 + i / double(nodes - 2);
  for (auto _ : s) benchmark::DoNotOptimize(assemble_hand(k));
}

BENCHMARK(BM_newton_hand);
BENCHMARK(BM_newton_jit);
BENCHMARK(BM_newton_interpreted);
BENCHMARK(BM_rk4_hand);
BENCHMARK(BM_rk4_jit);
BENCHMARK(BM_rk4_interpreted);
BENCHMARK(BM_assembly_hand);
BENCHMARK(BM_assembly_jit);
BENCHMARK(BM_assembly_interpreted);

}  // namespace

BENCHMARK_MAIN();
