// The linear function of linearize called with fewer tangents than primals stops in its own
// static_assert, the first error (it was g++'s "mismatched argument pack lengths").
// expect: xpr::ct::linearize: give one tangent per primal
// expect-first
#include "xpr/ct/ct.hpp"

int main() {
  auto [y, f_lin] = xpr::ct::linearize([](auto a, auto b) { return a * b; }, 2.0, 3.0);
#ifdef XPR_SHOULD_FAIL
  return f_lin(1.0) == 3.0 ? 0 : 1;
#else
  return f_lin(1.0, 0.0) == 3.0 && y == 6.0 ? 0 : 1;
#endif
}
