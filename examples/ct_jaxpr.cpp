// Jaxprs at compile time: the text of a function and of its gradient, in JAX's syntax, as
// compile-time strings (checked by static_assert here) and printed at run time.
// Output: examples/ct_jaxpr.out. See docs/compile-time.md.
#include <xpr/ct/ct.hpp>

#include <iostream>

constexpr auto f = [](auto x, auto y) { return xpr::sin(x) - xpr::exp(x + y); };

// The jaxpr JAX prints for f (with 64-bit floats), checked while compiling.
static_assert(xpr::ct::make_jaxpr<double, double>(f) ==
              "{ lambda ; a:f64[] b:f64[]. let\n"
              "    c:f64[] = sin a\n"
              "    d:f64[] = add a b\n"
              "    e:f64[] = exp d\n"
              "    f:f64[] = sub c e\n"
              "  in (f,) }");

int main() {
  std::cout << "f:\n" << xpr::ct::make_jaxpr(f)(1.0, 2.0) << "\n";
  std::cout << "grad<0, 1>(f):\n" << xpr::ct::make_jaxpr<double, double>(xpr::ct::grad<0, 1>(f)) << "\n";
  // Shared subexpressions are computed once; literals never merge; x*1 and x+0 vanish.
  auto g = [](auto x) { return xpr::sin(x) * xpr::sin(x) + x * 2.0 + x * 3.0 + (x * 1.0 + 0.0); };
  std::cout << "g:\n" << xpr::ct::make_jaxpr<float>(g) << "\n";
  std::cout << "grad(g) in f32:\n" << xpr::ct::make_jaxpr<float>(xpr::ct::grad(g)) << "\n";
}
