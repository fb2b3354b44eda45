// SPDX-License-Identifier: MIT
// `xpr::scan` and its primitive `scan` (JAX's `lax.scan`, `scan_p` in loops.py): a loop of a
// fixed number of iterations over the leading axis of its `xs`, carrying a value along. Every rule
// is here: impl, abstract eval, jvp and batching (JAX's fixed points), partial evaluation with the
// residuals of every iteration stacked, transpose (the reverse scan), dce. See
// docs/control-flow.md.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/core/error.hpp"
#include "xpr/rt/api_transformations.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/batching.hpp"
#include "xpr/rt/creation.hpp"
#include "xpr/rt/detail/higher_order.hpp"
#include "xpr/rt/indexing.hpp"
#include "xpr/rt/interp/batch.hpp"
#include "xpr/rt/interp/partial_eval.hpp"
#include "xpr/rt/interp/transpose.hpp"
#include "xpr/rt/jaxpr.hpp"
#include "xpr/rt/jaxpr_eval.hpp"
#include "xpr/rt/loop_iteration_limit.hpp"
#include "xpr/rt/numpy_linalg_slicing.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/prims/convert.hpp"
#include "xpr/rt/pytree.hpp"
#include "xpr/rt/trace.hpp"
#include "xpr/rt/transformations.hpp"

namespace xpr::rt {

namespace detail {

/// The parameters of one `scan` application, read once.
struct ScanInfo {
  const ClosedJaxpr* jaxpr = nullptr;
  std::int64_t length = 0;
  std::size_t num_consts = 0, num_carry = 0, num_xs = 0, num_ys = 0;
  bool reverse = false;
  BoolTuple linear;

  ScanInfo(const Params& p, std::size_t num_operands) {
    jaxpr = &jaxpr_param(p, "jaxpr");
    length = p.get<std::int64_t>("length");
    auto nc = p.get<std::int64_t>("num_consts"), ncarry = p.get<std::int64_t>("num_carry");
    reverse = p.get<bool>("reverse");
    if (const ParamValue* l = p.find("linear"))
      if (const BoolTuple* b = std::get_if<BoolTuple>(l)) linear = *b;
    // Compared one at a time: `nc + ncarry` overflows for a parsed num_consts of 2^63 - 1.
    const auto n = static_cast<std::int64_t>(num_operands);
    if (nc < 0 || ncarry < 0 || nc > n || ncarry > n - nc)
      throw core::type_error("scan: expected num_consts + num_carry <= the number of operands (" +
                             std::to_string(num_operands) + "), found num_consts=" +
                             std::to_string(nc) + " num_carry=" + std::to_string(ncarry));
    num_consts = static_cast<std::size_t>(nc);
    num_carry = static_cast<std::size_t>(ncarry);
    num_xs = num_operands - num_consts - num_carry;
    std::size_t n_out = jaxpr->jaxpr.outvars.size();
    if (n_out < num_carry)
      throw core::type_error("scan: expected the body to return at least the " +
                             std::to_string(num_carry) + " carry values, found " +
                             std::to_string(n_out) + " outputs");
    num_ys = n_out - num_carry;
  }
};

/// The parameters of a `scan` as JAX binds them (printed sorted: `_split_transpose`, `jaxpr`,
/// `length`, `linear`, `num_carry`, `num_consts`, `reverse`, `unroll`).
Params scan_params(JaxprParam jaxpr, std::int64_t length, bool reverse, std::size_t num_consts,
                   std::size_t num_carry, BoolTuple linear);

/// `aval` with a leading axis of size `n` (a stacked value) / without its leading axis.
ShapedArray scan_stacked(const ShapedArray& aval, std::int64_t n);
inline ShapedArray scan_unstacked(const ShapedArray& aval) {
  return ShapedArray{Shape(std::vector<std::int64_t>(aval.shape.begin() + 1, aval.shape.end())),
                     aval.dtype, aval.weak_type};
}

/// `j` with its inputs and outputs listed in the orders given (indices into the old lists).
JaxprParam scan_reorder(const ClosedJaxpr& j, const std::vector<std::size_t>& in_order,
                        const std::vector<std::size_t>& out_order);

/// `parts` (concrete, each of type `elem`) stacked along a new leading axis.
Array scan_stack(const std::vector<Array>& parts, const ShapedArray& elem);

inline bool scan_any(const std::vector<bool>& v) {
  return std::find(v.begin(), v.end(), true) != v.end();
}
inline std::size_t scan_count(const std::vector<bool>& v) {
  return static_cast<std::size_t>(std::count(v.begin(), v.end(), true));
}
template <class T>
std::vector<T> scan_cat(std::vector<T> a, const std::vector<T>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
inline std::vector<bool> scan_slice(const std::vector<bool>& v, std::size_t from, std::size_t n) {
  return std::vector<bool>(v.begin() + static_cast<std::ptrdiff_t>(from),
                           v.begin() + static_cast<std::ptrdiff_t>(from + n));
}

/// The JVP of `jaxpr` whose output tangents marked in `instantiate` are never symbolic zeros.
inline JvpJaxpr scan_jvp_jaxpr(const ClosedJaxpr& jaxpr, const std::vector<bool>& nonzero,
                               const std::vector<bool>& instantiate) {
  return jvp_jaxpr(jaxpr, nonzero, instantiate);
}

/// `jaxpr` batched along axis 0 of the inputs marked `in_batched`; returns which outputs are
/// batched (at axis 0); outputs marked `force` are batched even when they need not be.
std::pair<ConvertedJaxpr, std::vector<bool>> scan_batch_jaxpr(const ClosedJaxpr& jaxpr,
                                                              const std::vector<bool>& in_batched,
                                                              std::int64_t n,
                                                              const std::vector<bool>& force);

/// The split of a scan's body by which inputs are unknown (JAX's `_scan_partial_eval`): a carry
/// is unknown when its initial value is, or when the body makes it so in some iteration (the
/// fixed point). `split.known`: known inputs -> (known carry, known ys, residuals);
/// `split.unknown`: (residuals, unknown inputs) -> (unknown carry, unknown ys).
struct ScanSplit {
  std::vector<bool> const_uk, carry_uk, xs_uk, ys_uk;
  PartialEvalJaxpr split;
};
ScanSplit scan_split(const ScanInfo& s, const std::vector<bool>& in_unknowns);

}  // namespace detail

/// `scan[_split_transpose jaxpr length linear num_carry num_consts reverse unroll]`: operands
/// `consts..., init..., xs...`; the body `jaxpr` maps `consts..., carry..., x...` (one slice of
/// each `xs` along its leading axis) to `carry..., y...`, and the outputs are the final carry and
/// the `y`s stacked along a new leading axis of size `length` (walked backwards if `reverse`).
/// `jaxpr` has no constants: whatever the body closes over is among the `consts` operands.
class ScanP final : public Primitive, public PartialEvalRules {
 public:
  constexpr ScanP() : Primitive("scan", true) {}

  XPR_MEMBER Arrays impl(std::span<const Array> args, const Params& params) const override;

  XPR_MEMBER Avals abstract_eval(std::span<const ShapedArray> args,
                                 const Params& params) const override;

  /// JAX's `_scan_jvp`: the tangents of the consts, the carry and the xs that are not symbolic
  /// zeros join them; a carry's tangent is nonzero once the body makes it so (a fixed point).
  XPR_MEMBER std::pair<Arrays, Tangents> jvp_symbolic(std::span<const Array> primals,
                                                      std::span<const Tangent> tangents,
                                                      const Params& params) const override;

  /// JAX's `_scan_transpose`: a scan linear in its undefined operands runs backwards. Known
  /// consts and xs are residuals (read by every iteration, or one slice per iteration); the
  /// cotangents of the linear consts are accumulated in the carry, beside the carry's own.
  XPR_MEMBER Cotangents transpose(std::span<const Cotangent> cts, std::span<const LinearArg> args,
                                  const Params& params) const override;

  /// JAX's `_scan_batching_rule`: consts and carry batched along axis 0, xs along axis 1 (the
  /// scanned axis stays first); a carry is batched once the body makes it so (a fixed point).
  XPR_MEMBER std::pair<Arrays, BatchDims> batch(std::span<const Array> args,
                                                std::span<const BatchDim> dims,
                                                std::int64_t axis_size,
                                                const Params& params) const override;

  // ---- partial evaluation ----

  /// Under linearize: the known part of every iteration runs now, as a scan whose extra ys are
  /// the residuals of each iteration, stacked; residuals computed from the known consts alone
  /// (loop-invariant) are computed once, outside, instead. The unknown part is staged as a scan
  /// that reads the invariant residuals as consts and the stacked ones as xs (at the end).
  XPR_MEMBER std::optional<Arrays> partial_eval(PartialEvalTrace& trace,
                                                std::span<const Array> tracers,
                                                const Params& params) const override;

  /// The same split on a scan equation inside a jaxpr (nested scans, checkpoint): every
  /// residual is stacked (none is hoisted); the unknown scan reads them as its last xs.
  XPR_MEMBER std::optional<PartialEvalEqn> partial_eval_jaxpr(const std::vector<bool>& in_unknowns,
                                                              const Eqn& eqn) const override;

  /// JAX's `_scan_dce_rule`: unused ys go, and unused carries too unless the body reads them to
  /// compute what is used (a fixed point); consts and xs nobody reads go.
  XPR_MEMBER std::optional<DceEqn> dce(const std::vector<bool>& used_outputs,
                                       const Eqn& eqn) const override;
};

inline constinit const ScanP scan_p{};

namespace detail {

/// `init` converted to `dtype` without staging an equation when it is a constant (JAX converts a
/// Python scalar with NumPy, so `0.0` prints as the literal `0.0:f32[]`).
Array scan_promote(const Array& init, DType dtype);

}  // namespace detail

/// `auto [carry, ys] = scan(body, init, xs)`: JAX's `lax.scan`. `body(carry, x)` returns a pair
/// `(new_carry, y)`, where `x` is one slice of `xs` along its leading axis; `carry` and `new_carry`
/// must have the same structure, shapes and dtypes (else `type_error` naming the carry element and
/// both types). Returns the last carry and the `y`s stacked along a new leading axis. `init`,
/// `xs` and the `y`s may be pytrees; `xs` may be empty (`std::tuple<>{}`) when `length` is given.
/// With `reverse`, the iterations walk `xs` and fill `ys` from the end. One `scan` equation under
/// every transformation; `grad` of it runs a reverse scan. See examples/scan.cpp.
template <class F, class Init, class Xs>
auto scan(F body, const Init& init, const Xs& xs, std::optional<std::int64_t> length = std::nullopt,
          bool reverse = false) {
  using C = tree_of_arrays_t<Init>;
  using X = tree_of_arrays_t<Xs>;
  using R = std::remove_cvref_t<std::invoke_result_t<F&, C, X>>;
  static_assert(std::tuple_size_v<R> == 2, "xpr::scan: the body must return a pair (new_carry, y)");
  using Y = tree_of_arrays_t<std::tuple_element_t<1, R>>;
  auto [init_leaves, init_def] = tree_flatten(init);
  auto [xs_leaves, xs_def] = tree_flatten(xs);
  std::optional<std::int64_t> n = length;
  for (std::size_t i = 0; i < xs_leaves.size(); ++i) {
    const Array& x = xs_leaves[i];
    if (x.ndim() == 0)
      throw core::shape_error(
          "scan: expected xs with a leading axis to scan over, found a value "
          "of type " +
          detail::aval_of(x).str() + " (leaf " + std::to_string(i) + ")");
    if (n && *n != x.shape()[0])
      throw core::shape_error(
          "scan: expected every xs to have a leading axis of size " + std::to_string(*n) +
          (length ? " (the length argument)" : " (from an earlier leaf)") + ", found " +
          detail::aval_of(x).str() + " (leaf " + std::to_string(i) + ")");
    n = x.shape()[0];
  }
  if (!n) throw core::value_error("scan: expected xs to scan over or a length, found neither");
  if (*n < 0)
    throw core::value_error("scan: expected a non-negative length, found " + std::to_string(*n));
  std::optional<PyTreeDef> carry_def, y_def;
  const std::size_t nc = init_leaves.size();
  FlatFunction flat = [&](std::span<const Array> in) {
    C c = tree_unflatten<C>(static_cast<const PyTreeDef&>(init_def), in.first(nc));
    X x = tree_unflatten<X>(static_cast<const PyTreeDef&>(xs_def), in.subspan(nc));
    R r = body(std::move(c), std::move(x));
    auto [cl, cd] = tree_flatten(std::get<0>(r));
    auto [yl, yd] = tree_flatten(std::get<1>(r));
    carry_def = std::move(cd);
    y_def = std::move(yd);
    cl.insert(cl.end(), yl.begin(), yl.end());
    return cl;
  };
  auto trace = [&](const Arrays& carry) {
    Avals avals;
    for (const Array& c : carry) avals.push_back(detail::aval_of(c));
    for (const Array& x : xs_leaves) avals.push_back(detail::scan_unstacked(detail::aval_of(x)));
    return detail::trace_to_converted_jaxpr(flat, avals);
  };
  detail::ConvertedJaxpr traced = trace(init_leaves);
  auto check_structure = [&] {
    if (*carry_def != static_cast<const PyTreeDef&>(init_def))
      throw core::type_error(
          "scan: the body must return a carry of the structure of init: "
          "expected " +
          init_def.str() + ", found " + carry_def->str());
  };
  check_structure();
  // A weakly typed initial carry (a C++ number) takes the dtype the body gives it (JAX's
  // _promote_weak_typed_inputs), and the body is traced again.
  Avals outs = traced.jaxpr->out_avals();
  bool changed = false;
  for (std::size_t c = 0; c < nc; ++c)
    if (init_leaves[c].weak_type() && init_leaves[c].dtype() != outs[c].dtype &&
        init_leaves[c].shape() == outs[c].shape) {
      init_leaves[c] = detail::scan_promote(init_leaves[c], outs[c].dtype);
      changed = true;
    }
  if (changed) {
    traced = trace(init_leaves);
    check_structure();
    outs = traced.jaxpr->out_avals();
  }
  for (std::size_t c = 0; c < nc; ++c)
    if (!outs[c].same_type(detail::aval_of(init_leaves[c])))
      throw core::type_error(
          "scan: the body function's carry input and carry output must have "
          "the same types: the input carry element " +
          std::to_string(c) + " of " + init_def.str() + " has type " +
          detail::aval_of(init_leaves[c]).str() + " but the body returns type " + outs[c].str() +
          " for it");
  Arrays operands = traced.consts;
  operands.insert(operands.end(), init_leaves.begin(), init_leaves.end());
  operands.insert(operands.end(), xs_leaves.begin(), xs_leaves.end());
  Arrays result = rt::bind(scan_p, operands,
                           detail::scan_params(traced.jaxpr, *n, reverse, traced.consts.size(), nc,
                                               BoolTuple(operands.size(), false)));
  std::span<const Array> all(result);
  return std::pair<C, Y>{tree_unflatten<C>(*carry_def, all.first(nc)),
                         tree_unflatten<Y>(*y_def, all.subspan(nc))};
}

/// `scan(body, init, std::nullopt, length)`: a scan with no `xs`; `body(carry, x)` gets an empty
/// tuple for `x` (JAX passes None).
template <class F, class Init>
auto scan(F body, const Init& init, std::nullopt_t, std::int64_t length, bool reverse = false) {
  return scan(std::move(body), init, std::tuple<>{}, length, reverse);
}

}  // namespace xpr::rt

namespace xpr {
using rt::scan;
}  // namespace xpr

#if XPR_DEFINITIONS

namespace xpr::rt::detail {

XPR_FUNC Params scan_params(JaxprParam jaxpr, std::int64_t length, bool reverse,
                            std::size_t num_consts, std::size_t num_carry, BoolTuple linear) {
  return Params{{"reverse", reverse},
                {"length", length},
                {"jaxpr", std::move(jaxpr)},
                {"num_consts", static_cast<std::int64_t>(num_consts)},
                {"num_carry", static_cast<std::int64_t>(num_carry)},
                {"linear", std::move(linear)},
                {"unroll", std::int64_t{1}},
                {"_split_transpose", false}};
}

XPR_FUNC ShapedArray scan_stacked(const ShapedArray& aval, std::int64_t n) {
  std::vector<std::int64_t> dims{n};
  dims.insert(dims.end(), aval.shape.begin(), aval.shape.end());
  return ShapedArray{Shape(std::move(dims)), aval.dtype, aval.weak_type};
}

XPR_FUNC JaxprParam scan_reorder(const ClosedJaxpr& j, const std::vector<std::size_t>& in_order,
                                 const std::vector<std::size_t>& out_order) {
  ClosedJaxpr out = j;
  out.jaxpr.invars.clear();
  out.jaxpr.outvars.clear();
  for (std::size_t k : in_order) out.jaxpr.invars.push_back(j.jaxpr.invars.at(k));
  for (std::size_t k : out_order) out.jaxpr.outvars.push_back(j.jaxpr.outvars.at(k));
  return std::make_shared<const ClosedJaxpr>(std::move(out));
}

XPR_FUNC Array scan_stack(const std::vector<Array>& parts, const ShapedArray& elem) {
  ArrayBuilder b(scan_stacked(elem, static_cast<std::int64_t>(parts.size())));
  std::size_t n = static_cast<std::size_t>(elem.size()) * core::itemsize(elem.dtype);
  for (std::size_t i = 0; i < parts.size(); ++i)
    if (n) std::memcpy(b.bytes() + i * n, parts[i].concrete()->bytes(), n);
  return std::move(b).finish();
}

XPR_FUNC std::pair<ConvertedJaxpr, std::vector<bool>> scan_batch_jaxpr(
    const ClosedJaxpr& jaxpr, const std::vector<bool>& in_batched, std::int64_t n,
    const std::vector<bool>& force) {
  Avals in_avals = jaxpr.in_avals();
  for (std::size_t i = 0; i < in_avals.size(); ++i)
    if (in_batched[i]) in_avals[i] = scan_stacked(in_avals[i], n);
  std::vector<bool> out_batched;
  FlatFunction f = [&](std::span<const Array> in) {
    MainScope scope(std::in_place_type<BatchTrace>, "vmap", n);
    BatchTrace& trace = scope.trace<BatchTrace>();
    Arrays ins;
    for (std::size_t i = 0; i < in.size(); ++i)
      ins.push_back(trace.make_tracer(in[i], in_batched[i] ? BatchDim(0) : std::nullopt));
    Arrays outs = eval_jaxpr(jaxpr, ins);
    Arrays res;
    out_batched.clear();
    for (std::size_t k = 0; k < outs.size(); ++k) {
      Array t = full_raise(trace, outs[k]);
      const auto& bt = static_cast<const BatchTracer&>(*t.impl());
      if (bt.batch_dim()) {
        res.push_back(moveaxis(bt.value(), *bt.batch_dim(), 0));
      } else if (force[k]) {
        res.push_back(broadcast_batch(bt.value(), n, 0));
      } else {
        res.push_back(bt.value());
      }
      out_batched.push_back(bt.batch_dim().has_value() || force[k]);
    }
    return res;
  };
  ConvertedJaxpr converted = trace_to_converted_jaxpr(f, in_avals);
  return {std::move(converted), std::move(out_batched)};
}

XPR_FUNC ScanSplit scan_split(const ScanInfo& s, const std::vector<bool>& in_unknowns) {
  ScanSplit r;
  r.const_uk = scan_slice(in_unknowns, 0, s.num_consts);
  r.carry_uk = scan_slice(in_unknowns, s.num_consts, s.num_carry);
  r.xs_uk = scan_slice(in_unknowns, s.num_consts + s.num_carry, s.num_xs);
  for (;;) {
    std::vector<bool> unknowns = scan_cat(scan_cat(r.const_uk, r.carry_uk), r.xs_uk);
    std::vector<bool> inst = scan_cat(r.carry_uk, std::vector<bool>(s.num_ys, false));
    r.split = partial_eval_jaxpr(*s.jaxpr, unknowns, inst);
    bool grew = false;
    for (std::size_t i = 0; i < s.num_carry; ++i)
      if (r.split.out_unknowns[i] && !r.carry_uk[i]) r.carry_uk[i] = grew = true;
    if (!grew) break;
  }
  r.ys_uk = scan_slice(r.split.out_unknowns, s.num_carry, s.num_ys);
  return r;
}

}  // namespace xpr::rt::detail

namespace xpr::rt {

XPR_FUNC Arrays ScanP::impl(std::span<const Array> args, const Params& params) const {
  detail::ScanInfo s(params, args.size());
  Arrays consts(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(s.num_consts));
  Arrays carry(args.begin() + static_cast<std::ptrdiff_t>(s.num_consts),
               args.begin() + static_cast<std::ptrdiff_t>(s.num_consts + s.num_carry));
  // The ys grow with the iterations instead of being sized `length` up front: a parsed scan
  // may have a length of 2^62 with ys of zero elements, which must stop at a
  // LoopIterationLimit (or run out of memory: std::bad_alloc), not throw std::length_error.
  std::vector<std::vector<Array>> ys(s.num_ys);
  Arrays in;
  for (std::int64_t k = 0; k < s.length; ++k) {
    LoopIterationLimit::count("scan");  // a no-op unless a guard bounds untrusted loops
    std::int64_t i = s.reverse ? s.length - 1 - k : k;
    in = consts;
    in.insert(in.end(), carry.begin(), carry.end());
    for (std::size_t j = 0; j < s.num_xs; ++j)
      in.push_back(args[s.num_consts + s.num_carry + j][i]);
    Arrays out = eval_jaxpr(*s.jaxpr, in);
    for (std::size_t c = 0; c < s.num_carry; ++c) carry[c] = std::move(out[c]);
    for (std::size_t j = 0; j < s.num_ys; ++j) ys[j].push_back(std::move(out[s.num_carry + j]));
  }
  if (s.reverse)
    for (std::vector<Array>& y : ys) std::reverse(y.begin(), y.end());
  Arrays result = std::move(carry);
  Avals out_avals = s.jaxpr->out_avals();
  for (std::size_t j = 0; j < s.num_ys; ++j)
    result.push_back(detail::scan_stack(ys[j], out_avals[s.num_carry + j]));
  return result;
}

XPR_FUNC Avals ScanP::abstract_eval(std::span<const ShapedArray> args, const Params& params) const {
  detail::ScanInfo s(params, args.size());
  const Jaxpr& j = s.jaxpr->jaxpr;
  if (j.invars.size() != args.size())
    throw core::type_error("scan: expected " + std::to_string(j.invars.size()) +
                           " operands for the body's inputs, found " + std::to_string(args.size()));
  if (s.length < 0)
    throw core::shape_error("scan: expected a non-negative length, found " +
                            std::to_string(s.length));
  Avals out_avals = s.jaxpr->out_avals();
  for (std::size_t i = 0; i < args.size(); ++i) {
    const ShapedArray& want = j.invars[i].aval();
    if (i < s.num_consts + s.num_carry) {
      if (!args[i].same_type(want))
        throw core::type_error("scan: expected " +
                               std::string(i < s.num_consts ? "const " : "initial carry ") +
                               std::to_string(i < s.num_consts ? i : i - s.num_consts) +
                               " of type " + want.str() + ", found " + args[i].str());
      continue;
    }
    if (args[i].ndim() == 0 || args[i].shape[0] != s.length ||
        !detail::scan_unstacked(args[i]).same_type(want))
      throw core::type_error("scan: expected xs " + std::to_string(i - s.num_consts - s.num_carry) +
                             " of type " + detail::scan_stacked(want, s.length).str() + ", found " +
                             args[i].str());
  }
  for (std::size_t c = 0; c < s.num_carry; ++c) {
    const ShapedArray& in = j.invars[s.num_consts + c].aval();
    if (!out_avals[c].same_type(in))
      throw core::type_error("scan: the body must keep the carry's type: carry element " +
                             std::to_string(c) + " enters the body as " + in.str() +
                             " and leaves it as " + out_avals[c].str());
  }
  Avals out;
  for (std::size_t c = 0; c < s.num_carry; ++c) out.push_back(j.invars[s.num_consts + c].aval());
  for (std::size_t k = 0; k < s.num_ys; ++k)
    out.push_back(detail::scan_stacked(out_avals[s.num_carry + k], s.length));
  return out;
}

XPR_FUNC std::pair<Arrays, Tangents> ScanP::jvp_symbolic(std::span<const Array> primals,
                                                         std::span<const Tangent> tangents,
                                                         const Params& params) const {
  detail::ScanInfo s(params, primals.size());
  std::vector<bool> nz;
  for (const Tangent& t : tangents) nz.push_back(t.has_value());
  std::vector<bool> const_nz = detail::scan_slice(nz, 0, s.num_consts);
  std::vector<bool> carry_nz = detail::scan_slice(nz, s.num_consts, s.num_carry);
  std::vector<bool> xs_nz = detail::scan_slice(nz, s.num_consts + s.num_carry, s.num_xs);
  detail::JvpJaxpr jj;
  for (;;) {
    std::vector<bool> nonzero = detail::scan_cat(detail::scan_cat(const_nz, carry_nz), xs_nz);
    jj = detail::scan_jvp_jaxpr(*s.jaxpr, nonzero,
                                detail::scan_cat(carry_nz, std::vector<bool>(s.num_ys, false)));
    bool grew = false;
    for (std::size_t c = 0; c < s.num_carry; ++c)
      if (jj.out_nonzero[c] && !carry_nz[c]) carry_nz[c] = grew = true;
    if (!grew) break;
  }
  // The jvp jaxpr reads (extra consts, primals, tangents) and returns (primals, tangents);
  // the scan wants each group's tangents right after its primals.
  const std::size_t k = jj.converted.consts.size(), n = primals.size();
  std::vector<std::size_t> in_order, out_order;
  Arrays operands = jj.converted.consts;
  BoolTuple linear(k, false);
  for (std::size_t i = 0; i < k; ++i) in_order.push_back(i);
  std::size_t t_pos = k + n;  // next tangent input of the jvp jaxpr
  std::size_t num_consts = k, num_carry = 0;
  auto group = [&](std::size_t from, std::size_t count, const std::vector<bool>& gnz,
                   bool instantiate) {
    for (std::size_t i = 0; i < count; ++i) {
      in_order.push_back(k + from + i);
      operands.push_back(primals[from + i]);
      linear.push_back(s.linear.size() == n ? s.linear[from + i] : false);
    }
    std::size_t added = 0;
    for (std::size_t i = 0; i < count; ++i) {
      if (!gnz[i]) continue;
      in_order.push_back(t_pos++);
      const Tangent& t = tangents[from + i];
      operands.push_back(t ? *t : zeros_like_aval(detail::aval_of(primals[from + i])));
      linear.push_back(true);
      ++added;
    }
    (void)instantiate;
    return count + added;
  };
  num_consts += group(0, s.num_consts, const_nz, false);
  num_carry = group(s.num_consts, s.num_carry, carry_nz, true);
  group(s.num_consts + s.num_carry, s.num_xs, xs_nz, false);
  // Outputs: (carry, ys, carry tangents, ys tangents) -> (carry, carry tangents, ys, ys tt).
  const std::size_t n_out = s.num_carry + s.num_ys;
  std::vector<bool> ys_nz = detail::scan_slice(jj.out_nonzero, s.num_carry, s.num_ys);
  for (std::size_t c = 0; c < s.num_carry; ++c) out_order.push_back(c);
  for (std::size_t c = 0, t = n_out; c < s.num_carry; ++c)
    if (carry_nz[c]) out_order.push_back(t++);
  for (std::size_t y = 0; y < s.num_ys; ++y) out_order.push_back(s.num_carry + y);
  for (std::size_t y = 0, t = n_out + detail::scan_count(carry_nz); y < s.num_ys; ++y)
    if (ys_nz[y]) out_order.push_back(t++);
  JaxprParam body = detail::scan_reorder(*jj.converted.jaxpr, in_order, out_order);
  Arrays outs = rt::bind(
      *this, operands,
      detail::scan_params(body, s.length, s.reverse, num_consts, num_carry, std::move(linear)));
  Arrays primals_out;
  Tangents tangents_out;
  std::size_t pos = 0;
  for (std::size_t c = 0; c < s.num_carry; ++c) primals_out.push_back(outs[pos++]);
  for (std::size_t c = 0; c < s.num_carry; ++c)
    tangents_out.push_back(carry_nz[c] ? Tangent(outs[pos++]) : std::nullopt);
  for (std::size_t y = 0; y < s.num_ys; ++y) primals_out.push_back(outs[pos++]);
  for (std::size_t y = 0; y < s.num_ys; ++y)
    tangents_out.push_back(ys_nz[y] ? Tangent(outs[pos++]) : std::nullopt);
  return {std::move(primals_out), std::move(tangents_out)};
}

XPR_FUNC Cotangents ScanP::transpose(std::span<const Cotangent> cts,
                                     std::span<const LinearArg> args, const Params& params) const {
  detail::ScanInfo s(params, args.size());
  const ClosedJaxpr& body = *s.jaxpr;
  const std::size_t x0 = s.num_consts + s.num_carry;
  std::vector<bool> const_lin, xs_lin;
  for (std::size_t i = 0; i < s.num_consts; ++i) const_lin.push_back(is_undefined_primal(args[i]));
  for (std::size_t i = 0; i < s.num_xs; ++i) xs_lin.push_back(is_undefined_primal(args[x0 + i]));
  Avals body_in = body.in_avals(), body_out = body.out_avals();
  Arrays ires, eres, acc0, ct_carry, ct_ys;
  Avals in_avals;
  for (std::size_t i = 0; i < s.num_consts; ++i)
    if (!const_lin[i]) {
      ires.push_back(std::get<Array>(args[i]));
      in_avals.push_back(body_in[i]);
    }
  for (std::size_t i = 0; i < s.num_consts; ++i)
    if (const_lin[i]) {
      acc0.push_back(zeros_like_aval(body_in[i]));
      in_avals.push_back(body_in[i]);
    }
  for (std::size_t c = 0; c < s.num_carry; ++c) {
    ct_carry.push_back(instantiate_zeros(cts[c], body_in[s.num_consts + c]));
    in_avals.push_back(body_in[s.num_consts + c]);
  }
  for (std::size_t y = 0; y < s.num_ys; ++y) {
    const ShapedArray& a = body_out[s.num_carry + y];
    ct_ys.push_back(instantiate_zeros(cts[s.num_carry + y], detail::scan_stacked(a, s.length)));
    in_avals.push_back(a);
  }
  for (std::size_t i = 0; i < s.num_xs; ++i)
    if (!xs_lin[i]) {
      eres.push_back(std::get<Array>(args[x0 + i]));
      in_avals.push_back(body_in[x0 + i]);
    }
  const std::size_t n_lin_consts = acc0.size();
  FlatFunction f = [&](std::span<const Array> in) {
    std::size_t pos = 0;
    std::vector<LinearArg> bargs;
    Arrays acc;
    std::size_t ir = 0;
    Arrays ires_in(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(ires.size()));
    pos = ires.size();
    for (std::size_t i = 0; i < n_lin_consts; ++i) acc.push_back(in[pos++]);
    Cotangents bcts;
    for (std::size_t c = 0; c < s.num_carry; ++c) bcts.emplace_back(in[pos++]);
    for (std::size_t y = 0; y < s.num_ys; ++y) bcts.emplace_back(in[pos++]);
    for (std::size_t i = 0; i < s.num_consts; ++i) {
      if (const_lin[i])
        bargs.emplace_back(UndefinedPrimal{body_in[i]});
      else
        bargs.emplace_back(ires_in[ir++]);
    }
    for (std::size_t c = 0; c < s.num_carry; ++c)
      bargs.emplace_back(UndefinedPrimal{body_in[s.num_consts + c]});
    for (std::size_t i = 0; i < s.num_xs; ++i) {
      if (xs_lin[i])
        bargs.emplace_back(UndefinedPrimal{body_in[x0 + i]});
      else
        bargs.emplace_back(in[pos++]);
    }
    Cotangents res = backward_pass(body.jaxpr, body.consts, bargs, bcts);
    Arrays out;
    for (std::size_t i = 0, a = 0; i < s.num_consts; ++i) {
      if (!const_lin[i]) continue;
      out.push_back(res[i] ? add_jaxvals(acc[a], *res[i]) : acc[a]);
      ++a;
    }
    for (std::size_t c = 0; c < s.num_carry; ++c)
      out.push_back(instantiate_zeros(res[s.num_consts + c], body_in[s.num_consts + c]));
    for (std::size_t i = 0; i < s.num_xs; ++i)
      if (xs_lin[i]) out.push_back(instantiate_zeros(res[x0 + i], body_in[x0 + i]));
    return out;
  };
  detail::ConvertedJaxpr tj = detail::trace_to_converted_jaxpr(f, in_avals);
  Arrays operands = tj.consts;
  operands.insert(operands.end(), ires.begin(), ires.end());
  operands.insert(operands.end(), acc0.begin(), acc0.end());
  operands.insert(operands.end(), ct_carry.begin(), ct_carry.end());
  operands.insert(operands.end(), ct_ys.begin(), ct_ys.end());
  operands.insert(operands.end(), eres.begin(), eres.end());
  const std::size_t num_consts = tj.consts.size() + ires.size();
  BoolTuple linear(num_consts, false);
  linear.resize(operands.size(), true);
  for (std::size_t i = operands.size() - eres.size(); i < operands.size(); ++i) linear[i] = false;
  Arrays outs = rt::bind(*this, operands,
                         detail::scan_params(tj.jaxpr, s.length, !s.reverse, num_consts,
                                             n_lin_consts + s.num_carry, std::move(linear)));
  Cotangents result(args.size());
  std::size_t pos = 0;
  for (std::size_t i = 0; i < s.num_consts; ++i)
    if (const_lin[i]) result[i] = outs[pos++];
  for (std::size_t c = 0; c < s.num_carry; ++c, ++pos)
    if (is_undefined_primal(args[s.num_consts + c])) result[s.num_consts + c] = outs[pos];
  for (std::size_t i = 0; i < s.num_xs; ++i)
    if (xs_lin[i]) result[x0 + i] = outs[pos++];
  return result;
}

XPR_FUNC std::pair<Arrays, BatchDims> ScanP::batch(std::span<const Array> args,
                                                   std::span<const BatchDim> dims,
                                                   std::int64_t axis_size,
                                                   const Params& params) const {
  detail::ScanInfo s(params, args.size());
  if (!detail::any_batched(dims)) {
    Arrays outs = rt::bind(*this, args, params);
    return {outs, BatchDims(outs.size())};
  }
  std::vector<bool> b;
  for (const BatchDim& d : dims) b.push_back(d.has_value());
  std::vector<bool> const_b = detail::scan_slice(b, 0, s.num_consts);
  std::vector<bool> carry_b = detail::scan_slice(b, s.num_consts, s.num_carry);
  std::vector<bool> xs_b = detail::scan_slice(b, s.num_consts + s.num_carry, s.num_xs);
  std::pair<detail::ConvertedJaxpr, std::vector<bool>> bj;
  for (;;) {
    bj = detail::scan_batch_jaxpr(
        *s.jaxpr, detail::scan_cat(detail::scan_cat(const_b, carry_b), xs_b), axis_size,
        detail::scan_cat(carry_b, std::vector<bool>(s.num_ys, false)));
    bool grew = false;
    for (std::size_t c = 0; c < s.num_carry; ++c)
      if (bj.second[c] && !carry_b[c]) carry_b[c] = grew = true;
    if (!grew) break;
  }
  Arrays operands = bj.first.consts;
  const std::size_t k = operands.size();
  for (std::size_t i = 0; i < args.size(); ++i) {
    const Array& x = args[i];
    if (i < s.num_consts) {
      operands.push_back(dims[i] ? moveaxis(x, *dims[i], 0) : x);
    } else if (i < s.num_consts + s.num_carry) {
      if (dims[i])
        operands.push_back(moveaxis(x, *dims[i], 0));
      else
        operands.push_back(carry_b[i - s.num_consts] ? broadcast_batch(x, axis_size, 0) : x);
    } else {
      operands.push_back(dims[i] ? moveaxis(x, *dims[i], 1) : x);
    }
  }
  BoolTuple linear(k, false);
  for (std::size_t i = 0; i < args.size(); ++i)
    linear.push_back(s.linear.size() == args.size() && s.linear[i]);
  Arrays outs = rt::bind(*this, operands,
                         detail::scan_params(bj.first.jaxpr, s.length, s.reverse, k + s.num_consts,
                                             s.num_carry, std::move(linear)));
  BatchDims out_dims;
  for (std::size_t c = 0; c < s.num_carry; ++c)
    out_dims.push_back(carry_b[c] ? BatchDim(0) : std::nullopt);
  for (std::size_t y = 0; y < s.num_ys; ++y)
    out_dims.push_back(bj.second[s.num_carry + y] ? BatchDim(1) : std::nullopt);
  return {std::move(outs), std::move(out_dims)};
}

XPR_FUNC std::optional<Arrays> ScanP::partial_eval(PartialEvalTrace& trace,
                                                   std::span<const Array> tracers,
                                                   const Params& params) const {
  detail::ScanInfo s(params, tracers.size());
  std::vector<bool> in_unknowns;
  for (const Array& t : tracers) in_unknowns.push_back(detail::as_pe_tracer(t).pval().is_unknown());
  detail::ScanSplit sp = detail::scan_split(s, in_unknowns);
  const ClosedJaxpr& jk = sp.split.known;
  const std::size_t num_res = sp.split.num_res;
  const std::size_t nk_carry = s.num_carry - detail::scan_count(sp.carry_uk);
  const std::size_t n_known_outs = jk.jaxpr.outvars.size() - num_res;
  auto value = [&](std::size_t i) { return *detail::as_pe_tracer(tracers[i]).pval().value; };

  // The known scan, after hoisting what depends on the known consts alone.
  std::vector<PartialVal> pvals;
  Arrays known_carry_xs;
  std::size_t nk_consts = 0;
  for (std::size_t i = 0; i < tracers.size(); ++i) {
    if (in_unknowns[i]) continue;
    bool carry = i >= s.num_consts && i < s.num_consts + s.num_carry;
    if (carry && sp.carry_uk[i - s.num_consts]) continue;
    if (i < s.num_consts) {
      pvals.push_back(PartialVal::known(value(i)));
      ++nk_consts;
    } else {
      pvals.push_back(PartialVal::unknown(jk.jaxpr.invars[pvals.size()].aval()));
      known_carry_xs.push_back(value(i));
    }
  }
  // A residual that is a known xs slice itself is read from that operand by the unknown scan
  // (JAX forwards it too), rather than stacked again by the known one.
  std::vector<std::optional<Array>> forwarded(num_res);
  for (std::size_t r = 0; r < num_res; ++r)
    if (const Var* v = std::get_if<Var>(&jk.jaxpr.outvars[n_known_outs + r]))
      for (std::size_t k = nk_consts + nk_carry; k < jk.jaxpr.invars.size(); ++k)
        if (jk.jaxpr.invars[k].id() == v->id()) forwarded[r] = known_carry_xs[k - nk_consts];
  Arrays known_outs, variant_res;
  std::vector<std::optional<Array>> invariant(num_res);
  std::vector<bool> inst(n_known_outs, true);
  for (std::size_t r = 0; r < num_res; ++r)
    if (!forwarded[r]) inst.push_back(false);
  if (!inst.empty()) {
    auto known_body = [&](std::span<const Array> in) {
      Arrays o = eval_jaxpr(jk, in);
      Arrays kept(o.begin(), o.begin() + static_cast<std::ptrdiff_t>(n_known_outs));
      for (std::size_t r = 0; r < num_res; ++r)
        if (!forwarded[r]) kept.push_back(o[n_known_outs + r]);
      return kept;
    };
    PartialEvalResult pe = partial_eval_flat(known_body, pvals, inst, "scan");
    for (std::size_t r = 0, idx = n_known_outs; r < num_res; ++r) {
      if (forwarded[r]) continue;
      const PartialVal& p = pe.pvals_out[idx++];
      if (p.is_known()) invariant[r] = *p.value;
    }
    detail::ConvertedJaxpr kb = detail::convert_constvars(std::move(pe.jaxpr));
    Arrays operands = kb.consts;
    operands.insert(operands.end(), known_carry_xs.begin(), known_carry_xs.end());
    Arrays outs = rt::bind(*this, operands,
                           detail::scan_params(kb.jaxpr, s.length, s.reverse, kb.consts.size(),
                                               nk_carry, BoolTuple(operands.size(), false)));
    known_outs.assign(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(n_known_outs));
    variant_res.assign(outs.begin() + static_cast<std::ptrdiff_t>(n_known_outs), outs.end());
  }

  // The unknown scan: (invariant residuals, unknown consts, carry, xs, stacked residuals).
  Arrays unknown_outs;
  if (detail::scan_any(sp.carry_uk) || detail::scan_any(sp.ys_uk)) {
    const ClosedJaxpr& ju = sp.split.unknown;
    std::vector<std::size_t> in_order, out_order;
    Arrays operands;
    for (std::size_t r = 0; r < num_res; ++r)
      if (invariant[r]) {
        in_order.push_back(r);
        operands.push_back(trace.pure(*invariant[r]));
      }
    const std::size_t n_inv = operands.size();
    std::size_t pos = num_res;
    std::size_t n_uk_consts = 0, n_uk_carry = 0;
    for (std::size_t i = 0; i < tracers.size(); ++i) {
      bool carry = i >= s.num_consts && i < s.num_consts + s.num_carry;
      bool uk = carry ? sp.carry_uk[i - s.num_consts] : in_unknowns[i];
      if (!uk) continue;
      in_order.push_back(pos++);
      operands.push_back(tracers[i]);
      n_uk_consts += i < s.num_consts ? 1 : 0;
      n_uk_carry += carry ? 1 : 0;
    }
    for (std::size_t r = 0, v = 0; r < num_res; ++r)
      if (!invariant[r]) {
        in_order.push_back(r);
        operands.push_back(trace.pure(forwarded[r] ? *forwarded[r] : variant_res[v++]));
      }
    for (std::size_t o = 0; o < ju.jaxpr.outvars.size(); ++o) out_order.push_back(o);
    JaxprParam body = detail::scan_reorder(ju, in_order, out_order);
    BoolTuple linear(operands.size(), false);
    Params p = detail::scan_params(body, s.length, s.reverse, n_inv + n_uk_consts, n_uk_carry,
                                   std::move(linear));
    Avals avals;
    for (const Array& o : operands) avals.push_back(detail::aval_of(o));
    unknown_outs = trace.stage(*this, operands, p, abstract_eval(avals, p));
  }
  Arrays out;
  std::size_t k = 0, u = 0;
  for (std::size_t c = 0; c < s.num_carry; ++c)
    out.push_back(sp.carry_uk[c] ? unknown_outs[u++] : trace.pure(known_outs[k++]));
  for (std::size_t y = 0; y < s.num_ys; ++y)
    out.push_back(sp.ys_uk[y] ? unknown_outs[u++] : trace.pure(known_outs[k++]));
  return out;
}

XPR_FUNC std::optional<PartialEvalEqn> ScanP::partial_eval_jaxpr(
    const std::vector<bool>& in_unknowns, const Eqn& eqn) const {
  if (!detail::scan_any(in_unknowns)) return std::nullopt;
  detail::ScanInfo s(eqn.params, eqn.inputs.size());
  detail::ScanSplit sp = detail::scan_split(s, in_unknowns);
  const ClosedJaxpr& jk = sp.split.known;
  const ClosedJaxpr& ju = sp.split.unknown;
  const std::size_t num_res = sp.split.num_res;
  PartialEvalEqn result;
  result.out_unknowns = detail::scan_cat(sp.carry_uk, sp.ys_uk);
  // Residuals as atoms of the enclosing jaxpr: a known xs slice is forwarded (its operand is
  // read by the unknown scan), the others are new stacked outputs of the known scan.
  std::vector<std::size_t> jk_in;  // the eqn input of each input of the known body
  for (std::size_t i = 0; i < eqn.inputs.size(); ++i) {
    bool carry = i >= s.num_consts && i < s.num_consts + s.num_carry;
    if (!(carry ? sp.carry_uk[i - s.num_consts] : in_unknowns[i])) jk_in.push_back(i);
  }
  const std::size_t n_known_outs = jk.jaxpr.outvars.size() - num_res;
  std::vector<Atom> res_atoms;
  std::vector<bool> res_new(num_res, true);
  for (std::size_t r = 0; r < num_res; ++r) {
    const Atom& out = jk.jaxpr.outvars[n_known_outs + r];
    if (const Var* v = std::get_if<Var>(&out))
      for (std::size_t k = 0; k < jk.jaxpr.invars.size(); ++k)
        if (jk.jaxpr.invars[k].id() == v->id() && jk_in[k] >= s.num_consts + s.num_carry &&
            std::holds_alternative<Var>(eqn.inputs[jk_in[k]])) {
          res_atoms.push_back(eqn.inputs[jk_in[k]]);
          res_new[r] = false;
          break;
        }
    if (res_new[r]) res_atoms.emplace_back(Var(detail::scan_stacked(aval_of(out), s.length)));
  }
  std::vector<bool> keep_out(n_known_outs, true);
  keep_out.insert(keep_out.end(), res_new.begin(), res_new.end());
  if (detail::scan_any(keep_out)) {
    Eqn e{eqn.primitive, {}, {}, {}};
    std::size_t nk_consts = 0, nk_carry = 0;
    for (std::size_t i : jk_in) {
      e.inputs.push_back(eqn.inputs[i]);
      nk_consts += i < s.num_consts ? 1 : 0;
      nk_carry += i >= s.num_consts && i < s.num_consts + s.num_carry ? 1 : 0;
    }
    for (std::size_t o = 0; o < eqn.outputs.size(); ++o)
      if (!result.out_unknowns[o]) e.outputs.push_back(eqn.outputs[o]);
    for (std::size_t r = 0; r < num_res; ++r)
      if (res_new[r]) e.outputs.push_back(std::get<Var>(res_atoms[r]));
    ClosedJaxpr kept = jk;
    kept.jaxpr.outvars.clear();
    for (std::size_t o = 0; o < keep_out.size(); ++o)
      if (keep_out[o]) kept.jaxpr.outvars.push_back(jk.jaxpr.outvars[o]);
    e.params =
        detail::scan_params(std::make_shared<const ClosedJaxpr>(std::move(kept)), s.length,
                            s.reverse, nk_consts, nk_carry, BoolTuple(e.inputs.size(), false));
    result.known = std::move(e);
  }
  if (detail::scan_any(result.out_unknowns)) {
    Eqn e{eqn.primitive, {}, {}, {}};
    std::vector<std::size_t> in_order, out_order;
    std::size_t pos = num_res, n_uk_consts = 0, n_uk_carry = 0;
    for (std::size_t i = 0; i < eqn.inputs.size(); ++i) {
      bool carry = i >= s.num_consts && i < s.num_consts + s.num_carry;
      bool uk = carry ? sp.carry_uk[i - s.num_consts] : in_unknowns[i];
      if (!uk) continue;
      in_order.push_back(pos++);
      e.inputs.push_back(eqn.inputs[i]);
      n_uk_consts += i < s.num_consts ? 1 : 0;
      n_uk_carry += carry ? 1 : 0;
      if (carry && !in_unknowns[i])  // a known initial value of an unknown carry
        if (const Var* v = std::get_if<Var>(&eqn.inputs[i])) result.residuals.push_back(*v);
    }
    for (std::size_t r = 0; r < num_res; ++r) {
      in_order.push_back(r);
      e.inputs.push_back(res_atoms[r]);
      result.residuals.push_back(std::get<Var>(res_atoms[r]));
    }
    for (std::size_t o = 0; o < ju.jaxpr.outvars.size(); ++o) out_order.push_back(o);
    for (std::size_t o = 0; o < eqn.outputs.size(); ++o)
      if (result.out_unknowns[o]) e.outputs.push_back(eqn.outputs[o]);
    e.params =
        detail::scan_params(detail::scan_reorder(ju, in_order, out_order), s.length, s.reverse,
                            n_uk_consts, n_uk_carry, BoolTuple(e.inputs.size(), false));
    result.unknown = std::move(e);
  }
  return result;
}

XPR_FUNC std::optional<DceEqn> ScanP::dce(const std::vector<bool>& used_outputs,
                                          const Eqn& eqn) const {
  detail::ScanInfo s(eqn.params, eqn.inputs.size());
  std::vector<bool> used_carry = detail::scan_slice(used_outputs, 0, s.num_carry);
  std::vector<bool> used_ys = detail::scan_slice(used_outputs, s.num_carry, s.num_ys);
  std::vector<bool> used_in;
  for (;;) {
    used_in = dce_jaxpr(s.jaxpr->jaxpr, detail::scan_cat(used_carry, used_ys), false).second;
    bool grew = false;
    for (std::size_t c = 0; c < s.num_carry; ++c)
      if (used_in[s.num_consts + c] && !used_carry[c]) used_carry[c] = grew = true;
    if (!grew) break;
  }
  for (std::size_t c = 0; c < s.num_carry; ++c) used_in[s.num_consts + c] = used_carry[c];
  ClosedJaxpr pruned = dce_jaxpr(*s.jaxpr, detail::scan_cat(used_carry, used_ys), true).first;
  std::vector<Var> invars;
  for (std::size_t i = 0; i < used_in.size(); ++i)
    if (used_in[i]) invars.push_back(pruned.jaxpr.invars[i]);
  pruned.jaxpr.invars = std::move(invars);
  Eqn e{eqn.primitive, {}, {}, {}};
  BoolTuple linear;
  std::size_t nconsts = 0, ncarry = 0;
  for (std::size_t i = 0; i < eqn.inputs.size(); ++i) {
    if (!used_in[i]) continue;
    e.inputs.push_back(eqn.inputs[i]);
    linear.push_back(s.linear.size() == eqn.inputs.size() && s.linear[i]);
    nconsts += i < s.num_consts ? 1 : 0;
    ncarry += i >= s.num_consts && i < s.num_consts + s.num_carry ? 1 : 0;
  }
  std::vector<bool> used_out = detail::scan_cat(used_carry, used_ys);
  for (std::size_t o = 0; o < eqn.outputs.size(); ++o)
    if (used_out[o]) e.outputs.push_back(eqn.outputs[o]);
  e.params = detail::with_param(eqn.params, "jaxpr",
                                std::make_shared<const ClosedJaxpr>(std::move(pruned)));
  e.params.set("num_consts", static_cast<std::int64_t>(nconsts));
  e.params.set("num_carry", static_cast<std::int64_t>(ncarry));
  e.params.set("linear", std::move(linear));
  return DceEqn{std::move(used_in), std::move(e)};
}

}  // namespace xpr::rt

namespace xpr::rt::detail {

XPR_FUNC Array scan_promote(const Array& init, DType dtype) {
  Params p{{"new_dtype", dtype}, {"weak_type", false}};
  if (!init.is_tracer()) return convert_element_type_p.impl(std::span(&init, 1), p)[0];
  return convert_element_type(init, dtype);
}

}  // namespace xpr::rt::detail
#endif  // XPR_DEFINITIONS
