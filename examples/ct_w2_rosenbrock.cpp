// W2: the gradient of the extended Rosenbrock function in 16 dimensions, written as an ordinary
// loop over a fixed-size std::array, at a batch of independent points. The points are stored as
// one array per coordinate (structure of arrays), so xpr::ct::vmap loads W points' coordinate j
// as one SIMD batch; a std::array of arrays is one structured per-point argument.
// Output: examples/ct_w2_rosenbrock.out. See docs/compile-time.md.
#include <xpr/ct/ct.hpp>

#include <array>
#include <cstdio>
#include <span>
#include <tuple>
#include <vector>

constexpr std::size_t dim = 16;

// Every traced value has the same C++ type, so the accumulator is declared like the elements.
constexpr auto rosenbrock = [](const auto& x) {
  decltype(x[0] * x[0]) s = 0;
  for (std::size_t i = 0; i + 1 < x.size(); ++i)
    s += 100 * xpr::square(x[i + 1] - x[i] * x[i]) + xpr::square(1 - x[i]);
  return s;
};

int main() {
  const std::size_t m = 6;  // points
  std::array<std::vector<double>, dim> xs;  // xs[j][p]: coordinate j of point p
  for (std::size_t j = 0; j < dim; ++j)
    for (std::size_t p = 0; p < m; ++p)
      xs[j].push_back((j % 2 ? 1.2 : -0.8) + 0.1 * static_cast<double>(p));

  // At each point, f and its 16 partials, written into the caller's arrays: the outputs follow
  // the result's leaves, (value, gradient[0..15]), so a tuple of a span and 16 spans.
  std::vector<double> f(m);
  std::array<std::vector<double>, dim> g;
  std::array<std::span<double>, dim> gs;
  for (std::size_t j = 0; j < dim; ++j) {
    g[j].resize(m);
    gs[j] = g[j];
  }
  constexpr auto vg = xpr::ct::value_and_grad(rosenbrock);
  xpr::ct::vmap(vg).into(std::tuple{std::span(f), gs}, xs);

  for (std::size_t p = 0; p < m; ++p) {
    std::printf("point %zu: f = %9.4f  grad[0..3] = [", p, f[p]);
    for (std::size_t j = 0; j < 4; ++j) std::printf(" %9.4f", g[j][p]);
    std::printf(" ]  grad[15] = %8.4f\n", g[dim - 1][p]);
  }

  // The same as one point at a time, without vmap:
  std::array<double, dim> x0;
  for (std::size_t j = 0; j < dim; ++j) x0[j] = xs[j][0];
  auto [f0, g0] = vg(x0);
  std::printf("point 0 alone: f = %9.4f  grad[0] = %9.4f\n", f0, g0[0]);
}
