// A function too large for the compile-time tier: the Lennard-Jones energy of 64 particles,
// pairwise loops over std::array (about 30 000 traced equations). Tracing stops counting past
// xpr::ct::max_traced_equations, and one static_assert names the count, the limit and the ways
// out, instead of g++'s "constexpr evaluation operation count exceeds limit".
// expect: xpr::ct: the function is too large for the compile-time tier
#include <array>

#include "xpr/ct/ct.hpp"

#ifdef XPR_SHOULD_FAIL
constexpr int num_particles = 64;
#else
constexpr int num_particles = 4;
#endif

int main() {
  auto energy = [](const auto& x) {
    auto e = x[0] * 0.0;
    for (int i = 0; i < num_particles; ++i)
      for (int j = i + 1; j < num_particles; ++j) {
        auto dx = x[3 * i] - x[3 * j];
        auto dy = x[3 * i + 1] - x[3 * j + 1];
        auto dz = x[3 * i + 2] - x[3 * j + 2];
        auto s6 = 1.0 / xpr::integer_pow(dx * dx + dy * dy + dz * dz, 3);
        e = e + 4.0 * (s6 * s6 - s6);
      }
    return e;
  };
  std::array<double, 3 * num_particles> x{};
  for (int i = 0; i < 3 * num_particles; ++i) x[i] = 1.1 * i;
  auto g = xpr::ct::grad(energy)(x);
  return g[0] == g[0] ? 0 : 1;
}
