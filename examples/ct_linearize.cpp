// Forward and reverse mode the JAX way: jvp, linearize (evaluate the linear part many times on
// residuals computed once) and vjp (the transposed linear part), on a function of a vector.
// Output: examples/ct_linearize.out. See docs/compile-time.md.
#include <xpr/ct/ct.hpp>

#include <array>
#include <cstdio>
#include <tuple>

int main() {
  // R^3 -> R^2
  auto f = [](const auto& x) {
    return std::array{x[0] * x[1] * x[2], xpr::sin(x[0]) + x[2] / x[1]};
  };
  const std::array<double, 3> x{0.5, 2.0, -1.5};

  // jvp: f(x) and J t in one pass.
  auto [y, yt] = xpr::ct::jvp(f, std::tuple{x}, std::tuple{std::array{1.0, 0.0, 0.0}});
  std::printf("f(x) = (%.6f, %.6f), J e0 = (%.6f, %.6f)\n", y[0], y[1], yt[0], yt[1]);

  // linearize: y and a linear function t -> J t.
  auto [y2, f_lin] = xpr::ct::linearize(f, x);
  for (int j = 0; j < 3; ++j) {
    std::array<double, 3> e{};
    e[j] = 1.0;
    auto col = f_lin(e);
    std::printf("J e%d = (%.6f, %.6f)\n", j, col[0], col[1]);
  }
  (void)y2;

  // vjp: c -> J^T c, one tuple entry per argument of f.
  auto [y3, f_vjp] = xpr::ct::vjp(f, x);
  auto [xbar] = f_vjp(std::array{1.0, 0.0});
  std::printf("J^T e0 = (%.6f, %.6f, %.6f)\n", xbar[0], xbar[1], xbar[2]);
  (void)y3;

  // The whole Jacobian, by forward or reverse mode.
  auto jac = xpr::ct::jacrev(f)(x);
  std::printf("J = [[%.3f %.3f %.3f] [%.3f %.3f %.3f]]\n", jac[0][0], jac[0][1], jac[0][2],
              jac[1][0], jac[1][1], jac[1][2]);
}
