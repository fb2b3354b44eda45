// The gradient of a 2-layer MLP loss (issue 6, "Checked by"): input 64, hidden 128 tanh, output
// 10, batch 32, softmax cross-entropy; parameters are a registered struct of Arrays (a pytree).
// xpr::grad and xpr::value_and_grad are checked against a hand-written Eigen forward pass and
// backpropagation, spot-checked with five-point finite differences, and the vjp/jvp identity is
// checked on random parameter directions; jacfwd and jacrev of the output layer's parameters
// against the same gradient.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <Eigen/Dense>
#include <gtest/gtest.h>

#include "xpr/rt/api.hpp"
#include "xpr/rt/api_autodiff.hpp"
#include "xpr/rt/pytree.hpp"

namespace test_rt_autodiff_mlp {

/// The MLP's parameters, written over their leaf type as docs/pytrees.md advises.
template <class T>
struct Mlp {
  T w1, b1, w2, b2;
};

}  // namespace test_rt_autodiff_mlp

template <class T>
struct xpr::pytree_node<test_rt_autodiff_mlp::Mlp<T>>
    : xpr::fields<&test_rt_autodiff_mlp::Mlp<T>::w1, &test_rt_autodiff_mlp::Mlp<T>::b1,
                  &test_rt_autodiff_mlp::Mlp<T>::w2, &test_rt_autodiff_mlp::Mlp<T>::b2> {};

namespace test_rt_autodiff_mlp {

using xpr::Array;
using xpr::Shape;
using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

constexpr std::int64_t batch = 32, in = 64, hidden = 128, out = 10;

/// Mean softmax cross-entropy of the MLP's logits against one-hot labels; the max is
/// stop_gradient'ed as jax.nn.log_softmax does.
Array loss(const Mlp<Array>& p, const Array& x, const Array& onehot) {
  Array h = xpr::tanh(xpr::matmul(x, p.w1) + p.b1);
  Array z = xpr::matmul(h, p.w2) + p.b2;
  Array shifted = z - xpr::stop_gradient(xpr::max(z, 1, true));
  Array log_p = shifted - xpr::log(xpr::sum(xpr::exp(shifted), 1, true));
  return -xpr::sum(onehot * log_p) / static_cast<double>(x.shape()[0]);
}

Matrix random_matrix(std::mt19937_64& rng, std::int64_t r, std::int64_t c, double scale) {
  std::normal_distribution<double> d(0, scale);
  Matrix m(r, c);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = d(rng);
  return m;
}

struct Problem {
  Matrix w1, b1, w2, b2, x, onehot;  // b1, b2 are 1 x n
  Mlp<Array> params() const {
    return {xpr::array(w1), xpr::array(Eigen::VectorXd(b1.transpose())), xpr::array(w2),
            xpr::array(Eigen::VectorXd(b2.transpose()))};
  }
};

Problem make_problem(unsigned seed) {
  std::mt19937_64 rng(seed);
  Problem p;
  p.w1 = random_matrix(rng, in, hidden, 1 / std::sqrt(double(in)));
  p.b1 = random_matrix(rng, 1, hidden, 0.1);
  p.w2 = random_matrix(rng, hidden, out, 1 / std::sqrt(double(hidden)));
  p.b2 = random_matrix(rng, 1, out, 0.1);
  p.x = random_matrix(rng, batch, in, 1.0);
  p.onehot = Matrix::Zero(batch, out);
  std::uniform_int_distribution<int> label(0, out - 1);
  for (std::int64_t r = 0; r < batch; ++r) p.onehot(r, label(rng)) = 1;
  return p;
}

/// The loss and its gradient by hand: the forward pass, then backpropagation with Eigen.
struct HandGradient {
  double loss;
  Matrix w1, b1, w2, b2;
};

HandGradient backprop(const Problem& p) {
  const auto n = static_cast<double>(batch);
  Matrix h = ((p.x * p.w1).rowwise() + p.b1.row(0)).array().tanh().matrix();
  Matrix z = (h * p.w2).rowwise() + p.b2.row(0);
  Matrix prob(batch, out);
  double loss = 0;
  for (std::int64_t r = 0; r < batch; ++r) {
    const double m = z.row(r).maxCoeff();
    const Eigen::RowVectorXd e = (z.row(r).array() - m).exp().matrix();
    const double total = e.sum();
    prob.row(r) = e / total;
    for (std::int64_t c = 0; c < out; ++c)
      if (p.onehot(r, c) == 1) loss -= (z(r, c) - m - std::log(total)) / n;
  }
  Matrix dz = (prob - p.onehot) / n;                             // d loss / d z
  Matrix dh = dz * p.w2.transpose();                             // d loss / d h
  Matrix da = (dh.array() * (1 - h.array().square())).matrix();  // through tanh
  return {loss, p.x.transpose() * da, da.colwise().sum(), h.transpose() * dz, dz.colwise().sum()};
}

std::vector<double> values(const Array& a) { return a.to_vector<double>(); }
std::vector<double> values(const Matrix& m) { return {m.data(), m.data() + m.size()}; }

void expect_close(const std::vector<double>& got, const std::vector<double>& want, double tol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_LE(std::abs(got[i] - want[i]), tol * (1 + std::abs(want[i])))
        << what << " [" << i << "]: got " << got[i] << ", want " << want[i];
}

TEST(MlpLoss, GradOfTheParameterPytreeEqualsEigenBackprop) {
  const Problem p = make_problem(1);
  const HandGradient want = backprop(p);
  Array x = xpr::array(p.x), onehot = xpr::array(p.onehot);
  auto [value, g] = xpr::value_and_grad(loss)(p.params(), x, onehot);
  static_assert(std::is_same_v<decltype(g), Mlp<Array>>);
  EXPECT_NEAR(value.item<double>(), want.loss, 1e-13 * (1 + want.loss));
  EXPECT_EQ(g.w1.shape(), (Shape{in, hidden}));
  EXPECT_EQ(g.b1.shape(), (Shape{hidden}));
  EXPECT_EQ(g.w2.shape(), (Shape{hidden, out}));
  EXPECT_EQ(g.b2.shape(), (Shape{out}));
  // The same sums in another order: agreement to 1e-12 relative.
  expect_close(values(g.w1), values(want.w1), 1e-12, "w1");
  expect_close(values(g.b1), values(want.b1), 1e-12, "b1");
  expect_close(values(g.w2), values(want.w2), 1e-12, "w2");
  expect_close(values(g.b2), values(want.b2), 1e-12, "b2");
  Mlp<Array> g2 = xpr::grad(loss)(p.params(), x, onehot);
  expect_close(values(g2.w1), values(g.w1), 0, "grad equals value_and_grad");
}

// Five-point differences of eager evaluation of the loss in 16 random parameter entries (four
// per leaf): error ~ eps |loss| / h = 5e-13, so 1e-9 relative is ample.
TEST(MlpLoss, GradSpotCheckedWithFiniteDifferences) {
  const Problem p = make_problem(2);
  Array x = xpr::array(p.x), onehot = xpr::array(p.onehot);
  Mlp<Array> g = xpr::grad(loss)(p.params(), x, onehot);
  std::mt19937_64 rng(3);
  auto check = [&](const char* name, const Matrix& base, const Array& grad_leaf, auto set) {
    std::uniform_int_distribution<Eigen::Index> pick(0, base.size() - 1);
    const auto gv = values(grad_leaf);
    for (int trial = 0; trial < 4; ++trial) {
      const Eigen::Index i = pick(rng);
      const double h = 1e-3;
      auto at = [&](double d) {
        Matrix m = base;
        m.data()[i] += d;
        Problem q = p;
        set(q, m);
        return loss(q.params(), x, onehot).item<double>();
      };
      const double fd = (-at(2 * h) + 8 * at(h) - 8 * at(-h) + at(-2 * h)) / (12 * h);
      EXPECT_NEAR(gv[static_cast<std::size_t>(i)], fd, 1e-9 * (1 + std::abs(fd)))
          << name << "[" << i << "]";
    }
  };
  check("w1", p.w1, g.w1, [](Problem& q, const Matrix& m) { q.w1 = m; });
  check("b1", p.b1, g.b1, [](Problem& q, const Matrix& m) { q.b1 = m; });
  check("w2", p.w2, g.w2, [](Problem& q, const Matrix& m) { q.w2 = m; });
  check("b2", p.b2, g.b2, [](Problem& q, const Matrix& m) { q.b2 = m; });
}

// <vjp(1), t> == <1, jvp(t)> for random directions t in parameter space: the directional
// derivative by forward mode equals the gradient's inner product with t.
TEST(MlpLoss, VjpAgreesWithJvpOnRandomDirections) {
  const Problem p = make_problem(4);
  Array x = xpr::array(p.x), onehot = xpr::array(p.onehot);
  auto f = [&](const Mlp<Array>& params) { return loss(params, x, onehot); };
  auto [y, f_vjp] = xpr::vjp(f, p.params());
  for (int trial = 0; trial < 3; ++trial) {
    Problem t = make_problem(static_cast<unsigned>(10 + trial));  // random matrices of the shapes
    Mlp<Array> dir = t.params();
    auto [ct] = f_vjp(Array(1.0));
    auto [y2, dy] = xpr::jvp(f, std::tuple{p.params()}, std::tuple{dir});
    EXPECT_EQ(y.item<double>(), y2.item<double>());
    double lhs = 0, scale = 0;
    auto acc = [&](const Array& a, const Array& b) {
      auto u = values(a), v = values(b);
      for (std::size_t i = 0; i < u.size(); ++i) {
        lhs += u[i] * v[i];
        scale += std::abs(u[i] * v[i]);
      }
    };
    acc(ct.w1, dir.w1);
    acc(ct.b1, dir.b1);
    acc(ct.w2, dir.w2);
    acc(ct.b2, dir.b2);
    EXPECT_NEAR(lhs, dy.item<double>(), 1e-12 * (1 + scale));
  }
}

// Forward and reverse Jacobians of the loss with respect to the output layer's parameters (as
// separate arguments, so jacfwd sweeps only their 1290 directions) equal the backprop gradient.
TEST(MlpLoss, JacfwdAndJacrevOfTheOutputLayer) {
  const Problem p = make_problem(6);
  const HandGradient want = backprop(p);
  Mlp<Array> params = p.params();
  Array x = xpr::array(p.x), onehot = xpr::array(p.onehot);
  auto f = [&](const Array& w2, const Array& b2) {
    return loss(Mlp<Array>{params.w1, params.b1, w2, b2}, x, onehot);
  };
  auto [jw, jb] = xpr::jacfwd<0, 1>(f)(params.w2, params.b2);
  expect_close(values(jw), values(want.w2), 1e-12, "jacfwd w2");
  expect_close(values(jb), values(want.b2), 1e-12, "jacfwd b2");
  auto [rw, rb] = xpr::jacrev<0, 1>(f)(params.w2, params.b2);
  expect_close(values(rw), values(want.w2), 1e-12, "jacrev w2");
  expect_close(values(rb), values(want.b2), 1e-12, "jacrev b2");
}

}  // namespace test_rt_autodiff_mlp
