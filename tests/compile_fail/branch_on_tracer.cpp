// Branching on a traced value with `if` fails, and says to use xpr::where; the twin uses it.
// expect: xpr::ct: a traced value cannot decide a C++ branch
#include "xpr/ct/ct.hpp"

int main() {
#ifdef XPR_SHOULD_FAIL
  auto relu = [](auto x) {
    if (x > 0) return x;
    return 0 * x;
  };
#else
  auto relu = [](auto x) { return xpr::where(x > 0, x, 0.0); };
#endif
  return xpr::ct::grad(relu)(2.0) == 1.0 ? 0 : 1;
}
