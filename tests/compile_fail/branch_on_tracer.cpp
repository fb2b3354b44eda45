// Branching on a traced value with `if` fails, and says to use xpr::where or xpr::cond; the twin
// uses xpr::cond.
// expect: Select with xpr::where(cond, a, b) or xpr::cond(pred, true_fn, false_fn, operands...)
#include "xpr/ct/ct.hpp"

int main() {
#ifdef XPR_SHOULD_FAIL
  auto relu = [](auto x) {
    if (x > 0) return x;
    return 0 * x;
  };
#else
  auto relu = [](auto x) {
    return xpr::cond(
        x > 0, [](auto v) { return v; }, [](auto v) { return 0 * v; }, x);
  };
#endif
  return xpr::ct::grad(relu)(2.0) == 1.0 ? 0 : 1;
}
