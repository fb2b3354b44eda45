// docs/jit.md: xpr::jit traces a function once per input signature and runs it as one call;
// under grad, vmap and the other transformations the call stays one `pjit` equation.
#include <cstdio>
#include <iostream>
#include <string>

#include "xpr/xpr.hpp"

int main() {
  // A side effect shows when the function is traced: once per signature.
  auto f = xpr::jit(
      [](auto x) {
        std::cout << "tracing!\n";
        return xpr::sum(xpr::sin(x) * 2.0 - x);
      },
      {.name = "f"});
  // Six decimals: the compiled sin (glibc's vector libm) and the kernel's order of summation
  // differ from the interpreter's in the last bits.
  auto show = [](const xpr::Array& y) { std::printf("%.6f\n", y.item<double>()); };
  xpr::Array x = xpr::array({0.0, 1.0, 2.0});
  show(f(x));
  show(f(x + 1.0));                   // same shape and dtype: no tracing
  show(f(xpr::array({1.0, 2.0})));    // another size: f read none, no tracing
  show(f(xpr::array({1.0f, 2.0f})));  // another dtype: traced again

  // jit composes with the transformations, in either order.
  std::cout << xpr::grad(f)(x) << "\n";
  std::cout << xpr::jit(xpr::grad(f))(x) << "\n";
  std::cout << xpr::vmap(f)(xpr::array({{0.0, 1.0, 2.0}, {3.0, 4.0, 5.0}})) << "\n";

  // The jitted call as JAX prints it, and under grad: a known pjit and its transpose.
  std::cout << xpr::make_jaxpr(f)(x) << "\n";
  std::cout << xpr::make_jaxpr(xpr::grad(f))(x) << "\n";

  // Static arguments are passed as their C++ values and are part of the cache key.
  auto power = xpr::jit(
      [](auto y, int n) {
        auto r = y;
        for (int i = 1; i < n; ++i) r = r * y;
        return r;
      },
      {.name = "power", .static_argnums = {1}});
  std::cout << power(2.0, 3) << " " << power(2.0, 10) << "\n";

  // lower: the traced jaxpr and the source the code generator compiles from it.
  xpr::Lowered lowered = f.lower(x);
  std::cout << lowered.jaxpr() << "\n";
  std::cout << (lowered.as_text().empty() ? "no source" : "source available") << "\n";
}
