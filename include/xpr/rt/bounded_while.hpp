// SPDX-License-Identifier: MIT
// `xpr::while_loop(cond_fn, body_fn, init, xpr::max_trips(N))`: a while loop that reverse mode can
// differentiate (beyond JAX), because at most N iterations run. Where reverse mode or staging may
// follow it is a `scan` of length N whose body is a `cond` on an `active` flag carried along: an
// inactive iteration costs a branch and stores no residual of the body, and the gradient is that
// of the loop unrolled for the iterations that ran. Where neither can follow (eager evaluation,
// jvp, vmap) it is the unbounded `while` primitive with a trip counter, so it stops as soon as
// `cond_fn` fails instead of running N iterations. Either way the result goes through
// `check_max_trips`, whose impl throws `value_error` when the loop had not finished after N trips,
// in whatever transformation evaluates it. See docs/control-flow.md.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>

#include "xpr/core/config.hpp"
#include "xpr/core/error.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/cond.hpp"
#include "xpr/rt/interp/jaxpr_trace.hpp"
#include "xpr/rt/interp/partial_eval.hpp"
#include "xpr/rt/numpy_elementwise.hpp"
#include "xpr/rt/numpy_reductions.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/prims/convert.hpp"
#include "xpr/rt/pytree.hpp"
#include "xpr/rt/scan.hpp"
#include "xpr/rt/trace.hpp"
#include "xpr/rt/while_loop.hpp"

namespace xpr::rt {

/// The bound of a `while_loop`'s trip count: `while_loop(cond_fn, body_fn, init, max_trips(50))`.
struct max_trips {
  explicit max_trips(std::int64_t n) : value(n) {}
  std::int64_t value;
};

/// `check_max_trips[max_trips=N] unfinished x...`: returns `x...` unchanged (values, tangents and
/// cotangents pass through); its impl throws `value_error` when the bool scalar `unfinished` is
/// true, i.e. when a `while_loop` bounded by `max_trips(N)` still wanted to run after N trips.
/// The loop's results flow through it, so it is evaluated whenever they are.
class CheckMaxTripsP final : public Primitive {
 public:
  constexpr CheckMaxTripsP() : Primitive("check_max_trips", true) {}

  XPR_MEMBER Arrays impl(std::span<const Array> args, const Params& params) const override;

  XPR_MEMBER Avals abstract_eval(std::span<const ShapedArray> args,
                                 const Params& params) const override;

  std::pair<Arrays, Tangents> jvp_symbolic(std::span<const Array> primals,
                                           std::span<const Tangent> tangents,
                                           const Params& params) const override {
    Arrays out = rt::bind(*this, primals, params);
    return {std::move(out), Tangents(tangents.begin() + 1, tangents.end())};
  }

  XPR_MEMBER Cotangents transpose(std::span<const Cotangent> cts, std::span<const LinearArg> args,
                                  const Params& params) const override;

  /// A batched flag: the loop had not finished if any lane had not.
  XPR_MEMBER std::pair<Arrays, BatchDims> batch(std::span<const Array> args,
                                                std::span<const BatchDim> dims,
                                                std::int64_t axis_size,
                                                const Params& params) const override;
};

inline constinit const CheckMaxTripsP check_max_trips_p{};

namespace detail {

/// True when reverse mode or staging may follow (a partial-evaluation or jaxpr-building
/// interpreter is on the stack): then a bounded loop must be a scan.
bool may_stage_or_linearize();

}  // namespace detail

/// `while_loop(cond_fn, body_fn, init, max_trips(N))`: `while_loop(cond_fn, body_fn, init)` that
/// runs at most N iterations and is reverse-differentiable: `grad` equals the gradient of the loop
/// unrolled for the iterations it ran, for any trip count up to N. More than N trips throws
/// `value_error` (never a truncated loop's wrong derivative). Under `grad`, `vjp`, `linearize`
/// and `make_jaxpr` it is a `scan` of N iterations of `cond(active, body_fn, identity)`, so
/// reverse mode stores at most N iterations of residuals (wrap `body_fn` in `checkpoint` to store
/// only its inputs); eagerly and under `jvp` and `vmap` it is a `while` loop that stops when
/// `cond_fn` fails. Lanes of a `vmap` may need different trip counts. See examples/scan.cpp.
template <class C, class B, class T>
requires Pytree<T>
auto while_loop(const C& cond_fn, const B& body_fn, const T& init, max_trips trips) {
  using Carry = tree_of_arrays_t<T>;
  const std::int64_t n = trips.value;
  if (n < 0)
    throw core::value_error("while_loop: expected max_trips(N) with N >= 0, found " +
                            std::to_string(n));
  auto [init_leaves, init_def] = tree_flatten(init);
  {
    // Checked and typed as the unbounded loop's carry is, before the trip counter or the scan's
    // `cond` wraps it: C++ numbers in `init` take the body's types (else `grad` would find the
    // `cond` branches disagreeing), and an error names the user's leaf.
    const PyTreeDef& d = init_def;
    std::optional<PyTreeDef> out_def;
    FlatFunction body_flat = [&](std::span<const Array> in) {
      auto o = tree_flatten(Carry(body_fn(tree_unflatten<Carry>(d, in))));
      out_def = o.second;
      return o.first;
    };
    (void)detail::trace_loop_body(body_flat, init_leaves, d, out_def);
  }
  Carry start = tree_unflatten<Carry>(static_cast<const PyTreeDef&>(init_def), init_leaves);
  auto pred = [&](const Carry& x) {
    Array p = cond_fn(x);
    if (p.ndim() != 0 || p.dtype() != DType::bool_)
      throw core::type_error("while_loop: expected cond_fn to return a bool scalar, found " +
                             detail::aval_of(p).str());
    return p;
  };
  Carry x;
  Array unfinished;
  if (!detail::may_stage_or_linearize()) {
    using W = std::pair<Array, Carry>;
    auto w_cond = [&](const W& c) { return xpr::where(c.first < n, pred(c.second), Array(false)); };
    auto w_body = [&](const W& c) { return W{c.first + 1, Carry(body_fn(c.second))}; };
    x = while_loop(w_cond, w_body, W{Array(std::int64_t{0}), start}).second;
    unfinished = pred(x);  // the loop stopped at N trips with cond_fn still true
  } else {
    using S = std::pair<Array, Carry>;
    auto s_body = [&](S c, std::tuple<>) {
      Array active = xpr::where(c.first, pred(c.second), Array(false));
      Carry next = xpr::cond(
          active, [&](const Carry& v) { return Carry(body_fn(v)); },
          [](const Carry& v) { return v; }, c.second);
      return std::pair{S{active, std::move(next)}, std::tuple<>{}};
    };
    S out = scan(s_body, S{Array(true), start}, std::tuple<>{}, n).first;
    x = std::move(out.second);
    unfinished = xpr::where(out.first, pred(x), Array(false));
  }
  auto [leaves, def] = tree_flatten(x);
  Arrays ops{unfinished};
  ops.insert(ops.end(), leaves.begin(), leaves.end());
  Arrays checked = rt::bind(check_max_trips_p, ops, Params{{"max_trips", n}});
  return tree_unflatten<Carry>(static_cast<const PyTreeDef&>(def), checked);
}

}  // namespace xpr::rt

namespace xpr {
using rt::max_trips;
using rt::while_loop;
}  // namespace xpr

#if XPR_DEFINITIONS

namespace xpr::rt {

XPR_FUNC Arrays CheckMaxTripsP::impl(std::span<const Array> args, const Params& params) const {
  if (args[0].item<bool>())
    throw core::value_error("while_loop: expected the loop to finish within max_trips(" +
                            std::to_string(params.get<std::int64_t>("max_trips")) +
                            ") iterations, found it had not finished (cond_fn still true after " +
                            std::to_string(params.get<std::int64_t>("max_trips")) +
                            " trips): the value of the loop cut there, and any derivative "
                            "through it, would be wrong, so raise the bound");
  return Arrays(args.begin() + 1, args.end());
}

XPR_FUNC Avals CheckMaxTripsP::abstract_eval(std::span<const ShapedArray> args,
                                             const Params& params) const {
  (void)params;
  if (args.empty() || args[0].ndim() != 0 || args[0].dtype != DType::bool_)
    throw core::type_error("check_max_trips: expected a bool scalar first operand, found " +
                           (args.empty() ? std::string("none") : args[0].str()));
  return Avals(args.begin() + 1, args.end());
}

XPR_FUNC Cotangents CheckMaxTripsP::transpose(std::span<const Cotangent> cts,
                                              std::span<const LinearArg> args,
                                              const Params& params) const {
  (void)args, (void)params;
  Cotangents out{std::nullopt};
  out.insert(out.end(), cts.begin(), cts.end());
  return out;
}

XPR_FUNC std::pair<Arrays, BatchDims> CheckMaxTripsP::batch(std::span<const Array> args,
                                                            std::span<const BatchDim> dims,
                                                            std::int64_t axis_size,
                                                            const Params& params) const {
  (void)axis_size;
  Arrays ops(args.begin(), args.end());
  if (dims[0]) ops[0] = sum(convert_element_type(ops[0], DType::int32)) > 0;
  return {rt::bind(*this, ops, params), BatchDims(dims.begin() + 1, dims.end())};
}

}  // namespace xpr::rt

namespace xpr::rt::detail {

XPR_FUNC bool may_stage_or_linearize() {
  const TraceState& st = trace_state();
  if (st.dynamic->level() != 0) return true;
  for (const auto& m : st.stack) {
    Trace& t = m->trace();
    if (dynamic_cast<PartialEvalTrace*>(&t) || dynamic_cast<JaxprTrace*>(&t)) return true;
  }
  return false;
}

}  // namespace xpr::rt::detail
#endif  // XPR_DEFINITIONS
