// `xpr::array(values, {})` reads as "the empty shape"; with a DType parameter `{}` was DType{},
// bool, and made a rank-1 bool array of any values, silently. Now `{}` cannot be a dtype: the
// std::vector form takes it as the shape (a rank-0 array), and the initializer-list form, which
// takes no shape, does not compile.
// expect: no matching function
#include "xpr/xpr.hpp"

int main() {
#ifdef XPR_SHOULD_FAIL
  const xpr::Array a = xpr::array({1.5}, {});
#else
  const xpr::Array a = xpr::array(std::vector<double>{1.5}, {});
#endif
  return a.ndim() == 0 && a.item<double>() == 1.5 ? 0 : 1;
}
