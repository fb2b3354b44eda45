// SPDX-License-Identifier: MIT
// xprc: compiles a jaxpr text file (xpr's printer's syntax or JAX's) ahead of time into a C
// function with no dependency on xpr (xpr::aot::run_xprc; docs/aot.md). Exit status: 0 success,
// 1 an error in the input or the build (said on stderr), 2 a usage error.
#include <iostream>
#include <string>
#include <vector>

#include "xpr/aot.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return xpr::aot::run_xprc(args, std::cout, std::cerr);
}
