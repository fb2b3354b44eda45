// jit of a unary function called with two arguments stops in the same static_assert as grad, and
// that is the only error: the jitted call's result type is not formed first, and the call gives an
// Array, so using its result adds no errors of its own.
// expect: xpr: wrong number of arguments
// expect-first
// expect-only
#include "xpr/xpr.hpp"

int main() {
  auto f = [](const xpr::Array& x) { return x * 2.0; };
#ifdef XPR_SHOULD_FAIL
  return xpr::jit(f)(1.0, 2.0).item<double>() == 2.0 ? 0 : 1;
#else
  return xpr::jit(f)(1.0).item<double>() == 2.0 ? 0 : 1;
#endif
}
