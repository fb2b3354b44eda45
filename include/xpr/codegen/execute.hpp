// SPDX-License-Identifier: MIT
// The two entry points through which `xpr::jit` reaches the code generator: `execute` runs a
// jaxpr (the `pjit` primitive's impl calls it) and `lower_to_source` returns the C++ it would be
// compiled from (`jit(f).lower(args...).as_text()`). This version has no code generator behind
// it: `execute` interprets the jaxpr with `eval_jaxpr`, and `lower_to_source` says so and shows
// the jaxpr. The code generator (codegen/) replaces these bodies, keeping the signatures.
#pragma once

#include <span>
#include <string>

#include "xpr/rt/array.hpp"
#include "xpr/rt/jaxpr.hpp"
#include "xpr/rt/jaxpr_eval.hpp"
#include "xpr/rt/jaxpr_print.hpp"
#include "xpr/rt/jit_options.hpp"

namespace xpr::codegen {

/// Runs `jaxpr` on `args` and returns its outputs, as `eval_jaxpr(jaxpr, args)` would: `args`
/// are the values of `jaxpr.jaxpr.invars` (in order, of the types they declare) and
/// `jaxpr.consts` the values of its constvars. `options.backend` and `options.precise_math` say
/// how it may run (`options.name` names it in logs). The arguments are concrete Arrays, never
/// tracers: `pjit`'s impl calls this only at the bottom of the interpreter stack.
///
/// (No code generator here yet: every backend runs the interpreter.)
inline rt::Arrays execute(const rt::ClosedJaxpr& jaxpr, std::span<const rt::Array> args,
                          const rt::JitOptions& options) {
  (void)options;
  return rt::eval_jaxpr(jaxpr, args);
}

/// The C++ source that `execute` would compile for `jaxpr` under `options`.
///
/// (No code generator here yet: a comment saying so, then the jaxpr as text.)
inline std::string lower_to_source(const rt::ClosedJaxpr& jaxpr, const rt::JitOptions& options) {
  (void)options;
  return "// xpr: no C++ code generator in this build; jit runs the interpreter on this jaxpr:\n" +
         rt::pretty_print(jaxpr.jaxpr) + "\n";
}

}  // namespace xpr::codegen
