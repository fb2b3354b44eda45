// Sizes known only at run time are the runtime tier's; the compile-time tier says so.
// expect: xpr::ct: unsupported argument type
#include <array>
#include <vector>

#include "xpr/ct/ct.hpp"

int main() {
  auto f = [](const auto& x) { return x[0] * x[1]; };
#ifdef XPR_SHOULD_FAIL
  std::vector<double> x{1.0, 2.0};
#else
  std::array<double, 2> x{1.0, 2.0};
#endif
  auto g = xpr::ct::grad(f)(x);
  return g[0] == 2.0 ? 0 : 1;
}
