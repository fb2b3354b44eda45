// jvp needs one tangent per primal, shaped like it.
// expect: xpr::ct::jvp: the tangents must have the structure of the primals
#include <array>
#include <tuple>

#include "xpr/ct/ct.hpp"

int main() {
  auto f = [](const auto& v, auto s) { return v[0] * v[1] * s; };
  const std::array<double, 2> v{1.0, 2.0};
#ifdef XPR_SHOULD_FAIL
  auto [y, t] = xpr::ct::jvp(f, std::tuple{v, 3.0}, std::tuple{1.0, v});
#else
  auto [y, t] = xpr::ct::jvp(f, std::tuple{v, 3.0}, std::tuple{v, 1.0});
#endif
  return y == 6.0 && t == 14.0 ? 0 : 1;
}
