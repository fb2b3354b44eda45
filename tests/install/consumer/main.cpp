// A consumer of the installed library: includes the umbrella header and computes something.
#include <xpr/xpr.hpp>

#include <cmath>
#include <iostream>

int main() {
  double y = xpr::sin(0.5) * xpr::exp(0.25);
  bool ok = std::abs(y - std::sin(0.5) * std::exp(0.25)) < 1e-15;
  std::cout << (ok ? "consumer ok" : "consumer wrong") << " " << XPR_VERSION_STRING << "\n";
  return ok ? 0 : 1;
}
