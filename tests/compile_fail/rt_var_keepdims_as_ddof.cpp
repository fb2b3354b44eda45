// jnp.var's positional order is (x, axis, ddof, keepdims). In C++ `xpr::var(x, 0, true)` would
// convert `true` to ddof = 1 and divide by N - 1 where the writer meant keepdims: a silently wrong
// variance. A bool in ddof's place does not compile.
// expect: use of deleted function
#include "xpr/xpr.hpp"

int main() {
  const xpr::Array x = xpr::array({1.0, 2.0, 3.0, 4.0});
#ifdef XPR_SHOULD_FAIL
  const xpr::Array v = xpr::var(x, 0, true);
#else
  const xpr::Array v = xpr::var(x, 0, 0, true);
#endif
  return v.ndim() == 1 ? 0 : 1;
}
