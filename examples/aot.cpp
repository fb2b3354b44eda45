// docs/aot.md: xpr::aot::export_source writes a function, here the gradient of a loss, as a
// self-contained C++ source with a plain C ABI. examples/aot/ is a separate CMake project, with no
// dependency on xpr, that compiles the exported source and calls it.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <tuple>
#include <vector>

#include "xpr/xpr.hpp"

// The data both programs use: x[i, j] = sin(i + 2 j), y[i] = cos(3 i), w[j] = 0.1 j - 0.2.
xpr::Array data_x(long long n, long long d) {
  std::vector<double> v;
  for (long long i = 0; i < n; ++i)
    for (long long j = 0; j < d; ++j) v.push_back(std::sin(double(i + 2 * j)));
  return xpr::array(v, xpr::Shape{n, d});
}
xpr::Array data_y(long long n) {
  std::vector<double> v;
  for (long long i = 0; i < n; ++i) v.push_back(std::cos(double(3 * i)));
  return xpr::array(v);
}
xpr::Array data_w(long long d) {
  std::vector<double> v;
  for (long long j = 0; j < d; ++j) v.push_back(0.1 * double(j) - 0.2);
  return xpr::array(v);
}

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "aot_export";

  // Half the summed squared error of a one-layer model, and its gradient in the weights.
  auto loss = [](const xpr::Array& w, const xpr::Array& x, const xpr::Array& y) {
    return xpr::sum(xpr::integer_pow(xpr::tanh(xpr::matmul(x, w)) - y, 2)) * 0.5;
  };
  auto loss_grad = xpr::grad(loss);

  // Traced at an example (5 samples of 3 features): the sizes become parameters of the C function.
  xpr::aot::Exported e = xpr::aot::export_source(
      loss_grad, std::tuple{data_w(3), data_x(5, 3), data_y(5)}, dir, "loss_grad");
  std::cout << e.declaration << "\n";
  xpr::aot::compile_library(dir, "loss_grad");  // also dir/libloss_grad.so

  // The interpreter's values, which the consumer compares with its own.
  std::ofstream expected(dir + "/expected.txt");
  for (auto [n, d] : {std::pair{5LL, 3LL}, std::pair{40LL, 7LL}}) {
    xpr::Array g = loss_grad(data_w(d), data_x(n, d), data_y(n));
    std::cout << "n=" << n << " d=" << d << ": " << g << "\n";
    for (double v : g.to_vector<double>()) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", v);
      expected << buf << "\n";
    }
  }
}
