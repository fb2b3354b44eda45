// A tour of xpr: the same generic function in every mode. scripts/demo runs this file; each
// capability adds a section here. Its exact output is examples/tour.out.
#include <xpr/xpr.hpp>

#include <iostream>
#include <tuple>

int main() {
  // One generic function, written once with xpr's functions.
  auto f = [](auto x, auto y) { return xpr::sin(x) * y + xpr::exp(x * y); };

  std::cout << "== plain C++ numbers compute at once\n";
  std::cout << "f(1.0, 2.0) = " << f(1.0, 2.0) << "\n";

  std::cout << "\n== runtime arrays: jax.numpy semantics, NumPy printing\n";
  xpr::Array xs = xpr::array({0.0, 0.5, 1.0});
  std::cout << "f(xs, 2.0) = " << f(xs, 2.0) << "\n";
  std::cout << "f32 array * 0.5 stays " << (xpr::ones({2}, xpr::float32) * 0.5).dtype() << "\n";

  // Autodidax Part 1: forward mode by an interpreter.
  auto g = [](auto x) {
    auto y = xpr::sin(x) * 2.;
    return -y + x;
  };
  std::cout << "\n== jvp (Autodidax Part 1)\n";
  std::cout.precision(16);
  auto [y, ydot] = xpr::jvp(g, std::tuple{3.0}, std::tuple{1.0});
  std::cout << "jvp(g, 3., 1.) = " << y << ", " << ydot << "\n";
  auto deriv = [](auto fn) {
    return [fn](auto x) { return xpr::jvp(fn, std::tuple{x}, std::tuple{1.0}).second; };
  };
  std::cout << "deriv(deriv(g))(3.) = " << deriv(deriv(g))(3.0) << "\n";
  std::cout.precision(6);

  std::cout << "\n== vmap: batching by an interpreter\n";
  std::cout << "vmap(g)(arange(3.)) = " << xpr::vmap(g)(xpr::arange(3.0)) << "\n";
  auto pushfwd = [](const xpr::Array& v) {
    return xpr::jvp(xpr::sin, std::tuple{xpr::arange(3.0)}, std::tuple{v}).second;
  };
  std::cout << "jacobian of sin at arange(3.) by vmap of jvp:\n"
            << xpr::vmap(pushfwd)(xpr::eye(3)) << "\n";

  std::cout << "\n== make_jaxpr: the program as data, in JAX's syntax\n";
  auto func1 = [](auto first, auto second) { return xpr::sum(first + xpr::sin(second) * 3.0); };
  std::cout << xpr::make_jaxpr(func1)(xpr::zeros({8}), xpr::ones({8})) << "\n";
  std::cout << xpr::make_jaxpr([&](auto x) { return deriv(xpr::sin)(x); })(3.0) << "\n";
}
