// A function returning a std::vector (a size known only at run time) stops in a static_assert
// that names the result and the types it may be, the first error (it was g++'s "incomplete type
// Tree<std::vector<Tracer>>").
// expect: xpr::ct: the function returns a type the compile-time tier does not take as a result
// expect-first
#include <array>
#include <vector>

#include "xpr/ct/ct.hpp"

int main() {
#ifdef XPR_SHOULD_FAIL
  auto j = xpr::ct::jacrev([](auto x) { return std::vector{x, x * 2.0}; })(1.0);
  return j[1] == 2.0 ? 0 : 1;
#else
  auto j = xpr::ct::jacrev([](auto x) { return std::array{x, x * 2.0}; })(1.0);
  return j[1] == 2.0 ? 0 : 1;
#endif
}
