// An argnum that names no argument fails at the call.
// expect: xpr::ct: an argnum is out of range
#include "xpr/ct/ct.hpp"

int main() {
  auto f = [](auto x, auto y) { return x * y; };
#ifdef XPR_SHOULD_FAIL
  return xpr::ct::grad<2>(f)(1.0, 2.0) == 1.0 ? 0 : 1;
#else
  return xpr::ct::grad<1>(f)(1.0, 2.0) == 1.0 ? 0 : 1;
#endif
}
