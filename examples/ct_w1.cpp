// W1: the value and three partials of f(x, y, z) = sin(x) y + exp(x z) - log(1 + y^2) z at every
// point of three arrays, by xpr::ct::vmap: the SIMD loop of examples/ct_simd.cpp, written for
// you (xsimd batches, the remainder as one padded batch), in f64 and in f32.
// Output: examples/ct_w1.out. See docs/compile-time.md.
#include <xpr/ct/ct.hpp>

#include <cstdio>
#include <span>
#include <tuple>
#include <vector>

constexpr auto w1 = [](auto x, auto y, auto z) {
  return xpr::sin(x) * y + xpr::exp(x * z) - xpr::log(1 + y * y) * z;
};

int main() {
  const std::size_t n = 10;
  std::vector<double> x(n), y(n), z(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = 0.1 * static_cast<double>(i);
    y[i] = 1.0 - 0.05 * static_cast<double>(i);
    z[i] = 0.5;
  }

  // One Eigen array per scalar leaf of the result, in order: value, df/dx, df/dy, df/dz.
  constexpr auto vg = xpr::ct::value_and_grad<0, 1, 2>(w1);
  auto [f, fx, fy, fz] = xpr::ct::vmap(vg)(x, y, z);
  for (Eigen::Index i = 0; i < f.size(); ++i)
    std::printf("x=%.1f  f=%.6f  df/dx=%.6f  df/dy=%.6f  df/dz=%.6f\n", x[i], f[i], fx[i], fy[i], fz[i]);

  // into: the caller's arrays, nothing allocated. Here in f32, with z = 0.5 shared by every
  // point (a C++ number is weakly typed: it joins the f32 program).
  std::vector<float> xf(x.begin(), x.end()), yf(y.begin(), y.end()), v(n), gx(n), gy(n);
  xpr::ct::vmap(xpr::ct::value_and_grad<0, 1>(w1))
      .into(std::tuple{std::span(v), std::span(gx), std::span(gy)}, xf, yf, 0.5);
  std::printf("f32 at x=0.9: f=%.5f  df/dx=%.5f  df/dy=%.5f\n", v[9], gx[9], gy[9]);

  // Large inputs can be split across threads when compiled with OpenMP (-fopenmp); without it,
  // or below the size threshold, this is the same single-threaded loop.
  Eigen::ArrayXd g = xpr::ct::vmap(xpr::ct::grad<0>(w1)).parallel()(x, y, z);
  std::printf("df/dx at x=0.9: %.6f\n", g[9]);
}
