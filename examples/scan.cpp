// Loops with reverse mode: xpr::scan (one `scan` equation; grad runs a reverse scan), checkpoint
// in a scan body (fewer residuals), xpr::fori_loop (a scan for static bounds) and
// xpr::while_loop(..., xpr::max_trips(N)) (a bounded while loop that grad differentiates).
// docs/control-flow.md quotes this file; its exact output is examples/scan.out.
#include <cmath>
#include <iostream>
#include <span>
#include <tuple>
#include <utility>
#include <xpr/rt/checkpoint.hpp>
#include <xpr/xpr.hpp>

int main() {
  using xpr::Array;
  std::cout.precision(16);

  std::cout << "== scan\n";
  auto cumsum = [](Array xs) {
    auto body = [](Array carry, Array x) { return std::pair{carry + x, carry + x}; };
    auto [total, partial_sums] = xpr::scan(body, 0.0, xs);
    return partial_sums;
  };
  Array xs = xpr::array({1.0, 2.0, 3.0, 4.0});
  std::cout << "cumsum = " << cumsum(xs) << "\n";
  std::cout << xpr::make_jaxpr(cumsum)(xs) << "\n";

  // The body closes over w (a const of the scan); reverse walks xs from the end.
  auto horner = [](Array coeffs, Array w) {
    auto body = [&](Array acc, Array c) { return std::pair{acc * w + c, std::tuple<>{}}; };
    return xpr::scan(body, 0.0, coeffs, std::nullopt, /*reverse=*/true).first;
  };
  Array coeffs = xpr::array({1.0, -2.0, 0.5});  // 1 - 2 w + 0.5 w^2
  std::cout << "horner(3.) = " << horner(coeffs, 3.0) << "\n";
  std::cout << "d/dw = " << xpr::grad<1>(horner)(coeffs, 3.0) << "  (-2 + w)\n";
  std::cout << "d/dcoeffs = " << xpr::grad<0>(horner)(coeffs, 3.0) << "  (1, w, w^2)\n";
  std::cout << xpr::make_jaxpr(xpr::grad<1>(horner))(coeffs, 3.0) << "\n";

  std::cout << "== checkpoint in a scan body\n";
  // A damped pendulum, x'' + c x' + 4 sin x = 0, by midpoint steps; the final angle against c.
  using State = std::pair<Array, Array>;
  auto accel = [](Array x, Array v, Array c) { return -c * v - 4.0 * xpr::sin(x); };
  auto step = [accel](State s, Array c) {
    auto [x, v] = s;
    Array xm = x + 0.005 * v, vm = v + 0.005 * accel(x, v, c);
    return State{x + 0.01 * vm, v + 0.01 * accel(xm, vm, c)};
  };
  auto final_x = [&](Array c) {
    auto body = [&](State s, std::tuple<>) { return std::pair{step(s, c), std::tuple<>{}}; };
    return xpr::scan(body, State{1.0, 0.0}, std::nullopt, 1000).first.first;
  };
  auto final_x_remat = [&](Array c) {
    auto remat_step = xpr::checkpoint(step);
    auto body = [&](State s, std::tuple<>) { return std::pair{remat_step(s, c), std::tuple<>{}}; };
    return xpr::scan(body, State{1.0, 0.0}, std::nullopt, 1000).first.first;
  };
  std::cout << "grad(final_x)(0.5) = " << xpr::grad(final_x)(0.5) << "\n";
  std::cout << "with checkpoint     " << xpr::grad(final_x_remat)(0.5) << "\n";
  auto residual_bytes = [](auto f) {
    xpr::rt::FlatFunction flat = [&](std::span<const Array> in) {
      return xpr::rt::Arrays{f(in[0])};
    };
    auto [y, linear] = xpr::rt::linearize_flat(flat, xpr::rt::Arrays{Array(0.5)});
    std::size_t bytes = 0;
    for (const Array& r : linear.consts) bytes += static_cast<std::size_t>(r.size()) * 8;
    return bytes;
  };
  std::cout << "residual bytes: " << residual_bytes(final_x) << " without checkpoint, "
            << residual_bytes(final_x_remat) << " with\n";

  std::cout << "== fori_loop\n";
  auto power = [](Array x) {
    return xpr::fori_loop(
        0, 5, [&](Array, Array acc) { return acc * x; }, 1.0);
  };
  std::cout << "power(2.) = " << power(2.0) << ", grad = " << xpr::grad(power)(2.0)
            << "  (5 x^4)\n";

  std::cout << "== while_loop with max_trips\n";
  auto cbrt = [](Array a) {
    return xpr::while_loop([&](const Array& x) { return xpr::abs(x * x * x - a) > 1e-12 * a; },
                           [&](const Array& x) { return x - (x * x * x - a) / (3.0 * x * x); },
                           1.0 + a / 3.0, xpr::max_trips(50));
  };
  std::cout << "cbrt(8.) = " << cbrt(8.0) << ", grad = " << xpr::grad(cbrt)(8.0)
            << "  (1 / (3 * 8^(2/3)) = 1/12)\n";
  std::cout << "vmap(grad(cbrt)) = " << xpr::vmap(xpr::grad(cbrt))(xpr::array({1.0, 8.0, 1e6}))
            << "\n";
  auto cbrt2 = [](Array a) {
    return xpr::while_loop([&](const Array& x) { return xpr::abs(x * x * x - a) > 1e-12 * a; },
                           [&](const Array& x) { return x - (x * x * x - a) / (3.0 * x * x); },
                           1.0 + a / 3.0, xpr::max_trips(2));
  };
  try {
    xpr::grad(cbrt2)(8.0);
  } catch (const xpr::value_error& e) {
    std::cout << "grad(cbrt2): value_error: " << e.what() << "\n";
  }
}
