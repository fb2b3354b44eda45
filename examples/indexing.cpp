// Indexing in the runtime tier: x[i], x(i, j, ...) with integers, traced integers, ranges,
// all/newaxis/ellipsis and integer arrays; x.at(...) functional updates; take, take_along_axis,
// segment_sum; each traced under grad, vmap and make_jaxpr. docs/indexing.md quotes this file;
// its exact output is examples/indexing.out.
#include <cstdint>
#include <iostream>
#include <vector>
#include <xpr/xpr.hpp>

int main() {
  using xpr::Array;
  std::cout << "== basic indexing\n";
  Array a = xpr::reshape(xpr::arange(0.0, 12.0), {3, 4});
  std::cout << a << "\n";
  std::cout << "a[1] = " << a[1] << ", a[-1] = " << a[-1] << ", a(1, 2) = " << a(1, 2) << "\n";
  std::cout << "a(xpr::all, 1) = " << a(xpr::all, 1) << "\n";
  std::cout << "a(xpr::range(1, xpr::none), xpr::range(xpr::none, xpr::none, -2)) =\n"
            << a(xpr::range(1, xpr::none), xpr::range(xpr::none, xpr::none, -2)) << "\n";
  std::cout << "a(xpr::ellipsis, 0) = " << a(xpr::ellipsis, 0) << "\n";
  std::cout << "a(xpr::newaxis, 0).shape() = " << a(xpr::newaxis, 0).shape() << "\n";

  std::cout << "\n== traced indices: grad through x[i], the jaxpr of x[i]\n";
  auto rosen = [](auto x) {
    auto acc = x[0] * 0.0;
    for (int i = 0; i + 1 < 4; ++i) {
      auto d = x[i + 1] - x[i] * x[i];
      acc = acc + 100.0 * d * d + (1.0 - x[i]) * (1.0 - x[i]);
    }
    return acc;
  };
  Array x = xpr::array({0.3, -0.7, 1.1, 0.5});
  std::cout << "grad(rosen)(x) = " << xpr::grad(rosen)(x) << "\n";
  std::cout << xpr::make_jaxpr([](Array v) { return v[1]; })(x) << "\n";
  std::cout << xpr::make_jaxpr([](Array v, Array i) { return v[i]; })(x, Array(2)) << "\n";
  // A traced index out of bounds is clamped, as lax.dynamic_slice clamps.
  auto at_i = xpr::make_jaxpr([](Array v, Array i) { return v[i]; })(x, Array(0));
  std::cout << "v[i] at i = 9: " << xpr::eval_jaxpr(at_i, {x, Array(9)})[0] << "\n";

  std::cout << "\n== integer arrays (advanced indexing: a gather)\n";
  Array idx = xpr::array(std::vector<std::int32_t>{2, 0, -1});
  std::cout << "a[idx] =\n" << a[idx] << "\n";
  std::cout << "a(xpr::all, idx) =\n" << a(xpr::all, idx) << "\n";
  std::cout << "a(idx, idx) = " << a(idx, idx) << "\n";

  std::cout << "\n== x.at(...): updates return a new array\n";
  Array z = xpr::zeros({5});
  Array ids = xpr::array(std::vector<std::int32_t>{1, 1, 3, 7});
  Array v = xpr::array({1.0, 2.0, 3.0, 4.0});
  std::cout << "z.at(ids).add(v) = " << z.at(ids).add(v) << "\n";
  std::cout << "z.at(ids).set(v) = " << z.at(ids).set(v) << "\n";
  std::cout << "z.at(2).set(9.0) = " << z.at(2).set(9.0) << ", z = " << z << "\n";
  std::cout << "x.at(ids).get() = " << x.at(ids).get() << "\n";

  std::cout << "\n== take, take_along_axis, segment_sum\n";
  std::cout << "take(a, idx, 1) =\n" << xpr::take(a, idx, 1) << "\n";
  std::cout << "take(a, {3, 12}) = " << xpr::take(a, xpr::array(std::vector<std::int32_t>{3, 12}))
            << "\n";
  Array cols = xpr::array(std::vector<std::int32_t>{3, 0, 1}, {3, 1});
  std::cout << "take_along_axis(a, cols, 1) = " << xpr::ravel(xpr::take_along_axis(a, cols, 1))
            << "\n";
  Array seg = xpr::array(std::vector<std::int32_t>{0, 2, 0, -1});
  std::cout << "segment_sum(v, seg, 3) = " << xpr::segment_sum(v, seg, 3) << "\n";

  std::cout << "\n== finite elements: assembly by segment_sum, its Jacobian\n";
  const std::int64_t n = 4;  // linear elements on [0, 1], element e joins nodes e and e + 1
  const double h = 1.0 / n;
  Array conn = xpr::array(std::vector<std::int32_t>{0, 1, 1, 2, 2, 3, 3, 4}, {n, 2});
  auto residual = [&](Array u) {
    Array ue = u[conn];  // gather: each element's two nodes
    Array du = (ue(xpr::all, 1) - ue(xpr::all, 0)) / h;
    Array re = xpr::stack({-du, du}, 1);  // [[1, -1], [-1, 1]] / h times u_e
    return xpr::segment_sum(xpr::ravel(re), xpr::ravel(conn), n + 1);
  };
  std::cout << "jacfwd(residual)(u) * h =\n"
            << xpr::jacfwd(residual)(xpr::zeros({n + 1})) * h << "\n";
}
