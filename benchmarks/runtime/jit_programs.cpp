// Jitted programs against hand-written code and the interpreter, in the same run (issue 14):
// the forces (-grad of the energy) of 64 Lennard-Jones particles, written as a new user would
// (vmap of a pair energy over the pairs, gathered with take, and a sum) and written with
// broadcasting only (all pairs at once); the Jacobian (jacfwd) of a 3-equation Newton system; and
// the first-call latency of a small function, tracing included, measured in child processes of
// this program: cold (an empty cache directory) and from the disk cache (a new process on a
// populated directory). Before timing, every jitted result is checked against the hand-written
// one. Figures: docs/benchmarks.md.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>

#include "xpr/xpr.hpp"

#include "ratio_reporter.hpp"

namespace {

using xpr::Array;
using xpr::rt::ArrayBuilder;
using xpr::rt::ShapedArray;

// ---- Lennard-Jones forces on 64 particles ------------------------------------------------------

constexpr std::int64_t particles = 64;

/// A 4 x 4 x 4 lattice of spacing 1.1, each particle nudged so no two pair distances are equal.
std::vector<double> lattice() {
  std::vector<double> p;
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b)
      for (int c = 0; c < 4; ++c) {
        const double k = static_cast<double>(p.size());
        p.push_back(1.1 * a + 0.01 * std::sin(k));
        p.push_back(1.1 * b + 0.01 * std::cos(k));
        p.push_back(1.1 * c + 0.01 * std::sin(2 * k));
      }
  return p;
}

struct Pairs {
  Array i, j;
};
const Pairs& pairs() {
  static const Pairs p = [] {
    std::vector<std::int32_t> i, j;
    for (std::int32_t a = 0; a < particles; ++a)
      for (std::int32_t b = a + 1; b < particles; ++b) {
        i.push_back(a);
        j.push_back(b);
      }
    return Pairs{xpr::array(i), xpr::array(j)};
  }();
  return p;
}

// As a new user writes it: the energy of one pair, vmapped over the pairs, summed.
Array pair_energy(const Array& ri, const Array& rj) {
  Array d = ri - rj;
  Array inv2 = 1.0 / xpr::sum(d * d);
  Array inv6 = inv2 * inv2 * inv2;
  return 4.0 * (inv6 * inv6 - inv6);
}
Array energy_pairs(const Array& pos) {
  const Pairs& p = pairs();
  return xpr::sum(xpr::vmap(pair_energy)(xpr::take(pos, p.i, 0), xpr::take(pos, p.j, 0)));
}
Array forces_pairs(const Array& pos) { return -xpr::grad(energy_pairs)(pos); }

// With broadcasting only: every ordered pair at once. The diagonal's squared distance is made 1
// (adding the identity), where the pair energy 4 (1 - 1) is 0 and d = 0 gives no gradient.
const Array& identity64() {
  static const Array eye = [] {
    std::vector<double> e(particles * particles, 0.0);
    for (std::int64_t k = 0; k < particles; ++k) e[static_cast<std::size_t>(k * particles + k)] = 1;
    return xpr::array(e, xpr::Shape{particles, particles});
  }();
  return eye;
}
Array energy_dense(const Array& pos) {
  Array d = xpr::reshape(pos, {particles, 1, 3}) - xpr::reshape(pos, {1, particles, 3});
  Array inv2 = 1.0 / (xpr::sum(d * d, 2) + identity64());
  Array inv6 = inv2 * inv2 * inv2;
  return 2.0 * xpr::sum(inv6 * inv6 - inv6);  // 4 / 2: each pair counted twice
}
Array forces_dense(const Array& pos) { return -xpr::grad(energy_dense)(pos); }

Array hand_forces(const Array& pos) {
  ArrayBuilder out(pos.aval());
  const double* x = pos.data<double>();
  double* f = out.data<double>();
  std::fill(f, f + particles * 3, 0.0);
  for (std::int64_t a = 0; a < particles; ++a)
    for (std::int64_t b = a + 1; b < particles; ++b) {
      const double dx = x[3 * a] - x[3 * b], dy = x[3 * a + 1] - x[3 * b + 1],
                   dz = x[3 * a + 2] - x[3 * b + 2];
      const double inv2 = 1.0 / (dx * dx + dy * dy + dz * dz);
      const double inv6 = inv2 * inv2 * inv2;
      // -dE/dr2 * 2 d, with E = 4 (r2^-6 - r2^-3).
      const double s = 24.0 * inv2 * inv6 * (2.0 * inv6 - 1.0);
      f[3 * a] += s * dx, f[3 * a + 1] += s * dy, f[3 * a + 2] += s * dz;
      f[3 * b] -= s * dx, f[3 * b + 1] -= s * dy, f[3 * b + 2] -= s * dz;
    }
  return std::move(out).finish();
}

const Array& positions() {
  static const Array p = xpr::array(lattice(), xpr::Shape{particles, 3});
  return p;
}

// ---- Jacobian of a 3-equation Newton system ----------------------------------------------------

Array newton_system(const Array& x) {
  Array a = x[0], b = x[1], c = x[2];
  return xpr::stack({a * a + b * b + c * c - 3.0, a * b * c - 1.0, xpr::exp(a) - b + xpr::sin(c)});
}

Array hand_jacobian(const Array& x) {
  ArrayBuilder out(ShapedArray{xpr::Shape{3, 3}, xpr::DType::float64, false});
  const double* v = x.data<double>();
  double* j = out.data<double>();
  const double a = v[0], b = v[1], c = v[2];
  const double rows[9] = {2 * a, 2 * b, 2 * c, b * c, a * c, a * b, std::exp(a), -1.0, std::cos(c)};
  std::copy(rows, rows + 9, j);
  return std::move(out).finish();
}

const Array& newton_point() {
  static const Array x = xpr::array({0.7, 1.2, 0.9});
  return x;
}

// ---- checks
// --------------------------------------------------------------------------------------

void check_close(const char* what, const Array& got, const Array& want) {
  const double* g = got.data<double>();
  const double* w = want.data<double>();
  if (got.shape() != want.shape()) {
    std::fprintf(stderr, "%s: shape %s, expected %s\n", what, got.shape().str().c_str(),
                 want.shape().str().c_str());
    std::abort();
  }
  for (std::int64_t k = 0; k < got.size(); ++k)
    if (std::abs(g[k] - w[k]) > 1e-9 * (1 + std::abs(w[k]))) {
      std::fprintf(stderr, "%s: element %lld is %.17g, expected %.17g\n", what,
                   static_cast<long long>(k), g[k], w[k]);
      std::abort();
    }
}

void check_programs() {
  const Array want = hand_forces(positions());
  check_close("eager forces (pairs)", forces_pairs(positions()), want);
  check_close("jit forces (pairs)", xpr::jit(forces_pairs)(positions()), want);
  check_close("jit forces (dense)", xpr::jit(forces_dense)(positions()), want);
  const Array jw = hand_jacobian(newton_point());
  check_close("jacfwd", xpr::jacfwd(newton_system)(newton_point()), jw);
  check_close("jit jacfwd", xpr::jit(xpr::jacfwd(newton_system))(newton_point()), jw);
}

// ---- benchmarks
// ----------------------------------------------------------------------------------

void BM_hand_lj_forces(benchmark::State& s) {
  for (auto _ : s) benchmark::DoNotOptimize(hand_forces(positions()));
}
void BM_jit_lj_forces_pairs(benchmark::State& s) {
  auto f = xpr::jit(forces_pairs);
  for (auto _ : s) benchmark::DoNotOptimize(f(positions()));
}
void BM_jit_lj_forces_dense(benchmark::State& s) {
  auto f = xpr::jit(forces_dense);
  for (auto _ : s) benchmark::DoNotOptimize(f(positions()));
}
void BM_eager_lj_forces_pairs(benchmark::State& s) {
  for (auto _ : s) benchmark::DoNotOptimize(forces_pairs(positions()));
}
void BM_eager_lj_forces_dense(benchmark::State& s) {
  for (auto _ : s) benchmark::DoNotOptimize(forces_dense(positions()));
}
void BM_hand_newton_jacobian(benchmark::State& s) {
  for (auto _ : s) benchmark::DoNotOptimize(hand_jacobian(newton_point()));
}
void BM_jit_newton_jacfwd(benchmark::State& s) {
  auto j = xpr::jit(xpr::jacfwd(newton_system));
  for (auto _ : s) benchmark::DoNotOptimize(j(newton_point()));
}
void BM_eager_newton_jacfwd(benchmark::State& s) {
  auto j = xpr::jacfwd(newton_system);
  for (auto _ : s) benchmark::DoNotOptimize(j(newton_point()));
}

BENCHMARK(BM_hand_lj_forces)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_jit_lj_forces_pairs)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_jit_lj_forces_dense)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_eager_lj_forces_pairs)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_eager_lj_forces_dense)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_hand_newton_jacobian)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_jit_newton_jacfwd)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_eager_newton_jacfwd)->Unit(benchmark::kMicrosecond);

/// The ratios this benchmark reports, from the times `r` kept.
inline void print_ratios(const bench::RatioReporter& r) {
  bench::RatioReporter::print_heading();
  r.ratio("jit LJ forces (vmap pairs) / hand", "BM_jit_lj_forces_pairs", "BM_hand_lj_forces");
  r.ratio("jit LJ forces (dense) / hand", "BM_jit_lj_forces_dense", "BM_hand_lj_forces");
  r.ratio("eager LJ forces (vmap pairs) / hand", "BM_eager_lj_forces_pairs", "BM_hand_lj_forces");
  r.ratio("eager LJ forces (dense) / hand", "BM_eager_lj_forces_dense", "BM_hand_lj_forces");
  r.ratio("jit jacfwd Newton / hand", "BM_jit_newton_jacfwd", "BM_hand_newton_jacobian");
  r.ratio("eager jacfwd Newton / hand", "BM_eager_newton_jacfwd", "BM_hand_newton_jacobian");
}

// ---- first-call latency
// --------------------------------------------------------------------------

/// The child: times the first call of a jitted function (tracing, lowering, cache lookup, compile
/// or load, run) and prints microseconds. The cache directory comes from XPR_CACHE_DIR.
int first_call_child() {
  const Array x = xpr::array({0.5, 1.0, 1.5, 2.0});
  const auto t0 = std::chrono::steady_clock::now();
  auto f = xpr::jit([](const Array& v) { return xpr::sin(v) * 2.0 - v; });
  Array y = f(x);
  const auto t1 = std::chrono::steady_clock::now();
  if (std::abs(y.data<double>()[1] - (2 * std::sin(1.0) - 1.0)) > 1e-12) return 2;
  const auto stats = xpr::jit_cache_stats();
  std::printf("%.3f %llu %llu\n", std::chrono::duration<double, std::micro>(t1 - t0).count(),
              static_cast<unsigned long long>(stats.compiles),
              static_cast<unsigned long long>(stats.disk_hits));
  return 0;
}

/// Runs this program as a child on `dir`; returns (microseconds, compiles, disk hits).
std::tuple<double, unsigned long long, unsigned long long> spawn_child(const std::string& self,
                                                                       const std::string& dir) {
  const std::string cmd = "XPR_CACHE_DIR='" + dir + "' '" + self + "' --first-call";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) std::abort();
  double us = -1;
  unsigned long long compiles = 0, hits = 0;
  if (std::fscanf(p, "%lf %llu %llu", &us, &compiles, &hits) != 3) us = -1;
  if (pclose(p) != 0 || us < 0) {
    std::fprintf(stderr, "first-call child failed: %s\n", cmd.c_str());
    std::abort();
  }
  return {us, compiles, hits};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void first_call_latency(const std::string& self, int reps) {
  namespace fs = std::filesystem;
  std::vector<double> cold, warm;
  for (int r = 0; r < reps; ++r) {
    char tmpl[] = "/tmp/xpr-first-call-XXXXXX";
    if (!mkdtemp(tmpl)) std::abort();
    const std::string dir = tmpl;
    auto [c_us, c_compiles, c_hits] = spawn_child(self, dir);
    auto [w_us, w_compiles, w_hits] = spawn_child(self, dir);
    if (c_compiles != 1 || w_compiles != 0 || w_hits != 1) {
      std::fprintf(stderr,
                   "first call: expected 1 compile cold and 1 disk hit warm, found %llu/%llu\n",
                   c_compiles, w_hits);
      std::abort();
    }
    cold.push_back(c_us);
    warm.push_back(w_us);
    fs::remove_all(dir);
  }
  std::printf(
      "\nfirst call of jit(sin(x) * 2 - x) on f64[4], tracing included (median of %d "
      "child processes)\n",
      reps);
  std::printf("  cold (empty cache directory, compiles)   %10.3f ms\n", median(cold) / 1000);
  std::printf("  disk cache (new process, loads the .so)   %10.3f ms\n", median(warm) / 1000);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--first-call") == 0) return first_call_child();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  check_programs();
  bench::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  print_ratios(reporter);
  first_call_latency(std::filesystem::read_symlink("/proc/self/exe").string(), 7);
  benchmark::Shutdown();
}
