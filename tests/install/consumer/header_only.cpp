// Compiled header-only even when the consumer links xpr::runtime (see CMakeLists.txt), so a
// program that mixes the modes is built and run.
#include <xpr/xpr.hpp>

// The derivative of sin(x) * exp(x), minus sin(x) * exp(x), is cos(x) * exp(x); computed with the
// runtime tier's arrays and grad.
double header_only_part(double x) {
  auto f = [](auto v) { return xpr::sum(xpr::sin(v) * xpr::exp(v)); };
  xpr::Array v = xpr::array({x});
  double d = xpr::grad(f)(v).item<double>();
  double s = xpr::sum(xpr::sin(v) * xpr::exp(v)).item<double>();
  return d - s;
}
