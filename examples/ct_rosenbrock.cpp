// The extended Rosenbrock function written as an ordinary loop over a fixed-size vector, its
// gradient and its (tridiagonal) Hessian, all resolved at compile time. Works for std::array
// and Eigen fixed-size vectors alike.
// Output: examples/ct_rosenbrock.out. See docs/compile-time.md.
#include <xpr/ct/ct.hpp>

#include <Eigen/Core>
#include <array>
#include <cstdio>

// Every traced value has the same C++ type, so the accumulator is declared like the elements.
constexpr auto rosenbrock = [](const auto& x) {
  decltype(x[0] * x[0]) s = 0;
  for (std::size_t i = 0; i + 1 < x.size(); ++i)
    s += 100 * xpr::square(x[i + 1] - x[i] * x[i]) + xpr::square(1 - x[i]);
  return s;
};

int main() {
  std::array<double, 16> x{};
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = i % 2 ? 1.2 : -0.8;

  auto [value, g] = xpr::ct::value_and_grad(rosenbrock)(x);
  std::printf("f(x) = %.4f\ngrad f = [", value);
  for (double gi : g) std::printf(" %.2f", gi);
  std::printf(" ]\n");

  auto h = xpr::ct::hessian(rosenbrock)(x);
  std::printf("Hessian rows 0-3, columns 0-4:\n");
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 5; ++j) std::printf(" %8.1f", h[i][j]);
    std::printf("\n");
  }

  // An Eigen fixed-size vector in, the same Eigen type out.
  Eigen::Vector4d v(-1.2, 1.0, -1.2, 1.0);
  Eigen::Vector4d gv = xpr::ct::grad(rosenbrock)(v);
  std::printf("grad at (-1.2, 1, -1.2, 1) = (%.2f, %.2f, %.2f, %.2f)\n", gv(0), gv(1), gv(2), gv(3));
}
