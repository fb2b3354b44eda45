// SPDX-License-Identifier: MIT
// What the `pjit` primitive's impl calls: run a jaxpr as native code, or interpret it where code
// generation cannot (a primitive it does not cover, traced arguments, no working compiler).
#pragma once

#include <iostream>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "xpr/codegen/entry.hpp"
#include "xpr/codegen/kernel.hpp"
#include "xpr/core/config.hpp"
#include "xpr/rt/jaxpr_eval.hpp"

namespace xpr::codegen {

namespace detail {
void warn_no_compiler_once(const std::string& why);
}  // namespace detail

}  // namespace xpr::codegen

#if XPR_DEFINITIONS

namespace xpr::codegen::detail {

XPR_FUNC void warn_no_compiler_once(const std::string& why) {
  static std::once_flag once;
  std::call_once(once,
                 [&] { std::cerr << "xpr: " << why << "; jit falls back to the interpreter\n"; });
}

}  // namespace xpr::codegen::detail

namespace xpr::codegen {

XPR_FUNC std::shared_ptr<const Kernel> kernel_for(const rt::Jaxpr& jaxpr,
                                                  const JitOptions& options) {
  if (options.backend == rt::JitBackend::interpreter) return nullptr;
  if (options.backend == rt::JitBackend::compiled) return compile(jaxpr, options);
  try {
    return compile(jaxpr, options);
  } catch (const no_compiler_error& e) {
    detail::warn_no_compiler_once(e.what());
  } catch (const core::not_implemented_error& e) {
    detail::log_line(std::string("interpreting: ") + e.what());
  }
  return nullptr;
}

XPR_FUNC std::vector<rt::Array> execute(const rt::Jaxpr& jaxpr, std::span<const rt::Array> consts,
                                        std::span<const rt::Array> args,
                                        const JitOptions& options) {
  if (options.backend == rt::JitBackend::interpreter) return rt::eval_jaxpr(jaxpr, consts, args);
  bool concrete = true;
  for (const rt::Array& a : args) concrete = concrete && a.is_concrete();
  for (const rt::Array& a : consts) concrete = concrete && a.is_concrete();
  if (!concrete) {
    if (options.backend == rt::JitBackend::compiled)
      throw core::type_error("jit(backend=compiled): codegen::execute was given traced arguments");
    return rt::eval_jaxpr(jaxpr, consts, args);
  }
  if (std::shared_ptr<const Kernel> k = kernel_for(jaxpr, options)) return k->run(args, consts);
  return rt::eval_jaxpr(jaxpr, consts, args);
}

XPR_FUNC std::vector<rt::Array> execute(const rt::ClosedJaxpr& jaxpr,
                                        std::span<const rt::Array> args,
                                        const JitOptions& options) {
  return execute(jaxpr.jaxpr, jaxpr.consts, args, options);
}

XPR_FUNC std::string lower_to_source(const rt::Jaxpr& jaxpr, const JitOptions& options) {
  return lower(jaxpr, options).source;
}

XPR_FUNC std::string lower_to_source(const rt::ClosedJaxpr& jaxpr, const JitOptions& options) {
  return lower_to_source(jaxpr.jaxpr, options);
}

}  // namespace xpr::codegen
#endif  // XPR_DEFINITIONS
