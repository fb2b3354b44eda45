// vmap with an in_axes tuple of three entries for two arguments.
// expect: xpr::vmap: in_axes must be an integer, xpr::not_mapped, or a std::tuple
#include <tuple>

#include "xpr/xpr.hpp"

int main() {
  auto f = [](auto x, auto y) { return x * y; };
  xpr::Array xs = xpr::array({1.0, 2.0});
#ifdef XPR_SHOULD_FAIL
  xpr::Array r = xpr::vmap(f, std::tuple{0, 0, 0})(xs, xs);
#else
  xpr::Array r = xpr::vmap(f, std::tuple{0, 0})(xs, xs);
#endif
  return r.to_vector<double>()[1] == 4.0 ? 0 : 1;
}
