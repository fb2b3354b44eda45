// Eager and jitted reverse mode of the runtime tier on a 2-layer MLP loss (input 64, hidden 128
// tanh, output 10, batch 32, softmax cross-entropy; 9610 parameters in a registered struct),
// against a hand-written Eigen forward pass + backpropagation in the same run, and against forward
// mode (xpr::jacfwd, one tangent per parameter, batched by vmap) for the same gradient. The ratios
// are printed at the end; docs/benchmarks.md records them. Before timing, the xpr gradient is
// checked against the hand-written one.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <Eigen/Dense>
#include <benchmark/benchmark.h>

#include "xpr/xpr.hpp"

#include "ratio_reporter.hpp"

namespace bench_mlp {

template <class T>
struct Mlp {
  T w1, b1, w2, b2;
};

}  // namespace bench_mlp

template <class T>
struct xpr::pytree_node<bench_mlp::Mlp<T>>
    : xpr::fields<&bench_mlp::Mlp<T>::w1, &bench_mlp::Mlp<T>::b1, &bench_mlp::Mlp<T>::w2,
                  &bench_mlp::Mlp<T>::b2> {};

namespace bench_mlp {

using Eigen::MatrixXd;
using Eigen::RowVectorXd;
using xpr::Array;

constexpr int batch = 32, in = 64, hidden = 128, out = 10;

// ---- xpr: the loss as jax.numpy code ----------------------------------------------------------

Array loss(const Mlp<Array>& p, const Array& x, const Array& onehot) {
  Array h = xpr::tanh(xpr::matmul(x, p.w1) + p.b1);
  Array z = xpr::matmul(h, p.w2) + p.b2;
  Array shifted = z - xpr::stop_gradient(xpr::max(z, 1, true));
  Array log_p = shifted - xpr::log(xpr::sum(xpr::exp(shifted), 1, true));
  return -xpr::sum(onehot * log_p) / static_cast<double>(x.shape()[0]);
}

// ---- hand-written: Eigen forward pass and backpropagation -------------------------------------

struct Params {
  MatrixXd w1, w2;
  RowVectorXd b1, b2;
};
struct Grads {
  double loss;
  MatrixXd w1, w2;
  RowVectorXd b1, b2;
};

Grads hand_value_and_grad(const Params& p, const MatrixXd& x, const MatrixXd& onehot) {
  const double n = batch;
  MatrixXd h = ((x * p.w1).rowwise() + p.b1).array().tanh().matrix();
  MatrixXd z = (h * p.w2).rowwise() + p.b2;
  Eigen::VectorXd m = z.rowwise().maxCoeff();
  MatrixXd e = (z.colwise() - m).array().exp().matrix();
  Eigen::VectorXd total = e.rowwise().sum();
  MatrixXd prob = e.array().colwise() / total.array();
  // each one-hot row sums to 1: loss = -(sum(onehot z) - sum(log sum exp z)) / n
  Eigen::VectorXd lse = m + total.array().log().matrix();
  const double loss = -(z.cwiseProduct(onehot).sum() - lse.sum()) / n;
  MatrixXd dz = (prob - onehot) / n;
  MatrixXd da = ((dz * p.w2.transpose()).array() * (1 - h.array().square())).matrix();
  return {loss, x.transpose() * da, h.transpose() * dz, da.colwise().sum(), dz.colwise().sum()};
}

double hand_loss(const Params& p, const MatrixXd& x, const MatrixXd& onehot) {
  MatrixXd h = ((x * p.w1).rowwise() + p.b1).array().tanh().matrix();
  MatrixXd z = (h * p.w2).rowwise() + p.b2;
  Eigen::VectorXd m = z.rowwise().maxCoeff();
  Eigen::VectorXd total = (z.colwise() - m).array().exp().matrix().rowwise().sum();
  Eigen::VectorXd lse = m + total.array().log().matrix();
  return -(z.cwiseProduct(onehot).sum() - lse.sum()) / batch;
}

// ---- the problem --------------------------------------------------------------------------------

struct Problem {
  Params hand;
  MatrixXd x, onehot;
  Mlp<Array> params;
  Array xa, onehota;
};

const Problem& problem() {
  static const Problem p = [] {
    std::mt19937_64 rng(42);
    auto normal = [&](int r, int c, double scale) {
      std::normal_distribution<double> d(0, scale);
      MatrixXd m(r, c);
      for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = d(rng);
      return m;
    };
    Problem q;
    q.hand.w1 = normal(in, hidden, 1 / std::sqrt(double(in)));
    q.hand.b1 = normal(1, hidden, 0.1);
    q.hand.w2 = normal(hidden, out, 1 / std::sqrt(double(hidden)));
    q.hand.b2 = normal(1, out, 0.1);
    q.x = normal(batch, in, 1.0);
    q.onehot = MatrixXd::Zero(batch, out);
    std::uniform_int_distribution<int> label(0, out - 1);
    for (int r = 0; r < batch; ++r) q.onehot(r, label(rng)) = 1;
    q.params = {xpr::array(q.hand.w1), xpr::array(Eigen::VectorXd(q.hand.b1.transpose())),
                xpr::array(q.hand.w2), xpr::array(Eigen::VectorXd(q.hand.b2.transpose()))};
    q.xa = xpr::array(q.x);
    q.onehota = xpr::array(q.onehot);
    return q;
  }();
  return p;
}

/// Aborts unless `got` (row-major) equals the Eigen matrix `want` to 1e-12 relative.
void check_equal(const char* what, const Array& got, const MatrixXd& want) {
  auto g = got.to_vector<double>();
  const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> w = want;
  for (Eigen::Index i = 0; i < w.size(); ++i)
    if (std::abs(g[static_cast<std::size_t>(i)] - w.data()[i]) >
        1e-12 * (1 + std::abs(w.data()[i]))) {
      std::fprintf(stderr, "mlp_grad: %s differs from the hand-written gradient at %ld\n", what,
                   static_cast<long>(i));
      std::abort();
    }
}

void check_gradients() {
  const Problem& p = problem();
  Grads want = hand_value_and_grad(p.hand, p.x, p.onehot);
  auto [value, g] = xpr::value_and_grad(loss)(p.params, p.xa, p.onehota);
  if (std::abs(value.item<double>() - want.loss) > 1e-12) std::abort();
  check_equal("grad w1", g.w1, want.w1);
  check_equal("grad b1", g.b1, want.b1);
  check_equal("grad w2", g.w2, want.w2);
  check_equal("grad b2", g.b2, want.b2);
  auto [jvalue, jg] = xpr::jit(xpr::value_and_grad(loss))(p.params, p.xa, p.onehota);
  if (std::abs(jvalue.item<double>() - want.loss) > 1e-12) std::abort();
  check_equal("jit grad w1", jg.w1, want.w1);
  check_equal("jit grad b1", jg.b1, want.b1);
  check_equal("jit grad w2", jg.w2, want.w2);
  check_equal("jit grad b2", jg.b2, want.b2);
  Mlp<Array> f = xpr::jacfwd(loss)(p.params, p.xa, p.onehota);
  check_equal("jacfwd w1", f.w1, want.w1);
  check_equal("jacfwd b2", f.b2, want.b2);
}

// ---- benchmarks ---------------------------------------------------------------------------------

void BM_hand_mlp_grad(benchmark::State& s) {
  const Problem& p = problem();
  for (auto _ : s) benchmark::DoNotOptimize(hand_value_and_grad(p.hand, p.x, p.onehot));
}
void BM_xpr_mlp_grad(benchmark::State& s) {
  const Problem& p = problem();
  auto vg = xpr::value_and_grad(loss);
  for (auto _ : s) benchmark::DoNotOptimize(vg(p.params, p.xa, p.onehota));
}
void BM_jit_mlp_grad(benchmark::State& s) {
  const Problem& p = problem();
  auto vg = xpr::jit(xpr::value_and_grad(loss));
  for (auto _ : s) benchmark::DoNotOptimize(vg(p.params, p.xa, p.onehota));
}
void BM_xpr_mlp_grad_only(benchmark::State& s) {
  const Problem& p = problem();
  auto g = xpr::grad(loss);
  for (auto _ : s) benchmark::DoNotOptimize(g(p.params, p.xa, p.onehota));
}
void BM_hand_mlp_loss(benchmark::State& s) {
  const Problem& p = problem();
  for (auto _ : s) benchmark::DoNotOptimize(hand_loss(p.hand, p.x, p.onehot));
}
void BM_xpr_mlp_loss(benchmark::State& s) {
  const Problem& p = problem();
  for (auto _ : s) benchmark::DoNotOptimize(loss(p.params, p.xa, p.onehota));
}
void BM_xpr_mlp_jacfwd(benchmark::State& s) {
  const Problem& p = problem();
  auto j = xpr::jacfwd(loss);
  for (auto _ : s) benchmark::DoNotOptimize(j(p.params, p.xa, p.onehota));
}

BENCHMARK(BM_hand_mlp_grad)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_xpr_mlp_grad)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_jit_mlp_grad)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_xpr_mlp_grad_only)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_hand_mlp_loss)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_xpr_mlp_loss)->Unit(benchmark::kMicrosecond);
// Forward mode pushes 9610 tangents through the network: seconds per call.
BENCHMARK(BM_xpr_mlp_jacfwd)->Unit(benchmark::kMicrosecond)->Iterations(1);

/// The ratios this benchmark reports, from the times `r` kept.
inline void print_ratios(const bench::RatioReporter& r) {
  bench::RatioReporter::print_heading();
  r.ratio("xpr value_and_grad / hand Eigen backprop", "BM_xpr_mlp_grad", "BM_hand_mlp_grad");
  r.ratio("jit value_and_grad / hand Eigen backprop", "BM_jit_mlp_grad", "BM_hand_mlp_grad");
  r.ratio("jit value_and_grad / xpr value_and_grad", "BM_jit_mlp_grad", "BM_xpr_mlp_grad");
  r.ratio("xpr grad / hand Eigen backprop", "BM_xpr_mlp_grad_only", "BM_hand_mlp_grad");
  r.ratio("xpr jacfwd / xpr value_and_grad", "BM_xpr_mlp_jacfwd", "BM_xpr_mlp_grad");
  r.ratio("xpr jacfwd / hand Eigen backprop", "BM_xpr_mlp_jacfwd", "BM_hand_mlp_grad");
  r.ratio("xpr eager loss / hand Eigen loss", "BM_xpr_mlp_loss", "BM_hand_mlp_loss");
  r.ratio("xpr value_and_grad / xpr eager loss", "BM_xpr_mlp_grad", "BM_xpr_mlp_loss");
  r.ratio("hand backprop / hand loss", "BM_hand_mlp_grad", "BM_hand_mlp_loss");
}

}  // namespace bench_mlp

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  bench_mlp::check_gradients();
  bench::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  bench_mlp::print_ratios(reporter);
  benchmark::Shutdown();
}
