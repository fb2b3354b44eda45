// Tests of functions whose outputs do not depend on their inputs (a constant, an array constant,
// a constant among several outputs, an input returned unchanged) under every transformation, the
// way users write them. make_jaxpr must print JAX's literal or constvar (JaxprTrace::build once
// collected the constants before raising the outputs, and printed an undefined variable), and the
// derivatives must be the zeros JAX returns. Each expected value is JAX's result, stated beside it.
#include <cmath>
#include <span>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/api.hpp"
#include "xpr/rt/checkpoint.hpp"
#include "xpr/rt/custom_derivatives.hpp"
#include "xpr/rt/jaxpr_eval.hpp"

namespace test_rt_constant_outputs {

using xpr::Array;
using xpr::Shape;

std::string text(const xpr::ClosedJaxpr& j) {
  std::ostringstream os;
  os << j;
  return os.str();
}

std::vector<double> values(const Array& a) { return a.to_vector<double>(); }

void expect_zeros(const Array& a, const Shape& shape, xpr::DType dtype) {
  EXPECT_EQ(a.shape(), shape);
  EXPECT_EQ(a.dtype(), dtype);
  for (double v : xpr::convert_element_type(a, xpr::float64).to_vector<double>()) EXPECT_EQ(v, 0.0);
}

auto constant = [](auto) { return 4.0; };
auto array_constant = [](auto) { return xpr::array({1.0, 2.0, 3.0}); };
auto identity = [](auto x) { return x; };
// sin(x) and a constant: the constant's derivative is zero, the other one is not.
auto sin_and_constant = [](auto x) { return std::tuple{xpr::sin(x), 4.0}; };

// jax.make_jaxpr(lambda x: 4.)(1.) is `{ lambda ; a:f32[]. let  in (4.0:f32[],) }` (f64 with
// jax_enable_x64, which is xpr's default for a double).
TEST(ConstantOutputs, MakeJaxprPrintsTheLiteral) {
  xpr::ClosedJaxpr j = xpr::make_jaxpr(constant)(1.0);
  EXPECT_EQ(text(j), "{ lambda ; a:f64[]. let  in (4.0:f64[],) }");
  EXPECT_NO_THROW(xpr::typecheck_jaxpr(j));
  // eval_jaxpr of it gives the constant back.
  const Array arg = xpr::full(Shape{}, 1.0);
  EXPECT_EQ(xpr::eval_jaxpr(j.jaxpr, j.consts, std::span(&arg, 1))[0].item<double>(), 4.0);
}

// An array constant is a constvar: `{ lambda a:f64[3]; b:f64[]. let  in (a,) }`, consts [1 2 3].
TEST(ConstantOutputs, MakeJaxprOfAnArrayConstantIsAConstvar) {
  xpr::ClosedJaxpr j = xpr::make_jaxpr(array_constant)(1.0);
  EXPECT_EQ(text(j), "{ lambda a:f64[3]; b:f64[]. let  in (a,) }");
  ASSERT_EQ(j.consts.size(), 1u);
  EXPECT_EQ(values(j.consts[0]), (std::vector<double>{1.0, 2.0, 3.0}));
  EXPECT_NO_THROW(xpr::typecheck_jaxpr(j));
}

// A constant among several outputs, and an input returned unchanged:
// jax.make_jaxpr(lambda x: (x * 2., 4., x))(1.) is
// `{ lambda ; a:f64[]. let b:f64[] = mul a 2.0:f64[] in (b, 4.0:f64[], a) }`.
TEST(ConstantOutputs, MakeJaxprOfMixedOutputs) {
  auto f = [](auto x) { return std::tuple{x * 2.0, 4.0, x}; };
  xpr::ClosedJaxpr j = xpr::make_jaxpr(f)(1.0);
  EXPECT_EQ(text(j), "{ lambda ; a:f64[]. let b:f64[] = mul a 2.0:f64[] in (b, 4.0:f64[], a) }");
  EXPECT_NO_THROW(xpr::typecheck_jaxpr(j));
  EXPECT_EQ(text(xpr::make_jaxpr(identity)(1.0)), "{ lambda ; a:f64[]. let  in (a,) }");
}

// The constant inside a checkpoint: its inner jaxpr is `{ lambda ; b:f64[]. let  in (4.0:f64[],) }`
// and the whole typechecks.
TEST(ConstantOutputs, CheckpointOfAConstantTypechecks) {
  xpr::ClosedJaxpr j = xpr::make_jaxpr(xpr::checkpoint(constant))(1.0);
  EXPECT_NE(text(j).find("jaxpr={ lambda ; c:f64[]. let  in (4.0:f64[],) }"), std::string::npos)
      << text(j);
  EXPECT_NO_THROW(xpr::typecheck_jaxpr(j));
}

// jax.grad(jax.checkpoint(lambda x: 4.))(1.) is 0.0; for an f32 input the zero is f32.
TEST(ConstantOutputs, GradOfCheckpointedConstant) {
  expect_zeros(xpr::grad(xpr::checkpoint(constant))(1.0), Shape{}, xpr::float64);
  expect_zeros(xpr::grad(xpr::checkpoint(constant))(1.0f), Shape{}, xpr::float32);
  expect_zeros(xpr::grad(xpr::grad(xpr::checkpoint(constant)))(1.0), Shape{}, xpr::float64);
}

// A custom_jvp function whose primal is a constant and whose rule returns a zero tangent:
// jax.grad of it at 1. is 0.0.
TEST(ConstantOutputs, GradOfCustomJvpConstant) {
  auto f = xpr::custom_jvp(constant, [](auto primals, auto tangents) {
    auto [x] = primals;
    auto [t] = tangents;
    return std::pair{constant(x), t * 0.0};
  });
  EXPECT_EQ(xpr::grad(f)(1.0).item<double>(), 0.0);
  EXPECT_EQ(f(1.0).item<double>(), 4.0);
  // The rule's tangent is itself a constant (JAX's custom_jvp instantiates it): still 0.
  auto g = xpr::custom_jvp(constant, [](auto primals, auto) {
    auto [x] = primals;
    return std::pair{constant(x), 0.0};
  });
  EXPECT_EQ(xpr::grad(g)(1.0).item<double>(), 0.0);
}

// jax.jvp(jax.checkpoint(lambda x: (jnp.sin(x), 4.)), (1.,), (1.,)) is
// ((sin 1, 4.), (cos 1, 0.)).
TEST(ConstantOutputs, JvpOfCheckpointWithAConstantOutput) {
  auto [y, t] = xpr::jvp(xpr::checkpoint(constant), 1.0, 1.0);
  EXPECT_EQ(y.item<double>(), 4.0);
  EXPECT_EQ(t.item<double>(), 0.0);
  auto [ys, ts] = xpr::jvp(xpr::checkpoint(sin_and_constant), 1.0, 1.0);
  EXPECT_DOUBLE_EQ(std::get<0>(ys).item<double>(), std::sin(1.0));
  EXPECT_EQ(std::get<1>(ys).item<double>(), 4.0);
  EXPECT_DOUBLE_EQ(std::get<0>(ts).item<double>(), std::cos(1.0));
  EXPECT_EQ(std::get<1>(ts).item<double>(), 0.0);
}

// jax.vjp(lambda x: 4., 1.)[1](1.) is (0.,); of the array constant with cotangent [1 1 1], (0.,);
// of the identity, the cotangent itself.
TEST(ConstantOutputs, Vjp) {
  expect_zeros(std::get<0>(xpr::vjp(constant, 1.0).second(1.0)), Shape{}, xpr::float64);
  expect_zeros(std::get<0>(xpr::vjp(xpr::checkpoint(constant), 1.0).second(1.0)), Shape{},
               xpr::float64);
  auto [y, arr_vjp] = xpr::vjp(array_constant, 2.0);
  EXPECT_EQ(values(y), (std::vector<double>{1.0, 2.0, 3.0}));
  expect_zeros(std::get<0>(arr_vjp(xpr::ones(Shape{3}))), Shape{}, xpr::float64);
  auto [x, id_vjp] = xpr::vjp(identity, xpr::array({1.0, 2.0}));
  EXPECT_EQ(values(std::get<0>(id_vjp(xpr::array({5.0, 6.0})))), (std::vector<double>{5.0, 6.0}));
  // Mixed outputs: cotangents (2, 7) give 2 cos(1) + 7 * 0.
  auto [ys, mixed_vjp] = xpr::vjp(sin_and_constant, 1.0);
  EXPECT_DOUBLE_EQ(std::get<0>(mixed_vjp(std::tuple{2.0, 7.0})).item<double>(),
                   2.0 * std::cos(1.0));
}

// jax.linearize(lambda x: 4., 1.) is (4., f_jvp) with f_jvp(3.) == 0.; of the identity, 3.
TEST(ConstantOutputs, Linearize) {
  auto [y, lin] = xpr::linearize(constant, 1.0);
  EXPECT_EQ(y.item<double>(), 4.0);
  expect_zeros(lin(3.0), Shape{}, xpr::float64);
  EXPECT_EQ(xpr::linearize(xpr::checkpoint(constant), 1.0).second(3.0).item<double>(), 0.0);
  EXPECT_EQ(xpr::linearize(identity, 1.0).second(3.0).item<double>(), 3.0);
  // Its jaxpr is JAX's `{ lambda ; a:f64[]. let  in (0.0:f64[],) }`.
  xpr::ClosedJaxpr j = xpr::make_jaxpr(lin)(3.0);
  EXPECT_NO_THROW(xpr::typecheck_jaxpr(j));
  const Array arg = xpr::full(Shape{}, 3.0);
  EXPECT_EQ(xpr::eval_jaxpr(j.jaxpr, j.consts, std::span(&arg, 1))[0].item<double>(), 0.0);
}

// jax.jacfwd and jax.jacrev of lambda x: jnp.array([1., 2., 3.]) at x of shape (2,) are zeros of
// shape (3, 2); of lambda x: 4., zeros of shape (2,); of the identity, the identity matrix.
TEST(ConstantOutputs, JacfwdAndJacrev) {
  Array x = xpr::array({1.0, 2.0});
  expect_zeros(xpr::jacfwd(array_constant)(x), Shape{3, 2}, xpr::float64);
  expect_zeros(xpr::jacrev(array_constant)(x), Shape{3, 2}, xpr::float64);
  expect_zeros(xpr::jacfwd(constant)(x), Shape{2}, xpr::float64);
  expect_zeros(xpr::jacrev(constant)(x), Shape{2}, xpr::float64);
  std::vector<double> eye{1.0, 0.0, 0.0, 1.0};
  EXPECT_EQ(values(xpr::jacfwd(identity)(x)), eye);
  EXPECT_EQ(values(xpr::jacrev(identity)(x)), eye);
  // Scalar input, array-constant output: shape (3,).
  expect_zeros(xpr::jacfwd(array_constant)(1.0), Shape{3}, xpr::float64);
  expect_zeros(xpr::jacrev(array_constant)(1.0), Shape{3}, xpr::float64);
  // A constant among several outputs: (diag(cos x), zeros((2,))).
  auto f = [](auto v) { return std::tuple{xpr::sin(v), 4.0}; };
  for (const auto& jac : {xpr::jacfwd(f)(x), xpr::jacrev(f)(x)}) {
    EXPECT_EQ(std::get<0>(jac).shape(), (Shape{2, 2}));
    std::vector<double> d = values(std::get<0>(jac));
    EXPECT_DOUBLE_EQ(d[0], std::cos(1.0));
    EXPECT_EQ(d[1], 0.0);
    EXPECT_DOUBLE_EQ(d[3], std::cos(2.0));
    expect_zeros(std::get<1>(jac), Shape{2}, xpr::float64);
  }
}

// jax.hessian(lambda x: 4.)(x) is zeros((2, 2)); of lambda x: jnp.sum(x), also zeros((2, 2)) (a
// linear function); at a scalar, 0.
TEST(ConstantOutputs, Hessian) {
  Array x = xpr::array({1.0, 2.0});
  expect_zeros(xpr::hessian(constant)(x), Shape{2, 2}, xpr::float64);
  expect_zeros(xpr::hessian([](auto v) { return xpr::sum(v); })(x), Shape{2, 2}, xpr::float64);
  expect_zeros(xpr::hessian(constant)(1.0), Shape{}, xpr::float64);
  expect_zeros(xpr::hessian(xpr::checkpoint(constant))(1.0), Shape{}, xpr::float64);
}

// jax.vmap broadcasts an unbatched output along out_axes: vmap(lambda x: 4.)(x) for x of shape
// (2,) is [4. 4.]; of the array constant, [[1 2 3] [1 2 3]]; vmap of the identity is x.
TEST(ConstantOutputs, VmapBroadcastsAConstantOutput) {
  Array x = xpr::array({1.0, 2.0});
  Array y = xpr::vmap(constant)(x);
  EXPECT_EQ(y.shape(), Shape{2});
  EXPECT_EQ(values(y), (std::vector<double>{4.0, 4.0}));
  Array ya = xpr::vmap(array_constant)(x);
  EXPECT_EQ(ya.shape(), (Shape{2, 3}));
  EXPECT_EQ(values(ya), (std::vector<double>{1.0, 2.0, 3.0, 1.0, 2.0, 3.0}));
  // out_axes=1: shape (3, 2).
  Array yt = xpr::vmap(array_constant, 0, 1)(x);
  EXPECT_EQ(yt.shape(), (Shape{3, 2}));
  EXPECT_EQ(values(yt), (std::vector<double>{1.0, 1.0, 2.0, 2.0, 3.0, 3.0}));
  EXPECT_EQ(values(xpr::vmap(identity)(x)), values(x));
  // vmap of grad of a constant: zeros((2,)).
  expect_zeros(xpr::vmap(xpr::grad(constant))(x), Shape{2}, xpr::float64);
  // make_jaxpr(vmap(lambda x: 4.))(x) broadcasts the literal:
  // `b:f64[2] = broadcast_in_dim[broadcast_dimensions=() shape=(2,)] 4.0:f64[]`.
  xpr::ClosedJaxpr j = xpr::make_jaxpr(xpr::vmap(constant))(x);
  EXPECT_NE(text(j).find("broadcast_in_dim[broadcast_dimensions=() shape=(2,)] 4.0:f64[]"),
            std::string::npos)
      << text(j);
  EXPECT_NO_THROW(xpr::typecheck_jaxpr(j));
}

// jax.make_jaxpr(jax.grad(lambda x: 4.))(1.) is `{ lambda ; a:f64[]. let  in (0.0:f64[],) }`.
TEST(ConstantOutputs, MakeJaxprOfGradOfAConstant) {
  xpr::ClosedJaxpr j = xpr::make_jaxpr(xpr::grad(constant))(1.0);
  EXPECT_EQ(text(j), "{ lambda ; a:f64[]. let  in (0.0:f64[],) }");
  EXPECT_NO_THROW(xpr::typecheck_jaxpr(j));
}

}  // namespace test_rt_constant_outputs
