// Integer arguments are not traced values; the message says to convert them.
// expect: convert integers to double
#include "xpr/ct/ct.hpp"

int main() {
  auto f = [](auto x, auto n) { return x * n; };
#ifdef XPR_SHOULD_FAIL
  return xpr::ct::grad(f)(1.0, 3) == 3.0 ? 0 : 1;
#else
  return xpr::ct::grad(f)(1.0, 3.0) == 3.0 ? 0 : 1;
#endif
}
