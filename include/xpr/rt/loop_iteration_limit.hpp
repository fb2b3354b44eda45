// SPDX-License-Identifier: MIT
// `xpr::LoopIterationLimit`: a per-thread bound on the iterations that the loop primitives
// (`while`, `scan`) run while it is alive. A jaxpr read from text is untrusted input, and its
// `while` may never end (a predicate that stays true) or its `scan` may have a length of 2^62
// with no arrays to show for it; a program evaluating such text (the fuzz test, a server) bounds
// the work with this guard instead of hanging. Not in JAX, which has no such knob: without a
// guard nothing is counted. See docs/limitations.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "xpr/core/config.hpp"
#include "xpr/core/error.hpp"

namespace xpr::rt {

/// While alive, at most `n` loop iterations in total (each `while` or `scan` iteration on this
/// thread counts one, nested loops included) run; the next one throws `xpr::value_error`. Guards
/// nest: an inner guard cannot raise the outer bound, and what it lets run counts against the
/// outer one too.
class LoopIterationLimit {
 public:
  explicit LoopIterationLimit(std::int64_t n) : outer_(remaining()) {
    if (n < 0)
      throw core::value_error("LoopIterationLimit: expected a number of iterations >= 0, found " +
                              std::to_string(n));
    start_ = outer_ && *outer_ < n ? *outer_ : n;
    remaining() = start_;
    limit() = start_;
  }
  LoopIterationLimit(const LoopIterationLimit&) = delete;
  LoopIterationLimit& operator=(const LoopIterationLimit&) = delete;
  XPR_MEMBER ~LoopIterationLimit();

  /// The iterations the guards on this thread still allow, or none when no guard is alive.
  /// Compiled loops (codegen/emit.hpp) count locally against this budget and report back with
  /// `spend`, so a kernel pays no call per iteration.
  static std::optional<std::int64_t> budget() noexcept { return remaining(); }

  /// Counts `n` iterations (at most `budget()`) that ran without calling `count`.
  static void spend(std::int64_t n) noexcept {
    std::optional<std::int64_t>& r = remaining();
    if (r) *r -= n < *r ? n : *r;
  }

  /// Called by a loop primitive's impl before each iteration: throws once the bound is reached.
  XPR_MEMBER static void count(const char* primitive);

 private:
  /// The iterations left, or none when no guard is alive on this thread.
  static std::optional<std::int64_t>& remaining() noexcept {
    thread_local std::optional<std::int64_t> r;
    return r;
  }
  /// The bound of the innermost guard (at most what the outer ones had left), for the message.
  static std::int64_t& limit() noexcept {
    thread_local std::int64_t n = 0;
    return n;
  }

  std::optional<std::int64_t> outer_;
  std::int64_t outer_limit_ = limit();
  std::int64_t start_ = 0;
};

}  // namespace xpr::rt

namespace xpr {
using rt::LoopIterationLimit;
}  // namespace xpr

#if XPR_DEFINITIONS

namespace xpr::rt {

XPR_FUNC LoopIterationLimit::~LoopIterationLimit() {
  const std::int64_t used = start_ - *remaining();
  remaining() = outer_ ? std::optional<std::int64_t>(*outer_ - used) : std::nullopt;
  limit() = outer_limit_;
}

XPR_FUNC void LoopIterationLimit::count(const char* primitive) {
  std::optional<std::int64_t>& r = remaining();
  if (!r) return;
  if (*r == 0)
    throw core::value_error(std::string(primitive) + ": expected at most " +
                            std::to_string(limit()) +
                            " loop iterations (the bound of an xpr::LoopIterationLimit on this "
                            "thread), found a loop that runs more");
  --*r;
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
