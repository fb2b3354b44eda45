// jit of a function returning no array (here a string) stops in jit's own static_assert, which
// names the jitted function's result, and that is the first error.
// expect: xpr::jit: the jitted function must return an xpr::Array
// expect-first
#include <string>

#include "xpr/xpr.hpp"

int main() {
#ifdef XPR_SHOULD_FAIL
  auto f = [](const xpr::Array& x) { return std::string(x.ndim() == 0 ? "scalar" : "array"); };
  (void)xpr::jit(f)(1.0);
  return 0;
#else
  auto f = [](const xpr::Array& x) { return x * 2.0; };
  return xpr::jit(f)(1.0).item<double>() == 2.0 ? 0 : 1;
#endif
}
