// An argument named twice in argnums (here once from the end) fails at the call, rather than
// giving one of the two gradients as 0.
// expect: xpr::ct: an argument is named twice in argnums
#include "xpr/ct/ct.hpp"

int main() {
  auto f = [](auto x, auto y) { return x * y; };
#ifdef XPR_SHOULD_FAIL
  auto [a, b] = xpr::ct::grad<1, -1>(f)(1.0, 2.0);
#else
  auto [a, b] = xpr::ct::grad<0, -1>(f)(1.0, 2.0);
#endif
  return a == 2.0 && b == 1.0 ? 0 : 1;
}
