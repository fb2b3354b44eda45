// A lambda that captures a run-time value cannot be traced at compile time; the message says to
// pass the value as an extra argument, which the twin does.
// expect: Pass a captured value as an extra, non-differentiated argument instead
#include "xpr/ct/ct.hpp"

int main(int argc, char**) {
  const double p = argc + 0.5;
#ifdef XPR_SHOULD_FAIL
  auto f = [p](auto x) { return xpr::exp(p * x); };
  return xpr::ct::grad(f)(1.0) > 0 ? 0 : 1;
#else
  auto f = [](auto x, auto q) { return xpr::exp(q * x); };
  return xpr::ct::grad<0>(f)(1.0, p) > 0 ? 0 : 1;
#endif
}
