// SPDX-License-Identifier: MIT
// Lowering a jaxpr to C++ source (the "renderer" of tinygrad's renderer / compiler / program
// split): consecutive elementwise equations fused into one loop nest that GCC vectorizes, the
// other supported primitives as one loop nest each, dot_general through the host's GEMM. The
// source includes no header (an include costs 0.14-1.4 s of compile time, issue 14) and holds
// nothing copied from the input: identifiers are generated and numbers printed from values.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "xpr/core/error.hpp"
#include "xpr/core/ops.hpp"
#include "xpr/rt/jaxpr.hpp"
#include "xpr/rt/jaxpr_eval.hpp"
#include "xpr/rt/jit_options.hpp"
#include "xpr/rt/prims/binary.hpp"
#include "xpr/rt/prims/compare.hpp"
#include "xpr/rt/prims/convert.hpp"
#include "xpr/rt/prims/dot_general.hpp"
#include "xpr/rt/prims/integer_pow.hpp"
#include "xpr/rt/prims/iota.hpp"
#include "xpr/rt/prims/reduce.hpp"
#include "xpr/rt/prims/rev.hpp"
#include "xpr/rt/prims/select.hpp"
#include "xpr/rt/prims/shape.hpp"
#include "xpr/rt/prims/slicing.hpp"
#include "xpr/rt/prims/stop_gradient.hpp"
#include "xpr/rt/prims/unary.hpp"

namespace xpr::codegen {

/// `jit`'s options (rt/jit_options.hpp); codegen reads `precise_math`.
using rt::JitOptions;

/// Where a jitted function's output comes from.
struct OutputSpec {
  enum Kind { kernel_buffer, argument, constant, literal } kind = kernel_buffer;
  std::size_t index = 0;  // the kernel's output buffer, the argument or the constant
  rt::Array value;        // the literal
  rt::ShapedArray aval;   // the output's type, weak flag included
};

/// A jaxpr lowered to C++ source and what the host needs to call it: the kernel's buffers are
/// `b[0 .. num_args)` the arguments, then the consts, then `outputs_in_kernel` output buffers,
/// then the temporaries; `n` lists every dimension size of the arguments and consts, in order.
struct Lowered {
  std::string source;
  std::size_t num_args = 0, num_consts = 0;
  std::vector<rt::ShapedArray> kernel_outputs;  // avals of the kernel's output buffers
  std::vector<rt::ShapedArray> temps;
  std::vector<OutputSpec> outputs;
  std::vector<long long> dims;
};

namespace detail {

using core::DType;
using rt::Array;
using rt::Atom;
using rt::Eqn;
using rt::Jaxpr;
using rt::Literal;
using rt::Primitive;
using rt::ShapedArray;
using rt::Var;

inline const char* c_type(DType t) {
  switch (t) {
    case DType::bool_:
      return "bool";
    case DType::int32:
      return "int";
    case DType::int64:
      return "long long";
    case DType::float32:
      return "float";
    case DType::float64:
      return "double";
  }
  return "void";
}

inline const char* dtype_suffix(DType t) {
  switch (t) {
    case DType::bool_:
      return "b";
    case DType::int32:
      return "i32";
    case DType::int64:
      return "i64";
    case DType::float32:
      return "f32";
    case DType::float64:
      return "f64";
  }
  return "";
}

/// A number as C++ source, printed from its value: hexadecimal floats (exact), builtins for
/// infinities and NaN, the most negative integers as an expression (their literal would overflow).
inline std::string c_number(double v, DType t) {
  if (t == DType::bool_) return v != 0 ? "true" : "false";
  if (t == DType::int32 || t == DType::int64) {
    auto i = static_cast<long long>(v);
    std::string s = t == DType::int32 ? "" : "LL";
    if (t == DType::int32 && i == -2147483648LL) return "(-2147483647-1)";
    if (i == static_cast<long long>(-9223372036854775807LL - 1))
      return "(-9223372036854775807LL-1)";
    return "(" + std::to_string(i) + s + ")";
  }
  const bool f32 = t == DType::float32;
  if (v != v) return f32 ? "__builtin_nanf(\"\")" : "__builtin_nan(\"\")";
  if (v == __builtin_inf()) return f32 ? "__builtin_inff()" : "__builtin_inf()";
  if (v == -__builtin_inf()) return f32 ? "(-__builtin_inff())" : "(-__builtin_inf())";
  char buf[64];
  auto r = f32 ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(v), std::chars_format::hex)
               : std::to_chars(buf, buf + sizeof buf, v, std::chars_format::hex);
  std::string s(buf, r.ptr);
  // to_chars' hex form has no "0x": "-1.8p+1" -> "-0x1.8p+1".
  if (s[0] == '-')
    s = "(-0x" + s.substr(1) + (f32 ? "f)" : ")");
  else
    s = "0x" + s + (f32 ? "f" : "");
  return s;
}

/// A rank-0 literal's value as C++ source.
inline std::string c_literal(const Array& a) {
  switch (a.dtype()) {
    case DType::bool_:
      return a.item<bool>() ? "true" : "false";
    case DType::int32:
      return c_number(static_cast<double>(a.item<std::int32_t>()), a.dtype());
    case DType::int64: {
      long long i = a.item<std::int64_t>();
      if (i == static_cast<long long>(-9223372036854775807LL - 1))
        return "(-9223372036854775807LL-1)";
      return "(" + std::to_string(i) + "LL)";
    }
    case DType::float32:
      return c_number(static_cast<double>(a.item<float>()), a.dtype());
    case DType::float64:
      return c_number(a.item<double>(), a.dtype());
  }
  return "0";
}

// ---------------------------------------------------------------------------------------------
// The elementwise table: one row per primitive, keyed by its `xpr::op` tag.
// ---------------------------------------------------------------------------------------------

/// What an elementwise row's emitter sees: operand expressions (already C++ source), dtypes and
/// the equation's parameters; `math(name, x)` declares and calls a libm function.
struct CCall {
  std::vector<std::string> args;
  std::vector<DType> arg_dtypes;
  DType out = DType::float64;
  const rt::Params* params = nullptr;
  std::set<std::string>* math_used = nullptr;  // "sin_f64", ...

  const std::string& operator[](std::size_t i) const { return args[i]; }
  DType in() const { return arg_dtypes.empty() ? out : arg_dtypes[0]; }
  bool floating() const { return core::is_floating(in()); }
  std::string math(const std::string& fn, const std::string& x) const {
    std::string id = fn + "_" + dtype_suffix(in());
    math_used->insert(id);
    return "xpr_" + id + "(" + x + ")";
  }
  std::string math2(const std::string& fn, const std::string& x, const std::string& y) const {
    std::string id = fn + "_" + dtype_suffix(in());
    math_used->insert(id);
    return "xpr_" + id + "(" + x + ", " + y + ")";
  }
  std::string lit(double v) const { return c_number(v, in()); }
  std::string type() const { return c_type(in()); }
};

using EmitFn = std::string (*)(const CCall&);

/// The C++ expression of an elementwise primitive. The semantics follow the interpreter's kernels
/// (rt/prims): NaN-propagating max/min, XLA's integer division, wrapping integer arithmetic (the
/// kernels are compiled with -fwrapv), saturating float-to-int conversion.
template <class Op>
struct c_expr;

#define XPR_DETAIL_C_MATH(NAME)                                             \
  template <>                                                               \
  struct c_expr<op::NAME> {                                                 \
    static std::string emit(const CCall& c) { return c.math(#NAME, c[0]); } \
  };
XPR_DETAIL_C_MATH(sin)
XPR_DETAIL_C_MATH(cos)
XPR_DETAIL_C_MATH(tan)
XPR_DETAIL_C_MATH(tanh)
XPR_DETAIL_C_MATH(exp)
XPR_DETAIL_C_MATH(log)
XPR_DETAIL_C_MATH(log1p)
XPR_DETAIL_C_MATH(expm1)
#undef XPR_DETAIL_C_MATH

#define XPR_DETAIL_C_INFIX(NAME, OP)                                                         \
  template <>                                                                                \
  struct c_expr<op::NAME> {                                                                  \
    static std::string emit(const CCall& c) { return "(" + c[0] + " " OP " " + c[1] + ")"; } \
  };
XPR_DETAIL_C_INFIX(add, "+")
XPR_DETAIL_C_INFIX(sub, "-")
XPR_DETAIL_C_INFIX(mul, "*")
XPR_DETAIL_C_INFIX(eq, "==")
XPR_DETAIL_C_INFIX(ne, "!=")
XPR_DETAIL_C_INFIX(lt, "<")
XPR_DETAIL_C_INFIX(le, "<=")
XPR_DETAIL_C_INFIX(gt, ">")
XPR_DETAIL_C_INFIX(ge, ">=")
#undef XPR_DETAIL_C_INFIX

template <>
struct c_expr<op::neg> {
  static std::string emit(const CCall& c) { return "(-" + c[0] + ")"; }
};
template <>
struct c_expr<op::sqrt> {
  static std::string emit(const CCall& c) {
    return c.in() == DType::float32 ? "__builtin_sqrtf(" + c[0] + ")"
                                    : "__builtin_sqrt(" + c[0] + ")";
  }
};
template <>
struct c_expr<op::rsqrt> {
  static std::string emit(const CCall& c) {
    return "(" + c.lit(1) + " / " + c_expr<op::sqrt>::emit(c) + ")";
  }
};
template <>
struct c_expr<op::abs> {
  static std::string emit(const CCall& c) {
    if (c.in() == DType::float32) return "__builtin_fabsf(" + c[0] + ")";
    if (c.in() == DType::float64) return "__builtin_fabs(" + c[0] + ")";
    return "(" + c[0] + " < 0 ? -" + c[0] + " : " + c[0] + ")";
  }
};
template <>
struct c_expr<op::sign> {
  static std::string emit(const CCall& c) {
    std::string s = "static_cast<" + c.type() + ">((" + c.lit(0) + " < " + c[0] + ") - (" + c[0] +
                    " < " + c.lit(0) + "))";
    if (c.floating()) return "(" + c[0] + " != " + c[0] + " ? " + c[0] + " : " + s + ")";
    return s;
  }
};
template <>
struct c_expr<op::logistic> {
  static std::string emit(const CCall& c) {
    return "(" + c.lit(1) + " / (" + c.lit(1) + " + " + c.math("exp", "-" + c[0]) + "))";
  }
};
template <>
struct c_expr<op::stop_gradient> {
  static std::string emit(const CCall& c) { return c[0]; }
};
template <>
struct c_expr<op::div> {
  static std::string emit(const CCall& c) {
    if (c.floating()) return "(" + c[0] + " / " + c[1] + ")";
    return "xpr_idiv_" + std::string(dtype_suffix(c.in())) + "(" + c[0] + ", " + c[1] + ")";
  }
};
template <>
struct c_expr<op::max> {
  static std::string emit(const CCall& c) {
    std::string m = "(" + c[0] + " < " + c[1] + " ? " + c[1] + " : " + c[0] + ")";
    if (!c.floating()) return m;
    return "(" + c[0] + " != " + c[0] + " ? " + c[0] + " : " + c[1] + " != " + c[1] + " ? " + c[1] +
           " : " + m + ")";
  }
};
template <>
struct c_expr<op::min> {
  static std::string emit(const CCall& c) {
    std::string m = "(" + c[1] + " < " + c[0] + " ? " + c[1] + " : " + c[0] + ")";
    if (!c.floating()) return m;
    return "(" + c[0] + " != " + c[0] + " ? " + c[0] + " : " + c[1] + " != " + c[1] + " ? " + c[1] +
           " : " + m + ")";
  }
};
template <>
struct c_expr<op::pow> {
  static std::string emit(const CCall& c) { return c.math2("pow", c[0], c[1]); }
};
/// `x ** y` by squaring, in the order op::integer_pow::number multiplies (so results agree to the
/// bit with the interpreter's).
template <>
struct c_expr<op::integer_pow> {
  static std::string emit(const CCall& c) {
    const std::int64_t n = c.params->get<std::int64_t>("y");
    const std::string& x = c[0];
    if (n == 0) return c.lit(1);
    unsigned long long m =
        n < 0 ? 0ull - static_cast<unsigned long long>(n) : static_cast<unsigned long long>(n);
    std::string acc, base = x;
    bool first = true;
    // Powers of x as nested expressions; the base is re-squared textually, which GCC folds (CSE).
    for (; m; m >>= 1) {
      if (m & 1u) {
        acc = first ? base : "(" + acc + " * " + base + ")";
        first = false;
      }
      if (m > 1) base = "(" + base + " * " + base + ")";
      if (base.size() > 4000) return "";  // huge exponents: not lowered (the caller falls back)
    }
    if (n < 0) return "(" + c.lit(1) + " / " + acc + ")";
    return acc;
  }
};
/// select_n(which, case0, case1, ...): bool `which` picks case1 when true; int32 is clamped.
struct c_select_n {
  static std::string emit(const CCall& c) {
    const std::size_t n = c.args.size() - 1;
    if (c.arg_dtypes[0] == DType::bool_) return "(" + c[0] + " ? " + c[2] + " : " + c[1] + ")";
    std::string e = c[n];
    for (std::size_t k = n - 1; k-- > 0;)
      e = "(" + c[0] + " <= " + std::to_string(k) + " ? " + c[k + 1] + " : " + e + ")";
    return e;
  }
};
/// convert_element_type: C++'s conversion, except float-to-int saturates and NaN becomes 0
/// (core::convert_element), and anything-to-bool is `!= 0`.
struct c_convert {
  static std::string emit(const CCall& c) {
    DType from = c.in(), to = c.out;
    if (to == DType::bool_) return "(" + c[0] + " != 0)";
    if (core::is_floating(from) && core::is_integer(to))
      return "xpr_cvt_" + std::string(dtype_suffix(from)) + "_" + dtype_suffix(to) + "(" + c[0] +
             ")";
    return "static_cast<" + std::string(c_type(to)) + ">(" + c[0] + ")";
  }
};

/// One row of the table.
struct ElementwiseRow {
  const Primitive* primitive;
  EmitFn emit;
  bool floating_only_math;  // uses libm: lowered for float32/float64 only
};

template <class Op>
ElementwiseRow row(const Primitive& p, bool math = false) {
  return {&p, &c_expr<Op>::emit, math};
}

/// The table, built on first use (primitives are inline objects of other headers).
inline const std::vector<ElementwiseRow>& elementwise_table() {
  static const std::vector<ElementwiseRow> table = {
      row<op::neg>(rt::neg_p),
      row<op::sin>(rt::sin_p, true),
      row<op::cos>(rt::cos_p, true),
      row<op::tan>(rt::tan_p, true),
      row<op::tanh>(rt::tanh_p, true),
      row<op::exp>(rt::exp_p, true),
      row<op::log>(rt::log_p, true),
      row<op::log1p>(rt::log1p_p, true),
      row<op::expm1>(rt::expm1_p, true),
      row<op::sqrt>(rt::sqrt_p),
      row<op::rsqrt>(rt::rsqrt_p),
      row<op::abs>(rt::abs_p),
      row<op::sign>(rt::sign_p),
      row<op::logistic>(rt::logistic_p, true),
      row<op::stop_gradient>(rt::stop_gradient_p),
      row<op::add>(rt::add_p),
      row<op::sub>(rt::sub_p),
      row<op::mul>(rt::mul_p),
      row<op::div>(rt::div_p),
      row<op::max>(rt::max_p),
      row<op::min>(rt::min_p),
      row<op::pow>(rt::pow_p, true),
      row<op::integer_pow>(rt::integer_pow_p),
      row<op::eq>(rt::eq_p),
      row<op::ne>(rt::ne_p),
      row<op::lt>(rt::lt_p),
      row<op::le>(rt::le_p),
      row<op::gt>(rt::gt_p),
      row<op::ge>(rt::ge_p),
      {&rt::select_n_p, &c_select_n::emit, false},
      {&rt::convert_element_type_p, &c_convert::emit, false},
  };
  return table;
}

inline const ElementwiseRow* find_elementwise(const Primitive* p) {
  for (const ElementwiseRow& r : elementwise_table())
    if (r.primitive == p) return &r;
  return nullptr;
}

/// libm's name of each math function the table uses, and whether glibc 2.35's libmvec has a
/// vector version of it (all of these do, for float and double, on x86-64).
inline std::string math_declaration(const std::string& id, bool precise) {
  // id: "sin_f64" -> double xpr_sin_f64(double) asm("sin")
  auto us = id.rfind('_');
  std::string fn = id.substr(0, us);
  bool f32 = id.substr(us + 1) == "f32";
  std::string t = f32 ? "float" : "double";
  std::string sym = fn + (f32 ? "f" : "");
  std::string params = fn == "pow" ? t + ", " + t : t;
  std::string attrs = precise ? "__attribute__((const, nothrow, leaf))"
                              : "__attribute__((const, nothrow, leaf, simd(\"notinbranch\")))";
  return "extern \"C\" " + t + " xpr_" + id + "(" + params + ") __asm__(\"" + sym + "\") " + attrs +
         ";\n";
}

// ---------------------------------------------------------------------------------------------
// The lowering
// ---------------------------------------------------------------------------------------------

/// The primitives with a loop nest of their own.
inline bool is_standalone(const Primitive* p) {
  return p == &rt::reduce_sum_p || p == &rt::reduce_max_p || p == &rt::reduce_min_p ||
         p == &rt::transpose_p || p == &rt::reshape_p || p == &rt::squeeze_p ||
         p == &rt::expand_dims_p || p == &rt::slice_p || p == &rt::rev_p ||
         p == &rt::concatenate_p || p == &rt::iota_p || p == &rt::dot_general_p || p == &rt::pad_p;
}

/// Call-like primitives whose body is a sub-jaxpr applied to the operands as they are (a nested
/// `pjit`, custom-derivative calls, whose derivative rules do not matter when evaluating, and
/// checkpoint): inlined before lowering, so their equations fuse with their neighbours.
inline const rt::ClosedJaxpr* inlinable_body(const Eqn& e) {
  static const char* const names[] = {"pjit",  "custom_jvp_call", "custom_vjp_call", "checkpoint",
                                      "remat", "closed_call",     "core_call"};
  bool call = false;
  for (const char* n : names) call = call || e.primitive->name() == n;
  if (!call) return nullptr;
  for (const char* key : {"jaxpr", "call_jaxpr"})
    if (const rt::ParamValue* v = e.params.find(key))
      if (const rt::JaxprParam* j = std::get_if<rt::JaxprParam>(v); j && *j) {
        const rt::ClosedJaxpr& c = **j;
        if (c.jaxpr.invars.size() != e.inputs.size() || c.jaxpr.outvars.size() != e.outputs.size())
          return nullptr;
        for (const Array& k : c.consts)
          if (k.ndim() != 0 || !k.is_concrete()) return nullptr;  // only scalars become literals
        return &c;
      }
  return nullptr;
}

/// Appends `body` applied to `args` to `out`; returns its outputs. Equations get fresh result
/// variables, so a body inlined twice defines each variable once.
inline std::vector<Atom> inline_into(std::vector<Eqn>& out, const Jaxpr& body,
                                     std::span<const Array> consts, std::span<const Atom> args,
                                     std::size_t depth) {
  if (depth > rt::max_jaxpr_nesting)
    throw core::not_implemented_error("jit: code generation for calls nested deeper than " +
                                      std::to_string(rt::max_jaxpr_nesting) + " not implemented");
  std::unordered_map<const void*, Atom> env;
  for (std::size_t i = 0; i < body.constvars.size(); ++i)
    env.emplace(body.constvars[i].id(), Atom(Literal{consts[i]}));
  for (std::size_t i = 0; i < body.invars.size(); ++i) env.emplace(body.invars[i].id(), args[i]);
  auto read = [&](const Atom& a) -> Atom {
    if (const Var* v = std::get_if<Var>(&a)) {
      auto it = env.find(v->id());
      if (it == env.end())
        throw core::not_implemented_error(
            "jit: code generation for a jaxpr using an undefined variable not implemented");
      return it->second;
    }
    return a;
  };
  for (const Eqn& e : body.eqns) {
    std::vector<Atom> ins;
    for (const Atom& a : e.inputs) ins.push_back(read(a));
    if (const rt::ClosedJaxpr* sub = e.primitive ? inlinable_body(e) : nullptr) {
      std::vector<Atom> res = inline_into(out, sub->jaxpr, sub->consts, ins, depth + 1);
      for (std::size_t k = 0; k < e.outputs.size(); ++k)
        env.insert_or_assign(e.outputs[k].id(), res[k]);
      continue;
    }
    Eqn n{e.primitive, std::move(ins), e.params, {}};
    for (const Var& v : e.outputs) {
      n.outputs.emplace_back(v.aval());
      env.insert_or_assign(v.id(), Atom(n.outputs.back()));
    }
    out.push_back(std::move(n));
  }
  std::vector<Atom> res;
  for (const Atom& a : body.outvars) res.push_back(read(a));
  return res;
}

/// `j` with its call-like equations inlined (j itself when it has none).
inline Jaxpr inline_calls(const Jaxpr& j) {
  bool any = false;
  for (const Eqn& e : j.eqns) any = any || (e.primitive && inlinable_body(e));
  if (!any) return j;
  Jaxpr r;
  r.constvars = j.constvars;
  r.invars = j.invars;
  std::vector<Atom> args;
  for (const Var& v : j.invars) args.emplace_back(v);
  std::vector<Atom> cs;
  for (const Var& v : j.constvars) cs.emplace_back(v);
  // The outer jaxpr's constvars stay variables: pass them through an environment of atoms.
  Jaxpr body = j;
  body.invars.insert(body.invars.begin(), j.constvars.begin(), j.constvars.end());
  body.constvars.clear();
  std::vector<Atom> all = cs;
  all.insert(all.end(), args.begin(), args.end());
  r.outvars = inline_into(r.eqns, body, {}, all, 0);
  return r;
}

/// The largest number of equations fused into one emitted function: compile time inside one
/// function grows superlinearly (issue 14 measured 1000 statements at 0.7 s with -O3).
inline constexpr std::size_t max_group_eqns = 200;

class Lowering {
 public:
  Lowering(const Jaxpr& j, const JitOptions& o, bool standalone = false)
      : jaxpr_(j), opts_(o), standalone_(standalone) {}

  Lowered run() {
    number_vars();
    collect_dims();
    form_groups();
    assign_buffers();
    std::string body;
    for (std::size_t g = 0; g < groups_.size(); ++g) body += emit_group(g);
    out_.source = preamble() + body + entry();
    return std::move(out_);
  }

 private:
  struct Group {
    bool elementwise = false;
    core::Shape shape;
    std::vector<std::size_t> eqns;
  };
  struct VarInfo {
    std::size_t id = 0;
    int group = -1;   // defining group; -1 for arguments and consts
    int buffer = -1;  // kernel buffer index, -1 when local to its group
  };

  const Jaxpr& jaxpr_;
  const JitOptions& opts_;
  bool standalone_ = false;  // see lower_standalone
  Lowered out_;
  std::unordered_map<const void*, VarInfo> vars_;
  std::vector<Group> groups_;
  std::vector<std::pair<long long, std::size_t>> dim_symbols_;  // value -> index into n
  std::set<std::string> math_used_;
  std::set<std::string> helpers_used_;
  std::size_t next_buffer_ = 0;

  [[noreturn]] static void unsupported(const std::string& what) {
    throw core::not_implemented_error("jit: code generation for " + what + " not implemented");
  }

  VarInfo& info(const Var& v) {
    auto it = vars_.find(v.id());
    if (it == vars_.end()) unsupported("a jaxpr using an undefined variable");
    return it->second;
  }

  void number_vars() {
    std::size_t k = 0;
    auto def = [&](const Var& v, int group) {
      // Each aval's byte count must fit (Shape checks element counts; this checks bytes).
      (void)core::checked_nbytes(v.aval().size(), core::itemsize(v.aval().dtype));
      if (!vars_.emplace(v.id(), VarInfo{k++, group, -1}).second)
        unsupported("a jaxpr defining a variable twice");
    };
    for (const Var& v : jaxpr_.invars) def(v, -1);
    for (const Var& v : jaxpr_.constvars) def(v, -1);
    for (const Eqn& e : jaxpr_.eqns)
      for (const Var& v : e.outputs) def(v, -2);  // group assigned later
  }

  void collect_dims() {
    auto add = [&](const Var& v) {
      for (std::int64_t d : v.aval().shape) {
        dim_symbols_.emplace_back(d, out_.dims.size());
        out_.dims.push_back(d);
      }
    };
    for (const Var& v : jaxpr_.invars) add(v);
    for (const Var& v : jaxpr_.constvars) add(v);
    out_.num_args = jaxpr_.invars.size();
    out_.num_consts = jaxpr_.constvars.size();
  }

  /// A dimension size as C++: the first argument dimension of that size (so the source, and the
  /// compiled kernel, are the same for inputs that differ only in sizes), else the number.
  std::string dim(std::int64_t d) const {
    for (const auto& [v, k] : dim_symbols_)
      if (v == d) return "n[" + std::to_string(k) + "]";
    return std::to_string(d) + "LL";
  }
  std::string count(const core::Shape& s) const {
    if (s.rank() == 0) return "1LL";
    std::string r;
    for (std::size_t i = 0; i < s.rank(); ++i) r += (i ? " * " : "") + dim(s[i]);
    return r;
  }
  /// The row-major stride of dimension `i` of `s`.
  std::string stride(const core::Shape& s, std::size_t i) const {
    std::string r;
    for (std::size_t k = i + 1; k < s.rank(); ++k) r += (r.empty() ? "" : " * ") + dim(s[k]);
    return r.empty() ? "1LL" : r;
  }

  static bool all_vars_or_scalar_literals(const Eqn& e) {
    for (const Atom& a : e.inputs)
      if (const Literal* l = std::get_if<Literal>(&a); l && l->value.ndim() != 0) return false;
    return true;
  }

  void form_groups() {
    for (std::size_t i = 0; i < jaxpr_.eqns.size(); ++i) {
      const Eqn& e = jaxpr_.eqns[i];
      if (!e.primitive) unsupported("an equation without a primitive");
      const bool bcast = e.primitive == &rt::broadcast_in_dim_p;
      const ElementwiseRow* r = bcast ? nullptr : find_elementwise(e.primitive);
      if (!r && !bcast && !is_standalone(e.primitive)) unsupported("'" + e.primitive->name() + "'");
      if (e.outputs.size() != 1) unsupported("'" + e.primitive->name() + "' with several results");
      if (!all_vars_or_scalar_literals(e)) unsupported("array literals");
      if (r && r->floating_only_math && !core::is_floating(aval_of(e.inputs[0]).dtype))
        unsupported("'" + e.primitive->name() + "' on integers");
      if (e.primitive == &rt::dot_general_p && core::is_bool(e.outputs[0].aval().dtype))
        unsupported("dot_general of booleans");
      const core::Shape& shape = e.outputs[0].aval().shape;
      if (r || bcast) {
        if (r && e.primitive == &rt::integer_pow_p) {
          CCall c;
          c.args = {"x"};
          c.arg_dtypes = {aval_of(e.inputs[0]).dtype};
          c.out = e.outputs[0].aval().dtype;
          c.params = &e.params;
          c.math_used = &math_used_;
          if (c_expr<op::integer_pow>::emit(c).empty())
            unsupported("integer_pow of a huge exponent");
        }
        bool join = !groups_.empty() && groups_.back().elementwise &&
                    groups_.back().shape == shape && groups_.back().eqns.size() < max_group_eqns;
        if (!join) groups_.push_back(Group{true, shape, {}});
      } else {
        groups_.push_back(Group{false, shape, {}});
      }
      groups_.back().eqns.push_back(i);
      info(e.outputs[0]).group = static_cast<int>(groups_.size() - 1);
    }
  }

  void assign_buffers() {
    next_buffer_ = out_.num_args + out_.num_consts;
    for (std::size_t i = 0; i < jaxpr_.invars.size(); ++i)
      info(jaxpr_.invars[i]).buffer = static_cast<int>(i);
    for (std::size_t i = 0; i < jaxpr_.constvars.size(); ++i)
      info(jaxpr_.constvars[i]).buffer = static_cast<int>(out_.num_args + i);
    // Outputs first (their buffers are the host's result arrays), then temporaries.
    for (const Atom& a : jaxpr_.outvars) {
      OutputSpec o;
      o.aval = aval_of(a);
      if (const Literal* l = std::get_if<Literal>(&a)) {
        o.kind = OutputSpec::literal;
        o.value = l->value;
      } else {
        VarInfo& vi = info(std::get<Var>(a));
        if (vi.group == -1) {
          o.kind = vi.buffer < static_cast<int>(out_.num_args) ? OutputSpec::argument
                                                               : OutputSpec::constant;
          o.index = vi.buffer < static_cast<int>(out_.num_args)
                        ? static_cast<std::size_t>(vi.buffer)
                        : static_cast<std::size_t>(vi.buffer) - out_.num_args;
        } else {
          if (vi.buffer < 0) {
            vi.buffer = static_cast<int>(next_buffer_++);
            out_.kernel_outputs.push_back(std::get<Var>(a).aval());
          }
          o.kind = OutputSpec::kernel_buffer;
          o.index = static_cast<std::size_t>(vi.buffer) - out_.num_args - out_.num_consts;
        }
      }
      out_.outputs.push_back(std::move(o));
    }
    // A value used by another group than its own lives in a buffer.
    for (std::size_t g = 0; g < groups_.size(); ++g)
      for (std::size_t i : groups_[g].eqns)
        for (const Atom& a : jaxpr_.eqns[i].inputs)
          if (const Var* v = std::get_if<Var>(&a)) {
            VarInfo& vi = info(*v);
            if (vi.group == -2) unsupported("a variable used before its definition");
            if (vi.buffer < 0 && vi.group != static_cast<int>(g)) {
              vi.buffer = static_cast<int>(next_buffer_++);
              out_.temps.push_back(v->aval());
            }
          }
    // Standalone primitives read and write buffers only.
    for (std::size_t g = 0; g < groups_.size(); ++g)
      if (!groups_[g].elementwise) {
        const Var& o = jaxpr_.eqns[groups_[g].eqns[0]].outputs[0];
        VarInfo& vi = info(o);
        if (vi.buffer < 0) {
          vi.buffer = static_cast<int>(next_buffer_++);
          out_.temps.push_back(o.aval());
        }
      }
  }

  std::string ptr(const Var& v, bool mut = false) {
    const VarInfo& vi = info(v);
    std::string t = c_type(v.aval().dtype);
    return "static_cast<" + std::string(mut ? "" : "const ") + t + "*>(b[" +
           std::to_string(vi.buffer) + "])";
  }
  std::string name(const Var& v) { return "v" + std::to_string(info(v).id); }

  // ---- elementwise groups ----

  std::string emit_group(std::size_t g) {
    const Group& grp = groups_[g];
    std::string f =
        "// group " + std::to_string(g) + "\nstatic void g" + std::to_string(g) +
        "(void* const* b, const long long* n, const XprHost* h) {\n  (void)b; (void)n; (void)h;\n";
    if (grp.elementwise) return f + emit_elementwise(g) + "}\n\n";
    return f + emit_standalone(jaxpr_.eqns[grp.eqns[0]]) + "}\n\n";
  }

  std::string emit_elementwise(std::size_t g) {
    const Group& grp = groups_[g];
    const std::size_t rank = grp.shape.rank();
    std::string pre, body;
    std::map<std::size_t, std::string> read_name;  // var id -> expression read in the loop
    std::size_t nbc = 0;
    bool nd = false;
    std::vector<std::string> bc_index;  // per broadcast: index expression in i0..ir-1
    auto operand = [&](const Atom& a, bool allow_array = true) -> std::string {
      if (const Literal* l = std::get_if<Literal>(&a)) return c_literal(l->value);
      const Var& v = std::get<Var>(a);
      const VarInfo& vi = info(v);
      if (vi.group == static_cast<int>(g)) return name(v);
      auto it = read_name.find(vi.id);
      if (it != read_name.end()) return it->second;
      std::string p = "p" + std::to_string(vi.id);
      std::string t = c_type(v.aval().dtype);
      std::string expr;
      if (v.aval().ndim() == 0 || !allow_array) {
        pre += "  const " + t + " " + p + " = " + ptr(v) + "[0];\n";
        expr = p;
      } else {
        pre += "  const " + t + "* __restrict " + p + " = " + ptr(v) + ";\n";
        expr = p + "[i]";
      }
      read_name.emplace(vi.id, expr);
      return expr;
    };
    for (std::size_t i : grp.eqns) {
      const Eqn& e = jaxpr_.eqns[i];
      const Var& o = e.outputs[0];
      std::string t = c_type(o.aval().dtype);
      std::string expr;
      if (e.primitive == &rt::broadcast_in_dim_p) {
        const Atom& a = e.inputs[0];
        const ShapedArray& in = aval_of(a);
        if (in.ndim() == 0 || in.shape == o.aval().shape) {
          expr = operand(a);
        } else {
          // A strided read of a buffered operand: stride 0 along broadcast dimensions.
          const Var& v = std::get<Var>(a);
          const auto& bd = e.params.get<rt::Axes>("broadcast_dimensions");
          std::string p = "q" + std::to_string(nbc);
          pre += "  const " + std::string(c_type(in.dtype)) + "* __restrict " + p + " = " + ptr(v) +
                 ";\n";
          std::string idx;
          for (std::size_t k = 0; k < bd.size(); ++k) {
            if (in.shape[k] == 1) continue;
            idx += (idx.empty() ? "" : " + ") + std::string("i") + std::to_string(bd[k]) + " * (" +
                   stride(in.shape, k) + ")";
          }
          expr = p + "[" + (idx.empty() ? "0" : idx) + "]";
          ++nbc;
          nd = true;
        }
      } else {
        const ElementwiseRow* r = find_elementwise(e.primitive);
        CCall c;
        for (const Atom& a : e.inputs) {
          c.args.push_back(operand(a));
          c.arg_dtypes.push_back(aval_of(a).dtype);
        }
        c.out = o.aval().dtype;
        c.params = &e.params;
        c.math_used = &math_used_;
        if (e.primitive == &rt::div_p && !c.floating())
          helpers_used_.insert(std::string("idiv_") + dtype_suffix(c.in()));
        if (e.primitive == &rt::convert_element_type_p && core::is_floating(c.in()) &&
            core::is_integer(c.out))
          helpers_used_.insert(std::string("cvt_") + dtype_suffix(c.in()) + "_" +
                               dtype_suffix(c.out));
        if (e.primitive == &rt::select_n_p && c.arg_dtypes[0] == DType::int32 && c.args.size() < 2)
          unsupported("select_n without cases");
        expr = r->emit(c);
      }
      body += "    const " + t + " " + name(o) + " = " + expr + ";\n";
      if (info(o).buffer >= 0) {
        std::string on = "o" + std::to_string(info(o).id);
        pre += "  " + t + "* __restrict " + on + " = " + ptr(o, true) + ";\n";
        body += "    " + on + "[i] = " + name(o) + ";\n";
      }
    }
    (void)bc_index;
    std::string loop;
    if (!nd || rank == 0) {
      loop = "  const long long N = " + count(grp.shape) +
             ";\n  for (long long i = 0; i < N; ++i) {\n" + body + "  }\n";
    } else {
      std::string open, close;
      std::string ind = "  ";
      for (std::size_t k = 0; k < rank; ++k) {
        open += ind + "for (long long i" + std::to_string(k) + " = 0; i" + std::to_string(k) +
                " < " + dim(grp.shape[k]) + "; ++i" + std::to_string(k) + ") {\n";
        close = ind + "}\n" + close;
        ind += "  ";
      }
      std::string flat;
      for (std::size_t k = 0; k < rank; ++k)
        flat += (k ? " + " : "") + std::string("i") + std::to_string(k) + " * (" +
                stride(grp.shape, k) + ")";
      // Body lines are indented for the flat loop; fine for readability either way.
      loop = open + ind + "const long long i = " + flat + ";\n" + body + close;
    }
    return pre + loop;
  }

  // ---- standalone primitives ----

  /// Nested loops over `shape` (indices i0, i1, ...) around `body`, which may use `i` (the flat
  /// row-major index).
  std::string nest(const core::Shape& shape, const std::string& body,
                   const std::string& ivar = "i") {
    std::string open, close, ind = "  ";
    const std::size_t rank = shape.rank();
    for (std::size_t k = 0; k < rank; ++k) {
      std::string iv = ivar + std::to_string(k);
      open += ind + "for (long long " + iv + " = 0; " + iv + " < " + dim(shape[k]) + "; ++" + iv +
              ") {\n";
      close = ind + "}\n" + close;
      ind += "  ";
    }
    std::string flat;
    for (std::size_t k = 0; k < rank; ++k)
      flat += (k ? " + " : "") + ivar + std::to_string(k) + " * (" + stride(shape, k) + ")";
    if (flat.empty()) flat = "0";
    return open + ind + "const long long " + ivar + " = " + flat + "; (void)" + ivar + ";\n" + ind +
           body + "\n" + close;
  }

  std::string in_ptr(const Atom& a, std::string& pre, const std::string& name_) {
    std::string t = c_type(aval_of(a).dtype);
    if (const Literal* l = std::get_if<Literal>(&a)) {
      pre += "  const " + t + " " + name_ + "_v[1] = {" + c_literal(l->value) + "};\n";
      pre += "  const " + t + "* __restrict " + name_ + " = " + name_ + "_v;\n";
    } else {
      pre += "  const " + t + "* __restrict " + name_ + " = " + ptr(std::get<Var>(a)) + ";\n";
    }
    return name_;
  }

  std::string emit_standalone(const Eqn& e) {
    const Var& o = e.outputs[0];
    const ShapedArray& oa = o.aval();
    const std::string t = c_type(oa.dtype);
    std::string pre = "  " + t + "* __restrict o = " + ptr(o, true) + ";\n";
    const Primitive* p = e.primitive;
    if (p == &rt::reshape_p || p == &rt::squeeze_p || p == &rt::expand_dims_p) {
      if (p == &rt::reshape_p) {
        const rt::ParamValue* d = e.params.find("dimensions");
        if (d && !std::holds_alternative<rt::None>(*d)) unsupported("reshape with dimensions");
      }
      in_ptr(e.inputs[0], pre, "x");
      return pre + "  const long long N = " + count(oa.shape) +
             ";\n  for (long long i = 0; i < N; ++i) o[i] = x[i];\n";
    }
    if (p == &rt::iota_p) {
      auto d = static_cast<std::size_t>(e.params.get<std::int64_t>("dimension"));
      return pre + nest(oa.shape, "o[i] = static_cast<" + t + ">(i" + std::to_string(d) + ");");
    }
    if (p == &rt::transpose_p) {
      const auto& perm = e.params.get<rt::Axes>("permutation");
      const ShapedArray& in = aval_of(e.inputs[0]);
      in_ptr(e.inputs[0], pre, "x");
      std::string idx;
      for (std::size_t k = 0; k < perm.size(); ++k)
        idx += (k ? " + " : "") + std::string("i") + std::to_string(k) + " * (" +
               stride(in.shape, static_cast<std::size_t>(perm[k])) + ")";
      return pre + nest(oa.shape, "o[i] = x[" + (idx.empty() ? "0" : idx) + "];");
    }
    if (p == &rt::rev_p) {
      const auto& dims = e.params.get<rt::Axes>("dimensions");
      in_ptr(e.inputs[0], pre, "x");
      std::string idx;
      for (std::size_t k = 0; k < oa.ndim(); ++k) {
        bool r = std::find(dims.begin(), dims.end(), static_cast<std::int64_t>(k)) != dims.end();
        std::string ik = "i" + std::to_string(k);
        idx += (k ? " + " : "") + (r ? "(" + dim(oa.shape[k]) + " - 1 - " + ik + ")" : ik) +
               " * (" + stride(oa.shape, k) + ")";
      }
      return pre + nest(oa.shape, "o[i] = x[" + (idx.empty() ? "0" : idx) + "];");
    }
    if (p == &rt::slice_p) {
      const auto& start = e.params.get<rt::Axes>("start_indices");
      const rt::ParamValue* sv = e.params.find("strides");
      const rt::Axes* st = sv ? std::get_if<rt::Axes>(sv) : nullptr;
      const ShapedArray& in = aval_of(e.inputs[0]);
      in_ptr(e.inputs[0], pre, "x");
      std::string idx;
      for (std::size_t k = 0; k < oa.ndim(); ++k) {
        std::int64_t s = st ? (*st)[k] : 1;
        idx += (k ? " + " : "") + std::string("(") + std::to_string(start[k]) + "LL + i" +
               std::to_string(k) + " * " + std::to_string(s) + "LL) * (" + stride(in.shape, k) +
               ")";
      }
      return pre + nest(oa.shape, "o[i] = x[" + (idx.empty() ? "0" : idx) + "];");
    }
    if (p == &rt::concatenate_p) {
      auto d = static_cast<std::size_t>(e.params.get<std::int64_t>("dimension"));
      std::string s = pre;
      std::string offset = "0LL";
      for (std::size_t k = 0; k < e.inputs.size(); ++k) {
        const ShapedArray& in = aval_of(e.inputs[k]);
        std::string xn = "x" + std::to_string(k);
        std::string sp;
        in_ptr(e.inputs[k], sp, xn);
        std::string oidx;
        for (std::size_t a = 0; a < in.ndim(); ++a)
          oidx += (a ? " + " : "") + std::string("(j") + std::to_string(a) +
                  (a == d ? " + (" + offset + ")" : "") + ") * (" + stride(oa.shape, a) + ")";
        s += "  {\n" + sp + nest(in.shape, "o[" + oidx + "] = " + xn + "[j];", "j") + "  }\n";
        offset += " + " + dim(in.shape[d]);
      }
      return s;
    }
    if (p == &rt::pad_p) {
      const auto& cfg = e.params.get<rt::PaddingConfig>("padding_config");
      const ShapedArray& in = aval_of(e.inputs[0]);
      in_ptr(e.inputs[0], pre, "x");
      in_ptr(e.inputs[1], pre, "pv");
      // Fill, then place each operand element at lo + i * (interior + 1) when inside the output.
      std::string s = pre + "  const long long N = " + count(oa.shape) +
                      ";\n  for (long long i = 0; i < N; ++i) o[i] = pv[0];\n";
      std::string cond, oidx;
      for (std::size_t k = 0; k < in.ndim(); ++k) {
        std::string pos = "(" + std::to_string(cfg.dims[k][0]) + "LL + j" + std::to_string(k) +
                          " * " + std::to_string(cfg.dims[k][2] + 1) + "LL)";
        cond += (k ? " && " : "") + pos + " >= 0 && " + pos + " < " + dim(oa.shape[k]);
        oidx += (k ? " + " : "") + pos + " * (" + stride(oa.shape, k) + ")";
      }
      if (cond.empty()) cond = "true";
      if (oidx.empty()) oidx = "0";
      return s + nest(in.shape, "if (" + cond + ") o[" + oidx + "] = x[j];", "j");
    }
    if (p == &rt::reduce_sum_p || p == &rt::reduce_max_p || p == &rt::reduce_min_p)
      return pre + emit_reduce(e);
    if (p == &rt::dot_general_p) return pre + emit_dot(e);
    unsupported("'" + p->name() + "'");
  }

  std::string emit_reduce(const Eqn& e) {
    const ShapedArray& in = aval_of(e.inputs[0]);
    const ShapedArray& oa = e.outputs[0].aval();
    const DType dt = in.dtype;
    const std::string t = c_type(dt);
    const bool fl = core::is_floating(dt);
    const auto& axes = e.params.get<rt::Axes>("axes");
    std::vector<bool> red(in.ndim(), false);
    for (std::int64_t a : axes) red[static_cast<std::size_t>(a)] = true;
    std::string id, comb;
    auto combine = [&](const std::string& a, const std::string& b) -> std::string {
      if (e.primitive == &rt::reduce_sum_p)
        return dt == DType::bool_ ? "(" + a + " || " + b + ")" : "(" + a + " + " + b + ")";
      CCall c;
      c.args = {a, b};
      c.arg_dtypes = {dt, dt};
      c.out = dt;
      c.math_used = &math_used_;
      return e.primitive == &rt::reduce_max_p ? c_expr<op::max>::emit(c) : c_expr<op::min>::emit(c);
    };
    if (e.primitive == &rt::reduce_sum_p) {
      id = c_number(0, dt);
    } else if (e.primitive == &rt::reduce_max_p) {
      id = fl                   ? c_number(-__builtin_inf(), dt)
           : dt == DType::bool_ ? "false"
           : dt == DType::int32 ? "(-2147483647-1)"
                                : "(-9223372036854775807LL-1)";
    } else {
      id = fl                   ? c_number(__builtin_inf(), dt)
           : dt == DType::bool_ ? "true"
           : dt == DType::int32 ? "2147483647"
                                : "9223372036854775807LL";
    }
    std::string pre;
    in_ptr(e.inputs[0], pre, "x");
    // Reduced axes trailing and contiguous: per output element, eight independent accumulators
    // over a contiguous run (vectorizable without reassociating one running sum).
    std::size_t first_red = in.ndim();
    while (first_red > 0 && red[first_red - 1]) --first_red;
    bool trailing = true;
    for (std::size_t k = 0; k < first_red; ++k) trailing = trailing && !red[k];
    if (trailing) {
      core::Shape kept(std::vector<std::int64_t>(
          in.shape.begin(), in.shape.begin() + static_cast<std::ptrdiff_t>(first_red)));
      core::Shape inner(std::vector<std::int64_t>(
          in.shape.begin() + static_cast<std::ptrdiff_t>(first_red), in.shape.end()));
      std::string s =
          pre + "  const long long M = " + count(kept) + ", K = " + count(inner) + ";\n";
      s += "  for (long long j = 0; j < M; ++j) {\n";
      s += "    const " + t + "* __restrict r = x + j * K;\n";
      s += "    " + t + " acc[8] = {" + id + ", " + id + ", " + id + ", " + id + ", " + id + ", " +
           id + ", " + id + ", " + id + "};\n";
      s += "    long long k = 0;\n";
      s += "    for (; k + 8 <= K; k += 8)\n      for (int l = 0; l < 8; ++l) acc[l] = " +
           combine("acc[l]", "r[k + l]") + ";\n";
      s += "    " + t + " s = " + id + ";\n";
      s += "    for (int l = 0; l < 8; ++l) s = " + combine("s", "acc[l]") + ";\n";
      s += "    for (; k < K; ++k) s = " + combine("s", "r[k]") + ";\n";
      s += "    o[j] = s;\n  }\n";
      return s;
    }
    std::string s = pre + "  const long long M = " + count(oa.shape) +
                    ";\n  for (long long j = 0; j < M; ++j) o[j] = " + id + ";\n";
    std::string oidx;
    std::size_t ok = 0;
    for (std::size_t k = 0; k < in.ndim(); ++k)
      if (!red[k])
        oidx += (oidx.empty() ? "" : " + ") + std::string("i") + std::to_string(k) + " * (" +
                stride(oa.shape, ok++) + ")";
    if (oidx.empty()) oidx = "0";
    return s + nest(in.shape, "o[" + oidx + "] = " + combine("o[" + oidx + "]", "x[i]") + ";");
  }

  std::string emit_dot(const Eqn& e) {
    const auto& dn = e.params.get<rt::DotDimensionNumbers>("dimension_numbers");
    const ShapedArray& la = aval_of(e.inputs[0]);
    const ShapedArray& ra = aval_of(e.inputs[1]);
    const DType dt = e.outputs[0].aval().dtype;
    auto free_dims = [](std::size_t rank, const rt::Axes& c, const rt::Axes& b) {
      rt::Axes f;
      for (std::size_t k = 0; k < rank; ++k) {
        auto kk = static_cast<std::int64_t>(k);
        if (std::find(c.begin(), c.end(), kk) == c.end() &&
            std::find(b.begin(), b.end(), kk) == b.end())
          f.push_back(kk);
      }
      return f;
    };
    rt::Axes lf = free_dims(la.ndim(), dn.lhs_contracting, dn.lhs_batch);
    rt::Axes rf = free_dims(ra.ndim(), dn.rhs_contracting, dn.rhs_batch);
    auto cat = [](std::initializer_list<const rt::Axes*> parts) {
      rt::Axes r;
      for (const rt::Axes* p : parts) r.insert(r.end(), p->begin(), p->end());
      return r;
    };
    auto identity = [](const rt::Axes& p) {
      for (std::size_t k = 0; k < p.size(); ++k)
        if (p[k] != static_cast<std::int64_t>(k)) return false;
      return true;
    };
    auto prod = [&](const ShapedArray& a, const rt::Axes& ds) {
      if (ds.empty()) return std::string("1LL");
      std::string r;
      for (std::size_t k = 0; k < ds.size(); ++k)
        r += (k ? " * " : "") + dim(a.shape[static_cast<std::size_t>(ds[k])]);
      return r;
    };
    std::string s;
    // Each operand in a layout the GEMM reads directly, or copied into one (a transpose).
    auto operand = [&](std::size_t which, const ShapedArray& a, const rt::Axes& plain,
                       const rt::Axes& transposed, std::string& trans) -> std::string {
      std::string nm = which == 0 ? "a" : "bb";
      in_ptr(e.inputs[which], s, nm + "0");
      if (identity(plain)) {
        trans = "0";
        return nm + "0";
      }
      if (identity(transposed)) {
        trans = "1";
        return nm + "0";
      }
      trans = "0";
      // Copy into a temporary buffer in the `plain` order.
      core::Shape ps;
      std::vector<std::int64_t> pd;
      for (std::int64_t d : plain) pd.push_back(a.shape[static_cast<std::size_t>(d)]);
      ps = core::Shape(pd);
      int buf = static_cast<int>(next_buffer_++);
      out_.temps.push_back(ShapedArray{ps, a.dtype, false});
      std::string tn = nm + "1";
      s += "  " + std::string(c_type(a.dtype)) + "* __restrict " + tn + " = static_cast<" +
           c_type(a.dtype) + "*>(b[" + std::to_string(buf) + "]);\n";
      std::string idx;
      for (std::size_t k = 0; k < plain.size(); ++k)
        idx += (k ? " + " : "") + std::string("t") + std::to_string(k) + " * (" +
               stride(a.shape, static_cast<std::size_t>(plain[k])) + ")";
      s += "  {\n" + nest(ps, tn + "[t] = " + nm + "0[" + (idx.empty() ? "0" : idx) + "];", "t") +
           "  }\n";
      return tn;
    };
    std::string ta, tb;
    std::string A = operand(0, la, cat({&dn.lhs_batch, &lf, &dn.lhs_contracting}),
                            cat({&dn.lhs_batch, &dn.lhs_contracting, &lf}), ta);
    std::string B = operand(1, ra, cat({&dn.rhs_batch, &dn.rhs_contracting, &rf}),
                            cat({&dn.rhs_batch, &rf, &dn.rhs_contracting}), tb);
    s += "  h->gemm(" + std::to_string(static_cast<int>(dt)) + ", " + prod(la, dn.lhs_batch) +
         ", " + prod(la, lf) + ", " + prod(ra, rf) + ", " + prod(la, dn.lhs_contracting) + ", " +
         A + ", " + ta + ", " + B + ", " + tb + ", o);\n";
    return s;
  }

  // ---- file ----

  std::string preamble() const {
    std::string s =
        "// Generated by xpr::jit. No includes: the kernel links only against libm/libmvec.\n"
        "// Buffers b[]: arguments, consts, outputs, temporaries; n[]: the arguments' sizes.\n\n"
        "struct XprHost {\n"
        "  void (*gemm)(int dtype, long long batch, long long m, long long n, long long k,\n"
        "               const void* a, int a_transposed, const void* b, int b_transposed, void* "
        "c);\n"
        "};\n\n";
    for (const std::string& m : math_used_) s += math_declaration(m, opts_.precise_math);
    for (const std::string& h : helpers_used_) s += helper(h);
    return s + "\n";
  }

  static std::string helper(const std::string& h) {
    if (h.rfind("idiv_", 0) == 0) {
      std::string t = h == "idiv_i32" ? "int" : "long long";
      // XLA: x / 0 == -1, INT_MIN / -1 == INT_MIN (wraps, -fwrapv), else truncation.
      return "static inline " + t + " xpr_" + h + "(" + t + " a, " + t +
             " b) { return b == 0 ? static_cast<" + t + ">(-1) : b == -1 ? -a : a / b; }\n";
    }
    // cvt_<from>_<to>: saturating, NaN -> 0 (core::convert_element).
    bool f32 = h.find("_f32_") != std::string::npos;
    bool to32 = h.size() >= 3 && h.substr(h.size() - 3) == "i32";
    std::string from = f32 ? "float" : "double", to = to32 ? "int" : "long long";
    std::string lo = to32 ? "(-2147483647-1)" : "(-9223372036854775807LL-1)";
    std::string hi = to32 ? "2147483647" : "9223372036854775807LL";
    return "static inline " + to + " xpr_" + h + "(" + from + " x) { return x != x ? static_cast<" +
           to + ">(0) : x <= static_cast<" + from + ">(" + lo + ") ? " + lo +
           " : x >= static_cast<" + from + ">(" + hi + ") ? " + hi + " : static_cast<" + to +
           ">(x); }\n";
  }

  std::string entry() const {
    if (standalone_)
      return "static void xpr_kernel(void* const* b, const long long* n, const XprHost* h) {\n" +
             calls() + "  (void)b; (void)n; (void)h;\n}\n";
    std::string s =
        "extern \"C\" __attribute__((visibility(\"default\"))) int xpr_abi_version() { return 1; "
        "}\n\n"
        "extern \"C\" __attribute__((visibility(\"default\")))\n"
        "void xpr_kernel(void* const* b, const long long* n, const XprHost* h) {\n";
    return s + calls() + "  (void)b; (void)n; (void)h;\n}\n";
  }

  std::string calls() const {
    std::string s;
    for (std::size_t g = 0; g < groups_.size(); ++g)
      s += "  g" + std::to_string(g) + "(b, n, h);\n";
    return s;
  }
};

}  // namespace detail

/// Lowers `jaxpr` (its invars and constvars typed as they are) to C++ source. Throws
/// `not_implemented_error` naming the first primitive it cannot lower (the caller then
/// interprets); see docs/jit.md for the list of primitives covered.
inline Lowered lower(const rt::Jaxpr& jaxpr, const JitOptions& options = {}) {
  const rt::Jaxpr flat = detail::inline_calls(jaxpr);
  return detail::Lowering(flat, options).run();
}

/// `lower` for ahead-of-time export (xpr/aot.hpp): the same source, except that the entry point
/// is `static void xpr_kernel(...)`, not an exported `extern "C"` symbol (several exported
/// functions link into one program) and there is no `xpr_abi_version`; the caller supplies the
/// `XprHost` (its GEMM) and the exported wrapper.
inline Lowered lower_standalone(const rt::Jaxpr& jaxpr, const JitOptions& options = {}) {
  const rt::Jaxpr flat = detail::inline_calls(jaxpr);
  return detail::Lowering(flat, options, true).run();
}

}  // namespace xpr::codegen
