// SPDX-License-Identifier: MIT
// What the higher-order primitives that apply one sub-jaxpr whole (`checkpoint`, `pjit`) share:
// a per-thread memo of a sub-jaxpr's transformations, and the transposed sub-jaxpr their
// transpose rules bind.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/detail/higher_order.hpp"
#include "xpr/rt/interp/transpose.hpp"
#include "xpr/rt/jaxpr.hpp"
#include "xpr/rt/params.hpp"
#include "xpr/rt/primitive.hpp"

namespace xpr::rt::detail {

/// Transformations of shared sub-jaxprs, per thread, keyed by the sub-jaxpr's identity and the
/// flags the transformation depends on. A jaxpr whose shared sub-jaxprs call each other twice
/// per level would otherwise be transformed once per path (exponential in its depth, and each
/// copy a new jaxpr the next level transforms again); with this, each distinct sub-jaxpr is
/// transformed once per flag pattern and the results are shared as the inputs were. Entries whose
/// jaxpr has been freed are dropped (a weak reference checks it), and the table is cleared when
/// it grows large. Results holding tracers (of an enclosing transformation) are not kept.
template <class V>
class SubJaxprMemo {
 public:
  template <class F, class Keep>
  V get(const JaxprParam& j, const std::vector<bool>& flags, F compute, Keep keepable) {
    auto& entries = table_[j.get()];
    for (std::size_t i = 0; i < entries.size(); ++i) {
      if (entries[i].owner.lock() != j) {  // freed: another jaxpr may live at this address
        entries.clear();
        break;
      }
      if (entries[i].flags == flags) return entries[i].value;
    }
    V value = compute();
    if (!keepable(value)) return value;
    if (table_.size() > 4096) table_.clear();
    table_[j.get()].push_back(Entry{j, flags, value});
    return value;
  }

 private:
  struct Entry {
    std::weak_ptr<const ClosedJaxpr> owner;
    std::vector<bool> flags;
    V value;
  };
  std::unordered_map<const ClosedJaxpr*, std::vector<Entry>> table_;
};

bool all_concrete(std::span<const Array> xs);

/// A sub-jaxpr transposed: inputs are the known operands then the nonzero cotangents; outputs
/// are the nonzero cotangents of the undefined operands (`out_nonzero` says which).
struct TransposedJaxpr {
  ConvertedJaxpr jaxpr;
  std::vector<bool> out_nonzero;
};

/// `j` transposed for a transpose rule called with `args` (an `UndefinedPrimal` per linear
/// operand) and `flags`: one per operand (undefined), then one per output (nonzero cotangent).
std::shared_ptr<const TransposedJaxpr> transpose_sub_jaxpr(const ClosedJaxpr& j,
                                                           const std::vector<bool>& flags,
                                                           std::span<const LinearArg> args);

}  // namespace xpr::rt::detail

#if XPR_DEFINITIONS

namespace xpr::rt::detail {

XPR_FUNC bool all_concrete(std::span<const Array> xs) {
  for (const Array& x : xs)
    if (x.is_tracer()) return false;
  return true;
}

XPR_FUNC std::shared_ptr<const TransposedJaxpr> transpose_sub_jaxpr(
    const ClosedJaxpr& j, const std::vector<bool>& flags, std::span<const LinearArg> args) {
  const std::size_t n_in = args.size(), n_out = flags.size() - n_in;
  Avals in_avals;
  for (const LinearArg& a : args)
    if (!is_undefined_primal(a)) in_avals.push_back(aval_of(a));
  for (std::size_t k = 0; k < n_out; ++k)
    if (flags[n_in + k]) in_avals.push_back(aval_of(j.jaxpr.outvars[k]));
  auto t = std::make_shared<TransposedJaxpr>();
  t->out_nonzero.assign(n_in, false);
  FlatFunction f = [&](std::span<const Array> in) {
    std::vector<LinearArg> lin;
    std::size_t k = 0;
    for (std::size_t i = 0; i < n_in; ++i)
      lin.push_back(flags[i] ? LinearArg(UndefinedPrimal{aval_of(args[i])}) : LinearArg(in[k++]));
    Cotangents cts(n_out);
    for (std::size_t o = 0; o < n_out; ++o)
      if (flags[n_in + o]) cts[o] = in[k++];
    Cotangents res = backward_pass(j.jaxpr, j.consts, lin, cts);
    Arrays outs;
    for (std::size_t i = 0; i < n_in; ++i) {
      t->out_nonzero[i] = flags[i] && res[i].has_value();
      if (t->out_nonzero[i]) outs.push_back(std::move(*res[i]));
    }
    return outs;
  };
  t->jaxpr = trace_to_converted_jaxpr(f, in_avals);
  return t;
}

}  // namespace xpr::rt::detail
#endif  // XPR_DEFINITIONS
