// grad needs a scalar output and points to jacrev, which the twin uses.
// expect: xpr::ct::grad: the function must return a scalar
#include <array>

#include "xpr/ct/ct.hpp"

int main() {
  auto f = [](auto x) { return std::array{x * x, 2.0 * x}; };
#ifdef XPR_SHOULD_FAIL
  auto g = xpr::ct::grad(f)(3.0);
  return g[0] == 6.0 ? 0 : 1;
#else
  auto j = xpr::ct::jacrev(f)(3.0);
  return j[0] == 6.0 ? 0 : 1;
#endif
}
