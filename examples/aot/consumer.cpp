// Calls the function examples/aot.cpp exported, through its C header only: this project does not
// use xpr. argv[1] is the interpreter's results (expected.txt, written by the exporter).
#include <cmath>
#include <cstdio>
#include <fstream>
#include <vector>

#include "loss_grad.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer EXPECTED.txt\n");
    return 2;
  }
  std::ifstream expected(argv[1]);
  int failures = 0;
  for (long long n : {5LL, 40LL}) {
    const long long d = n == 5 ? 3 : 7;
    std::vector<double> x, y, w, g(static_cast<std::size_t>(d));
    for (long long i = 0; i < n; ++i)
      for (long long j = 0; j < d; ++j) x.push_back(std::sin(double(i + 2 * j)));
    for (long long i = 0; i < n; ++i) y.push_back(std::cos(double(3 * i)));
    for (long long j = 0; j < d; ++j) w.push_back(0.1 * double(j) - 0.2);
    // loss_grad(in0: f64[n0], in1: f64[n1,n0], in2: f64[n1]) -> (out0: f64[n0])
    const int rc = loss_grad(w.data(), x.data(), y.data(), g.data(), d, n);
    if (rc != 0) {
      std::printf("loss_grad returned %d\n", rc);
      return 1;
    }
    for (double v : g) {
      double want = 0;
      if (!(expected >> want) || std::fabs(v - want) > 1e-12 * (1 + std::fabs(want))) {
        std::printf("n=%lld d=%lld: %.17g, the interpreter gives %.17g\n", n, d, v, want);
        ++failures;
      }
    }
    std::printf("n=%lld d=%lld: %s\n", n, d, failures ? "differs" : "matches the interpreter");
  }
  return failures ? 1 : 0;
}
