// Jaxprs as text: read a jaxpr written by hand in JAX's syntax, run it, print it back, compare
// jaxprs structurally, and see what malformed or ill-typed text reports. docs/jaxpr.md explains
// the syntax.
#include <functional>
#include <iostream>
#include <xpr/rt/creation.hpp>
#include <xpr/rt/prims/reduce.hpp>
#include <xpr/xpr.hpp>

int main() {
  // func1(first, second) = sum(first + sin(second) * 3.0), as JAX prints its jaxpr.
  const char* func1_text = R"({ lambda ; a:f64[3] b:f64[3]. let
    c:f64[3] = sin b
    d:f64[3] = mul c 3.0:f64[]
    e:f64[3] = add a d
    f:f64[] = reduce_sum[axes=(0,)] e
  in (f,) })";
  xpr::ClosedJaxpr func1 = xpr::parse_jaxpr(func1_text);
  std::cout << func1 << "\n";

  // Evaluate it: 1 + 2 + 3 + 3 * (sin 0 + sin 0.5 + sin 1).
  auto out = xpr::eval_jaxpr(func1, {xpr::array({1.0, 2.0, 3.0}), xpr::array({0.0, 0.5, 1.0})});
  std::cout << "func1 = " << xpr::float_repr(out[0].item<double>()) << "\n\n";

  // Any layout and any variable names are read; printing uses JAX's names and layout (one line
  // when it fits in 80 columns).
  xpr::ClosedJaxpr square_sin = xpr::parse_jaxpr(
      "{ lambda ; x:f64[]. let\n  y:f64[] = sin x\n  z:f64[] = mul y y\n  in (z,) }");
  std::cout << square_sin << "\n";

  // Jaxprs compare structurally: variables by position, literals by value.
  xpr::ClosedJaxpr renamed =
      xpr::parse_jaxpr("{ lambda ; p:f64[]. let q:f64[] = sin p; r:f64[] = mul q q in (r,) }");
  std::cout << "alpha-equivalent: " << std::boolalpha << (square_sin == renamed) << ", same hash: "
            << (std::hash<xpr::ClosedJaxpr>{}(square_sin) == std::hash<xpr::ClosedJaxpr>{}(renamed))
            << "\n\n";

  // Malformed text says where and what; ill-typed equations say what their primitive computes.
  try {
    xpr::parse_jaxpr("{ lambda ; a:f64[]. let\n    b:f64[] = sine a\n  in (b,) }");
  } catch (const xpr::parse_error& e) {
    std::cout << e.what() << "\n";
  }
  try {
    xpr::parse_jaxpr("{ lambda ; a:f64[3]. let b:f64[] = sin a in (b,) }");
  } catch (const xpr::type_error& e) {
    std::cout << e.what() << "\n";
  }
}
