// The same compiled derivative on xsimd batches: value and three partials of
// f(x, y, z) = sin(x) y + exp(x z) - log(1 + y^2) z over arrays, W lanes at a time, with the
// remainder on scalars. (xpr::ct::vmap writes this loop for you: examples/ct_w1.cpp.)
// Output: examples/ct_simd.out. See docs/compile-time.md.
#include <xpr/ct/ct.hpp>

#include <cmath>
#include <cstdio>
#include <tuple>
#include <vector>
#include <xsimd/xsimd.hpp>

constexpr auto w1 = [](auto x, auto y, auto z) {
  return xpr::sin(x) * y + xpr::exp(x * z) - xpr::log(1 + y * y) * z;
};

int main() {
  constexpr auto vg = xpr::ct::value_and_grad<0, 1, 2>(w1);
  const std::size_t n = 10;
  std::vector<double> x(n), y(n), z(n), v(n), gx(n), gy(n), gz(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = 0.1 * static_cast<double>(i);
    y[i] = 1.0 - 0.05 * static_cast<double>(i);
    z[i] = 0.5;
  }
  using B = xsimd::batch<double>;
  std::size_t i = 0;
  for (; i + B::size <= n; i += B::size) {
    auto [val, g] = vg(B::load_unaligned(&x[i]), B::load_unaligned(&y[i]), B::load_unaligned(&z[i]));
    val.store_unaligned(&v[i]);
    std::get<0>(g).store_unaligned(&gx[i]);
    std::get<1>(g).store_unaligned(&gy[i]);
    std::get<2>(g).store_unaligned(&gz[i]);
  }
  for (; i < n; ++i) {  // the tail, on doubles: the same program
    auto [val, g] = vg(x[i], y[i], z[i]);
    v[i] = val;
    std::tie(gx[i], gy[i], gz[i]) = g;
  }
  for (std::size_t k = 0; k < n; ++k)
    std::printf("x=%.1f  f=%.6f  df/dx=%.6f  df/dy=%.6f  df/dz=%.6f\n", x[k], v[k], gx[k], gy[k], gz[k]);
}
