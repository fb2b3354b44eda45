// jvp with a tangents tuple shorter than the primals tuple.
// expect: xpr::jvp: primal and tangent arguments must have the same tree structure
#include <tuple>

#include "xpr/xpr.hpp"

int main() {
  auto f = [](auto x, auto y) { return x * y; };
#ifdef XPR_SHOULD_FAIL
  auto [y, t] = xpr::jvp(f, std::tuple{1.0, 2.0}, std::tuple{1.0});
#else
  auto [y, t] = xpr::jvp(f, std::tuple{1.0, 2.0}, std::tuple{1.0, 0.0});
#endif
  return t.item<double>() == 2.0 ? 0 : 1;
}
