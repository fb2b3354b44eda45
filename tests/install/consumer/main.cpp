// A consumer of the installed library: includes the umbrella header and computes something with
// both tiers' functions, on plain numbers and on runtime arrays under grad.
#include <cmath>
#include <iostream>
#include <xpr/xpr.hpp>

double header_only_part(double x);  // header_only.cpp

int main() {
  double y = xpr::sin(0.5) * xpr::exp(0.25);
  bool ok = std::abs(y - std::sin(0.5) * std::exp(0.25)) < 1e-15;
  // d/dx sum(sin(x) * x) = cos(x) * x + sin(x), at x = 0.5
  auto f = [](auto x) { return xpr::sum(xpr::sin(x) * x); };
  double g = xpr::grad(f)(xpr::array({0.5})).item<double>();  // NOLINT
  ok = ok && std::abs(g - (std::cos(0.5) * 0.5 + std::sin(0.5))) < 1e-15;
  ok = ok && std::abs(header_only_part(0.5) - std::cos(0.5) * std::exp(0.5)) < 1e-15;
  std::cout << (ok ? "consumer ok" : "consumer wrong") << " " << XPR_VERSION_STRING << "\n";
  return ok ? 0 : 1;
}
