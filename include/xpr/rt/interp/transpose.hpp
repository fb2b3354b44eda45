// SPDX-License-Identifier: MIT
// Transposition (Autodidax Part 4's `eval_jaxpr_transposed`, JAX's `backward_pass`): runs a jaxpr
// that is linear in some of its inputs backwards, from cotangents of its outputs to cotangents of
// those inputs, with each primitive's `transpose` rule. Cotangents are accumulated with
// `add_jaxvals` and may be symbolic zeros (empty), which are never materialized until the end.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/core/error.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/jaxpr.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/prims/binary.hpp"
#include "xpr/rt/trace.hpp"
#include "xpr/rt/zeros.hpp"

namespace xpr::rt {

/// The sum of two cotangents of one value (JAX's `add_jaxvals`).
inline Array add_jaxvals(const Array& a, const Array& b) { return rt::bind1(add_p, {a, b}); }

/// Cotangent `ct`, or zeros of type `aval` when it is a symbolic zero (JAX's `instantiate_zeros`).
inline Array instantiate_zeros(const Cotangent& ct, const ShapedArray& aval) {
  return ct ? *ct : zeros_like_aval(aval);
}

/// Transposes `jaxpr` (with constants `consts`) with respect to the inputs `args` gives as
/// `UndefinedPrimal`: from the cotangents `cts_out` of its outputs (empty: zero) to the cotangents
/// of those inputs, one entry per input (empty for a known input, or when the cotangent is zero).
///
/// Equations whose inputs are all known (non-linear work on constants) are evaluated first; the
/// others must be linear in their undefined inputs and are transposed in reverse order, skipping
/// those whose output cotangents are all zero. Under an enclosing transformation every primitive
/// binds as usual, so the result can itself be differentiated, batched or staged.
Cotangents backward_pass(const Jaxpr& jaxpr, std::span<const Array> consts,
                         std::span<const LinearArg> args, std::span<const Cotangent> cts_out);

}  // namespace xpr::rt

#if XPR_DEFINITIONS

namespace xpr::rt {

XPR_FUNC Cotangents backward_pass(const Jaxpr& jaxpr, std::span<const Array> consts,
                                  std::span<const LinearArg> args,
                                  std::span<const Cotangent> cts_out) {
  if (consts.size() != jaxpr.constvars.size() || args.size() != jaxpr.invars.size() ||
      cts_out.size() != jaxpr.outvars.size())
    throw core::type_error("backward_pass: expected " + std::to_string(jaxpr.constvars.size()) +
                           " consts, " + std::to_string(jaxpr.invars.size()) + " arguments and " +
                           std::to_string(jaxpr.outvars.size()) + " cotangents, found " +
                           std::to_string(consts.size()) + ", " + std::to_string(args.size()) +
                           " and " + std::to_string(cts_out.size()));
  std::unordered_map<const void*, Array> primal_env;
  std::unordered_map<const void*, Array> ct_env;
  auto is_known = [&](const Atom& a) {
    const Var* v = std::get_if<Var>(&a);
    return !v || primal_env.count(v->id()) > 0;
  };
  auto read_primal = [&](const Atom& a) -> LinearArg {
    if (const Literal* l = std::get_if<Literal>(&a)) return l->value;
    const Var& v = std::get<Var>(a);
    auto it = primal_env.find(v.id());
    if (it == primal_env.end()) return UndefinedPrimal{v.aval()};
    return it->second;
  };
  auto write_cotangent = [&](const Atom& a, const Cotangent& ct) {
    const Var* v = std::get_if<Var>(&a);
    if (!v || !ct || primal_env.count(v->id())) return;  // literals and known values: no cotangent
    auto it = ct_env.find(v->id());
    if (it == ct_env.end())
      ct_env.emplace(v->id(), *ct);
    else
      it->second = add_jaxvals(it->second, *ct);
  };
  auto pop_cotangent = [&](const Var& v) -> Cotangent {
    auto it = ct_env.find(v.id());
    if (it == ct_env.end()) return std::nullopt;
    Array ct = std::move(it->second);
    ct_env.erase(it);
    return ct;
  };

  for (std::size_t i = 0; i < consts.size(); ++i)
    primal_env.insert_or_assign(jaxpr.constvars[i].id(), consts[i]);
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (const Array* a = std::get_if<Array>(&args[i]))
      primal_env.insert_or_assign(jaxpr.invars[i].id(), *a);
    else if (!aval_of(args[i]).same_type(jaxpr.invars[i].aval()))
      throw core::type_error("backward_pass: expected an undefined primal of type " +
                             jaxpr.invars[i].aval().str() + " for input " + std::to_string(i) +
                             ", found " + aval_of(args[i]).str());
  }

  // Forward: the non-linear equations (every input known).
  std::vector<const Eqn*> linear;
  for (const Eqn& e : jaxpr.eqns) {
    bool known = true;
    for (const Atom& a : e.inputs) known = known && is_known(a);
    if (!known) {
      linear.push_back(&e);
      continue;
    }
    Arrays ins;
    ins.reserve(e.inputs.size());
    for (const Atom& a : e.inputs) ins.push_back(std::get<Array>(read_primal(a)));
    Arrays outs = rt::bind(*e.primitive, std::span<const Array>(ins), e.params);
    for (std::size_t k = 0; k < outs.size() && k < e.outputs.size(); ++k)
      primal_env.insert_or_assign(e.outputs[k].id(), std::move(outs[k]));
  }

  // Backward: the linear equations in reverse.
  for (std::size_t i = 0; i < cts_out.size(); ++i) {
    if (cts_out[i] && !detail::aval_of(*cts_out[i]).same_type(aval_of(jaxpr.outvars[i])))
      throw core::type_error("backward_pass: expected a cotangent of type " +
                             aval_of(jaxpr.outvars[i]).str() + " for output " + std::to_string(i) +
                             ", found " + detail::aval_of(*cts_out[i]).str());
    write_cotangent(jaxpr.outvars[i], cts_out[i]);
  }
  for (auto it = linear.rbegin(); it != linear.rend(); ++it) {
    const Eqn& e = **it;
    Cotangents cts;
    cts.reserve(e.outputs.size());
    bool any = false;
    for (const Var& v : e.outputs) {
      cts.push_back(pop_cotangent(v));
      any = any || cts.back().has_value();
    }
    if (!any) continue;
    std::vector<LinearArg> ins;
    ins.reserve(e.inputs.size());
    for (const Atom& a : e.inputs) ins.push_back(read_primal(a));
    Cotangents cts_in = e.primitive->transpose(cts, ins, e.params);
    if (cts_in.size() != e.inputs.size())
      throw core::type_error("transpose rule for '" + e.primitive->name() + "': expected one " +
                             "cotangent per operand (" + std::to_string(e.inputs.size()) +
                             "), found " + std::to_string(cts_in.size()));
    for (std::size_t k = 0; k < cts_in.size(); ++k) {
      if (!cts_in[k] || !is_undefined_primal(ins[k])) continue;
      if (!detail::aval_of(*cts_in[k]).same_type(aval_of(ins[k])))
        throw core::type_error("transpose rule for '" + e.primitive->name() +
                               "': expected a cotangent of type " + aval_of(ins[k]).str() +
                               " for operand " + std::to_string(k) + ", found " +
                               detail::aval_of(*cts_in[k]).str());
      write_cotangent(e.inputs[k], cts_in[k]);
    }
  }

  Cotangents result;
  result.reserve(args.size());
  for (std::size_t i = 0; i < args.size(); ++i)
    result.push_back(is_undefined_primal(args[i]) ? pop_cotangent(jaxpr.invars[i]) : Cotangent{});
  return result;
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
