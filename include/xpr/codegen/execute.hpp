// SPDX-License-Identifier: MIT
// What the `pjit` primitive's impl calls: run a jaxpr as native code, or interpret it where code
// generation cannot (a primitive it does not cover, traced arguments, no working compiler).
#pragma once

#include <iostream>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "xpr/codegen/kernel.hpp"
#include "xpr/rt/jaxpr_eval.hpp"

namespace xpr::codegen {

namespace detail {
inline void warn_no_compiler_once(const std::string& why) {
  static std::once_flag once;
  std::call_once(once, [&] {
    std::cerr << "xpr: " << why << "; jit falls back to the interpreter\n";
  });
}
}  // namespace detail

/// Runs `jaxpr` on `args` (with `consts` the values of its constvars) as compiled native code.
/// Falls back to the interpreter (eval_jaxpr) when an argument is traced, when the jaxpr holds a
/// primitive codegen does not cover (docs/jit.md lists them), or when no compiler works (said once
/// on stderr). Throws `compile_error` when the compiler rejects the generated code.
inline std::vector<rt::Array> execute(const rt::Jaxpr& jaxpr, std::span<const rt::Array> consts,
                                      std::span<const rt::Array> args,
                                      const JitOptions& options = {}) {
  bool concrete = true;
  for (const rt::Array& a : args) concrete = concrete && a.is_concrete();
  for (const rt::Array& a : consts) concrete = concrete && a.is_concrete();
  if (concrete) {
    try {
      return compile(jaxpr, options)->run(args, consts);
    } catch (const no_compiler_error& e) {
      detail::warn_no_compiler_once(e.what());
    } catch (const core::not_implemented_error& e) {
      detail::log_line(std::string("interpreting: ") + e.what());
    }
  }
  return rt::eval_jaxpr(jaxpr, consts, args);
}

inline std::vector<rt::Array> execute(const rt::ClosedJaxpr& jaxpr,
                                      std::span<const rt::Array> args,
                                      const JitOptions& options = {}) {
  return execute(jaxpr.jaxpr, jaxpr.consts, args, options);
}

/// The C++ source `jaxpr` lowers to (what `jit(f).lower(args...).as_text()` shows). Throws
/// `not_implemented_error` for a primitive codegen does not cover.
inline std::string lower_to_source(const rt::Jaxpr& jaxpr, const JitOptions& options = {}) {
  return lower(jaxpr, options).source;
}

}  // namespace xpr::codegen
