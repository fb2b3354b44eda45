// SPDX-License-Identifier: MIT
// The interpreter stack, as in Autodidax: main traces with levels, the Trace and Tracer bases,
// `bind`, `find_top_trace`, `full_raise`, `full_lower`. The eager interpreter is the base of the
// stack (level 0). This file names no primitive: it calls rules through `Primitive`'s slots only
// via the interpreters, which own their rule.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/core/error.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/params.hpp"
#include "xpr/rt/primitive.hpp"

namespace xpr::rt {

class Trace;
namespace detail {
struct TraceState;
}

/// One active transformation: its level on the stack and its interpreter. It outlives its scope
/// while tracers refer to it, so a tracer that escapes finds `alive() == false` instead of freed
/// memory (and raises `escaped_tracer_error`).
class MainTrace : public std::enable_shared_from_this<MainTrace> {
 public:
  MainTrace(int level, std::string name)
      : level_(level), name_(std::move(name)), owner_(std::this_thread::get_id()) {}
  MainTrace(const MainTrace&) = delete;
  MainTrace& operator=(const MainTrace&) = delete;

  int level() const noexcept { return level_; }
  /// The transformation's name ("jvp", "vmap", "make_jaxpr"), for error messages.
  const std::string& name() const noexcept { return name_; }
  /// Whether the transformation is still running. Read it only on the owning thread.
  bool alive() const noexcept { return alive_; }
  /// The thread whose interpreter stack holds this main: its tracers are usable only there.
  std::thread::id owner() const noexcept { return owner_; }
  Trace& trace() const noexcept { return *trace_; }

 private:
  friend class MainScope;
  friend struct detail::TraceState;
  int level_;
  std::string name_;
  std::thread::id owner_;
  bool alive_ = true;
  std::unique_ptr<Trace> trace_;
};

/// An interpreter: how primitives are processed at one level of the stack.
class Trace {
 public:
  explicit Trace(MainTrace& main) : main_(&main) {}
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;
  virtual ~Trace() = default;

  MainTrace& main() const noexcept { return *main_; }
  /// A shared handle to the main, for the tracers this trace makes.
  std::shared_ptr<MainTrace> shared_main() const { return main_->shared_from_this(); }
  /// A value from outside every transformation (concrete data) as a tracer of this trace.
  virtual Array pure(const Array& value) = 0;
  /// A tracer of a lower level as a tracer of this trace.
  virtual Array lift(const Array& tracer) = 0;
  /// Applies `prim` to tracers of this trace.
  virtual Arrays process_primitive(const Primitive& prim, std::span<const Array> tracers,
                                   const Params& params) = 0;

 private:
  MainTrace* main_;  // the main owns its trace
};

/// A value under transformation. Holds its main (shared ownership, no cycle: mains and traces
/// never hold tracers).
class Tracer : public detail::ArrayImpl {
 public:
  Tracer(std::shared_ptr<MainTrace> main, ShapedArray aval)
      : detail::ArrayImpl(std::move(aval)), main_(std::move(main)) {}
  bool is_tracer() const noexcept override { return true; }
  const detail::ConcreteArray* concrete() const noexcept override { return nullptr; }
  const std::shared_ptr<MainTrace>& main() const noexcept { return main_; }
  /// The simplest value equal to this one (`self` is the Array holding this tracer).
  virtual Array full_lower(const Array& self) const { return self; }
  inline void check_usable() const override;

 private:
  std::shared_ptr<MainTrace> main_;
};

/// The eager interpreter at the bottom of the stack: primitives run their impl rule.
class EvalTrace final : public Trace {
 public:
  using Trace::Trace;
  Array pure(const Array& value) override { return value; }
  Array lift(const Array& value) override { return value; }
  Arrays process_primitive(const Primitive& prim, std::span<const Array> args,
                           const Params& params) override {
    return prim.impl(args, params);
  }
};

namespace detail {

/// The per-thread interpreter stack and the dynamic main (omnistaging: the trace that every
/// primitive application is staged into, even those that touch no tracer).
struct TraceState {
  std::vector<std::shared_ptr<MainTrace>> stack;
  std::shared_ptr<MainTrace> dynamic;
  TraceState() {
    auto base = std::make_shared<MainTrace>(0, "eval");
    set_trace(*base, std::make_unique<EvalTrace>(*base));
    stack.push_back(base);
    dynamic = base;
  }
  static void set_trace(MainTrace& main, std::unique_ptr<Trace> trace);
};

inline TraceState& trace_state() {
  thread_local TraceState state;
  return state;
}

inline const Tracer& as_tracer(const Array& x) { return static_cast<const Tracer&>(*x.impl()); }

/// Which user-facing functions trace with the interpreter `name`: `grad` and its kin run as `jvp`,
/// `jit` and the control-flow functions stage with `make_jaxpr`.
inline std::string trace_origin(std::string_view name) {
  if (name == "jvp") return " (as grad, value_and_grad, vjp, linearize, jacfwd and jacrev do)";
  if (name == "make_jaxpr")
    return " (as jit, cond, switch_, while_loop, fori_loop, scan and custom rules do)";
  return "";
}

[[noreturn]] inline void throw_escaped(const MainTrace& main, const ShapedArray& aval) {
  throw core::escaped_tracer_error(
      "Encountered an unexpected tracer: a value of type " + aval.str() + " created by " +
      main.name() + trace_origin(main.name()) +
      " was used after that transformation ended (it was stored in a closure or "
      "a global and outlived its trace); expected a concrete array or a tracer of an active "
      "transformation. Return the value from the transformed function instead");
}

/// A tracer of `main` used on this thread: throws unless `main` belongs to this thread (each
/// thread traces on its own stack; staging into another thread's trace would be a data race and
/// a wrong jaxpr) and is still running.
void check_tracer_usable(const MainTrace& main, const ShapedArray& aval);

}  // namespace detail

/// Pushes a new main trace with interpreter `TraceT` for the lifetime of the scope; pops it and
/// marks it dead on exit, also when an exception crosses it.
class MainScope {
 public:
  template <class TraceT, class... Args>
  MainScope(std::in_place_type_t<TraceT>, std::string name, Args&&... args) {
    auto& st = detail::trace_state();
    main_ = std::make_shared<MainTrace>(static_cast<int>(st.stack.size()), std::move(name));
    main_->trace_ = std::make_unique<TraceT>(*main_, std::forward<Args>(args)...);
    st.stack.push_back(main_);
  }
  MainScope(const MainScope&) = delete;
  MainScope& operator=(const MainScope&) = delete;
  XPR_MEMBER ~MainScope();
  const std::shared_ptr<MainTrace>& main() const noexcept { return main_; }
  template <class TraceT>
  TraceT& trace() const noexcept {
    return static_cast<TraceT&>(main_->trace());
  }

 private:
  std::shared_ptr<MainTrace> main_;
};

inline void Tracer::check_usable() const { detail::check_tracer_usable(*main_, aval()); }

inline void detail::TraceState::set_trace(MainTrace& main, std::unique_ptr<Trace> trace) {
  main.trace_ = std::move(trace);
}

/// Makes `main` the dynamic trace for the scope (JAX's `new_dynamic`), restoring the old one.
class DynamicScope {
 public:
  explicit DynamicScope(std::shared_ptr<MainTrace> main)
      : previous_(std::exchange(detail::trace_state().dynamic, std::move(main))) {}
  DynamicScope(const DynamicScope&) = delete;
  DynamicScope& operator=(const DynamicScope&) = delete;
  ~DynamicScope() { detail::trace_state().dynamic = std::move(previous_); }

 private:
  std::shared_ptr<MainTrace> previous_;
};

/// The main trace with the highest level among the arguments' tracers and the dynamic trace.
MainTrace& find_top_trace(std::span<const Array> args);

/// `value` as a tracer of `trace`: pure for data, lift for lower-level tracers.
Array full_raise(Trace& trace, const Array& value);

/// The simplest representation of `value` (a batch tracer that is not mapped lowers to its value).
inline Array full_lower(const Array& value) {
  if (!value.is_tracer()) return value;
  return detail::as_tracer(value).full_lower(value);
}

/// Applies `prim` to `args` under the current interpreter and returns its outputs.
Arrays bind(const Primitive& prim, std::span<const Array> args, const Params& params = {});

/// `bind` for single-result primitives.
inline Array bind1(const Primitive& prim, std::initializer_list<Array> args,
                   const Params& params = {}) {
  Arrays out = rt::bind(prim, std::span<const Array>(args.begin(), args.size()), params);
  return std::move(out.front());
}

}  // namespace xpr::rt

#if XPR_DEFINITIONS

namespace xpr::rt::detail {

XPR_FUNC void check_tracer_usable(const MainTrace& main, const ShapedArray& aval) {
  if (main.owner() != std::this_thread::get_id())
    throw core::escaped_tracer_error(
        "Encountered a tracer of another thread: a value of type " + aval.str() + " created by " +
        main.name() +
        " on one thread was used on another; expected a concrete array or a "
        "tracer of a transformation running on this thread (each thread traces separately: "
        "pass concrete values between threads, or run the transformation in the thread that "
        "uses them)");
  if (!main.alive()) throw_escaped(main, aval);
}

}  // namespace xpr::rt::detail

namespace xpr::rt {

XPR_FUNC MainScope::~MainScope() {
  auto& st = detail::trace_state();
  main_->alive_ = false;
  if (!st.stack.empty() && st.stack.back() == main_) st.stack.pop_back();
}

XPR_FUNC MainTrace& find_top_trace(std::span<const Array> args) {
  MainTrace* top = detail::trace_state().dynamic.get();
  for (const Array& a : args) {
    if (!a.is_tracer()) continue;
    MainTrace& m = *detail::as_tracer(a).main();
    detail::check_tracer_usable(m, detail::aval_of(a));
    if (m.level() > top->level()) top = &m;
  }
  return *top;
}

XPR_FUNC Array full_raise(Trace& trace, const Array& value) {
  if (!value.is_tracer()) return trace.pure(value);
  const MainTrace& m = *detail::as_tracer(value).main();
  detail::check_tracer_usable(m, detail::aval_of(value));
  if (&m == &trace.main()) return value;
  if (m.level() < trace.main().level()) return trace.lift(value);
  // A live tracer above the current trace, or a sibling at the same level: it escaped from a
  // transformation that is still running (stored away and used in another one).
  detail::throw_escaped(m, detail::aval_of(value));
}

XPR_FUNC Arrays bind(const Primitive& prim, std::span<const Array> args, const Params& params) {
  MainTrace& top = find_top_trace(args);
  if (top.level() == 0) return prim.impl(args, params);  // eager: no tracer, nothing staged
  Trace& trace = top.trace();
  Arrays raised;
  raised.reserve(args.size());
  for (const Array& a : args) raised.push_back(full_raise(trace, a));
  Arrays outs = trace.process_primitive(prim, raised, params);
  for (Array& o : outs) o = full_lower(o);
  return outs;
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
