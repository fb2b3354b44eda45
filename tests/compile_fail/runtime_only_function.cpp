// A function the compile-time tier does not define for tracers (xpr::round exists only in the
// runtime tier) stops the compilation with a message that says such functions exist, not only
// "use xpr:: functions" (found by an examiner: the call was already xpr::round).
// expect: exist only in the runtime tier
#include "xpr/ct/ct.hpp"

int main() {
#ifdef XPR_SHOULD_FAIL
  double g = xpr::ct::grad([](auto x) { return xpr::round(x) * x; })(1.4);
#else
  double g = xpr::ct::grad([](auto x) { return xpr::floor(x) * x; })(1.4);
#endif
  return g == 1.0 ? 0 : 1;
}
