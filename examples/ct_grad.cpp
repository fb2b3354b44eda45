// Derivatives resolved at compile time: grad, value_and_grad, argnums, has_aux, and a
// parameter passed as an extra argument (a captureless lambda cannot capture it).
// Output: examples/ct_grad.out. See docs/compile-time.md.
#include <xpr/ct/ct.hpp>

#include <cstdio>
#include <tuple>

int main() {
  auto f = [](auto x, auto y) { return xpr::sin(x) * y + xpr::exp(x * y); };

  // grad<argnums...>: default argnum 0; one argnum gives a value, several a tuple.
  double dfdx = xpr::ct::grad(f)(1.0, 2.0);
  auto [gx, gy] = xpr::ct::grad<0, 1>(f)(1.0, 2.0);
  std::printf("df/dx = %.6f\n", dfdx);
  std::printf("(df/dx, df/dy) = (%.6f, %.6f)\n", gx, gy);

  // value_and_grad: the value and the gradient from one straight-line program.
  auto [value, dfdy] = xpr::ct::value_and_grad<1>(f)(1.0, 2.0);
  std::printf("f = %.6f, df/dy = %.6f\n", value, dfdy);

  // f32 in, f32 out.
  float g32 = xpr::ct::grad(f)(1.0f, 2.0f);
  std::printf("f32: df/dx = %.4f\n", static_cast<double>(g32));

  // A parameter is an extra, non-differentiated argument.
  auto model = [](auto x, auto rate) { return xpr::exp(-rate * x); };
  const double rate = 0.5;
  std::printf("d/dx exp(-%.1f x) at 2 = %.6f\n", rate, xpr::ct::grad<0>(model)(2.0, rate));

  // has_aux: f returns (value, aux); only the value is differentiated.
  auto with_aux = [](auto x) { return std::pair{x * x * x, xpr::sin(x)}; };
  auto [g3, aux] = xpr::ct::grad(with_aux, xpr::ct::has_aux)(2.0);
  std::printf("d/dx x^3 at 2 = %.1f, aux sin(2) = %.6f\n", g3, aux);

  // Transformations compose: the second derivative, and a Hessian-vector product by jvp of grad.
  std::printf("d2f/dx2 = %.6f\n", xpr::ct::grad(xpr::ct::grad(f))(1.0, 2.0));
  auto [grads, hvp] = xpr::ct::jvp(xpr::ct::grad<0, 1>(f), std::tuple{1.0, 2.0}, std::tuple{1.0, 0.0});
  std::printf("H [1 0]^T = (%.6f, %.6f)\n", std::get<0>(hvp), std::get<1>(hvp));
  (void)grads;
}
