// grad of a function returning a comparison (a bool) stops the compilation, as JAX's "grad
// requires real-valued outputs", instead of a silent gradient of 0.
// expect: xpr::ct::grad: the function returns a bool or an integer
#include "xpr/ct/ct.hpp"

int main() {
#ifdef XPR_SHOULD_FAIL
  auto g = xpr::ct::grad([](auto x) { return x > 0; })(1.0);
#else
  auto g = xpr::ct::grad([](auto x) { return xpr::where(x > 0, x * 2.0, x); })(1.0);
#endif
  return g == 2.0 ? 0 : 1;
}
