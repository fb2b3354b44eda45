// Tests of rt/prims/binary.hpp: add sub mul div max min pow rem and or xor in every dtype they
// accept, against C++ arithmetic and std:: functions, over sizes around the SIMD width (body and
// padded tail), with rank-0 operands in either position; XLA's integer semantics; abstract_eval;
// every error.
#include "xpr/rt/prims/binary.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <xsimd/xsimd.hpp>

#include "xpr/rt/api_autodiff.hpp"
#include "xpr/rt/jit.hpp"

#include "tests/prims/common.hpp"

namespace test_prims_binary {

using test_prims_common::expect_error;
using test_prims_common::make;

namespace rt = xpr::rt;
using rt::ShapedArray;
using xpr::Array;
using xpr::DType;
using xpr::Shape;

// ---- helpers (shared ones are in tests/prims/common.hpp) -----------------------------------

template <class T>
Array make_typed(const std::vector<T>& v) {
  rt::ArrayBuilder b(
      ShapedArray{Shape{static_cast<std::int64_t>(v.size())}, xpr::dtype_of<T>(), false});
  std::copy(v.begin(), v.end(), b.data<T>());
  return std::move(b).finish();
}

// `x` as stored in dtype `t`.
double round_to(DType t, double x) {
  switch (t) {
    case DType::float32:
      return static_cast<float>(x);
    case DType::bool_:
      return x != 0;
    default:
      return x;
  }
}

// Distance in units in the last place of dtype `t` (float32 or float64).
double ulps(DType t, double got, double want) {
  if (got == want || (std::isnan(got) && std::isnan(want))) return 0;
  double gap = t == DType::float32
                   ? double(std::nextafter(static_cast<float>(std::abs(want)), INFINITY)) -
                         double(static_cast<float>(std::abs(want)))
                   : std::nextafter(std::abs(want), INFINITY) - std::abs(want);
  return std::abs(got - want) / gap;
}

std::size_t simd_width(DType t) {
  return t == DType::float64 ? xsimd::batch<double>::size : xsimd::batch<float>::size;
}
// Empty, one element, around the batch width (all tail, one full batch, batch + tail), many.
std::vector<std::size_t> sizes(DType t) {
  std::size_t w = simd_width(t);
  return {0, 1, w - 1, w, w + 1, 1000};
}

const std::vector<DType> all_dtypes{DType::bool_, DType::int32, DType::int64, DType::float32,
                                    DType::float64};
const std::vector<DType> numeric{DType::int32, DType::int64, DType::float32, DType::float64};
const std::vector<DType> floating{DType::float32, DType::float64};

// Operand values: floats are multiples of 1/8 (sums, differences and products exact in f32),
// integers small, divisors never zero.
double lhs(std::size_t i, DType t) {
  if (t == DType::bool_) return i % 3 == 0;
  double v = static_cast<double>((i * 7) % 23) - 11;
  return xpr::core::is_floating(t) ? v * 0.375 : v;
}
double rhs(std::size_t i, DType t) {
  if (t == DType::bool_) return i % 2 == 0;
  double v = static_cast<double>((i * 5) % 19) - 9;
  if (xpr::core::is_floating(t)) return v * 0.25 + 0.125;
  return v == 0 ? 4 : v;
}

// One primitive application with operands laid out as `mode` says: 0 both of shape (n,), 1 the
// left operand rank-0, 2 the right one rank-0. Checks each element against `want(a, b)` within
// `max_ulps` (exact when 0).
template <class Want>
void check_values(const rt::Primitive& prim, DType t, std::size_t n, int mode, Want want,
                  double max_ulps = 0, double (*a_of)(std::size_t, DType) = lhs,
                  double (*b_of)(std::size_t, DType) = rhs) {
  SCOPED_TRACE(prim.name() + " " + std::string(xpr::core::name(t)) + " n=" + std::to_string(n) +
               " mode=" + std::to_string(mode));
  std::vector<double> a(n), b(n);
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = round_to(t, a_of(mode == 1 ? 0 : i, t));
    b[i] = round_to(t, b_of(mode == 2 ? 0 : i, t));
  }
  const Shape vec{static_cast<std::int64_t>(n)};
  Array x = mode == 1 ? make(t, Shape{}, {round_to(t, a_of(0, t))}) : make(t, vec, a);
  Array y = mode == 2 ? make(t, Shape{}, {round_to(t, b_of(0, t))}) : make(t, vec, b);
  Array out = rt::bind1(prim, {x, y});
  EXPECT_EQ(out.dtype(), t);
  ASSERT_EQ(out.shape(), vec);
  std::vector<double> got = out.to_vector<double>();
  for (std::size_t i = 0; i < n; ++i) {
    double w = round_to(t, want(a[i], b[i], t));
    if (max_ulps == 0)
      ASSERT_EQ(got[i], w) << "at " << i << ": " << a[i] << ", " << b[i];
    else
      ASSERT_LE(ulps(t, got[i], w), max_ulps) << "at " << i << ": " << a[i] << ", " << b[i];
  }
}

// ---- values -----------------------------------------------------------------------------------

struct Row {
  const rt::Primitive& prim;
  const std::vector<DType>& dtypes;
  double (*want)(double, double, DType);
};

const Row rows[] = {
    {rt::add_p, numeric, [](double a, double b, DType) { return a + b; }},
    {rt::sub_p, numeric, [](double a, double b, DType) { return a - b; }},
    {rt::mul_p, numeric, [](double a, double b, DType) { return a * b; }},
    // lax.div truncates integers toward zero.
    {rt::div_p, numeric,
     [](double a, double b, DType t) {
       return xpr::core::is_integer(t) ? std::trunc(a / b) : a / b;
     }},
    {rt::max_p, all_dtypes, [](double a, double b, DType) { return std::max(a, b); }},
    {rt::min_p, all_dtypes, [](double a, double b, DType) { return std::min(a, b); }},
};

TEST(BinaryPrims, ValuesInEveryDtypeSizeAndRank0Position) {
  for (const Row& row : rows)
    for (DType t : row.dtypes)
      for (std::size_t n : sizes(t))
        for (int mode = 0; mode < 3; ++mode) check_values(row.prim, t, n, mode, row.want);
}

TEST(BinaryPrims, BothOperandsRank0GiveRank0) {
  for (DType t : numeric) {
    Array out = rt::bind1(rt::mul_p, {make(t, Shape{}, {3}), make(t, Shape{}, {-2})});
    EXPECT_EQ(out.shape(), Shape{});
    EXPECT_EQ(out.item<double>(), -6);
  }
}

TEST(BinaryPrims, Rank2OperandsKeepTheirShape) {
  Array x = make(DType::float64, Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  Array out = rt::bind1(rt::sub_p, {x, make(DType::float64, Shape{}, {1})});
  EXPECT_EQ(out.shape(), (Shape{2, 3}));
  EXPECT_EQ(out.to_vector<double>(), (std::vector<double>{0, 1, 2, 3, 4, 5}));
}

// The C library's pow is within one ulp of the correctly rounded result; the reference is
// double-precision pow rounded to the dtype.
TEST(BinaryPrims, PowMatchesStdPowInFloatDtypes) {
  auto base = [](std::size_t i, DType) { return 0.25 + static_cast<double>(i % 13) * 0.5; };
  auto expo = [](std::size_t i, DType) { return (static_cast<double>(i % 9) - 4) * 0.75 + 0.1; };
  for (DType t : floating)
    for (std::size_t n : sizes(t))
      for (int mode = 0; mode < 3; ++mode)
        check_values(
            rt::pow_p, t, n, mode, [](double a, double b, DType) { return std::pow(a, b); }, 1,
            +base, +expo);
}

TEST(BinaryPrims, PowSpecialValues) {
  Array x = make(DType::float64, Shape{4}, {2, 0, -8, 4});
  Array y = make(DType::float64, Shape{4}, {10, -1, 1.0 / 3, 0.5});
  std::vector<double> got = rt::bind1(rt::pow_p, {x, y}).to_vector<double>();
  EXPECT_EQ(got[0], 1024);
  EXPECT_EQ(got[1], INFINITY);
  EXPECT_TRUE(std::isnan(got[2]));  // negative base, non-integer exponent
  EXPECT_EQ(got[3], 2);
}

TEST(BinaryPrims, PowDerivativeInTheExponentAtAZeroBase) {
  // JAX's _pow_jvp_rhs, g * log(_replace_zero(x)) * ans: 0 where 0 ** y = 0 (y > 0), 0 at y = 0
  // (ans = 1), and 0 * inf = NaN where 0 ** y = inf (y < 0); log(x) x ** y elsewhere.
  auto f = [](const Array& x, const Array& y) { return xpr::sum(xpr::pow(x, y)); };
  Array x = make(DType::float64, Shape{4}, {0, 0, 0, 2});
  Array y = make(DType::float64, Shape{4}, {2.5, 0, -1, 3});
  auto dfdy = xpr::grad<1>(f);
  for (const Array& out : {dfdy(x, y), xpr::jit(dfdy)(x, y)}) {
    std::vector<double> g = out.to_vector<double>();
    EXPECT_EQ(g[0], 0.0);
    EXPECT_EQ(g[1], 0.0);
    EXPECT_TRUE(std::isnan(g[2])) << g[2];
    EXPECT_NEAR(g[3], std::log(2.0) * 8.0, 1e-14);
  }
}

// ---- XLA's integer and NaN semantics ----------------------------------------------------------

template <class T>
void check_integer_semantics() {
  SCOPED_TRACE(std::string(xpr::core::name(xpr::dtype_of<T>())));
  constexpr T lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  auto run = [](const rt::Primitive& p, std::vector<T> a, std::vector<T> b) {
    return rt::bind1(p, {make_typed<T>(a), make_typed<T>(b)}).template to_vector<T>();
  };
  // Two's-complement wrap-around instead of undefined overflow.
  EXPECT_EQ(run(rt::add_p, {hi, lo}, {1, -1}), (std::vector<T>{lo, hi}));
  EXPECT_EQ(run(rt::sub_p, {lo, hi}, {1, -1}), (std::vector<T>{hi, lo}));
  EXPECT_EQ(run(rt::mul_p, {hi, lo}, {2, -1}), (std::vector<T>{-2, lo}));
  // Truncation toward zero; x / 0 == -1 and INT_MIN / -1 == INT_MIN, as XLA defines them.
  EXPECT_EQ(run(rt::div_p, {-7, 7, 7, -7, 7, 0, lo}, {2, -2, 2, -2, 0, 0, -1}),
            (std::vector<T>{-3, -3, 3, 3, -1, -1, lo}));
  EXPECT_EQ(run(rt::max_p, {lo, hi, -1}, {hi, lo, -2}), (std::vector<T>{hi, hi, -1}));
  EXPECT_EQ(run(rt::min_p, {lo, hi, -1}, {hi, lo, -2}), (std::vector<T>{lo, lo, -2}));
}

TEST(BinaryPrims, IntegerOverflowAndDivisionFollowXla) {
  check_integer_semantics<std::int32_t>();
  check_integer_semantics<std::int64_t>();
}

TEST(BinaryPrims, MaxMinPropagateNanInBodyAndTail) {
  for (DType t : floating) {
    std::size_t n = simd_width(t) + 1;  // index 0 in a full batch, index n-1 in the tail
    std::vector<double> a(n, 1.0), b(n, 2.0);
    a[0] = NAN;
    b[n - 1] = NAN;
    for (const rt::Primitive* p : {static_cast<const rt::Primitive*>(&rt::max_p),
                                   static_cast<const rt::Primitive*>(&rt::min_p)}) {
      std::vector<double> got = rt::bind1(*p, {make(t, Shape{static_cast<std::int64_t>(n)}, a),
                                               make(t, Shape{static_cast<std::int64_t>(n)}, b)})
                                    .to_vector<double>();
      EXPECT_TRUE(std::isnan(got[0])) << p->name();
      EXPECT_TRUE(std::isnan(got[n - 1])) << p->name();
      if (n > 2) {
        EXPECT_EQ(got[1], p == &rt::max_p ? 2.0 : 1.0);
      }
    }
  }
}

TEST(BinaryPrims, FloatDivisionByZeroIsIeee) {
  std::vector<double> got = rt::bind1(rt::div_p, {make(DType::float32, Shape{3}, {1, -1, 0}),
                                                  make(DType::float32, Shape{}, {0})})
                                .to_vector<double>();
  EXPECT_EQ(got[0], INFINITY);
  EXPECT_EQ(got[1], -INFINITY);
  EXPECT_TRUE(std::isnan(got[2]));
}

// ---- abstract_eval ----------------------------------------------------------------------------

TEST(BinaryPrims, AbstractEval) {
  const ShapedArray m{Shape{2, 3}, DType::float32, false}, s_weak{Shape{}, DType::float32, true},
      m_weak{Shape{2, 3}, DType::float32, true};
  for (const rt::Primitive* p : {static_cast<const rt::Primitive*>(&rt::add_p),
                                 static_cast<const rt::Primitive*>(&rt::pow_p),
                                 static_cast<const rt::Primitive*>(&rt::max_p)}) {
    EXPECT_EQ(p->abstract_eval(std::vector{s_weak, m}, {}).at(0), m);
    EXPECT_EQ(p->abstract_eval(std::vector{m, s_weak}, {}).at(0), m);
    // Weak only when every operand is.
    EXPECT_EQ(p->abstract_eval(std::vector{m_weak, s_weak}, {}).at(0), m_weak);
    EXPECT_EQ(p->abstract_eval(std::vector{s_weak, s_weak}, {}).at(0), s_weak);
  }
  const ShapedArray b{Shape{4}, DType::bool_, false};
  EXPECT_EQ(rt::max_p.abstract_eval(std::vector{b, b}, {}).at(0), b);
}

TEST(BinaryPrims, NamesAndRegistry) {
  const std::pair<const rt::Primitive*, std::string_view> names[] = {
      {&rt::add_p, "add"}, {&rt::sub_p, "sub"}, {&rt::mul_p, "mul"}, {&rt::div_p, "div"},
      {&rt::max_p, "max"}, {&rt::min_p, "min"}, {&rt::pow_p, "pow"}};
  for (auto [p, name] : names) {
    EXPECT_EQ(p->name(), name);
    EXPECT_EQ(rt::find_primitive(name), p);
  }
}

// ---- errors -----------------------------------------------------------------------------------

// Each check runs through impl (bind) and through abstract_eval.
template <class E>
void expect_rejected(const rt::Primitive& p, const std::vector<Array>& args,
                     std::initializer_list<std::string_view> parts) {
  expect_error<E>([&] { (void)rt::bind(p, args); }, parts);
  std::vector<ShapedArray> avals;
  for (const Array& a : args) avals.push_back(a.aval());
  expect_error<E>([&] { (void)p.abstract_eval(avals, {}); }, parts);
}

TEST(BinaryPrims, DtypeMismatchIsRejected) {
  Array f = make(DType::float32, Shape{3}, {1, 2, 3}),
        d = make(DType::float64, Shape{3}, {1, 2, 3});
  for (const Row& row : rows)
    expect_rejected<xpr::dtype_error>(row.prim, {f, d}, {row.prim.name(), "float32", "float64"});
  expect_rejected<xpr::dtype_error>(rt::pow_p, {d, f}, {"pow", "float64", "float32"});
}

TEST(BinaryPrims, ShapeMismatchIsRejected) {
  Array a = make(DType::float64, Shape{3}, {1, 2, 3}), b = make(DType::float64, Shape{4}, {});
  for (const Row& row : rows) expect_rejected<xpr::shape_error>(row.prim, {a, b}, {"(3,)", "(4,)"});
  // No broadcasting at primitive level: a size-1 array is not rank 0.
  Array one = make(DType::float64, Shape{1}, {5});
  expect_rejected<xpr::shape_error>(rt::add_p, {one, a}, {"(1,)", "(3,)"});
}

TEST(BinaryPrims, UnacceptedDtypesAreRejected) {
  Array i = make(DType::int32, Shape{2}, {1, 2}), b = make(DType::bool_, Shape{2}, {1, 0});
  expect_rejected<xpr::dtype_error>(rt::pow_p, {i, i}, {"pow", "int32", "floating"});
  expect_rejected<xpr::dtype_error>(rt::pow_p, {b, b}, {"pow", "bool", "floating"});
  for (const rt::Primitive* p : {static_cast<const rt::Primitive*>(&rt::add_p),
                                 static_cast<const rt::Primitive*>(&rt::sub_p),
                                 static_cast<const rt::Primitive*>(&rt::mul_p),
                                 static_cast<const rt::Primitive*>(&rt::div_p)})
    expect_rejected<xpr::dtype_error>(*p, {b, b}, {p->name(), "bool", "numeric"});
}

TEST(BinaryPrims, WrongNumberOfOperandsIsRejected) {
  Array a = make(DType::float64, Shape{}, {1});
  expect_rejected<xpr::type_error>(rt::add_p, {a}, {"add", "2 operands", "found 1"});
  expect_rejected<xpr::type_error>(rt::add_p, {a, a, a}, {"add", "2 operands", "found 3"});
}

}  // namespace test_prims_binary

namespace test_prims_binary {

// rem: C's fmod and % for the ordinary cases (the sign of the dividend), XLA's answers where C++
// has none (x rem 0 == x, INT_MIN rem -1 == 0); floats element by element at every size, so the
// SIMD body and tail agree with std::fmod, also for quotients far beyond 2^53.
TEST(BinaryPrims, RemIsTruncatedWithXlaIntegerSemantics) {
  Array a =
      make_typed<std::int32_t>({7, -7, 7, -7, 5, std::numeric_limits<std::int32_t>::min(), 0});
  Array b = make_typed<std::int32_t>({2, 2, -2, -2, 0, -1, 3});
  EXPECT_EQ(rt::bind1(rt::rem_p, {a, b}).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{1, -1, 1, -1, 5, 0, 0}));
  Array al = make_typed<std::int64_t>({-9, std::numeric_limits<std::int64_t>::min()});
  Array bl = make_typed<std::int64_t>({4, -1});
  EXPECT_EQ(rt::bind1(rt::rem_p, {al, bl}).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{-1, 0}));
  for (std::size_t n : {std::size_t{1}, std::size_t{3}, std::size_t{8}, std::size_t{13}}) {
    std::vector<double> x(n), y(n);
    for (std::size_t i = 0; i < n; ++i) {
      x[i] = (i % 2 ? -1.0 : 1.0) * (1e17 + 3.25 * double(i));  // quotients past 2^53
      y[i] = 0.75 + 0.5 * double(i);
    }
    std::vector<double> got =
        rt::bind1(rt::rem_p, {make_typed(x), make_typed(y)}).to_vector<double>();
    for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(got[i], std::fmod(x[i], y[i])) << n << " " << i;
    std::vector<float> xf(x.begin(), x.end()), yf(y.begin(), y.end());
    std::vector<float> gotf =
        rt::bind1(rt::rem_p, {make_typed(xf), make_typed(yf)}).to_vector<float>();
    for (std::size_t i = 0; i < n; ++i)
      EXPECT_EQ(gotf[i], std::fmod(xf[i], yf[i])) << n << " " << i;
  }
  std::vector<double> z = rt::bind1(rt::rem_p, {make_typed<double>({1.5, -0.0, INFINITY}),
                                                make_typed<double>({0.0, 2.0, 2.0})})
                              .to_vector<double>();
  EXPECT_TRUE(std::isnan(z[0]));
  EXPECT_TRUE(z[1] == 0.0 && std::signbit(z[1]));
  EXPECT_TRUE(std::isnan(z[2]));
  expect_error<xpr::dtype_error>(
      [&] {
        (void)rt::bind1(rt::rem_p,
                        {make(DType::bool_, Shape{1}, {1}), make(DType::bool_, Shape{1}, {1})});
      },
      {"rem", "bool"});
  EXPECT_EQ(rt::find_primitive("rem"), &rt::rem_p);
}

// and, or, xor: logical of bools, bitwise of integers; floats are refused by name.
TEST(BinaryPrims, AndOrXorOfBoolsAndIntegers) {
  Array p = make(DType::bool_, Shape{4}, {1, 1, 0, 0}),
        q = make(DType::bool_, Shape{4}, {1, 0, 1, 0});
  EXPECT_EQ(rt::bind1(rt::and_p, {p, q}).to_vector<bool>(),
            (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ(rt::bind1(rt::or_p, {p, q}).to_vector<bool>(),
            (std::vector<bool>{true, true, true, false}));
  EXPECT_EQ(rt::bind1(rt::xor_p, {p, q}).to_vector<bool>(),
            (std::vector<bool>{false, true, true, false}));
  Array a = make_typed<std::int32_t>({12, -1, 5, std::numeric_limits<std::int32_t>::min()});
  Array b = make_typed<std::int32_t>({10, 6, -6, -1});
  EXPECT_EQ(rt::bind1(rt::and_p, {a, b}).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{8, 6, 0, std::numeric_limits<std::int32_t>::min()}));
  EXPECT_EQ(rt::bind1(rt::or_p, {a, b}).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{14, -1, -1, -1}));
  EXPECT_EQ(rt::bind1(rt::xor_p, {a, b}).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{6, -7, -1, std::numeric_limits<std::int32_t>::max()}));
  Array l = make_typed<std::int64_t>({std::int64_t{1} << 40 | 3}),
        m = make_typed<std::int64_t>({5});
  EXPECT_EQ(rt::bind1(rt::and_p, {l, m}).to_vector<std::int64_t>(), (std::vector<std::int64_t>{1}));
  for (const rt::Primitive* prim :
       {static_cast<const rt::Primitive*>(&rt::and_p), static_cast<const rt::Primitive*>(&rt::or_p),
        static_cast<const rt::Primitive*>(&rt::xor_p)}) {
    expect_error<xpr::dtype_error>(
        [&] {
          (void)rt::bind1(
              *prim, {make(DType::float64, Shape{1}, {1}), make(DType::float64, Shape{1}, {1})});
        },
        {prim->name(), "float64", "bool or integer"});
    EXPECT_EQ(rt::find_primitive(prim->name()), prim);
  }
}

// jax.numpy's remainder (Python's %), floor_divide (//), fmod and the logical and bitwise
// functions and operators, against the values Python gives.
TEST(BinaryPrims, JaxNumpyRemainderFloorDivideAndLogicalFunctions) {
  Array x = make_typed<double>({5.5, -5.5, 7.0, -7.0, 7.5}),
        y = make_typed<double>({2, 2, -3, -3, 2.5});
  EXPECT_EQ((x % y).to_vector<double>(), (std::vector<double>{1.5, 0.5, -2.0, -1.0, 0.0}));
  EXPECT_EQ(xpr::remainder(x, y).to_vector<double>(), (x % y).to_vector<double>());
  EXPECT_EQ(xpr::floor_divide(x, y).to_vector<double>(), (std::vector<double>{2, -3, -3, 2, 3}));
  EXPECT_EQ(xpr::fmod(x, y).to_vector<double>(), (std::vector<double>{1.5, -1.5, 1.0, -1.0, 0.0}));
  Array i = make_typed<std::int32_t>({7, -7, 7, -7, 6}),
        j = make_typed<std::int32_t>({2, 2, -2, -2, 3});
  EXPECT_EQ((i % j).to_vector<std::int32_t>(), (std::vector<std::int32_t>{1, 1, -1, -1, 0}));
  EXPECT_EQ(xpr::floor_divide(i, j).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{3, -4, -4, 3, 2}));
  EXPECT_EQ((i % 0).to_vector<std::int32_t>(), (std::vector<std::int32_t>{0, 0, 0, 0, 0}));  // jnp
  EXPECT_EQ((i % 3).dtype(), DType::int32);  // a weak C++ integer keeps the array's dtype
  EXPECT_EQ((x % 2).to_vector<double>(), (std::vector<double>{1.5, 0.5, 1.0, 1.0, 1.5}));
  // Plain numbers compute at once, with the same meaning.
  EXPECT_EQ(xpr::remainder(-7, 2), 1);
  EXPECT_EQ(xpr::floor_divide(-7, 2), -4);
  EXPECT_EQ(xpr::floor_divide(-5.5, 2.0), -3.0);
  EXPECT_EQ(xpr::fmod(-7, 2), -1);
  EXPECT_EQ(xpr::bitwise_xor(6, 3), 5);
  EXPECT_TRUE(xpr::logical_and(2, -1));
  // Bitwise operators; logical functions convert to bool first (nonzero is true).
  EXPECT_EQ((i & 3).to_vector<std::int32_t>(), (std::vector<std::int32_t>{3, 1, 3, 1, 2}));
  EXPECT_EQ((i | 8).to_vector<std::int32_t>(), (std::vector<std::int32_t>{15, -7, 15, -7, 14}));
  EXPECT_EQ((i ^ j).to_vector<std::int32_t>(), (std::vector<std::int32_t>{5, -5, -7, 7, 5}));
  EXPECT_EQ((~i).to_vector<std::int32_t>(), (std::vector<std::int32_t>{-8, 6, -8, 6, -7}));
  Array mask = (x > 0.0) & (y > 0.0);
  EXPECT_EQ(mask.to_vector<bool>(), (std::vector<bool>{true, false, false, false, true}));
  EXPECT_EQ(((x > 0.0) | true).to_vector<bool>(), (std::vector<bool>(5, true)));
  EXPECT_EQ(xpr::logical_xor(x - 5.5, i).to_vector<bool>(),
            (std::vector<bool>{true, false, false, false, false}));
  EXPECT_EQ(xpr::logical_or(make_typed<double>({0.0, 0.0}), 0).to_vector<bool>(),
            (std::vector<bool>{false, false}));
  // Floats have no bitwise and: the error names the primitive and the dtype.
  expect_error<xpr::dtype_error>([&] { (void)(x & y); }, {"and", "float64"});
}

// Derivatives: d fmod(x, y) = dx - trunc(x / y) dy; remainder adds y where it moved the
// result, so its dy weight is -floor(x / y). Checked against those closed forms and central
// differences, in both argument positions.
TEST(BinaryPrims, GradientsOfFmodAndRemainder) {
  for (auto [x, y] : std::vector<std::pair<double, double>>{{7.5, 2.0}, {-7.5, 2.0}, {1.3, -0.4}}) {
    auto [gx, gy] = xpr::grad<0, 1>([](auto a, auto b) { return xpr::fmod(a, b); })(x, y);
    EXPECT_DOUBLE_EQ(gx.item<double>(), 1.0);
    EXPECT_DOUBLE_EQ(gy.item<double>(), -std::trunc(x / y));
    auto [hx, hy] = xpr::grad<0, 1>([](auto a, auto b) { return a % b; })(x, y);
    EXPECT_DOUBLE_EQ(hx.item<double>(), 1.0);
    EXPECT_DOUBLE_EQ(hy.item<double>(), -std::floor(x / y));
    const double h = 1e-6;
    auto py_mod = [](double a, double b) { return a - b * std::floor(a / b); };
    EXPECT_NEAR(hy.item<double>(), (py_mod(x, y + h) - py_mod(x, y - h)) / (2 * h), 1e-6);
  }
  // floor_divide is piecewise constant: a zero gradient.
  EXPECT_EQ(xpr::grad([](auto a) { return xpr::floor_divide(a, 2.0); })(3.3).item<double>(), 0.0);
}

}  // namespace test_prims_binary
