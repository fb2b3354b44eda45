// The README's first example, compiled and run by ctest (its output is examples/readme.out).
#include <xpr/xpr.hpp>

#include <iostream>
#include <tuple>

int main() {
  auto f = [](auto x, auto y) { return xpr::sin(x) * y + xpr::exp(x * y); };

  double v = f(1.0, 2.0);                          // plain numbers compute at once
  xpr::Array a = f(xpr::array({1.0, 2.0}), 3.0);   // runtime arrays, jax.numpy semantics
  auto [y, dy] = xpr::jvp(f, std::tuple{1.0, 2.0}, std::tuple{1.0, 0.0});  // forward mode
  xpr::Array b = xpr::vmap(f)(xpr::array({1.0, 2.0}), xpr::array({3.0, 4.0}));  // batching
  std::cout << xpr::make_jaxpr(f)(1.0, 2.0) << "\n";   // the program, in JAX's syntax

  std::cout << v << "\n" << a << "\n" << y << " " << dy << "\n" << b << "\n";
}
