// The library reads an Array's type through `xpr::rt::detail::aval_of`, which `jit` does not count
// as reading a size. Found by argument-dependent lookup, `aval_of(x)` on an Array in user code
// would be that read, and a jitted function computing with the size it gave would reuse one
// size's trace at another, silently; it names a deleted function instead. `x.aval()` counts.
// expect: use of deleted function
#include "xpr/xpr.hpp"

int main() {
  auto f = xpr::jit([](const xpr::Array& x) {
#ifdef XPR_SHOULD_FAIL
    return x * static_cast<double>(aval_of(x).shape[0]);
#else
    return x * static_cast<double>(x.aval().shape[0]);
#endif
  });
  return f(xpr::array({1.0, 1.0})).item<double>() == 2.0 ? 0 : 1;
}
