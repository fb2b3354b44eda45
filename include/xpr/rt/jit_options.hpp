// SPDX-License-Identifier: MIT
// `xpr::JitOptions`: what `xpr::jit(f, options)` is told besides `f` (JAX's keyword arguments of
// `jax.jit`). A header of its own because both the jit primitive (rt/jit.hpp) and the code
// generator's entry points (codegen/execute.hpp) take it.
#pragma once

#include <string>
#include <vector>

#include "xpr/core/config.hpp"

namespace xpr::rt {

/// Where a jitted function runs.
enum class JitBackend {
  automatic,    ///< compiled code when a compiler works, else the interpreter (said once on stderr)
  interpreter,  ///< always the jaxpr interpreter (`eval_jaxpr`): no compiler involved
  compiled,     ///< always compiled code; a compiler failure is an error, never a fallback
};

/// The options of `xpr::jit(f, options)`. Designated initializers read like JAX's keywords:
///
///     auto g = xpr::jit(f, {.name = "f", .static_argnums = {1}});
struct JitOptions {
  /// The name printed in `pjit[name=...]` (JAX prints the Python function's `__name__`; a C++
  /// lambda has none, so the default is what JAX prints for a Python lambda).
  std::string name = "<lambda>";
  /// Positions of arguments passed to `f` as the C++ values they are (not traced) and made part
  /// of the cache key: a new value retraces. See docs/jit.md for which arguments may be static.
  std::vector<int> static_argnums = {};
  /// Compiled code, the interpreter, or whichever works.
  JitBackend backend = JitBackend::automatic;
  /// Transcendentals through the scalar libm calls (0.5 ulp) instead of the vector math library
  /// (about 4 ulp, several times faster).
  bool precise_math = false;
};

/// `automatic`, `interpreter`, `compiled`: as `pjit[backend=...]` prints it.
const char* backend_name(JitBackend b);

}  // namespace xpr::rt

namespace xpr {
using rt::JitBackend;
using rt::JitOptions;
}  // namespace xpr

#if XPR_DEFINITIONS

namespace xpr::rt {

XPR_FUNC const char* backend_name(JitBackend b) {
  switch (b) {
    case JitBackend::automatic:
      return "automatic";
    case JitBackend::interpreter:
      return "interpreter";
    case JitBackend::compiled:
      return "compiled";
  }
  return "automatic";
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
