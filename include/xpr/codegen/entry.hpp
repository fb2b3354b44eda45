// SPDX-License-Identifier: MIT
// The code generator as the runtime tier and its users call it (rt/jit.hpp,
// `xpr::jit_cache_stats`): declarations only. The lowering (codegen/emit.hpp), the compiler driver
// and the caches (codegen/compiler.hpp, cache.hpp) are the definitions' business:
// codegen/execute.hpp includes them, and rt/jit.hpp includes it only with the definitions, so a
// unit compiled with XPR_COMPILED_LIB parses none of them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/core/error.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/jaxpr.hpp"
#include "xpr/rt/jit_options.hpp"

namespace xpr::codegen {

/// `jit`'s options (rt/jit_options.hpp); codegen reads `precise_math`.
using rt::JitOptions;

class Kernel;  // codegen/kernel.hpp

/// Raised when no compiler works (XPR_CXX names none): jit interprets instead.
struct no_compiler_error : core::error {
  using core::error::error;
};

/// What the jit cache did in this process.
struct JitCacheStats {
  std::uint64_t compiles = 0;     // kernels built by running the compiler
  std::uint64_t memory_hits = 0;  // kernels found already loaded in this process
  std::uint64_t disk_hits = 0;    // kernels loaded from the disk cache
  /// Programs in the process-wide table of kernels now (at most `max_kernels_in_memory`).
  std::uint64_t kernels_in_memory = 0;
};

/// Compiles, memory hits and disk hits of the jit cache in this process so far.
JitCacheStats jit_cache_stats();

/// The process-wide table of kernels (one per program, each input shape a program) holds at most
/// this many: a process that jits ever new shapes or functions would otherwise keep every
/// program it met. Past it the table is emptied and starts again; a program met again is lowered
/// again and finds its object still loaded (no compile, no `dlopen`). A jitted function keeps the
/// kernels of its own traces while it lives.
inline constexpr std::size_t max_kernels_in_memory = 4096;

/// The kernel `execute` runs for `jaxpr` under `options` once its arguments are concrete, or null
/// where it interprets instead: `interpreter` always; `automatic` when the jaxpr holds a primitive
/// codegen does not cover (docs/codegen.md lists them) or when no compiler works (said once on
/// stderr). Under `compiled` every failure is let through (`compile_error`,
/// `not_implemented_error` naming an uncovered primitive, a missing compiler). A compiler that
/// rejects the generated code is a bug in the generator, so it is `compile_error` under every
/// backend. `jit` keeps the result per input signature, so a repeat call skips this lookup.
std::shared_ptr<const Kernel> kernel_for(const rt::Jaxpr& jaxpr, const JitOptions& options = {});

/// Runs `jaxpr` on `args` (with `consts` the values of its constvars) through `kernel_for`'s
/// kernel, or the interpreter where it gives none or an argument is traced (under `compiled`, a
/// traced argument is a `type_error`).
std::vector<rt::Array> execute(const rt::Jaxpr& jaxpr, std::span<const rt::Array> consts,
                               std::span<const rt::Array> args, const JitOptions& options = {});

/// The signature `pjit`'s impl calls: `jaxpr.consts` are the constvars' values.
std::vector<rt::Array> execute(const rt::ClosedJaxpr& jaxpr, std::span<const rt::Array> args,
                               const JitOptions& options = {});

/// The C++ source `jaxpr` lowers to (what `jit(f).lower(args...).as_text()` shows). Throws
/// `not_implemented_error` for a primitive codegen does not cover.
std::string lower_to_source(const rt::Jaxpr& jaxpr, const JitOptions& options = {});
std::string lower_to_source(const rt::ClosedJaxpr& jaxpr, const JitOptions& options = {});

}  // namespace xpr::codegen

namespace xpr {
using codegen::jit_cache_stats;
using codegen::JitCacheStats;
}  // namespace xpr
