// Reverse-mode autodiff in the runtime tier: linearize, linear_transpose, vjp, grad (argnums,
// has_aux), value_and_grad, jacfwd, jacrev, hessian, and their compositions. docs/autodiff.md
// quotes this file; its exact output is examples/autodiff.out.
#include <xpr/xpr.hpp>

#include <iostream>
#include <map>
#include <string>
#include <tuple>

int main() {
  std::cout.precision(16);
  auto f = [](auto x, auto y) { return xpr::sin(x) - xpr::exp(x + y); };

  std::cout << "== linearize: the primal now, the tangent map for later\n";
  auto [f_out, f_jvp] = xpr::linearize(f, 1.0, 2.0);
  std::cout << "f(1., 2.) = " << f_out << "\n";
  std::cout << "f_jvp(1., 0.) = " << f_jvp(1.0, 0.0) << "\n";
  std::cout << xpr::make_jaxpr(f_jvp)(1.0, 0.0) << "\n";

  std::cout << "\n== linear_transpose: the tangent map run backwards\n";
  auto f_transp = xpr::linear_transpose(f_jvp, 1.0, 2.0);
  auto [ct_x, ct_y] = f_transp(1.0);
  std::cout << "f_transp(1.) = " << ct_x << ", " << ct_y << "\n";
  std::cout << xpr::make_jaxpr(f_transp)(1.0) << "\n";

  std::cout << "\n== vjp: linearize, then transpose\n";
  auto [out, f_vjp] = xpr::vjp(f, 1.0, 2.0);
  auto [gx, gy] = f_vjp(1.0);
  std::cout << "f_vjp(1.) = " << gx << ", " << gy << "\n";

  std::cout << "\n== grad (Autodidax Part 4)\n";
  auto g = [](auto x) {
    auto y = xpr::sin(x) * 2.;
    return -y + x;
  };
  std::cout << "grad(g)(3.) = " << xpr::grad(g)(3.0) << "\n";
  std::cout << "grad(grad(g))(3.) = " << xpr::grad(xpr::grad(g))(3.0) << "\n";
  auto [dx, dy] = xpr::grad<0, 1>(f)(1.0, 2.0);
  std::cout << "grad<0, 1>(f)(1., 2.) = " << dx << ", " << dy << "\n";
  auto [value, dfdx] = xpr::value_and_grad(f)(1.0, 2.0);
  std::cout << "value_and_grad(f)(1., 2.) = " << value << ", " << dfdx << "\n";
  std::cout.precision(6);

  std::cout << "\n== pytrees and has_aux\n";
  auto loss = [](const std::map<std::string, xpr::Array>& p, const xpr::Array& x) {
    auto err = p.at("w") * x + p.at("b") - 1.0;
    return std::pair{xpr::sum(err * err), xpr::max(xpr::abs(err))};
  };
  std::map<std::string, xpr::Array> params{{"w", xpr::array({0.5, -1.0})}, {"b", xpr::Array(0.1)}};
  auto [grads, max_err] = xpr::grad(loss, xpr::has_aux)(params, xpr::array({2.0, 3.0}));
  std::cout << "d loss / d w = " << grads.at("w") << ", d loss / d b = " << grads.at("b")
            << ", aux = " << max_err << "\n";

  std::cout << "\n== Jacobians and Hessians\n";
  auto h = [](auto x) { return xpr::sin(x) * x; };
  std::cout << "jacfwd(h)(x) =\n" << xpr::jacfwd(h)(xpr::array({0.0, 1.0, 2.0})) << "\n";
  std::cout << "jacrev(h)(x) =\n" << xpr::jacrev(h)(xpr::array({0.0, 1.0, 2.0})) << "\n";
  auto rosen = [](auto x, auto y) {
    return (1.0 - x) * (1.0 - x) + 100.0 * (y - x * x) * (y - x * x);
  };
  auto H = xpr::hessian<0, 1>(rosen)(1.0, 1.0);
  std::cout << "hessian<0, 1>(rosen)(1., 1.) = ((" << std::get<0>(std::get<0>(H)) << ", "
            << std::get<1>(std::get<0>(H)) << "), (" << std::get<0>(std::get<1>(H)) << ", "
            << std::get<1>(std::get<1>(H)) << "))\n";

  std::cout << "\n== composition\n";
  std::cout << "vmap(grad(h))(x) = " << xpr::vmap(xpr::grad(h))(xpr::array({0.0, 1.0, 2.0}))
            << "\n";
  std::cout << xpr::make_jaxpr(xpr::grad(h))(1.0) << "\n";
}
