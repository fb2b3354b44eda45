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
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/core/error.hpp"
#include "xpr/core/ops.hpp"
#include "xpr/rt/cumulative.hpp"
#include "xpr/rt/interp/partial_eval.hpp"
#include "xpr/rt/jaxpr.hpp"
#include "xpr/rt/jaxpr_eval.hpp"
#include "xpr/rt/jit_options.hpp"
#include "xpr/rt/loop_iteration_limit.hpp"
#include "xpr/rt/prims/argminmax.hpp"
#include "xpr/rt/prims/binary.hpp"
#include "xpr/rt/prims/compare.hpp"
#include "xpr/rt/prims/convert.hpp"
#include "xpr/rt/prims/dot_general.hpp"
#include "xpr/rt/prims/gather.hpp"
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
  /// The buffer of the loop-control block (a temporary of 4 int64) when the kernel runs loops or
  /// check_max_trips, else -1: `LoopControl` fills and reads it around the call.
  int control = -1;
  /// The check_max_trips equations the kernel's status may name (status 3 + k is checks[k]).
  std::vector<std::pair<const rt::Primitive*, rt::Params>> checks;
  /// The equations the kernel calls back into the host for (`XprHost::call`'s k): their impl
  /// runs on the operand buffers, literals taken from here.
  std::vector<rt::Eqn> host_calls;
};

/// What the host does around a kernel call with a loop-control block: hands the kernel the
/// iterations the thread's `LoopIterationLimit` allows (the kernel counts locally, with no call
/// per iteration), then charges what ran and turns the kernel's status into the exception the
/// interpreter throws at the same point. A zero-filled block means "no limit, no error".
class LoopControl {
 public:
  /// The block to put in the kernel's buffer `plan.control`.
  XPR_MEMBER void* begin();
  /// After the call (and after the kernel's scratch memory is released).
  XPR_MEMBER void end(const Lowered& plan) const;

 private:
  long long block_[4] = {0, 0, 0, 0};
  long long start_ = 0;
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

const char* c_type(DType t);

const char* dtype_suffix(DType t);

/// A number as C++ source, printed from its value: hexadecimal floats (exact), builtins for
/// infinities and NaN, the most negative integers as an expression (their literal would overflow).
std::string c_number(double v, DType t);

/// A rank-0 literal's value as C++ source.
std::string c_literal(const Array& a);

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
  std::set<std::string>* math_used = nullptr;     // "sin_f64", ...
  std::set<std::string>* helpers_used = nullptr;  // "max_f64", ... (Lowering::helper)
  /// Set while a flat loop is emitted a second time with the preamble's own sine and cosine
  /// (Lowering::emit_group): f64 `sin` and `cos` then call them, and this is set to true.
  bool* fast_trig = nullptr;
  /// Set while that loop's fallback is emitted: f64 `sin` and `cos` then call libm's scalar
  /// functions (see `emit_group`).
  bool scalar_trig = false;

  const std::string& operator[](std::size_t i) const { return args[i]; }
  DType in() const { return arg_dtypes.empty() ? out : arg_dtypes[0]; }
  bool floating() const { return core::is_floating(in()); }
  XPR_MEMBER std::string math(const std::string& fn, const std::string& x) const;
  XPR_MEMBER std::string math2(const std::string& fn, const std::string& x,
                               const std::string& y) const;
  /// A call of the preamble's helper `xpr_<fn>_<dtype>(x, y)`, recorded as used.
  XPR_MEMBER std::string helper(const std::string& fn, const std::string& x,
                                const std::string& y) const;
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
XPR_DETAIL_C_MATH(exp2)
XPR_DETAIL_C_MATH(cbrt)
XPR_DETAIL_C_MATH(erf)
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
    // NaN and ±0 are their own sign (-0.0 gives -0.0, as eager and XLA give).
    if (c.floating())
      return "(" + c[0] + " < " + c.lit(0) + " || " + c.lit(0) + " < " + c[0] + " ? " + s + " : " +
             c[0] + ")";
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
struct c_expr<op::copy> {
  static std::string emit(const CCall& c) { return c[0]; }
};
template <>
struct c_expr<op::square> {
  static std::string emit(const CCall& c) { return "(" + c[0] + " * " + c[0] + ")"; }
};
// floor, ceil and round are GCC builtins that vectorize to one rounding instruction (SSE4.1's
// roundpd) and need no libm: the same results as the C library's.
template <>
struct c_expr<op::floor> {
  static std::string emit(const CCall& c) {
    return std::string(c.in() == DType::float32 ? "__builtin_floorf(" : "__builtin_floor(") + c[0] +
           ")";
  }
};
template <>
struct c_expr<op::ceil> {
  static std::string emit(const CCall& c) {
    return std::string(c.in() == DType::float32 ? "__builtin_ceilf(" : "__builtin_ceil(") + c[0] +
           ")";
  }
};
/// round[rounding_method]: 0 rounds halves away from zero (C's `round`), 1 to even (C23's
/// `roundeven`, which GCC provides as a builtin); the method was checked when the equation was
/// typed, so it is read from the parameter, never pasted from text.
template <>
struct c_expr<op::round> {
  static std::string emit(const CCall& c) {
    const bool even = c.params->get<std::int64_t>("rounding_method") == 1;
    const char* f = even ? "__builtin_roundeven" : "__builtin_round";
    return std::string(f) + (c.in() == DType::float32 ? "f(" : "(") + c[0] + ")";
  }
};
template <>
struct c_expr<op::is_finite> {
  static std::string emit(const CCall& c) { return "__builtin_isfinite(" + c[0] + ")"; }
};
/// not: logical for bool, bitwise for integers (the result converted back: `~` promotes).
template <>
struct c_expr<op::not_> {
  static std::string emit(const CCall& c) {
    if (c.in() == DType::bool_) return "(!" + c[0] + ")";
    return "static_cast<" + c.type() + ">(~" + c[0] + ")";
  }
};
template <>
struct c_expr<op::div> {
  static std::string emit(const CCall& c) {
    if (c.floating()) return "(" + c[0] + " / " + c[1] + ")";
    return "xpr_idiv_" + std::string(dtype_suffix(c.in())) + "(" + c[0] + ", " + c[1] + ")";
  }
};
/// rem: the C library's fmod for floats (a GCC builtin: with -fno-math-errno an inline loop, no
/// libm call), XLA's integer semantics through a helper (`x rem 0 == x`, `INT_MIN rem -1 == 0`).
template <>
struct c_expr<op::rem> {
  static std::string emit(const CCall& c) {
    if (c.in() == DType::float32) return "__builtin_fmodf(" + c[0] + ", " + c[1] + ")";
    if (c.in() == DType::float64) return "__builtin_fmod(" + c[0] + ", " + c[1] + ")";
    return "xpr_irem_" + std::string(dtype_suffix(c.in())) + "(" + c[0] + ", " + c[1] + ")";
  }
};
/// and, or, xor: C's operators, which promote to int, converted back to the operands' type.
#define XPR_DETAIL_C_BITWISE(NAME, OP)                                          \
  template <>                                                                   \
  struct c_expr<op::NAME> {                                                     \
    static std::string emit(const CCall& c) {                                   \
      return "static_cast<" + c.type() + ">(" + c[0] + " " OP " " + c[1] + ")"; \
    }                                                                           \
  };
XPR_DETAIL_C_BITWISE(and_, "&")
XPR_DETAIL_C_BITWISE(or_, "|")
XPR_DETAIL_C_BITWISE(xor_, "^")
#undef XPR_DETAIL_C_BITWISE
/// max and min of floats carry a NaN, through a helper function (`xpr_max_f64(a, b)`, written by
/// Lowering::helper) rather than the expression itself: its arguments are evaluated before the
/// choice, so each operand is read unconditionally. Written inline, `a != a ? a : b != b ? b :
/// ...` reads `b` only when `a` is a number, GCC 12 if-converts that read into a masked vector
/// load at -O3, and with a read-modify-write of the same cells (a max over the middle axis of a
/// (3, 2, 2) array, `o[k] = max(o[k], x[i])` with the loops unrolled) it miscompiled the loop:
/// rows mixed into each other's results.
template <>
struct c_expr<op::max> {
  static std::string emit(const CCall& c) {
    if (!c.floating()) return "(" + c[0] + " < " + c[1] + " ? " + c[1] + " : " + c[0] + ")";
    return c.helper("max", c[0], c[1]);
  }
};
template <>
struct c_expr<op::min> {
  static std::string emit(const CCall& c) {
    if (!c.floating()) return "(" + c[1] + " < " + c[0] + " ? " + c[1] + " : " + c[0] + ")";
    return c.helper("min", c[0], c[1]);
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
  XPR_MEMBER static std::string emit(const CCall& c);
};
/// convert_element_type: C++'s conversion, except float-to-int saturates and NaN becomes 0
/// (core::convert_element), and anything-to-bool is `!= 0`.
struct c_convert {
  XPR_MEMBER static std::string emit(const CCall& c);
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
const std::vector<ElementwiseRow>& elementwise_table();

const ElementwiseRow* find_elementwise(const Primitive* p);

/// libm's name of each math function the table uses, and whether glibc 2.35's libmvec has a
/// vector version of it (all of these do, for float and double, on x86-64: sin cos tan tanh exp
/// log log1p expm1 pow, and exp2 cbrt erf, added with tan and the others in glibc 2.35).
std::string math_declaration(const std::string& id, bool precise);

// ---------------------------------------------------------------------------------------------
// The lowering
// ---------------------------------------------------------------------------------------------

inline bool is_scatter(const Primitive* p) {
  return p == &rt::scatter_p || p == &rt::scatter_add_p || p == &rt::scatter_mul_p ||
         p == &rt::scatter_min_p || p == &rt::scatter_max_p;
}

/// reduce_sum, reduce_max, reduce_min, reduce_prod.
bool is_reduce(const Primitive* p);

/// The primitives with a loop nest of their own.
bool is_standalone(const Primitive* p);

/// Control flow: sub-jaxprs lowered over the kernel's buffers, run by native `switch`/`for`.
/// Matched by name, so this header needs not include the control-flow primitives' headers.
inline bool is_control(const Primitive* p) {
  const std::string& n = p->name();
  return n == "cond" || n == "while" || n == "scan" || n == "check_max_trips";
}

/// Call-like primitives whose body is a sub-jaxpr applied to the operands as they are (a nested
/// `pjit`, custom-derivative calls, whose derivative rules do not matter when evaluating, and
/// checkpoint): inlined before lowering, so their equations fuse with their neighbours.
const rt::ClosedJaxpr* inlinable_body(const Eqn& e);

/// Appends `body` applied to `args` to `out`; returns its outputs. Equations get fresh result
/// variables, so a body inlined twice defines each variable once.
std::vector<Atom> inline_into(std::vector<Eqn>& out, const Jaxpr& body,
                              std::span<const Array> consts, std::span<const Atom> args,
                              std::size_t depth);

/// `j` with its call-like equations inlined (j itself when it has none).
Jaxpr inline_calls(const Jaxpr& j);

/// `j` without the equations no output needs (`rt::dce_jaxpr`, as XLA removes dead code before
/// emitting): a jitted `jacfwd` or `grad` traces primal outputs and stacks nobody reads. The
/// inputs and constvars stay (the kernel's buffers are numbered by them). Control flow stays even
/// when dead, as the interpreter runs it: a loop spends the LoopIterationLimit's budget and
/// check_max_trips may throw.
Jaxpr eliminate_dead_code(const Jaxpr& j);

/// `text` with every line indented by two more spaces.
std::string indented(const std::string& text);

/// `text` with every occurrence of `from` replaced by `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to);

/// `text` without the lines containing `token`.
std::string without_lines(const std::string& text, const std::string& token);

/// Sizes up to this are written into the source as numbers, larger ones read from `n[]` (except
/// in `lower_standalone`'s source, which takes every size as an argument).
inline constexpr std::int64_t max_literal_dim = 4;
/// The elements a reduction's eight accumulators take before they are added into the running
/// ones and start again (the generated loops' blocked summation, `Lowering::emit_elementwise`).
inline constexpr std::int64_t reduce_block = 1024;
/// The iterations of a loop whose float sum (over that loop, kept in registers) is flushed into
/// a compensated running sum and started again.
inline constexpr std::int64_t row_block = 256;

/// C statements, one block, adding `value` into the running float sum `sum` with Kahan's
/// compensation `comp` (lvalues of C type `t`): what the blocked sums of the generated loops
/// add each block with. -ffp-contract=off and no -ffast-math keep it as written. A compensation
/// that is not finite is dropped (`err - err == 0` is false only for inf and NaN): once the sum is
/// infinite, `(u - sum) - y` is inf - inf = NaN, and carried on it would turn the sum of
/// [inf, 1, 1] into NaN where the plain sum, and JAX, give inf.
inline std::string kahan_add(const std::string& t, const std::string& sum, const std::string& comp,
                             const std::string& value) {
  return "{\n  const " + t + " y = " + value + " - " + comp + ";\n  const " + t + " u = " + sum +
         " + y;\n  const " + t + " err = (u - " + sum + ") - y;\n  " + comp +
         " = err - err == 0 ? err : 0;\n  " + sum + " = u;\n}\n";
}

/// C statements that add `rows` rows of `cols` floats (of C type `t`) into `cols` cells: columns
/// in chunks of 256, each column's rows in blocks of row_block added with `kahan_add`. `read(r,
/// c)` is the element of row r, column c and `cell(c)` the cell of column c (C expressions of
/// those names); the names declared end in `n`. Row by row into the cells, a float32 column sum
/// over 4e6 rows was 3.9% off.
template <class Read, class Cell>
std::string blocked_column_sums(const std::string& t, const std::string& rows,
                                const std::string& cols, const std::string& n, Read read,
                                Cell cell) {
  const std::string c0 = "q" + n, cn = "qn" + n, r0 = "p" + n, rn = "pn" + n, r = "r" + n,
                    c = "c" + n, sa = "qs" + n, ca = "qc" + n, acc = "qa" + n,
                    B = std::to_string(row_block), col = "(" + c0 + " + " + c + ")";
  const std::string each = "for (long long " + c + " = 0; " + c + " < " + cn + "; ++" + c + ") ";
  const std::string at = "[" + c + "]", zero = "0";
  return "for (long long " + c0 + " = 0; " + c0 + " < " + cols + "; " + c0 + " += 256) {\n" +
         "  const long long " + cn + " = " + cols + " - " + c0 + " < 256 ? " + cols + " - " + c0 +
         " : 256;\n  " + t + " " + sa + "[256], " + ca + "[256], " + acc + "[256];\n  " + each +
         sa + at + " = " + ca + at + " = " + zero + ";\n  for (long long " + r0 + " = 0; " + r0 +
         " < " + rows + "; " + r0 + " += " + B + ") {\n    const long long " + rn + " = " + rows +
         " - " + r0 + " < " + B + " ? " + rows + " - " + r0 + " : " + B + ";\n    " + each + acc +
         at + " = " + zero + ";\n    for (long long " + r + " = " + r0 + "; " + r + " < " + r0 +
         " + " + rn + "; ++" + r + ")\n      " + each + acc + at + " = " + acc + at + " + " +
         read(r, col) + ";\n" +
         indented(indented(each + kahan_add(t, sa + at, ca + at, acc + at))) + "  }\n  " + each +
         cell(col) + " = " + cell(col) + " + " + sa + at + ";\n}\n";
}

/// The largest number of equations fused into one emitted function: compile time inside one
/// function grows superlinearly (issue 14 measured 1000 statements at 0.7 s with -O3).
inline constexpr std::size_t max_group_eqns = 200;

/// The most groups a kernel lets GCC inline into its entry function (Lowering::run says why).
inline constexpr std::size_t max_inlined_groups = 64;

class Lowering {
 public:
  Lowering(const Jaxpr& j, const JitOptions& o, bool standalone = false)
      : jaxpr_(j), opts_(o), standalone_(standalone) {}

  XPR_MEMBER Lowered run();

 private:
  /// A sub-jaxpr of a control-flow equation instantiated over the kernel's buffers: its groups
  /// (emitted as functions the control group calls) and its results.
  struct Block {
    std::vector<std::size_t> groups;
    std::vector<Atom> outs;
  };
  enum class Kind { elementwise, standalone, control, host };
  struct Group {
    Kind kind = Kind::standalone;
    core::Shape shape;
    std::vector<const Eqn*> eqns;
    std::vector<Block> blocks;  // control: cond's branches; while's cond and body; scan's body
    std::vector<Var> slices;    // scan: the per-iteration slices of the xs
    std::vector<Atom> reads;    // control: what the group itself reads
    bool elementwise() const { return kind == Kind::elementwise; }
  };
  struct VarInfo {
    std::size_t id = 0;
    int group = -1;      // defining group; -1 for arguments and consts
    int buffer = -1;     // kernel buffer index, -1 when local to its group
    bool spill = false;  // read by its own group where its loop has ended (needs a buffer)
  };

  const Jaxpr& jaxpr_;
  const JitOptions& opts_;
  bool standalone_ = false;  // see lower_standalone
  Lowered out_;
  std::unordered_map<const void*, VarInfo> vars_;
  std::vector<Group> groups_;
  std::vector<std::size_t> top_;           // the top-level jaxpr's groups, in order
  std::deque<std::vector<Eqn>> sub_eqns_;  // instantiated sub-jaxprs (stable addresses)
  std::vector<std::pair<long long, std::size_t>> dim_symbols_;  // value -> index into n
  std::set<std::string> math_used_;
  std::set<std::string> helpers_used_;
  std::size_t next_buffer_ = 0;
  std::size_t next_var_ = 0;

  [[noreturn]] static void unsupported(const std::string& what) {
    throw core::not_implemented_error("jit: code generation for " + what + " not implemented");
  }

  XPR_MEMBER VarInfo& info(const Var& v);

  XPR_MEMBER void def(const Var& v, int group);

  void number_vars() {
    for (const Var& v : jaxpr_.invars) def(v, -1);
    for (const Var& v : jaxpr_.constvars) def(v, -1);
  }

  XPR_MEMBER void collect_dims();

  /// A dimension size as C++: the first argument dimension of that size (so the source, and the
  /// compiled kernel, are the same for inputs that differ only in sizes), else the number.
  XPR_MEMBER std::string dim(std::int64_t d) const;
  XPR_MEMBER std::string count(const core::Shape& s) const;
  /// `const long long O, N, I`: `shape` as (outer, n, inner) around `axis`, the walk of the
  /// interpreter's argmax and cumulative reductions.
  XPR_MEMBER std::string outer_n_inner(const core::Shape& shape, std::size_t axis) const;
  /// The row-major stride of dimension `i` of `s`.
  XPR_MEMBER std::string stride(const core::Shape& s, std::size_t i) const;

  XPR_MEMBER static bool all_vars_or_scalar_literals(const Eqn& e);

  /// Why the generated code cannot compute `e` itself (a primitive defined in user code, an
  /// array literal operand, ...), or "" when it can. Such an equation becomes a host call: the
  /// kernel hands its operand buffers to the host, which runs the primitive's impl (XLA's custom
  /// call), so the rest of the jaxpr is still compiled.
  XPR_MEMBER std::string not_lowered(const Eqn& e);
  std::unordered_map<const Eqn*, std::size_t> host_index_;  // equation -> its host call
  std::vector<const Eqn*> host_calls_;
  std::string host_reason_;  // why the first one is not lowered

  /// A host call: the equation's operand buffers (null for a literal, which the plan holds) and
  /// result buffers, handed to `XprHost::call`.
  XPR_MEMBER std::string emit_host_call(const Eqn& e);

  /// A reduction over its operand's last axis only: fused into an elementwise group (the group's
  /// loop over that axis accumulates it).
  XPR_MEMBER static bool fusable_reduce(const Eqn& e);

  /// A reduction keeping its operand's last axis (the transpose of a broadcast along a leading
  /// or middle axis): an elementwise group computing its operand combines each element into the
  /// result as it is computed, after filling the result with the identity before its loops.
  /// Like a fused scatter's, its result is ready when the group ends.
  XPR_MEMBER static bool sink_reduce(const Eqn& e);

  /// Primitives whose every result element is one element of their operands at an index computed
  /// from the loop indices (reshape, slice, transpose, iota, concatenate, gather): an elementwise
  /// group reads them in place (no loop, no buffer of their own) when their operands come from
  /// earlier groups, or are such reads of the same group (composed: x[0] is a slice and a squeeze,
  /// a stack expand_dims and a concatenate).
  XPR_MEMBER static bool fusable_read(const Eqn& e);

  /// Whether `fusable_read` equation `e` can read its operands inside group `g`.
  XPR_MEMBER bool composable(const Eqn& e, std::size_t g);

  /// The expression (after statements appended to `stmts`) reading the element of `fusable_read`
  /// equation `e`'s result at index `ix` (one C++ expression per axis), in group `g`; `flat` is
  /// that element's row-major position when known ("" to compute it). Pointers go to `pre`.
  XPR_MEMBER std::string indexed_read(const Eqn& e, const std::vector<std::string>& ix,
                                      std::string flat, std::size_t g, std::string& pre,
                                      std::string& stmts);
  std::unordered_map<std::size_t, const Eqn*> reader_of_;  // var id -> its fusable_read equation
  std::size_t next_read_ = 0;                              // names of composed reads' locals

  /// Operand `k` of `e` at index `at` (at position `pos` when known): read from its buffer, or
  /// composed with the read of group `g` that defines it.
  XPR_MEMBER std::string read_operand(const Eqn& e, std::size_t k,
                                      const std::vector<std::string>& at, const std::string& pos,
                                      std::size_t g, std::string& pre, std::string& stmts);
  /// The row-major position of index `at` in `shape`.
  XPR_MEMBER std::string linear(const core::Shape& shape, const std::vector<std::string>& at) const;

  /// A scatter at the top level whose update windows are the updates' trailing axes: an
  /// elementwise group computing the updates combines each into the result as it is computed
  /// (row-major order is the interpreter's order), after copying the operand in before its
  /// loops. The result is ready when the group ends, so nothing else in the group reads it.
  XPR_MEMBER bool fusable_scatter(const Eqn& e, std::size_t depth) const;
  std::unordered_set<std::size_t> sink_of_;  // var ids of fused scatters' results
  /// A fused scatter's statements in parts, over the updates' loop indices i0, i1, ...
  struct ScatterCode {
    std::string row;     // reads the row's indices (over the scatter axes) and checks them
    std::string base;    // the result's offset of the row's window ("" when 0)
    std::string window;  // the offset within the window, over the window axes ("" when 0)
    std::string oob;     // the flag set for a dropped row (mode=fill_or_drop), or ""
    std::string out;     // the result's buffer
    std::string uid;     // names this scatter's variables apart from other reads'
  };
  XPR_MEMBER ScatterCode scatter_code(const Eqn& e, std::size_t g, std::string& pre);
  /// Scatter `e`'s combination of the cell `cell` with `update` (the update itself for scatter).
  XPR_MEMBER std::string scatter_combine(const Eqn& e, const std::string& cell,
                                         const std::string& update);
  /// The statements combining scatter `e`'s update at index (i0, i1, ...) into its result.
  XPR_MEMBER std::string scatter_into(const Eqn& e, const std::string& update, std::size_t g,
                                      std::string& pre, std::string& stmts);
  /// The loop nest over `S[:depth]` combining a split group's scatter `e` (updates of rank
  /// `depth`, windows (if any) on the last axes, each extent at most max_literal_dim) as
  /// scatter_into would, but with the window of a run of rows with the same indices kept in
  /// registers: a sorted segment sum (LJ forces' pairs (i, j) with i < j: the rows of particle i
  /// follow each other) then adds in registers instead of through memory. The same cells combine in
  /// the same order, so the results are the same bits. "" when `e` does not qualify.
  XPR_MEMBER std::string scatter_runs(const Eqn& e, const std::string& update, std::size_t g,
                                      const core::Shape& S, std::size_t depth, std::string& pre);

  /// Whether `e` may join the elementwise group `g` (see `emit_elementwise`), and the group's
  /// iteration shape if it does.
  XPR_MEMBER std::optional<core::Shape> joins(const Eqn& e, std::size_t g);

  /// Groups the equations `eqns` of one scope (the top-level jaxpr or an instantiated
  /// sub-jaxpr), appending the new groups' indices to `scope`.
  XPR_MEMBER void form_groups(const std::vector<Eqn>& eqns, std::vector<std::size_t>& scope,
                              std::size_t depth);

  /// `body` applied to `args` as a new scope of groups.
  XPR_MEMBER Block instantiate(const rt::ClosedJaxpr& body, std::span<const Atom> args,
                               std::size_t depth);

  XPR_MEMBER static std::vector<Atom> atoms(std::span<const Atom> a, std::size_t from,
                                            std::size_t n);
  XPR_MEMBER static void check_types(std::span<const Atom> outs, std::span<const Var> to);

  /// The sub-jaxprs of a control-flow group, over the equation's operands: cond's branches read
  /// the operands where they are; while's and scan's bodies read the carry from the equation's
  /// result buffers, which the loop updates in place.
  XPR_MEMBER void instantiate_control(std::size_t g, std::size_t depth);

  /// Whether anything in `blk` (nested blocks included) reads `v`, except operand 0 of `except`.
  XPR_MEMBER bool block_reads(const Block& blk, const Var& v, const Eqn* except) const;

  /// A loop body's scatter whose operand is carry k and whose result is the new carry k, with
  /// nothing else reading carry k, updates the carry's buffer in place (XLA's in-place
  /// dynamic-update/scatter in loops): no copy of the operand, no copy back into the carry.
  XPR_MEMBER void scatter_in_place(const Block& body, const std::vector<Var>& carry);
  std::vector<std::pair<Var, Var>> in_place_;  // (scatter result, carry it updates in place)

  XPR_MEMBER void assign_buffers();
  bool uses_control_ = false;
  XPR_MEMBER std::string ptr(const Var& v, bool mut = false);
  std::string name(const Var& v) { return "v" + std::to_string(info(v).id); }

  // ---- groups ----

  XPR_MEMBER std::string emit_group(std::size_t g);
  XPR_MEMBER std::string emit_group_functions(std::size_t g);

  // ---- control flow ----

  /// The kernel's loop-control block: [0] whether a LoopIterationLimit bounds the loops, [1] the
  /// iterations left, [2] a status the host turns into the interpreter's exception, [3] unused.
  std::string control_ptr() const {
    return "static_cast<long long*>(b[" + std::to_string(out_.control) + "])";
  }

  /// A rank-0 atom's value.
  std::string scalar(const Atom& a) {
    if (const Literal* l = std::get_if<Literal>(&a)) return c_literal(l->value);
    return ptr(std::get<Var>(a)) + "[0]";
  }

  /// Copies `src` (a literal scalar or a buffer) into the buffer `dst` at element offset
  /// `dst_off`, reading `src` from element `src_off`.
  XPR_MEMBER std::string copy(const std::string& dst, const ShapedArray& da, const Atom& src,
                              const std::string& ind, const std::string& dst_off = "0",
                              const std::string& src_off = "0");
  std::string buf(const Var& v) { return "b[" + std::to_string(info(v).buffer) + "]"; }

  XPR_MEMBER std::string call(const Block& blk, const std::string& ind);

  /// Counts one loop iteration against the LoopIterationLimit's budget; `code` says which
  /// primitive ran out (the host raises its exception).
  XPR_MEMBER static std::string count_iteration(int code, const std::string& ind);

  /// The new carry `outs` written into the carry buffers `carry`. A result that is another carry
  /// (a permutation of the carries) is staged first, so no carry is read after it is overwritten.
  XPR_MEMBER std::string update_carry(const std::vector<Atom>& outs, const std::vector<Var>& carry,
                                      const std::string& ind);

  XPR_MEMBER std::string emit_control(const Group& grp);
  std::vector<const Eqn*> checks_;
  std::deque<Var> staged_;

  // ---- elementwise groups ----

  /// An elementwise group: one loop nest over the group's iteration shape S, each equation at
  /// the depth of its result's rank (every result shape is a prefix of S). An equation of rank d
  /// is computed inside the loops over S's first d axes; a reduction over the last axis
  /// accumulates in the loop over that axis and is ready when the loop ends; a broadcast along
  /// trailing axes reads the outer loops' values. Between two loops over the same axis a value of
  /// the first is kept in a buffer (`VarInfo::spill`), which a `dry_run` finds before buffers are
  /// assigned.
  XPR_MEMBER std::string emit_elementwise(std::size_t g, bool dry_run = false);

  /// The header of a flat loop of index `i` over [from, to) (`N` names its end in the body).
  static std::string flat_loop(const std::string& i, const std::string& from,
                               const std::string& to) {
    return "for (long long " + i + " = " + from + ", N = " + to + "; " + i + " < N; ++" + i + ")";
  }

  /// Set by `emit_elementwise` when the group it emitted is one flat loop whose iterations write
  /// disjoint elements and nothing else: the loop's index and length, which `emit_group` uses to
  /// make it a loop over [lo, hi) that the host may split among threads (workers.hpp), and the
  /// length from which it is worth splitting. `parts_index_` is empty otherwise.
  std::string parts_index_, parts_count_, parts_min_;

  /// The identity and the combining expression of a reduction primitive on `dt`.
  XPR_MEMBER static std::string reduce_identity(const Primitive* p, DType dt);
  /// A CCall that records the libm functions and helpers it uses in this lowering's preamble.
  CCall c_call() {
    CCall c;
    c.math_used = &math_used_;
    c.helpers_used = &helpers_used_;
    if (fast_trig_) c.fast_trig = &fast_trig_used_;
    c.scalar_trig = scalar_trig_;
    return c;
  }
  /// Set by a read that must stay conditional (a concatenation's operands): `emit_group` then
  /// compiles the group's functions without loop if-conversion.
  bool conditional_reads_ = false, no_ifcvt_used_ = false;
  /// While true, f64 `sin` and `cos` are emitted as the preamble's `xpr_fsin_f64(x, xpr_big)`
  /// (see `emit_group`); `fast_trig_used_` records that some were.
  bool fast_trig_ = false, fast_trig_used_ = false;
  /// While true, f64 `sin` and `cos` call libm's scalar functions (a fast loop's fallback).
  bool scalar_trig_ = false;
  XPR_MEMBER std::string reduce_combine(const Primitive* p, DType dt, const std::string& a,
                                        const std::string& b);

  // ---- standalone primitives ----

  /// Nested loops over `shape` (indices i0, i1, ...) around `body`, which may use `i` (the flat
  /// row-major index).
  XPR_MEMBER std::string nest(const core::Shape& shape, const std::string& body,
                              const std::string& ivar = "i");

  XPR_MEMBER std::string in_ptr(const Atom& a, std::string& pre, const std::string& name_);

  XPR_MEMBER std::string emit_standalone(const Eqn& e);

  // ---- indexing ----

  /// A rank-0 integer operand as a `long long` expression.
  std::string index_scalar(const Atom& a) { return "static_cast<long long>(" + scalar(a) + ")"; }

  /// Loops over the dimensions of `shape` in the order `order` (indices `<ivar><d>`) around
  /// `body`.
  XPR_MEMBER std::string loops(const core::Shape& shape, const std::vector<std::size_t>& order,
                               const std::string& body, const std::string& ivar);

  /// dynamic_slice and dynamic_update_slice: each start clamped into [0, dim - window size], as
  /// the interpreter's `clamp_start` does (and lax.dynamic_slice).
  XPR_MEMBER std::string emit_dynamic_slice(const Eqn& e, bool update);

  /// gather's fill value for out-of-bounds windows under fill_or_drop, as the interpreter's
  /// `fill_value_as` computes it.
  XPR_MEMBER static std::string fill_literal(const rt::Params& params, DType t);

  /// The start of the window along operand dimension `d` read from index element `elem`: clamped
  /// into [0, dim - size]; under fill_or_drop `oob` records whether it was outside.
  /// `check` (a token from `range_check`, or "") goes before the statements that clamp.
  XPR_MEMBER std::string window_start(const std::string& sk, const std::string& elem,
                                      std::int64_t xdim, std::int64_t size, bool drop,
                                      const std::string& oob = "oob",
                                      const std::string& check = "");

  /// For an index read in elementwise group `g` whose values are those of an earlier group's
  /// buffer, an argument or a const (`index`, or what it reshapes): a flag computed once before
  /// the group's loops, true when any of the buffer's elements at positions k, k + K, k + 2K, ...
  /// (the index vectors' element k) lies outside [0, hi]. Returns the token `window_start` puts
  /// before its clamping statements, which the group keeps only in a copy of its loops run when
  /// the flag is set (`emit_elementwise`); "" when the index is computed inside the group.
  XPR_MEMBER std::string range_check(const Atom& index, std::size_t k, std::size_t K,
                                     const std::string& hi, std::size_t g, std::string& pre);
  std::map<std::string, std::string> range_checks_;  // the group's checks: key -> flag
  std::string range_check_code_;                     // the statements computing the flags

  XPR_MEMBER std::string emit_gather(const Eqn& e);

  XPR_MEMBER std::string emit_scatter(const Eqn& e);

  XPR_MEMBER std::string emit_reduce(const Eqn& e);

  XPR_MEMBER std::string emit_dot(const Eqn& e);

  // ---- file ----

  XPR_MEMBER std::string preamble() const;

  XPR_MEMBER static std::string helper(const std::string& h);

  XPR_MEMBER std::string entry() const;

  // The top-level groups in order; after a control-flow group, a set status word in the loop
  // control block (a runaway loop) stops the kernel so the host can throw.
  XPR_MEMBER std::string calls() const;
};

}  // namespace detail

/// Lowers `jaxpr` (its invars and constvars typed as they are) to C++ source. Throws
/// `not_implemented_error` naming the first primitive it cannot lower (the caller then
/// interprets); see docs/jit.md for the list of primitives covered.
inline Lowered lower(const rt::Jaxpr& jaxpr, const JitOptions& options = {}) {
  const rt::Jaxpr flat = detail::eliminate_dead_code(detail::inline_calls(jaxpr));
  return detail::Lowering(flat, options).run();
}

/// `lower` for ahead-of-time export (xpr/aot.hpp): the same source, except that the entry point
/// is `static void xpr_kernel(...)`, not an exported `extern "C"` symbol (several exported
/// functions link into one program) and there is no `xpr_abi_version`; the caller supplies the
/// `XprHost` (its GEMM) and the exported wrapper.
inline Lowered lower_standalone(const rt::Jaxpr& jaxpr, const JitOptions& options = {}) {
  const rt::Jaxpr flat = detail::eliminate_dead_code(detail::inline_calls(jaxpr));
  return detail::Lowering(flat, options, true).run();
}

}  // namespace xpr::codegen

#if XPR_DEFINITIONS

namespace xpr::codegen {

XPR_FUNC void* LoopControl::begin() {
  const std::optional<std::int64_t> b = rt::LoopIterationLimit::budget();
  block_[0] = b ? 1 : 0;
  block_[1] = b ? *b : 0;
  start_ = block_[1];
  return block_;
}

XPR_FUNC void LoopControl::end(const Lowered& plan) const {
  if (plan.control < 0) return;
  if (block_[0]) rt::LoopIterationLimit::spend(start_ - block_[1]);
  const long long status = block_[2];
  if (status == 1) rt::LoopIterationLimit::count("while");  // the budget is 0: throws
  if (status == 2) rt::LoopIterationLimit::count("scan");
  if (status >= 3 && static_cast<std::size_t>(status - 3) < plan.checks.size()) {
    const auto& [prim, params] = plan.checks[static_cast<std::size_t>(status - 3)];
    const rt::Array unfinished[] = {rt::Array(true)};
    (void)prim->impl(unfinished, params);  // throws check_max_trips' value_error
  }
  if (status != 0)
    throw core::value_error("jit: the kernel stopped with status " + std::to_string(status));
}

}  // namespace xpr::codegen

namespace xpr::codegen::detail {

XPR_FUNC const char* c_type(DType t) {
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

XPR_FUNC const char* dtype_suffix(DType t) {
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

XPR_FUNC std::string c_number(double v, DType t) {
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

XPR_FUNC std::string c_literal(const Array& a) {
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

XPR_FUNC std::string CCall::math(const std::string& fn, const std::string& x) const {
  if (fast_trig && in() == DType::float64 && (fn == "sin" || fn == "cos")) {
    *fast_trig = true;
    helpers_used->insert("trig_f64");
    math_used->insert("sin_f64");  // what trig_f64 calls without hardware fma
    math_used->insert("cos_f64");
    return "xpr_f" + fn + "_f64(" + x + ", xpr_big)";
  }
  std::string id = fn + "_" + dtype_suffix(in());
  if (scalar_trig && in() == DType::float64 && (fn == "sin" || fn == "cos")) id += "_scalar";
  math_used->insert(id);
  return "xpr_" + id + "(" + x + ")";
}

XPR_FUNC std::string CCall::math2(const std::string& fn, const std::string& x,
                                  const std::string& y) const {
  std::string id = fn + "_" + dtype_suffix(in());
  math_used->insert(id);
  return "xpr_" + id + "(" + x + ", " + y + ")";
}

XPR_FUNC std::string CCall::helper(const std::string& fn, const std::string& x,
                                   const std::string& y) const {
  std::string id = fn + "_" + dtype_suffix(in());
  helpers_used->insert(id);
  return "xpr_" + id + "(" + x + ", " + y + ")";
}

XPR_FUNC std::string c_select_n::emit(const CCall& c) {
  // Through the preamble's bitwise pick: its operands, often reads of the loop's inputs, are
  // evaluated before the choice, where a conditional expression would read the case not taken
  // only conditionally, which GCC 12 at -O3 turns into masked vector loads that it miscompiled
  // in short unrolled loops (see Lowering::helper's pick).
  const std::size_t n = c.args.size() - 1;
  const std::string pick = "xpr_pick_" + std::string(dtype_suffix(c.out));
  c.helpers_used->insert(pick.substr(4));
  if (c.arg_dtypes[0] == DType::bool_) return pick + "(" + c[0] + ", " + c[2] + ", " + c[1] + ")";
  std::string e = c[n];
  for (std::size_t k = n - 1; k-- > 0;)
    e = pick + "(" + c[0] + " <= " + std::to_string(k) + ", " + c[k + 1] + ", " + e + ")";
  return e;
}

XPR_FUNC std::string c_convert::emit(const CCall& c) {
  DType from = c.in(), to = c.out;
  if (to == DType::bool_) return "(" + c[0] + " != 0)";
  if (core::is_floating(from) && core::is_integer(to))
    return "xpr_cvt_" + std::string(dtype_suffix(from)) + "_" + dtype_suffix(to) + "(" + c[0] + ")";
  return "static_cast<" + std::string(c_type(to)) + ">(" + c[0] + ")";
}

XPR_FUNC const std::vector<ElementwiseRow>& elementwise_table() {
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
      row<op::square>(rt::square_p),
      row<op::exp2>(rt::exp2_p, true),
      row<op::cbrt>(rt::cbrt_p, true),
      row<op::erf>(rt::erf_p, true),
      row<op::floor>(rt::floor_p),
      row<op::ceil>(rt::ceil_p),
      row<op::round>(rt::round_p),
      row<op::is_finite>(rt::is_finite_p),
      row<op::not_>(rt::not_p),
      row<op::copy>(rt::copy_p),
      row<op::stop_gradient>(rt::stop_gradient_p),
      row<op::add>(rt::add_p),
      row<op::sub>(rt::sub_p),
      row<op::mul>(rt::mul_p),
      row<op::div>(rt::div_p),
      row<op::max>(rt::max_p),
      row<op::min>(rt::min_p),
      row<op::pow>(rt::pow_p, true),
      row<op::rem>(rt::rem_p),
      row<op::and_>(rt::and_p),
      row<op::or_>(rt::or_p),
      row<op::xor_>(rt::xor_p),
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

XPR_FUNC const ElementwiseRow* find_elementwise(const Primitive* p) {
  for (const ElementwiseRow& r : elementwise_table())
    if (r.primitive == p) return &r;
  return nullptr;
}

XPR_FUNC std::string math_declaration(const std::string& id, bool precise) {
  // id: "sin_f64" -> double xpr_sin_f64(double) asm("sin"); "sin_f64_scalar": the same without
  // a SIMD clone (libmvec is then not needed by a kernel that calls no other vector function)
  const std::string_view scalar_suffix = "_scalar";
  if (id.size() > scalar_suffix.size() && id.ends_with(scalar_suffix)) {
    std::string d = math_declaration(id.substr(0, id.size() - scalar_suffix.size()), true);
    return d.replace(d.find('('), 1, "_scalar(");
  }
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

XPR_FUNC bool is_reduce(const Primitive* p) {
  return p == &rt::reduce_sum_p || p == &rt::reduce_max_p || p == &rt::reduce_min_p ||
         p == &rt::reduce_prod_p;
}

XPR_FUNC bool is_standalone(const Primitive* p) {
  return is_reduce(p) || p == &rt::transpose_p || p == &rt::reshape_p || p == &rt::squeeze_p ||
         p == &rt::expand_dims_p || p == &rt::slice_p || p == &rt::rev_p ||
         p == &rt::concatenate_p || p == &rt::iota_p || p == &rt::dot_general_p ||
         p == &rt::pad_p || p == &rt::dynamic_slice_p || p == &rt::dynamic_update_slice_p ||
         p == &rt::gather_p || is_scatter(p) || p == &rt::argmax_p || p == &rt::argmin_p ||
         dynamic_cast<const rt::CumulativeReduction*>(p) != nullptr;
}

XPR_FUNC const rt::ClosedJaxpr* inlinable_body(const Eqn& e) {
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

XPR_FUNC std::vector<Atom> inline_into(std::vector<Eqn>& out, const Jaxpr& body,
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

XPR_FUNC Jaxpr inline_calls(const Jaxpr& j) {
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

XPR_FUNC Jaxpr eliminate_dead_code(const Jaxpr& j) {
  // Control-flow results are made outputs for the pass (so it keeps them), then dropped again.
  Jaxpr rooted = j;
  for (const Eqn& e : j.eqns)
    if (e.primitive && is_control(e.primitive))
      rooted.outvars.insert(rooted.outvars.end(), e.outputs.begin(), e.outputs.end());
  Jaxpr live =
      rt::dce_jaxpr(rooted, std::vector<bool>(rooted.outvars.size(), true), /*instantiate=*/true)
          .first;
  live.outvars.erase(live.outvars.begin() + static_cast<std::ptrdiff_t>(j.outvars.size()),
                     live.outvars.end());
  return live;
}

XPR_FUNC Lowered Lowering::run() {
  number_vars();
  collect_dims();
  form_groups(jaxpr_.eqns, top_, 0);
  assign_buffers();
  std::string decls, body;
  // Each group is a function of its own, but GCC inlines a static function called once into its
  // caller whatever its size, so a program of hundreds of groups became one function, whose
  // optimization grows faster than the program: `jit(grad(f))` of an integrator unrolled 40
  // steps in C++ (1500 groups, 710 KB of source) took 31 s of g++, 7.8 s with its groups kept
  // apart (20 steps: 7.3 s and 4.6 s), and examiner L's 150 steps about 5 minutes. Past
  // `max_inlined_groups` they stay separate: a call each, a few nanoseconds beside their loops;
  // smaller programs keep the inlining (a rank-0 call, a loop body of a few groups).
  const char* attribute = groups_.size() > max_inlined_groups ? "__attribute__((noinline)) " : "";
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    decls += attribute + std::string("static void g") + std::to_string(g) +
             "(void* const* b, const long long* n, const XprHost* h);\n";
    body += emit_group(g);
  }
  // Nothing but host calls: a kernel would only call back; the interpreter runs such a jaxpr.
  if (!host_calls_.empty() && std::all_of(groups_.begin(), groups_.end(),
                                          [](const Group& g) { return g.kind == Kind::host; }))
    unsupported(host_reason_);
  out_.source = preamble() + decls + "\n" + body + entry();
  for (const Eqn* e : checks_) out_.checks.emplace_back(e->primitive, e->params);
  for (const Eqn* e : host_calls_) out_.host_calls.push_back(*e);
  return std::move(out_);
}

XPR_FUNC Lowering::VarInfo& Lowering::info(const Var& v) {
  auto it = vars_.find(v.id());
  if (it == vars_.end()) unsupported("a jaxpr using an undefined variable");
  return it->second;
}

XPR_FUNC void Lowering::def(const Var& v, int group) {
  // Each aval's byte count must fit (Shape checks element counts; this checks bytes).
  (void)core::checked_nbytes(v.aval().size(), core::itemsize(v.aval().dtype));
  if (!vars_.emplace(v.id(), VarInfo{next_var_++, group, -1}).second)
    unsupported("a jaxpr defining a variable twice");
}

XPR_FUNC void Lowering::collect_dims() {
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

XPR_FUNC std::string Lowering::dim(std::int64_t d) const {
  // Small sizes are numbers, so GCC unrolls a loop over x, y, z rather than checking at run time
  // whether it is long enough to vectorize; a kernel is then shared by the inputs that differ
  // only in their larger sizes.
  // (Not in an ahead-of-time export, whose callers pass every size.)
  if (!standalone_ && d >= 0 && d <= max_literal_dim) return std::to_string(d) + "LL";
  for (const auto& [v, k] : dim_symbols_)
    if (v == d) return "n[" + std::to_string(k) + "]";
  return std::to_string(d) + "LL";
}

XPR_FUNC std::string Lowering::outer_n_inner(const core::Shape& shape, std::size_t axis) const {
  const std::vector<std::int64_t>& d = shape.dims();
  const auto mid = d.begin() + static_cast<std::ptrdiff_t>(axis);
  return "  const long long O = " + count(core::Shape(std::vector(d.begin(), mid))) +
         ";\n  const long long N = " + dim(shape[axis]) +
         ";\n  const long long I = " + count(core::Shape(std::vector(mid + 1, d.end()))) + ";\n";
}

XPR_FUNC std::string Lowering::count(const core::Shape& s) const {
  if (s.rank() == 0) return "1LL";
  std::string r;
  for (std::size_t i = 0; i < s.rank(); ++i) r += (i ? " * " : "") + dim(s[i]);
  return r;
}

XPR_FUNC std::string Lowering::stride(const core::Shape& s, std::size_t i) const {
  std::string r;
  for (std::size_t k = i + 1; k < s.rank(); ++k) r += (r.empty() ? "" : " * ") + dim(s[k]);
  return r.empty() ? "1LL" : r;
}

XPR_FUNC bool Lowering::all_vars_or_scalar_literals(const Eqn& e) {
  for (const Atom& a : e.inputs)
    if (const Literal* l = std::get_if<Literal>(&a); l && l->value.ndim() != 0) return false;
  return true;
}

XPR_FUNC std::string Lowering::not_lowered(const Eqn& e) {
  const std::string name = "'" + std::string(e.primitive->name()) + "'";
  if (!all_vars_or_scalar_literals(e)) return "array literals (an operand of " + name + ")";
  if (is_control(e.primitive)) return {};
  if (e.outputs.size() != 1) return name + " with several results";
  const bool other = e.primitive == &rt::broadcast_in_dim_p || fusable_reduce(e) ||
                     fusable_read(e) || sink_reduce(e) || is_standalone(e.primitive);
  const ElementwiseRow* r = other ? nullptr : find_elementwise(e.primitive);
  if (!r && !other) return name;
  if (r && r->floating_only_math && !core::is_floating(aval_of(e.inputs[0]).dtype))
    return name + " on integers";
  if (e.primitive == &rt::dot_general_p && core::is_bool(e.outputs[0].aval().dtype))
    return "dot_general of booleans";
  if (e.primitive == &rt::reshape_p)
    if (const rt::ParamValue* d = e.params.find("dimensions");
        d && !std::holds_alternative<rt::None>(*d))
      return "reshape with dimensions";
  if (r && e.primitive == &rt::integer_pow_p) {
    CCall c;
    c.args = {"x"};
    c.arg_dtypes = {aval_of(e.inputs[0]).dtype};
    c.out = e.outputs[0].aval().dtype;
    c.params = &e.params;
    std::set<std::string> unused;
    c.math_used = c.helpers_used = &unused;
    if (c_expr<op::integer_pow>::emit(c).empty()) return "integer_pow of a huge exponent";
  }
  return {};
}

XPR_FUNC void Lowering::form_groups(const std::vector<Eqn>& eqns, std::vector<std::size_t>& scope,
                                    std::size_t depth) {
  if (depth > rt::max_jaxpr_nesting)
    unsupported("control flow nested deeper than " + std::to_string(rt::max_jaxpr_nesting));
  int last = -1;                                                   // this scope's latest group
  std::unordered_map<const void*, std::vector<const Eqn*>> users;  // var id -> its readers
  for (const Eqn& e : eqns)
    for (const Atom& a : e.inputs)
      if (const Var* v = std::get_if<Var>(&a)) users[v->id()].push_back(&e);
  auto composed_only = [&](const Eqn& e) {
    auto it = users.find(e.outputs[0].id());
    if (it == users.end()) return false;
    for (const Eqn* u : it->second)
      if (!fusable_read(*u) && u->primitive != &rt::broadcast_in_dim_p) return false;
    return true;
  };
  auto compatible = [](const core::Shape& a, const core::Shape& b) {
    const std::size_t n = std::min(a.rank(), b.rank());
    for (std::size_t k = 0; k < n; ++k)
      if (a[k] != b[k]) return false;
    return true;
  };
  auto take = [&](const Eqn& e) {
    if (!e.primitive) unsupported("an equation without a primitive");
    for (const Atom& a : e.inputs)
      if (const Var* v = std::get_if<Var>(&a)) (void)info(*v);  // defined before its use
    if (const std::string why = not_lowered(e); !why.empty()) {
      // Run by the host (XLA's custom call): exported code has no host to call.
      if (standalone_) unsupported(why);
      host_index_.emplace(&e, host_calls_.size());
      host_calls_.push_back(&e);
      if (host_reason_.empty()) host_reason_ = why;
      groups_.push_back(Group{Kind::host, {}, {&e}, {}, {}, {}});
      scope.push_back(groups_.size() - 1);
      last = static_cast<int>(groups_.size() - 1);
      for (const Var& v : e.outputs) def(v, last);
      return;
    }
    if (is_control(e.primitive)) {
      groups_.push_back(Group{Kind::control, {}, {&e}, {}, {}, {}});
      const auto g = static_cast<int>(groups_.size() - 1);
      scope.push_back(groups_.size() - 1);
      last = g;
      for (const Var& v : e.outputs) def(v, g);
      instantiate_control(static_cast<std::size_t>(g), depth);
      return;
    }
    const bool bcast = e.primitive == &rt::broadcast_in_dim_p;
    const bool red = fusable_reduce(e);
    const bool rd = fusable_read(e);
    const bool sink = fusable_scatter(e, depth) || sink_reduce(e);
    const ElementwiseRow* r = bcast || red || rd || sink ? nullptr : find_elementwise(e.primitive);
    const core::Shape& shape = e.outputs[0].aval().shape;
    if (r || bcast || red || rd || sink) {
      std::optional<core::Shape> grown;
      if (last >= 0 && groups_[static_cast<std::size_t>(last)].elementwise() &&
          groups_[static_cast<std::size_t>(last)].eqns.size() < max_group_eqns)
        grown = joins(e, static_cast<std::size_t>(last));
      // A read of another shape than the loops' joins only to be composed into other reads.
      if (grown && rd && !compatible(shape, *grown) && !composed_only(e)) grown.reset();
      // A scatter joins the group computing its updates; alone, it is a loop nest of its own.
      if (sink && !grown) {
        groups_.push_back(Group{Kind::standalone, shape, {}, {}, {}, {}});
        scope.push_back(groups_.size() - 1);
        last = static_cast<int>(groups_.size() - 1);
        groups_[static_cast<std::size_t>(last)].eqns.push_back(&e);
        def(e.outputs[0], last);
        return;
      }
      if (grown) {
        groups_[static_cast<std::size_t>(last)].shape = std::move(*grown);
      } else {
        groups_.push_back(Group{Kind::elementwise,
                                red  ? aval_of(e.inputs[0]).shape
                                : rd ? core::Shape{}
                                     : shape,
                                {},
                                {},
                                {},
                                {}});
        scope.push_back(groups_.size() - 1);
        last = static_cast<int>(groups_.size() - 1);
      }
    } else {
      groups_.push_back(Group{Kind::standalone, shape, {}, {}, {}, {}});
      scope.push_back(groups_.size() - 1);
      last = static_cast<int>(groups_.size() - 1);
    }
    groups_[static_cast<std::size_t>(last)].eqns.push_back(&e);
    def(e.outputs[0], last);
    if (rd) reader_of_.emplace(info(e.outputs[0]).id, &e);
    if (sink) sink_of_.insert(info(e.outputs[0]).id);
  };
  // The jaxpr's order, except that among the next `lookahead` equations whose operands are ready,
  // one that joins the latest elementwise group is taken first (list scheduling for fusion: jvp
  // and transposition interleave values of several shapes). Control flow keeps its order.
  constexpr std::size_t lookahead = 64;
  // At the top level, what depends on the constants only (index arrays a closure holds, masks)
  // comes first, in one group where it can: jvp and transposition interleave it with the rest.
  std::vector<const Eqn*> seq;
  for (const Eqn& e : eqns) seq.push_back(&e);
  if (depth == 0) {
    // (Not what depends on literals only, a fill: that stays where its readers are.)
    std::unordered_set<const void*> fixed_vars;
    for (const Var& v : jaxpr_.constvars) fixed_vars.insert(v.id());
    std::vector<const Eqn*> fixed, rest;
    for (const Eqn& e : eqns) {
      bool reads_fixed = false, reads_other = false;
      for (const Atom& a : e.inputs)
        if (const Var* v = std::get_if<Var>(&a)) {
          if (fixed_vars.count(v->id()))
            reads_fixed = true;
          else
            reads_other = true;
        }
      // Reads by index stay where their readers are, to be composed there.
      const bool moves = e.primitive && !is_control(e.primitive) && !fusable_read(e) &&
                         reads_fixed && !reads_other;
      if (moves)
        for (const Var& v : e.outputs) fixed_vars.insert(v.id());
      (moves ? fixed : rest).push_back(&e);
    }
    seq = std::move(fixed);
    seq.insert(seq.end(), rest.begin(), rest.end());
  }
  std::unordered_map<const void*, std::size_t> producer;  // var id -> its equation
  for (std::size_t i = 0; i < seq.size(); ++i)
    for (const Var& v : seq[i]->outputs) producer.emplace(v.id(), i);
  std::vector<bool> done(seq.size(), false);
  auto ready = [&](const Eqn& e) {
    for (const Atom& a : e.inputs)
      if (const Var* v = std::get_if<Var>(&a)) {
        auto it = producer.find(v->id());
        if (it != producer.end() && !done[it->second]) return false;
        if (it == producer.end() && !vars_.count(v->id())) return false;  // undefined: in order
      }
    return true;
  };
  auto fusable = [&](const Eqn& e) {
    return e.primitive && !is_control(e.primitive) && e.outputs.size() == 1 &&
           all_vars_or_scalar_literals(e) &&
           (find_elementwise(e.primitive) || e.primitive == &rt::broadcast_in_dim_p ||
            fusable_reduce(e) || fusable_read(e) || fusable_scatter(e, depth) || sink_reduce(e));
  };
  // Only an equation reading the group's values is taken early: one that does not (a constant,
  // a value of earlier groups) would make its readers further on read it from a buffer.
  auto reads_group = [&](const Eqn& e, int g) {
    for (const Atom& a : e.inputs)
      if (const Var* v = std::get_if<Var>(&a); v && info(*v).group == g) return true;
    return false;
  };
  for (std::size_t first = 0; first < seq.size();) {
    std::size_t pick = first;
    if (last >= 0 && groups_[static_cast<std::size_t>(last)].elementwise() &&
        groups_[static_cast<std::size_t>(last)].eqns.size() < max_group_eqns)
      for (std::size_t i = first, seen = 0; i < seq.size() && seen < lookahead; ++i) {
        if (done[i]) continue;
        ++seen;
        const Eqn& e = *seq[i];
        if (fusable(e) && ready(e) && reads_group(e, last) &&
            (!fusable_read(e) || compatible(e.outputs[0].aval().shape,
                                            groups_[static_cast<std::size_t>(last)].shape)) &&
            joins(e, static_cast<std::size_t>(last))) {
          pick = i;
          break;
        }
      }
    take(*seq[pick]);
    done[pick] = true;
    while (first < seq.size() && done[first]) ++first;
  }
}

XPR_FUNC bool Lowering::fusable_reduce(const Eqn& e) {
  if (!is_reduce(e.primitive)) return false;
  if (e.inputs.size() != 1 || e.outputs.size() != 1) return false;
  const std::size_t rank = aval_of(e.inputs[0]).ndim();
  const rt::ParamValue* a = e.params.find("axes");
  const rt::Axes* axes = a ? std::get_if<rt::Axes>(a) : nullptr;
  return rank > 0 && axes && axes->size() == 1 &&
         (*axes)[0] == static_cast<std::int64_t>(rank - 1) &&
         e.outputs[0].aval().ndim() == rank - 1;
}

XPR_FUNC bool Lowering::sink_reduce(const Eqn& e) {
  if (e.primitive != &rt::reduce_sum_p && e.primitive != &rt::reduce_max_p &&
      e.primitive != &rt::reduce_min_p)
    return false;
  if (e.inputs.size() != 1 || e.outputs.size() != 1 || !std::holds_alternative<Var>(e.inputs[0]))
    return false;
  const std::size_t rank = aval_of(e.inputs[0]).ndim();
  const rt::ParamValue* a = e.params.find("axes");
  const rt::Axes* axes = a ? std::get_if<rt::Axes>(a) : nullptr;
  if (rank == 0 || !axes || axes->empty()) return false;
  for (std::int64_t k : *axes)
    if (k < 0 || k >= static_cast<std::int64_t>(rank) - 1) return false;
  return e.outputs[0].aval().ndim() + axes->size() == rank;
}

XPR_FUNC bool Lowering::fusable_read(const Eqn& e) {
  const Primitive* p = e.primitive;
  if (p != &rt::reshape_p && p != &rt::squeeze_p && p != &rt::expand_dims_p && p != &rt::slice_p &&
      p != &rt::transpose_p && p != &rt::iota_p && p != &rt::concatenate_p && p != &rt::gather_p)
    return false;
  if (e.outputs.size() != 1) return false;
  for (const Atom& a : e.inputs)
    if (!std::holds_alternative<Var>(a)) return false;
  if (p == &rt::reshape_p) {
    const rt::ParamValue* d = e.params.find("dimensions");
    if (d && !std::holds_alternative<rt::None>(*d)) return false;  // standalone says why
  }
  if (p == &rt::gather_p && e.inputs.size() != 2) return false;
  if (p == &rt::iota_p && !e.inputs.empty()) return false;
  return true;
}

XPR_FUNC bool Lowering::composable(const Eqn& e, std::size_t g) {
  const Primitive* p = e.primitive;
  for (const Atom& a : e.inputs) {
    const VarInfo& vi = info(std::get<Var>(a));
    if (vi.group != static_cast<int>(g)) continue;  // an earlier group's buffer
    if (!reader_of_.count(vi.id)) return false;
    if (p == &rt::reshape_p) {
      // Composed only when it adds or removes axes of size 1.
      auto big = [](const core::Shape& s) {
        std::vector<std::int64_t> r;
        for (std::int64_t d : s)
          if (d != 1) r.push_back(d);
        return r;
      };
      if (big(aval_of(a).shape) != big(e.outputs[0].aval().shape)) return false;
    }
  }
  return true;
}

XPR_FUNC bool Lowering::fusable_scatter(const Eqn& e, std::size_t depth) const {
  // Loop bodies keep their scatters apart: a carry's scatter may update it in place.
  if (depth != 0 || !e.primitive || !is_scatter(e.primitive)) return false;
  if (e.inputs.size() != 3 || e.outputs.size() != 1) return false;
  for (const Atom& a : e.inputs)
    if (!std::holds_alternative<Var>(a)) return false;
  const auto& dn = e.params.get<rt::ScatterDimensionNumbers>("dimension_numbers");
  const std::size_t ur = aval_of(e.inputs[2]).ndim(), w = dn.update_window_dims.size();
  if (w > ur) return false;
  for (std::size_t k = 0; k < w; ++k)
    if (dn.update_window_dims[k] != static_cast<std::int64_t>(ur - w + k)) return false;
  return true;
}

XPR_FUNC Lowering::ScatterCode Lowering::scatter_code(const Eqn& e, std::size_t g,
                                                      std::string& pre) {
  // emit_scatter's index arithmetic, over the group's loop indices i0, i1, ... (the updates').
  const auto& dn = e.params.get<rt::ScatterDimensionNumbers>("dimension_numbers");
  const bool drop =
      e.params.get<rt::GatherScatterMode>("mode") == rt::GatherScatterMode::fill_or_drop;
  const ShapedArray& x = aval_of(e.inputs[0]);
  const ShapedArray& ia = aval_of(e.inputs[1]);
  const ShapedArray& ua = aval_of(e.inputs[2]);
  const auto window =
      rt::detail::gs::window_dims(x.ndim(), dn.inserted_window_dims, dn.operand_batching_dims);
  std::vector<std::int64_t> size(x.ndim(), 1);
  for (std::size_t k = 0; k < window.size(); ++k)
    size[window[k]] = ua.shape[static_cast<std::size_t>(dn.update_window_dims[k])];
  std::vector<std::size_t> sd;
  for (std::size_t d = 0; d < ua.ndim(); ++d)
    if (!rt::detail::gs::contains(dn.update_window_dims, static_cast<std::int64_t>(d)))
      sd.push_back(d);
  auto i = [](std::size_t k) { return "i" + std::to_string(k); };
  auto plus = [](std::string& to, const std::string& term) {
    to += (to.empty() ? "" : " + ") + term;
  };
  const std::string uid = std::to_string(next_read_++);
  ScatterCode c;
  c.uid = uid;
  c.oob = drop ? "soob" + uid : "";
  std::string s;
  if (drop) s += "bool " + c.oob + " = false;\n";
  std::vector<std::string> row;
  for (std::size_t d : sd) row.push_back(i(d));
  for (std::size_t k = 0; k < dn.scatter_dims_to_operand_dims.size(); ++k) {
    const auto d = static_cast<std::size_t>(dn.scatter_dims_to_operand_dims[k]);
    const std::string sk = "ss" + uid + "_" + std::to_string(k);
    std::vector<std::string> at = row;
    if (at.size() < ia.ndim()) at.push_back(std::to_string(k));
    const std::string index = read_operand(e, 1, at, "", g, pre, c.row);
    const std::size_t K =
        at.size() > row.size() ? static_cast<std::size_t>(ia.shape[ia.ndim() - 1]) : 1;
    const std::string check =
        range_check(e.inputs[1], k, K, "(" + dim(x.shape[d]) + " - " + dim(size[d]) + ")", g, pre);
    s += window_start(sk, index, x.shape[d], size[d], drop, c.oob, check);
    plus(c.base, sk + " * (" + stride(x.shape, d) + ")");
  }
  for (std::size_t b = 0; b < dn.operand_batching_dims.size(); ++b)
    plus(c.base, i(sd[static_cast<std::size_t>(dn.scatter_indices_batching_dims[b])]) + " * (" +
                     stride(x.shape, static_cast<std::size_t>(dn.operand_batching_dims[b])) + ")");
  for (std::size_t w = 0; w < window.size(); ++w)
    plus(c.window, i(static_cast<std::size_t>(dn.update_window_dims[w])) + " * (" +
                       stride(x.shape, window[w]) + ")");
  c.row += s;
  c.out = "o" + std::to_string(info(e.outputs[0]).id);
  return c;
}

XPR_FUNC std::string Lowering::scatter_combine(const Eqn& e, const std::string& cell,
                                               const std::string& update) {
  const DType t = aval_of(e.inputs[0]).dtype;
  CCall c = c_call();
  c.args = {cell, update};
  c.arg_dtypes = {t, t};
  c.out = t;
  const Primitive* p = e.primitive;
  return p == &rt::scatter_add_p   ? c_expr<op::add>::emit(c)
         : p == &rt::scatter_mul_p ? c_expr<op::mul>::emit(c)
         : p == &rt::scatter_min_p ? c_expr<op::min>::emit(c)
         : p == &rt::scatter_max_p ? c_expr<op::max>::emit(c)
                                   : update;
}

XPR_FUNC std::string Lowering::scatter_into(const Eqn& e, const std::string& update, std::size_t g,
                                            std::string& pre, std::string& stmts) {
  const ScatterCode c = scatter_code(e, g, pre);
  std::string dst = c.base;
  if (!c.window.empty()) dst += (dst.empty() ? "" : " + ") + c.window;
  if (dst.empty()) dst = "0";
  const std::string t = "st" + c.uid;
  const std::string cell = c.out + "[" + t + "]";
  stmts += c.row + "const long long " + t + " = " + dst + ";\n" +
           (c.oob.empty() ? "" : "if (!" + c.oob + ") ") + cell + " = " +
           scatter_combine(e, cell, update) + ";\n";
  return c.out;
}

XPR_FUNC std::string Lowering::scatter_runs(const Eqn& e, const std::string& update, std::size_t g,
                                            const core::Shape& S, std::size_t depth,
                                            std::string& pre) {
  const auto& dn = e.params.get<rt::ScatterDimensionNumbers>("dimension_numbers");
  const std::size_t w = dn.update_window_dims.size();
  if (standalone_ || w >= depth || aval_of(e.inputs[2]).ndim() != depth) return "";
  std::int64_t cells = 1;  // the window's size: the registers a run keeps
  for (std::size_t d = depth - w; d < depth; ++d) {
    if (S[d] < 1 || S[d] > max_literal_dim) return "";
    cells *= S[d];
  }
  const ScatterCode c = scatter_code(e, g, pre);
  const std::string id = c.uid, acc = "run" + id, at = "at" + id, live = "live" + id;
  const std::string type = c_type(aval_of(e.inputs[0]).dtype);
  auto f = [](std::size_t d) { return "f" + std::to_string(d); };
  auto i = [](std::size_t d) { return "i" + std::to_string(d); };
  // `body` in loops over the window's axes, `q<depth>` the cell's position in the window and,
  // with `flat`, `f<depth>` the update's (what `update` reads).
  auto over_window = [&](const std::string& body, bool flat) {
    std::string inner = body;
    for (std::size_t d = depth; d-- > depth - w;) {
      const std::string pos =
          d == depth - w ? i(d) : "q" + std::to_string(d) + " * " + dim(S[d]) + " + " + i(d);
      inner = "for (long long " + i(d) + " = 0; " + i(d) + " < " + dim(S[d]) + "; ++" + i(d) +
              ") {\n" +
              indented((flat ? "const long long " + f(d + 1) + " = " + f(d) + " * " + dim(S[d]) +
                                   " + " + i(d) + ";\n"
                             : "") +
                       "const long long q" + std::to_string(d + 1) + " = " + pos + ";\n" + inner) +
              "}\n";
    }
    return inner;
  };
  const std::string q = w == 0 ? "0" : "q" + std::to_string(depth);
  const std::string cell = c.out + "[" + at + (c.window.empty() ? "" : " + " + c.window) + "]";
  const std::string slot = acc + "[" + q + "]";
  std::string row =
      c.row + "const long long base" + id + " = " + (c.base.empty() ? "0" : c.base) + ";\n";
  std::string step =
      "if (!" + live + " || base" + id + " != " + at + ") {\n" +
      indented("if (" + live + ")\n" + indented(over_window(cell + " = " + slot + ";\n", false)) +
               at + " = base" + id + ";\n" + live + " = true;\n" +
               over_window(slot + " = " + cell + ";\n", false)) +
      "}\n" + over_window(slot + " = " + scatter_combine(e, slot, update) + ";\n", true);
  row += c.oob.empty() ? step : "if (!" + c.oob + ") {\n" + indented(step) + "}\n";
  std::string nest = row;
  for (std::size_t d = depth - w; d-- > 0;) {
    nest = "for (long long " + i(d) + " = 0; " + i(d) + " < " + dim(S[d]) + "; ++" + i(d) +
           ") {\n" +
           indented("const long long " + f(d + 1) + " = " +
                    (d == 0 ? i(d) : f(d) + " * " + dim(S[d]) + " + " + i(d)) + ";\n" + nest) +
           "}\n";
  }
  return "{\n" +
         indented(type + " " + acc + "[" + std::to_string(cells) + "];\nlong long " + at +
                  " = 0;\nbool " + live + " = false;\n" + nest + "if (" + live + ")\n" +
                  indented(over_window(cell + " = " + slot + ";\n", false))) +
         "}\n";
}

XPR_FUNC std::optional<core::Shape> Lowering::joins(const Eqn& e, std::size_t g) {
  auto prefix = [](const core::Shape& a, const core::Shape& b) {
    if (a.rank() > b.rank()) return false;
    for (std::size_t k = 0; k < a.rank(); ++k)
      if (a[k] != b[k]) return false;
    return true;
  };
  const core::Shape& s = groups_[g].shape;
  // A fused scatter's result is complete only when the group ends.
  for (const Atom& a : e.inputs)
    if (const Var* v = std::get_if<Var>(&a);
        v && info(*v).group == static_cast<int>(g) && sink_of_.count(info(*v).id))
      return std::nullopt;
  if (is_scatter(e.primitive)) {
    const Var& x = std::get<Var>(e.inputs[0]);
    const Var& idx = std::get<Var>(e.inputs[1]);
    const core::Shape& u = aval_of(e.inputs[2]).shape;
    if (info(x).group == static_cast<int>(g)) return std::nullopt;  // copied in before the loops
    if (info(idx).group == static_cast<int>(g) && !reader_of_.count(info(idx).id))
      return std::nullopt;
    if (!prefix(u, s) && !prefix(s, u)) return std::nullopt;
    return prefix(s, u) ? u : s;
  }
  if (sink_reduce(e)) {
    const core::Shape& u = aval_of(e.inputs[0]).shape;
    if (!prefix(u, s) && !prefix(s, u)) return std::nullopt;
    return prefix(s, u) ? u : s;
  }
  // A read is computed where something of the group uses it, so it never sets the loops' extent.
  if (fusable_read(e)) return composable(e, g) ? std::optional<core::Shape>(s) : std::nullopt;
  // The extent the equation iterates over: its result's, or a reduction's operand's.
  const core::Shape& u = fusable_reduce(e) ? aval_of(e.inputs[0]).shape : e.outputs[0].aval().shape;
  if (!prefix(u, s) && !prefix(s, u)) return std::nullopt;
  if (e.primitive == &rt::broadcast_in_dim_p) {
    // An operand of this group is read where the loops over its own axes are: the broadcast
    // must add trailing axes only.
    const Var* v = std::get_if<Var>(&e.inputs[0]);
    if (v && info(*v).group == static_cast<int>(g) && v->aval().ndim() > 0 &&
        !reader_of_.count(info(*v).id)) {  // a read of this group is composed instead
      const auto& bd = e.params.get<rt::Axes>("broadcast_dimensions");
      if (!prefix(v->aval().shape, u)) return std::nullopt;
      for (std::size_t k = 0; k < bd.size(); ++k)
        if (bd[k] != static_cast<std::int64_t>(k)) return std::nullopt;
    }
  }
  return prefix(s, u) ? u : s;
}

XPR_FUNC Lowering::Block Lowering::instantiate(const rt::ClosedJaxpr& body,
                                               std::span<const Atom> args, std::size_t depth) {
  if (body.jaxpr.invars.size() != args.size())
    unsupported("a sub-jaxpr called with the wrong number of operands");
  sub_eqns_.emplace_back();
  std::vector<Eqn>& eqns = sub_eqns_.back();
  Block blk;
  blk.outs = inline_into(eqns, body.jaxpr, body.consts, args, depth);
  form_groups(eqns, blk.groups, depth + 1);
  return blk;
}

XPR_FUNC std::vector<Atom> Lowering::atoms(std::span<const Atom> a, std::size_t from,
                                           std::size_t n) {
  if (from > a.size() || n > a.size() - from) unsupported("a control-flow equation's operands");
  return std::vector<Atom>(a.begin() + static_cast<std::ptrdiff_t>(from),
                           a.begin() + static_cast<std::ptrdiff_t>(from + n));
}

XPR_FUNC void Lowering::check_types(std::span<const Atom> outs, std::span<const Var> to) {
  if (outs.size() != to.size()) unsupported("a sub-jaxpr returning the wrong number of results");
  for (std::size_t k = 0; k < to.size(); ++k)
    if (!aval_of(outs[k]).same_type(to[k].aval()))
      unsupported("a sub-jaxpr returning the wrong types");
}

XPR_FUNC void Lowering::instantiate_control(std::size_t g, std::size_t depth) {
  const Eqn& e = *groups_[g].eqns[0];
  const std::string& p = e.primitive->name();
  std::vector<Atom> reads;
  std::vector<Block> blocks;
  std::vector<Var> slices;
  std::vector<Atom> outs_as_atoms;
  for (const Var& v : e.outputs) outs_as_atoms.emplace_back(v);
  if (p == "cond") {
    if (e.inputs.empty()) unsupported("cond without an index");
    const rt::JaxprTuple& bs = e.params.get<rt::JaxprTuple>("branches");
    if (bs.empty()) unsupported("cond without branches");
    const std::vector<Atom> ops = atoms(e.inputs, 1, e.inputs.size() - 1);
    for (const rt::JaxprParam& br : bs) {
      if (!br) unsupported("cond with a missing branch");
      blocks.push_back(instantiate(*br, ops, depth));
      check_types(blocks.back().outs, e.outputs);
      reads.insert(reads.end(), blocks.back().outs.begin(), blocks.back().outs.end());
    }
    reads.push_back(e.inputs[0]);
  } else if (p == "while") {
    auto nc = static_cast<std::size_t>(e.params.get<std::int64_t>("cond_nconsts"));
    auto nb = static_cast<std::size_t>(e.params.get<std::int64_t>("body_nconsts"));
    const std::vector<Atom> cc = atoms(e.inputs, 0, nc), bc = atoms(e.inputs, nc, nb);
    const std::vector<Atom> init = atoms(e.inputs, nc + nb, e.outputs.size());
    if (nc + nb + e.outputs.size() != e.inputs.size()) unsupported("while's operands");
    std::vector<Atom> cargs = cc, bargs = bc;
    cargs.insert(cargs.end(), outs_as_atoms.begin(), outs_as_atoms.end());
    bargs.insert(bargs.end(), outs_as_atoms.begin(), outs_as_atoms.end());
    for (const char* key : {"cond_jaxpr", "body_jaxpr"}) {
      const rt::JaxprParam& j = e.params.get<rt::JaxprParam>(key);
      if (!j) unsupported("while without a sub-jaxpr");
      blocks.push_back(instantiate(*j, key[0] == 'c' ? cargs : bargs, depth));
    }
    if (blocks[0].outs.size() != 1 || aval_of(blocks[0].outs[0]).dtype != DType::bool_ ||
        aval_of(blocks[0].outs[0]).ndim() != 0)
      unsupported("while with a predicate that is not a bool scalar");
    check_types(blocks[1].outs, e.outputs);
    scatter_in_place(blocks[1], e.outputs);
    reads = init;
    reads.push_back(blocks[0].outs[0]);
    reads.insert(reads.end(), blocks[1].outs.begin(), blocks[1].outs.end());
  } else if (p == "scan") {
    const rt::JaxprParam& j = e.params.get<rt::JaxprParam>("jaxpr");
    if (!j) unsupported("scan without a body");
    auto nconst = static_cast<std::size_t>(e.params.get<std::int64_t>("num_consts"));
    auto ncarry = static_cast<std::size_t>(e.params.get<std::int64_t>("num_carry"));
    const std::int64_t length = e.params.get<std::int64_t>("length");
    if (length < 0 || ncarry > e.outputs.size()) unsupported("scan's parameters");
    std::vector<Atom> args = atoms(e.inputs, 0, nconst);
    const std::vector<Atom> init = atoms(e.inputs, nconst, ncarry);
    args.insert(args.end(), outs_as_atoms.begin(),
                outs_as_atoms.begin() + static_cast<std::ptrdiff_t>(ncarry));
    for (std::size_t i = nconst + ncarry; i < e.inputs.size(); ++i) {
      const ShapedArray& xs = aval_of(e.inputs[i]);
      if (xs.ndim() == 0 || xs.shape[0] != length) unsupported("scan's xs");
      slices.emplace_back(
          ShapedArray{core::Shape(std::vector<std::int64_t>(xs.shape.begin() + 1, xs.shape.end())),
                      xs.dtype, xs.weak_type});
      def(slices.back(), static_cast<int>(g));
      args.emplace_back(slices.back());
      reads.push_back(e.inputs[i]);
    }
    blocks.push_back(instantiate(*j, args, depth));
    const Block& body = blocks[0];
    if (body.outs.size() != e.outputs.size()) unsupported("scan's results");
    for (std::size_t k = 0; k < body.outs.size(); ++k) {
      const ShapedArray& o = e.outputs[k].aval();
      const ShapedArray& y = aval_of(body.outs[k]);
      if (k < ncarry ? !y.same_type(o)
                     : (o.ndim() == 0 || o.shape[0] != length || y.dtype != o.dtype ||
                        y.size() * length != o.size()))
        unsupported("scan's result types");
    }
    scatter_in_place(body,
                     std::vector<Var>(e.outputs.begin(),
                                      e.outputs.begin() + static_cast<std::ptrdiff_t>(ncarry)));
    reads.insert(reads.end(), init.begin(), init.end());
    reads.insert(reads.end(), body.outs.begin(), body.outs.end());
  } else {  // check_max_trips
    if (e.inputs.size() != e.outputs.size() + 1) unsupported("check_max_trips' operands");
    reads = e.inputs;
  }
  Group& grp = groups_[g];
  grp.blocks = std::move(blocks);
  grp.slices = std::move(slices);
  grp.reads = std::move(reads);
}

XPR_FUNC bool Lowering::block_reads(const Block& blk, const Var& v, const Eqn* except) const {
  auto is_v = [&](const Atom& a) {
    const Var* w = std::get_if<Var>(&a);
    return w && w->id() == v.id();
  };
  for (std::size_t g : blk.groups) {
    const Group& grp = groups_[g];
    for (const Eqn* e : grp.eqns)
      for (std::size_t i = 0; i < e->inputs.size(); ++i)
        if (is_v(e->inputs[i]) && !(e == except && i == 0)) return true;
    for (const Atom& a : grp.reads)
      if (is_v(a)) return true;
    for (const Block& b : grp.blocks)
      if (block_reads(b, v, except)) return true;
  }
  return false;
}

XPR_FUNC void Lowering::scatter_in_place(const Block& body, const std::vector<Var>& carry) {
  for (std::size_t k = 0; k < carry.size() && k < body.outs.size(); ++k) {
    const Var* out = std::get_if<Var>(&body.outs[k]);
    if (!out) continue;
    for (std::size_t g : body.groups) {
      const Group& grp = groups_[g];
      if (grp.kind != Kind::standalone || !is_scatter(grp.eqns[0]->primitive)) continue;
      const Eqn& e = *grp.eqns[0];
      const Var* x = std::get_if<Var>(&e.inputs[0]);
      if (e.outputs[0].id() != out->id() || !x || x->id() != carry[k].id()) continue;
      bool other = block_reads(body, carry[k], &e);
      for (const Atom& a : body.outs)
        if (const Var* w = std::get_if<Var>(&a); w && w->id() == carry[k].id()) other = true;
      if (!other) in_place_.emplace_back(*out, carry[k]);
    }
  }
}

XPR_FUNC void Lowering::assign_buffers() {
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
  auto buffer = [&](const Var& v) {
    VarInfo& vi = info(v);
    if (vi.buffer < 0) {
      vi.buffer = static_cast<int>(next_buffer_++);
      out_.temps.push_back(v.aval());
    }
  };
  for (const auto& [result, carry] : in_place_) {
    buffer(carry);
    info(result).buffer = info(carry).buffer;
  }
  // A value used by another group than its own lives in a buffer.
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    auto read = [&](const Atom& a) {
      if (const Var* v = std::get_if<Var>(&a); v && info(*v).group != static_cast<int>(g))
        buffer(*v);
    };
    for (const Eqn* e : groups_[g].eqns)
      for (const Atom& a : e->inputs) read(a);
    for (const Atom& a : groups_[g].reads) read(a);
  }
  // Values an elementwise group reads again after their loop has ended.
  for (std::size_t g = 0; g < groups_.size(); ++g)
    if (groups_[g].elementwise()) {
      (void)emit_elementwise(g, true);
      for (const Eqn* e : groups_[g].eqns)
        if (info(e->outputs[0]).spill) buffer(e->outputs[0]);
    }
  // Standalone primitives and control flow read and write buffers only.
  for (const Group& grp : groups_)
    if (!grp.elementwise()) {
      for (const Var& o : grp.eqns[0]->outputs) buffer(o);
      for (const Var& s : grp.slices) buffer(s);
      if (grp.kind == Kind::control && grp.eqns[0]->primitive->name() != "cond")
        uses_control_ = true;  // a loop, or check_max_trips
    }
  // The loop-control block (see `LoopControl`).
  if (uses_control_) {
    out_.control = static_cast<int>(next_buffer_++);
    out_.temps.push_back(ShapedArray{core::Shape{4}, DType::int64, false});
  }
}

XPR_FUNC std::string Lowering::ptr(const Var& v, bool mut) {
  const VarInfo& vi = info(v);
  std::string t = c_type(v.aval().dtype);
  return "static_cast<" + std::string(mut ? "" : "const ") + t + "*>(b[" +
         std::to_string(vi.buffer) + "])";
}

XPR_FUNC std::string Lowering::emit_group(std::size_t g) {
  // Its functions compiled without loop if-conversion when they read conditionally (see
  // `conditional_reads_`).
  conditional_reads_ = false;
  std::string text = emit_group_functions(g);
  if (conditional_reads_) {
    text = replaced(text, "\nstatic void ", "\nXPR_NO_IFCVT static void ");
    no_ifcvt_used_ = true;
  }
  return text;
}

XPR_FUNC std::string Lowering::emit_group_functions(std::size_t g) {
  const Group& grp = groups_[g];
  std::string f =
      "// group " + std::to_string(g) + "\nstatic void g" + std::to_string(g) +
      "(void* const* b, const long long* n, const XprHost* h) {\n  (void)b; (void)n; (void)h;\n";
  if (grp.kind == Kind::elementwise) {
    std::string body = emit_elementwise(g);
    if (parts_index_.empty()) return f + body + "}\n\n";
    // A flat loop that calls f64 `sin` or `cos` runs first with the preamble's own (inline, so
    // GCC vectorizes them with the loop's arithmetic: about three times libmvec's speed, see
    // `Lowering::helper`), which cover |x| <= 2^30 and flag any other argument; the loop then
    // runs again as written, with libm's. Running it twice is safe because it only reads its
    // inputs and writes each element of its outputs once, unless an output shares its buffer
    // with an input (a loop's carry updated in place): such loops call libm's only.
    // Emitted a second time only where it can differ: an f64 sin or cos in the group.
    bool trig = false, in_place = false;
    for (const Eqn* e : grp.eqns)
      trig = trig || ((e->primitive == &rt::sin_p || e->primitive == &rt::cos_p) &&
                      e->outputs[0].aval().dtype == DType::float64);
    for (const auto& pr : in_place_)
      in_place = in_place || info(pr.first).group == static_cast<int>(g);
    if (trig && !opts_.precise_math && !in_place) {
      fast_trig_ = true;
      fast_trig_used_ = false;
      const std::string fast = emit_elementwise(g);
      fast_trig_ = false;
      // The fallback runs only for arguments the fast loop cannot take, so rarely that libm's
      // scalar functions serve it: a kernel whose other functions need no SIMD clone then does
      // not load libmvec (about 0.1-0.2 ms of a new process's first call).
      scalar_trig_ = true;
      if (fast_trig_used_) body = emit_elementwise(g);
      scalar_trig_ = false;
      if (fast_trig_used_)
        body = "  int xpr_big = 0;\n  {\n" + indented(fast) +
               "  }\n  if (xpr_big) {  // an argument beyond 2^30, or not finite: libm's\n" +
               indented(body) + "  }\n";
    }
    // The loop over [lo, hi) in a function of its own, which the host runs in parts on several
    // threads when the loop is long (the pointers above the loop are read again by each part).
    const std::string id = "g" + std::to_string(g);
    return "// group " + std::to_string(g) + ": its loop over [lo, hi)\nstatic void " + id +
           "_range(void* const* b, const long long* n, const XprHost* h, long long lo, "
           "long long hi) {\n  (void)b; (void)n; (void)h;\n" +
           replaced(body, flat_loop(parts_index_, "0", parts_count_),
                    flat_loop(parts_index_, "lo", "hi")) +
           "}\n\n" + f + "  const long long N = " + parts_count_ +
           ";\n  if (h->parallel && N >= " + parts_min_ + ") h->parallel(&" + id +
           "_range, b, n, h, N);\n  else " + id + "_range(b, n, h, 0, N);\n}\n\n";
  }
  if (grp.kind == Kind::control) return f + emit_control(grp) + "}\n\n";
  if (grp.kind == Kind::host) return f + emit_host_call(*grp.eqns[0]) + "}\n\n";
  return f + emit_standalone(*grp.eqns[0]) + "}\n\n";
}

XPR_FUNC std::string Lowering::emit_host_call(const Eqn& e) {
  // No name from the equation goes into the source (it may come from untrusted jaxpr text).
  std::string in, out;
  for (const Atom& a : e.inputs) {
    const Var* v = std::get_if<Var>(&a);
    in += (in.empty() ? "" : ", ") + (v ? buf(*v) : std::string("nullptr"));
  }
  for (const Var& v : e.outputs) out += (out.empty() ? "" : ", ") + buf(v);
  return "  // host call " + std::to_string(host_index_.at(&e)) +
         ": an equation the kernel does not compute, run by the host\n"
         "  void* const in[] = {" +
         (in.empty() ? std::string("nullptr") : in) + "};\n" + "  void* const out[] = {" +
         (out.empty() ? std::string("nullptr") : out) + "};\n" + "  h->call(h->ctx, " +
         std::to_string(host_index_.at(&e)) + ", in, out);\n";
}

XPR_FUNC std::string Lowering::copy(const std::string& dst, const ShapedArray& da, const Atom& src,
                                    const std::string& ind, const std::string& dst_off,
                                    const std::string& src_off) {
  const std::string t = c_type(da.dtype);
  auto at = [](const std::string& off) { return off == "0" ? "[i]" : "[" + off + " + i]"; };
  std::string from;
  if (const Literal* l = std::get_if<Literal>(&src))
    from = c_literal(l->value);
  else
    from = ptr(std::get<Var>(src)) + at(src_off);
  return ind + "for (long long i = 0; i < " + count(da.shape) + "; ++i)\n" + ind +
         "  static_cast<" + t + "*>(" + dst + ")" + at(dst_off) + " = " + from + ";\n";
}

XPR_FUNC std::string Lowering::call(const Block& blk, const std::string& ind) {
  std::string s;
  for (std::size_t g : blk.groups) {
    s += ind + "g" + std::to_string(g) + "(b, n, h);\n";
    if (groups_[g].kind == Kind::control && uses_control_) s += ind + "if (ctl[2]) return;\n";
  }
  return s;
}

XPR_FUNC std::string Lowering::count_iteration(int code, const std::string& ind) {
  return ind + "if (ctl[0]) {\n" + ind + "  if (ctl[1] == 0) {\n" + ind +
         "    ctl[2] = " + std::to_string(code) + ";\n" + ind + "    return;\n" + ind + "  }\n" +
         ind + "  --ctl[1];\n" + ind + "}\n";
}

XPR_FUNC std::string Lowering::update_carry(const std::vector<Atom>& outs,
                                            const std::vector<Var>& carry, const std::string& ind) {
  std::string s, later;
  for (std::size_t k = 0; k < carry.size(); ++k) {
    const Var* v = std::get_if<Var>(&outs[k]);
    if (v && info(*v).buffer == info(carry[k]).buffer) continue;  // unchanged, or in place
    bool is_carry = false;
    for (const Var& c : carry) is_carry = is_carry || (v && v->id() == c.id());
    if (is_carry) {
      std::string st = "b[" + std::to_string(next_buffer_++) + "]";
      out_.temps.push_back(carry[k].aval());
      s += copy(st, carry[k].aval(), outs[k], ind);
      staged_.emplace_back(carry[k].aval());  // the staged value, read back from its buffer
      def(staged_.back(), -1);
      info(staged_.back()).buffer = static_cast<int>(next_buffer_ - 1);
      later += copy(buf(carry[k]), carry[k].aval(), Atom(staged_.back()), ind);
    } else {
      later += copy(buf(carry[k]), carry[k].aval(), outs[k], ind);
    }
  }
  return s + later;
}

XPR_FUNC std::string Lowering::emit_control(const Group& grp) {
  const Eqn& e = *grp.eqns[0];
  const std::string& p = e.primitive->name();
  std::string s;
  if (uses_control_) s += "  long long* ctl = " + control_ptr() + ";\n  (void)ctl;\n";
  if (p == "cond") {
    const std::string nb = std::to_string(grp.blocks.size() - 1);
    s += "  long long k = " + scalar(e.inputs[0]) + ";\n";
    s += "  k = k < 0 ? 0 : k > " + nb + " ? " + nb + " : k;\n";  // clamped, as cond's impl
    s += "  switch (k) {\n";
    for (std::size_t br = 0; br < grp.blocks.size(); ++br) {
      s += br + 1 == grp.blocks.size() ? "    default: {\n"
                                       : "    case " + std::to_string(br) + ": {\n";
      s += call(grp.blocks[br], "      ");
      for (std::size_t k = 0; k < e.outputs.size(); ++k)
        s += copy(buf(e.outputs[k]), e.outputs[k].aval(), grp.blocks[br].outs[k], "      ");
      s += "      break;\n    }\n";
    }
    return s + "  }\n";
  }
  if (p == "while") {
    const Block &c = grp.blocks[0], &body = grp.blocks[1];
    const std::size_t n0 = e.inputs.size() - e.outputs.size();
    for (std::size_t k = 0; k < e.outputs.size(); ++k)
      s += copy(buf(e.outputs[k]), e.outputs[k].aval(), e.inputs[n0 + k], "  ");
    s += "  for (;;) {\n" + call(c, "    ");
    s += "    if (!" + scalar(c.outs[0]) + ") break;\n";
    s += count_iteration(1, "    ");
    s += call(body, "    ");
    s += update_carry(body.outs, e.outputs, "    ");
    return s + "  }\n";
  }
  if (p == "scan") {
    const Block& body = grp.blocks[0];
    auto nconst = static_cast<std::size_t>(e.params.get<std::int64_t>("num_consts"));
    auto ncarry = static_cast<std::size_t>(e.params.get<std::int64_t>("num_carry"));
    const std::int64_t length = e.params.get<std::int64_t>("length");
    const bool reverse = e.params.get<bool>("reverse");
    std::vector<Var> carry(e.outputs.begin(),
                           e.outputs.begin() + static_cast<std::ptrdiff_t>(ncarry));
    for (std::size_t k = 0; k < ncarry; ++k)
      s += copy(buf(carry[k]), carry[k].aval(), e.inputs[nconst + k], "  ");
    s += "  const long long L = " + dim(length) + ";\n";
    s += "  for (long long step = 0; step < L; ++step) {\n";
    s += count_iteration(2, "    ");
    s += std::string("    const long long it = ") + (reverse ? "L - 1 - step" : "step") +
         ";\n    (void)it;\n";
    for (std::size_t j = 0; j < grp.slices.size(); ++j) {
      const Var& x = grp.slices[j];
      s += copy(buf(x), x.aval(), e.inputs[nconst + ncarry + j], "    ", "0",
                "it * (" + count(x.aval().shape) + ")");
    }
    s += call(body, "    ");
    // The ys first: they may read a carry the update below overwrites.
    for (std::size_t k = ncarry; k < e.outputs.size(); ++k) {
      const ShapedArray ya = aval_of(body.outs[k]);
      s += copy(buf(e.outputs[k]), ya, body.outs[k], "    ", "it * (" + count(ya.shape) + ")");
    }
    std::vector<Atom> couts(body.outs.begin(),
                            body.outs.begin() + static_cast<std::ptrdiff_t>(ncarry));
    s += update_carry(couts, carry, "    ");
    return s + "  }\n";
  }
  // check_max_trips: the status names this equation; the host calls its impl for the message.
  checks_.push_back(&e);
  s += "  if (" + scalar(e.inputs[0]) + ") {\n    ctl[2] = " + std::to_string(2 + checks_.size()) +
       ";\n    return;\n  }\n";
  for (std::size_t k = 0; k < e.outputs.size(); ++k)
    s += copy(buf(e.outputs[k]), e.outputs[k].aval(), e.inputs[k + 1], "  ");
  return s;
}

XPR_FUNC std::string Lowering::reduce_identity(const Primitive* p, DType dt) {
  const bool fl = core::is_floating(dt);
  if (p == &rt::reduce_sum_p) return c_number(0, dt);
  if (p == &rt::reduce_prod_p) return c_number(1, dt);
  if (p == &rt::reduce_max_p)
    return fl                   ? c_number(-__builtin_inf(), dt)
           : dt == DType::bool_ ? "false"
           : dt == DType::int32 ? "(-2147483647-1)"
                                : "(-9223372036854775807LL-1)";
  return fl                   ? c_number(__builtin_inf(), dt)
         : dt == DType::bool_ ? "true"
         : dt == DType::int32 ? "2147483647"
                              : "9223372036854775807LL";
}

XPR_FUNC std::string Lowering::reduce_combine(const Primitive* p, DType dt, const std::string& a,
                                              const std::string& b) {
  if (p == &rt::reduce_sum_p)
    return dt == DType::bool_ ? "(" + a + " || " + b + ")" : "(" + a + " + " + b + ")";
  if (p == &rt::reduce_prod_p) return "(" + a + " * " + b + ")";  // integers wrap (-fwrapv)
  CCall c = c_call();
  c.args = {a, b};
  c.arg_dtypes = {dt, dt};
  c.out = dt;
  return p == &rt::reduce_max_p ? c_expr<op::max>::emit(c) : c_expr<op::min>::emit(c);
}

XPR_FUNC std::string indented(const std::string& text) {
  std::string r;
  bool start = true;
  for (char ch : text) {
    if (start && ch != '\n') r += "  ";
    r += ch;
    start = ch == '\n';
  }
  return r;
}

XPR_FUNC std::string replaced(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

XPR_FUNC std::string without_lines(const std::string& text, const std::string& token) {
  std::string r;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = text.find('\n', at);
    end = end == std::string::npos ? text.size() : end + 1;
    if (text.substr(at, end - at).find(token) == std::string::npos) r += text.substr(at, end - at);
    at = end;
  }
  return r;
}

XPR_FUNC std::string Lowering::emit_elementwise(std::size_t g, bool dry_run) {
  const Group& grp = groups_[g];
  const core::Shape& S = grp.shape;
  const std::size_t rank = S.rank();
  const int gi = static_cast<int>(g);
  // One flat loop over S (what GCC vectorizes best) when every equation has S's rank or is a
  // scalar, and nothing reads by axis (a strided broadcast, a reduction).
  auto in_loops = [&](const core::Shape& t) {  // a prefix of S: computed inside the loops
    if (t.rank() > rank) return false;
    for (std::size_t k = 0; k < t.rank(); ++k)
      if (t[k] != S[k]) return false;
    return true;
  };
  bool flat = rank > 0;
  for (const Eqn* e : grp.eqns) {
    if (fusable_read(*e) && !in_loops(e->outputs[0].aval().shape)) continue;  // apart
    if (is_scatter(e->primitive) || sink_reduce(*e)) flat = false;            // indexes by axis
    const std::size_t d = e->outputs[0].aval().ndim();
    if ((d != rank && d != 0) || is_reduce(e->primitive)) flat = false;
    if (fusable_read(*e)) {
      const bool by_position = e->primitive == &rt::reshape_p || e->primitive == &rt::squeeze_p ||
                               e->primitive == &rt::expand_dims_p;
      if (!by_position || info(std::get<Var>(e->inputs[0])).group == gi)
        flat = false;  // reads by axis index
    }
    if (e->primitive == &rt::broadcast_in_dim_p) {
      const ShapedArray& in = aval_of(e->inputs[0]);
      if (in.ndim() != 0 && in.shape != e->outputs[0].aval().shape) flat = false;
    }
  }
  // A top-level group that gathers, and whose loops combine nothing across their iterations (no
  // reduction into the same cells, no sum over the outer loop), tells GCC that its outer loop
  // carries no dependence through memory: it writes each element of its own buffers once (never
  // an argument's or another group's), which GCC cannot see through the pointers read from b[],
  // and without which it does not vectorize the gathers. Its fused scatters then combine their
  // updates, stored by those loops, in a loop nest of their own after them (`split`): a
  // read-modify-write through indices would keep the whole loop scalar. See docs/codegen.md.
  bool ivdep = rank > 0 && std::find(top_.begin(), top_.end(), g) != top_.end();
  bool gathers = false, scatters = false;
  for (const Eqn* e : grp.eqns) {
    if (e->primitive == &rt::gather_p) gathers = true;
    if (is_scatter(e->primitive)) scatters = true;
    if (sink_reduce(*e)) ivdep = false;
    if (is_reduce(e->primitive) && e->outputs[0].aval().ndim() == 0) ivdep = false;
  }
  ivdep = ivdep && gathers;
  // A group that only scatters (its updates computed elsewhere; index reads composed in) is
  // split as well: its combine nest is then scatter_runs' where that applies, and the loops
  // before it are empty.
  bool lone = rank > 0 && scatters;
  std::size_t scatter_count = 0;
  for (const Eqn* e : grp.eqns) {
    if (is_scatter(e->primitive))
      ++scatter_count;
    else if (!fusable_read(*e))
      lone = false;
  }
  const bool split = (ivdep && scatters) || (lone && scatter_count == 1);
  struct Combine {
    std::size_t depth;
    std::string code;
    bool nest;  // `code` is a loop nest of its own (scatter_runs), not a loop body
  };
  std::vector<Combine> combines;                                   // split: the scatters'
  auto f = [](std::size_t d) { return "f" + std::to_string(d); };  // flat index of S[:d]
  range_checks_.clear();
  range_check_code_.clear();

  std::string pre = "  const long long f0 = 0;\n  (void)f0;\n";
  std::map<std::size_t, std::string> read_name;  // var id -> expression read through a buffer
  struct Def {
    std::size_t depth = 0;
    long long inst = 0;       // the loop (instance) at `depth` that computed it
    std::size_t pending = 0;  // a reduction's: the depth whose loop's end makes it ready
    long long parent = 0;     // the loop (instance) at `depth - 1` it was computed in
    bool row = false;         // its loop is short: the row can be kept (`kept_rows`)
  };
  std::unordered_map<std::size_t, Def> defs;  // this group's vars, by id
  struct Acc {
    std::size_t id;
    std::string type, ident, main, tail, block, finish;
    bool compensated = false;  // a float sum: its blocks are added with Kahan's compensation
  };
  struct Level {
    std::string body;
    long long inst = 0;
    std::vector<Acc> accs;
    std::string after;  // statements once the loop has ended (a reduction's result stored)
    // Statements after each block of `row_block` iterations of this level's loop (a float sum
    // over it flushed into its compensated running sum); non-empty: the loop runs in blocks.
    std::string flush;
  };
  std::vector<Level> lv(rank + 1);
  std::size_t c = 0;  // loops open: over S[0 .. c)
  long long next_inst = 1;

  auto open = [&] {
    const std::size_t to = flat ? rank : c + 1;
    lv[to] = Level{};
    lv[to].inst = next_inst++;
    c = to;
  };
  auto close = [&] {
    Level& L = lv[c];
    const std::size_t up = flat ? 0 : c - 1;
    // Under ivdep, rows kept inside the outer loop are declared in its body, so that each of its
    // iterations has its own (`kept_rows`).
    if (up == 0 && ivdep && !flat) L.body = "@rows" + std::to_string(L.inst) + "@\n" + L.body;
    std::string loop;
    if (L.body.empty() && L.accs.empty()) {
      // Nothing to do in this loop (a group that only scatters, split: its combine nest follows).
    } else if (flat) {
      loop = flat_loop(f(rank), "0", count(S)) + " {\n" + indented(L.body) + "}\n";
    } else {
      const std::string iv = "i" + std::to_string(c - 1), K = dim(S[c - 1]);
      const std::string fd = "const long long " + f(c) + " = " +
                             (c == 1 ? iv : f(c - 1) + " * " + K + " + " + iv) + ";\n";
      if (L.accs.empty() || (!standalone_ && S[c - 1] <= max_literal_dim)) {
        // A short row (its size a number in the source): one running value, GCC unrolls it.
        for (const Acc& a : L.accs) {
          L.body = replaced(L.body, "@" + std::to_string(a.id) + "@", a.tail);
          defs[a.id].pending = 0;
        }
        if (L.flush.empty()) {
          loop = "for (long long " + iv + " = 0; " + iv + " < " + K + "; ++" + iv + ") {\n" +
                 indented(fd + L.body) + "}\n";
        } else {
          // In blocks, each followed by the flush; the loop inside a block is the plain loop.
          const std::string bv = "b" + iv, be = "e" + iv, B = std::to_string(row_block);
          loop = "for (long long " + bv + " = 0; " + bv + " < " + K + "; " + bv + " += " + B +
                 ") {\n  const long long " + be + " = " + K + " - " + bv + " < " + B + " ? " + K +
                 " : " + bv + " + " + B + ";\n  for (long long " + iv + " = " + bv + "; " + iv +
                 " < " + be + "; ++" + iv + ") {\n" + indented(indented(fd + L.body)) + "  }\n" +
                 indented(L.flush) + "}\n";
        }
      } else {
        // Eight independent accumulators over runs of eight (vectorizable without reassociating
        // one running sum), then the rest one by one; each iteration runs in one of the copies.
        // The eight start afresh every `reduce_block` elements and each block's are added into
        // eight more (`sa`), with Kahan's compensation for a float sum (`ca`; four operations a
        // block): the error of a float sum then grows with the block, not with n / 8 (the mean
        // of 2e7 float32 0.1s was 2.4% off before). -ffp-contract=off and no -ffast-math keep
        // the compensation as written.
        const std::string ln = "l" + std::to_string(c - 1);
        std::string main = L.body, tail = L.body, outer, init, spill, fold;
        for (const Acc& a : L.accs) {
          const std::string tok = "@" + std::to_string(a.id) + "@";
          main = replaced(main, tok, a.main);
          tail = replaced(tail, tok, a.tail);
          std::string idents = a.ident;
          for (int l = 1; l < 8; ++l) idents += ", " + a.ident;
          const std::string n = std::to_string(a.id);
          outer += a.type + " sa" + n + "[8] = {" + idents + "};\n";
          init += a.type + " a" + n + "[8] = {" + idents + "};\n";
          std::string add = a.block + "\n";
          if (a.compensated) {
            const std::string at = "[" + ln + "]", cn = "ca" + n;
            outer += a.type + " " + cn + "[8] = {" + idents + "};\n";
            add = kahan_add(a.type, "sa" + n + at, cn + at, "a" + n + at);
          }
          spill += "for (int " + ln + " = 0; " + ln + " < 8; ++" + ln + ") " + add;
          fold += "for (int " + ln + " = 0; " + ln + " < 8; ++" + ln + ") " + a.finish + "\n";
        }
        const std::string k = "k" + std::to_string(c - 1), kb = "kb" + std::to_string(c - 1);
        const std::string block = std::to_string(reduce_block);
        loop = "{\n  long long " + k + " = 0;\n  if (" + K + " >= 8) {\n" +
               indented(indented(outer + "while (" + k + " + 8 <= " + K + ") {\n" +
                                 indented(init + "const long long " + kb + " = " + K + " - " + k +
                                          " > " + block + " ? " + k + " + " + block + " : " + K +
                                          ";\n" + "for (; " + k + " + 8 <= " + kb + "; " + k +
                                          " += 8) {\n  for (int " + ln + " = 0; " + ln +
                                          " < 8; ++" + ln + ") {\n" +
                                          indented(indented("const long long " + iv + " = " + k +
                                                            " + " + ln + ";\n" + fd + main)) +
                                          "  }\n}\n" + spill) +
                                 "}\n" + fold)) +
               "  }\n  for (; " + k + " < " + K + "; ++" + k + ") {\n" +
               indented(indented("const long long " + iv + " = " + k + ";\n" + fd + tail)) +
               "  }\n}\n";
        for (const Acc& a : L.accs) defs[a.id].pending = 0;
        loop += L.flush;  // not in blocks here: the flush once, after the whole loop
      }
    }
    // GCC's pragma only: clang (XPR_CXX=clang++, or an exported source built by clang) would warn
    // on it under -Wall, and its loop stays correct unvectorized.
    if (up == 0 && ivdep) loop = "#if !defined(__clang__)\n#pragma GCC ivdep\n#endif\n" + loop;
    lv[up].body += loop + L.after;
    c = up;
  };
  auto close_to = [&](std::size_t d) {
    while (c > d) close();
  };

  // The C expression of elementwise equation `e` on operand expressions `args`.
  auto elementwise_expr = [&](const Eqn& e, const std::vector<std::string>& args) {
    CCall cc = c_call();
    cc.args = args;
    for (const Atom& a : e.inputs) cc.arg_dtypes.push_back(aval_of(a).dtype);
    cc.out = e.outputs[0].aval().dtype;
    cc.params = &e.params;
    if (e.primitive == &rt::div_p && !cc.floating())
      helpers_used_.insert(std::string("idiv_") + dtype_suffix(cc.in()));
    if (e.primitive == &rt::rem_p && !cc.floating())
      helpers_used_.insert(std::string("irem_") + dtype_suffix(cc.in()));
    if (e.primitive == &rt::convert_element_type_p && core::is_floating(cc.in()) &&
        core::is_integer(cc.out))
      helpers_used_.insert(std::string("cvt_") + dtype_suffix(cc.in()) + "_" +
                           dtype_suffix(cc.out));
    if (e.primitive == &rt::select_n_p && cc.arg_dtypes[0] == DType::int32 && cc.args.size() < 2)
      unsupported("select_n without cases");
    return find_elementwise(e.primitive)->emit(cc);
  };
  std::unordered_map<std::size_t, const Eqn*> eqn_of;  // this group's vars' equations
  for (const Eqn* e : grp.eqns) eqn_of.emplace(info(e->outputs[0]).id, e);
  // `r / y` where this group computed `r = 1 / y` (floats): `r * r`. JAX's derivative of `1 / y`
  // is `(1 / y) / y`, a second division that waits for the first; the product differs from it
  // by about an ulp (r is 1/y rounded once), within the tolerance of compiled against eager.
  auto reciprocal_over = [&](const Eqn& e) {
    if (e.primitive != &rt::div_p || !core::is_floating(e.outputs[0].aval().dtype)) return false;
    const Var* r = std::get_if<Var>(&e.inputs[0]);
    const Var* y = std::get_if<Var>(&e.inputs[1]);
    if (!r || !y || info(*r).group != gi) return false;
    auto it = eqn_of.find(info(*r).id);
    if (it == eqn_of.end() || it->second->primitive != &rt::div_p) return false;
    const Eqn& q = *it->second;
    const Literal* one = std::get_if<Literal>(&q.inputs[0]);
    const Var* qy = std::get_if<Var>(&q.inputs[1]);
    if (!one || !qy || qy->id() != y->id() || one->value.dtype() != e.outputs[0].aval().dtype ||
        r->aval().shape != y->aval().shape)
      return false;
    return one->value.dtype() == DType::float64 ? one->value.item<double>() == 1.0
                                                : one->value.item<float>() == 1.0F;
  };
  std::string extra;  // statements a recomputed read needs, before the statement using it
  // Values of a short loop (over x, y, z: a size written as a number) read by a later loop over
  // the same axis in the same row (a pair's difference vector, after the row's reduction): kept
  // in a local array of that size, which GCC keeps in registers once it unrolls both loops.
  std::set<std::size_t> kept_rows;
  auto row_name = [](std::size_t id) { return "rk" + std::to_string(id); };
  // A value of this group whose loop has ended, computed again where it is needed when that is a
  // few elementwise operations on reads (a pair's difference vector after the row's reduction):
  // cheaper than storing it and reading it back. Otherwise it is kept in a buffer.
  std::function<std::optional<std::string>(const Atom&, std::size_t, int&)> again;
  std::function<std::string(const Atom&, std::size_t)> operand;
  again = [&](const Atom& a, std::size_t at, int& budget) -> std::optional<std::string> {
    if (const Literal* l = std::get_if<Literal>(&a)) return c_literal(l->value);
    const Var& v = std::get<Var>(a);
    const VarInfo& vi = info(v);
    if (vi.group != gi) return operand(a, at);
    const Def& df = defs.at(vi.id);
    if (df.pending) return std::nullopt;
    if (df.depth <= at && lv[df.depth].inst == df.inst) return name(v);
    if (df.row && df.depth <= at && lv[df.depth - 1].inst == df.parent) {
      kept_rows.insert(vi.id);
      return row_name(vi.id) + "[i" + std::to_string(df.depth - 1) + "]";
    }
    if (budget-- <= 0) return std::nullopt;
    const Eqn& pe = *eqn_of.at(vi.id);
    const std::size_t r = v.aval().ndim();
    if (fusable_read(pe) && in_loops(v.aval().shape)) {
      std::vector<std::string> ix;
      for (std::size_t k = 0; k < r; ++k) ix.push_back("i" + std::to_string(k));
      return indexed_read(pe, ix, f(r), g, pre, extra);
    }
    if (pe.primitive == &rt::broadcast_in_dim_p) {
      const Atom& b = pe.inputs[0];
      const Var* bv = std::get_if<Var>(&b);
      if (!bv || bv->aval().ndim() == 0) return again(b, at, budget);
      if (info(*bv).group != gi) return std::nullopt;
      const auto& bd = pe.params.get<rt::Axes>("broadcast_dimensions");
      if (reader_of_.count(info(*bv).id)) {
        std::vector<std::string> ix;
        for (std::size_t k = 0; k < bv->aval().ndim(); ++k)
          ix.push_back(bv->aval().shape[k] == 1 ? "0" : "i" + std::to_string(bd[k]));
        return indexed_read(*reader_of_.at(info(*bv).id), ix, "", g, pre, extra);
      }
      return again(b, at, budget);  // this group's, along trailing axes (joins checked that)
    }
    if (!find_elementwise(pe.primitive)) return std::nullopt;
    std::vector<std::string> args;
    for (const Atom& b : pe.inputs) {
      std::optional<std::string> x = again(b, at, budget);
      if (!x) return std::nullopt;
      args.push_back(std::move(*x));
    }
    return elementwise_expr(pe, args);
  };
  operand = [&](const Atom& a, std::size_t at) -> std::string {
    if (const Literal* l = std::get_if<Literal>(&a)) return c_literal(l->value);
    const Var& v = std::get<Var>(a);
    VarInfo& vi = info(v);
    if (vi.group == gi) {
      const Def& df = defs.at(vi.id);
      if (df.depth <= at && lv[df.depth].inst == df.inst) return name(v);
      int budget = 6;
      const std::size_t mark = extra.size();
      if (std::optional<std::string> x = again(a, at, budget)) return *x;
      extra.resize(mark);
      if (dry_run) vi.spill = true;  // its loop has ended: read back from its buffer
    }
    auto it = read_name.find(vi.id);
    if (it != read_name.end()) return it->second;
    std::string p = "p" + std::to_string(vi.id);
    std::string t = c_type(v.aval().dtype);
    std::string expr;
    if (v.aval().ndim() == 0) {
      if (vi.group == gi) {
        // Written by this group, so read where it is used, not before the loops.
        pre += "  const " + t + "* __restrict " + p + " = " + ptr(v) + ";\n";
        expr = p + "[0]";
      } else {
        pre += "  const " + t + " " + p + " = " + ptr(v) + "[0];\n";
        expr = p;
      }
    } else {
      pre += "  const " + t + "* __restrict " + p + " = " + ptr(v) + ";\n";
      expr = p + "[" + f(v.aval().ndim()) + "]";
    }
    read_name.emplace(vi.id, expr);
    return expr;
  };
  auto store = [&](const Var& o, std::size_t d, Level& L) {
    if (info(o).buffer < 0) return;
    const std::string t = c_type(o.aval().dtype);
    const std::string on = "o" + std::to_string(info(o).id);
    pre += "  " + t + "* __restrict " + on + " = " + ptr(o, true) + ";\n";
    L.body += on + "[" + f(d) + "] = " + name(o) + ";\n";
  };

  for (const Eqn* ep : grp.eqns) {
    const Eqn& e = *ep;
    const Var& o = e.outputs[0];
    const std::string t = c_type(o.aval().dtype);
    const bool red = fusable_reduce(e);
    const std::size_t d = o.aval().ndim();
    const bool rsink = sink_reduce(e);
    const bool sink = is_scatter(e.primitive) || rsink;
    // The depth the equation's work happens at: a reduction's operand's, a scatter's updates'.
    const std::size_t at = red || rsink ? aval_of(e.inputs[0]).ndim()
                           : sink       ? aval_of(e.inputs[2]).ndim()
                                        : d;
    // A reduction's result is ready once its loop has ended.
    for (const Atom& a : e.inputs)
      if (const Var* v = std::get_if<Var>(&a); v && info(*v).group == gi) {
        const Def& df = defs.at(info(*v).id);
        if (df.pending) close_to(df.pending - 1);
      }
    if (fusable_read(e) && !in_loops(o.aval().shape)) {
      // Not of the loops' shape: read where another read composes it, and into its buffer by a
      // loop nest of its own when another group needs it.
      defs[info(o).id] = Def{};
      if (info(o).buffer < 0) continue;
      std::vector<std::string> ix;
      std::string open_loops, close_loops, ind;
      for (std::size_t k = 0; k < d; ++k) {
        const std::string m = "m" + std::to_string(k);
        ix.push_back(m);
        open_loops += ind + "for (long long " + m + " = 0; " + m + " < " + dim(o.aval().shape[k]) +
                      "; ++" + m + ") {\n";
        close_loops = ind + "}\n" + close_loops;
        ind += "  ";
      }
      std::string stmts;
      const std::string x = indexed_read(e, ix, "", g, pre, stmts);
      std::string flat_at;
      for (std::size_t k = 0; k < d; ++k)
        flat_at += (k ? " + " : "") + ix[k] + " * (" + stride(o.aval().shape, k) + ")";
      std::string inner = stmts + "static_cast<" + t + "*>(" + buf(o) + ")[" +
                          (flat_at.empty() ? "0" : flat_at) + "] = " + x + ";\n";
      for (std::size_t k = 0; k < d; ++k) inner = indented(inner);
      lv[0].body += "{\n" + indented(open_loops + inner + close_loops) + "}\n";
      continue;
    }
    if (sink) {
      // The operand copied into the result before the loops, then each update combined into it.
      const std::string on = "o" + std::to_string(info(o).id);
      pre += "  " + t + "* __restrict " + on + " = " + ptr(o, true) + ";\n";
      std::string copy_stmts;
      const std::string from = rsink ? reduce_identity(e.primitive, o.aval().dtype)
                                     : read_operand(e, 0, {}, "q", g, pre, copy_stmts);
      lv[0].body += copy_stmts + "for (long long q = 0, qn = " + count(o.aval().shape) +
                    "; q < qn; ++q) " + on + "[q] = " + from + ";\n";
    }
    if (flat) {
      if (at == rank && c == 0) open();
    } else {
      while (c < at) open();
    }
    Level& L = lv[at];  // deeper loops stay open: this goes before them
    if (sink) {
      std::string stmts;
      if (rsink) {
        const auto& axes = e.params.get<rt::Axes>("axes");
        std::vector<std::string> kept;
        for (std::size_t k = 0; k < at; ++k)
          if (std::find(axes.begin(), axes.end(), static_cast<std::int64_t>(k)) == axes.end())
            kept.push_back("i" + std::to_string(k));
        const std::string on = "o" + std::to_string(info(o).id);
        const std::string cell = on + "[" + linear(o.aval().shape, kept) + "]";
        // Reduced over the loop just outside the last axis only (the transpose of the broadcast
        // `pos[None, :, :]`): that loop's iterations would all combine into the same cells, a
        // chain through memory that keeps GCC from vectorizing it. Where the last axis is short
        // (a number in the source: x, y, z), the cells are a local array declared before that
        // loop, which GCC keeps in registers, and stored after it (`regs`). Otherwise the
        // operand is stored in its buffer and combined after the loop. A maximum or minimum
        // combines in the interpreter's order; a float sum in blocks with Kahan's compensation.
        const Var& src = std::get<Var>(e.inputs[0]);
        VarInfo& si = info(src);
        auto sd = defs.find(si.id);
        const bool fits = at >= 2 && axes.size() == 1 &&
                          axes[0] == static_cast<std::int64_t>(at - 2) && si.group == gi &&
                          sd != defs.end() && !sd->second.pending && sd->second.depth == at &&
                          lv[at].inst == sd->second.inst;
        const bool regs = fits && !standalone_ && S[at - 1] >= 1 && S[at - 1] <= max_literal_dim;
        const bool after = fits && !regs && (dry_run || si.buffer >= 0);
        if (regs) {
          const DType dt = o.aval().dtype;
          const std::string n = std::to_string(info(o).id), ra = "ra" + n, K = dim(S[at - 1]);
          const std::string il = "i" + std::to_string(at - 1), jl = "j" + std::to_string(at - 1);
          std::string init = reduce_identity(e.primitive, dt);
          for (std::int64_t k = 1; k < S[at - 1]; ++k)
            init += ", " + reduce_identity(e.primitive, dt);
          lv[at - 2].body += t + " " + ra + "[" + K + "] = {" + init + "};\n";
          stmts = ra + "[" + il + "] = " +
                  reduce_combine(e.primitive, dt, ra + "[" + il + "]", operand(e.inputs[0], at)) +
                  ";\n";
          kept.back() = jl;  // the last axis is kept (sink_reduce)
          const std::string c2 = on + "[" + linear(o.aval().shape, kept) + "]";
          std::string total = ra + "[" + jl + "]";
          if (e.primitive == &rt::reduce_sum_p && core::is_floating(dt)) {
            // A float sum: the loop runs in blocks, each block's sums added into `rs` with
            // Kahan's compensation (`rc`) and started again, so the error grows with the block,
            // not with the loop's length (2e6 float32 rows: 8e-3 row by row).
            const std::string rs = "rs" + n, rc = "rc" + n, at_l = "[" + jl + "]";
            lv[at - 2].body += t + " " + rs + "[" + K + "] = {" + init + "};\n" + t + " " + rc +
                               "[" + K + "] = {" + init + "};\n";
            lv[at - 1].flush += "for (long long " + jl + " = 0; " + jl + " < " + K + "; ++" + jl +
                                ") {\n" +
                                indented(kahan_add(t, rs + at_l, rc + at_l, ra + at_l) + ra + at_l +
                                         " = " + reduce_identity(e.primitive, dt) + ";\n") +
                                "}\n";
            total = rs + at_l;
          }
          lv[at - 1].after += "for (long long " + jl + " = 0; " + jl + " < " + K + "; ++" + jl +
                              ") " + c2 + " = " + reduce_combine(e.primitive, dt, c2, total) +
                              ";\n";
        } else if (after && dry_run) {
          si.spill = true;
        } else if (after) {
          const std::string ja = "j" + std::to_string(at - 2), jl = "j" + std::to_string(at - 1);
          kept.back() = jl;  // the last axis is kept (sink_reduce)
          std::vector<std::string> at_src;
          for (std::size_t k = 0; k + 2 < at; ++k) at_src.push_back("i" + std::to_string(k));
          at_src.push_back(ja);
          at_src.push_back(jl);
          const std::string c2 = on + "[" + linear(o.aval().shape, kept) + "]";
          const std::string x =
              "o" + std::to_string(si.id) + "[" + linear(src.aval().shape, at_src) + "]";
          const DType dt = o.aval().dtype;
          if (e.primitive == &rt::reduce_sum_p && core::is_floating(dt)) {
            // A float sum: blocked_column_sums over the rows of the stored operand.
            const std::string src_buf = "o" + std::to_string(si.id);
            lv[at - 1].after += blocked_column_sums(
                t, dim(S[at - 2]), dim(S[at - 1]), std::to_string(info(o).id),
                [&](const std::string& r, const std::string& col) {
                  std::vector<std::string> ix = at_src;
                  ix[ix.size() - 2] = r;
                  ix.back() = col;
                  return src_buf + "[" + linear(src.aval().shape, ix) + "]";
                },
                [&](const std::string& col) {
                  std::vector<std::string> ix = kept;
                  ix.back() = col;
                  return on + "[" + linear(o.aval().shape, ix) + "]";
                });
          } else {
            lv[at - 1].after += "for (long long " + ja + " = 0; " + ja + " < " + dim(S[at - 2]) +
                                "; ++" + ja + ")\n  for (long long " + jl + " = 0; " + jl + " < " +
                                dim(S[at - 1]) + "; ++" + jl + ")\n    " + c2 + " = " +
                                reduce_combine(e.primitive, dt, c2, x) + ";\n";
          }
        }
        if (!regs && (!after || dry_run))
          stmts = cell + " = " +
                  reduce_combine(e.primitive, o.aval().dtype, cell, operand(e.inputs[0], at)) +
                  ";\n";
      } else if (split) {
        // The update is stored where it is computed (its buffer) and combined after the loops.
        // The negation of a value of the loops (the cotangent of `ri - rj`'s second operand,
        // whose first operand's is the value itself) is negated in the combine instead: its
        // operand is stored once for both scatters.
        const Var* u = &std::get<Var>(e.inputs[2]);
        bool negated = false;
        if (auto it = eqn_of.find(info(*u).id);
            info(*u).group == gi && it != eqn_of.end() && it->second->primitive == &rt::neg_p)
          if (const Var* w = std::get_if<Var>(&it->second->inputs[0]);
              w && info(*w).group == gi && w->aval().shape == u->aval().shape) {
            u = w;
            negated = true;
          }
        VarInfo& ui = info(*u);
        std::string update;
        if (ui.group == gi && dry_run) {
          ui.spill = true;
          update = "0";
        } else if (ui.group == gi) {
          update = "o" + std::to_string(ui.id) + "[" + f(at) + "]";
          if (negated) {
            CCall nc = c_call();
            nc.args = {update};
            nc.arg_dtypes = {u->aval().dtype};
            nc.out = u->aval().dtype;
            update = c_expr<op::neg>::emit(nc);
          }
        } else {
          update = operand(e.inputs[2], at);
        }
        std::string combine = scatter_runs(e, update, g, S, at, pre);
        const bool nest = !combine.empty();
        if (!nest) scatter_into(e, update, g, pre, combine);
        combines.push_back(Combine{at, std::move(combine), nest});
      } else {
        scatter_into(e, operand(e.inputs[2], at), g, pre, stmts);
      }
      L.body += extra + stmts;
      extra.clear();
      defs[info(o).id] = Def{};
      if (dry_run) info(o).spill = true;  // always stored: the kernel writes it
      continue;
    }
    if (red) {
      const DType dt = aval_of(e.inputs[0]).dtype;
      const std::string id = std::to_string(info(o).id), v = name(o);
      const std::string r = "r" + id;
      const std::string x = operand(e.inputs[0], at);
      L.body += extra + "const " + t + " " + r + " = " + x + ";\n@" + id + "@\n";
      extra.clear();
      lv[d].body += t + " " + v + " = " + reduce_identity(e.primitive, dt) + ";\n";
      const std::string lane = "[l" + std::to_string(d) + "]";
      const std::string acc = "a" + id + lane, sum = "sa" + id + lane;
      L.accs.push_back(Acc{info(o).id, t, reduce_identity(e.primitive, dt),
                           acc + " = " + reduce_combine(e.primitive, dt, acc, r) + ";",
                           v + " = " + reduce_combine(e.primitive, dt, v, r) + ";",
                           sum + " = " + reduce_combine(e.primitive, dt, sum, acc) + ";",
                           v + " = " + reduce_combine(e.primitive, dt, v, sum) + ";",
                           e.primitive == &rt::reduce_sum_p && core::is_floating(dt)});
      defs[info(o).id] = Def{d, lv[d].inst, at};
      if (info(o).buffer >= 0) {
        const std::string on = "o" + id;
        pre += "  " + t + "* __restrict " + on + " = " + ptr(o, true) + ";\n";
        L.after += on + "[" + f(d) + "] = " + v + ";\n";
      }
      continue;
    }
    std::string expr;
    if (fusable_read(e)) {
      std::vector<std::string> ix;
      for (std::size_t k = 0; k < d; ++k) ix.push_back("i" + std::to_string(k));
      std::string stmts;
      expr = indexed_read(e, ix, f(d), g, pre, stmts);
      L.body += stmts;
    } else if (e.primitive == &rt::broadcast_in_dim_p) {
      const Atom& a = e.inputs[0];
      const ShapedArray& in = aval_of(a);
      const Var* av = std::get_if<Var>(&a);
      const auto& bd = e.params.get<rt::Axes>("broadcast_dimensions");
      bool trailing = in.ndim() <= bd.size();  // adds trailing axes only
      for (std::size_t k = 0; trailing && k < in.ndim(); ++k)
        trailing = bd[k] == static_cast<std::int64_t>(k) && in.shape[k] == o.aval().shape[k];
      if (av && info(*av).group == gi && reader_of_.count(info(*av).id) && !trailing) {
        // A read of this group, composed: stride 0 along the broadcast dimensions.
        std::vector<std::string> ix;
        for (std::size_t k = 0; k < in.ndim(); ++k)
          ix.push_back(in.shape[k] == 1 ? "0" : "i" + std::to_string(bd[k]));
        std::string stmts;
        expr = indexed_read(*reader_of_.at(info(*av).id), ix, "", g, pre, stmts);
        L.body += stmts;
      } else if (in.ndim() == 0 || in.shape == o.aval().shape || (av && info(*av).group == gi)) {
        expr = operand(a, at);  // a scalar, the same shape, or this group's (outer axes)
      } else {
        // A strided read of a buffered operand: stride 0 along broadcast dimensions.
        std::string p = "q" + std::to_string(info(o).id);
        pre += "  const " + std::string(c_type(in.dtype)) + "* __restrict " + p + " = " + ptr(*av) +
               ";\n";
        std::string idx;
        for (std::size_t k = 0; k < bd.size(); ++k) {
          if (in.shape[k] == 1) continue;
          idx += (idx.empty() ? "" : " + ") + std::string("i") + std::to_string(bd[k]) + " * (" +
                 stride(in.shape, k) + ")";
        }
        expr = p + "[" + (idx.empty() ? "0" : idx) + "]";
      }
    } else {
      std::vector<std::string> args;
      for (const Atom& a : e.inputs) args.push_back(operand(a, at));
      expr = reciprocal_over(e) ? "(" + args[0] + " * " + args[0] + ")" : elementwise_expr(e, args);
    }
    L.body += extra;
    extra.clear();
    L.body += "const " + t + " " + name(o) + " = " + expr + ";\n";
    const bool row = !flat && d > 0 && !standalone_ && S[d - 1] <= max_literal_dim;
    if (row) L.body += "@" + row_name(info(o).id) + "@\n";  // where the row is kept, if it is
    defs[info(o).id] = Def{d, lv[d].inst, 0, d > 0 ? lv[d - 1].inst : 0, row};
    store(o, d, L);
  }
  close_to(0);
  // split: the scatters' combines, in the interpreter's (row-major) order of each scatter's
  // updates; consecutive scatters of the same depth share a loop nest (they write different
  // results, none of which the others read).
  for (std::size_t k = 0; k < combines.size();) {
    if (combines[k].nest) {
      lv[0].body += combines[k++].code;
      continue;
    }
    const std::size_t depth = combines[k].depth;
    std::string inner;
    for (; k < combines.size() && !combines[k].nest && combines[k].depth == depth; ++k)
      inner += combines[k].code;
    for (std::size_t d = depth; d-- > 0;) {
      const std::string iv = "i" + std::to_string(d);
      inner = "for (long long " + iv + " = 0; " + iv + " < " + dim(S[d]) + "; ++" + iv + ") {\n" +
              indented("const long long " + f(d + 1) + " = " +
                       (d == 0 ? iv : f(d) + " * " + dim(S[d]) + " + " + iv) + ";\n" + inner) +
              "}\n";
    }
    lv[0].body += inner;
  }
  std::string body = lv[0].body;
  std::map<long long, std::string> rows;  // outer loop instance -> the rows it declares
  bool keep_ivdep = ivdep;
  for (std::size_t id : kept_rows) {
    const Def& df = defs.at(id);
    const Var& v = eqn_of.at(id)->outputs[0];
    const std::string decl = std::string(c_type(v.aval().dtype)) + " " + row_name(id) + "[" +
                             std::to_string(S[df.depth - 1]) + "];";
    if (ivdep && df.depth == 2) {
      std::string& r = rows[df.parent];
      r += (r.empty() ? "" : " ") + decl;
    } else {
      // A row over the outer loop itself is that loop's own; a row deeper down is shared by the
      // outer loop's iterations, which then are not independent.
      if (df.depth > 2) keep_ivdep = false;
      pre += "  " + decl + "\n";
    }
    body = replaced(body, "@" + row_name(id) + "@",
                    row_name(id) + "[i" + std::to_string(df.depth - 1) + "] = " + name(v) + ";");
  }
  body = without_lines(body, "@rk");  // the rows nobody reads again
  for (const auto& [inst, decls] : rows)
    body = replaced(body, "@rows" + std::to_string(inst) + "@", decls);
  body = without_lines(body, "@rows");
  if (!keep_ivdep) body = without_lines(body, "#pragma GCC ivdep");
  if (!range_checks_.empty()) {
    // The clamps of index reads run only when some index is out of range: the loops twice, the
    // first copy without them (GCC then drops the out-of-bounds tests and fills as well).
    std::string any, checked = body;
    for (std::size_t k = 0; k < range_checks_.size(); ++k) {
      const std::string flag = "ck" + std::to_string(k);  // range_check's names
      any += (any.empty() ? "" : " || ") + flag;
      checked = replaced(checked, "@" + flag + "@", "if (" + flag + ") ");
    }
    pre += indented(range_check_code_);
    body = "if (!(" + any + ")) {\n" + indented(without_lines(body, "@ck")) + "} else {\n" +
           indented(checked) + "}\n";
  }
  parts_index_.clear();
  // A flat loop reduces, scatters and reads by index nothing (see `flat` above); what is left to
  // rule out is a value stored outside the loop, which every part would store again: a scalar
  // result (`o[0] = ...` before the loop) or a read of another shape copied into its buffer.
  if (!dry_run && flat && range_checks_.empty()) {
    // Worth splitting when the loop runs for well over a hundred microseconds (waking a worker
    // costs tens of them in a virtual machine): an element costs about 8 units of memory
    // traffic, plus 1 per arithmetic operation and 16 per libm function (libmvec's sin takes
    // about as long as a 16-byte element takes to stream from memory on one core). Measured
    // on the 2-core machine of docs/codegen.md: `sin(x) * 2 - x` (threshold 161319) and
    // `x * 2 + 1` (419430) gain from 262144 and 524288 elements, and split at 65536 and
    // 131072 they lose or break even.
    std::size_t weight = 0;
    bool disjoint = true;
    for (const Eqn* e : grp.eqns) {
      const Var& o = e->outputs[0];
      if ((o.aval().ndim() == 0 && info(o).buffer >= 0) ||
          (fusable_read(*e) && !in_loops(o.aval().shape)))
        disjoint = false;
      const ElementwiseRow* r = find_elementwise(e->primitive);
      weight += r && r->floating_only_math ? 16 : 1;
    }
    const std::string loop = flat_loop(f(rank), "0", count(S));
    std::size_t loops = 0;
    for (std::size_t at = body.find(loop); at != std::string::npos; at = body.find(loop, at + 1))
      ++loops;
    if (disjoint && loops == 1) {
      parts_index_ = f(rank);
      parts_count_ = count(S);
      parts_min_ =
          std::to_string(std::max<std::size_t>(16384, (std::size_t{1} << 22) / (weight + 8)));
    }
  }
  return pre + indented(body);
}

XPR_FUNC std::string Lowering::linear(const core::Shape& shape,
                                      const std::vector<std::string>& at) const {
  std::string r;
  for (std::size_t k = 0; k < at.size(); ++k)
    r += (r.empty() ? "(" : " + (") + at[k] + ") * (" + stride(shape, k) + ")";
  return r.empty() ? std::string("0") : r;
}

XPR_FUNC std::string Lowering::read_operand(const Eqn& e, std::size_t k,
                                            const std::vector<std::string>& at,
                                            const std::string& pos, std::size_t g, std::string& pre,
                                            std::string& stmts) {
  const Var& v = std::get<Var>(e.inputs[k]);
  const VarInfo& vi = info(v);
  if (vi.group == static_cast<int>(g))
    return indexed_read(*reader_of_.at(vi.id), at, pos, g, pre, stmts);
  const std::string nm = "x" + std::to_string(vi.id);
  if (pre.find(" " + nm + " = ") == std::string::npos)
    pre += "  const " + std::string(c_type(v.aval().dtype)) + "* __restrict " + nm + " = " +
           ptr(v) + ";\n";
  return nm + "[" + (pos.empty() ? linear(v.aval().shape, at) : pos) + "]";
}

XPR_FUNC std::string Lowering::indexed_read(const Eqn& e, const std::vector<std::string>& ix,
                                            std::string flat, std::size_t g, std::string& pre,
                                            std::string& stmts) {
  const ShapedArray& oa = e.outputs[0].aval();
  const Primitive* p = e.primitive;
  const std::string uid = std::to_string(next_read_++);
  if (flat.empty()) flat = linear(oa.shape, ix);
  auto read = [&](std::size_t k, const std::vector<std::string>& at, const std::string& pos) {
    return read_operand(e, k, at, pos, g, pre, stmts);
  };
  if (p == &rt::reshape_p || p == &rt::squeeze_p || p == &rt::expand_dims_p) {
    // Row-major order is kept: the same position. The operand's index, for a composed read: its
    // axes of size > 1 take this result's in order, its axes of size 1 take 0.
    const ShapedArray& in = aval_of(e.inputs[0]);
    std::vector<std::string> at;
    std::size_t k = 0;
    for (std::int64_t d : in.shape) {
      while (k < oa.ndim() && oa.shape[k] == 1 && d != 1) ++k;
      if (d == 1) {
        at.push_back("0");
        if (k < oa.ndim() && oa.shape[k] == 1) ++k;
      } else {
        at.push_back(k < ix.size() ? ix[k] : "0");
        ++k;
      }
    }
    return read(0, at, flat);
  }
  if (p == &rt::iota_p) {
    auto d = static_cast<std::size_t>(e.params.get<std::int64_t>("dimension"));
    if (d >= oa.ndim()) unsupported("iota's dimension");
    return "static_cast<" + std::string(c_type(oa.dtype)) + ">(" + ix[d] + ")";
  }
  if (p == &rt::slice_p) {
    const auto& start = e.params.get<rt::Axes>("start_indices");
    const rt::ParamValue* sv = e.params.find("strides");
    const rt::Axes* st = sv ? std::get_if<rt::Axes>(sv) : nullptr;
    if (start.size() != oa.ndim() || (st && st->size() != oa.ndim()))
      unsupported("slice's indices");
    // Each index in parentheses: a composed read's index is an expression (x[::2][1:] reads
    // x at (1 + i) * 2, not at 1 + i * 2).
    std::vector<std::string> at;
    for (std::size_t k = 0; k < oa.ndim(); ++k)
      at.push_back("(" + std::to_string(start[k]) + "LL + (" + ix[k] + ") * " +
                   std::to_string(st ? (*st)[k] : 1) + "LL)");
    return read(0, at, "");
  }
  if (p == &rt::transpose_p) {
    const auto& perm = e.params.get<rt::Axes>("permutation");
    if (perm.size() != oa.ndim()) unsupported("transpose's permutation");
    std::vector<std::string> at(perm.size());
    for (std::size_t k = 0; k < perm.size(); ++k) at[static_cast<std::size_t>(perm[k])] = ix[k];
    return read(0, at, "");
  }
  if (p == &rt::concatenate_p) {
    auto d = static_cast<std::size_t>(e.params.get<std::int64_t>("dimension"));
    if (e.inputs.empty() || d >= oa.ndim()) unsupported("concatenate's operands");
    // The operand holding index ix[d] along the axis: a chain of comparisons with the offsets.
    std::vector<std::string> reads, ends;
    std::string offset = "0LL";
    for (std::size_t k = 0; k < e.inputs.size(); ++k) {
      std::vector<std::string> at = ix;
      at[d] = "(" + ix[d] + " - (" + offset + "))";
      const std::string r = read(k, at, "");
      offset += " + " + dim(aval_of(e.inputs[k]).shape[d]);
      reads.push_back(r);
      ends.push_back(offset);
    }
    std::string expr = reads.back();
    for (std::size_t k = reads.size() - 1; k-- > 0;)
      expr = "(" + ix[d] + " < " + ends[k] + " ? " + reads[k] + " : " + expr + ")";
    // Each operand is read only where it is the one: a read of another would be out of its
    // bounds. GCC 12 at -O3 makes such reads masked vector loads, and in short unrolled loops it
    // used another lane's mask (a sum over a concatenation of (1, 5, 4) and (1, 1, 4) came out
    // permuted); the loop's function is compiled without loop if-conversion (`emit_group`).
    conditional_reads_ = true;
    return expr;
  }
  // gather: the window of the index vector at the batch position, as emit_gather reads it.
  const auto& dn = e.params.get<rt::GatherDimensionNumbers>("dimension_numbers");
  const rt::Axes& ss = e.params.get<rt::Axes>("slice_sizes");
  const bool drop =
      e.params.get<rt::GatherScatterMode>("mode") == rt::GatherScatterMode::fill_or_drop;
  const ShapedArray& xa = aval_of(e.inputs[0]);
  const ShapedArray& ia = aval_of(e.inputs[1]);
  const auto window =
      rt::detail::gs::window_dims(xa.ndim(), dn.collapsed_slice_dims, dn.operand_batching_dims);
  std::vector<std::size_t> bpos;  // output dimension of each batch dimension of the indices
  for (std::size_t o = 0; o < oa.ndim(); ++o)
    if (!rt::detail::gs::contains(dn.offset_dims, static_cast<std::int64_t>(o))) bpos.push_back(o);
  const std::string oob = "goob" + uid;
  if (drop) stmts += "bool " + oob + " = false;\n";
  // The index vector's element k: the indices at the batch position, then k (its last axis).
  std::vector<std::string> row;
  for (std::size_t b = 0; b < bpos.size(); ++b) row.push_back(ix[bpos[b]]);
  std::vector<std::string> at(xa.ndim(), "0");
  std::vector<std::string> start(xa.ndim());
  for (std::size_t k = 0; k < dn.start_index_map.size(); ++k) {
    const auto d = static_cast<std::size_t>(dn.start_index_map[k]);
    const std::string sk = "gs" + uid + "_" + std::to_string(k);
    std::vector<std::string> at_k = row;
    if (at_k.size() < ia.ndim()) at_k.push_back(std::to_string(k));
    const std::string elem = read(1, at_k, "");
    const std::size_t K =
        at_k.size() > row.size() ? static_cast<std::size_t>(ia.shape[ia.ndim() - 1]) : 1;
    const std::string check =
        range_check(e.inputs[1], k, K, "(" + dim(xa.shape[d]) + " - " + dim(ss[d]) + ")", g, pre);
    stmts += window_start(sk, elem, xa.shape[d], ss[d], drop, oob, check);
    start[d] = sk;
  }
  for (std::size_t b = 0; b < dn.operand_batching_dims.size(); ++b)
    start[static_cast<std::size_t>(dn.operand_batching_dims[b])] =
        ix[bpos[static_cast<std::size_t>(dn.start_indices_batching_dims[b])]];
  for (std::size_t w = 0; w < window.size(); ++w) {
    const std::string& o = ix[static_cast<std::size_t>(dn.offset_dims[w])];
    start[window[w]] = start[window[w]].empty() ? o : start[window[w]] + " + " + o;
  }
  for (std::size_t k = 0; k < xa.ndim(); ++k) at[k] = start[k].empty() ? "0" : start[k];
  const std::string x = read(0, at, "");
  if (!drop) return x;
  helpers_used_.insert(std::string("pick_") + dtype_suffix(oa.dtype));
  return "xpr_pick_" + std::string(dtype_suffix(oa.dtype)) + "(" + oob + ", " +
         fill_literal(e.params, oa.dtype) + ", " + x + ")";
}

XPR_FUNC std::string Lowering::nest(const core::Shape& shape, const std::string& body,
                                    const std::string& ivar) {
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

XPR_FUNC std::string Lowering::in_ptr(const Atom& a, std::string& pre, const std::string& name_) {
  std::string t = c_type(aval_of(a).dtype);
  if (const Literal* l = std::get_if<Literal>(&a)) {
    pre += "  const " + t + " " + name_ + "_v[1] = {" + c_literal(l->value) + "};\n";
    pre += "  const " + t + "* __restrict " + name_ + " = " + name_ + "_v;\n";
  } else {
    pre += "  const " + t + "* __restrict " + name_ + " = " + ptr(std::get<Var>(a)) + ";\n";
  }
  return name_;
}

XPR_FUNC std::string Lowering::emit_standalone(const Eqn& e) {
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
      idx += (k ? " + " : "") + (r ? "(" + dim(oa.shape[k]) + " - 1 - " + ik + ")" : ik) + " * (" +
             stride(oa.shape, k) + ")";
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
             std::to_string(k) + " * " + std::to_string(s) + "LL) * (" + stride(in.shape, k) + ")";
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
  if (p == &rt::argmax_p || p == &rt::argmin_p) {
    // The interpreter's walk (rt/prims/argminmax.hpp): x as (outer, n, inner), the first extreme
    // along the middle axis; a NaN after a number wins (`w != w`), ties keep the lower index.
    const ShapedArray& in = aval_of(e.inputs[0]);
    const auto a = static_cast<std::size_t>(e.params.get<rt::Axes>("axes")[0]);
    in_ptr(e.inputs[0], pre, "x");
    const std::string xt = c_type(in.dtype);
    const std::string better = p == &rt::argmax_p ? "v < w" : "w < v";
    return pre + outer_n_inner(in.shape, a) +
           "  for (long long i = 0; i < O; ++i)\n"
           "    for (long long j = 0; j < I; ++j) {\n"
           "      const " +
           xt +
           "* r = x + i * N * I + j;\n"
           "      " +
           xt +
           " v = r[0];\n"
           "      long long k = 0;\n"
           "      for (long long m = 1; m < N; ++m) {\n"
           "        const " +
           xt +
           " w = r[m * I];\n"
           "        if (v == v && (" +
           better +
           " || w != w)) {\n"
           "          v = w;\n"
           "          k = m;\n"
           "        }\n"
           "      }\n"
           "      o[i * I + j] = static_cast<" +
           t +
           ">(k);\n"
           "    }\n";
  }
  if (const auto* cum = dynamic_cast<const rt::CumulativeReduction*>(p)) {
    // The interpreter's walk (rt/prims/cumsum.hpp): x as (outer, n, inner), the first row as it
    // starts (sums from 0, so -0.0 gives +0.0 as XLA's does), then each row the previous running
    // value `p` combined with its element `v` by the interpreter's expression (max and min carry
    // a NaN; -fwrapv wraps integers). A row at a time, so the inner loop runs over contiguous
    // elements and vectorizes.
    const ShapedArray& in = aval_of(e.inputs[0]);
    const auto a = static_cast<std::size_t>(e.params.get<std::int64_t>("axis"));
    const bool reverse = e.params.get<bool>("reverse");
    in_ptr(e.inputs[0], pre, "x");
    std::string combine;
    switch (cum->kind()) {
      case rt::Cumulative::sum:
        combine = "p + v";
        break;
      case rt::Cumulative::prod:
        combine = "p * v";
        break;
      case rt::Cumulative::max:
        combine = "p != p ? p : v != v ? v : v > p ? v : p";
        break;
      case rt::Cumulative::min:
        combine = "p != p ? p : v != v ? v : v < p ? v : p";
        break;
      case rt::Cumulative::logsumexp: {
        // logaddexp, as the interpreter's kernel: floats only (abstract_eval checked it).
        CCall c = c_call();
        c.arg_dtypes = {in.dtype};
        c.out = in.dtype;
        const std::string fabs = in.dtype == DType::float32 ? "__builtin_fabsf" : "__builtin_fabs";
        combine = "(p - v) != (p - v) ? p + v : (p > v ? p : v) + " +
                  c.math("log1p", c.math("exp", "-" + fabs + "(p - v)"));
        break;
      }
    }
    const std::string start =
        cum->kind() == rt::Cumulative::sum ? "static_cast<" + t + ">(0) + x[r + j]" : "x[r + j]";
    const std::string row = std::string("i * N * I + (") + (reverse ? "N - 1 - m" : "m") + ") * I";
    return pre + outer_n_inner(in.shape, a) +
           "  for (long long i = 0; i < O && N > 0; ++i) {\n"
           "    {\n"
           "      const long long m = 0, r = " +
           row +
           ";\n"
           "      for (long long j = 0; j < I; ++j) o[r + j] = static_cast<" +
           t + ">(" + start +
           ");\n"
           "    }\n"
           "    for (long long m = 1; m < N; ++m) {\n"
           "      const long long r = " +
           row + ", q = r " + (reverse ? "+" : "-") +
           " I;\n"
           "      for (long long j = 0; j < I; ++j) {\n"
           "        const " +
           t +
           " p = o[q + j], v = x[r + j];\n"
           "        o[r + j] = static_cast<" +
           t + ">(" + combine +
           ");\n"
           "      }\n"
           "    }\n"
           "  }\n";
  }
  if (is_reduce(p)) return pre + emit_reduce(e);
  if (p == &rt::dot_general_p) return pre + emit_dot(e);
  if (p == &rt::dynamic_slice_p || p == &rt::dynamic_update_slice_p)
    return pre + emit_dynamic_slice(e, p == &rt::dynamic_update_slice_p);
  if (p == &rt::gather_p) return pre + emit_gather(e);
  if (is_scatter(p)) return pre + emit_scatter(e);
  unsupported("'" + p->name() + "'");
}

XPR_FUNC std::string Lowering::loops(const core::Shape& shape,
                                     const std::vector<std::size_t>& order, const std::string& body,
                                     const std::string& ivar) {
  std::string open, close, ind = "  ";
  for (std::size_t d : order) {
    std::string iv = ivar + std::to_string(d);
    open += ind + "for (long long " + iv + " = 0; " + iv + " < " + dim(shape[d]) + "; ++" + iv +
            ") {\n";
    close = ind + "}\n" + close;
    ind += "  ";
  }
  std::string b, line;
  for (char c : body) {
    line += c;
    if (c == '\n') {
      b += ind + line;
      line.clear();
    }
  }
  if (!line.empty()) b += ind + line + "\n";
  return open + b + close;
}

XPR_FUNC std::string Lowering::emit_dynamic_slice(const Eqn& e, bool update) {
  const ShapedArray& x = aval_of(e.inputs[0]);
  const ShapedArray& w = update ? aval_of(e.inputs[1]) : e.outputs[0].aval();
  const std::size_t first = update ? 2 : 1;
  if (e.inputs.size() != first + x.ndim()) unsupported("'" + e.primitive->name() + "' operands");
  std::string s;
  in_ptr(e.inputs[0], s, "x");
  if (update) in_ptr(e.inputs[1], s, "u");
  std::string idx;
  for (std::size_t k = 0; k < x.ndim(); ++k) {
    const std::string sk = "s" + std::to_string(k), hi = "hi" + std::to_string(k);
    s += "  const long long " + hi + " = " + dim(x.shape[k]) + " - " + dim(w.shape[k]) + ";\n";
    s += "  long long " + sk + " = " + index_scalar(e.inputs[first + k]) + ";\n";
    s += "  " + sk + " = " + sk + " < 0 ? 0 : " + sk + " > " + hi + " ? " + hi + " : " + sk + ";\n";
    idx += (k ? " + " : "") + std::string("(") + sk + " + j" + std::to_string(k) + ") * (" +
           stride(x.shape, k) + ")";
  }
  if (idx.empty()) idx = "0";
  if (!update) return s + nest(w.shape, "o[j] = x[" + idx + "];", "j");
  s += "  for (long long i = 0, N = " + count(x.shape) + "; i < N; ++i) o[i] = x[i];\n";
  return s + nest(w.shape, "o[" + idx + "] = u[j];", "j");
}

XPR_FUNC std::string Lowering::fill_literal(const rt::Params& params, DType t) {
  std::string r;
  rt::dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    r = c_literal(Array(rt::detail::gs::fill_value_as<T>(params)));
  });
  return r;
}

XPR_FUNC std::string Lowering::window_start(const std::string& sk, const std::string& elem,
                                            std::int64_t xdim, std::int64_t size, bool drop,
                                            const std::string& oob, const std::string& check) {
  std::string hi = "(" + dim(xdim) + " - " + dim(size) + ")";
  std::string s = "long long " + sk + " = static_cast<long long>(" + elem + ");\n";
  if (drop) s += check + oob + " = " + oob + " || " + sk + " < 0 || " + sk + " > " + hi + ";\n";
  return s + check + sk + " = " + sk + " < 0 ? 0 : " + sk + " > " + hi + " ? " + hi + " : " + sk +
         ";\n";
}

XPR_FUNC std::string Lowering::range_check(const Atom& index, std::size_t k, std::size_t K,
                                           const std::string& hi, std::size_t g, std::string& pre) {
  // Reshapes keep row-major positions, so the index's element at position p is the buffer's.
  const Var* v = std::get_if<Var>(&index);
  while (v && info(*v).group == static_cast<int>(g)) {
    auto r = reader_of_.find(info(*v).id);
    if (r == reader_of_.end()) return "";
    const Primitive* p = r->second->primitive;
    if (p != &rt::reshape_p && p != &rt::squeeze_p && p != &rt::expand_dims_p) return "";
    v = std::get_if<Var>(&r->second->inputs[0]);
  }
  if (!v || !core::is_integer(v->aval().dtype)) return "";
  const std::string key =
      std::to_string(info(*v).id) + " " + std::to_string(k) + " " + std::to_string(K) + " " + hi;
  auto [it, fresh] = range_checks_.emplace(key, "ck" + std::to_string(range_checks_.size()));
  const std::string& flag = it->second;
  if (fresh) {
    const std::string x = "x" + std::to_string(info(*v).id);  // read_operand's name for it
    if (pre.find(" " + x + " = ") == std::string::npos)
      pre += "  const " + std::string(c_type(v->aval().dtype)) + "* __restrict " + x + " = " +
             ptr(*v) + ";\n";
    // The least and greatest index (signed: is_integer), in the index's type (a min/max
    // reduction GCC vectorizes), compared as window_start compares them: as long long.
    const std::string t = c_type(v->aval().dtype), lo = flag + "_lo", up = flag + "_hi";
    range_check_code_ +=
        t + " " + lo + " = 0, " + up + " = 0;\nfor (long long q = " + std::to_string(k) + "; q < " +
        count(v->aval().shape) + "; q += " + std::to_string(K) + ") {\n  const " + t + " i = " + x +
        "[q];\n  " + lo + " = i < " + lo + " ? i : " + lo + ";\n  " + up + " = i > " + up +
        " ? i : " + up + ";\n}\nconst bool " + flag + " = " + lo +
        " < 0 || static_cast<long long>(" + up + ") > " + hi + ";\n";
  }
  return "@" + flag + "@";
}

XPR_FUNC std::string Lowering::emit_gather(const Eqn& e) {
  const auto& dn = e.params.get<rt::GatherDimensionNumbers>("dimension_numbers");
  const rt::Axes& ss = e.params.get<rt::Axes>("slice_sizes");
  const bool drop =
      e.params.get<rt::GatherScatterMode>("mode") == rt::GatherScatterMode::fill_or_drop;
  const ShapedArray& x = aval_of(e.inputs[0]);
  const ShapedArray& ia = aval_of(e.inputs[1]);
  const ShapedArray& oa = e.outputs[0].aval();
  const auto window =
      rt::detail::gs::window_dims(x.ndim(), dn.collapsed_slice_dims, dn.operand_batching_dims);
  std::vector<std::size_t> bpos;  // output dimension of each batch dimension of the indices
  for (std::size_t o = 0; o < oa.ndim(); ++o)
    if (!rt::detail::gs::contains(dn.offset_dims, static_cast<std::int64_t>(o))) bpos.push_back(o);
  std::string s;
  in_ptr(e.inputs[0], s, "x");
  in_ptr(e.inputs[1], s, "id");
  std::string row;  // the index vector's first element
  for (std::size_t b = 0; b < bpos.size(); ++b)
    row += (b ? " + " : "") + std::string("i") + std::to_string(bpos[b]) + " * (" +
           stride(ia.shape, b) + ")";
  if (row.empty()) row = "0";
  std::string body = "const long long r = " + row + ";\n(void)r;\n";
  if (drop) body += "bool oob = false;\n";
  std::string src;
  for (std::size_t k = 0; k < dn.start_index_map.size(); ++k) {
    const auto d = static_cast<std::size_t>(dn.start_index_map[k]);
    const std::string sk = "s" + std::to_string(k);
    body += window_start(sk, "id[r + " + std::to_string(k) + "]", x.shape[d], ss[d], drop);
    src += (src.empty() ? "" : " + ") + sk + " * (" + stride(x.shape, d) + ")";
  }
  for (std::size_t i = 0; i < dn.operand_batching_dims.size(); ++i)
    src += (src.empty() ? "" : " + ") + std::string("i") +
           std::to_string(bpos[static_cast<std::size_t>(dn.start_indices_batching_dims[i])]) +
           " * (" + stride(x.shape, static_cast<std::size_t>(dn.operand_batching_dims[i])) + ")";
  for (std::size_t w = 0; w < window.size(); ++w)
    src += (src.empty() ? "" : " + ") + std::string("i") + std::to_string(dn.offset_dims[w]) +
           " * (" + stride(x.shape, window[w]) + ")";
  if (src.empty()) src = "0";
  std::string flat;
  for (std::size_t k = 0; k < oa.ndim(); ++k)
    flat += (k ? " + " : "") + std::string("i") + std::to_string(k) + " * (" + stride(oa.shape, k) +
            ")";
  if (flat.empty()) flat = "0";
  if (drop) helpers_used_.insert(std::string("pick_") + dtype_suffix(oa.dtype));
  body += "o[" + flat + "] = " +
          (drop ? "xpr_pick_" + std::string(dtype_suffix(oa.dtype)) + "(oob, " +
                      fill_literal(e.params, oa.dtype) + ", x[" + src + "])"
                : "x[" + src + "]") +
          ";\n";
  std::vector<std::size_t> order(oa.ndim());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  return s + loops(oa.shape, order, body, "i");
}

XPR_FUNC std::string Lowering::emit_scatter(const Eqn& e) {
  const auto& dn = e.params.get<rt::ScatterDimensionNumbers>("dimension_numbers");
  const bool drop =
      e.params.get<rt::GatherScatterMode>("mode") == rt::GatherScatterMode::fill_or_drop;
  const ShapedArray& x = aval_of(e.inputs[0]);
  const ShapedArray& ia = aval_of(e.inputs[1]);
  const ShapedArray& ua = aval_of(e.inputs[2]);
  const auto window =
      rt::detail::gs::window_dims(x.ndim(), dn.inserted_window_dims, dn.operand_batching_dims);
  std::vector<std::int64_t> size(x.ndim(), 1);  // the window's extent in each operand dim
  for (std::size_t k = 0; k < window.size(); ++k)
    size[window[k]] = ua.shape[static_cast<std::size_t>(dn.update_window_dims[k])];
  std::vector<std::size_t> sd, order;  // the updates' scatter dimensions; loop order
  for (std::size_t d = 0; d < ua.ndim(); ++d)
    if (!rt::detail::gs::contains(dn.update_window_dims, static_cast<std::int64_t>(d)))
      sd.push_back(d);
  // The interpreter's order: index vectors in row-major order, then each window's elements
  // (so repeated indices combine in the same order, and scatter's last update wins alike).
  order = sd;
  for (std::int64_t d : dn.update_window_dims) order.push_back(static_cast<std::size_t>(d));
  std::string s;
  const Var* xv = std::get_if<Var>(&e.inputs[0]);
  const bool in_place = xv && info(*xv).buffer == info(e.outputs[0]).buffer;
  if (!in_place) in_ptr(e.inputs[0], s, "x");
  in_ptr(e.inputs[1], s, "id");
  in_ptr(e.inputs[2], s, "u");
  s += "  const long long N = " + count(x.shape) + ";\n";
  s += in_place ? "  // in place: o is the operand's buffer, a loop carry\n"
                : "  for (long long i = 0; i < N; ++i) o[i] = x[i];\n";
  s += "  if (N == 0) return;\n";
  std::string row;
  for (std::size_t b = 0; b < sd.size(); ++b)
    row += (b ? " + " : "") + std::string("j") + std::to_string(sd[b]) + " * (" +
           stride(ia.shape, b) + ")";
  if (row.empty()) row = "0";
  std::string body = "const long long r = " + row + ";\n(void)r;\n";
  if (drop) body += "bool oob = false;\n";
  std::string dst;
  for (std::size_t k = 0; k < dn.scatter_dims_to_operand_dims.size(); ++k) {
    const auto d = static_cast<std::size_t>(dn.scatter_dims_to_operand_dims[k]);
    const std::string sk = "s" + std::to_string(k);
    body += window_start(sk, "id[r + " + std::to_string(k) + "]", x.shape[d], size[d], drop);
    dst += (dst.empty() ? "" : " + ") + sk + " * (" + stride(x.shape, d) + ")";
  }
  if (drop) body += "if (oob) continue;\n";
  for (std::size_t i = 0; i < dn.operand_batching_dims.size(); ++i)
    dst += (dst.empty() ? "" : " + ") + std::string("j") +
           std::to_string(sd[static_cast<std::size_t>(dn.scatter_indices_batching_dims[i])]) +
           " * (" + stride(x.shape, static_cast<std::size_t>(dn.operand_batching_dims[i])) + ")";
  for (std::size_t w = 0; w < window.size(); ++w)
    dst += (dst.empty() ? "" : " + ") + std::string("j") +
           std::to_string(dn.update_window_dims[w]) + " * (" + stride(x.shape, window[w]) + ")";
  if (dst.empty()) dst = "0";
  std::string usrc;
  for (std::size_t d = 0; d < ua.ndim(); ++d)
    usrc += (d ? " + " : "") + std::string("j") + std::to_string(d) + " * (" + stride(ua.shape, d) +
            ")";
  if (usrc.empty()) usrc = "0";
  body += "const long long t = " + dst + ";\n";
  body += "o[t] = " + scatter_combine(e, "o[t]", "u[" + usrc + "]") + ";\n";
  // do/while(0): a dropped window's `continue` skips one element, loops or none.
  return s + loops(ua.shape, order, "do {\n" + body + "} while (false);\n", "j");
}

XPR_FUNC std::string Lowering::emit_reduce(const Eqn& e) {
  const ShapedArray& in = aval_of(e.inputs[0]);
  const ShapedArray& oa = e.outputs[0].aval();
  const DType dt = in.dtype;
  const std::string t = c_type(dt);
  const auto& axes = e.params.get<rt::Axes>("axes");
  std::vector<bool> red(in.ndim(), false);
  for (std::int64_t a : axes) red[static_cast<std::size_t>(a)] = true;
  auto combine = [&](const std::string& a, const std::string& b) {
    return reduce_combine(e.primitive, dt, a, b);
  };
  const std::string id = reduce_identity(e.primitive, dt);
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
    std::string s = pre + "  const long long M = " + count(kept) + ", K = " + count(inner) + ";\n";
    const std::string ids =
        id + ", " + id + ", " + id + ", " + id + ", " + id + ", " + id + ", " + id + ", " + id;
    s += "  for (long long j = 0; j < M; ++j) {\n";
    s += "    const " + t + "* __restrict r = x + j * K;\n";
    s += "    " + t + " sa[8] = {" + ids + "}, ca[8] = {" + ids + "};\n";
    s += "    long long k = 0;\n";
    // Blocks of reduce_block elements, each added into `sa` (with Kahan's compensation for a
    // float sum), as emit_elementwise's reductions: the error does not grow with K / 8.
    s += "    while (k + 8 <= K) {\n";
    s += "      " + t + " acc[8] = {" + ids + "};\n";
    s += "      const long long kb = K - k > " + std::to_string(reduce_block) + " ? k + " +
         std::to_string(reduce_block) + " : K;\n";
    s += "      for (; k + 8 <= kb; k += 8)\n        for (int l = 0; l < 8; ++l) acc[l] = " +
         combine("acc[l]", "r[k + l]") + ";\n";
    if (e.primitive == &rt::reduce_sum_p && core::is_floating(dt))
      s += indented(indented(
          indented("for (int l = 0; l < 8; ++l) " + kahan_add(t, "sa[l]", "ca[l]", "acc[l]"))));
    else
      s += "      for (int l = 0; l < 8; ++l) sa[l] = " + combine("sa[l]", "acc[l]") + ";\n";
    s += "    }\n    (void)ca;\n";
    s += "    " + t + " s = " + id + ";\n";
    s += "    for (int l = 0; l < 8; ++l) s = " + combine("s", "sa[l]") + ";\n";
    s += "    for (; k < K; ++k) s = " + combine("s", "r[k]") + ";\n";
    s += "    o[j] = s;\n  }\n";
    return s;
  }
  // Reduced axes leading, kept axes trailing (a float sum over a batch axis): the rows summed
  // into the columns by blocked_column_sums. The output starts at zero.
  std::size_t first_kept = 0;
  while (first_kept < in.ndim() && red[first_kept]) ++first_kept;
  bool leading = first_kept > 0;
  for (std::size_t k = first_kept; k < in.ndim(); ++k) leading = leading && !red[k];
  if (leading && e.primitive == &rt::reduce_sum_p && core::is_floating(dt)) {
    core::Shape rows(std::vector<std::int64_t>(
        in.shape.begin(), in.shape.begin() + static_cast<std::ptrdiff_t>(first_kept)));
    std::string s = pre + "  const long long M = " + count(oa.shape) +
                    ";\n  for (long long j = 0; j < M; ++j) o[j] = " + id + ";\n";
    return s + indented(blocked_column_sums(
                   t, count(rows), "M", "",
                   [](const std::string& r, const std::string& c) {
                     return "x[" + r + " * M + " + c + "]";
                   },
                   [](const std::string& c) { return "o[" + c + "]"; }));
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

XPR_FUNC std::string Lowering::emit_dot(const Eqn& e) {
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
  s += "  h->gemm(" + std::to_string(static_cast<int>(dt)) + ", " + prod(la, dn.lhs_batch) + ", " +
       prod(la, lf) + ", " + prod(ra, rf) + ", " + prod(la, dn.lhs_contracting) + ", " + A + ", " +
       ta + ", " + B + ", " + tb + ", o);\n";
  return s;
}

XPR_FUNC std::string Lowering::preamble() const {
  std::string s =
      "// Generated by xpr::jit. No includes: the kernel links only against libm/libmvec.\n"
      "// Buffers b[]: arguments, consts, outputs, temporaries; n[]: the arguments' sizes.\n\n"
      "struct XprHost {\n"
      "  void (*gemm)(int dtype, long long batch, long long m, long long n, long long k,\n"
      "               const void* a, int a_transposed, const void* b, int b_transposed, void* "
      "c);\n"
      "  void (*call)(const void* ctx, int k, void* const* in, void* const* out);\n"
      "  const void* ctx;\n"
      "  void (*parallel)(void (*range)(void* const* b, const long long* n, const XprHost* h,\n"
      "                                 long long lo, long long hi),\n"
      "                   void* const* b, const long long* n, const XprHost* h, long long count);\n"
      "};\n\n";
  if (no_ifcvt_used_)
    s += "#if defined(__clang__)\n#define XPR_NO_IFCVT\n#else\n#define XPR_NO_IFCVT "
         "__attribute__((optimize(\"no-tree-loop-if-convert\")))\n#endif\n\n";
  for (const std::string& m : math_used_) s += math_declaration(m, opts_.precise_math);
  for (const std::string& h : helpers_used_) s += helper(h);
  return s + "\n";
}

// The sine and cosine of the flat loops' first run (Lowering::emit_group). libmvec's 4-wide
// AVX2 sine takes about 34 cycles, more than streaming its element from memory on one core; this
// one is a dozen fused multiply-adds that GCC vectorizes inline. x = n pi + r (cos: (n + 1/2) pi
// + r) with n from a rounding of x / pi, r by Cody and Waite's reduction with pi in three parts
// (each fma exact or rounded once: r is within an ulp for |x| <= 2^30), sin r = r + r^3 p(r^2)
// with Taylor's coefficients to r^21 (its remainder below 2^-60 on |r| <= pi/2), and the sign
// of (-1)^n from n's last bit. About 2 ulp against the correctly rounded value (libmvec: 4).
// |x| > 2^30, inf and NaN set `big`, and the loop runs again with libm's. Without hardware
// fused multiply-add the reduction is not exact: libm's are called directly.
inline constexpr const char* trig_f64_source = R"(#if defined(__FMA__) || defined(__ARM_FEATURE_FMA)
static inline double xpr_sinpoly_f64(double r) {
  const double s = r * r;
  double p = 0x1.71b8ef6dcf572p-66;
  p = __builtin_fma(p, s, -0x1.2f49b46814157p-57);
  p = __builtin_fma(p, s, 0x1.952c77030ad4ap-49);
  p = __builtin_fma(p, s, -0x1.ae7f3e733b81fp-41);
  p = __builtin_fma(p, s, 0x1.6124613a86d09p-33);
  p = __builtin_fma(p, s, -0x1.ae64567f544e4p-26);
  p = __builtin_fma(p, s, 0x1.71de3a556c734p-19);
  p = __builtin_fma(p, s, -0x1.a01a01a01a01ap-13);
  p = __builtin_fma(p, s, 0x1.1111111111111p-7);
  p = __builtin_fma(p, s, -0x1.5555555555555p-3);
  return __builtin_fma(p * s, r, r);
}
static inline double xpr_pi_reduced_f64(double x, double n) {
  double r = __builtin_fma(-n, 0x1.921fb54442d18p+1, x);
  r = __builtin_fma(-n, 0x1.1a62633145c07p-53, r);
  return __builtin_fma(-n, -0x1.f1976b7ed8fbcp-109, r);
}
static inline double xpr_signed_f64(double y, double t, unsigned long long flip) {
  const unsigned long long bit = (__builtin_bit_cast(unsigned long long, t) ^ flip) << 63;
  return __builtin_bit_cast(double, __builtin_bit_cast(unsigned long long, y) ^ bit);
}
static inline double xpr_fsin_f64(double x, int& big) {
  big |= !(__builtin_fabs(x) <= 0x1p+30);
  const double t = x * 0x1.45f306dc9c883p-2 + 0x1.8p+52;  // n = round(x / pi), in t's last bit
  const double y = xpr_signed_f64(xpr_sinpoly_f64(xpr_pi_reduced_f64(x, t - 0x1.8p+52)), t, 0);
  // sin(-0) = -0: r + r^3 p is +0 there. A bitwise blend (a conditional expression here keeps
  // GCC from vectorizing the loop).
  const unsigned long long zero_sign =
      __builtin_bit_cast(unsigned long long, x) & (x == 0 ? 0x8000000000000000ULL : 0ULL);
  return __builtin_bit_cast(double, __builtin_bit_cast(unsigned long long, y) | zero_sign);
}
static inline double xpr_fcos_f64(double x, int& big) {
  big |= !(__builtin_fabs(x) <= 0x1p+30);
  const double t = (x * 0x1.45f306dc9c883p-2 - 0.5) + 0x1.8p+52;  // n = round(x / pi - 1/2)
  // cos x = (-1)^(n + 1) sin r, r = x - (n + 1/2) pi
  return xpr_signed_f64(xpr_sinpoly_f64(xpr_pi_reduced_f64(x, (t - 0x1.8p+52) + 0.5)), t, 1);
}
#else
static inline double xpr_fsin_f64(double x, int&) { return xpr_sin_f64(x); }
static inline double xpr_fcos_f64(double x, int&) { return xpr_cos_f64(x); }
#endif
)";

XPR_FUNC std::string Lowering::helper(const std::string& h) {
  if (h == "trig_f64") return trig_f64_source;
  if (h.rfind("pick_", 0) == 0) {
    // c ? a : b by bits, for a gather's fill: written as a conditional, GCC 12 at -O3 with AVX
    // turned the read of b (at a clamped, in-range index) into a masked vector load, and in
    // short unrolled loops took the mask of another row (take_along_axis of (1, 5, 4) with one
    // index out of range gave 0 for in-range elements of the next rows). A select the
    // vectorizer does not if-convert: both operands are read, and the bits are blended.
    const std::string d = h.substr(5);
    const std::string t = d == "f64"   ? "double"
                          : d == "f32" ? "float"
                          : d == "i64" ? "long long"
                          : d == "i32" ? "int"
                                       : "bool";
    const std::string u = d == "f64" || d == "i64" ? "unsigned long long"
                          : d == "b"               ? "unsigned char"
                                                   : "unsigned int";
    return "static inline " + t + " xpr_" + h + "(bool c, " + t + " a, " + t + " b) {\n  const " +
           u + " m = static_cast<" + u + ">(-static_cast<" + u +
           ">(c));\n  return __builtin_bit_cast(" + t + ", static_cast<" + u +
           ">((__builtin_bit_cast(" + u + ", a) & m) | (__builtin_bit_cast(" + u +
           ", b) & ~m)));\n}\n";
  }
  if (h.rfind("max_", 0) == 0 || h.rfind("min_", 0) == 0) {
    // NaN-propagating; ties (+0 and -0) give the first operand, as the interpreter's kernels.
    std::string t = h.substr(4) == "f32" ? "float" : "double";
    std::string pick = h.rfind("max_", 0) == 0 ? "a < b ? b : a" : "b < a ? b : a";
    return "static inline " + t + " xpr_" + h + "(" + t + " a, " + t +
           " b) { return a != a ? a : " + "b != b ? b : " + pick + "; }\n";
  }
  if (h.rfind("irem_", 0) == 0) {
    std::string t = h == "irem_i32" ? "int" : "long long";
    // XLA: x rem 0 == x, INT_MIN rem -1 == 0 (C++ leaves both undefined), else C's %.
    return "static inline " + t + " xpr_" + h + "(" + t + " a, " + t +
           " b) { return b == 0 ? a : b == -1 ? static_cast<" + t + ">(0) : a % b; }\n";
  }
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
         to + ">(0) : x <= static_cast<" + from + ">(" + lo + ") ? " + lo + " : x >= static_cast<" +
         from + ">(" + hi + ") ? " + hi + " : static_cast<" + to + ">(x); }\n";
}

XPR_FUNC std::string Lowering::entry() const {
  if (standalone_)
    return "static void xpr_kernel(void* const* b, const long long* n, const XprHost* h) {\n" +
           calls() + "  (void)b; (void)n; (void)h;\n}\n";
  std::string s =
      "extern \"C\" __attribute__((visibility(\"default\"))) int xpr_abi_version() { return 2; "
      "}\n\n"
      "extern \"C\" __attribute__((visibility(\"default\")))\n"
      "void xpr_kernel(void* const* b, const long long* n, const XprHost* h) {\n";
  return s + calls() + "  (void)b; (void)n; (void)h;\n}\n";
}

XPR_FUNC std::string Lowering::calls() const {
  std::string s;
  if (uses_control_) s += "  long long* ctl = " + control_ptr() + ";\n";
  for (std::size_t g : top_) {
    s += "  g" + std::to_string(g) + "(b, n, h);\n";
    if (groups_[g].kind == Kind::control && uses_control_) s += "  if (ctl[2]) return;\n";
  }
  return s;
}

}  // namespace xpr::codegen::detail
#endif  // XPR_DEFINITIONS
