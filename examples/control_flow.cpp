// Control flow on traced values: xpr::cond and xpr::switch_ (branches staged as one `cond`
// equation), xpr::while_loop (a `while` equation), each through make_jaxpr, grad, vmap and jvp,
// and xpr::cond in the compile-time tier. docs/control-flow.md quotes this file; its exact output
// is examples/control_flow.out.
#include <iostream>
#include <tuple>
#include <xpr/xpr.hpp>

int main() {
  using xpr::Array;
  std::cout.precision(16);

  std::cout << "== cond\n";
  auto f = [](Array x) {
    return xpr::cond(
        x > 0.0, [](Array v) { return xpr::sin(v) * v; }, [](Array v) { return xpr::exp(v); }, x);
  };
  std::cout << "f(2.) = " << f(2.0) << ", f(-1.) = " << f(-1.0) << "\n";
  std::cout << "grad(f)(2.) = " << xpr::grad(f)(2.0) << "  (sin 2 + 2 cos 2)\n";
  std::cout << "grad(f)(-1.) = " << xpr::grad(f)(-1.0) << "  (exp(-1))\n";
  std::cout << xpr::make_jaxpr(f)(2.0) << "\n";

  // The branches may close over other values, tracers of enclosing transformations included.
  auto g = [](Array x, Array y) {
    return xpr::cond(
        x > 0.0, [&](Array v) { return v * y; }, [&](Array v) { return v + y * y; }, x);
  };
  auto [gx, gy] = xpr::grad<0, 1>(g)(-2.0, 3.0);
  std::cout << "grad(g)(-2., 3.) = (" << gx << ", " << gy << ")\n";

  std::cout << "\n== vmap of cond: a batched predicate becomes select_n\n";
  Array xs = xpr::array({-1.0, 0.5, 2.0});
  std::cout << "vmap(f)(xs) = " << xpr::vmap(f)(xs) << "\n";
  std::cout << "vmap(grad(f))(xs) = " << xpr::vmap(xpr::grad(f))(xs) << "\n";
  std::cout << xpr::make_jaxpr(xpr::vmap(f))(xs) << "\n";

  std::cout << "\n== switch_\n";
  auto h = [](Array i, Array x) {
    return xpr::switch_(i,
                        std::tuple{[](Array v) { return v; }, [](Array v) { return v * v; },
                                   [](Array v) { return xpr::sin(v); }},
                        x);
  };
  for (int i : {-1, 0, 1, 2, 5})
    std::cout << "h(" << i << ", 2.) = " << h(Array(i), 2.0)
              << ", grad = " << xpr::grad<1>(h)(Array(i), 2.0) << "\n";

  std::cout << "\n== while_loop: Newton's method for x^3 = a\n";
  using State = std::tuple<Array, Array, Array>;  // x, a, iterations
  auto newton = [](Array a) {
    return xpr::while_loop(
        [](const State& s) {
          auto [x, a_, n] = s;
          return xpr::abs(x * x * x - a_) > 1e-12 * a_;
        },
        [](const State& s) {
          auto [x, a_, n] = s;
          return State{x - (x * x * x - a_) / (3.0 * x * x), a_, n + 1};
        },
        State{a, a, Array(0)});
  };
  auto cbrt = [&](Array a) { return std::get<0>(newton(a)); };
  std::cout << "cbrt(27.) = " << cbrt(27.0) << "\n";
  auto [y, y_dot] = xpr::jvp(cbrt, 8.0, 1.0);
  std::cout << "jvp(cbrt, 8., 1.) = " << y << ", " << y_dot << "  (1 / (3 * 8^(2/3)) = 1/12)\n";
  auto [roots, as, steps] = xpr::vmap(newton)(xpr::array({2.0, 1000.0, 1e6}));
  std::cout << "vmap: roots " << roots << ", steps " << steps << "\n";
  try {
    (void)xpr::grad(cbrt)(8.0);
  } catch (const xpr::type_error& e) {
    std::cout << "grad(cbrt): type_error: " << e.what() << "\n";
  }
  std::cout << xpr::make_jaxpr([](Array n) {
    return xpr::while_loop([&](Array i) { return i < n; }, [](Array i) { return i * 2; }, 1);
  })(Array(100))
            << "\n";

  std::cout << "\n== the compile-time tier: cond selects\n";
  auto k = [](auto x) {
    return xpr::cond(
        x > 0, [](auto v) { return v * v; }, [](auto v) { return -v; }, x);
  };
  std::cout << "ct::grad(k)(3.) = " << xpr::ct::grad(k)(3.0)
            << ", ct::grad(k)(-3.) = " << xpr::ct::grad(k)(-3.0) << "\n";
  std::cout << "k(3.) = " << k(3.0) << ", k(-3.) = " << k(-3.0) << "  (plain numbers branch)\n";
}
