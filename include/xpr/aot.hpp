// SPDX-License-Identifier: MIT
// Ahead-of-time export (issue 14): a function or a jaxpr written out as a self-contained C++
// source with a plain C ABI (`name.h`, `name.cpp`) that needs nothing from xpr, and the driver
// that builds it into a shared library. `xprc` (tools/xprc.cpp) is `run_xprc` behind a `main`.
#pragma once

#include <algorithm>
#include <cstdint>
#include <dlfcn.h>
#include <filesystem>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "xpr/codegen/compiler.hpp"
#include "xpr/core/config.hpp"
#if XPR_DEFINITIONS
// The code generator (the lowering the definitions below export); first, as before the
// compiled-library split: header-only, parsing it before rt/api.hpp allocates 4 MB less.
#include "xpr/codegen/emit.hpp"
#endif
#include "xpr/core/error.hpp"
#include "xpr/rt/api.hpp"
#include "xpr/rt/jaxpr_parse.hpp"

namespace xpr::aot {

/// What `export_source` and `compile_library` are told besides the function.
struct Options {
  /// Transcendentals through scalar libm calls (0.5 ulp) instead of glibc's vector math library.
  bool precise_math = false;
  /// Never size-polymorphic: the exported function takes no sizes and works for the example's.
  bool fixed_sizes = false;
  /// compile_library: compile for the building machine's CPU (`-march=native`).
  bool native = true;
  /// compile_library: more compiler flags, after the default ones.
  std::vector<std::string> flags = {};
};

/// What `export_source` wrote and the C function's signature.
struct Exported {
  std::filesystem::path header, source;
  std::string declaration;  ///< the C declaration of the function (as in the header)
  /// The size parameters `n0, n1, ...` (empty when the function is not size-polymorphic): each
  /// one's name in the types given (or "n<k>") and its value in the example it was traced at.
  std::vector<std::string> size_names;
  std::vector<long long> size_examples;
  /// Each size parameter's smallest value: below it tracing fails (an index or a slice past the
  /// axis' end, a max or argmax over an empty axis), and the function returns 5.
  std::vector<long long> size_minimums;
  rt::Avals in_avals, out_avals;  ///< the arguments and results at the example sizes
};

namespace detail {

/// The exported function's name becomes a C symbol, two file names and a namespace: only a plain
/// C identifier that no C or C++ rule reserves is accepted.
void check_name(std::string_view name);

/// Throws `value_error` when a scalar literal of `jaxpr` (or of a jaxpr in its parameters)
/// equals one of `sizes` (a named size's value in the jaxpr): it may stand for that size.
void refuse_size_literals(const rt::Jaxpr& jaxpr,
                          const std::vector<std::pair<std::string, std::int64_t>>& sizes,
                          std::size_t depth);

/// `export_source`'s work once `f` is flattened: the plan (`plan_from_example`) exported.
Exported export_flat(const rt::FlatFunction& f, const rt::Avals& avals,
                     const std::filesystem::path& dir, const std::string& name, const Options& o);

}  // namespace detail

/// Writes `dir/name.h` and `dir/name.cpp`: `f` traced at `example_args` (a std::tuple of its
/// arguments, or the one argument) and lowered to C++ with a plain C entry point
/// `int name(const T* in0, ..., T* out0, ..., long long n0, ...)` documented in the header.
/// The sizes of the example other than 0 and 1 are parameters (equal sizes are one parameter)
/// when the code generated at other sizes is the same, else the function works for the
/// example's sizes only and takes none. `name` must be a C identifier (`value_error`); throws
/// `not_implemented_error` for a primitive code generation does not cover. See examples/aot.cpp.
template <class F, class Args>
Exported export_source(F f, const Args& example_args, const std::filesystem::path& dir,
                       const std::string& name, const Options& options = {}) {
  detail::check_name(name);
  auto run = [&](const auto&... args) {
    using Tuple = std::tuple<std::remove_cvref_t<decltype(args)>...>;
    auto [leaves, def] = rt::tree_flatten(std::forward_as_tuple(args...));
    rt::Avals avals;
    for (const rt::Array& a : leaves) avals.push_back(rt::detail::aval_of(a));
    std::optional<rt::PyTreeDef> out_def;
    rt::FlatFunction flat = rt::detail::flat_function<F, Tuple>(f, def, out_def);
    return detail::export_flat(flat, avals, dir, name, options);
  };
  if constexpr (requires { std::tuple_size<Args>::value; })
    return std::apply(run, example_args);
  else
    return run(example_args);
}

/// `export_source` for a closed jaxpr (e.g. from `parse_jaxpr`). `types` (one per invar, like
/// "f64[n,3]"; empty: the invars' own types) may name dimensions: equal names are one size
/// parameter, and the export fails with `value_error` unless the code is the same whatever the
/// sizes and no number in the jaxpr equals a named size (it may be that size, written in when the
/// jaxpr was traced: JAX prints `x[-1]` as `add i 5`). Without names, the function takes the
/// jaxpr's own sizes: a jaxpr, unlike a C++ function, cannot be traced again at other sizes.
Exported export_source(const rt::ClosedJaxpr& jaxpr, const std::vector<std::string>& types,
                       const std::filesystem::path& dir, const std::string& name,
                       const Options& options = {});

/// Builds `dir/name.cpp` (written by `export_source`) into `dir/libname.so` with the compiler of
/// `jit` (XPR_CXX, default g++) and returns its path. Throws `compile_error` with the compiler's
/// log when it fails.
std::filesystem::path compile_library(const std::filesystem::path& dir, const std::string& name,
                                      const Options& options = {});

/// `xprc`: compiles a jaxpr text file (xpr's printer's syntax or JAX's) into `name.h`/`name.cpp`
/// (and `libname.so` with --shared). `args` are the command line without the program name.
/// Returns the exit status: 0 success, 2 a usage error, 1 any other error (said on `err`).
int run_xprc(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace xpr::aot

#if XPR_DEFINITIONS
// The exporter's machinery: the plan types and the code generator (codegen/emit.hpp, included
// above); a unit compiled with XPR_COMPILED_LIB sees only the entry points above.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

namespace xpr::aot::detail {

using core::DType;
using rt::Array;
using rt::Arrays;
using rt::ShapedArray;

// ---- names ---------------------------------------------------------------------------------

bool is_c_keyword(std::string_view s);

// ---- types given as text: f64[n,3] ----------------------------------------------------------

/// One dimension of a type given as text: a number, or a name shared by equal sizes.
struct DimSpec {
  long long value = 0;
  std::string name;  // empty: fixed size `value`
};
struct TypeSpec {
  DType dtype = DType::float64;
  std::vector<DimSpec> dims;
};

TypeSpec parse_type(std::string_view text);

// ---- the signature: which dimensions are size parameters ------------------------------------

/// A flat argument whose dimensions are fixed sizes or size classes (one size parameter each).
struct ArgSig {
  DType dtype;
  bool weak;
  std::vector<long long> fixed;  // the size where cls < 0
  std::vector<int> cls;
};

/// A dimension of a result, a temporary, ...: fixed, or a size parameter.
struct Dim {
  long long value = 0;
  int cls = -1;
};
using Dims = std::vector<Dim>;

struct Problem {
  std::vector<ArgSig> args;
  std::vector<std::string> class_names;
  /// The class sizes traced at (at least 3 assignments when there are classes; the first is the
  /// example's).
  std::vector<std::vector<long long>> assignments;
  bool required = false;  // classes named by the user: failing to be polymorphic is an error
};

struct TracedAt {
  rt::ClosedJaxpr jaxpr;
  codegen::Lowered plan;
};

rt::Avals avals_at(const Problem& p, const std::vector<long long>& vals);

TracedAt trace_at(const rt::FlatFunction& f, const rt::Avals& avals, const Options& o);

bool same_values(const Array& a, const Array& b);

/// `shapes[t]` is one array's shape in trace t: its dimensions as fixed sizes or size classes,
/// or nothing when a dimension follows no class (the code is then not size-polymorphic).
std::optional<Dims> symbolize(const Problem& p, const std::vector<const core::Shape*>& shapes);

/// The lowered function with every array's dimensions in terms of the size parameters.
struct Plan {
  TracedAt traced;  // at the first assignment
  std::vector<std::string> class_names;
  std::vector<long long> class_values;
  std::vector<long long> class_min;  // each size parameter's smallest value (smallest_sizes)
  std::vector<Dims> in_dims, const_dims, out_dims, kernel_out_dims, temp_dims;
};

Dims fixed_dims(const core::Shape& s);

/// Traces `f` at each assignment of the class sizes; when the generated code is the same at all
/// of them (and so are the constants), the sizes are parameters of the exported function.
std::optional<Plan> try_polymorphic(const rt::FlatFunction& f, const Problem& p, const Options& o,
                                    std::string& why);

/// Each size class's smallest value at which `f` still traces (`Plan::class_min`).
std::vector<long long> smallest_sizes(const rt::FlatFunction& f, const Problem& p);

Plan fixed_plan(const rt::FlatFunction& f, const rt::Avals& avals, const Options& o);

/// Sizes for the probe traces: distinct, at least 101, and none equal to a fixed size or a size
/// of the example (so no constant of the program is mistaken for a size parameter).
std::vector<long long> probe_values(std::size_t count, const std::vector<long long>& avoid,
                                    long long& next);

// ---- writing the source ---------------------------------------------------------------------

inline std::string c_type(DType t) { return codegen::detail::c_type(t); }

std::string type_text(DType t, const Dims& d, const std::vector<std::string>& params);

/// Statements computing the element count of `d` into `var`, returning 2 when the count or the
/// array's bytes overflow (the kernel's index arithmetic then stays in range).
std::string count_code(const std::string& var, const Dims& d, DType t);

/// A constant array's elements as C++ source, printed from their values.
std::string const_elements(const Array& a);

/// A portable GEMM for the exported source (the jit's kernels call the host's Eigen instead):
/// row-major, cache-blocked so a panel of B stays in cache, inner loops over contiguous memory;
/// integers multiply and add as unsigned (wrapping, as XLA's integers do, without -fwrapv).
inline std::string gemm_source() {
  std::string s = R"(template <class T, class A>
static void xpr_gemm_t(long long batch, long long m, long long n, long long k, const void* av,
                       int ta, const void* bv, int tb, void* cv) {
  for (long long s = 0; s < batch; ++s) {
    const T* a = static_cast<const T*>(av) + s * m * k;
    const T* b = static_cast<const T*>(bv) + s * k * n;
    T* c = static_cast<T*>(cv) + s * m * n;
    if (!tb) {
      // c[i, j] += a(i, p) * b[p, j]: blocks of B's rows stay in cache while A's rows stream.
      for (long long i = 0; i < m * n; ++i) c[i] = T(0);
      const long long KB = 128, NB = 1024;
      for (long long j0 = 0; j0 < n; j0 += NB) {
        const long long j1 = j0 + NB < n ? j0 + NB : n;
        for (long long p0 = 0; p0 < k; p0 += KB) {
          const long long p1 = p0 + KB < k ? p0 + KB : k;
          for (long long i = 0; i < m; ++i) {
            T* __restrict ci = c + i * n;
            for (long long p = p0; p < p1; ++p) {
              const A aip = static_cast<A>(ta ? a[p * m + i] : a[i * k + p]);
              const T* __restrict bp = b + p * n;
              for (long long j = j0; j < j1; ++j)
                ci[j] = static_cast<T>(static_cast<A>(ci[j]) + aip * static_cast<A>(bp[j]));
            }
          }
        }
      }
    } else {
      // B is stored transposed (n x k): c[i, j] is a dot product of two contiguous rows.
      for (long long i = 0; i < m; ++i)
        for (long long j = 0; j < n; ++j) {
          const T* __restrict bj = b + j * k;
          A acc = A(0);
          if (!ta) {
            const T* __restrict ai = a + i * k;
            for (long long p = 0; p < k; ++p) acc += static_cast<A>(ai[p]) * static_cast<A>(bj[p]);
          } else {
            for (long long p = 0; p < k; ++p)
              acc += static_cast<A>(a[p * m + i]) * static_cast<A>(bj[p]);
          }
          c[i * n + j] = static_cast<T>(acc);
        }
    }
  }
}

static void xpr_gemm(int dtype, long long batch, long long m, long long n, long long k,
                     const void* a, int ta, const void* b, int tb, void* c) {
  switch (dtype) {
)";
  auto row = [](DType t, const char* T, const char* A) {
    return "    case " + std::to_string(static_cast<int>(t)) + ": return xpr_gemm_t<" + T + ", " +
           A + ">(batch, m, n, k, a, ta, b, tb, c);\n";
  };
  s += row(DType::float64, "double", "double");
  s += row(DType::float32, "float", "float");
  s += row(DType::int32, "int", "unsigned int");
  s += row(DType::int64, "long long", "unsigned long long");
  s += "    default: return;\n  }\n}\n";
  return s;
}

struct Files {
  std::string header, source, declaration;
};

Files write_files(const Plan& plan, const std::string& name);

/// Writes `text` to `path` through a temporary file in the same directory and a rename, so a
/// reader never sees half a file.
void write_atomically(const std::filesystem::path& path, const std::string& text);

Exported export_plan(const Plan& plan, const std::filesystem::path& dir, const std::string& name);

/// Auto mode: the example's sizes other than 0 and 1, equal sizes tied, are parameters when the
/// code generated at two other sets of sizes is the same.
Plan plan_from_example(const rt::FlatFunction& f, const rt::Avals& avals, const Options& o);

/// `jaxpr` applied to `in`, its equations bound one by one (eval_jaxpr checks the arguments'
/// types against the invars'; tracing at other sizes must not). Calls the code generator inlines
/// (`pjit`, custom-derivative calls) are evaluated from their bodies the same way, since their
/// sub-jaxprs are typed at the text's sizes.
Arrays eval_any_shape(const rt::Jaxpr& jaxpr, std::span<const Array> consts,
                      std::span<const Array> in, std::size_t depth = 0);

inline rt::FlatFunction jaxpr_function(const rt::ClosedJaxpr& j) {
  return
      [&j](std::span<const Array> in) -> Arrays { return eval_any_shape(j.jaxpr, j.consts, in); };
}

}  // namespace xpr::aot::detail

namespace xpr::aot::detail {

XPR_FUNC bool is_c_keyword(std::string_view s) {
  static constexpr std::string_view words[] = {
      "alignas",     "alignof",      "and",       "and_eq",
      "asm",         "auto",         "bitand",    "bitor",
      "bool",        "break",        "case",      "catch",
      "char",        "char8_t",      "char16_t",  "char32_t",
      "class",       "compl",        "concept",   "const",
      "consteval",   "constexpr",    "constinit", "const_cast",
      "continue",    "co_await",     "co_return", "co_yield",
      "decltype",    "default",      "delete",    "do",
      "double",      "dynamic_cast", "else",      "enum",
      "explicit",    "export",       "extern",    "false",
      "float",       "for",          "friend",    "goto",
      "if",          "inline",       "int",       "long",
      "main",        "mutable",      "namespace", "new",
      "noexcept",    "not",          "not_eq",    "nullptr",
      "operator",    "or",           "or_eq",     "private",
      "protected",   "public",       "register",  "reinterpret_cast",
      "requires",    "restrict",     "return",    "short",
      "signed",      "sizeof",       "static",    "static_assert",
      "static_cast", "struct",       "switch",    "template",
      "this",        "thread_local", "throw",     "true",
      "try",         "typedef",      "typeid",    "typename",
      "union",       "unsigned",     "using",     "virtual",
      "void",        "volatile",     "wchar_t",   "while",
      "xor",         "xor_eq"};
  return std::find(std::begin(words), std::end(words), s) != std::end(words);
}

/// Names of the C and C++ standard libraries that are not functions a loaded library defines
/// (macros, types, objects behind macros), which `check_name` refuses besides those it finds.
XPR_FUNC bool is_library_name(std::string_view s) {
  static constexpr std::string_view words[] = {
      "assert",    "errno",       "NULL",     "offsetof",      "size_t",     "ptrdiff_t",
      "ssize_t",   "FILE",        "EOF",      "stdin",         "stdout",     "stderr",
      "va_list",   "va_arg",      "va_start", "va_end",        "va_copy",    "setjmp",
      "jmp_buf",   "std",         "main",     "NAN",           "INFINITY",   "HUGE_VAL",
      "isnan",     "isinf",       "isfinite", "signbit",       "fpclassify", "isnormal",
      "int8_t",    "int16_t",     "int32_t",  "int64_t",       "uint8_t",    "uint16_t",
      "uint32_t",  "uint64_t",    "intptr_t", "uintptr_t",     "intmax_t",   "uintmax_t",
      "wint_t",    "time_t",      "clock_t",  "static_assert", "noreturn",   "complex",
      "imaginary", "I",           "bool",     "true",          "false",      "alignas",
      "alignof",   "thread_local"};
  return std::find(std::begin(words), std::end(words), s) != std::end(words);
}

XPR_FUNC void check_name(std::string_view name) {
  auto fail = [&](const std::string& why) {
    std::string shown;
    for (char c : name.substr(0, 64))
      shown += (c >= 32 && c < 127) ? c : '?';  // the name is echoed, never a control character
    throw core::value_error("aot: expected the exported function's name to be a C identifier (" +
                            why + "), found \"" + shown + "\"");
  };
  if (name.empty()) fail("a letter or '_' first");
  if (name.size() > 128) fail("at most 128 characters");
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(name[0])) fail("a letter or '_' first");
  for (char c : name)
    if (!alpha(c) && !(c >= '0' && c <= '9')) fail("letters, digits and '_' only");
  if (name[0] == '_' && name.size() > 1 && (name[1] == '_' || (name[1] >= 'A' && name[1] <= 'Z')))
    fail("names starting with '__' or '_' and a capital are reserved");
  if (name.find("__") != std::string_view::npos) fail("'__' is reserved in C++");
  if (name.rfind("xpr_", 0) == 0) fail("names starting with 'xpr_' are the export's own");
  if (is_c_keyword(name)) fail("not a keyword");
  // The export defines `name` and `name_call` as C functions of default visibility: a name the
  // C library already has (`j1`, libm's Bessel function; `free`; `sin`) would be bound to the
  // library's function instead, by the exported code itself and by its callers, and the call
  // would silently compute something else. Macros and types (`assert`, `size_t`) and POSIX's
  // reserved `_t` suffix are refused by name; functions and objects by asking the dynamic linker
  // whether this process (the C and C++ runtimes and libm, at least) already defines them.
  if (is_library_name(name)) fail("not a name of the C or C++ standard library");
  if (name.size() > 2 && name.substr(name.size() - 2) == "_t")
    fail("POSIX reserves the '_t' suffix");
  const std::string n(name);
  for (const std::string& symbol : {n, n + "_call"})
    if (dlsym(RTLD_DEFAULT, symbol.c_str()))
      fail(
          "not the name of a function that a loaded library already defines, as libm defines sin "
          "and j1" +
          (symbol == n ? std::string() : ": " + symbol + " is defined"));
}

XPR_FUNC TypeSpec parse_type(std::string_view text) {
  auto fail = [&](const std::string& expected) -> TypeSpec {
    std::string shown;
    for (char c : text.substr(0, 64)) shown += (c >= 32 && c < 127) ? c : '?';
    throw core::value_error("aot: expected a type like f64[n,3] (" + expected + "), found \"" +
                            shown + "\"");
  };
  const auto open = text.find('[');
  if (open == std::string_view::npos || text.empty() || text.back() != ']')
    return fail("a dtype then dimensions in brackets");
  const std::string_view dt = text.substr(0, open);
  TypeSpec t;
  if (dt == "f64")
    t.dtype = DType::float64;
  else if (dt == "f32")
    t.dtype = DType::float32;
  else if (dt == "i32")
    t.dtype = DType::int32;
  else if (dt == "i64")
    t.dtype = DType::int64;
  else if (dt == "bool")
    t.dtype = DType::bool_;
  else
    return fail("dtype f64, f32, i32, i64 or bool");
  std::string_view body = text.substr(open + 1, text.size() - open - 2);
  if (body.empty()) return t;
  std::size_t start = 0;
  while (start <= body.size()) {
    std::size_t comma = body.find(',', start);
    if (comma == std::string_view::npos) comma = body.size();
    std::string_view d = body.substr(start, comma - start);
    while (!d.empty() && d.front() == ' ') d.remove_prefix(1);
    while (!d.empty() && d.back() == ' ') d.remove_suffix(1);
    if (d.empty()) return fail("no empty dimension");
    DimSpec ds;
    if (d[0] >= '0' && d[0] <= '9') {
      long long v = 0;
      for (char c : d) {
        if (c < '0' || c > '9') return fail("a dimension is a number or a name");
        if (v > (9223372036854775807LL - (c - '0')) / 10) return fail("a size that fits 64 bits");
        v = v * 10 + (c - '0');
      }
      ds.value = v;
    } else {
      for (char c : d)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
              (c >= '0' && c <= '9')))
          return fail("a dimension name is letters, digits and '_'");
      if (d.size() > 64) return fail("a dimension name of at most 64 characters");
      ds.name = std::string(d);
    }
    t.dims.push_back(std::move(ds));
    start = comma + 1;
    if (comma == body.size()) break;
  }
  if (t.dims.size() > 32) return fail("at most 32 dimensions");
  return t;
}

XPR_FUNC rt::Avals avals_at(const Problem& p, const std::vector<long long>& vals) {
  rt::Avals avals;
  for (const ArgSig& a : p.args) {
    std::vector<std::int64_t> d;
    for (std::size_t k = 0; k < a.cls.size(); ++k)
      d.push_back(a.cls[k] < 0 ? a.fixed[k] : vals[static_cast<std::size_t>(a.cls[k])]);
    avals.push_back(ShapedArray{core::Shape(std::move(d)), a.dtype, a.weak});
  }
  return avals;
}

XPR_FUNC TracedAt trace_at(const rt::FlatFunction& f, const rt::Avals& avals, const Options& o) {
  TracedAt t{rt::make_jaxpr_flat(f, avals), {}};
  rt::JitOptions jo;
  jo.precise_math = o.precise_math;
  t.plan = codegen::lower_standalone(t.jaxpr.jaxpr, jo);
  return t;
}

XPR_FUNC bool same_values(const Array& a, const Array& b) {
  if (!a.is_concrete() || !b.is_concrete() ||
      !rt::detail::aval_of(a).same_type(rt::detail::aval_of(b)))
    return false;
  const std::size_t n = core::checked_nbytes(a.size(), core::itemsize(a.dtype()));
  return std::memcmp(a.concrete()->bytes(), b.concrete()->bytes(), n) == 0;
}

XPR_FUNC std::optional<Dims> symbolize(const Problem& p,
                                       const std::vector<const core::Shape*>& shapes) {
  const core::Shape& s0 = *shapes[0];
  Dims r;
  for (std::size_t k = 0; k < s0.rank(); ++k) {
    bool fixed = true;
    for (const core::Shape* s : shapes) fixed = fixed && s->rank() == s0.rank() && (*s)[k] == s0[k];
    if (fixed) {
      r.push_back(Dim{s0[k], -1});
      continue;
    }
    int found = -1;
    for (std::size_t c = 0; c < p.class_names.size() && found < 0; ++c) {
      bool all = true;
      for (std::size_t t = 0; t < shapes.size(); ++t)
        all = all && shapes[t]->rank() == s0.rank() && (*shapes[t])[k] == p.assignments[t][c];
      if (all) found = static_cast<int>(c);
    }
    if (found < 0) return std::nullopt;
    r.push_back(Dim{s0[k], found});
  }
  return r;
}

XPR_FUNC Dims fixed_dims(const core::Shape& s) {
  Dims d;
  for (std::int64_t v : s) d.push_back(Dim{v, -1});
  return d;
}

XPR_FUNC std::optional<Plan> try_polymorphic(const rt::FlatFunction& f, const Problem& p,
                                             const Options& o, std::string& why) {
  std::vector<TracedAt> ts;
  for (const auto& vals : p.assignments) {
    try {
      ts.push_back(trace_at(f, avals_at(p, vals), o));
    } catch (const core::error& e) {
      why = std::string("tracing at other sizes fails: ") + e.what();
      return std::nullopt;
    }
  }
  for (std::size_t t = 1; t < ts.size(); ++t) {
    const TracedAt& a = ts[0];
    const TracedAt& b = ts[t];
    bool same = a.plan.source == b.plan.source && a.jaxpr.consts.size() == b.jaxpr.consts.size() &&
                a.plan.outputs.size() == b.plan.outputs.size() &&
                a.plan.temps.size() == b.plan.temps.size() &&
                a.plan.kernel_outputs.size() == b.plan.kernel_outputs.size();
    for (std::size_t k = 0; same && k < a.jaxpr.consts.size(); ++k)
      same = same_values(a.jaxpr.consts[k], b.jaxpr.consts[k]);
    for (std::size_t k = 0; same && k < a.plan.outputs.size(); ++k)
      same = a.plan.outputs[k].kind == b.plan.outputs[k].kind &&
             a.plan.outputs[k].index == b.plan.outputs[k].index;
    if (!same) {
      why = "the generated code depends on the sizes";
      return std::nullopt;
    }
  }
  Plan plan;
  plan.class_names = p.class_names;
  plan.class_values = p.assignments[0];
  plan.class_min = smallest_sizes(f, p);
  auto each = [&](auto get, std::vector<Dims>& into, std::size_t count) {
    for (std::size_t k = 0; k < count; ++k) {
      std::vector<const core::Shape*> shapes;
      for (const TracedAt& t : ts) shapes.push_back(&get(t, k));
      std::optional<Dims> d = symbolize(p, shapes);
      if (!d) return false;
      into.push_back(std::move(*d));
    }
    return true;
  };
  const TracedAt& t0 = ts[0];
  bool ok =
      each([](const TracedAt& t,
              std::size_t k) -> const core::Shape& { return t.jaxpr.jaxpr.invars[k].aval().shape; },
           plan.in_dims, t0.jaxpr.jaxpr.invars.size()) &&
      each([](const TracedAt& t,
              std::size_t k) -> const core::Shape& { return t.plan.outputs[k].aval.shape; },
           plan.out_dims, t0.plan.outputs.size()) &&
      each([](const TracedAt& t,
              std::size_t k) -> const core::Shape& { return t.plan.kernel_outputs[k].shape; },
           plan.kernel_out_dims, t0.plan.kernel_outputs.size()) &&
      each([](const TracedAt& t,
              std::size_t k) -> const core::Shape& { return t.plan.temps[k].shape; },
           plan.temp_dims, t0.plan.temps.size());
  if (!ok) {
    why = "an intermediate size follows no size parameter";
    return std::nullopt;
  }
  for (const Array& c : t0.jaxpr.consts) plan.const_dims.push_back(fixed_dims(c.shape()));
  plan.traced = std::move(ts[0]);
  return plan;
}

XPR_FUNC std::vector<long long> smallest_sizes(const rt::FlatFunction& f, const Problem& p) {
  // The probes are at least 101, where `x[1]` or `max` over the axis trace; the code generated
  // there reads x[1] at every size. Per size, the smallest value at which the function still
  // traces (the others at the first probe), by bisection: the sizes it fails at are those below
  // an index or a slice's end, or an empty axis, so they lie below the sizes it traces at.
  std::vector<long long> smallest;
  for (std::size_t c = 0; c < p.class_names.size(); ++c) {
    long long lo = 0, hi = p.assignments[0][c];
    while (lo < hi) {
      std::vector<long long> vals = p.assignments[0];
      vals[c] = lo + (hi - lo) / 2;
      bool traces = true;
      try {
        (void)rt::make_jaxpr_flat(f, avals_at(p, vals));
      } catch (const core::error&) {
        traces = false;
      }
      if (traces)
        hi = vals[c];
      else
        lo = vals[c] + 1;
    }
    smallest.push_back(lo);
  }
  return smallest;
}

XPR_FUNC Plan fixed_plan(const rt::FlatFunction& f, const rt::Avals& avals, const Options& o) {
  Plan plan;
  plan.traced = trace_at(f, avals, o);
  const TracedAt& t = plan.traced;
  for (const rt::Var& v : t.jaxpr.jaxpr.invars) plan.in_dims.push_back(fixed_dims(v.aval().shape));
  for (const Array& c : t.jaxpr.consts) plan.const_dims.push_back(fixed_dims(c.shape()));
  for (const auto& o2 : t.plan.outputs) plan.out_dims.push_back(fixed_dims(o2.aval.shape));
  for (const auto& a : t.plan.kernel_outputs) plan.kernel_out_dims.push_back(fixed_dims(a.shape));
  for (const auto& a : t.plan.temps) plan.temp_dims.push_back(fixed_dims(a.shape));
  return plan;
}

XPR_FUNC std::vector<long long> probe_values(std::size_t count, const std::vector<long long>& avoid,
                                             long long& next) {
  std::vector<long long> r;
  while (r.size() < count) {
    ++next;
    bool prime = next > 1;
    for (long long d = 2; prime && d * d <= next; ++d) prime = next % d != 0;
    if (prime && std::find(avoid.begin(), avoid.end(), next) == avoid.end()) r.push_back(next);
  }
  return r;
}

XPR_FUNC std::string type_text(DType t, const Dims& d, const std::vector<std::string>& params) {
  std::string s(core::short_name(t));
  s += "[";
  for (std::size_t k = 0; k < d.size(); ++k)
    s += (k ? "," : "") +
         (d[k].cls < 0 ? std::to_string(d[k].value) : params[static_cast<std::size_t>(d[k].cls)]);
  return s + "]";
}

XPR_FUNC std::string count_code(const std::string& var, const Dims& d, DType t) {
  std::string s = "  long long " + var + " = 1;\n";
  for (const Dim& x : d)
    s += "  if (!xpr_mul(&" + var + ", " +
         (x.cls < 0 ? std::to_string(x.value) + "LL" : "n" + std::to_string(x.cls)) +
         ")) return 2;\n";
  if (!d.empty())
    s += "  if (" + var + " > 9223372036854775807LL / " + std::to_string(core::itemsize(t)) +
         ") return 2;\n";
  return s;
}

XPR_FUNC std::string const_elements(const Array& a) {
  std::string s;
  const auto n = static_cast<std::size_t>(a.size());
  rt::dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = a.data<T>();
    for (std::size_t i = 0; i < n; ++i) {
      if (i) s += (i % 8 == 0) ? ",\n    " : ", ";
      if constexpr (std::is_same_v<T, bool>)
        s += p[i] ? "true" : "false";
      else if constexpr (std::is_same_v<T, std::int64_t>)
        s += p[i] == static_cast<std::int64_t>(-9223372036854775807LL - 1)
                 ? "(-9223372036854775807LL-1)"
                 : "(" + std::to_string(static_cast<long long>(p[i])) + "LL)";
      else
        s += codegen::detail::c_number(static_cast<double>(p[i]), a.dtype());
    }
  });
  return s;
}

XPR_FUNC Files write_files(const Plan& plan, const std::string& name) {
  const codegen::Lowered& L = plan.traced.plan;
  const rt::ClosedJaxpr& cj = plan.traced.jaxpr;
  std::vector<std::string> params;
  for (std::size_t c = 0; c < plan.class_names.size(); ++c)
    params.push_back("n" + std::to_string(c));
  const std::size_t nin = cj.jaxpr.invars.size(), nout = L.outputs.size();
  bool uses_bool = false;

  // The C declaration.
  std::string decl_params;
  auto add_param = [&](const std::string& p) {
    decl_params += (decl_params.empty() ? "" : ", ") + p;
  };
  for (std::size_t i = 0; i < nin; ++i) {
    DType t = cj.jaxpr.invars[i].aval().dtype;
    uses_bool = uses_bool || t == DType::bool_;
    add_param("const " + c_type(t) + "* in" + std::to_string(i));
  }
  for (std::size_t i = 0; i < nout; ++i) {
    DType t = L.outputs[i].aval.dtype;
    uses_bool = uses_bool || t == DType::bool_;
    add_param(c_type(t) + "* out" + std::to_string(i));
  }
  for (const std::string& p : params) add_param("long long " + p);
  if (decl_params.empty()) decl_params = "void";
  const std::string decl = "int " + name + "(" + decl_params + ")";

  // The header.
  std::string sig = name + "(";
  for (std::size_t i = 0; i < nin; ++i)
    sig += (i ? ", " : "") + std::string("in") + std::to_string(i) + ": " +
           type_text(cj.jaxpr.invars[i].aval().dtype, plan.in_dims[i], params);
  sig += ") -> (";
  for (std::size_t i = 0; i < nout; ++i)
    sig += (i ? ", " : "") + std::string("out") + std::to_string(i) + ": " +
           type_text(L.outputs[i].aval.dtype, plan.out_dims[i], params);
  sig += ")";
  std::string sizes_doc;
  for (std::size_t c = 0; c < params.size(); ++c)
    sizes_doc += " *   " + params[c] + ": a size" +
                 (plan.class_min[c] > 0 ? " >= " + std::to_string(plan.class_min[c]) : "") +
                 (plan.class_names[c] == params[c] ? "" : " (" + plan.class_names[c] + ")") +
                 ", traced at " + std::to_string(plan.class_values[c]) + "\n";
  const std::string guard = "XPR_AOT_" + name + "_H";
  std::string h =
      "/* Generated by xpr::aot::export_source: a function exported ahead of time, with a plain C\n"
      " * ABI and no dependency on xpr. Build " +
      name +
      ".cpp with any C++17 compiler (GCC or\n"
      " * Clang: it uses their attributes) and link with libm (-lm); -O3 -fno-math-errno lets GCC\n"
      " * vectorize the math calls through glibc's libmvec, -fwrapv gives integers XLA's\n"
      " * wrap-around.\n"
      " *\n"
      " *   " +
      sig + "\n" +
      (params.empty() ? std::string(" *\n * Sizes are fixed: the function takes none.\n")
                      : " *\n * Size parameters (the function works for every value from the "
                        "smallest shown):\n" +
                            sizes_doc) +
      " *\n"
      " * Arrays are dense and row-major (C order), one pointer each; a rank-0 array is one\n"
      " * element. The caller allocates every output with the shape shown above. Outputs must not\n"
      " * overlap the inputs or each other. Returns 0 on success; 1 when a size is negative, 2 "
      "when\n"
      " * the sizes make an array too large to index, 3 when working memory cannot be allocated,\n"
      " * 4 when a loop bounded by max_trips did not finish within it (the outputs are then left\n"
      " * unspecified), 5 when a size is below its smallest value shown above.\n"
      " *\n"
      " * " +
      name +
      "_call is the same function with arrays of pointers, for foreign-function\n"
      " * interfaces: inputs[0.." +
      std::to_string(nin) + "), outputs[0.." + std::to_string(nout) + "), sizes[0.." +
      std::to_string(params.size()) +
      ").\n"
      " */\n"
      "#ifndef " +
      guard + "\n#define " + guard +
      "\n\n"
      "#ifdef __cplusplus\nextern \"C\" {\n" +
      (uses_bool ? "#else\n#include <stdbool.h>\n" : "") + "#endif\n\n" + decl + ";\n" + "int " +
      name +
      "_call(const void* const* inputs, void* const* outputs, const long long* sizes);\n\n"
      "#ifdef __cplusplus\n}\n#endif\n\n#endif\n";

  // The source: the kernel in a namespace of its own, then the C entry points.
  const std::string ns = "xpr_aot_" + name;
  const bool gemm = L.source.find("h->gemm(") != std::string::npos;
  std::string s = "// Generated by xpr::aot::export_source; see " + name +
                  ".h for the ABI. Self-contained: no xpr header is needed.\n";
  if (!L.temps.empty()) s += "#include <stdlib.h>\n";
  s += "\nnamespace " + ns + " {\n\n" + L.source + "\n";
  if (gemm)
    s += gemm_source() + "\nstatic const XprHost xpr_host = {&xpr_gemm, 0, 0, 0};\n";
  else
    s += "static const XprHost xpr_host = {0, 0, 0, 0};  // no host calls: xpr_kernel makes none\n";
  s += "\n// a *= d for sizes a, d >= 0; false when the product overflows.\n"
       "static bool xpr_mul(long long* a, long long d) {\n"
       "  if (d != 0 && *a > 9223372036854775807LL / d) return false;\n"
       "  *a *= d;\n  return true;\n}\n\n";
  // Constants (closed-over arrays), printed from their values.
  for (std::size_t i = 0; i < cj.consts.size(); ++i) {
    const Array& c = cj.consts[i];
    const std::string t = c_type(c.dtype());
    if (c.size() == 0)
      s += "static const " + t + "* const xpr_c" + std::to_string(i) + " = 0;\n";
    else
      s += "static const " + t + " xpr_c" + std::to_string(i) + "[] = {\n    " + const_elements(c) +
           "};\n";
  }
  for (std::size_t i = 0; i < nout; ++i)
    if (L.outputs[i].kind == codegen::OutputSpec::literal) {
      const Array& c = L.outputs[i].value;
      s += "static const " + c_type(c.dtype()) + " xpr_l" + std::to_string(i) + "[] = {" +
           (c.size() == 0 ? std::string("0") : const_elements(c)) + "};\n";
    }
  s += "\n}  // namespace " + ns + "\n\n";

  s += "extern \"C\" __attribute__((visibility(\"default\"))) " + decl + " {\n";
  s += "  using namespace " + ns + ";\n";
  for (const std::string& p : params) s += "  if (" + p + " < 0) return 1;\n";
  for (std::size_t c = 0; c < params.size(); ++c)
    if (plan.class_min[c] > 0)
      s += "  if (" + params[c] + " < " + std::to_string(plan.class_min[c]) + "LL) return 5;\n";
  // Element counts of every array, checked, then the kernel's size array n[].
  for (std::size_t i = 0; i < nin; ++i)
    s += count_code("c_in" + std::to_string(i), plan.in_dims[i], cj.jaxpr.invars[i].aval().dtype);
  for (std::size_t i = 0; i < nout; ++i)
    s += count_code("c_out" + std::to_string(i), plan.out_dims[i], L.outputs[i].aval.dtype);
  for (std::size_t i = 0; i < L.temps.size(); ++i)
    s += count_code("c_t" + std::to_string(i), plan.temp_dims[i], L.temps[i].dtype);
  std::vector<std::string> nvals;
  for (const Dims& d : plan.in_dims)
    for (const Dim& x : d)
      nvals.push_back(x.cls < 0 ? std::to_string(x.value) + "LL"
                                : params[static_cast<std::size_t>(x.cls)]);
  for (const Dims& d : plan.const_dims)
    for (const Dim& x : d) nvals.push_back(std::to_string(x.value) + "LL");
  if (nvals.size() != L.dims.size())
    throw core::error("aot: internal error: the kernel expects " + std::to_string(L.dims.size()) +
                      " sizes, the export computed " + std::to_string(nvals.size()));
  s += "  const long long n[" + std::to_string(std::max<std::size_t>(nvals.size(), 1)) + "] = {";
  for (std::size_t i = 0; i < nvals.size(); ++i) s += (i ? ", " : "") + nvals[i];
  if (nvals.empty()) s += "0";
  s += "};\n  (void)n;\n";
  // Buffers: arguments, consts, kernel outputs (the caller's), temporaries (one block).
  const std::size_t nk = L.kernel_outputs.size(), nt = L.temps.size();
  const std::size_t nb = nin + cj.consts.size() + nk + nt;
  s += "  void* b[" + std::to_string(std::max<std::size_t>(nb, 1)) + "] = {0};\n";
  for (std::size_t i = 0; i < nin; ++i)
    s += "  b[" + std::to_string(i) + "] = const_cast<" + c_type(cj.jaxpr.invars[i].aval().dtype) +
         "*>(in" + std::to_string(i) + ");\n";
  for (std::size_t i = 0; i < cj.consts.size(); ++i)
    s += "  b[" + std::to_string(nin + i) + "] = const_cast<" + c_type(cj.consts[i].dtype()) +
         "*>(xpr_c" + std::to_string(i) + ");\n";
  std::vector<int> kernel_owner(nk, -1);
  for (std::size_t i = 0; i < nout; ++i)
    if (L.outputs[i].kind == codegen::OutputSpec::kernel_buffer &&
        kernel_owner[L.outputs[i].index] < 0) {
      kernel_owner[L.outputs[i].index] = static_cast<int>(i);
      s += "  b[" + std::to_string(nin + cj.consts.size() + L.outputs[i].index) + "] = out" +
           std::to_string(i) + ";\n";
    }
  if (nt) {
    s += "  long long total = 0;\n";
    for (std::size_t i = 0; i < nt; ++i) {
      const std::string c = "c_t" + std::to_string(i);
      s += "  const long long o_t" + std::to_string(i) + " = total;\n";
      s += "  if (!xpr_mul(&" + c + ", " + std::to_string(core::itemsize(L.temps[i].dtype)) +
           ") || " + c + " > 9223372036854775807LL - 64 - total) return 2;\n";
      s += "  total += (" + c + " + 63) / 64 * 64;\n";
    }
    s += "  if (total == 0) total = 64;\n";
    s += "  if (static_cast<unsigned long long>(total) > static_cast<unsigned long "
         "long>(~static_cast<"
         "unsigned long>(0))) return 2;\n";
    s +=
        "  char* tmp = static_cast<char*>(aligned_alloc(64, static_cast<unsigned long>(total)));\n";
    s += "  if (!tmp) return 3;\n";
    for (std::size_t i = 0; i < nt; ++i)
      s += "  b[" + std::to_string(nin + cj.consts.size() + nk + i) + "] = tmp + o_t" +
           std::to_string(i) + ";\n";
  }
  // A kernel with loops reads a loop-control block (codegen::Lowered::control): zeroed, it sets
  // no iteration limit (jit's host sets LoopIterationLimit's budget there); the kernel stores a
  // status when a check_max_trips bound failed.
  if (L.control >= 0) {
    s += "  long long* ctl = static_cast<long long*>(b[" + std::to_string(L.control) + "]);\n";
    s += "  ctl[0] = ctl[1] = ctl[2] = ctl[3] = 0;\n";
  }
  s += "  xpr_kernel(b, n, &xpr_host);\n";
  if (L.control >= 0) s += "  const bool unfinished = ctl[2] != 0;\n";
  if (nt) s += "  free(tmp);\n";
  if (L.control >= 0) s += "  if (unfinished) return 4;\n";
  // Results that are not the kernel's own buffers: copies.
  for (std::size_t i = 0; i < nout; ++i) {
    const codegen::OutputSpec& o = L.outputs[i];
    std::string src;
    if (o.kind == codegen::OutputSpec::kernel_buffer) {
      if (kernel_owner[o.index] == static_cast<int>(i)) continue;
      src = "out" + std::to_string(kernel_owner[o.index]);
    } else if (o.kind == codegen::OutputSpec::argument) {
      src = "in" + std::to_string(o.index);
    } else if (o.kind == codegen::OutputSpec::constant) {
      src = "xpr_c" + std::to_string(o.index);
    } else {
      src = "xpr_l" + std::to_string(i);
    }
    s += "  for (long long i = 0; i < c_out" + std::to_string(i) + "; ++i) out" +
         std::to_string(i) + "[i] = " + src + "[i];\n";
  }
  for (std::size_t i = 0; i < nin; ++i) s += "  (void)c_in" + std::to_string(i) + ";\n";
  for (std::size_t i = 0; i < nout; ++i) s += "  (void)c_out" + std::to_string(i) + ";\n";
  s += "  return 0;\n}\n\n";
  // The pointer-array entry point.
  s += "extern \"C\" __attribute__((visibility(\"default\"))) int " + name +
       "_call(const void* const* inputs, void* const* outputs, const long long* sizes) {\n";
  s += "  (void)inputs; (void)outputs; (void)sizes;\n  return " + name + "(";
  std::string args;
  for (std::size_t i = 0; i < nin; ++i)
    args += (args.empty() ? "" : ", ") + std::string("static_cast<const ") +
            c_type(cj.jaxpr.invars[i].aval().dtype) + "*>(inputs[" + std::to_string(i) + "])";
  for (std::size_t i = 0; i < nout; ++i)
    args += (args.empty() ? "" : ", ") + std::string("static_cast<") +
            c_type(L.outputs[i].aval.dtype) + "*>(outputs[" + std::to_string(i) + "])";
  for (std::size_t c = 0; c < params.size(); ++c)
    args += (args.empty() ? "" : ", ") + std::string("sizes[") + std::to_string(c) + "]";
  s += args + ");\n}\n";
  return {h, s, decl};
}

XPR_FUNC void write_atomically(const std::filesystem::path& path, const std::string& text) {
  std::string tmpl = (path.parent_path() / ("." + path.filename().string() + ".XXXXXX")).string();
  std::vector<char> t(tmpl.begin(), tmpl.end());
  t.push_back('\0');
  int fd = ::mkstemp(t.data());
  if (fd < 0) throw core::error("aot: cannot write " + path.string() + ": " + std::strerror(errno));
  std::size_t done = 0;
  bool ok = true;
  while (done < text.size()) {
    ssize_t w = ::write(fd, text.data() + done, text.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      ok = false;
      break;
    }
    done += static_cast<std::size_t>(w);
  }
  ok = (::fchmod(fd, 0644) == 0) && ok;
  ok = (::close(fd) == 0) && ok;
  if (!ok || std::rename(t.data(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    std::remove(t.data());
    throw core::error("aot: cannot write " + path.string() + ": " + why);
  }
}

XPR_FUNC Exported export_plan(const Plan& plan, const std::filesystem::path& dir,
                              const std::string& name) {
  Files f = write_files(plan, name);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!std::filesystem::is_directory(dir))
    throw core::error("aot: cannot create the output directory " + dir.string());
  Exported e;
  e.header = dir / (name + ".h");
  e.source = dir / (name + ".cpp");
  write_atomically(e.header, f.header);
  write_atomically(e.source, f.source);
  e.declaration = f.declaration;
  e.size_names = plan.class_names;
  e.size_examples = plan.class_values;
  e.size_minimums = plan.class_min;
  e.in_avals = plan.traced.jaxpr.jaxpr.in_avals();
  for (const auto& o : plan.traced.plan.outputs) e.out_avals.push_back(o.aval);
  return e;
}

XPR_FUNC Plan plan_from_example(const rt::FlatFunction& f, const rt::Avals& avals,
                                const Options& o) {
  if (o.fixed_sizes) return fixed_plan(f, avals, o);
  Problem p;
  std::vector<long long> example, avoid{0, 1};
  for (const ShapedArray& a : avals) {
    ArgSig s{a.dtype, a.weak_type, {}, {}};
    for (std::int64_t d : a.shape) {
      s.fixed.push_back(d);
      avoid.push_back(d);
      int cls = -1;
      if (d >= 2) {
        auto it = std::find(example.begin(), example.end(), d);
        cls = static_cast<int>(it - example.begin());
        if (it == example.end()) {
          example.push_back(d);
          p.class_names.push_back("n" + std::to_string(cls));
        }
      }
      s.cls.push_back(cls);
    }
    p.args.push_back(std::move(s));
  }
  if (example.empty()) return fixed_plan(f, avals, o);
  long long next = 100;
  p.assignments = {example, probe_values(example.size(), avoid, next),
                   probe_values(example.size(), avoid, next)};
  std::string why;
  if (std::optional<Plan> plan = try_polymorphic(f, p, o, why)) return std::move(*plan);
  return fixed_plan(f, avals, o);
}

XPR_FUNC Exported export_flat(const rt::FlatFunction& f, const rt::Avals& avals,
                              const std::filesystem::path& dir, const std::string& name,
                              const Options& o) {
  return export_plan(plan_from_example(f, avals, o), dir, name);
}

XPR_FUNC void refuse_size_literals(const rt::Jaxpr& jaxpr,
                                   const std::vector<std::pair<std::string, std::int64_t>>& sizes,
                                   std::size_t depth) {
  if (depth > rt::max_jaxpr_nesting) return;  // export_plan refuses such nesting itself
  for (const rt::Eqn& e : jaxpr.eqns) {
    for (const rt::Atom& a : e.inputs) {
      const rt::Literal* l = std::get_if<rt::Literal>(&a);
      if (!l || !l->value.is_concrete() || l->value.ndim() != 0 || l->value.dtype() == DType::bool_)
        continue;
      const double v = rt::dispatch_dtype(l->value.dtype(), [&](auto tag) {
        return static_cast<double>(l->value.item<decltype(tag)>());
      });
      for (const auto& [n, size] : sizes)
        if (v == static_cast<double>(size))
          throw core::value_error(
              "aot: expected a jaxpr whose numbers do not stand for the sizes named in the types, "
              "found the literal " +
              std::to_string(size) + " in " + std::string(e.primitive ? e.primitive->name() : "?") +
              ", the size " + n +
              " has in the jaxpr: JAX writes sizes into a jaxpr as numbers "
              "(x[-1] adds " +
              std::to_string(size) +
              " to the index, mean divides by it), which "
              "would stay " +
              std::to_string(size) +
              " at every other size. Export it at its own "
              "sizes (no types, or --fixed-sizes), or trace it again at the sizes you need");
    }
    for (const auto& [pname, value] : e.params) {
      if (const rt::JaxprParam* j = std::get_if<rt::JaxprParam>(&value); j && *j)
        refuse_size_literals((*j)->jaxpr, sizes, depth + 1);
      if (const rt::JaxprTuple* t = std::get_if<rt::JaxprTuple>(&value))
        for (const rt::JaxprParam& j : *t)
          if (j) refuse_size_literals(j->jaxpr, sizes, depth + 1);
    }
  }
}

XPR_FUNC Arrays eval_any_shape(const rt::Jaxpr& jaxpr, std::span<const Array> consts,
                               std::span<const Array> in, std::size_t depth) {
  if (depth > rt::max_jaxpr_nesting)
    throw core::not_implemented_error("aot: calls nested deeper than " +
                                      std::to_string(rt::max_jaxpr_nesting));
  if (in.size() != jaxpr.invars.size() || consts.size() != jaxpr.constvars.size())
    throw core::type_error("aot: expected " + std::to_string(jaxpr.invars.size()) +
                           " arguments, found " + std::to_string(in.size()));
  std::unordered_map<const void*, Array> env;
  for (std::size_t i = 0; i < consts.size(); ++i)
    env.insert_or_assign(jaxpr.constvars[i].id(), consts[i]);
  for (std::size_t i = 0; i < in.size(); ++i) env.insert_or_assign(jaxpr.invars[i].id(), in[i]);
  auto read = [&](const rt::Atom& a) -> Array {
    if (const rt::Literal* l = std::get_if<rt::Literal>(&a)) return l->value;
    auto it = env.find(std::get<rt::Var>(a).id());
    if (it == env.end()) throw core::type_error("aot: a variable is used but never defined");
    return it->second;
  };
  for (const rt::Eqn& e : jaxpr.eqns) {
    if (!e.primitive) throw core::type_error("aot: expected a primitive in every equation");
    Arrays ins;
    for (const rt::Atom& a : e.inputs) ins.push_back(read(a));
    const rt::ClosedJaxpr* body = codegen::detail::inlinable_body(e);
    Arrays outs = body ? eval_any_shape(body->jaxpr, body->consts, ins, depth + 1)
                       : rt::bind(*e.primitive, std::span<const Array>(ins), e.params);
    if (outs.size() != e.outputs.size())
      throw core::type_error("aot: expected " + std::to_string(e.outputs.size()) +
                             " results from " + e.primitive->name() + ", found " +
                             std::to_string(outs.size()));
    for (std::size_t k = 0; k < outs.size(); ++k)
      env.insert_or_assign(e.outputs[k].id(), std::move(outs[k]));
  }
  Arrays out;
  for (const rt::Atom& a : jaxpr.outvars) out.push_back(read(a));
  return out;
}

}  // namespace xpr::aot::detail

namespace xpr::aot {

XPR_FUNC Exported export_source(const rt::ClosedJaxpr& jaxpr, const std::vector<std::string>& types,
                                const std::filesystem::path& dir, const std::string& name,
                                const Options& options) {
  detail::check_name(name);
  const rt::FlatFunction flat = detail::jaxpr_function(jaxpr);
  const rt::Avals own = jaxpr.jaxpr.in_avals();
  // Without names, the jaxpr's own sizes: unlike a C++ function, which is traced again at other
  // sizes, a jaxpr's text cannot show which of its numbers are sizes (JAX prints `x[-1]` as
  // `add i 5`), so evaluating it at other sizes can look size-independent and be wrong.
  if (types.empty()) return detail::export_plan(detail::fixed_plan(flat, own, options), dir, name);
  if (types.size() != own.size())
    throw core::value_error("aot: expected " + std::to_string(own.size()) +
                            " argument types (one per input of the jaxpr), found " +
                            std::to_string(types.size()));
  detail::Problem p;
  p.required = true;
  std::vector<long long> avoid{0, 1};
  rt::Avals fixed_avals;
  bool named = false;
  for (std::size_t i = 0; i < types.size(); ++i) {
    detail::TypeSpec t = detail::parse_type(types[i]);
    if (t.dtype != own[i].dtype)
      throw core::dtype_error("aot: argument " + std::to_string(i) + " of the jaxpr has dtype " +
                              std::string(core::short_name(own[i].dtype)) +
                              ", the type given says " + std::string(core::short_name(t.dtype)));
    // The type's numbers are the jaxpr's own and its names mark the sizes that vary: a jaxpr
    // evaluated at another rank or another fixed size means something else (`reduce_sum` over
    // axis 0 of f32[2,2] is not the total of f32[3] the text describes).
    auto mismatch = [&] {
      return core::shape_error("aot: argument " + std::to_string(i) + " of the jaxpr has type " +
                               own[i].str() + ", the type given says " + types[i] +
                               " (expected its rank, and its sizes where no name is given)");
    };
    if (t.dims.size() != own[i].ndim()) throw mismatch();
    for (std::size_t k = 0; k < t.dims.size(); ++k)
      if (t.dims[k].name.empty() && t.dims[k].value != own[i].shape[k]) throw mismatch();
    detail::ArgSig s{t.dtype, own[i].weak_type, {}, {}};
    std::vector<std::int64_t> fd;
    for (const detail::DimSpec& d : t.dims) {
      int cls = -1;
      if (!d.name.empty()) {
        named = true;
        auto it = std::find(p.class_names.begin(), p.class_names.end(), d.name);
        cls = static_cast<int>(it - p.class_names.begin());
        if (it == p.class_names.end()) p.class_names.push_back(d.name);
      } else {
        avoid.push_back(d.value);
      }
      s.fixed.push_back(d.value);
      s.cls.push_back(cls);
      fd.push_back(d.value);
    }
    if (!named) fixed_avals.push_back(ShapedArray{core::Shape(fd), t.dtype, own[i].weak_type});
    p.args.push_back(std::move(s));
  }
  if (!named) return detail::export_plan(detail::fixed_plan(flat, fixed_avals, options), dir, name);
  if (options.fixed_sizes)
    throw core::value_error("aot: the types name sizes, but the options ask for fixed sizes");
  // A number in the jaxpr equal to a named size may be that size, written in at tracing (JAX's
  // `x[-1]` adds 5 to the index, `mean` divides by 5.0): it would stay 5 at every other size.
  // Refused rather than guessed: such a jaxpr is exported at its own sizes.
  std::vector<std::pair<std::string, std::int64_t>> named_sizes;
  for (std::size_t i = 0; i < p.args.size(); ++i)
    for (std::size_t k = 0; k < p.args[i].cls.size(); ++k)
      if (p.args[i].cls[k] >= 0 && own[i].shape.rank() == p.args[i].cls.size() &&
          own[i].shape[k] > 1)
        named_sizes.emplace_back(p.class_names[static_cast<std::size_t>(p.args[i].cls[k])],
                                 own[i].shape[k]);
  detail::refuse_size_literals(jaxpr.jaxpr, named_sizes, 0);
  long long next = 100;
  for (int k = 0; k < 3; ++k)
    p.assignments.push_back(detail::probe_values(p.class_names.size(), avoid, next));
  std::string why;
  if (std::optional<detail::Plan> plan = detail::try_polymorphic(flat, p, options, why))
    return detail::export_plan(*plan, dir, name);
  std::string names;
  for (const std::string& n : p.class_names) names += (names.empty() ? "" : ", ") + n;
  throw core::value_error(
      "aot: expected a jaxpr whose code is the same for every value of the "
      "sizes named in the types (" +
      names + "), found that " + why);
}

XPR_FUNC std::filesystem::path compile_library(const std::filesystem::path& dir,
                                               const std::string& name, const Options& options) {
  detail::check_name(name);
  const std::filesystem::path src = dir / (name + ".cpp");
  const std::filesystem::path so = dir / ("lib" + name + ".so");
  if (!std::filesystem::is_regular_file(src))
    throw core::error("aot: expected the exported source " + src.string() + ", found none");
  const codegen::CompilerInfo& ci = codegen::compiler_info();
  if (!ci.ok)
    throw codegen::no_compiler_error(
        "aot: no working C++ compiler (XPR_CXX=" + codegen::detail::env_or("XPR_CXX", "g++") + ")");
  const std::string tmp = (dir / ("." + name + ".so.tmp")).string();
  const std::string log = (dir / ("." + name + ".log")).string();
  std::vector<std::string> cmd = ci.command;
  for (const char* f : {"-std=c++17", "-O3", "-fno-math-errno", "-fwrapv", "-fPIC", "-shared",
                        "-fvisibility=hidden"})
    cmd.push_back(f);
  if (options.native) {
    cmd.push_back("-march=native");
#if defined(__x86_64__) || defined(__i386__)
    cmd.push_back("-mprefer-vector-width=512");  // as jit compiles (codegen/compiler.hpp)
#endif
  }
  for (const std::string& f : options.flags) cmd.push_back(f);
  cmd.push_back(src.string());
  cmd.push_back("-o");
  cmd.push_back(tmp);
  cmd.push_back("-lm");
  const int rc = codegen::detail::run_process(cmd, log);
  std::string text = codegen::detail::read_text(log);
  std::remove(log.c_str());
  if (rc != 0) {
    std::remove(tmp.c_str());
    throw core::compile_error("aot: the C++ compiler failed on " + src.string() + " (exit status " +
                                  std::to_string(rc) + ")",
                              text);
  }
  if (std::rename(tmp.c_str(), so.c_str()) != 0)
    throw core::error("aot: cannot write " + so.string() + ": " + std::strerror(errno));
  return so;
}

XPR_FUNC int run_xprc(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const char* usage =
      "usage: xprc IN.jaxpr --name NAME --out DIR [--shared] [--types TYPE...]\n"
      "            [--precise-math] [--fixed-sizes]\n"
      "  Compiles a jaxpr (xpr's or JAX's text) into DIR/NAME.h and DIR/NAME.cpp, a C function\n"
      "  with no dependency on xpr; --shared also builds DIR/libNAME.so.\n"
      "  --types  one type per input, like f64[n,3]: a name makes that size a parameter\n"
      "           (without --types: the jaxpr's own sizes)\n";
  std::string in, name, dir;
  std::vector<std::string> types;
  Options opts;
  bool shared = false;
  auto usage_error = [&](const std::string& why) {
    err << "xprc: " << why << "\n" << usage;
    return 2;
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string& into) {
      if (i + 1 >= args.size()) return false;
      into = args[++i];
      return true;
    };
    if (a == "--help" || a == "-h") {
      out << usage;
      return 0;
    } else if (a == "--name") {
      if (!value(name)) return usage_error("--name needs a value");
    } else if (a == "--out") {
      if (!value(dir)) return usage_error("--out needs a value");
    } else if (a == "--shared") {
      shared = true;
    } else if (a == "--precise-math") {
      opts.precise_math = true;
    } else if (a == "--fixed-sizes") {
      opts.fixed_sizes = true;
    } else if (a == "--types") {
      while (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) types.push_back(args[++i]);
      if (types.empty()) return usage_error("--types needs at least one type");
    } else if (a.rfind("-", 0) == 0 && a.size() > 1) {
      return usage_error("unknown option " + a.substr(0, 64));
    } else if (in.empty()) {
      in = a;
    } else {
      return usage_error("expected one input file, found a second: " + a.substr(0, 256));
    }
  }
  if (in.empty()) return usage_error("expected an input file");
  if (name.empty()) return usage_error("expected --name NAME");
  if (dir.empty()) return usage_error("expected --out DIR");
  try {
    detail::check_name(name);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(in, ec)) {
      err << "xprc: cannot read " << in << ": not a regular file\n";
      return 1;
    }
    std::string text = codegen::detail::read_text(in);
    rt::Jaxpr j = rt::parse_open_jaxpr(text);
    if (!j.constvars.empty())
      throw core::value_error(
          "expected a jaxpr without constvars (their values are not in "
          "the text), found " +
          std::to_string(j.constvars.size()));
    rt::ClosedJaxpr cj{std::move(j), {}};
    Exported e = export_source(cj, types, dir, name, opts);
    out << "xprc: wrote " << e.header.string() << " and " << e.source.string() << ": "
        << e.declaration << "\n";
    if (shared) out << "xprc: built " << compile_library(dir, name, opts).string() << "\n";
  } catch (const core::error& e) {
    err << "xprc: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    err << "xprc: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace xpr::aot
#endif  // XPR_DEFINITIONS
