// SPDX-License-Identifier: MIT
// eval_jaxpr, which runs a jaxpr by binding its primitives (so it runs under any active
// transformation, Autodidax's eval_jaxpr), and typecheck_jaxpr, which checks that a jaxpr is
// well formed and well typed (JAX's core.check_jaxpr) and names the equation that is not.
#pragma once

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/core/error.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/aval.hpp"
#include "xpr/rt/jaxpr.hpp"
#include "xpr/rt/jaxpr_print.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/trace.hpp"

namespace xpr::rt {

namespace detail {

std::string avals_str(std::span<const ShapedArray> avals);

/// Checks that `values` fit `vars` (count, shape and dtype); `what` names them in the message.
void check_values(const char* fn, const char* what, std::span<const Var> vars,
                  std::span<const Array> values);

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// eval_jaxpr
// ---------------------------------------------------------------------------------------------

/// Evaluates `jaxpr` on `args`, with `consts` the values of its constvars, by binding each
/// equation's primitive: eagerly this computes, under a transformation it transforms (so
/// `jvp(eval_jaxpr(j, ...))` differentiates the jaxpr). Throws `type_error` when the number or
/// the types (shape and dtype) of `consts` or `args` do not match the jaxpr's.
/// See examples/jaxpr_text.cpp.
Arrays eval_jaxpr(const Jaxpr& jaxpr, std::span<const Array> consts, std::span<const Array> args);

/// Evaluates a closed jaxpr on `args`.
inline Arrays eval_jaxpr(const ClosedJaxpr& jaxpr, std::span<const Array> args) {
  return eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, args);
}

inline Arrays eval_jaxpr(const ClosedJaxpr& jaxpr, std::initializer_list<Array> args) {
  return eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, std::span<const Array>(args.begin(), args.size()));
}

// ---------------------------------------------------------------------------------------------
// typecheck_jaxpr
// ---------------------------------------------------------------------------------------------

void typecheck_jaxpr(const ClosedJaxpr& jaxpr);

namespace detail {

[[noreturn]] inline void typecheck_fail(const Jaxpr& jaxpr, std::size_t eqn,
                                        const std::string& what) {
  throw type_error("typecheck_jaxpr: in equation " + std::to_string(eqn + 1) + " of " +
                   std::to_string(jaxpr.eqns.size()) + ", `" + pretty_print_eqn(jaxpr, eqn) +
                   "`: " + what);
}

/// The sub-jaxprs already checked during the outermost typecheck on this thread: shared ones are
/// checked once, not once per reference (exponential in the depth of a DAG of shared jaxprs).
inline std::unordered_set<const void*>*& typechecked() {
  thread_local std::unordered_set<const void*>* set = nullptr;
  return set;
}

/// Checks one jaxpr (its sub-jaxprs through typecheck_jaxpr).
void typecheck(const Jaxpr& jaxpr);

}  // namespace detail

/// Checks that `jaxpr` is well formed and well typed: each variable is defined once, before it
/// is used; each equation's results have the types its primitive's abstract evaluation gives
/// for its operands (sub-jaxprs in parameters are checked too); the outputs are defined. Throws
/// `type_error` naming the offending equation (printed) with what was expected and found.
inline void typecheck_jaxpr(const Jaxpr& jaxpr) { detail::typecheck(jaxpr); }

/// Also checks that the consts match the constvars.
inline void typecheck_jaxpr(const ClosedJaxpr& jaxpr) {
  detail::check_values("typecheck_jaxpr", "consts", jaxpr.jaxpr.constvars, jaxpr.consts);
  detail::typecheck(jaxpr.jaxpr);
}

/// Also checks that the invars have the types `in_avals`.
void typecheck_jaxpr(const Jaxpr& jaxpr, std::span<const ShapedArray> in_avals);

}  // namespace xpr::rt

namespace xpr {
using rt::eval_jaxpr;
using rt::typecheck_jaxpr;
}  // namespace xpr

#if XPR_DEFINITIONS

namespace xpr::rt::detail {

XPR_FUNC std::string avals_str(std::span<const ShapedArray> avals) {
  std::string s = "(";
  for (std::size_t i = 0; i < avals.size(); ++i) s += (i ? ", " : "") + avals[i].str();
  return s + ")";
}

XPR_FUNC void check_values(const char* fn, const char* what, std::span<const Var> vars,
                           std::span<const Array> values) {
  if (vars.size() != values.size())
    throw type_error(std::string(fn) + ": expected " + std::to_string(vars.size()) + " " + what +
                     ", found " + std::to_string(values.size()));
  for (std::size_t i = 0; i < vars.size(); ++i)
    if (!vars[i].aval().same_type(detail::aval_of(values[i])))
      throw type_error(std::string(fn) + ": expected " + what + " " + std::to_string(i) +
                       " of type " + vars[i].aval().str() + ", found " +
                       detail::aval_of(values[i]).str());
}

}  // namespace xpr::rt::detail

namespace xpr::rt {

XPR_FUNC Arrays eval_jaxpr(const Jaxpr& jaxpr, std::span<const Array> consts,
                           std::span<const Array> args) {
  detail::check_values("eval_jaxpr", "consts", jaxpr.constvars, consts);
  detail::check_values("eval_jaxpr", "arguments", jaxpr.invars, args);
  detail::NestingGuard<struct EvalTag> nest("eval_jaxpr");

  // Each value is dropped after its last use, so intermediates do not all live to the end.
  std::unordered_map<const void*, std::size_t> last_use;
  for (std::size_t i = 0; i < jaxpr.eqns.size(); ++i)
    for (const Atom& a : jaxpr.eqns[i].inputs)
      if (const Var* v = std::get_if<Var>(&a)) last_use[v->id()] = i;
  for (const Atom& a : jaxpr.outvars)
    if (const Var* v = std::get_if<Var>(&a)) last_use[v->id()] = jaxpr.eqns.size();

  std::unordered_map<const void*, Array> env;
  auto read = [&](const Atom& a) -> const Array& {
    if (const Literal* l = std::get_if<Literal>(&a)) return l->value;
    auto it = env.find(std::get<Var>(a).id());
    if (it == env.end())
      throw type_error("eval_jaxpr: a variable of type " + std::get<Var>(a).aval().str() +
                       " is used but never defined (check the jaxpr with typecheck_jaxpr)");
    return it->second;
  };
  for (std::size_t i = 0; i < consts.size(); ++i)
    env.insert_or_assign(jaxpr.constvars[i].id(), consts[i]);
  for (std::size_t i = 0; i < args.size(); ++i) env.insert_or_assign(jaxpr.invars[i].id(), args[i]);

  Arrays ins;
  for (std::size_t i = 0; i < jaxpr.eqns.size(); ++i) {
    const Eqn& e = jaxpr.eqns[i];
    if (!e.primitive)
      throw type_error("eval_jaxpr: expected a primitive in equation " + std::to_string(i + 1) +
                       ", found none");
    ins.clear();
    for (const Atom& a : e.inputs) ins.push_back(read(a));
    Arrays outs = rt::bind(*e.primitive, std::span<const Array>(ins), e.params);
    if (outs.size() != e.outputs.size())
      throw type_error("eval_jaxpr: expected " + std::to_string(e.outputs.size()) +
                       " results from " + e.primitive->name() + ", found " +
                       std::to_string(outs.size()));
    for (const Atom& a : e.inputs)
      if (const Var* v = std::get_if<Var>(&a))
        if (last_use[v->id()] == i) env.erase(v->id());
    for (std::size_t k = 0; k < outs.size(); ++k)
      env.insert_or_assign(e.outputs[k].id(), std::move(outs[k]));
  }
  Arrays result;
  result.reserve(jaxpr.outvars.size());
  for (const Atom& a : jaxpr.outvars) result.push_back(read(a));
  return result;
}

}  // namespace xpr::rt

namespace xpr::rt::detail {

XPR_FUNC void typecheck(const Jaxpr& jaxpr) {
  NestingGuard<struct TypecheckTag> nest("typecheck_jaxpr");
  std::unordered_set<const void*> checked_here;
  auto*& checked = typechecked();
  const bool outermost = checked == nullptr;
  if (outermost) checked = &checked_here;
  struct Reset {
    bool on;
    ~Reset() {
      if (on) typechecked() = nullptr;
    }
  } reset{outermost};
  auto check_sub = [&](const ClosedJaxpr& sub) {
    if (checked->insert(&sub).second) typecheck_jaxpr(sub);
  };
  std::unordered_set<const void*> defined;
  auto define = [&](const Var& v, const char* role) {
    if (!defined.insert(v.id()).second)
      throw type_error(std::string("typecheck_jaxpr: expected each variable to be defined once, "
                                   "found ") +
                       role + " " + v.aval().str() + " defined again in\n" + pretty_print(jaxpr));
  };
  for (const Var& v : jaxpr.constvars) define(v, "constvar");
  for (const Var& v : jaxpr.invars) define(v, "invar");

  // A variable's printed name, for messages.
  auto var_name = [&](const Var& v) {
    detail::JaxprPrinter p;
    (void)p.toplevel(jaxpr);
    return p.name(v);
  };

  for (std::size_t i = 0; i < jaxpr.eqns.size(); ++i) {
    const Eqn& e = jaxpr.eqns[i];
    if (!e.primitive) typecheck_fail(jaxpr, i, "expected a primitive, found none");
    Avals in_avals;
    for (const Atom& a : e.inputs) {
      if (const Var* v = std::get_if<Var>(&a)) {
        if (!defined.count(v->id()))
          typecheck_fail(jaxpr, i,
                         "expected every operand to be defined before it is used, found " +
                             var_name(*v) + ":" + v->aval().str() + " undefined");
      } else if (!std::get<Literal>(a).value.is_concrete()) {
        typecheck_fail(jaxpr, i, "expected literals to be concrete, found a traced value");
      }
      in_avals.push_back(aval_of(a));
    }
    // Sub-jaxprs are checked too, before the primitive's own rule, which may rely on them.
    for (const auto& [k, v] : e.params) {
      try {
        if (const JaxprParam* p = std::get_if<JaxprParam>(&v)) {
          if (*p) check_sub(**p);
        } else if (const JaxprTuple* ps = std::get_if<JaxprTuple>(&v)) {
          for (const JaxprParam& q : *ps)
            if (q) check_sub(*q);
        }
      } catch (const NestingError&) {
        throw;
      } catch (const type_error& err) {
        typecheck_fail(jaxpr, i, "in its parameter '" + k + "': " + err.what());
      }
    }
    Avals out_avals;
    try {
      out_avals = e.primitive->abstract_eval(in_avals, e.params);
    } catch (const core::error& err) {
      typecheck_fail(jaxpr, i,
                     std::string(e.primitive->name()) + " rejects operands " + avals_str(in_avals) +
                         ": " + err.what());
    }
    if (out_avals.size() != e.outputs.size())
      typecheck_fail(jaxpr, i,
                     "expected " + std::to_string(out_avals.size()) + " results from " +
                         e.primitive->name() + ", found " + std::to_string(e.outputs.size()));
    for (std::size_t k = 0; k < out_avals.size(); ++k)
      if (!out_avals[k].same_type(e.outputs[k].aval()))
        typecheck_fail(jaxpr, i,
                       "expected result " + std::to_string(k) + " of type " + out_avals[k].str() +
                           " (from " + e.primitive->name() + "'s abstract evaluation), found " +
                           var_name(e.outputs[k]) + ":" + e.outputs[k].aval().str());
    for (const Var& v : e.outputs) define(v, "result");
  }
  for (std::size_t k = 0; k < jaxpr.outvars.size(); ++k)
    if (const Var* v = std::get_if<Var>(&jaxpr.outvars[k]); v && !defined.count(v->id()))
      throw type_error("typecheck_jaxpr: expected every output to be defined, found output " +
                       std::to_string(k) + " " + var_name(*v) + ":" + v->aval().str() +
                       " undefined in\n" + pretty_print(jaxpr));
}

}  // namespace xpr::rt::detail

namespace xpr::rt {

XPR_FUNC void typecheck_jaxpr(const Jaxpr& jaxpr, std::span<const ShapedArray> in_avals) {
  if (jaxpr.invars.size() != in_avals.size() ||
      !std::equal(in_avals.begin(), in_avals.end(), jaxpr.invars.begin(),
                  [](const ShapedArray& a, const Var& v) { return a.same_type(v.aval()); }))
    throw type_error("typecheck_jaxpr: expected inputs of types " + detail::avals_str(in_avals) +
                     ", found invars of types " + detail::avals_str(jaxpr.in_avals()));
  detail::typecheck(jaxpr);
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
