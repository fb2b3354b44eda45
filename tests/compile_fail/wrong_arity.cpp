// A binary function called with one argument: the message names the expected and the given
// number of arguments (in the instantiation line and the note), not generic lambdas.
// expect: xpr::ct: wrong number of arguments
#include "xpr/ct/ct.hpp"

int main() {
  auto f = [](auto x, auto y) { return x * y; };
#ifdef XPR_SHOULD_FAIL
  return xpr::ct::grad(f)(1.0) == 3.0 ? 0 : 1;
#else
  return xpr::ct::grad(f)(1.0, 3.0) == 3.0 ? 0 : 1;
#endif
}
