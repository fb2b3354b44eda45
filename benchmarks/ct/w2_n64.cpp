// SPDX-License-Identifier: MIT
// W2, the extended Rosenbrock gradient, for n = 64: see w2.hpp.
#include "benchmarks/ct/w2.hpp"

int main(int argc, char** argv) { return w2::w2_main<64>(argc, argv); }
