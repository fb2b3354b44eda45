// The runtime tier: a binary function called with one argument stops in one static_assert
// naming both numbers, instead of pages of std::apply errors.
// expect: xpr: wrong number of arguments
#include "xpr/xpr.hpp"

int main() {
  auto f = [](auto x, auto y) { return x * y; };
#ifdef XPR_SHOULD_FAIL
  return xpr::grad(f)(1.0).item<double>() == 3.0 ? 0 : 1;
#else
  return xpr::grad(f)(1.0, 3.0).item<double>() == 3.0 ? 0 : 1;
#endif
}
