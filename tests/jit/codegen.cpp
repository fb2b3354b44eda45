// SPDX-License-Identifier: MIT
// Tests of include/xpr/codegen/{emit,kernel,execute}.hpp: compiled jaxprs give the interpreter's
// results (every lowered primitive, then seeded random compositions), kernels are shared across
// sizes, the generated source is header-free and holds only generated names.
#include <atomic>
#include <cfenv>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <functional>
#include <limits>
#include <pthread.h>
#include <random>
#include <signal.h>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/codegen/execute.hpp"
#include "xpr/rt/checkpoint.hpp"
#include "xpr/rt/custom_derivatives.hpp"
#include "xpr/xpr.hpp"

namespace test_jit_codegen {

using namespace xpr;
using xpr::rt::Arrays;

/// A random array: floats in [-2, 2], integers in [-20, 20], bools half true.
inline Array random_array(std::mt19937& g, const Shape& s, DType t) {
  rt::ArrayBuilder b(rt::ShapedArray{s, t, false});
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  std::uniform_int_distribution<int> k(-20, 20);
  auto n = static_cast<std::size_t>(s.size());
  rt::dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    T* p = b.data<T>();
    for (std::size_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<T, bool>)
        p[i] = k(g) > 0;
      else if constexpr (std::is_integral_v<T>)
        p[i] = static_cast<T>(k(g));
      else
        p[i] = static_cast<T>(u(g));
    }
  });
  return std::move(b).finish();
}

/// Compares element by element with a tolerance from the dtype (libmvec is within ~4 ulp; a
/// reduction's order of additions differs from the interpreter's).
inline void expect_close(const Array& got, const Array& want, const std::string& what) {
  ASSERT_EQ(got.aval(), want.aval()) << what;
  const double tol = got.dtype() == DType::float32   ? 2e-5
                     : got.dtype() == DType::float64 ? 1e-12
                                                     : 0;
  auto n = static_cast<std::size_t>(got.size());
  rt::dispatch_dtype(got.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* a = got.data<T>();
    const T* b = want.data<T>();
    for (std::size_t i = 0; i < n; ++i) {
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(b[i])) {
          EXPECT_TRUE(std::isnan(a[i])) << what << " at " << i;
        } else if (std::isinf(b[i])) {
          EXPECT_EQ(a[i], b[i]) << what << " at " << i;
        } else {
          EXPECT_NEAR(a[i], b[i], tol * (1 + std::abs(b[i]))) << what << " at " << i;
        }
      } else {
        EXPECT_EQ(a[i], b[i]) << what << " at " << i;
      }
    }
  });
}

/// Compiles `j` (must lower: no fallback) and compares with eval_jaxpr.
inline void check_compiled(const ClosedJaxpr& j, const std::vector<Array>& args,
                           const std::string& what) {
  auto k = codegen::compile(j.jaxpr);
  Arrays got = k->run(args, j.consts);
  Arrays want = eval_jaxpr(j.jaxpr, j.consts, args);
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], what);
}

using Fn1 = std::function<Array(const Array&)>;
using Fn2 = std::function<Array(const Array&, const Array&)>;

TEST(JitCodegen, EveryUnaryPrimitive) {
  std::mt19937 g(1);
  const std::vector<std::pair<std::string, Fn1>> fs = {
      {"neg", [](const Array& x) { return -x; }},
      {"sin", [](const Array& x) { return xpr::sin(x); }},
      {"cos", [](const Array& x) { return xpr::cos(x); }},
      {"tan", [](const Array& x) { return xpr::tan(x); }},
      {"tanh", [](const Array& x) { return xpr::tanh(x); }},
      {"exp", [](const Array& x) { return xpr::exp(x); }},
      {"log", [](const Array& x) { return xpr::log(xpr::abs(x) + 0.5); }},
      {"log1p", [](const Array& x) { return xpr::log1p(xpr::abs(x)); }},
      {"expm1", [](const Array& x) { return xpr::expm1(x); }},
      {"sqrt", [](const Array& x) { return xpr::sqrt(xpr::abs(x)); }},
      {"rsqrt", [](const Array& x) { return xpr::rsqrt(xpr::abs(x) + 1.0); }},
      {"abs", [](const Array& x) { return xpr::abs(x); }},
      {"sign", [](const Array& x) { return xpr::sign(x); }},
      {"logistic", [](const Array& x) { return xpr::logistic(x); }},
      {"integer_pow",
       [](const Array& x) {
         return xpr::integer_pow(x, 3) + xpr::integer_pow(x, -2) + xpr::integer_pow(x, 0);
       }},
      {"stop_gradient", [](const Array& x) { return xpr::stop_gradient(x) * 2.0; }},
      {"square", [](const Array& x) { return xpr::square(x); }},
      {"exp2", [](const Array& x) { return xpr::exp2(x); }},
      {"cbrt", [](const Array& x) { return xpr::cbrt(x); }},  // negative operands too
      {"erf", [](const Array& x) { return xpr::erf(x); }},
      {"floor", [](const Array& x) { return xpr::floor(x * 3.0); }},
      {"ceil", [](const Array& x) { return xpr::ceil(x * 3.0); }},
      {"round", [](const Array& x) { return xpr::round(x * 3.0); }},
      {"round away",
       [](const Array& x) { return xpr::round(x * 3.0, rounding_method::away_from_zero); }},
      {"copy", [](const Array& x) { return xpr::copy(x) + x; }},
      {"is_finite", [](const Array& x) { return xpr::isfinite(x / x); }},  // 0/0 is NaN
  };
  for (DType t : {DType::float64, DType::float32})
    for (const auto& [name, f] : fs)
      for (const Shape& s : {Shape{}, Shape{7}, Shape{3, 5}, Shape{0}}) {
        Array x = random_array(g, s, t);
        check_compiled(make_jaxpr(f)(x), {x}, name + " " + x.aval().str());
      }
  // Integer and bool operands of the ops that take them.
  for (DType t : {DType::int32, DType::int64}) {
    Array xi = random_array(g, Shape{9}, t);
    for (const auto& [name, f] : std::vector<std::pair<std::string, Fn1>>{
             {"neg", [](const Array& v) { return -v; }},
             {"abs", [](const Array& v) { return xpr::abs(v); }},
             {"sign", [](const Array& v) { return xpr::sign(v); }},
             {"ipow", [](const Array& v) { return xpr::integer_pow(v, 5); }},
             {"square", [](const Array& v) { return xpr::square(v * 100000); }},  // wraps
             {"not", [](const Array& v) { return xpr::bitwise_not(v); }},
             {"and or xor", [](const Array& v) { return ((v & 6) | (v ^ 3)) ^ (v * 7); }},
             {"copy", [](const Array& v) { return xpr::copy(v); }}})
      check_compiled(make_jaxpr(f)(xi), {xi}, name + " " + xi.aval().str());
  }
  Array b = random_array(g, Shape{9}, DType::bool_);
  check_compiled(make_jaxpr([](const Array& v) { return xpr::bitwise_not(v); })(b), {b},
                 "not bool");
  Array c = random_array(g, Shape{9}, DType::bool_);
  check_compiled(make_jaxpr([](const Array& v, const Array& w) {
                   return std::vector<Array>{v & w, v | w, v ^ w, xpr::logical_and(v, ~w)};
                 })(b, c),
                 {b, c}, "and or xor bool");
  check_compiled(make_jaxpr([](const Array& v) { return xpr::copy(v); })(b), {b}, "copy bool");
}

// Halves, signed zeros, infinities and NaN through the rounding primitives and is_finite,
// compiled against the interpreter and against the rounding rules themselves.
TEST(JitCodegen, RoundingAtHalvesAndSpecialValues) {
  constexpr double inf = INFINITY, nan = NAN;
  Array x = array(std::vector<double>{0.5, 1.5, 2.5, -0.5, -1.5, -2.5, -0.0, 2.25, inf, -inf, nan});
  auto f = [](const Array& v) {
    return std::vector<Array>{xpr::round(v), xpr::round(v, rounding_method::away_from_zero),
                              xpr::floor(v), xpr::ceil(v), xpr::isfinite(v)};
  };
  ClosedJaxpr j = make_jaxpr(f)(x);
  check_compiled(j, {x}, "rounding");
  Arrays got = codegen::compile(j.jaxpr)->run(std::vector<Array>{x});
  const std::vector<double> even = {0, 2, 2, -0.0, -2, -2, -0.0, 2, inf, -inf};
  const std::vector<double> away = {1, 2, 3, -1, -2, -3, -0.0, 2, inf, -inf};
  for (std::size_t i = 0; i < even.size(); ++i) {
    EXPECT_EQ(got[0].to_vector<double>()[i], even[i]) << i;
    EXPECT_EQ(got[1].to_vector<double>()[i], away[i]) << i;
  }
  EXPECT_TRUE(std::isnan(got[0].to_vector<double>()[10]));
  EXPECT_EQ(got[4].to_vector<bool>(), (std::vector<bool>{true, true, true, true, true, true, true,
                                                         true, false, false, false}));
}

// sign keeps a zero's sign (XLA's sign: -0.0 gives -0.0) and NaN, in the eager kernels' SIMD
// body and their scalar tail alike (11 elements: both) and in the generated loop.
TEST(JitCodegen, SignOfSignedZerosAndNaN) {
  constexpr double inf = INFINITY, nan = NAN;
  const std::vector<double> in = {-0.0, 0.0,    2.5,     -2.5, -0.0, inf,
                                  -inf, 1e-310, -1e-310, 0.0,  -0.0};
  auto f = [](const Array& v) { return xpr::sign(v); };
  for (const Array& got : {f(array(in)), xpr::jit(f)(array(in))}) {
    const std::vector<double> s = got.to_vector<double>();
    for (std::size_t i = 0; i < in.size(); ++i) {
      const double want = in[i] > 0 ? 1.0 : in[i] < 0 ? -1.0 : in[i];
      EXPECT_EQ(s[i], want) << i;
      EXPECT_EQ(std::signbit(s[i]), std::signbit(want)) << i;
    }
  }
  Array n = xpr::jit(f)(array(std::vector<double>{nan, 1.0}));
  EXPECT_TRUE(std::isnan(n.to_vector<double>()[0]));
  EXPECT_TRUE(std::signbit(xpr::sign(Array(-0.0)).item<double>()));
  EXPECT_TRUE(std::signbit(xpr::jit(f)(Array(-0.0f)).item<float>()));
}

// max and min of +0 and -0 give the first operand (XLA's CPU rule: lhs where lhs >= rhs), in
// the eager SIMD body (x86's maxpd alone gives the second), its scalar tail and generated code;
// relu(-0) is max(-0, 0): -0. 11 elements: body and tail. An examiner found eager and jit apart.
TEST(JitCodegen, MaxAndMinOfSignedZerosGiveTheFirstOperand) {
  const std::vector<double> a = {0.0, -0.0, 0.0, -0.0, 1.0, -0.0, 0.0, -0.0, 0.0, -0.0, -0.0};
  const std::vector<double> b = {-0.0, 0.0, -0.0, 0.0, 2.0, 0.0, -0.0, 0.0, -0.0, 0.0, -0.0};
  auto f = [](const Array& x, const Array& y) {
    return std::vector<Array>{xpr::maximum(x, y), xpr::minimum(x, y), xpr::nn::relu(x),
                              xpr::maximum(x, 0.0), xpr::minimum(x, 0.0)};
  };
  for (DType t : {DType::float64, DType::float32}) {
    Array x = xpr::astype(xpr::array(a), t), y = xpr::astype(xpr::array(b), t);
    const std::vector<Array> eager = f(x, y), jitted = xpr::jit(f)(x, y);
    for (std::size_t k = 0; k < eager.size(); ++k) {
      const auto e = xpr::astype(eager[k], DType::float64).to_vector<double>();
      const auto j = xpr::astype(jitted[k], DType::float64).to_vector<double>();
      for (std::size_t i = 0; i < a.size(); ++i) {
        const double other = k == 0 || k == 1 ? b[i] : 0.0;
        const double want = k == 0 || k == 2 || k == 3 ? (a[i] < other ? other : a[i])
                                                       : (other < a[i] ? other : a[i]);
        EXPECT_EQ(std::signbit(e[i]), std::signbit(want)) << "eager " << k << " at " << i;
        EXPECT_EQ(std::signbit(j[i]), std::signbit(want)) << "jit " << k << " at " << i;
        EXPECT_EQ(e[i], want) << k << " at " << i;
      }
    }
  }
}

// Long float sums keep their accuracy: eager sums by pairwise halves above 4096 elements, the
// generated loops restart their eight accumulators every 1024 elements and add the blocks with
// Kahan's compensation. The mean of 1e7 float32 0.1s was 1.1% off jitted and 0.27% eagerly (an
// examiner's training-loss pattern); a sum of varied values against the exact sum in double.
TEST(JitCodegen, LongFloatSumsStayAccurate) {
  const std::int64_t n = 10'000'000;
  Array tenth = xpr::full(Shape{n}, 0.1f, DType::float32);
  std::vector<float> v(static_cast<std::size_t>(n));
  double exact = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    v[i] = static_cast<float>(std::abs(std::sin(0.37 * static_cast<double>(i))));
    exact += v[i];
  }
  Array varied = xpr::array(v);
  auto mean = [](const Array& x) { return xpr::mean(x); };
  auto sum = [](const Array& x) { return xpr::sum(x); };
  const double tenth_f = static_cast<double>(0.1f);
  for (const auto& [what, m, s] :
       {std::tuple{"eager", mean(tenth), sum(varied)},
        std::tuple{"jit", xpr::jit(mean)(tenth), xpr::jit(sum)(varied)}}) {
    EXPECT_EQ(m.dtype(), DType::float32);
    EXPECT_NEAR(m.item<float>(), tenth_f, 2e-5 * tenth_f) << what;
    EXPECT_NEAR(s.item<float>(), exact, 2e-5 * exact) << what;
  }
  // Over a leading axis (column sums and means over a batch): 2e6 rows of 4, and 20000 rows of
  // 300 (two chunks of columns in the generated loop). A column mean was 3.9% off at 4e6 rows,
  // a fused column sum 0.8% at 2e6.
  for (const auto& [rows, cols] : {std::pair{2'000'000LL, 4LL}, std::pair{20'000LL, 300LL}}) {
    Array x = xpr::reshape(
        xpr::astype(xpr::iota(DType::int32, rows * cols) % 7, DType::float32) * 0.1f + 0.05f,
        {rows, cols});
    const std::vector<float> xv = x.to_vector<float>();
    std::vector<double> col(static_cast<std::size_t>(cols), 0.0);
    for (std::size_t i = 0; i < xv.size(); ++i) col[i % static_cast<std::size_t>(cols)] += xv[i];
    auto colsum = [](const Array& a) { return xpr::sum(a, 0); };
    // Fused into the loop computing its operand: the register path (4 columns) and the path
    // through a buffer (300).
    auto fused = [](const Array& a) { return xpr::sum(a * 2.0f + 1.0f, 0); };
    std::vector<double> col2(col.size());
    for (std::size_t c = 0; c < col.size(); ++c) col2[c] = 2 * col[c] + static_cast<double>(rows);
    for (const auto& [what, got, want] :
         {std::tuple{"eager", colsum(x), &col}, std::tuple{"jit", xpr::jit(colsum)(x), &col},
          std::tuple{"eager fused", fused(x), &col2},
          std::tuple{"jit fused", xpr::jit(fused)(x), &col2}}) {
      const std::vector<float> g = got.to_vector<float>();
      for (std::size_t c = 0; c < col.size(); ++c)
        EXPECT_NEAR(g[c], (*want)[c], 2e-5 * (*want)[c])
            << what << " rows " << rows << " column " << c;
    }
  }
}

// The blocked, compensated sums above must still add infinities and NaNs as plain addition does:
// Kahan's compensation of an infinite sum is inf - inf = NaN, and carried into the next block it
// made the sum of 3000 ones with one inf NaN (jitted; eager gave inf). Each column holds another
// case: one inf; inf and -inf (NaN); a NaN; values whose sum overflows; finite values.
TEST(JitCodegen, BlockedSumsOfInfinitiesAndNaNsMatchEager) {
  auto filled = [](Shape shape, std::int64_t cols, DType t) {
    const std::int64_t n = shape.size(), rows = n / cols;
    const double big = t == DType::float32 ? 3e38 : 1.7e308;
    std::vector<double> v(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t r = i / cols, c = i % cols;
      double x = 1.0 + 0.25 * static_cast<double>((r * 7 + c) % 5);
      switch (c % 5) {
        case 0:
          x = r == rows / 2 ? HUGE_VAL : x;
          break;
        case 1:
          x = r == rows / 3 ? HUGE_VAL : r == 2 * rows / 3 ? -HUGE_VAL : x;
          break;
        case 2:
          x = r == rows / 2 ? std::nan("") : x;
          break;
        case 3:
          x = big;
          break;
        default:
          break;
      }
      v[static_cast<std::size_t>(i)] = x;
    }
    return xpr::astype(xpr::array(v, shape), t);
  };
  auto same = [](const Array& got, const Array& want, const std::string& what) {
    ASSERT_EQ(got.shape(), want.shape()) << what;
    const std::vector<double> g = xpr::astype(got, DType::float64).to_vector<double>();
    const std::vector<double> w = xpr::astype(want, DType::float64).to_vector<double>();
    for (std::size_t k = 0; k < g.size(); ++k) {
      if (std::isnan(w[k]) || std::isinf(w[k]))
        EXPECT_TRUE(std::isnan(w[k]) ? std::isnan(g[k]) : g[k] == w[k])
            << what << " element " << k << ": " << g[k] << ", eager " << w[k];
      else
        EXPECT_NEAR(g[k], w[k], 1e-5 * std::abs(w[k])) << what << " element " << k;
    }
  };
  const std::vector<std::pair<std::string, std::function<Array(const Array&)>>> fs = {
      {"sum", [](const Array& x) { return xpr::sum(x); }},
      {"fused sum", [](const Array& x) { return xpr::sum(x * 2.0 + 1.0); }},
      {"sum axis 0", [](const Array& x) { return xpr::sum(x, 0); }},
      {"fused sum axis 0", [](const Array& x) { return xpr::sum(x * 2.0 + 1.0, 0); }},
      {"sum last axis", [](const Array& x) { return xpr::sum(x, -1); }},
  };
  for (DType t : {DType::float64, DType::float32})
    for (const auto& [shape, cols] :
         std::vector<std::pair<Shape, std::int64_t>>{{Shape{3000, 5}, 5},
                                                     {Shape{600, 300}, 300},
                                                     {Shape{700, 8, 3}, 3},
                                                     {Shape{5, 3000}, 1}}) {
      Array x = filled(shape, cols, t);
      for (const auto& [name, f] : fs) same(xpr::jit(f)(x), f(x), name + " of " + x.aval().str());
      // One column alone, as a 1-D sum over 3000 elements (three blocks of 1024).
      if (cols == 5)
        for (std::int64_t c = 0; c < 5; ++c) {
          Array col = xpr::reshape(xpr::slice(x, {0, c}, {3000, c + 1}), {3000});
          for (const auto& [name, f] : fs)
            if (name.find("axis") == std::string::npos)
              same(xpr::jit(f)(col), f(col),
                   name + " of column " + std::to_string(c) + " " + col.aval().str());
        }
    }
  // The cases by value, against the closed forms.
  const double inf = HUGE_VAL;
  std::vector<double> ones(3000, 1.0);
  ones[1500] = inf;
  EXPECT_EQ(xpr::jit([](const Array& x) { return xpr::sum(x); })(xpr::array(ones)).item<double>(),
            inf);
  ones[2500] = -inf;
  EXPECT_TRUE(std::isnan(
      xpr::jit([](const Array& x) { return xpr::sum(x); })(xpr::array(ones)).item<double>()));
}

// A max over the middle axis of a small array (sizes written into the source, the loops unrolled)
// was miscompiled by GCC 12 at -O3: the NaN-carrying max read its second operand only when the
// first was a number, GCC turned that read into a masked vector load, and with `o[k] = max(o[k],
// x[i])` rows leaked into each other's results (max over axis 1 of this (3, 2, 2) array gave
// [[2, 3], [4, 3], [3, 4]]). The operands now go through a helper function, read unconditionally.
TEST(JitCodegen, MaxAndMinOverAMiddleAxisOfSmallShapes) {
  const Array first =
      xpr::array(std::vector<double>{0, 1, 2, 3, 4, 0, 1, -8, 3, 4, 0, 1}, {3, 2, 2});
  auto max1 = [](const Array& x) { return xpr::max(x, 1); };
  auto min1 = [](const Array& x) { return xpr::min(x, 1); };
  expect_close(xpr::jit(max1)(first), xpr::array({{2.0, 3.0}, {4.0, 0.0}, {3.0, 4.0}}), "max");
  EXPECT_NE(xpr::jit(max1).lower(first).as_text().find("xpr_max_f64("), std::string::npos);
  std::mt19937 g(11);
  for (DType t : {DType::float64, DType::float32})
    for (const Shape& s : {Shape{3, 2, 2}, Shape{3, 2, 3}, Shape{3, 3, 2}, Shape{4, 4, 3},
                           Shape{2, 4, 3}, Shape{4, 2, 2}, Shape{3, 3, 3}})
      for (int trial = 0; trial < 4; ++trial) {
        Array x = random_array(g, s, t);
        const std::string what = x.aval().str() + " trial " + std::to_string(trial);
        // Exact: max and min choose an element, so jit and eager agree to the bit.
        for (const auto& f : {Fn1(max1), Fn1(min1)})
          EXPECT_EQ(xpr::jit(f)(x).to_vector<double>(), f(x).to_vector<double>()) << what;
        auto soft = [](const Array& a) { return xpr::nn::softmax(a, 1); };
        expect_close(xpr::jit(soft)(x), soft(x), "softmax " + what);
      }
}

TEST(JitCodegen, EveryBinaryPrimitiveAndComparison) {
  std::mt19937 g(2);
  const std::vector<std::pair<std::string, Fn2>> fs = {
      {"add", [](const Array& x, const Array& y) { return x + y; }},
      {"sub", [](const Array& x, const Array& y) { return x - y; }},
      {"mul", [](const Array& x, const Array& y) { return x * y; }},
      {"div", [](const Array& x, const Array& y) { return x / y; }},
      {"max", [](const Array& x, const Array& y) { return xpr::maximum(x, y); }},
      {"min", [](const Array& x, const Array& y) { return xpr::minimum(x, y); }},
      {"lt", [](const Array& x, const Array& y) { return x < y; }},
      {"le", [](const Array& x, const Array& y) { return x <= y; }},
      {"gt", [](const Array& x, const Array& y) { return x > y; }},
      {"ge", [](const Array& x, const Array& y) { return x >= y; }},
      {"eq", [](const Array& x, const Array& y) { return xpr::equal(x, y); }},
      {"ne", [](const Array& x, const Array& y) { return xpr::not_equal(x, y); }},
      {"where", [](const Array& x, const Array& y) { return xpr::where(x < y, x, y * 2); }},
      {"rem", [](const Array& x, const Array& y) { return xpr::fmod(x, y); }},
      {"remainder", [](const Array& x, const Array& y) { return x % y; }},
      {"floor_divide", [](const Array& x, const Array& y) { return xpr::floor_divide(x, y); }},
  };
  for (DType t : {DType::float64, DType::float32, DType::int32, DType::int64})
    for (const auto& [name, f] : fs)
      for (const auto& [sx, sy] :
           std::vector<std::pair<Shape, Shape>>{{Shape{}, Shape{}},
                                                {Shape{6}, Shape{6}},
                                                {Shape{4, 3}, Shape{}},
                                                {Shape{2, 5}, Shape{2, 5}}}) {
        Array x = random_array(g, sx, t), y = random_array(g, sy, t);
        check_compiled(make_jaxpr(f)(x, y), {x, y},
                       name + " " + x.aval().str() + " " + y.aval().str());
      }
  // pow: floats only; division by zero and INT_MIN / -1 of integers follow XLA.
  Array x = xpr::abs(random_array(g, Shape{8}, DType::float64)) + 0.1,
        y = random_array(g, Shape{8}, DType::float64);
  check_compiled(make_jaxpr([](const Array& a, const Array& b) { return xpr::pow(a, b); })(x, y),
                 {x, y}, "pow");
  Array a = array(std::vector<std::int32_t>{7, -7, -2147483647 - 1, 5, 0}),
        b = array(std::vector<std::int32_t>{0, 2, -1, -3, 0});
  check_compiled(make_jaxpr([](const Array& p, const Array& q) { return p / q; })(a, b), {a, b},
                 "idiv");
  // rem of integers: x rem 0 == x and INT_MIN rem -1 == 0, as XLA and the interpreter.
  ClosedJaxpr irem =
      make_jaxpr([](const Array& p, const Array& q) { return xpr::fmod(p, q); })(a, b);
  check_compiled(irem, {a, b}, "irem");
  EXPECT_EQ(
      codegen::compile(irem.jaxpr)->run(std::vector<Array>{a, b})[0].to_vector<std::int32_t>(),
      (std::vector<std::int32_t>{7, -1, 0, 2, 0}));
}

TEST(JitCodegen, SpecialValuesAndConversions) {
  constexpr double inf = INFINITY, nan = NAN;
  Array x = array(std::vector<double>{0.0, -0.0, 1.5, -2.5, inf, -inf, nan, 3e9, -3e9, 1e300});
  auto f = [inf, nan](const Array& v) {
    return std::vector<Array>{astype(v, DType::int32),
                              astype(v, DType::int64),
                              astype(v, DType::bool_),
                              astype(v, DType::float32),
                              xpr::maximum(v, 1.0),
                              xpr::minimum(v, -1.0),
                              xpr::sign(v),
                              v * inf,
                              v - nan};
  };
  check_compiled(make_jaxpr(f)(x), {x}, "special values");
  Array i = array(std::vector<std::int32_t>{0, 1, -5, 2147483647});
  auto h = [](const Array& v) {
    return std::vector<Array>{astype(v, DType::float64), astype(v, DType::int64),
                              astype(v, DType::bool_), v * 2, v + 2147483647};  // wraps as in XLA
  };
  check_compiled(make_jaxpr(h)(i), {i}, "integer conversions");
}

// argmax and argmin compiled against the interpreter: every axis of ranks 1 to 3, every dtype,
// NaN (the first NaN wins) and ties (the lower index), sizes past the literal-size limit.
TEST(JitCodegen, ArgmaxAndArgminAlongEveryAxis) {
  std::mt19937 g(5);
  for (DType t : {DType::float64, DType::float32, DType::int32, DType::int64, DType::bool_})
    for (const Shape& s : {Shape{7}, Shape{3, 5}, Shape{2, 3, 4}, Shape{1, 9, 1}}) {
      Array x = random_array(g, s, t);
      for (std::int64_t a = 0; a < static_cast<std::int64_t>(s.rank()); ++a) {
        auto f = [a](const Array& v) {
          return std::vector<Array>{xpr::argmax(v, a), xpr::argmin(v, a)};
        };
        check_compiled(make_jaxpr(f)(x), {x}, "argmax/argmin " + x.aval().str());
      }
    }
  const double nan = std::nan("");
  Array x = array(std::vector<double>{1.0, 3.0, nan, 3.0, nan, -2.0, -2.0, 0.0}, Shape{2, 4});
  auto f = [](const Array& v) {
    return std::vector<Array>{xpr::argmax(v, 1), xpr::argmin(v, 1), xpr::argmax(v, 0),
                              xpr::argmin(v)};
  };
  ClosedJaxpr j = make_jaxpr(f)(x);
  check_compiled(j, {x}, "argmax/argmin with NaN and ties");
  Arrays got = codegen::compile(j.jaxpr)->run(std::vector<Array>{x});
  EXPECT_EQ(got[0].to_vector<std::int32_t>(), (std::vector<std::int32_t>{2, 0}));
  EXPECT_EQ(got[1].to_vector<std::int32_t>(), (std::vector<std::int32_t>{2, 0}));
  EXPECT_EQ(got[2].to_vector<std::int32_t>(), (std::vector<std::int32_t>{1, 0, 0, 0}));
  EXPECT_EQ(got[3].item<std::int32_t>(), 2);
  Array big = random_array(g, Shape{3, 1000}, DType::float64);
  check_compiled(make_jaxpr([](const Array& v) { return xpr::argmax(v, 1); })(big), {big},
                 "argmax f64[3,1000]");
}

// Reads composed inside a fused group, each index an expression of the next: a slice of a strided
// slice (x[::2][1:3] reads x at (1 + i) * 2, which a pasted `1 + i * 2` got wrong), with a
// reshape, a transpose or a concatenate between, and a downsampled stencil and red-black
// ordering as users write them; then the derivatives that reach such reads through
// associative_scan's strided slices (cumprod, cummax, cumlogsumexp under jit(grad)), against
// the interpreter and the eager gradient.
TEST(JitCodegen, ComposedStridedReadsAndTheDerivativesThatUseThem) {
  using xpr::none;
  using xpr::range;
  std::mt19937 g(11);
  const Array v = random_array(g, Shape{12}, DType::float64);
  const Array m = random_array(g, Shape{6, 8}, DType::float64);
  const std::vector<std::pair<std::string, Fn1>> cases{
      {"x[::2][1:3]",
       [](const Array& x) { return xpr::slice(xpr::slice(x, {0}, {12}, {2}), {1}, {3}); }},
      {"x[1::3][1:][::2]",
       [](const Array& x) { return x(range(1, none, 3))(range(1, none))(range(none, none, 2)); }},
      {"x[::-2][1:]", [](const Array& x) { return x(range(none, none, -2))(range(1, none)); }},
      {"reshape(x[1::2], (1, -1))[:, 2:]",
       [](const Array& x) {
         return xpr::reshape(x(range(1, none, 2)), {1, -1})(xpr::all, range(2, none));
       }},
      {"concatenate(x[::2], x[1::2])[::3][1:] * 2",
       [](const Array& x) {
         return xpr::concatenate({x(range(none, none, 2)), x(range(1, none, 2))})(
                    range(none, none, 3))(range(1, none)) *
                2.0;
       }},
      {"d = x[::2]; d[1:-1] - d[:-2]", [](const Array& x) {
         const Array d = x(range(none, none, 2));
         return d(range(1, -1)) - d(range(none, -2));
       }}};
  for (const auto& [what, f] : cases) {
    SCOPED_TRACE(what);
    check_compiled(make_jaxpr(f)(v), {v}, what);
  }
  const std::vector<std::pair<std::string, Fn1>> matrix_cases{
      {"transpose(m[:, ::2])[1:2, 1:3]",
       [](const Array& x) {
         return xpr::transpose(x(xpr::all, range(none, none, 2)))(range(1, 2), range(1, 3));
       }},
      {"red-black m[::2, ::2][1:, 1:] + m[1::2, 1::2][:-1, :-1]", [](const Array& x) {
         return x(range(none, none, 2), range(none, none, 2))(range(1, none), range(1, none)) +
                x(range(1, none, 2), range(1, none, 2))(range(none, -1), range(none, -1));
       }}};
  for (const auto& [what, f] : matrix_cases) {
    SCOPED_TRACE(what);
    check_compiled(make_jaxpr(f)(m), {m}, what);
  }
  const Array row = xpr::array({{0.1, 0.9, 1.0, 0.2, 0.7, 1.3, 0.4}});
  const std::vector<std::pair<std::string, Fn1>> grads{
      {"cummax", [](const Array& x) { return xpr::sum(xpr::cummax(x, 1) * x); }},
      {"cumprod", [](const Array& x) { return xpr::sum(xpr::cumprod(x, 1, true)); }},
      {"cumlogsumexp", [](const Array& x) { return xpr::sum(xpr::cumlogsumexp(x, 1) * x); }}};
  for (const auto& [what, f] : grads) {
    SCOPED_TRACE(what);
    const Array eager = xpr::grad(f)(row);
    const Array compiled = xpr::jit(xpr::grad(f))(row);
    expect_close(compiled, eager, "jit(grad(" + what + "))");
  }
  // The exact gradient of sum(cummax(x) * x) at the first row: running maxima 0.1 0.9 1.0 1.0
  // 1.0 1.3 1.3, held by elements 0, 1, 2, 2, 2, 5, 5.
  const std::vector<double> want{0.2, 1.8, 1.0 + 1.0 + 0.2 + 0.7, 1.0, 1.0, 1.3 + 1.3 + 0.4, 1.3};
  const std::vector<double> got = xpr::jit(xpr::grad(grads[0].second))(row).to_vector<double>();
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 4e-15) << i;
}

// The cumulative reductions compiled against the interpreter: every axis of ranks 1 to 3, both
// directions, every number dtype (integers wrap as in XLA; cumlogsumexp of floats, also where
// exp overflows), NaN carried by cummax, and a
// cumulative trapezoid integral as a user writes it.
TEST(JitCodegen, CumulativeReductionsAlongEveryAxisBothWays) {
  std::mt19937 g(6);
  for (DType t : {DType::float64, DType::float32, DType::int32, DType::int64})
    for (const Shape& s : {Shape{7}, Shape{3, 5}, Shape{2, 3, 4}, Shape{1, 9, 1}, Shape{2, 0}}) {
      Array x = random_array(g, s, t);
      for (std::int64_t a = 0; a < static_cast<std::int64_t>(s.rank()); ++a) {
        auto f = [a](const Array& v) {
          return std::vector<Array>{xpr::cumsum(v, a), xpr::cumsum(v, a, true), xpr::cumprod(v, a),
                                    xpr::cummax(v, a, true), xpr::cummin(v, a)};
        };
        check_compiled(make_jaxpr(f)(x), {x}, "cumulative " + x.aval().str());
        if (!xpr::core::is_floating(t)) continue;
        auto lse = [a](const Array& v) {
          return std::vector<Array>{xpr::cumlogsumexp(v, a), xpr::cumlogsumexp(v * 300.0, a, true)};
        };
        check_compiled(make_jaxpr(lse)(x), {x}, "cumlogsumexp " + x.aval().str());
      }
    }
  Array wrap = xpr::array({2147483647, 1, -5});
  auto w = [](const Array& v) { return xpr::cumsum(v); };
  Arrays got = codegen::compile(make_jaxpr(w)(wrap).jaxpr)->run(std::vector<Array>{wrap});
  EXPECT_EQ(got[0].to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{2147483647, -2147483647 - 1, 2147483643}));
  Array nan = xpr::array({1.0, std::nan(""), 5.0, -1.0});
  auto mx = [](const Array& u) {
    return std::vector<Array>{xpr::cummax(u), xpr::cummin(u, 0, true)};
  };
  Arrays nans = codegen::compile(make_jaxpr(mx)(nan).jaxpr)->run(std::vector<Array>{nan});
  EXPECT_EQ(nans[0].to_vector<double>()[0], 1.0);
  EXPECT_TRUE(std::isnan(nans[0].to_vector<double>()[3]));
  EXPECT_TRUE(std::isnan(nans[1].to_vector<double>()[0]));
  EXPECT_EQ(nans[1].to_vector<double>()[2], -1.0);
  // The running integral of cos on [0, pi/2] by the trapezoid rule, and its derivative with
  // respect to the samples: both compiled, against sin and the closed form of the weights.
  const int n = 201;
  Array xs = xpr::linspace(0.0, M_PI / 2, n);
  auto integral = xpr::jit([](const Array& y, const Array& x) {
    Array dx = x(xpr::range(1, xpr::none)) - x(xpr::range(xpr::none, -1));
    Array mid = (y(xpr::range(1, xpr::none)) + y(xpr::range(xpr::none, -1))) * 0.5;
    return xpr::cumsum(mid * dx);
  });
  Array run = integral(xpr::cos(xs), xs);
  const std::vector<double> r = run.to_vector<double>();
  ASSERT_EQ(r.size(), static_cast<std::size_t>(n - 1));
  for (int k = 0; k < n - 1; k += 20)
    EXPECT_NEAR(r[static_cast<std::size_t>(k)], std::sin(M_PI / 2 * (k + 1) / (n - 1)), 1e-5) << k;
  // d(sum of the running integral)/dy_k: each interval i contributes dx/2 to y_i and y_{i+1},
  // counted once per later partial sum (n - 1 - i of them).
  auto total = xpr::jit(xpr::grad([&](const Array& y) { return xpr::sum(integral(y, xs)); }));
  const std::vector<double> dy = total(xpr::cos(xs)).to_vector<double>();
  const double h = M_PI / 2 / (n - 1);
  for (int k = 0; k < n; ++k) {
    const double left = k > 0 ? (n - k) * h / 2 : 0.0;           // interval k-1
    const double right = k < n - 1 ? (n - 1 - k) * h / 2 : 0.0;  // interval k
    EXPECT_NEAR(dy[static_cast<std::size_t>(k)], left + right, 1e-12) << k;
  }
}

// As a user writes it: Lennard-Jones energy in a periodic box, the minimum image by Python's `%`
// (remainder) and a cutoff mask combined with `&`, the masked-out pairs kept finite by the double
// `where`; forces are `-grad`, jitted both ways, against forces derived by hand.
TEST(JitCodegen, PeriodicLennardJonesWithRemainderAndMask) {
  const double L = 4.0, rc2 = 2.5 * 2.5;
  const std::int64_t n = 6;
  std::mt19937 g(11);
  std::uniform_real_distribution<double> u(0.0, L);
  std::vector<double> pos(static_cast<std::size_t>(n * 3));
  for (double& p : pos) p = u(g);
  Array X = xpr::array(pos, Shape{n, 3});
  auto energy = [=](const Array& x) {
    Array d = xpr::expand_dims(x, 1) - xpr::expand_dims(x, 0);  // (n, n, 3)
    d = (d + 0.5 * L) % L - 0.5 * L;                            // minimum image
    Array r2 = xpr::sum(d * d, 2);
    Array mask = (r2 < rc2) & (xpr::eye(n) == 0.0);
    Array inv6 = xpr::integer_pow(1.0 / xpr::where(mask, r2, 1.0), 3);
    return 0.5 * xpr::sum(xpr::where(mask, 4.0 * (inv6 * inv6 - inv6), 0.0));
  };
  // By hand: E = sum over pairs within the cutoff of 4 (r^-12 - r^-6), dE/dr2 = 4 (-6 r2^-7 +
  // 3 r2^-4), and dE/dx_i = sum_j dE/dr2 · 2 d_ij.
  double e_hand = 0;
  std::vector<double> grad_hand(pos.size(), 0.0);
  auto py_mod = [](double a, double b) { return a - b * std::floor(a / b); };
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      if (i == j) continue;
      double d[3], r2 = 0;
      for (int k = 0; k < 3; ++k) {
        d[k] = py_mod(pos[i * 3 + k] - pos[j * 3 + k] + 0.5 * L, L) - 0.5 * L;
        r2 += d[k] * d[k];
      }
      if (r2 >= rc2) continue;
      e_hand += 0.5 * 4 * (std::pow(r2, -6) - std::pow(r2, -3));
      const double de = 4 * (-6 * std::pow(r2, -7) + 3 * std::pow(r2, -4));
      for (int k = 0; k < 3; ++k) grad_hand[i * 3 + k] += de * 2 * d[k];
    }
  auto jitted = xpr::jit(energy);
  EXPECT_NEAR(jitted(X).item<double>(), e_hand, 1e-9 * std::abs(e_hand));
  for (const Array& grad : {xpr::jit(xpr::grad(energy))(X), xpr::grad(jitted)(X)}) {
    std::vector<double> got = grad.to_vector<double>();
    for (std::size_t k = 0; k < got.size(); ++k)
      EXPECT_NEAR(got[k], grad_hand[k], 1e-9 * (1 + std::abs(grad_hand[k]))) << k;
  }
  check_compiled(make_jaxpr(xpr::grad(energy))(X), {X}, "periodic LJ forces");
}

// As a user writes it: linear interpolation in a table on a uniform grid, the cell's index from
// floor (clipped to the table), the nearest entry's from round; jitted (compiled, not
// interpreted) and differentiated through the jitted function: floor and round have no
// derivative, so the slope is the cell's.
TEST(JitCodegen, TableLookupIndexedByFloorAndRound) {
  const std::vector<double> table = {0.0, 1.0, 4.0, 9.0, 16.0, 25.0};  // k² at k = 0..5
  Array t = xpr::array(table);
  auto interp = xpr::jit([t](const Array& x) {
    Array cell = xpr::clip(xpr::floor(x), 0.0, 4.0);
    Array i = xpr::astype(cell, DType::int32);
    Array lo = xpr::take(t, i), hi = xpr::take(t, i + 1);
    return lo + (x - cell) * (hi - lo);
  });
  auto nearest = xpr::jit([t](const Array& x) {
    return xpr::take(t, xpr::astype(xpr::clip(xpr::round(x), 0.0, 5.0), DType::int32));
  });
  const std::vector<double> xs = {0.25, 1.5, 2.75, 3.0, 4.9, -1.0, 2.5, 3.5};
  Array x = xpr::array(xs);
  std::vector<double> y = interp(x).to_vector<double>(), n = nearest(x).to_vector<double>();
  std::vector<double> slope =
      xpr::grad([&](const Array& v) { return xpr::sum(interp(v)); })(x).to_vector<double>();
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double k = std::min(std::max(std::floor(xs[i]), 0.0), 4.0);
    EXPECT_DOUBLE_EQ(y[i], k * k + (xs[i] - k) * (2 * k + 1)) << xs[i];
    EXPECT_DOUBLE_EQ(slope[i], 2 * k + 1) << xs[i];
    const double r = std::min(std::max(std::nearbyint(xs[i]), 0.0), 5.0);  // 2.5 -> 2, 3.5 -> 4
    EXPECT_DOUBLE_EQ(n[i], r * r) << xs[i];
  }
  EXPECT_EQ(interp.trace_count(), 1u);
}

// As a user writes it: a least-squares fit of y ≈ erf(w x) over data points in a C++ loop, its
// gradient in w by grad of a jitted loss, against the eager gradient and finite differences.
TEST(JitCodegen, GradThroughSquareAndErfInALoop) {
  const std::vector<double> xs = {-1.0, -0.3, 0.4, 1.2, 2.0}, ys = {-0.7, -0.2, 0.5, 0.8, 0.95};
  auto loss = [&](const Array& w) {
    Array s = xpr::zeros_like(w);
    for (std::size_t i = 0; i < xs.size(); ++i) s = s + xpr::square(xpr::erf(w * xs[i]) - ys[i]);
    return s;
  };
  auto jitted = xpr::jit(loss);
  auto on_doubles = [&](double w) {
    double s = 0;
    for (std::size_t i = 0; i < xs.size(); ++i) s += std::pow(std::erf(w * xs[i]) - ys[i], 2);
    return s;
  };
  for (double w : {0.3, 0.9, 1.7}) {
    const double h = 1e-6, fd = (on_doubles(w + h) - on_doubles(w - h)) / (2 * h);
    const double g_jit = xpr::grad(jitted)(Array(w)).item<double>();
    const double g_eager = xpr::grad(loss)(Array(w)).item<double>();
    EXPECT_NEAR(g_jit, g_eager, 1e-12 * (1 + std::abs(g_eager))) << w;
    EXPECT_NEAR(g_eager, fd, 1e-7 * (1 + std::abs(fd))) << w;
    EXPECT_NEAR(jitted(Array(w)).item<double>(), on_doubles(w), 1e-12) << w;
  }
}

TEST(JitCodegen, ShapeOpsReductionsAndDot) {
  std::mt19937 g(3);
  Array x = random_array(g, Shape{3, 4, 5}, DType::float64);
  const std::vector<std::pair<std::string, Fn1>> fs = {
      {"sum all", [](const Array& v) { return xpr::sum(v); }},
      {"sum 0", [](const Array& v) { return xpr::sum(v, 0); }},
      {"sum 1", [](const Array& v) { return xpr::sum(v, 1); }},
      {"sum 2", [](const Array& v) { return xpr::sum(v, 2); }},
      {"max 1", [](const Array& v) { return xpr::max(v, 1); }},
      {"min all", [](const Array& v) { return xpr::min(v); }},
      {"transpose",
       [](const Array& v) {
         return xpr::transpose(v, {2, 0, 1});
       }},
      {"reshape",
       [](const Array& v) {
         return xpr::reshape(v, {12, 5}) * 2.0;
       }},
      {"expand/squeeze", [](const Array& v) { return xpr::squeeze(xpr::expand_dims(v, 0), 0); }},
      {"slice",
       [](const Array& v) {
         return xpr::slice(v, {1, 0, 1}, {3, 4, 5}, {1, 2, 2});
       }},
      {"rev",
       [](const Array& v) {
         return xpr::rev(v, {0, 2});
       }},
      {"concatenate",
       [](const Array& v) {
         return xpr::concatenate({v, v * 2.0}, 1);
       }},
      {"pad",
       [](const Array& v) {
         return xpr::pad(v, {{1, 2, 0}, {0, 0, 1}, {-1, 1, 0}}, 7.0);
       }},
      {"broadcast", [](const Array& v) { return v + xpr::sum(v, 0); }},
      {"broadcast mid", [](const Array& v) { return v * xpr::sum(v, 1, true); }},
      {"iota",
       [](const Array& v) {
         return v + xpr::broadcasted_iota(DType::float64, Shape{3, 4, 5}, 1);
       }},
      {"matmul",
       [](const Array& v) {
         return xpr::matmul(xpr::reshape(v, {12, 5}), xpr::transpose(xpr::reshape(v, {12, 5})));
       }},
      {"batched matmul",
       [](const Array& v) {
         return xpr::matmul(v, xpr::transpose(v, {0, 2, 1}));
       }},
      {"dot transposed",
       [](const Array& v) {
         return xpr::dot_general(v, v, {{0}, {0}, {}, {}});
       }},
      {"dot permuted",
       [](const Array& v) {
         return xpr::dot_general(v, v, {{1}, {1}, {2}, {2}});
       }},
      {"mean softmax",
       [](const Array& v) {
         auto e = xpr::exp(v - xpr::max(v, 2, true));
         return e / xpr::sum(e, 2, true);
       }},
  };
  for (const auto& [name, f] : fs) check_compiled(make_jaxpr(f)(x), {x}, name);
  Array i = random_array(g, Shape{4, 6}, DType::int32);
  check_compiled(
      make_jaxpr([](const Array& v) {
        return std::vector<Array>{xpr::sum(v, 1), xpr::matmul(v, xpr::transpose(v)), xpr::max(v)};
      })(i),
      {i}, "int reductions");
}

TEST(JitCodegen, ProductsAlongEveryAxisFusedAndTheirDerivatives) {
  std::mt19937 g(12);
  // Products of values near 1 (no overflow in f32 over 40 factors), including zeros.
  for (DType t : {DType::float64, DType::float32}) {
    for (const Shape& s : {Shape{40}, Shape{5, 8}, Shape{3, 4, 5}, Shape{2, 1, 19}}) {
      Array x = random_array(g, s, t) * 0.2 + 1.0;
      auto every_axis = [](const Array& v) {
        std::vector<Array> outs{xpr::prod(v)};
        for (std::int64_t a = 0; a < static_cast<std::int64_t>(v.ndim()); ++a)
          outs.push_back(xpr::prod(v, a));
        // A row product fused with its broadcast, and a product of a computed value.
        outs.push_back(v / xpr::prod(v, -1, true));
        outs.push_back(xpr::prod(xpr::sin(v) * 2.0, 0));
        return outs;
      };
      check_compiled(make_jaxpr(every_axis)(x), {x}, "prod " + x.aval().str());
      // The gradient's program: slices, pads and multiplications of the pairwise tree.
      auto grad_of_prod = [](const Array& v) {
        return xpr::grad([](const Array& w) { return xpr::sum(xpr::prod(w * w, -1)); })(v);
      };
      check_compiled(make_jaxpr(grad_of_prod)(x), {x}, "grad prod " + x.aval().str());
    }
  }
  // Integers wrap around, as the interpreter's: reduce_prod itself keeps int32 (2^31 is
  // INT32_MIN); jnp.prod multiplies int32 in int64 (2^31).
  Array twos = xpr::full(Shape{3, 32}, 2, DType::int32);
  auto rows = [](const Array& v) {
    auto lax_prod = [](const Array& w) {
      return rt::bind1(rt::reduce_prod_p, {w}, {{"axes", rt::Axes{1}}});
    };
    return std::vector<Array>{lax_prod(v), lax_prod(xpr::slice(v, {0, 1}, {3, 32})),
                              xpr::prod(xpr::slice(v, {0, 1}, {3, 32}), 1)};
  };
  check_compiled(make_jaxpr(rows)(twos), {twos}, "int32 products");
  const std::vector<Array> jitted = xpr::jit(rows)(twos);
  EXPECT_EQ(jitted[0].to_vector<std::int64_t>(), std::vector<std::int64_t>(3, 0));
  EXPECT_EQ(jitted[1].dtype(), DType::int32);
  EXPECT_EQ(jitted[1].to_vector<std::int64_t>(),
            std::vector<std::int64_t>(3, std::numeric_limits<std::int32_t>::min()));
  EXPECT_EQ(jitted[2].dtype(), DType::int64);
  EXPECT_EQ(jitted[2].to_vector<std::int64_t>(), std::vector<std::int64_t>(3, 2147483648LL));
}

TEST(JitCodegen, ConstsLiteralOutputsAndPassThrough) {
  std::mt19937 g(4);
  Array w = random_array(g, Shape{5}, DType::float64);
  Array x = random_array(g, Shape{5}, DType::float64);
  auto f = [w](const Array& v) { return std::vector<Array>{v * w, v, Array(3.0), w, v * w}; };
  check_compiled(make_jaxpr(f)(x), {x}, "consts and pass-through");
}

TEST(JitCodegen, ParsedJaxpr) {
  ClosedJaxpr j = parse_jaxpr(
      "{ lambda ; a:f64[4] b:f64[4]. let c:f64[4] = mul a b; d:f64[] = reduce_sum[axes=(0,)] c; "
      "e:f64[4] = sin a in (d, e) }");
  std::mt19937 g(5);
  Array a = random_array(g, Shape{4}, DType::float64),
        b = random_array(g, Shape{4}, DType::float64);
  check_compiled(j, {a, b}, "parsed");
}

/// A seeded random program: a chain of unary, binary, reduce-and-broadcast and permuting
/// (strided slices of strided slices, concatenated: composed reads) steps on values of one shape,
/// returning a few of the intermediate values.
inline Array random_program(std::mt19937& g, const std::vector<Array>& in, int steps) {
  std::vector<Array> vals = in;
  std::uniform_int_distribution<int> op(0, 16);
  for (int s = 0; s < steps; ++s) {
    auto pick = [&]() -> const Array& {
      return vals[std::uniform_int_distribution<std::size_t>(0, vals.size() - 1)(g)];
    };
    const Array& a = pick();
    const Array& b = pick();
    switch (op(g)) {
      case 0:
        vals.push_back(a + b);
        break;
      case 1:
        vals.push_back(a - b);
        break;
      case 2:
        vals.push_back(a * b);
        break;
      case 3:
        vals.push_back(xpr::sin(a));
        break;
      case 4:
        vals.push_back(xpr::tanh(a));
        break;
      case 5:
        vals.push_back(xpr::maximum(a, b));
        break;
      case 6:
        vals.push_back(xpr::where(a < b, a, b));
        break;
      case 7:
        vals.push_back(a * 0.5 + 1.0);
        break;
      case 8:
        vals.push_back(xpr::exp(-xpr::abs(a)));
        break;
      case 9:
        vals.push_back(a / (xpr::abs(b) + 1.0));
        break;
      case 10:
        vals.push_back(a.ndim() ? a - xpr::sum(a, 0) / 4.0 : a);
        break;
      case 11:
        vals.push_back(a.ndim() ? xpr::rev(a, {0}) : a);
        break;
      case 12:
        vals.push_back(xpr::integer_pow(a, 2));
        break;
      case 13:  // odd positions, then even ones: a permutation of axis 0
        vals.push_back(a.ndim() ? xpr::concatenate({a(xpr::range(1, xpr::none, 2)),
                                                    a(xpr::range(xpr::none, xpr::none, 2))})
                                : a);
        break;
      case 14: {  // the even positions rotated by one, then the odd ones
        if (!a.ndim()) {
          vals.push_back(a);
          break;
        }
        const Array even = a(xpr::range(xpr::none, xpr::none, 2));
        vals.push_back(
            xpr::concatenate({even(xpr::range(1, xpr::none)), even(xpr::range(xpr::none, 1)),
                              a(xpr::range(1, xpr::none, 2))}) *
            b);
        break;
      }
      case 15:  // a softmax-like shift by the maximum over the middle (rank 3) or first axis
        vals.push_back(a.ndim() >= 2 ? a - xpr::max(a, a.ndim() == 3 ? 1 : 0, true) : a);
        break;
      default:
        vals.push_back(xpr::cos(a) * b);
        break;
    }
  }
  Array out = vals.back();
  return out + xpr::sum(vals[vals.size() / 2]);
}

// Shapes include small rank-3 ones, whose sizes are numbers in the source and whose loops GCC
// unrolls: a max over their middle axis was miscompiled once (MaxAndMinOverAMiddleAxis...).
TEST(JitCodegen, RandomCompositions) {
  std::mt19937 g(20261125);
  const Shape shapes[] = {Shape{}, Shape{17}, Shape{3, 7}, Shape{3, 2, 2}, Shape{2, 3, 4}};
  for (int p = 0; p < 150; ++p) {
    const int steps = 2 + p % 25;
    const std::uint32_t seed = g();
    const Shape& s = shapes[p % 5];
    DType t = p % 4 == 3 ? DType::float32 : DType::float64;
    std::vector<Array> in = {random_array(g, s, t), random_array(g, s, t)};
    auto f = [seed, steps](const Array& x, const Array& y) {
      std::mt19937 h(seed);
      return random_program(h, {x, y}, steps);
    };
    check_compiled(make_jaxpr(f)(in[0], in[1]), in, "program " + std::to_string(p));
  }
}

TEST(JitCodegen, OneCompileForManySizes) {
  // A per-run constant makes the source new to the disk cache, so the first size compiles.
  const double nonce = static_cast<double>(std::random_device{}() % 100000) + 0.25;
  auto ew = [nonce](const Array& x) { return xpr::sin(x) * nonce - x; };
  auto red = [nonce](const Array& x) { return xpr::sum(x * nonce, 1); };
  auto before = jit_cache_stats();
  std::mt19937 g(6);
  for (std::int64_t n = 1; n <= 1000; ++n) {
    Array x = random_array(g, Shape{n}, DType::float64);
    auto j = make_jaxpr(ew)(x);
    Arrays got = codegen::execute(j, std::vector<Array>{x});
    if (n % 97 == 1) expect_close(got[0], eval_jaxpr(j, {x})[0], "size " + std::to_string(n));
    Array m = random_array(g, Shape{n % 13 + 2, n}, DType::float64);
    auto jr = make_jaxpr(red)(m);
    Arrays gr = codegen::execute(jr, std::vector<Array>{m});
    if (n % 97 == 1)
      expect_close(gr[0], eval_jaxpr(jr, {m})[0], "reduce size " + std::to_string(n));
  }
  auto after = jit_cache_stats();
  // Sizes up to 4 are numbers in the source (codegen::detail::max_literal_dim), and sizes that
  // coincide (a [5, 5] input) name both dimensions by one symbol, a different source: a few
  // extra compiles are allowed for those; the rest share.
  EXPECT_LE(after.compiles - before.compiles, 2u + 13u);
  EXPECT_GE(after.compiles - before.compiles, 2u);
}

// The user-level path: `jit(f)` called on sizes 1..1000 traces `f` once (it reads no size, and
// its jaxpr names none) and compiles once per function (a few more for sizes up to 4 and for
// sizes that coincide).
TEST(JitCodegen, JitOfFunctionTracesAndCompilesOnceForManySizes) {
  const double nonce = static_cast<double>(std::random_device{}() % 100000) + 0.75;
  int ew_traces = 0, red_traces = 0;
  auto ew = xpr::jit([&](const Array& x) {
    ++ew_traces;
    return xpr::sin(x) * nonce - x;
  });
  auto red = xpr::jit([&](const Array& x) {
    ++red_traces;
    return xpr::sum(x * nonce, 1);
  });
  auto before = jit_cache_stats();
  std::mt19937 g(7);
  for (std::int64_t n = 1; n <= 1000; ++n) {
    Array x = random_array(g, Shape{n}, DType::float64);
    Array got = ew(x);
    Array m = random_array(g, Shape{n % 13 + 2, n}, DType::float64);
    Array gr = red(m);
    if (n % 97 == 1 || n == 1000) {
      expect_close(got, xpr::sin(x) * nonce - x, "size " + std::to_string(n));
      expect_close(gr, xpr::sum(m * nonce, 1), "reduce size " + std::to_string(n));
    }
  }
  auto after = jit_cache_stats();
  EXPECT_EQ(ew_traces, 1);
  EXPECT_EQ(red_traces, 1);
  EXPECT_EQ(ew.trace_count(), 1u);
  EXPECT_LE(after.compiles - before.compiles, 2u + 13u);
  EXPECT_GE(after.compiles - before.compiles, 2u);
}

// Where the function reads a size, its trace holds for that size only: a new size traces again,
// and each size takes its own branch.
TEST(JitCodegen, JitRetracesWhereTheTraceReadASize) {
  int traces = 0;
  auto f = xpr::jit([&](const Array& x) {
    ++traces;
    if (x.shape()[0] > 3) return x * 2.0;
    return x * 3.0 + 1.0;
  });
  for (std::int64_t n : {2, 5, 3, 7, 2, 5}) {
    std::vector<double> v(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.5 * static_cast<double>(i) - 1.0;
    Array y = f(xpr::array(v));
    for (std::size_t i = 0; i < v.size(); ++i)
      EXPECT_DOUBLE_EQ(y.data<double>()[i], n > 3 ? 2 * v[i] : 3 * v[i] + 1) << "n " << n;
  }
  EXPECT_EQ(traces, 4);  // sizes 2, 5, 3, 7; the repeats are cached
  // A mean divides by the size: the library reads it, so the trace is per size too.
  int mean_traces = 0;
  auto mean = xpr::jit([&](const Array& x) {
    ++mean_traces;
    return xpr::mean(x);
  });
  EXPECT_DOUBLE_EQ(mean(xpr::array({1.0, 2.0, 6.0})).item<double>(), 3.0);
  EXPECT_DOUBLE_EQ(mean(xpr::array({1.0, 3.0})).item<double>(), 2.0);
  EXPECT_EQ(mean_traces, 2);
  // A size read through aval() is a size read too (it was not counted once: the second call
  // reused the first size's 1/3 and returned 0.5 * 4 / 3 for every element).
  int aval_traces = 0;
  auto normalized = xpr::jit([&](const Array& x) {
    ++aval_traces;
    return x / static_cast<double>(x.aval().shape[0]);
  });
  expect_close(normalized(xpr::array({3.0, 6.0, 9.0})), xpr::array({1.0, 2.0, 3.0}), "n 3");
  expect_close(normalized(xpr::array({2.0, 4.0})), xpr::array({1.0, 2.0}), "n 2");
  EXPECT_EQ(aval_traces, 2);
  // The type's other parts (rank, dtype) are no size: a function reading only them is traced once.
  int dtype_traces = 0;
  auto twice = xpr::jit([&](const Array& x) {
    ++dtype_traces;
    return x.dtype() == xpr::DType::float64 && x.ndim() == 1 ? x * 2.0 : x;
  });
  expect_close(twice(xpr::array({1.0, 2.0, 3.0})), xpr::array({2.0, 4.0, 6.0}), "n 3");
  expect_close(twice(xpr::array({1.0, 2.0})), xpr::array({2.0, 4.0}), "n 2");
  EXPECT_EQ(dtype_traces, 1);
}

// A constant of fixed shape fits one size only: a trace holding one is for its size, and `f` is
// traced again at another, giving the error (or the broadcast) the function itself gives. A
// constant made from the input's size (zeros of its shape, returned) is not reused either.
TEST(JitCodegen, JitWithAFixedShapeConstantTracesAgainAtAnotherSize) {
  const Array c = xpr::array({1.0, 2.0, 3.0});
  int traces = 0;
  auto f = xpr::jit([&](const Array& x) {
    ++traces;
    return xpr::sin(x) * c;
  });
  Array y = f(xpr::array({0.5, 1.0, 1.5}));
  EXPECT_NEAR(y.data<double>()[2], 3 * std::sin(1.5), 1e-12);
  EXPECT_THROW(f(xpr::array({0.5, 1.0})), xpr::error);
  EXPECT_EQ(traces, 2);
  Array one = f(xpr::array({2.0}));  // broadcast by jax.numpy's rules: traced for this size
  EXPECT_NEAR(one.data<double>()[1], 2 * std::sin(2.0), 1e-12);
  auto z = xpr::jit([](const Array& x) { return xpr::zeros_like(x) + 1.0; });
  EXPECT_EQ(z(xpr::array({1.0, 2.0, 3.0})).shape(), Shape{3});
  EXPECT_EQ(z(xpr::array({1.0, 2.0})).shape(), Shape{2});
  auto grad_sum = xpr::jit(xpr::grad([](const Array& x) { return xpr::sum(xpr::sin(x)); }));
  for (std::int64_t n : {3, 5}) {
    Array x = xpr::linspace(0.0, 1.0, n);
    expect_close(grad_sum(x), xpr::cos(x), "grad of sum, size " + std::to_string(n));
  }
}

// Many threads calling jitted functions on rank-0 inputs (the fast path): one trace each, the
// values right.
TEST(JitCodegen, JitFastPathManyThreads) {
  std::atomic<int> traces{0};
  auto f = xpr::jit([&](const Array& x) {
    ++traces;
    return x * 2.0 + 1.0;
  });
  auto g = xpr::jit([&](const Array& x, const Array& y) {
    ++traces;
    return xpr::exp(x) - y;
  });
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) {
        const double v = 0.25 * t + 0.01 * i;
        if (f(Array(v)).item<double>() != v * 2.0 + 1.0) ++wrong;
        if (std::abs(g(Array(v), 0.5).item<double>() - (std::exp(v) - 0.5)) > 1e-12) ++wrong;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(traces.load(), 2);
}

// Long elementwise loops run in parts on several threads (codegen/workers.hpp), written as a
// user would: a function of a large array, jitted, checked element by element against a plain
// loop; loops that combine elements (a sum) run on the calling thread.
TEST(JitCodegen, LongElementwiseLoopsRunInPartsOnSeveralThreads) {
  codegen::JitOptions precise;  // scalar libm: bit for bit the plain loop's std::sin
  precise.precise_math = true;
  auto f = xpr::jit(
      [](const Array& x) {
        return std::make_tuple(xpr::sin(x) * 2.0 - x, x > 0.5, xpr::astype(x * 3.0, DType::int32));
      },
      precise);
  std::vector<double> small(8, 0.25);
  EXPECT_NE(f.lower(array(small)).as_text().find("h->parallel(&g"), std::string::npos);
  for (std::int64_t n : {1, 4097, 300000, 1000003}) {
    std::vector<double> v(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = 1e-3 * static_cast<double>(i % 1999) - 0.4;
    const std::size_t runs = codegen::detail::parts_runs();
    auto [y, c, m] = f(array(v));
    if (codegen::detail::jit_threads() > 1) {
      EXPECT_EQ(codegen::detail::parts_runs() > runs, n >= 300000) << n;
    }
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < v.size(); ++i)
      wrong += y.data<double>()[i] != std::sin(v[i]) * 2.0 - v[i] ||
               c.data<bool>()[i] != (v[i] > 0.5) ||
               m.data<std::int32_t>()[i] != static_cast<std::int32_t>(v[i] * 3.0);
    EXPECT_EQ(wrong, 0u) << n;
  }
  // A group that also stores a scalar (computed before its loop) stays on one thread: each part
  // would store it.
  auto scaled = xpr::jit([](const Array& a, const Array& s) {
    Array t = s * 3.0 + 1.0;
    return std::make_tuple(a * t, t);
  });
  std::vector<double> big(1 << 20, 0.5);
  const std::size_t before = codegen::detail::parts_runs();
  auto [at, t] = scaled(array(big), Array(2.0));
  EXPECT_EQ(codegen::detail::parts_runs(), before);
  EXPECT_EQ(t.item<double>(), 7.0);
  EXPECT_EQ(at.data<double>()[(1 << 20) - 1], 3.5);
  // A sum combines every element: one thread.
  auto total = xpr::jit([](const Array& x) { return xpr::sum(x * x); });
  std::vector<double> ones(1 << 20, 0.5);
  const std::size_t runs = codegen::detail::parts_runs();
  EXPECT_EQ(total(array(ones)).item<double>(), 0.25 * (1 << 20));
  EXPECT_EQ(codegen::detail::parts_runs(), runs);
}

// The parts run under the calling thread's rounding mode, so a result does not depend on which
// thread computed which element; and many threads may split their loops at once.
TEST(JitCodegen, LoopsInPartsKeepTheCallersRoundingModeAndShareTheWorkers) {
  auto f = xpr::jit([](const Array& x) { return x * 0.1; });
  std::vector<double> v(1100000);  // longer than the loop's threshold for splitting
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 1.0 + static_cast<double>(i);
  const Array x = array(v);
  Array nearest = f(x);
  std::fesetround(FE_UPWARD);
  const std::size_t runs = codegen::detail::parts_runs();
  Array upward = f(x);
  if (codegen::detail::jit_threads() > 1) {
    EXPECT_GT(codegen::detail::parts_runs(), runs);
  }
  std::vector<double> want(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) want[i] = v[i] * 0.1;
  std::fesetround(FE_TONEAREST);
  std::size_t wrong = 0, differ = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    wrong += upward.data<double>()[i] != want[i];
    differ += upward.data<double>()[i] != nearest.data<double>()[i];
  }
  EXPECT_EQ(wrong, 0u);
  EXPECT_GT(differ, 1000u);  // the rounding mode mattered

  // The exceptions a part raises are the caller's to test, as after a loop on one thread: a NaN
  // or an overflow near the end of the array (a worker's part) is seen.
  auto h = xpr::jit([](const Array& a) { return xpr::log(a) * 1e307; });
  std::vector<double> u(1000000, 2.0);
  u[999990] = -1.0;
  (void)h(array(u));
  std::feclearexcept(FE_ALL_EXCEPT);
  Array hw = h(array(u));
  EXPECT_TRUE(std::isnan(hw.data<double>()[999990]));
  EXPECT_TRUE(std::fetestexcept(FE_INVALID));
  u[999990] = 1e300;
  std::feclearexcept(FE_ALL_EXCEPT);
  hw = h(array(u));
  EXPECT_TRUE(std::isinf(hw.data<double>()[999990]));
  EXPECT_TRUE(std::fetestexcept(FE_OVERFLOW));
  std::feclearexcept(FE_ALL_EXCEPT);

  auto g = xpr::jit([](const Array& a) { return xpr::exp(-a * a) + a; });
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::vector<double> w(200000 + 999 * static_cast<std::size_t>(t));
      for (std::size_t i = 0; i < w.size(); ++i) w[i] = 1e-5 * static_cast<double>(i) + t;
      for (int r = 0; r < 5; ++r) {
        Array y = g(array(w));
        for (std::size_t i = 0; i < w.size(); i += 7)
          if (std::abs(y.data<double>()[i] - (std::exp(-w[i] * w[i]) + w[i])) > 1e-14 * (1 + w[i]))
            ++bad;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
}

// A program that blocks a signal in every thread and waits for it in one (sigwait) receives it
// there: the workers block every signal (one that took SIGUSR1 would end the process).
TEST(JitCodegen, WorkersTakeNoSignals) {
  auto f = xpr::jit([](const Array& a) { return a * 2.0 + 1.0; });
  (void)f(array(std::vector<double>(1 << 20, 1.0)));  // a split loop: the workers exist
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &set, &old);
  int got = 0;
  std::thread waiter([&] { sigwait(&set, &got); });
  kill(getpid(), SIGUSR1);
  waiter.join();
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  EXPECT_EQ(got, SIGUSR1);
}

TEST(JitCodegen, SourceIsHeaderFreeWithGeneratedNames) {
  ClosedJaxpr j = parse_jaxpr("{ lambda ; a:f64[3]. let b:f64[3] = mul a 2.5:f64[] in (b,) }");
  std::string src = codegen::lower_to_source(j.jaxpr);
  EXPECT_EQ(src.find("#include"), std::string::npos);
  EXPECT_NE(src.find("0x1.4p+1"), std::string::npos) << src;  // 2.5 printed from its value
  EXPECT_NE(src.find("xpr_kernel"), std::string::npos);
}

TEST(JitCodegen, PreciseMathCallsScalarLibm) {
  ClosedJaxpr j = parse_jaxpr("{ lambda ; a:f64[5]. let b:f64[5] = sin a in (b,) }");
  codegen::JitOptions precise;
  precise.precise_math = true;
  EXPECT_NE(codegen::lower_to_source(j.jaxpr).find("simd(\"notinbranch\")"), std::string::npos);
  EXPECT_EQ(codegen::lower_to_source(j.jaxpr, precise).find("simd("), std::string::npos);
  Array a = array(std::vector<double>{0.1, 1.0, 10.0, 100.0, 1e5});
  Arrays got = codegen::compile(j.jaxpr, precise)->run(std::vector<Array>{a});
  for (std::int64_t i = 0; i < 5; ++i)
    EXPECT_EQ(got[0].data<double>()[i], std::sin(a.data<double>()[i]));
}

// A long program keeps its groups apart (GCC inlined every group, each a static function called
// once, into the entry function, and compiled a 40-step unrolled integrator's gradient in 31 s
// instead of 7.8 s; examiner L's 150 steps took about 5 minutes); a short one lets GCC inline.
TEST(JitCodegen, ALongProgramKeepsItsGroupsApartAndAgreesWithEager) {
  // A velocity Verlet integrator of a small chain unrolled in C++, as a user writes one: each
  // step's slices and concatenations make groups of their own.
  auto force = [](const Array& q) {
    const Array qp = xpr::concatenate({xpr::zeros({1}), q, xpr::zeros({1})});
    const Array d = qp(xpr::range(1, xpr::none)) - qp(xpr::range(xpr::none, -1));
    const Array f = d + 0.5 * d * d * d;
    return f(xpr::range(1, xpr::none)) - f(xpr::range(xpr::none, -1));
  };
  auto run = [&](const Array& q0, const Array& v0) {
    Array q = q0, v = v0;
    for (int t = 0; t < 12; ++t) {
      v = v + 0.01 * force(q);
      q = q + 0.02 * v;
      v = v + 0.01 * force(q);
    }
    return xpr::sum(q) + 0.5 * xpr::sum(v * v);
  };
  const Array q = array({0.1, -0.2, 0.3, 0.0, 0.2, -0.1}),
              v = array({0.0, 0.1, 0.0, -0.1, 0.0, 0.2});
  auto g = xpr::jit(xpr::grad<0, 1>(run));
  const std::string text = g.lower(q, v).as_text();
  std::size_t declared = 0;
  for (std::size_t at = text.find("static void g"); at != std::string::npos;
       at = text.find("static void g", at + 1))
    ++declared;
  EXPECT_GT(declared, 2 * codegen::detail::max_inlined_groups);  // declarations and definitions
  EXPECT_NE(text.find("__attribute__((noinline)) static void g0("), std::string::npos);
  const auto [jq, jv] = g(q, v);
  const auto [eq, ev] = xpr::grad<0, 1>(run)(q, v);
  for (std::int64_t i = 0; i < 6; ++i) {
    EXPECT_NEAR(jq.data<double>()[i], eq.data<double>()[i], 1e-12) << i;
    EXPECT_NEAR(jv.data<double>()[i], ev.data<double>()[i], 1e-12) << i;
  }
  // A short program: no attribute, GCC may inline its groups.
  auto small = xpr::jit([](const Array& x) { return xpr::sum(xpr::sin(x) * 2.0) * x; });
  EXPECT_EQ(small.lower(q).as_text().find("noinline"), std::string::npos);
}

// f64 sin and cos in a flat loop run first through the kernel's own inline sine and cosine
// (Lowering::helper's trig_f64: |x| <= 2^30), and the loop runs again with libm's when some
// argument is beyond that or not finite. Against glibc's scalar sin and cos (below 1 ulp): within
// 4 ulp (libmvec's bound; the inline ones measured 2.6), signed zeros and NaN exact, at sizes
// around the vector width and long enough to run in parts on several threads.
TEST(JitCodegen, InlineSineAndCosineAgreeWithLibmAndFallBackBeyondTheirRange) {
  auto f = xpr::jit([](const Array& x) { return std::make_tuple(xpr::sin(x), xpr::cos(x)); });
  std::vector<double> probe(8, 0.5);
  const std::string text = f.lower(array(probe)).as_text();
  EXPECT_NE(text.find("xpr_fsin_f64("), std::string::npos);
  EXPECT_NE(text.find("xpr_fcos_f64("), std::string::npos);
  auto within = [](double got, double want, double ulps) {
    if (std::isnan(want)) return std::isnan(got);
    if (want == 0) return got == 0 && std::signbit(got) == std::signbit(want);
    const double a = std::fabs(want);
    return std::fabs(got - want) <= ulps * (std::nextafter(a, INFINITY) - a);
  };
  std::mt19937_64 g(17);
  auto check = [&](const std::vector<double>& v, const std::string& what) {
    auto [s, c] = f(array(v));
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < v.size(); ++i) {
      const bool ok = within(s.data<double>()[i], std::sin(v[i]), 4) &&
                      within(c.data<double>()[i], std::cos(v[i]), 4);
      if (!ok && wrong++ < 3)
        ADD_FAILURE() << what << ": x = " << std::hexfloat << v[i] << " sin " << s.data<double>()[i]
                      << " (libm " << std::sin(v[i]) << "), cos " << c.data<double>()[i]
                      << " (libm " << std::cos(v[i]) << ")";
    }
    EXPECT_EQ(wrong, 0u) << what;
  };
  for (double R : {1e-8, 1.0, 1.6, 10.0, 1e3, 1e6, 0x1p30}) {
    for (std::size_t n : {1, 3, 4, 5, 9, 17, 4099}) {
      std::uniform_real_distribution<double> u(-R, R);
      std::vector<double> v(n);
      for (double& x : v) x = u(g);
      check(v, "range " + std::to_string(R) + ", n = " + std::to_string(n));
    }
    // Next to multiples of pi / 2, where sin or cos is small and the reduction cancels.
    std::vector<double> near;
    std::uniform_real_distribution<double> k(-R / 1.5707963267948966, R / 1.5707963267948966);
    for (int i = 0; i < 2000; ++i) {
      double x = std::nearbyint(k(g)) * 1.5707963267948966;
      for (int j = i % 4; j-- > 0;) x = std::nextafter(x, (i & 1) ? INFINITY : -INFINITY);
      if (std::fabs(x) <= 0x1p30) near.push_back(x);
    }
    check(near, "next to multiples of pi/2 up to " + std::to_string(R));
  }
  // The edge of the range and beyond it, alone and inside long loops in parts: every element of
  // a part that holds one runs again through libm, and the other parts keep the inline values.
  const std::vector<double> edges = {
      0.0,          -0.0,   0x1p30, -0x1p30,  std::nextafter(0x1p30, INFINITY),
      3e9,          -1e15,  1e300,  INFINITY, -INFINITY,
      std::nan(""), 5e-324, -5e-324};
  check(edges, "edges");
  for (double e : edges) {
    std::vector<double> v(300001);
    std::uniform_real_distribution<double> u(-100, 100);
    for (double& x : v) x = u(g);
    v[v.size() / 2 + 7] = e;
    check(v, "one edge value among 300001");
  }
  // grad through the same loops: cos and -sin, the forward values the inline ones.
  auto df = xpr::jit(xpr::grad([](const Array& x) { return xpr::sum(xpr::sin(x) * xpr::cos(x)); }));
  std::vector<double> v(1001);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.37 * static_cast<double>(i) - 150.0;
  const Array d = df(array(v));
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < v.size(); ++i)
    wrong += std::fabs(d.data<double>()[i] - std::cos(2 * v[i])) > 1e-14;
  EXPECT_EQ(wrong, 0u);
  // precise_math: libm's only.
  codegen::JitOptions precise;
  precise.precise_math = true;
  EXPECT_EQ(xpr::jit([](const Array& x) { return xpr::sin(x); }, precise)
                .lower(array(probe))
                .as_text()
                .find("xpr_fsin"),
            std::string::npos);
}

// take_along_axis with an out-of-range index (filled with NaN) on small shapes whose loops GCC
// unrolls: the fill was `oob ? nan : x[clamped]`, which GCC 12 at -O3 with AVX made a masked
// load with another row's mask (examiner C: (1, 5, 4) along axis 0 gave 0 for x[0, 1, 1]). The
// fill is now a bitwise blend of both reads (Lowering::helper's pick). Bit for bit against eager.
TEST(JitCodegen, GatherFillsOnlyTheOutOfRangeElementsOfSmallShapes) {
  auto f = [](const Array& x, const Array& i, int axis) {
    return xpr::take_along_axis(x, i, axis);
  };
  std::mt19937 g(5);
  std::size_t cases = 0;
  for (const Shape& xs : {Shape{1, 5, 4}, Shape{3, 1, 4}, Shape{5, 1, 2}, Shape{2, 1, 4, 4},
                          Shape{5, 1, 5, 3}, Shape{2, 2, 3}, Shape{1, 3}, Shape{4, 1}}) {
    for (int axis = 0; axis < static_cast<int>(xs.rank()); ++axis) {
      std::vector<std::int64_t> id(xs.begin(), xs.end());
      id[static_cast<std::size_t>(axis)] = 2;
      const Shape is(id);
      std::vector<double> xv(static_cast<std::size_t>(xs.size()));
      for (std::size_t k = 0; k < xv.size(); ++k) xv[k] = static_cast<double>(k + 1);
      std::vector<std::int32_t> iv(static_cast<std::size_t>(is.size()));
      std::uniform_int_distribution<int> in(
          0, static_cast<int>(xs[static_cast<std::size_t>(axis)]) - 1);
      for (std::int32_t& v : iv) v = in(g);
      iv[1 % iv.size()] = 5 + static_cast<int>(xs[static_cast<std::size_t>(axis)]);  // out of range
      if (iv.size() > 7) iv[7] = -9;
      const Array x = xpr::array(xv, xs), i = xpr::array(iv, is);
      auto jf = xpr::jit([&](const Array& a, const Array& b) { return f(a, b, axis); });
      const Array want = f(x, i, axis), got = jf(x, i);
      ASSERT_EQ(got.shape(), want.shape());
      std::size_t wrong = 0;
      for (std::int64_t k = 0; k < want.size(); ++k) {
        const double w = want.data<double>()[k], v = got.data<double>()[k];
        wrong += std::isnan(w) ? !std::isnan(v) : v != w;
      }
      EXPECT_EQ(wrong, 0u) << xs.str() << " along " << axis;
      ++cases;
    }
  }
  EXPECT_EQ(cases, 24u);
}

// Concatenations and selects fused into small unrolled loops, against eager: a sum over a
// concatenation of (1, 5, 4) and (1, 1, 4) along axis 1 came out permuted ([104, 96, 88, 112]
// for [88, 96, 104, 112]) where GCC 12 at -O3 made the operands' conditional reads masked loads;
// such loops are now compiled without loop if-conversion, and selects blend both operands.
TEST(JitCodegen, ConcatenationsAndSelectsOfSmallShapes) {
  std::size_t wrong = 0, cases = 0;
  // About 150 compiles (11 s): the shapes of the sweep that found it, with an axis of size 1,
  // odd and even extents, rank 4.
  for (const Shape& s : {Shape{1, 5, 4}, Shape{3, 1, 4}, Shape{2, 3, 2}, Shape{2, 2, 2, 3},
                         Shape{4, 1}, Shape{2, 4, 4}}) {
    for (int axis = 0; axis < static_cast<int>(s.rank()); ++axis) {
      for (std::int64_t ext : {1, 2}) {
        std::vector<std::int64_t> d2(s.begin(), s.end());
        d2[static_cast<std::size_t>(axis)] = ext;
        const Shape s2(d2);
        std::vector<double> a(static_cast<std::size_t>(s.size())),
            b(static_cast<std::size_t>(s2.size()));
        for (std::size_t k = 0; k < a.size(); ++k) a[k] = static_cast<double>(k + 1);
        for (std::size_t k = 0; k < b.size(); ++k) b[k] = -static_cast<double>(k) - 1.5;
        const Array x = array(a, s), y = array(b, s2);
        const std::vector<std::function<Array(const Array&, const Array&)>> fns = {
            [axis](const Array& p, const Array& q) {
              return xpr::concatenate({p * 2.0, q + 1.0, p * 3.0}, axis) * 1.5;
            },
            [axis](const Array& p, const Array& q) {
              return xpr::sum(xpr::concatenate({p, q}, axis) * 2.0, axis);
            },
            [axis](const Array& p, const Array& q) {
              return xpr::max(xpr::concatenate({q, p}, axis), axis, true) - 1.0;
            },
            [](const Array& p, const Array&) {
              return xpr::where(p > 3.0, p * 2.0, -p) + xpr::sum(xpr::where(p < 5.0, p, 0.0), 0);
            },
        };
        for (const auto& fn : fns) {
          const Array want = fn(x, y), got = xpr::jit(fn)(x, y);
          ++cases;
          for (std::int64_t k = 0; k < want.size(); ++k) {
            const double w = want.data<double>()[k], v = got.data<double>()[k];
            wrong += std::fabs(w - v) > 1e-13 * (1 + std::fabs(w));
          }
          if (wrong) {
            ADD_FAILURE() << s.str() << " along " << axis << ", other extent " << ext;
            return;
          }
        }
      }
    }
  }
  EXPECT_EQ(cases, 144u);
}

TEST(JitCodegen, HostileTextFailsCleanlyOrCompilesToTheInterpretersResult) {
  // Sizes that overflow, names with quotes and semicolons: rejected by the parser or the lowering
  // with an xpr::error, never pasted into source.
  const std::vector<std::string> texts = {
      "{ lambda ; a:f64[9223372036854775807]. let b:f64[9223372036854775807] = sin a in (b,) }",
      "{ lambda ; a:f64[4611686018427387904,4]. let b:f64[4611686018427387904,4] = sin a in (b,) }",
      "{ lambda ; a\";system:f64[3]. let b:f64[3] = sin a in (b,) }",
      "{ lambda ; a:f64[3]. let b:f64[3] = mul a 1e308:f64[] in (b,) }",
      "{ lambda ; a:f64[3]. let b:f64[3] = mul a -0.0:f64[] in (b,) }",
  };
  for (const std::string& t : texts) {
    try {
      ClosedJaxpr j = parse_jaxpr(t);
      Array a = array(std::vector<double>{1.0, -2.0, 3.0});
      auto k = codegen::compile(j.jaxpr);
      expect_close(k->run(std::vector<Array>{a})[0], eval_jaxpr(j, {a})[0], t);
      // The source as lowered (a kernel loaded through the disk index keeps none).
      EXPECT_EQ(codegen::lower(j.jaxpr).source.find("system"), std::string::npos);
    } catch (const xpr::error&) {
      SUCCEED();
    }
  }
}

TEST(JitCodegen, CallsAreInlined) {
  // checkpoint and custom_jvp_call hold their body as a sub-jaxpr: lowered inline, so they compile.
  auto rule = xpr::custom_jvp([](auto x) { return xpr::sin(x) * 3.0; },
                              [](auto primals, auto tangents) {
                                auto [x] = primals;
                                auto [t] = tangents;
                                return std::pair{xpr::sin(x) * 3.0, t * 2.0};
                              });
  auto body = xpr::checkpoint([](auto v) { return xpr::exp(v) - v; });
  auto f = [&](auto v) { return body(rule(v)) + rule(v * 2.0); };
  std::mt19937 g(7);
  Array x = random_array(g, Shape{6}, DType::float64);
  ClosedJaxpr j = make_jaxpr(f)(x);
  check_compiled(j, {x}, "inlined calls");
  // Differentiated through the rule and compiled: the jvp jaxpr lowers too.
  auto df = [&](auto v) { return xpr::grad([&](auto w) { return xpr::sum(f(w)); })(v); };
  check_compiled(make_jaxpr(df)(x), {x}, "grad through inlined calls");
}

TEST(JitCodegen, WrongArgumentTypesThrow) {
  Array x = array(std::vector<double>{1.0, 2.0});
  auto k = codegen::compile(make_jaxpr([](const Array& v) { return v * 2.0; })(x).jaxpr);
  EXPECT_THROW(k->run(std::vector<Array>{array(std::vector<double>{1.0, 2.0, 3.0})}), type_error);
  EXPECT_THROW(k->run(std::vector<Array>{}), type_error);
}

// ---- dead code, and fusion across broadcasts, reductions and indexing ---------------------------

/// jit that must compile: an equation the generator does not lower throws instead of falling back
/// to the interpreter.
template <class F>
auto compiled(F f) {
  return xpr::jit(f, {.backend = JitBackend::compiled});
}

/// Whether the jaxpr's text mentions `what`.
inline bool jaxpr_mentions(const ClosedJaxpr& j, const std::string& what) {
  std::ostringstream os;
  os << j;
  return os.str().find(what) != std::string::npos;
}

// ---- host calls: equations the kernel does not compute -----------------------------------------

/// A primitive defined in user code (examples/custom_primitive.cpp), linear: x -> 2 x. Code
/// generation has no rule for it, so compiled code calls back into the host for it.
class Twice final : public rt::Primitive {
 public:
  Twice() : Primitive("test_codegen_twice") {}
  Arrays impl(std::span<const Array> args, const rt::Params&) const override {
    ++calls;
    return {args[0] * 2.0};
  }
  rt::Avals abstract_eval(std::span<const rt::ShapedArray> args, const rt::Params&) const override {
    return {args[0]};
  }
  std::pair<Arrays, Arrays> jvp(std::span<const Array> primals, std::span<const Array> tangents,
                                const rt::Params&) const override {
    return {{rt::bind1(*this, {primals[0]})}, {rt::bind1(*this, {tangents[0]})}};
  }
  rt::Cotangents transpose(std::span<const rt::Cotangent> cts, std::span<const rt::LinearArg>,
                           const rt::Params&) const override {
    return {rt::bind1(*this, {*cts[0]})};
  }
  std::pair<Arrays, rt::BatchDims> batch(std::span<const Array> args,
                                         std::span<const rt::BatchDim> dims, std::int64_t,
                                         const rt::Params&) const override {
    return {{rt::bind1(*this, {args[0]})}, {dims[0]}};
  }
  mutable std::atomic<int> calls{0};
};
inline const Twice twice_p;
inline Array twice(const Array& x) { return rt::bind1(twice_p, {x}); }

/// Two results, (x + y, x * y); its impl throws `value_error` for a negative x, as a user's
/// primitive checking its input would.
class SumAndProduct final : public rt::Primitive {
 public:
  SumAndProduct() : Primitive("test_codegen_sum_and_product", /*multiple_results=*/true) {}
  Arrays impl(std::span<const Array> args, const rt::Params&) const override {
    for (std::int64_t i = 0; i < args[0].size(); ++i)
      if (args[0].data<double>()[i] < 0)
        throw value_error("test_codegen_sum_and_product: expected x >= 0");
    return {args[0] + args[1], args[0] * args[1]};
  }
  rt::Avals abstract_eval(std::span<const rt::ShapedArray> args, const rt::Params&) const override {
    return {args[0], args[0]};
  }
};
inline const SumAndProduct sum_and_product_p;

/// Its impl returns a result of another shape than its abstract evaluation says (a user's bug).
class Inconsistent final : public rt::Primitive {
 public:
  Inconsistent() : Primitive("test_codegen_inconsistent") {}
  Arrays impl(std::span<const Array> args, const rt::Params&) const override {
    return {xpr::concatenate({args[0], args[0]}, 0)};
  }
  rt::Avals abstract_eval(std::span<const rt::ShapedArray> args, const rt::Params&) const override {
    return {args[0]};
  }
};
inline const Inconsistent inconsistent_p;

/// The source of `jf`'s kernel for `args` calls back into the host.
template <class J, class... A>
bool calls_host(J& jf, const A&... args) {
  return jf.lower(args...).as_text().find("h->call(h->ctx, ") != std::string::npos;
}

/// sin(2 x) + 1, element by element in double: the closed form the tests compare with.
inline Array sin_twice_plus_one(const std::vector<double>& x) {
  std::vector<double> r;
  for (double v : x) r.push_back(std::sin(2 * v) + 1);
  return array(r);
}

TEST(JitCodegen, UserPrimitivesRunAsHostCallsInsideCompiledCode) {
  const std::vector<double> xs = {-1.5, 0.25, 1.0, 2.0};
  auto f = [](const Array& v) { return xpr::sin(twice(v)) + 1.0; };
  auto jf = compiled(f);  // must compile: no fallback to the interpreter
  EXPECT_TRUE(calls_host(jf, array(xs)));
  const int before = twice_p.calls;
  expect_close(jf(array(xs)), sin_twice_plus_one(xs), "sin(twice(x)) + 1");
  EXPECT_EQ(twice_p.calls - before, 1);  // the impl ran once, inside the kernel's call
  // Differentiated (its jvp and transpose bind it again) and compiled: d/dx = 2 cos(2 x).
  auto df = compiled(xpr::grad([&](const Array& v) { return xpr::sum(f(v)); }));
  Array g = df(array(xs));
  for (std::size_t i = 0; i < xs.size(); ++i)
    EXPECT_NEAR(g.data<double>()[i], 2 * std::cos(2 * xs[i]), 1e-12);
  // Batched through its rule, then compiled.
  Array rows = xpr::reshape(array(std::vector<double>{0.5, -0.5, 1.5, 3.0, 0.0, 1.0}), {2, 3});
  Array vm = compiled(xpr::vmap(f))(rows);
  for (std::size_t i = 0; i < 6; ++i)
    EXPECT_NEAR(vm.data<double>()[i], std::sin(2 * rows.data<double>()[i]) + 1, 1e-12);
}

TEST(JitCodegen, HostCallsInLoopsAndBranches) {
  // x <- twice(x) * 0.25 + 1 five times (x -> x / 2 + 1), then a branch calling it again: the
  // host call sits in a loop body and in a cond branch, functions of their own in the source.
  auto f = [](const Array& x0) {
    Array x = xpr::fori_loop(
        0, 5, [](Array, Array v) { return twice(v) * 0.25 + 1.0; }, x0);
    return xpr::cond(
        xpr::sum(x) > 0.0, [](Array v) { return twice(v) - 1.0; }, [](Array v) { return -v; }, x);
  };
  auto jf = compiled(f);
  const std::vector<double> xs = {1.0, -3.0, 40.0};
  EXPECT_TRUE(calls_host(jf, array(xs)));
  Array got = jf(array(xs));
  for (std::size_t i = 0; i < xs.size(); ++i) {
    double v = xs[i];
    for (int k = 0; k < 5; ++k) v = v / 2 + 1;
    EXPECT_NEAR(got.data<double>()[i], 2 * v - 1, 1e-12);  // the sum is positive
  }
}

TEST(JitCodegen, HostCallsWithSeveralResultsLiteralsAndExceptions) {
  auto f = [](const Array& x) {
    Arrays r = rt::bind(sum_and_product_p,
                        std::vector<Array>{xpr::exp(x), Array(3.0)});  // a literal operand
    return r[0] * r[1];                                                // (e^x + 3) 3 e^x
  };
  auto jf = compiled(f);
  const std::vector<double> xs = {0.0, 0.5, -2.0};
  EXPECT_TRUE(calls_host(jf, array(xs)));
  auto expect_closed_form = [&](const Array& got) {
    for (std::size_t i = 0; i < xs.size(); ++i)
      EXPECT_NEAR(got.data<double>()[i], (std::exp(xs[i]) + 3) * 3 * std::exp(xs[i]), 1e-12);
  };
  expect_closed_form(jf(array(xs)));
  // The impl's exception reaches the caller through the kernel's frames, loop bodies included,
  // and leaves the kernel usable.
  auto g = [](const Array& x) {
    return xpr::fori_loop(
        0, 3,
        [](Array, Array v) {
          return rt::bind(sum_and_product_p,
                          std::vector<Array>{v - 2.0, xpr::sin(v)})[0];  // v - 2 + sin(v)
        },
        x);
  };
  auto jg = compiled(g);
  try {
    (void)jg(array(std::vector<double>{10.0, 3.0}));  // the second lane goes negative
    ADD_FAILURE() << "expected value_error";
  } catch (const value_error& e) {
    EXPECT_NE(std::string(e.what()).find("expected x >= 0"), std::string::npos) << e.what();
  }
  expect_closed_form(jf(array(xs)));
  Array big = jg(array(std::vector<double>{10.0, 30.0}));
  for (int i = 0; i < 2; ++i) {
    double v = i ? 30.0 : 10.0;
    for (int k = 0; k < 3; ++k) v = v - 2 + std::sin(v);
    EXPECT_NEAR(big.data<double>()[i], v, 1e-12);
  }
}

TEST(JitCodegen, AHostCallWhoseImplContradictsItsTypeIsATypeError) {
  auto jf = compiled([](const Array& x) { return xpr::sin(rt::bind1(inconsistent_p, {x})); });
  try {
    (void)jf(array(std::vector<double>{1.0, 2.0}));
    ADD_FAILURE() << "expected type_error";
  } catch (const type_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("test_codegen_inconsistent"), std::string::npos) << m;
    EXPECT_NE(m.find("f64[4]"), std::string::npos) << m;
    EXPECT_NE(m.find("f64[2]"), std::string::npos) << m;
  }
}

TEST(JitCodegen, WhatCodeGenerationDoesNotCoverRunsOnTheHost) {
  // dot_general of booleans, and an array literal (parsed jaxpr text can hold one): host calls
  // between compiled equations, results equal to the interpreter's.
  Array a = xpr::reshape(array(std::vector<bool>{true, false, true, true, false, true}), {2, 3});
  Array b = xpr::reshape(array(std::vector<bool>{false, true, true}), {3, 1});
  auto f = [](const Array& p, const Array& q) { return xpr::logical_not(xpr::matmul(p, q)); };
  auto jf = compiled(f);
  EXPECT_TRUE(calls_host(jf, a, b));
  expect_close(jf(a, b), f(a, b), "not(bool matmul)");
  // A user primitive alone: nothing to compile, so jit interprets (and codegen says why).
  ClosedJaxpr alone = make_jaxpr([](const Array& v) { return twice(v); })(array({1.0, 2.0}));
  EXPECT_THROW(codegen::compile(alone.jaxpr), not_implemented_error);
  expect_close(xpr::jit([](const Array& v) { return twice(v); })(array({1.0, 2.0})),
               array({2.0, 4.0}), "twice alone");
  // { lambda ; a:f64[3]. let b = add a [1.0 2.0 3.0]; c = sin b in (c,) }, built by hand.
  rt::Jaxpr j;
  rt::Var x(rt::ShapedArray{Shape{3}, DType::float64, false});
  rt::Var s(x.aval()), t(x.aval());
  j.invars = {x};
  j.eqns.push_back(rt::Eqn{&rt::add_p, {x, rt::Literal{array({1.0, 2.0, 3.0})}}, {}, {s}});
  j.eqns.push_back(rt::Eqn{&rt::sin_p, {s}, {}, {t}});
  j.outvars = {t};
  auto k = codegen::compile(j);
  EXPECT_NE(k->source().find("h->call(h->ctx, "), std::string::npos);
  Arrays got = k->run(std::vector<Array>{array({0.5, -1.0, 2.0})});
  expect_close(got[0], array({std::sin(1.5), std::sin(1.0), std::sin(5.0)}), "array literal");
}

TEST(JitCodegen, DeadEquationsAreNotLowered) {
  // A value computed and forgotten: the traced jaxpr keeps its equations, the kernel does not.
  auto f = [](const Array& x) {
    Array forgotten = xpr::concatenate({x * 7.25, x}, 0);
    (void)forgotten;
    return xpr::sin(x) * 2.0;
  };
  Array x = xpr::array({0.5, 1.0, 1.5});
  auto jf = compiled(f);
  auto lowered = jf.lower(x);
  EXPECT_TRUE(jaxpr_mentions(lowered.jaxpr(), "concatenate"));
  EXPECT_TRUE(jaxpr_mentions(lowered.jaxpr(), "7.25"));
  EXPECT_EQ(lowered.as_text().find("0x1.dp+2"), std::string::npos)  // 7.25, as the source spells it
      << lowered.as_text();
  expect_close(jf(x), f(x), "dead code");
  expect_close(jf(x), xpr::sin(x) * 2.0, "dead code, by hand");
}

TEST(JitCodegen, JacfwdOfANewtonSystemLowersOnlyTheJacobian) {
  auto F = [](const Array& v) {
    Array a = v[0], b = v[1], c = v[2];
    return xpr::stack(
        {a * a + b * b + c * c - 3.0, a * b * c - 1.0, xpr::exp(a) - b + xpr::sin(c)});
  };
  auto J = compiled(xpr::jacfwd(F));
  for (const std::vector<double>& p : {std::vector<double>{0.7, 1.2, 0.9}, {-0.3, 2.0, 0.1}}) {
    Array x = xpr::array(p);
    const double a = p[0], b = p[1], c = p[2];
    Array want = xpr::array(std::vector<double>{2 * a, 2 * b, 2 * c, b * c, a * c, a * b,
                                                std::exp(a), -1.0, std::cos(c)},
                            Shape{3, 3});
    expect_close(J(x), want, "jacfwd by hand");
    expect_close(J(x), xpr::jacfwd(F)(x), "jacfwd eager");
  }
  // jvp computes F(x) beside the tangents; nobody reads it, so its `- 3.0` is not in the kernel.
  auto lowered = J.lower(xpr::array({0.7, 1.2, 0.9}));
  EXPECT_TRUE(jaxpr_mentions(lowered.jaxpr(), "3.0"));
  EXPECT_EQ(lowered.as_text().find("0x1.8p+1"), std::string::npos) << lowered.as_text();
}

TEST(JitCodegen, RowReductionsFuseWithTheirBroadcasts) {
  std::mt19937 g(11);
  // Rows shorter than eight, exactly eight, and runs of eight with a remainder.
  for (std::int64_t n : {1, 3, 8, 19}) {
    for (DType t : {DType::float64, DType::float32}) {
      Array x = random_array(g, Shape{5, n}, t);
      auto rows = [](const Array& v) {
        Array norm = v / xpr::sqrt(xpr::sum(v * v, 1, true) + 1.0);
        Array e = xpr::exp(v - xpr::max(v, 1, true));
        Array soft = e / xpr::sum(e, 1, true);
        return std::vector<Array>{norm, soft, xpr::min(v, 1) * xpr::sum(norm * soft, 1),
                                  xpr::sum(xpr::sum(v, 1)), xpr::max(xpr::sum(v * 2.0, 1))};
      };
      check_compiled(make_jaxpr(rows)(x), {x}, "rows " + x.aval().str());
    }
    Array i = random_array(g, Shape{4, n}, DType::int32);
    auto ints = [](const Array& v) {
      return std::vector<Array>{xpr::sum(v * v, 1) - xpr::max(v, 1), xpr::min(v - 3, 1)};
    };
    check_compiled(make_jaxpr(ints)(i), {i}, "int rows " + i.aval().str());
    Array b = random_array(g, Shape{3, n}, DType::bool_);
    auto any = [](const Array& v) { return xpr::sum(xpr::astype(v, DType::int32), 1); };
    check_compiled(make_jaxpr(any)(b), {b}, "bool rows " + b.aval().str());
  }
  // Three axes: a reduction over the last, broadcast back, reduced again; a scalar in between;
  // reductions keeping the last axis, of values the loops compute.
  Array y = random_array(g, Shape{2, 3, 10}, DType::float64);
  auto cube = [](const Array& v) {
    Array s = xpr::sum(v, 2, true);
    Array w = xpr::tanh(v * s) - xpr::sum(v);
    return std::vector<Array>{xpr::sum(w * v, 2),
                              w,
                              s * 2.0,
                              xpr::sum(xpr::sin(v) * v, 0),
                              xpr::max(v * 2.0, 1),
                              xpr::min(xpr::exp(w), 0) + 1.0};
  };
  check_compiled(make_jaxpr(cube)(y), {y}, "cube");
}

TEST(JitCodegen, IndexingReadsFuseIntoElementwiseLoops) {
  std::mt19937 g(12);
  Array v = random_array(g, Shape{4, 6}, DType::float64);
  Array idx = xpr::array(std::vector<std::int32_t>{3, 0, 2, 3, 1});
  auto f = [idx](const Array& m) {
    Array t = xpr::transpose(m) * 2.0;
    Array s = xpr::slice(m, {1, 0}, {3, 6}, {1, 2}) + 1.0;
    Array c =
        xpr::concatenate({m, m * 3.0}, 1) - xpr::broadcasted_iota(DType::float64, Shape{4, 12}, 1);
    Array rows = xpr::take(m, idx, 0);
    Array r = xpr::reshape(m, {24}) * xpr::reshape(xpr::transpose(m), {24});
    return std::vector<Array>{t,
                              s,
                              c,
                              rows * rows - 1.0,
                              xpr::sum(rows, 1),
                              r,
                              xpr::squeeze(xpr::slice(m, {0, 2}, {1, 3}), {0, 1}) * 5.0};
  };
  check_compiled(make_jaxpr(f)(v), {v}, "indexing reads");
  auto jf = compiled(f);
  std::vector<Array> got = jf(v), want = f(v);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t k = 0; k < got.size(); ++k) expect_close(got[k], want[k], "jit indexing");
}

/// Lennard-Jones forces on `n` particles as a new user writes them (vmap of a pair energy over the
/// pairs, gathered with take, -grad of the sum), and with broadcasting only.
inline Array lj_pair_energy(const Array& ri, const Array& rj) {
  Array d = ri - rj;
  Array inv2 = 1.0 / xpr::sum(d * d);
  Array inv6 = inv2 * inv2 * inv2;
  return 4.0 * (inv6 * inv6 - inv6);
}

TEST(JitCodegen, PairForcesMatchEagerAndHandWritten) {
  const std::int64_t n = 11;
  std::vector<double> p;
  for (std::int64_t k = 0; k < n; ++k) {  // a 3 x 3 x 2 lattice, nudged
    const double q = static_cast<double>(k);
    p.push_back(1.1 * static_cast<double>(k % 3) + 0.01 * std::sin(q));
    p.push_back(1.1 * static_cast<double>(k / 3 % 3) + 0.01 * std::cos(q));
    p.push_back(1.1 * static_cast<double>(k / 9) + 0.01 * std::sin(2 * q));
  }
  Array pos = xpr::array(p, Shape{n, 3});
  std::vector<std::int32_t> ii, jj;
  for (std::int32_t a = 0; a < n; ++a)
    for (std::int32_t b = a + 1; b < n; ++b) {
      ii.push_back(a);
      jj.push_back(b);
    }
  Array I = xpr::array(ii), J = xpr::array(jj);
  auto energy = [&](const Array& x) {
    return xpr::sum(xpr::vmap(lj_pair_energy)(xpr::take(x, I, 0), xpr::take(x, J, 0)));
  };
  auto forces = [&](const Array& x) { return -xpr::grad(energy)(x); };
  auto dense_energy = [&](const Array& x) {
    Array d = xpr::reshape(x, {n, 1, 3}) - xpr::reshape(x, {1, n, 3});
    Array r2 = xpr::sum(d * d, 2) + xpr::eye(n);
    Array inv6 = 1.0 / (r2 * r2 * r2);
    return 2.0 * xpr::sum(inv6 * inv6 - inv6);
  };
  auto dense_forces = [&](const Array& x) { return -xpr::grad(dense_energy)(x); };
  // By hand: F_a += 24 inv2 inv6 (2 inv6 - 1) (r_a - r_b), and the opposite on b.
  std::vector<double> want(p.size(), 0.0);
  for (std::int64_t a = 0; a < n; ++a)
    for (std::int64_t b = a + 1; b < n; ++b) {
      double d[3], r2 = 0;
      for (int k = 0; k < 3; ++k) {
        d[k] = p[static_cast<std::size_t>(3 * a + k)] - p[static_cast<std::size_t>(3 * b + k)];
        r2 += d[k] * d[k];
      }
      const double inv2 = 1 / r2, inv6 = inv2 * inv2 * inv2;
      const double s = 24 * inv2 * inv6 * (2 * inv6 - 1);
      for (int k = 0; k < 3; ++k) {
        want[static_cast<std::size_t>(3 * a + k)] += s * d[k];
        want[static_cast<std::size_t>(3 * b + k)] -= s * d[k];
      }
    }
  Array hand = xpr::array(want, Shape{n, 3});
  Array got = compiled(forces)(pos);
  expect_close(got, forces(pos), "pair forces, eager");
  expect_close(got, hand, "pair forces, by hand");
  Array dense = compiled(dense_forces)(pos);
  expect_close(dense, dense_forces(pos), "dense forces, eager");
  expect_close(dense, hand, "dense forces, by hand");
  // The pair loop reads the particles' indices unclamped once a check before it has found them
  // all in range, and keeps each pair's difference vector for the backward pass in registers.
  const std::string src = compiled(forces).lower(pos).as_text();
  EXPECT_NE(src.find("if (!(ck0 || ck1)) {"), std::string::npos) << src;
  EXPECT_NE(src.find("double rk"), std::string::npos) << src;
  // The pair loop gathers and stores each pair's updates (GCC vectorizes it); the scatter-adds
  // of take's transpose combine them in a loop of their own after it.
  EXPECT_NE(src.find("#pragma GCC ivdep"), std::string::npos) << src;
  // The first particle's update is the second's negated (the cotangents of ri - rj): the pair
  // loop stores one of them, and the first particle's combine negates it.
  EXPECT_NE(src.find(" + (-o"), std::string::npos) << src;
}

TEST(JitCodegen, ADivisionOfAReciprocalByItsDenominatorIsASquare) {
  // (1 / y) / y, which the derivative of 1 / y gives, is computed as (1 / y) * (1 / y): one
  // division, not two in a row. The product is within an ulp of the quotient, so it equals the
  // interpreter's result within the tolerance, at every magnitude: huge and tiny (both overflow or
  // both underflow), subnormal, zeros of both signs, infinities, NaN.
  const double big = std::ldexp(1.0, 511), small = std::ldexp(1.0, -513);
  std::vector<double> v = {0.5, -3.0, 1.7, 1e-300, 1e300, 1e-160, 1e160, 1e-154, 5e-324,
                           0.0, -0.0, big, small,  -big,  1e-30,  1e30,  7.25,   -1e-5};
  v.push_back(std::numeric_limits<double>::infinity());
  v.push_back(-std::numeric_limits<double>::infinity());
  v.push_back(std::numeric_limits<double>::quiet_NaN());
  auto f = [](const Array& y) {
    Array r = 1.0 / y;
    return r / y;
  };
  auto df = [](const Array& y) {
    return xpr::grad([](const Array& x) { return xpr::sum(1.0 / x); })(y);
  };
  for (DType t : {DType::float64, DType::float32}) {
    Array y = astype(xpr::array(v), t);
    expect_close(compiled(f)(y), f(y), "(1 / y) / y, " + y.aval().str());
    expect_close(compiled(df)(y), df(y), "grad of 1 / y, " + y.aval().str());
    const std::string src = compiled(f).lower(y).as_text();
    EXPECT_EQ(src.find(" / "), src.rfind(" / ")) << src;  // one division
  }
  // Not when the numerator is another number, or the denominators differ.
  auto g = [](const Array& y, const Array& z) { return (2.0 / y) / y + (1.0 / y) / z; };
  Array y = xpr::array(v), z = xpr::array(std::vector<double>(v.rbegin(), v.rend()));
  expect_close(compiled(g)(y, z), g(y, z), "2 / y / y and 1 / y / z");
}

TEST(JitCodegen, GatheringLoopsStoreUpdatesThatScattersCombineAfterThem) {
  // As a user writes a spring network: bonds (i, j) of rest length 1, the energy a sum over the
  // bonds through vmap, forces by -grad, so a loop over bonds gathers both ends and the
  // scatter-adds of take's transpose combine its results after it. Bonds in range, a particle
  // named twice in a row (repeated indices combine in the interpreter's order), a negative index
  // (counted from the end) and one past the end (filled with NaN, dropped by the scatter).
  const std::int64_t n = 7;
  std::vector<double> p;
  for (std::int64_t k = 0; k < 3 * n; ++k)
    p.push_back(0.9 * static_cast<double>(k % 4) + 0.2 * std::cos(static_cast<double>(k)));
  Array pos = xpr::array(p, Shape{n, 3});
  auto spring = [](const Array& ri, const Array& rj) {
    Array d = ri - rj;
    Array stretch = xpr::sqrt(xpr::sum(d * d)) - 1.0;
    return 0.5 * stretch * stretch;
  };
  using Bonds = std::pair<std::vector<std::int32_t>, std::vector<std::int32_t>>;
  for (const Bonds& bonds :
       {Bonds{{0, 1, 2, 3, 4, 5}, {1, 2, 3, 4, 5, 6}}, Bonds{{0, 0, 0, 6, 2}, {1, 2, 3, 5, 4}},
        Bonds{{0, 1, -1, 3}, {2, 2, 4, -7}}, Bonds{{0, 1, 2, 3}, {1, 9, 3, 4}}}) {
    Array I = xpr::array(bonds.first), J = xpr::array(bonds.second);
    auto energy = [&](const Array& x) {
      return xpr::sum(xpr::vmap(spring)(xpr::take(x, I, 0), xpr::take(x, J, 0)));
    };
    auto forces = [&](const Array& x) { return -xpr::grad(energy)(x); };
    // The update an argument rather than the loop's own value, beside a gather of the same rows.
    auto moved = [&](const Array& x, const Array& u) {
      return std::vector<Array>{x.at(I).add(u * xpr::take(x, J, 0)), xpr::take(x, I, 0) * 2.0};
    };
    Array u = xpr::array(std::vector<double>(bonds.first.size() * 3, 0.25),
                         Shape{static_cast<std::int64_t>(bonds.first.size()), 3});
    const std::string what = "bonds to " + std::to_string(bonds.second[1]);
    expect_close(compiled(forces)(pos), forces(pos), what + ", forces");
    expect_close(compiled(energy)(pos), energy(pos), what + ", energy");
    const auto got = compiled(moved)(pos, u), want = moved(pos, u);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t k = 0; k < got.size(); ++k) expect_close(got[k], want[k], what + ", moved");
  }
  Array I = xpr::array(std::vector<std::int32_t>{0, 1}),
        J = xpr::array(std::vector<std::int32_t>{1, 2});
  auto energy = [&](const Array& x) {
    return xpr::sum(xpr::vmap(spring)(xpr::take(x, I, 0), xpr::take(x, J, 0)));
  };
  auto forces = [&](const Array& x) { return -xpr::grad(energy)(x); };
  const std::string src = compiled(forces).lower(pos).as_text();
  const std::size_t loop = src.find("#pragma GCC ivdep");
  ASSERT_NE(loop, std::string::npos) << src;
  // The combines (each run of rows with one index kept in `run` registers, scatter_runs) come
  // after the gathering loop, not inside it.
  const std::size_t combine = src.find("double run", loop);
  ASSERT_NE(combine, std::string::npos) << src;
  EXPECT_NE(src.find("for (long long i0 = 0;", combine), std::string::npos) << src;
}

TEST(JitCodegen, ScattersOfSortedRowsCombineEachRunInRegisters) {
  // Updates combined by index, as users write a segment sum: rows sorted by segment (as LJ
  // forces' pairs (i, j) with i < j, whose rows for particle i follow each other), computed by a
  // loop that gathers. Each run of rows with one index combines in registers, written back when
  // the index changes: the interpreter's operations in its order, so the same bits. Runs, a row
  // out of range inside a run (dropped), a negative index (from the end), an index coming back
  // after another, windows of 2 x 2 cells; every kind of scatter.
  const std::int64_t n = 5;
  std::vector<double> p;
  for (std::int64_t k = 0; k < 4 * n; ++k)
    p.push_back(0.75 + 0.5 * std::sin(1.3 * static_cast<double>(k)));
  Array x = xpr::array(p, Shape{n, 2, 2}), y = xpr::exp(x);
  using Rows = std::vector<std::int32_t>;
  for (const Rows& rows :
       {Rows{0, 0, 0, 1, 1, 3, 3, 3, 3, 4}, Rows{2, 2, 9, 2, -1, 4, 0, 0}, Rows{1, 0, 1, 1, 0}}) {
    const auto m = static_cast<std::int64_t>(rows.size());
    Rows others;
    std::vector<double> v;
    for (std::int64_t k = 0; k < m; ++k) {
      others.push_back(static_cast<std::int32_t>((3 * k + 1) % n));
      for (int c = 0; c < 4; ++c) v.push_back(std::cos(0.7 * static_cast<double>(4 * k + c)));
    }
    Array I = xpr::array(rows), J = xpr::array(others), u = xpr::array(v, Shape{m, 2, 2});
    using Update = std::function<Array(const Array&, const Array&)>;  // scatter into a, gather b
    const std::vector<std::pair<std::string, Update>> kinds = {
        {"add", [&](const Array& a, const Array& b) { return a.at(I).add(u * take(b, J, 0)); }},
        {"mul", [&](const Array& a, const Array& b) { return a.at(I).mul(u * take(b, J, 0)); }},
        {"min", [&](const Array& a, const Array& b) { return a.at(I).min(u * take(b, J, 0)); }},
        {"max", [&](const Array& a, const Array& b) { return a.at(I).max(u * take(b, J, 0)); }},
        {"set", [&](const Array& a, const Array& b) { return a.at(I).set(u * take(b, J, 0)); }}};
    for (const auto& [name, f] : kinds) {
      const Array want = f(x, y), got = compiled(f)(x, y);
      ASSERT_EQ(got.aval(), want.aval()) << name;
      for (std::int64_t k = 0; k < want.size(); ++k)
        EXPECT_EQ(got.data<double>()[k], want.data<double>()[k])
            << name << " at " << k << ", rows " << I.aval().str() << " starting " << rows[0];
      const std::string src = compiled(f).lower(x, y).as_text();
      EXPECT_NE(src.find("double run"), std::string::npos) << name << src;
      EXPECT_NE(src.find("[4];"), std::string::npos) << name << src;  // the window's 4 cells
    }
  }
  // Scalar windows: a histogram of sorted bins, one register.
  Array bins = xpr::array(Rows{0, 0, 2, 2, 2, 3, 4, 4}), w = xpr::arange(8.0) * 0.37;
  auto histogram = [&](const Array& a, const Array& v) { return a.at(bins).add(v * v); };
  const Array h0 = xpr::zeros(Shape{n}, DType::float64);
  const Array want = histogram(h0, w), got = compiled(histogram)(h0, w);
  ASSERT_EQ(got.aval(), want.aval());
  for (std::int64_t k = 0; k < n; ++k)
    EXPECT_EQ(got.data<double>()[k], want.data<double>()[k]) << "histogram at " << k;
  EXPECT_NE(compiled(histogram).lower(h0, w).as_text().find("double run"), std::string::npos);
}

TEST(JitCodegen, PairForcesWithPairsOutOfRangeMatchEager) {
  // Pairs naming particles that do not exist: take fills their rows with NaN (so the energy, and
  // the forces on their other particle, are NaN), -1 counts from the end, and the scatter-add of
  // take's transpose drops the rows outside. The check before the loops finds them, and the copy
  // of the loops that clamps runs.
  const std::int64_t n = 6;
  std::vector<double> p;
  for (std::int64_t k = 0; k < 3 * n; ++k)
    p.push_back(1.1 * static_cast<double>(k % 5) + 0.1 * std::sin(static_cast<double>(k)));
  Array pos = xpr::array(p, Shape{n, 3});
  for (const auto& [ii, jj] : {std::pair<std::vector<std::int32_t>, std::vector<std::int32_t>>{
                                   {0, 1, 2, 3}, {1, 2, -1, 4}},
                               {{0, 1, 2, 3, 0}, {1, 2, -1, 9, 4}},
                               {{0, -8, 2, 4}, {1, 2, -1, 5}}}) {
    Array I = xpr::array(ii), J = xpr::array(jj);
    auto energy = [&](const Array& x) {
      return xpr::sum(xpr::vmap(lj_pair_energy)(xpr::take(x, I, 0), xpr::take(x, J, 0)));
    };
    auto forces = [&](const Array& x) { return -xpr::grad(energy)(x); };
    Array want = forces(pos);
    expect_close(compiled(forces)(pos), want, "pair forces, pairs " + xpr::array(jj).aval().str());
    expect_close(compiled(energy)(pos), energy(pos), "pair energy");
  }
}

TEST(JitCodegen, GatherClampsOnlyWhenSomeIndexIsOutOfRange) {
  // x[i, j] at index pairs, compiled once for int32[5, 2] indices: each axis's indices are
  // checked against that axis's size before the loops. In range, the loops without clamps run;
  // a row index past the rows (though inside the columns), a column past the columns, or a
  // negative one gives the fill (NaN), and the gradient's scatter-add drops it, as eagerly.
  std::mt19937 g(21);
  Array x = random_array(g, Shape{3, 5}, DType::float64);
  const rt::GatherDimensionNumbers points{{}, {0, 1}, {0, 1}, {}, {}};
  auto f = [&](const Array& m, const Array& idx) {
    return xpr::gather(m, idx, points, {1, 1}, rt::GatherScatterMode::fill_or_drop) * 2.0 + 1.0;
  };
  auto loss = [&](const Array& m, const Array& idx) {
    Array v = f(m, idx);
    return xpr::sum(xpr::where(xpr::isfinite(v), xpr::sin(v) * v, 0.0));
  };
  auto df = [&](const Array& m, const Array& idx) { return xpr::grad<0>(loss)(m, idx); };
  auto clipped = [&](const Array& m, const Array& idx) {  // clip: out of range reads the edge
    return xpr::gather(m, idx, points, {1, 1}, rt::GatherScatterMode::clip) * 2.0 + 1.0;
  };
  auto jf = compiled(f);
  auto jdf = compiled(df);
  auto jclipped = compiled(clipped);
  const std::vector<std::vector<std::int32_t>> cases = {
      {0, 0, 2, 4, 1, 3, 2, 0, 0, 4},   // in range
      {0, 0, 3, 1, 1, 3, 2, 0, 0, 4},   // row 3 of 3
      {0, 0, 2, 4, 1, 5, 2, 0, 0, 4},   // column 5 of 5
      {0, 0, 2, 4, 1, 3, -1, 0, 0, -2}  // negative
  };
  for (const auto& c : cases) {
    Array idx = xpr::array(c, Shape{5, 2});
    const std::string what = "index pairs " + std::to_string(c[2]) + "," + std::to_string(c[5]);
    expect_close(jf(x, idx), f(x, idx), what);
    expect_close(jdf(x, idx), df(x, idx), what + ", gradient");
    expect_close(jclipped(x, idx), clipped(x, idx), what + ", clip");
  }
  const std::string src = jf.lower(x, xpr::array(cases[0], Shape{5, 2})).as_text();
  EXPECT_NE(src.find("if (!(ck0 || ck1)) {"), std::string::npos) << src;
  EXPECT_NE(src.find("if (ck1) "), std::string::npos) << src;
}

TEST(JitCodegen, ReductionsOverTheLoopOutsideTheLastAxisCombineAfterIt) {
  // A reduction keeping the last axis over the axis just outside it (the transpose of
  // x[None, :, :]) leaves no chain through memory in that loop: where the last axis is short (3,
  // a number in the source) its cells are a local array (`ra`) stored after the loop; where it
  // is long (6) the operand is stored and combined after the loop (a float sum in blocks of
  // rows). Sums, maxima with NaN, minima; ranks 2 and 3.
  std::mt19937 g(29);
  for (DType t : {DType::float64, DType::float32})
    for (std::int64_t last : {3, 6}) {
      Array x = random_array(g, Shape{4, 9, last}, t);
      Array y = random_array(g, Shape{10, last}, t);
      auto f = [](const Array& v) {
        Array w = xpr::sin(v) * 2.0 - v;
        return std::vector<Array>{xpr::sum(w, 1), xpr::max(w / (v + 0.25), 1), xpr::min(w, 1), w};
      };
      auto h = [](const Array& v) { return xpr::sum(v * v, 0) + xpr::sum(xpr::exp(v), 0); };
      check_compiled(make_jaxpr(f)(x), {x}, "middle axis " + x.aval().str());
      check_compiled(make_jaxpr(h)(y), {y}, "leading axis " + y.aval().str());
      expect_close(compiled(h)(y), h(y), "jit, leading axis " + y.aval().str());
      const std::string sf = compiled(f).lower(x).as_text(), sh = compiled(h).lower(y).as_text();
      if (last == 3) {
        EXPECT_NE(sf.find("for (long long j2 = 0; j2 < 3LL; ++j2) "), std::string::npos) << sf;
        EXPECT_NE(sf.find(" ra"), std::string::npos) << sf;
        EXPECT_EQ(sf.find("for (long long j1 = 0; j1 < "), std::string::npos) << sf;
        EXPECT_NE(sh.find("for (long long j1 = 0; j1 < 3LL; ++j1) "), std::string::npos) << sh;
      } else {
        EXPECT_NE(sf.find("for (long long j1 = 0; j1 < "), std::string::npos) << sf;
        EXPECT_EQ(sf.find(" ra"), std::string::npos) << sf;
        // Float sums: the rows in blocks (`p`), per chunk of columns (`q`): blocked_column_sums.
        for (const std::string* src : {&sh, &sf}) {
          EXPECT_NE(src->find("for (long long p"), std::string::npos) << *src;
          EXPECT_NE(src->find("for (long long q"), std::string::npos) << *src;
        }
      }
    }
}

TEST(JitCodegen, ShortRowsReadAgainAreKept) {
  // Values of a loop over an axis of 3 read again by a later loop over it, after a reduction
  // over that axis has ended: kept in a local array (rk), not recomputed or stored in a buffer.
  std::mt19937 g(23);
  for (DType t : {DType::float64, DType::float32}) {
    Array x = random_array(g, Shape{3, 11}, t);
    auto f = [](const Array& v) {
      Array s = xpr::sin(xpr::sum(v, 1)) * 2.0;
      return s / xpr::sum(s * s) - s;
    };
    auto y = random_array(g, Shape{9, 3}, t);
    auto h = [](const Array& v) {  // rows of three: the difference kept for the second loop
      return xpr::vmap([](const Array& row) {
        Array d = row - 0.5;
        return d * xpr::exp(-xpr::sum(d * d)) + d;
      })(v);
    };
    check_compiled(make_jaxpr(f)(x), {x}, "short outer rows " + x.aval().str());
    check_compiled(make_jaxpr(h)(y), {y}, "short inner rows " + y.aval().str());
    expect_close(compiled(f)(x), f(x), "jit, short outer rows");
    expect_close(compiled(h)(y), h(y), "jit, short inner rows");
    EXPECT_NE(compiled(h).lower(y).as_text().find(" rk"), std::string::npos)
        << compiled(h).lower(y).as_text();
  }
}

}  // namespace test_jit_codegen
