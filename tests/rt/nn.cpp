// Tests of rt/nn.hpp: logaddexp, relu, softplus, sigmoid, logsumexp, softmax and log_softmax
// against closed forms computed with doubles, where naive formulas overflow or lose the small
// term; their derivatives against JAX's rules written by hand and central differences; jit and
// vmap against eager; errors; and a softmax regression trained the way a user writes it, its
// gradient against the hand-derived (softmax - onehot) x^T / n.
#include "xpr/rt/nn.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/api.hpp"

namespace test_rt_nn {

using xpr::Array;
using xpr::Shape;

constexpr double inf = std::numeric_limits<double>::infinity();

std::vector<double> v(const Array& a) { return xpr::astype(a, xpr::float64).to_vector<double>(); }

void expect_close(const std::vector<double>& got, const std::vector<double>& want, double rtol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i]) || std::isinf(want[i])) {
      EXPECT_TRUE(std::isnan(want[i]) ? std::isnan(got[i]) : got[i] == want[i])
          << what << " [" << i << "]: got " << got[i] << ", want " << want[i];
      continue;
    }
    EXPECT_LE(std::abs(got[i] - want[i]), rtol * (1e-300 + std::abs(want[i])))
        << what << " [" << i << "]: got " << got[i] << ", want " << want[i];
  }
}

/// Central differences of a scalar function of a vector, one coordinate at a time.
std::vector<double> numeric_gradient(auto f, std::vector<double> x, double h = 1e-6) {
  std::vector<double> g(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double xi = x[i];
    x[i] = xi + h;
    const double up = f(xpr::array(x)).template item<double>();
    x[i] = xi - h;
    const double down = f(xpr::array(x)).template item<double>();
    x[i] = xi;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

TEST(Logaddexp, ValuesWithoutOverflowOrLostTerms) {
  const Array a = xpr::array({1.0, 1000.0, -50.0, -1000.0, 3.0, -inf, inf, inf, 0.0});
  const Array b = xpr::array({2.0, 1000.0, 0.0, 0.0, 3.0, -inf, inf, -inf, -inf});
  const std::vector<double> want{std::log(std::exp(1.0) + std::exp(2.0)),
                                 1000.0 + std::log(2.0),
                                 std::log1p(std::exp(-50.0)),  // 1.9e-22, lost by log(1 + e^x)
                                 0.0,
                                 3.0 + std::log(2.0),
                                 -inf,
                                 inf,
                                 inf,
                                 0.0};
  expect_close(v(xpr::logaddexp(a, b)), want, 1e-15, "logaddexp");
  expect_close(v(xpr::logaddexp(b, a)), want, 1e-15, "logaddexp, operands swapped");
  // NaN propagates; a scalar broadcasts.
  EXPECT_TRUE(std::isnan(xpr::logaddexp(Array(std::nan("")), Array(1.0)).item<double>()));
  expect_close(v(xpr::logaddexp(xpr::array({0.0, 1.0}), 0.0)),
               {std::log(2.0), std::log1p(std::exp(1.0))}, 1e-15, "scalar operand");
}

TEST(Logaddexp, DerivativeIsJaxRuleHalfEachAtATie) {
  // d/dx1 = exp(x1 - out) = 1 / (1 + exp(x2 - x1)); at x1 == x2 one half each, where the
  // composition max + log1p(exp(-|d|)) would give 0 (max's 1/2 minus log1p's 1/2).
  auto f = [](const Array& x, const Array& y) { return xpr::logaddexp(x, y); };
  for (auto [x, y] : {std::pair{1.0, 2.0}, {3.0, 3.0}, {-40.0, 5.0}, {700.0, 699.0}}) {
    auto [gx, gy] = xpr::grad<0, 1>(f)(Array(x), Array(y));
    // exp(x - out) inherits out's rounding, an ulp of |x|: 1.1e-13 at 700.
    const double tol = 4e-16 * (1 + std::abs(x) + std::abs(y));
    EXPECT_NEAR(gx.item<double>(), 1 / (1 + std::exp(y - x)), tol) << x << " " << y;
    EXPECT_NEAR(gy.item<double>(), 1 / (1 + std::exp(x - y)), tol) << x << " " << y;
  }
  // The second derivative through the rule: d2/dx2 = s (1 - s) with s = 1 / (1 + exp(y - x)).
  const double s = 1 / (1 + std::exp(0.5));
  EXPECT_NEAR(
      xpr::grad(xpr::grad([](const Array& x) { return xpr::logaddexp(x, 0.5); }))(Array(0.0))
          .item<double>(),
      s * (1 - s), 1e-12);
  // Elementwise over arrays, against central differences of the sum.
  auto total = [](const Array& x) {
    const Array y = xpr::logaddexp(x, x * 0.5 - 1.0);
    return xpr::sum(y, 0);
  };
  const std::vector<double> x0{0.3, -1.2, 2.5, 0.7};
  expect_close(v(xpr::grad(total)(xpr::array(x0))), numeric_gradient(total, x0), 1e-7,
               "grad of sum logaddexp(x, x / 2 - 1)");
}

TEST(Relu, ValuesAndJaxDerivativeZeroAtZero) {
  const Array x = xpr::array({-2.0, -0.0, 0.0, 0.5, 3.0});
  EXPECT_EQ(v(xpr::nn::relu(x)), (std::vector<double>{0, 0, 0, 0.5, 3}));
  // vmap of grad: 0 below and at 0 (maximum's own rule would give 1/2 at the tie), 1 above.
  const Array g = xpr::vmap(xpr::grad([](const Array& t) { return xpr::nn::relu(t); }))(x);
  EXPECT_EQ(v(g), (std::vector<double>{0, 0, 0, 1, 1}));
  // A user's hidden layer: relu(w * x) summed, d/dw = sum(x where w x > 0).
  auto layer = [](const Array& w) {
    return xpr::sum(xpr::nn::relu(w * xpr::array({1.0, -2.0, 3.0})));
  };
  EXPECT_DOUBLE_EQ(xpr::grad(layer)(Array(0.5)).item<double>(), 4.0);
  EXPECT_DOUBLE_EQ(xpr::grad(layer)(Array(-0.5)).item<double>(), -2.0);
  EXPECT_EQ(xpr::nn::relu(xpr::array({-1, 2})).dtype(), xpr::int32);
}

TEST(Softplus, ExactAtBothEndsWithSigmoidDerivative) {
  const Array x = xpr::array({0.0, 1000.0, -50.0, -800.0, 2.0});
  expect_close(v(xpr::nn::softplus(x)),
               {std::log(2.0), 1000.0, std::exp(-50.0), 0.0, std::log1p(std::exp(2.0))}, 1e-15,
               "softplus");
  const Array g = xpr::vmap(xpr::grad([](const Array& t) { return xpr::nn::softplus(t); }))(x);
  std::vector<double> want;
  for (double e : v(x)) want.push_back(1 / (1 + std::exp(-e)));
  expect_close(v(g), want, 1e-15, "softplus' = sigmoid");
  expect_close(v(xpr::nn::sigmoid(x)), want, 1e-15, "sigmoid");
}

TEST(Logsumexp, LargeValuesEmptyAndInfiniteRows) {
  const Array m = xpr::array({{1000.0, 1000.5, 999.0}, {-1.0, 0.0, 2.0}});
  auto lse = [](std::vector<double> r) {
    double mx = r[0];
    for (double e : r) mx = std::max(mx, e);
    double s = 0;
    for (double e : r) s += std::exp(e - mx);
    return mx + std::log(s);
  };
  const double r0 = lse({1000.0, 1000.5, 999.0}), r1 = lse({-1.0, 0.0, 2.0});
  expect_close(v(xpr::nn::logsumexp(m, 1)), {r0, r1}, 1e-15, "rows");
  EXPECT_EQ(xpr::nn::logsumexp(m, 1, true).shape(), (Shape{2, 1}));
  EXPECT_EQ(xpr::nn::logsumexp(m, -2).shape(), (Shape{3}));
  expect_close(v(xpr::nn::logsumexp(m)), {lse({1000.0, 1000.5, 999.0, -1.0, 0.0, 2.0})}, 1e-15,
               "every axis");
  // An all -inf row gives -inf, an infinite one inf (not NaN); an empty axis -inf.
  const Array special = xpr::array({{-inf, -inf}, {inf, 1.0}});
  EXPECT_EQ(v(xpr::nn::logsumexp(special, 1)), (std::vector<double>{-inf, inf}));
  const Array empty = xpr::zeros(Shape{2, 0});
  EXPECT_EQ(v(xpr::nn::logsumexp(empty, 1)), (std::vector<double>{-inf, -inf}));
  // The gradient is the softmax of the row, also where exp(x) overflows.
  const Array g = xpr::grad([](const Array& x) { return xpr::nn::logsumexp(x); })(
      xpr::array({1000.0, 1000.5, 999.0}));
  std::vector<double> want;
  for (double e : {1000.0, 1000.5, 999.0}) want.push_back(std::exp(e - r0));
  // exp(x - out) inherits the rounding of out (and of r0), an ulp of 1000: 1.1e-13.
  expect_close(v(g), want, 4e-13, "d logsumexp = softmax");
  // jit and vmap agree with the eager rows.
  auto rows = [](const Array& x) { return xpr::nn::logsumexp(x); };
  expect_close(v(xpr::jit(rows)(xpr::array({-1.0, 0.0, 2.0}))), {r1}, 1e-15, "jit");
  expect_close(v(xpr::vmap(rows)(m)), {r0, r1}, 1e-15, "vmap over rows");
}

TEST(Softmax, ClosedFormShiftInvarianceAndJacobian) {
  const std::vector<double> z{0.5, -1.0, 2.0, 0.0};
  double total = 0;
  for (double e : z) total += std::exp(e);
  std::vector<double> s;
  for (double e : z) s.push_back(std::exp(e) / total);
  expect_close(v(xpr::nn::softmax(xpr::array(z))), s, 1e-15, "softmax");
  // Large logits: the shift keeps exp finite.
  expect_close(v(xpr::nn::softmax(xpr::array(z) + 1000.0)), s, 1e-13, "softmax(z + 1000)");
  // Along axis 0 of a matrix: each column sums to 1.
  const Array cols = xpr::nn::softmax(xpr::array({{1.0, 5.0}, {2.0, -5.0}, {3.0, 0.0}}), 0);
  const std::vector<double> c = v(cols);
  EXPECT_NEAR(c[0] + c[2] + c[4], 1.0, 1e-15);
  EXPECT_NEAR(c[1] + c[3] + c[5], 1.0, 1e-15);
  // Jacobian d s_i / d z_j = s_i (delta_ij - s_j), by jacrev and jacfwd.
  auto sm = [](const Array& x) { return xpr::nn::softmax(x); };
  for (const Array& jac : {xpr::jacrev(sm)(xpr::array(z)), xpr::jacfwd(sm)(xpr::array(z))}) {
    const std::vector<double> j = v(jac);
    for (std::size_t a = 0; a < 4; ++a)
      for (std::size_t b = 0; b < 4; ++b)
        EXPECT_NEAR(j[a * 4 + b], s[a] * ((a == b ? 1.0 : 0.0) - s[b]), 1e-15) << a << "," << b;
  }
}

TEST(LogSoftmax, FiniteWhereLogOfSoftmaxIsNot) {
  const Array x = xpr::array({0.0, -1000.0, 1.0});
  const double l = std::log(1 + std::exp(-1000.0 - 1.0) + std::exp(-1.0)) + 1.0;  // logsumexp
  expect_close(v(xpr::nn::log_softmax(x)), {-l, -1000.0 - l, 1.0 - l}, 1e-15, "log_softmax");
  EXPECT_EQ(v(xpr::log(xpr::nn::softmax(x)))[1], -inf);  // the naive form
  // Its gradient w.r.t. x of sum(w * log_softmax(x)) is w - sum(w) softmax(x).
  const std::vector<double> w{0.2, 0.3, 0.5};
  auto f = [&](const Array& t) { return xpr::sum(xpr::array(w) * xpr::nn::log_softmax(t)); };
  const std::vector<double> s = v(xpr::nn::softmax(x));
  expect_close(v(xpr::grad(f)(x)), {w[0] - s[0], w[1] - s[1], w[2] - s[2]}, 1e-12,
               "grad log_softmax");
}

TEST(Nn, ErrorsNameTheFunction) {
  const Array m = xpr::zeros(Shape{2, 3});
  try {
    (void)xpr::nn::softmax(m, 2);
    ADD_FAILURE() << "expected index_error";
  } catch (const xpr::index_error& e) {
    EXPECT_NE(std::string(e.what()).find("softmax"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)xpr::nn::logsumexp(m, {0, 5}), xpr::index_error);
  EXPECT_THROW((void)xpr::nn::log_softmax(m, -3), xpr::index_error);
  EXPECT_THROW((void)xpr::logaddexp(xpr::zeros(Shape{2}), xpr::zeros(Shape{3})), xpr::shape_error);
}

// A user's softmax regression: logits = x W + b, mean cross-entropy with log_softmax, trained by
// gradient steps under jit. The gradient is checked against the hand-derived formula, the loss
// must fall, and the jitted step must give the eager step's parameters.
TEST(Nn, SoftmaxRegressionTrainingLoop) {
  constexpr std::int64_t n = 16, d = 3, k = 4;
  std::mt19937 rng(7);
  std::normal_distribution<double> normal;
  std::vector<double> xs(n * d), onehot(n * k, 0.0), w0(d * k), b0(k);
  for (double& e : xs) e = normal(rng);
  for (double& e : w0) e = 0.1 * normal(rng);
  for (double& e : b0) e = 0.1 * normal(rng);
  // Labels a linear model can learn: the class whose row of a random `wt` scores highest.
  std::vector<double> wt(d * k);
  for (double& e : wt) e = normal(rng);
  for (std::int64_t r = 0; r < n; ++r) {
    std::int64_t best = 0;
    double best_score = -inf;
    for (std::int64_t c = 0; c < k; ++c) {
      double score = 0;
      for (std::int64_t j = 0; j < d; ++j) score += xs[r * d + j] * wt[j * k + c];
      if (score > best_score) best = c, best_score = score;
    }
    onehot[r * k + best] = 1;
  }
  const Array x = xpr::reshape(xpr::array(xs), Shape{n, d});
  const Array y = xpr::reshape(xpr::array(onehot), Shape{n, k});
  auto loss = [&](const Array& w, const Array& b) {
    const Array logp = xpr::nn::log_softmax(xpr::matmul(x, w) + b);
    return -xpr::mean(xpr::sum(y * logp, 1));
  };
  Array w = xpr::reshape(xpr::array(w0), Shape{d, k}), b = xpr::array(b0);
  // The gradient by hand: p = softmax(x W + b); dW = x^T (p - y) / n, db = sum_rows(p - y) / n.
  auto [gw, gb] = xpr::grad<0, 1>(loss)(w, b);
  const Array p = xpr::nn::softmax(xpr::matmul(x, w) + b);
  expect_close(v(gw), v(xpr::matmul(xpr::transpose(x), p - y) / double(n)), 1e-13, "dW");
  expect_close(v(gb), v(xpr::sum(p - y, 0) / double(n)), 1e-13, "db");
  auto step = [&](const Array& w_, const Array& b_) {
    auto [dw, db] = xpr::grad<0, 1>(loss)(w_, b_);
    return std::tuple{w_ - 0.5 * dw, b_ - 0.5 * db};
  };
  auto jit_step = xpr::jit(step);
  const double first = loss(w, b).item<double>();
  Array we = w, be = b;
  for (int it = 0; it < 20; ++it) {
    std::tie(w, b) = jit_step(w, b);
    std::tie(we, be) = step(we, be);
  }
  EXPECT_LT(loss(w, b).item<double>(), 0.5 * first);
  expect_close(v(w), v(we), 1e-12, "jitted steps against eager steps");
  expect_close(v(b), v(be), 1e-12, "jitted steps against eager steps (b)");
}

}  // namespace test_rt_nn
