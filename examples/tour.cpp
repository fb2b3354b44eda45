// A tour of xpr: the same generic function in every mode. scripts/demo runs this file; each
// issue that adds a capability adds a section here.
#include <xpr/xpr.hpp>

#include <iostream>

int main() {
  // One generic function, written once with xpr's functions.
  auto f = [](auto x, auto y) { return xpr::sin(x) * y + xpr::exp(x * y); };

  std::cout << "== plain C++ numbers compute at once\n";
  std::cout << "f(1.0, 2.0) = " << f(1.0, 2.0) << "\n";
}
