// Custom derivative rules and rematerialization in the runtime tier: xpr::custom_jvp (JAX's
// log1pexp with a stable derivative), xpr::custom_vjp (JAX's gradient clipping) and
// xpr::checkpoint. docs/custom-derivatives.md quotes this file; its exact output is
// examples/custom_derivatives.out.
#include <xpr/rt/checkpoint.hpp>
#include <xpr/rt/custom_derivatives.hpp>
#include <xpr/xpr.hpp>

#include <iostream>
#include <tuple>
#include <utility>

int main() {
  std::cout.precision(16);

  std::cout << "== custom_jvp: a stable derivative for log(1 + exp(x))\n";
  auto log1pexp_fn = [](auto x) { return xpr::log(1.0 + xpr::exp(x)); };
  auto log1pexp = xpr::custom_jvp(log1pexp_fn, [=](auto primals, auto tangents) {
    auto [x] = primals;
    auto [x_dot] = tangents;
    auto ans = log1pexp_fn(x);
    auto ans_dot = x_dot * (1.0 - 1.0 / (1.0 + xpr::exp(x)));
    return std::pair{ans, ans_dot};
  });
  xpr::Array x100 = xpr::full(xpr::Shape{}, 100.0f);  // f32, where exp(100) overflows
  std::cout << "log1pexp(3.) = " << log1pexp(3.0) << "\n";
  std::cout << "grad(log1pexp)(100.f) = " << xpr::grad(log1pexp)(x100) << "\n";
  std::cout << "grad(log1pexp_fn)(100.f) = " << xpr::grad(log1pexp_fn)(x100) << "\n";
  auto [y, y_dot] = xpr::jvp(log1pexp, 3.0, 1.0);
  std::cout << "jvp(log1pexp, 3., 1.) = " << y << ", " << y_dot << "\n";
  std::cout << "vmap(grad(log1pexp)) = " << xpr::vmap(xpr::grad(log1pexp))(xpr::array({0.0, 2.0}))
            << "\n";
  std::cout << "grad(grad(log1pexp))(0.) = " << xpr::grad(xpr::grad(log1pexp))(0.0) << "\n";
  std::cout << xpr::make_jaxpr(log1pexp)(3.0) << "\n";

  std::cout << "\n== custom_vjp: clip the gradient on the way back\n";
  auto clip_gradient = xpr::custom_vjp(
      [](auto lo, auto hi, auto x) {
        (void)lo, (void)hi;
        return x;  // the identity, forwards
      },
      [](auto lo, auto hi, auto x) {
        return std::pair{x, std::tuple{lo, hi}};
      },
      [](auto res, auto g) {
        auto [lo, hi] = res;
        return std::tuple{xpr::zeros_like(lo), xpr::zeros_like(hi),
                          xpr::minimum(xpr::maximum(g, lo), hi)};
      });
  auto f = [&](auto x) { return clip_gradient(-0.75, 0.75, xpr::sin(x)); };
  std::cout << "f(2.) = " << f(2.0) << "\n";
  std::cout << "grad(f)(2.) = " << xpr::grad(f)(2.0) << "  (0.75 cos 2, not cos 2)\n";
  try {
    (void)xpr::jvp(f, 2.0, 1.0);
  } catch (const xpr::type_error& e) {
    std::cout << "jvp(f): type_error: " << e.what() << "\n";
  }

  std::cout << "\n== checkpoint: recompute instead of storing\n";
  auto g = [](auto x) { return xpr::sin(xpr::sin(xpr::sin(x))); };
  auto [g_out, g_lin] = xpr::linearize(g, 1.0);
  std::cout << xpr::make_jaxpr(g_lin)(1.0) << "\n";
  auto [gc_out, gc_lin] = xpr::linearize(xpr::checkpoint(g), 1.0);
  std::cout << xpr::make_jaxpr(gc_lin)(1.0) << "\n";
  std::cout << "grad(g)(1.) = " << xpr::grad(g)(1.0) << "\n";
  std::cout << "grad(checkpoint(g))(1.) = " << xpr::grad(xpr::checkpoint(g))(1.0) << "\n";
}
