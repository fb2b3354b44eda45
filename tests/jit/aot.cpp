// SPDX-License-Identifier: MIT
// Tests of include/xpr/aot.hpp: exported functions (built into a shared library, loaded with
// dlopen, called through the plain C ABI) give the eager interpreter's results, at the example's
// sizes and at others; bad names and bad sizes are refused; xprc's command line; and a fuzz test
// of mutated jaxpr texts, which either fail with an xpr error or export code equal to the
// interpreter, and never write outside the output directory.
#include "xpr/aot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <dlfcn.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/xpr.hpp"

namespace test_jit_aot {

using namespace xpr;
namespace fs = std::filesystem;
using xpr::rt::Arrays;

/// A fresh empty directory under the system's temporary directory, removed with what the test
/// wrote into it when the test ends (a loaded library stays mapped after its file is gone).
struct ScratchDir : fs::path {
  explicit ScratchDir(const std::string& tag) {
    std::string tmpl = (fs::temp_directory_path() / ("xpr-aot-" + tag + "-XXXXXX")).string();
    std::vector<char> t(tmpl.begin(), tmpl.end());
    t.push_back('\0');
    EXPECT_NE(::mkdtemp(t.data()), nullptr);
    fs::path::operator=(t.data());
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(*this, ec);
  }
};

inline std::set<std::string> listing(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

using CallFn = int (*)(const void* const*, void* const*, const long long*);

/// Loads `dir/libname.so` and returns its `name_call` entry point.
inline CallFn load(const fs::path& so, const std::string& name) {
  void* h = ::dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) throw std::runtime_error(std::string("dlopen: ") + ::dlerror());
  void* f = ::dlsym(h, (name + "_call").c_str());
  if (!f) throw std::runtime_error("dlsym: " + name + "_call");
  return reinterpret_cast<CallFn>(f);
}

/// Calls the exported function on `args` with outputs shaped like `want` (the interpreter's
/// results) and compares element by element.
inline void expect_matches(CallFn fn, const Arrays& args, const std::vector<long long>& sizes,
                           const Arrays& want, const std::string& what) {
  std::vector<const void*> ins;
  for (const Array& a : args) ins.push_back(a.concrete()->bytes());
  std::vector<std::vector<std::byte>> outs;
  std::vector<void*> out_ptrs;
  for (const Array& w : want) {
    outs.emplace_back(std::max<std::size_t>(1, w.concrete()->nbytes()));
    out_ptrs.push_back(outs.back().data());
  }
  ASSERT_EQ(fn(ins.data(), out_ptrs.data(), sizes.data()), 0) << what;
  for (std::size_t k = 0; k < want.size(); ++k) {
    const Array& w = want[k];
    rt::dispatch_dtype(w.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* got = reinterpret_cast<const T*>(outs[k].data());
      const T* ref = w.data<T>();
      for (std::int64_t i = 0; i < w.size(); ++i) {
        if constexpr (std::is_floating_point_v<T>) {
          if (std::isnan(ref[i]))
            EXPECT_TRUE(std::isnan(got[i])) << what << " output " << k << " at " << i;
          else if (std::isinf(ref[i]))
            EXPECT_EQ(got[i], ref[i]) << what << " output " << k << " at " << i;
          else
            // libmvec is within ~4 ulp; a product's order of additions differs from Eigen's.
            EXPECT_NEAR(got[i], ref[i],
                        (std::is_same_v<T, float> ? 2e-5 : 1e-12) * (1 + std::abs(ref[i])))
                << what << " output " << k << " at " << i;
        } else {
          EXPECT_EQ(got[i], ref[i]) << what << " output " << k << " at " << i;
        }
      }
    });
  }
}

/// Varied values (integers among them once converted): offset + scale * ((7 i) mod 11) + i / 100.
inline Array ramp(const Shape& s, double scale = 0.1, double offset = -0.3,
                  DType dtype = DType::float64) {
  std::vector<double> v(static_cast<std::size_t>(s.size()));
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = offset + scale * static_cast<double>((i * 7) % 11) + 0.01 * static_cast<double>(i);
  return xpr::array(v, s, dtype);
}

TEST(Aot, ElementwiseIsSizePolymorphicAndEqualsEager) {
  auto f = [](const Array& x, const Array& y) { return xpr::sin(x) * y + xpr::exp(x * y); };
  const ScratchDir dir("elementwise");
  aot::Exported e = aot::export_source(f, std::tuple{ramp({5}), ramp({5}, 0.2)}, dir, "fe");
  EXPECT_EQ(e.declaration,
            "int fe(const double* in0, const double* in1, double* out0, long long n0)");
  ASSERT_EQ(e.size_examples, std::vector<long long>{5});
  fs::path so = aot::compile_library(dir, "fe");
  EXPECT_EQ(listing(dir), (std::set<std::string>{"fe.h", "fe.cpp", "libfe.so"}));
  CallFn fn = load(so, "fe");
  for (long long n : {5LL, 1LL, 0LL, 17LL, 1000LL}) {
    Arrays args{ramp({n}), ramp({n}, 0.2)};
    expect_matches(fn, args, {n}, {f(args[0], args[1])}, "n=" + std::to_string(n));
  }
}

TEST(Aot, GradOfAFunctionEqualsEager) {
  auto loss = [](const Array& w, const Array& x) {
    return xpr::sum(xpr::tanh(w * x) * w) + xpr::sum(w * w) * 0.5;
  };
  auto g = xpr::grad(loss);
  const ScratchDir dir("grad");
  aot::Exported e = aot::export_source(g, std::tuple{ramp({4, 3}), ramp({4, 3}, 0.3)}, dir, "g");
  ASSERT_EQ(e.size_examples, (std::vector<long long>{4, 3}));
  CallFn fn = load(aot::compile_library(dir, "g"), "g");
  for (auto [a, b] : {std::pair{4LL, 3LL}, std::pair{7LL, 2LL}, std::pair{1LL, 9LL}}) {
    Arrays args{ramp({a, b}), ramp({a, b}, 0.3)};
    expect_matches(fn, args, {a, b}, {g(args[0], args[1])}, "grad");
  }
}

TEST(Aot, LoopsRunWithoutTheHostsIterationLimit) {
  // A Newton iteration for sqrt(a) elementwise (a while loop on the residual) and a fixed-step
  // Euler integration of x' = -x (fori_loop, a scan): the exported wrapper sets up the loop
  // control block the jit host would fill.
  auto newton = [](const Array& a) {
    auto state =
        xpr::while_loop([](const std::tuple<Array, Array>& s) { return std::get<1>(s) > 0.5; },
                        [&a](const std::tuple<Array, Array>& s) {
                          const Array& x = std::get<0>(s);
                          Array next = (x + a / x) * 0.5;
                          return std::tuple{next, xpr::max(xpr::abs(next - x)) * 1e12};
                        },
                        std::tuple{a + 1.0, Array(1.0)});
    return std::get<0>(state);
  };
  const ScratchDir dir("loops");
  aot::export_source(newton, std::tuple{ramp({6}, 0.3, 0.5)}, dir, "newton");
  CallFn fn = load(aot::compile_library(dir, "newton"), "newton");
  for (long long n : {6LL, 1LL, 40LL}) {
    Arrays args{ramp({n}, 0.3, 0.5)};
    expect_matches(fn, args, {n}, {newton(args[0])}, "newton n=" + std::to_string(n));
    const Array got = newton(args[0]);
    for (std::int64_t i = 0; i < n; ++i)  // and the closed form
      EXPECT_NEAR(got.data<double>()[i], std::sqrt(args[0].data<double>()[i]), 1e-13);
  }
  auto euler = [](const Array& x0) {
    return xpr::fori_loop(
        0, 100, [](const Array&, const Array& x) { return x - 0.01 * x; }, x0);
  };
  const ScratchDir dir2("euler");
  aot::export_source(euler, std::tuple{ramp({3})}, dir2, "euler");
  CallFn fe = load(aot::compile_library(dir2, "euler"), "euler");
  Arrays args{ramp({3})};
  expect_matches(fe, args, {3}, {euler(args[0])}, "euler");
}

TEST(Aot, DotUsesTheExportedGemm) {
  // A matrix product, a product with a transposed operand, and a batched one.
  auto f = [](const Array& a, const Array& b, const Array& c) {
    return std::vector<Array>{xpr::matmul(a, b), xpr::matmul(xpr::transpose(b), xpr::transpose(a)),
                              xpr::matmul(a, xpr::transpose(c)),
                              xpr::dot_general(b, b, {{0}, {0}, {}, {}})};
  };
  const ScratchDir dir("dot");
  aot::Exported e = aot::export_source(
      f, std::tuple{ramp({3, 4}), ramp({4, 5}, 0.2), ramp({5, 4}, 0.05)}, dir, "mm");
  ASSERT_EQ(e.size_examples, (std::vector<long long>{3, 4, 5}));
  const std::string src = codegen::detail::read_text(e.source.string());
  EXPECT_NE(src.find("xpr_gemm_t"), std::string::npos);
  EXPECT_EQ(src.find("#include <Eigen"), std::string::npos);
  CallFn fn = load(aot::compile_library(dir, "mm"), "mm");
  for (auto [m, k, n] :
       {std::tuple{3LL, 4LL, 5LL}, std::tuple{40LL, 130LL, 1100LL}, std::tuple{2LL, 0LL, 3LL}}) {
    Arrays args{ramp({m, k}), ramp({k, n}, 0.2), ramp({n, k}, 0.05)};
    expect_matches(fn, args, {m, k, n}, f(args[0], args[1], args[2]), "dot");
  }
}

TEST(Aot, SizeDependentCodeTakesNoSizes) {
  // The reshape's target sizes are constants of the program: the export is for [2, 6] only.
  auto f = [](const Array& x) { return xpr::sum(xpr::reshape(x, {3, 4}), 0) * 2.0; };
  const ScratchDir dir("fixed");
  aot::Exported e = aot::export_source(f, ramp({2, 6}), dir, "fx");
  EXPECT_EQ(e.declaration, "int fx(const double* in0, double* out0)");
  EXPECT_TRUE(e.size_names.empty());
  CallFn fn = load(aot::compile_library(dir, "fx"), "fx");
  Arrays args{ramp({2, 6})};
  expect_matches(fn, args, {}, {f(args[0])}, "fixed");
}

TEST(Aot, ConstantsScalarsAndPassThroughOutputs) {
  const Array c = xpr::array({1.5, -2.0, 0.25});
  auto f = [c](const Array& x, const Array& s) {
    return std::vector<Array>{x * c + s, x, xpr::sum(x) * s};
  };
  const ScratchDir dir("consts");
  aot::Exported e = aot::export_source(f, std::tuple{ramp({3}), 2.0}, dir, "fc");
  EXPECT_TRUE(e.size_names.empty());  // x * c ties x to c's fixed size
  CallFn fn = load(aot::compile_library(dir, "fc"), "fc");
  Arrays args{ramp({3}), xpr::array(std::vector<double>{2.0}, Shape{})};
  expect_matches(fn, args, {}, f(args[0], args[1]), "consts");
}

TEST(Aot, SizesAreCheckedAtRunTime) {
  auto f = [](const Array& x) { return xpr::exp(x) + 1.0; };
  const ScratchDir dir("sizes");
  aot::export_source(f, ramp({4}), dir, "fs");
  CallFn fn = load(aot::compile_library(dir, "fs"), "fs");
  double x = 0, y = 0;
  const void* ins[] = {&x};
  void* outs[] = {&y};
  const long long negative[] = {-1}, huge[] = {4611686018427387904LL};
  EXPECT_EQ(fn(ins, outs, negative), 1);
  EXPECT_EQ(fn(ins, outs, huge), 2);
  const long long one[] = {1};
  EXPECT_EQ(fn(ins, outs, one), 0);
  EXPECT_DOUBLE_EQ(y, 2.0);
}

// Code generated at the example's sizes reads x[1], or the first element of a max, at every
// size: below the smallest size at which the function traces, the exported function returns 5
// instead of reading past the input (an examiner's export of x[1] * 2 read in0[1] at n0 = 1).
TEST(Aot, SizesBelowWhereTheFunctionTracesAreRefused) {
  struct Case {
    std::string name;
    std::function<Array(const Array&)> f;
    long long smallest;
  };
  const std::vector<Case> cases = {
      {"idx", [](const Array& x) { return x[1] * 2.0; }, 2},
      {"last", [](const Array& x) { return x[-1] + 1.0; }, 1},
      {"mx", [](const Array& x) { return xpr::max(x); }, 1},
      {"am", [](const Array& x) { return xpr::argmax(x); }, 1},
      {"sl", [](const Array& x) { return xpr::slice(x, {2}, {4}) * 3.0; }, 4},
      {"sn", [](const Array& x) { return xpr::sin(x); }, 0},
      {"sm", [](const Array& x) { return xpr::sum(x); }, 0},
  };
  int polymorphic = 0;
  for (const Case& c : cases) {
    const ScratchDir dir("smallest_" + c.name);
    aot::Exported e = aot::export_source(c.f, ramp({7}), dir, c.name);
    if (e.size_names.empty()) continue;  // x[-1]: its code depends on the size, so fixed sizes
    ++polymorphic;
    ASSERT_EQ(e.size_minimums, std::vector<long long>{c.smallest}) << c.name;
    std::ifstream hf(e.header);
    std::stringstream hs;
    hs << hf.rdbuf();
    const std::string header = hs.str();
    EXPECT_EQ(header.find("a size >= ") != std::string::npos, c.smallest > 0) << header;
    CallFn fn = load(aot::compile_library(dir, c.name), c.name);
    for (long long n = 0; n <= 9; ++n) {
      std::vector<double> x(static_cast<std::size_t>(n) + 1, 1e300);  // one guard element
      const Array in = ramp({n});
      std::copy(in.data<double>(), in.data<double>() + n, x.begin());
      double out[16] = {};
      const void* ins[] = {x.data()};
      void* outs[] = {out};
      const long long sizes[] = {n};
      const int rc = fn(ins, outs, sizes);
      if (n < c.smallest) {
        EXPECT_EQ(rc, 5) << c.name << " n=" << n;
        EXPECT_THROW((void)c.f(in), xpr::error) << c.name << " n=" << n;  // eager agrees
      } else {
        ASSERT_EQ(rc, 0) << c.name << " n=" << n;
        const Array want = xpr::astype(c.f(in), DType::float64);  // argmax: int32
        const Array got =
            xpr::astype(xpr::array(std::vector<double>(out, out + want.size())), DType::float64);
        for (std::int64_t i = 0; i < want.size(); ++i) {
          const double g = c.name == "am"
                               ? static_cast<double>(reinterpret_cast<const std::int32_t*>(out)[i])
                               : got.data<double>()[i];
          EXPECT_EQ(g, want.data<double>()[i]) << c.name << " n=" << n;
        }
      }
    }
  }
  EXPECT_GE(polymorphic, 6);
}

TEST(Aot, NamesMustBeCIdentifiers) {
  const ScratchDir dir("names");
  auto f = [](const Array& x) { return x * 2.0; };
  for (const char* bad : {"", "a;b", "../evil", "x\ny", "int", "1abc", "__x", "_Cap", "a b",
                          "xpr_kernel", "a\"b", "a__b", "f/g",
                          // Names the C library has: as an exported C function, `j1` would be
                          // bound to libm's Bessel function (an examiner's silent garbage).
                          "j1", "sin", "free", "aligned_alloc", "printf", "exit", "environ",
                          "assert", "errno", "size_t", "int32_t", "std", "my_t", "NULL"}) {
    EXPECT_THROW(aot::export_source(f, ramp({3}), dir / "out", bad), xpr::value_error) << bad;
    EXPECT_THROW(aot::compile_library(dir, bad), xpr::value_error) << bad;
  }
  EXPECT_TRUE(listing(dir).empty());
  try {
    aot::export_source(f, ramp({3}), dir / "out", "j1");
  } catch (const xpr::value_error& e) {
    EXPECT_NE(std::string(e.what()).find("as libm defines sin and j1"), std::string::npos)
        << e.what();
  }
  for (const char* good : {"j1x", "lj_forces", "f", "sine"})
    EXPECT_NO_THROW(aot::export_source(f, ramp({3}), dir / good, good)) << good;
}

TEST(Aot, JaxprWithNamedSizes) {
  const std::string text =
      "{ lambda ; a:f64[3] b:f64[3,2]. let\n"
      "    c:f64[3] = sin a\n"
      "    d:f64[3] = reduce_sum[axes=(1,)] b\n"
      "    e:f64[3] = mul c d\n"
      "  in (e,) }";
  ClosedJaxpr j = parse_jaxpr(text);
  const ScratchDir dir("named");
  aot::Exported e = aot::export_source(j, {"f64[n]", "f64[n,k]"}, dir, "fj");
  EXPECT_EQ(e.size_names, (std::vector<std::string>{"n", "k"}));
  CallFn fn = load(aot::compile_library(dir, "fj"), "fj");
  for (auto [n, k] : {std::pair{3LL, 2LL}, std::pair{50LL, 7LL}}) {
    Arrays args{ramp({n}), ramp({n, k}, 0.4)};
    Array want = xpr::sin(args[0]) * xpr::sum(args[1], 1);
    expect_matches(fn, args, {n, k}, {want}, "named");
  }
  // A size the code depends on cannot be a parameter.
  const std::string fixed =
      "{ lambda ; a:f64[6]. let b:f64[2,3] = reshape[new_sizes=(2, 3) dimensions=None] a in (b,) }";
  EXPECT_THROW(aot::export_source(parse_jaxpr(fixed), {"f64[n]"}, dir, "fr"), xpr::value_error);
  EXPECT_THROW(aot::export_source(j, {"f64[n]"}, dir, "fr"), xpr::value_error);  // arity
  EXPECT_THROW(aot::export_source(j, {"f32[n]", "f32[n,k]"}, dir, "fr"), xpr::dtype_error);
  EXPECT_THROW(aot::export_source(j, {"f64[n", "f64[n,k]"}, dir, "fr"), xpr::value_error);
  EXPECT_THROW(aot::export_source(j, {"f64[n;]", "f64[n,k]"}, dir, "fr"), xpr::value_error);
  // Another rank, or another number where no name is given, is refused (an examiner's
  // `--types 'f32[2,2]'` for `a:f32[3]` exported a sum over one axis of a 2x2 input).
  EXPECT_THROW(aot::export_source(j, {"f64[n,2]", "f64[n,k]"}, dir, "fr"), xpr::shape_error);
  EXPECT_THROW(aot::export_source(j, {"f64[n]", "f64[n]"}, dir, "fr"), xpr::shape_error);
  EXPECT_THROW(aot::export_source(j, {"f64[4]", "f64[4,2]"}, dir, "fr"), xpr::shape_error);
  EXPECT_THROW(aot::export_source(j, {"f64[n]", "f64[n,3]"}, dir, "fr"), xpr::shape_error);
  aot::Exported own = aot::export_source(j, {"f64[3]", "f64[3,2]"}, dir, "fown");
  EXPECT_TRUE(own.size_names.empty());
  aot::Exported part = aot::export_source(j, {"f64[n]", "f64[n,2]"}, dir, "fpart");
  EXPECT_EQ(part.size_names, (std::vector<std::string>{"n"}));
}

// ---- xprc ---------------------------------------------------------------------------------------

inline int xprc(const std::vector<std::string>& args, std::string* err_text = nullptr) {
  std::ostringstream out, err;
  int rc = aot::run_xprc(args, out, err);
  if (err_text) *err_text = err.str();
  return rc;
}

// A jaxpr holds its sizes as numbers where the function used them: JAX prints `x[-1]` on
// f64[5] as `add i 5`. Exported without names, it takes its own sizes; with a named size that a
// number of it equals, the export is refused (an examiner's xprc export gave x[4] at size 7).
TEST(Aot, JaxprNumbersThatMayBeSizes) {
  const std::string text =
      "{ lambda ; a:f64[5] b:i32[]. let\n"
      "    c:bool[] = lt b 0:i32[]\n"
      "    d:i32[] = add b 5:i32[]\n"
      "    e:i32[] = select_n c b d\n"
      "    f:f64[1] = dynamic_slice[slice_sizes=(1,)] a e\n"
      "    g:f64[] = squeeze[dimensions=(0,)] f\n"
      "    h:f64[] = sin g\n"
      "  in (h,) }";
  ClosedJaxpr j = parse_jaxpr(text);
  const ScratchDir dir("size-numbers");
  aot::Exported e = aot::export_source(j, {}, dir, "last");
  EXPECT_TRUE(e.size_names.empty());
  CallFn fn = load(aot::compile_library(dir, "last"), "last");
  Array x = ramp({5}, 0.3, 0.1);
  for (std::int32_t i : {-1, -5, 0, 3}) {
    const Array idx = xpr::array(std::vector<std::int32_t>{i}, Shape{});
    Array want = eval_jaxpr(j, {x, idx})[0];
    expect_matches(fn, {x, idx}, {}, {want}, "own sizes");
    EXPECT_DOUBLE_EQ(want.item<double>(), std::sin(x.to_vector<double>()[(i + 5) % 5]));
  }
  try {
    aot::export_source(j, {"f64[n]", "i32[]"}, dir, "last2");
    ADD_FAILURE() << "a number equal to the named size was accepted";
  } catch (const xpr::value_error& err) {
    EXPECT_NE(std::string(err.what()).find("found the literal 5 in add, the size n has"),
              std::string::npos)
        << err.what();
  }
  std::ofstream(dir / "t.jaxpr") << text;
  std::string out = (dir / "o").string(), err_text;
  EXPECT_EQ(xprc({(dir / "t.jaxpr").string(), "--name", "last3", "--out", out, "--types", "f64[n]",
                  "i32[]"},
                 &err_text),
            1);
  EXPECT_NE(err_text.find("stand for the sizes"), std::string::npos) << err_text;
}

TEST(Xprc, UsageErrorsAndExitCodes) {
  const ScratchDir dir("xprc");
  const fs::path in = dir / "f.jaxpr";
  std::ofstream(in)
      << "{ lambda ; a:f32[4]. let b:f32[4] = cos a; c:f32[4] = mul b 2.0:f32[] in (c,) }";
  std::string err;
  EXPECT_EQ(xprc({}, &err), 2);
  EXPECT_NE(err.find("expected an input file"), std::string::npos) << err;
  EXPECT_EQ(xprc({in.string(), "--out", (dir / "o").string()}, &err), 2);
  EXPECT_NE(err.find("--name"), std::string::npos) << err;
  EXPECT_EQ(xprc({in.string(), "--name", "f"}, &err), 2);
  EXPECT_EQ(xprc({in.string(), "--name", "f", "--out", "x", "--bogus"}, &err), 2);
  EXPECT_NE(err.find("unknown option --bogus"), std::string::npos) << err;
  EXPECT_EQ(xprc({in.string(), "--name"}, &err), 2);
  EXPECT_EQ(xprc({(dir / "missing").string(), "--name", "f", "--out", "o"}, &err), 1);
  EXPECT_EQ(xprc({in.string(), "--name", "f;rm", "--out", (dir / "o").string()}, &err), 1);
  EXPECT_NE(err.find("C identifier"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(dir / "o"));
  EXPECT_EQ(xprc({in.string(), "--name", "fc", "--out", (dir / "o").string(), "--shared", "--types",
                  "f32[n]"},
                 &err),
            0)
      << err;
  EXPECT_EQ(listing(dir / "o"), (std::set<std::string>{"fc.h", "fc.cpp", "libfc.so"}));
  // A jaxpr with constvars: refused in one message, prefixed once.
  std::ofstream(dir / "k.jaxpr") << "{ lambda a:f32[4]; b:f32[4]. let c:f32[4] = mul a b in (c,) }";
  EXPECT_EQ(xprc({(dir / "k.jaxpr").string(), "--name", "k", "--out", (dir / "ko").string()}, &err),
            1);
  EXPECT_EQ(err.rfind("xprc: expected a jaxpr without constvars", 0), 0u) << err;
  EXPECT_EQ(err.find("xprc: xprc:"), std::string::npos) << err;
  CallFn fn = load(dir / "o" / "libfc.so", "fc");
  Arrays args{ramp({9}, 0.1, -0.3, DType::float32)};
  expect_matches(fn, args, {9}, {xpr::cos(args[0]) * 2.0f}, "xprc");
}

/// Custom-derivative calls as JAX prints them (its rules are Python callables, printed as
/// `<function ...>`; JAX before 0.4.36 printed custom_vjp as `custom_vjp_call_jaxpr`): xprc
/// compiles their `call_jaxpr`. Each computes sin(2 a) + a.
TEST(Xprc, JaxCustomDerivativeCalls) {
  const std::string body =
      "{ lambda ; c:f32[3]. let d:f32[3] = mul c 2.0:f32[]; e:f32[3] = sin d in (e,) }";
  const std::vector<std::string> calls = {
      "custom_jvp_call[\n      name=f\n      call_jaxpr=" + body +
          "\n      jvp_jaxpr_fun=<function _memoize.<locals>.memoized at 0x7f3c8c1b1e40>\n"
          "      num_consts=0\n      symbolic_zeros=False\n    ]",
      "custom_jvp_call[name=<lambda> call_jaxpr=" + body +
          " jvp_jaxpr_thunk=f_jvp num_consts=0 symbolic_zeros=False]",
      "custom_vjp_call[\n      name=f\n      bwd=f_bwd\n      call_jaxpr=" + body +
          "\n      fwd_jaxpr_thunk=<function _memoize.<locals>.memoized at 0x7f3c8c1b1e40>\n"
          "      num_consts=0\n"
          "      out_trees=<function transformation_with_aux2.<locals>.<lambda> at 0x7f3c>\n"
          "      symbolic_zeros=False\n    ]",
      "custom_vjp_call_jaxpr[\n      bwd=<function f_bwd at 0x7f3c8c1b1e40>\n      fun_jaxpr=" +
          body +
          "\n      fwd_jaxpr_thunk=<function _memoize.<locals>.memoized at 0x7f3c8c1b1e40>\n"
          "      num_consts=0\n      out_trees=<function <lambda> at 0x7f3c>\n"
          "      symbolic_zeros=False\n    ]",
  };
  const ScratchDir dir("jax-custom");
  int k = 0;
  for (const std::string& call : calls) {
    const std::string text = "{ lambda ; a:f32[3]. let\n    b:f32[3] = " + call +
                             " a\n    g:f32[3] = add b a\n  in (g,) }";
    std::ofstream(dir / "f.jaxpr") << text;
    const std::string name = "cd" + std::to_string(k++);
    std::string err;
    ASSERT_EQ(xprc({(dir / "f.jaxpr").string(), "--name", name, "--out", (dir / "o").string(),
                    "--shared", "--types", "f32[n]"},
                   &err),
              0)
        << err << text;
    CallFn fn = load(dir / "o" / ("lib" + name + ".so"), name);
    Arrays args{ramp({6}, 0.1, -0.3, DType::float32)};
    Array want = xpr::sin(args[0] * 2.0f) + args[0];
    std::vector<float> got(6);
    const void* ins[] = {args[0].concrete()->bytes()};
    void* outs[] = {got.data()};
    const long long sizes[] = {6};
    ASSERT_EQ(fn(ins, outs, sizes), 0);
    for (std::size_t i = 0; i < 6; ++i)
      EXPECT_NEAR(got[i], want.to_vector<float>()[i], 2e-6) << text;
    // Parsed, the call evaluates; it cannot be differentiated (its rule stayed in Python).
    ClosedJaxpr j = parse_jaxpr(text);
    Arrays three{ramp({3}, 0.1, -0.3, DType::float32)};
    Array want3 = xpr::sin(three[0] * 2.0f) + three[0];
    for (std::size_t i = 0; i < 3; ++i)
      EXPECT_NEAR(eval_jaxpr(j, three)[0].to_vector<float>()[i], want3.to_vector<float>()[i], 2e-6);
    auto through_text = [&](const Array& x) { return xpr::sum(eval_jaxpr(j, {x})[0]); };
    EXPECT_THROW((void)xpr::grad(through_text)(three[0]), xpr::core::not_implemented_error);
  }
}

#ifdef XPR_XPRC_PATH
TEST(Xprc, TheInstalledToolRuns) {
  const ScratchDir dir("xprc-tool");
  std::ofstream(dir / "f.jaxpr") << "{ lambda ; a:f64[3]. let b:f64[3] = neg a in (b,) }";
  const std::string cmd = std::string(XPR_XPRC_PATH) + " " + (dir / "f.jaxpr").string() +
                          " --name neg3 --out " + (dir / "o").string() + " > " +
                          (dir / "log").string() + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_EQ(listing(dir / "o"), (std::set<std::string>{"neg3.h", "neg3.cpp"}));
  const std::string bad =
      std::string(XPR_XPRC_PATH) + " --nope > " + (dir / "log").string() + " 2>&1";
  int rc = std::system(bad.c_str());
  EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 2);
  EXPECT_NE(codegen::detail::read_text((dir / "log").string()).find("usage: xprc"),
            std::string::npos);
}
#endif

// ---- fuzz
// -----------------------------------------------------------------------------------------

/// Mutations of a small valid program: hostile names, sizes, parameters and primitives.
inline std::vector<std::string> mutations(std::mt19937& g) {
  const std::string base =
      "{ lambda ; a:f64[4] b:f64[4]. let\n"
      "    c:f64[4] = add a b\n"
      "    d:f64[4] = sin c\n"
      "    e:f64[] = reduce_sum[axes=(0,)] d\n"
      "    f:f64[4] = mul d e\n"
      "  in (f, e) }";
  std::vector<std::string> out = {base};
  const std::vector<std::pair<std::string, std::string>> edits = {
      {"c:f64[4] = add", "c\":f64[4] = add"},
      {"c:f64[4] = add a b", "c:f64[4] = add a b; system(\"rm -rf /\")"},
      {"d:f64[4] = sin c", "d:f64[4] = sin\nc"},
      {"a:f64[4]", "a:f64[-4]"},
      {"a:f64[4] b:f64[4]", "a:f64[9223372036854775807] b:f64[9223372036854775807]"},
      {"a:f64[4] b:f64[4]", "a:f64[4000000000,4000000000] b:f64[4000000000,4000000000]"},
      {"[axes=(0,)]", "[axes=(0,) evil=\"}; int main(){}\"]"},
      {"[axes=(0,)]", "[axes=(7,)]"},
      {"[axes=(0,)]", "[axes=(-1,)]"},
      {"sin c", "launch_missiles c"},
      {"sin c", "sin[accuracy=None] c"},
      {"add a b", "add a 1e308:f64[]"},
      {"add a b", "add a nan:f64[]"},
      {"add a b", "add a -inf:f64[]"},
      {"mul d e", "mul d 3:i32[]"},
      {"in (f, e)", "in (f, e, a, 2.5:f64[])"},
      {"in (f, e)", "in (q,)"},
      {"{ lambda", "{ lambda x:f64[2]"},
      {"f64[4] = add", "f32[4] = add"},
      {"e:f64[]", "e:f64[1]"},
      {"let",
       "let\n    z:f64[4] = pjit[name=\"x;y\" jaxpr={ lambda ; p:f64[4]. let q:f64[4] = cos p in "
       "(q,) }] a"},
  };
  for (const auto& [from, to] : edits) {
    std::string s = base;
    auto pos = s.find(from);
    if (pos == std::string::npos) continue;
    out.push_back(s.replace(pos, from.size(), to));
  }
  // Random byte edits of the base.
  const std::string alphabet = "abcdefxyz0123456789[](){}:;,.=\"'\n -_%$#";
  for (int k = 0; k < 40; ++k) {
    std::string s = base;
    for (int m = 0; m < 1 + static_cast<int>(g() % 3); ++m) {
      std::size_t at = g() % s.size();
      char c = alphabet[g() % alphabet.size()];
      switch (g() % 3) {
        case 0:
          s[at] = c;
          break;
        case 1:
          s.insert(s.begin() + static_cast<std::ptrdiff_t>(at), c);
          break;
        default:
          s.erase(at, 1);
      }
    }
    out.push_back(s);
  }
  return out;
}

TEST(AotFuzz, MutatedJaxprsFailCleanlyOrMatchTheInterpreter) {
  std::mt19937 g(20261127);
  const ScratchDir parent("fuzz");
  int compiled = 0, refused = 0;
  int k = 0;
  for (const std::string& text : mutations(g)) {
    const fs::path in = parent / "in.jaxpr";
    const fs::path out = parent / "out";
    std::ofstream(in) << text;
    const std::string name = "fz" + std::to_string(k++);
    std::string err;
    const int rc = xprc({in.string(), "--name", name, "--out", out.string(), "--shared"}, &err);
    // Nothing is written beside the output directory.
    std::set<std::string> top = listing(parent);
    top.erase("in.jaxpr");
    top.erase("out");
    EXPECT_TRUE(top.empty()) << text;
    if (rc != 0) {
      ++refused;
      EXPECT_EQ(rc, 1) << text;
      EXPECT_EQ(err.rfind("xprc: ", 0), 0u) << err;
      EXPECT_GT(err.size(), 8u) << err;
      if (fs::exists(out)) {
        for (const std::string& f : listing(out))
          EXPECT_TRUE(f == name + ".h" || f == name + ".cpp") << f;  // written before a failure
        fs::remove_all(out);
      }
      continue;
    }
    ++compiled;
    EXPECT_EQ(listing(out),
              (std::set<std::string>{name + ".h", name + ".cpp", "lib" + name + ".so"}))
        << text;
    // The same text through the library: the reference and the sizes the export takes.
    ClosedJaxpr j = parse_jaxpr(text);
    aot::Exported e = aot::export_source(j, {}, parent / "again", name);
    fs::remove_all(parent / "again");
    Arrays args;
    for (const auto& a : j.jaxpr.in_avals()) args.push_back(ramp(a.shape, 1.5, -4.0, a.dtype));
    Arrays want = eval_jaxpr(j, args);
    expect_matches(load(out / ("lib" + name + ".so"), name), args, e.size_examples, want, text);
    fs::remove_all(out);
  }
  std::cout << "fuzz: " << compiled << " texts compiled, " << refused << " refused\n";
  EXPECT_GT(compiled, 5);
  EXPECT_GT(refused, 10);
}

}  // namespace test_jit_aot
