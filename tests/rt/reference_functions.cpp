// Keeps docs/reference.md true: every function it lists is called here once, with the signature
// it gives, and one value is checked against a hand-computed one, so that a renamed or removed
// function breaks the build and a changed meaning fails a test.
#include <array>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/api.hpp"
#include "xpr/rt/checkpoint.hpp"
#include "xpr/rt/custom_derivatives.hpp"

namespace test_rt_reference_functions {

using xpr::Array;
using xpr::Shape;
using xpr::rt::Axes;

std::vector<double> values(const Array& a) {
  return xpr::convert_element_type(a, xpr::float64).to_vector<double>();
}
double scalar(const Array& a) { return values(a).at(0); }

TEST(ReferenceFunctions, Creation) {
  EXPECT_EQ(values(xpr::array({1.0, 2.0})), (std::vector<double>{1, 2}));
  EXPECT_EQ(xpr::array({{1.0, 2.0}, {3.0, 4.0}}).shape(), (Shape{2, 2}));
  EXPECT_EQ(xpr::array(std::vector<double>{1, 2, 3, 4, 5, 6}, Shape{2, 3}).shape(), (Shape{2, 3}));
  EXPECT_EQ(xpr::array(std::vector<double>{1, 2}).shape(), Shape{2});
  EXPECT_EQ(values(xpr::full(Shape{2}, 7.0)), (std::vector<double>{7, 7}));
  EXPECT_EQ(xpr::full(Shape{2}, 7, xpr::float32).dtype(), xpr::float32);
  EXPECT_EQ(values(xpr::zeros(Shape{2})), (std::vector<double>{0, 0}));
  EXPECT_EQ(values(xpr::ones(Shape{2}, xpr::int32)), (std::vector<double>{1, 1}));
  Array x = xpr::array({1.0, 2.0, 3.0});
  EXPECT_EQ(values(xpr::full_like(x, 2.0)), (std::vector<double>{2, 2, 2}));
  EXPECT_EQ(values(xpr::zeros_like(x)), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(xpr::ones_like(x, xpr::int32).dtype(), xpr::int32);
  EXPECT_EQ(values(xpr::arange(3)), (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(values(xpr::arange(1, 7, 2)), (std::vector<double>{1, 3, 5}));
  EXPECT_EQ(values(xpr::linspace(0.0, 1.0, 3)), (std::vector<double>{0, 0.5, 1}));
  EXPECT_EQ(values(xpr::eye(2)), (std::vector<double>{1, 0, 0, 1}));
  EXPECT_EQ(values(xpr::eye(2, 3, 1)), (std::vector<double>{0, 1, 0, 0, 0, 1}));
  EXPECT_EQ(values(xpr::iota(xpr::int32, 3)), (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(values(xpr::broadcasted_iota(xpr::int32, Shape{2, 2}, 0)),
            (std::vector<double>{0, 0, 1, 1}));
}

TEST(ReferenceFunctions, Elementwise) {
  Array a = xpr::array({4.0}), b = xpr::array({2.0});
  EXPECT_EQ(scalar(xpr::add(a, b)), 6.0);
  EXPECT_EQ(scalar(xpr::subtract(a, b)), 2.0);
  EXPECT_EQ(scalar(xpr::multiply(a, b)), 8.0);
  EXPECT_EQ(scalar(xpr::divide(a, b)), 2.0);
  EXPECT_EQ(scalar(xpr::negative(a)), -4.0);
  EXPECT_DOUBLE_EQ(scalar(xpr::sin(b)), std::sin(2.0));
  EXPECT_DOUBLE_EQ(scalar(xpr::cos(b)), std::cos(2.0));
  EXPECT_DOUBLE_EQ(scalar(xpr::tan(b)), std::tan(2.0));
  EXPECT_DOUBLE_EQ(scalar(xpr::tanh(b)), std::tanh(2.0));
  EXPECT_DOUBLE_EQ(scalar(xpr::exp(b)), std::exp(2.0));
  EXPECT_DOUBLE_EQ(scalar(xpr::log(b)), std::log(2.0));
  EXPECT_DOUBLE_EQ(scalar(xpr::log1p(b)), std::log1p(2.0));
  EXPECT_DOUBLE_EQ(scalar(xpr::expm1(b)), std::expm1(2.0));
  EXPECT_EQ(scalar(xpr::sqrt(a)), 2.0);
  EXPECT_EQ(scalar(xpr::rsqrt(a)), 0.5);
  EXPECT_EQ(scalar(xpr::abs(-a)), 4.0);
  EXPECT_EQ(scalar(xpr::sign(-a)), -1.0);
  EXPECT_DOUBLE_EQ(scalar(xpr::logistic(b)), 1.0 / (1.0 + std::exp(-2.0)));
  EXPECT_EQ(scalar(xpr::pow(a, b)), 16.0);
  EXPECT_EQ(scalar(xpr::power(a, 0.5)), 2.0);
  EXPECT_EQ(scalar(xpr::integer_pow(b, 3)), 8.0);
  EXPECT_EQ(scalar(xpr::square(b)), 4.0);
  EXPECT_EQ(scalar(xpr::maximum(a, b)), 4.0);
  EXPECT_EQ(scalar(xpr::minimum(a, b)), 2.0);
  EXPECT_EQ(scalar(xpr::clip(a, 0.0, 3.0)), 3.0);
  EXPECT_EQ(scalar(xpr::stop_gradient(a)), 4.0);
  EXPECT_EQ(scalar(xpr::grad([](auto x) { return xpr::stop_gradient(x) * x; })(3.0)), 3.0);
}

TEST(ReferenceFunctions, ComparisonAndSelection) {
  Array a = xpr::array({1.0, 3.0}), b = xpr::array({2.0, 2.0});
  EXPECT_EQ(values(xpr::equal(a, a)), (std::vector<double>{1, 1}));
  EXPECT_EQ(values(xpr::not_equal(a, b)), (std::vector<double>{1, 1}));
  EXPECT_EQ(values(xpr::less(a, b)), (std::vector<double>{1, 0}));
  EXPECT_EQ(values(xpr::less_equal(a, b)), (std::vector<double>{1, 0}));
  EXPECT_EQ(values(xpr::greater(a, b)), (std::vector<double>{0, 1}));
  EXPECT_EQ(values(xpr::greater_equal(a, b)), (std::vector<double>{0, 1}));
  EXPECT_EQ(values(xpr::where(a < b, a, b)), (std::vector<double>{1, 2}));
}

TEST(ReferenceFunctions, Reductions) {
  Array m = xpr::array({{1.0, 2.0}, {3.0, 4.0}});
  EXPECT_EQ(scalar(xpr::sum(m)), 10.0);
  EXPECT_EQ(values(xpr::sum(m, 0)), (std::vector<double>{4, 6}));
  EXPECT_EQ(xpr::sum(m, 1, true).shape(), (Shape{2, 1}));
  EXPECT_EQ(scalar(xpr::sum(m, {0, 1})), 10.0);
  EXPECT_EQ(values(xpr::max(m, 1)), (std::vector<double>{2, 4}));
  EXPECT_EQ(values(xpr::min(m, 0)), (std::vector<double>{1, 2}));
  EXPECT_EQ(scalar(xpr::mean(m)), 2.5);
  EXPECT_EQ(values(xpr::argmax(m, 1)), (std::vector<double>{1, 1}));
  EXPECT_EQ(values(xpr::argmin(m)), (std::vector<double>{0}));
  EXPECT_EQ(values(xpr::cumsum(m, 0)), (std::vector<double>{1, 2, 4, 6}));
  EXPECT_EQ(values(xpr::cumprod(m, 1, true)), (std::vector<double>{2, 2, 12, 4}));
  EXPECT_EQ(values(xpr::cummax(xpr::array({1.0, 3.0, 2.0}))), (std::vector<double>{1, 3, 3}));
  EXPECT_EQ(values(xpr::cummin(xpr::array({3.0, 1.0, 2.0}))), (std::vector<double>{3, 1, 1}));
  EXPECT_DOUBLE_EQ(values(xpr::cumlogsumexp(xpr::array({0.0, 0.0})))[1], std::log(2.0));
  EXPECT_EQ(values(xpr::associative_scan([](const Array& x, const Array& y) { return x + y; },
                                         xpr::array({1.0, 2.0, 3.0}))),
            (std::vector<double>{1, 3, 6}));
}

TEST(ReferenceFunctions, NeuralNetwork) {
  EXPECT_DOUBLE_EQ(scalar(xpr::logaddexp(1.0, 1.0)), 1.0 + std::log(2.0));
  EXPECT_EQ(values(xpr::nn::relu(xpr::array({-1.0, 2.0}))), (std::vector<double>{0, 2}));
  EXPECT_DOUBLE_EQ(scalar(xpr::nn::softplus(Array(0.0))), std::log(2.0));
  EXPECT_DOUBLE_EQ(scalar(xpr::nn::sigmoid(Array(0.0))), 0.5);
  Array m = xpr::array({{0.0, 0.0}, {1.0, 1.0}});
  EXPECT_DOUBLE_EQ(values(xpr::nn::logsumexp(m, 1))[1], 1.0 + std::log(2.0));
  EXPECT_EQ(xpr::nn::logsumexp(m, {}, true).shape(), (Shape{1, 1}));
  EXPECT_EQ(values(xpr::nn::softmax(m)), (std::vector<double>{0.5, 0.5, 0.5, 0.5}));
  EXPECT_DOUBLE_EQ(values(xpr::nn::log_softmax(m, 0))[0], -std::log1p(std::exp(1.0)));
}

TEST(ReferenceFunctions, ShapesAndDtypes) {
  Array x = xpr::arange(6.0);
  EXPECT_EQ(xpr::reshape(x, Shape{2, 3}).shape(), (Shape{2, 3}));
  EXPECT_EQ(xpr::reshape(x, {3, -1}).shape(), (Shape{3, 2}));
  Array m = xpr::reshape(x, {2, 3});
  EXPECT_EQ(xpr::ravel(m).shape(), Shape{6});
  EXPECT_EQ(values(xpr::transpose(m)), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(xpr::transpose(m, Axes{1, 0}).shape(), (Shape{3, 2}));
  EXPECT_EQ(xpr::expand_dims(m, 0).shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(xpr::expand_dims(m, Axes{0, 3}).shape(), (Shape{1, 2, 3, 1}));
  Array y = xpr::reshape(x, {1, 6, 1});
  EXPECT_EQ(xpr::squeeze(y).shape(), Shape{6});
  EXPECT_EQ(xpr::squeeze(y, 0).shape(), (Shape{6, 1}));
  EXPECT_EQ(xpr::squeeze(y, Axes{0, 2}).shape(), Shape{6});
  EXPECT_EQ(values(xpr::broadcast_to(xpr::array({1.0, 2.0}), Shape{2, 2})),
            (std::vector<double>{1, 2, 1, 2}));
  EXPECT_EQ(values(xpr::rt::broadcast_in_dim(xpr::array({1.0, 2.0}), Shape{2, 2}, Axes{0})),
            (std::vector<double>{1, 1, 2, 2}));
  EXPECT_EQ(xpr::astype(x, xpr::int32).dtype(), xpr::int32);
  Array w = xpr::convert_element_type(x, xpr::float32, true);
  EXPECT_EQ(w.dtype(), xpr::float32);
  EXPECT_TRUE(w.weak_type());
}

TEST(ReferenceFunctions, JoiningAndSlicing) {
  Array a = xpr::array({1.0, 2.0}), b = xpr::array({3.0, 4.0});
  EXPECT_EQ(values(xpr::concatenate({a, b})), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(xpr::stack({a, b}, 1).shape(), (Shape{2, 2}));
  EXPECT_EQ(values(xpr::stack({a, b})), (std::vector<double>{1, 2, 3, 4}));
  Array x = xpr::arange(6.0);
  EXPECT_EQ(values(xpr::slice(x, Axes{1}, Axes{6}, Axes{2})), (std::vector<double>{1, 3, 5}));
  EXPECT_EQ(values(xpr::pad(a, {{1, 0, 1}}, 9.0)), (std::vector<double>{9, 1, 9, 2}));
  EXPECT_EQ(values(xpr::dynamic_slice(x, {xpr::full(Shape{}, 4)}, Axes{2})),
            (std::vector<double>{4, 5}));
  EXPECT_EQ(values(xpr::dynamic_update_slice(x, a, {xpr::full(Shape{}, 1)})),
            (std::vector<double>{0, 1, 2, 3, 4, 5}));
}

TEST(ReferenceFunctions, LinearAlgebra) {
  Array a = xpr::array({1.0, 2.0}), m = xpr::array({{1.0, 2.0}, {3.0, 4.0}});
  EXPECT_EQ(scalar(xpr::dot(a, a)), 5.0);
  EXPECT_EQ(values(xpr::dot(m, a)), (std::vector<double>{5, 11}));
  EXPECT_EQ(values(xpr::matmul(m, m)), (std::vector<double>{7, 10, 15, 22}));
  EXPECT_EQ(scalar(xpr::inner(a, a)), 5.0);
  EXPECT_EQ(scalar(xpr::vdot(m, m)), 30.0);
  xpr::rt::DotDimensionNumbers dn{Axes{1}, Axes{0}, Axes{}, Axes{}};
  EXPECT_EQ(values(xpr::dot_general(m, a, dn)), (std::vector<double>{5, 11}));
}

TEST(ReferenceFunctions, ReadingValues) {
  Array m = xpr::array({{1.0, 2.0}, {3.0, 4.0}});
  EXPECT_EQ(m.ndim(), 2u);
  EXPECT_EQ(m.size(), 4);
  EXPECT_EQ(m.dtype(), xpr::float64);
  EXPECT_FALSE(m.weak_type());
  EXPECT_EQ(m.aval().shape, (Shape{2, 2}));
  EXPECT_EQ(m.data<double>()[3], 4.0);
  EXPECT_EQ(m.eigen<double>()(1, 0), 3.0);
  EXPECT_EQ(xpr::sum(m).item<double>(), 10.0);
  EXPECT_TRUE(static_cast<bool>(xpr::sum(m) > 9.0));
  EXPECT_THROW(xpr::make_jaxpr([](auto x) { return x * x.template item<double>(); })(1.0),
               xpr::concretization_error);
}

TEST(ReferenceFunctions, Transformations) {
  auto f = [](auto x, auto y) { return xpr::sin(x) * y; };
  EXPECT_DOUBLE_EQ(scalar(xpr::jvp(f, std::tuple{1.0, 2.0}, std::tuple{1.0, 0.0}).second),
                   2.0 * std::cos(1.0));
  EXPECT_DOUBLE_EQ(scalar(xpr::jvp(xpr::sin, 1.0, 1.0).second), std::cos(1.0));
  EXPECT_EQ(values(xpr::vmap(f, std::tuple{0, xpr::not_mapped})(xpr::zeros(Shape{2}), 2.0)),
            (std::vector<double>{0, 0}));
  EXPECT_EQ(xpr::make_jaxpr(f)(1.0, 2.0).jaxpr.eqns.size(), 2u);
  EXPECT_DOUBLE_EQ(scalar(xpr::linearize(f, 1.0, 2.0).second(1.0, 0.0)), 2.0 * std::cos(1.0));
  auto f_t = xpr::linear_transpose([](auto t) { return t * 3.0; }, 1.0);
  EXPECT_EQ(scalar(std::get<0>(f_t(2.0))), 6.0);
  EXPECT_DOUBLE_EQ(scalar(std::get<1>(xpr::vjp(f, 1.0, 2.0).second(1.0))), std::sin(1.0));
  EXPECT_DOUBLE_EQ(scalar(xpr::grad(f)(1.0, 2.0)), 2.0 * std::cos(1.0));
  EXPECT_DOUBLE_EQ(scalar(xpr::grad<1>(f)(1.0, 2.0)), std::sin(1.0));
  auto aux = [](auto x) { return std::pair{x * x, x}; };
  EXPECT_EQ(scalar(xpr::grad(aux, xpr::has_aux)(3.0).first), 6.0);
  EXPECT_EQ(scalar(xpr::value_and_grad(f)(0.0, 2.0).first), 0.0);
  EXPECT_EQ(scalar(xpr::value_and_grad(aux, xpr::has_aux)(3.0).second), 6.0);
  auto g = [](auto v) { return xpr::sum(v * v); };
  Array v = xpr::array({1.0, 2.0});
  EXPECT_EQ(values(xpr::jacfwd(g)(v)), (std::vector<double>{2, 4}));
  EXPECT_EQ(values(xpr::jacrev(g)(v)), (std::vector<double>{2, 4}));
  EXPECT_EQ(values(xpr::hessian(g)(v)), (std::vector<double>{2, 0, 0, 2}));
  auto sq = [](auto x) { return x * x; };
  EXPECT_EQ(scalar(xpr::grad(xpr::checkpoint(sq))(3.0)), 6.0);
  EXPECT_EQ(scalar(xpr::jit(sq, xpr::JitOptions{})(3.0)), 9.0);
  xpr::Lowered low = xpr::jit(sq).lower(3.0);
  EXPECT_EQ(low.jaxpr().jaxpr.eqns.size(), 1u);  // mul
  EXPECT_FALSE(low.as_text().empty());
  auto twice = xpr::custom_jvp(sq, [](auto p, auto t) {
    auto [x] = p;
    auto [tx] = t;
    return std::pair{x * x, 2.0 * x * tx};
  });
  EXPECT_EQ(scalar(xpr::grad(twice)(3.0)), 6.0);
  auto cv = xpr::custom_vjp(
      sq,
      [](auto x) {
        return std::pair{x * x, x};
      },
      [](auto x, auto ct) { return std::tuple{2.0 * x * ct}; });
  EXPECT_EQ(scalar(xpr::grad(cv)(3.0)), 6.0);
  xpr::ClosedJaxpr j = xpr::parse_jaxpr("{ lambda ; a:f64[]. let b:f64[] = sin a in (b,) }");
  xpr::typecheck_jaxpr(j);
  const Array one = xpr::full(Shape{}, 1.0);
  EXPECT_DOUBLE_EQ(scalar(xpr::eval_jaxpr(j.jaxpr, j.consts, std::span(&one, 1))[0]),
                   std::sin(1.0));
}

}  // namespace test_rt_reference_functions
