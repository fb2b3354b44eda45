// Tests of rt/prims/unary.hpp: the fourteen unary primitives in every dtype they accept against the
// std:: functions (within 2 ulps for the transcendental ones, exact for the rest), over sizes
// around the SIMD width; special values; XLA's integer wrap-around; abstract_eval; errors; and
// jax.numpy's promotion in `xpr::sin(array)` and friends.
#include "xpr/rt/prims/unary.hpp"

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>
#include <xsimd/xsimd.hpp>

#include "tests/prims/common.hpp"

namespace test_prims_unary {

using test_prims_common::expect_error;
using test_prims_common::make;

namespace rt = xpr::rt;
using rt::ShapedArray;
using xpr::Array;
using xpr::DType;
using xpr::Shape;

double round_to(DType t, double x) {
  return t == DType::float32 ? double(static_cast<float>(x)) : x;
}

double ulps(DType t, double got, double want) {
  if (got == want || (std::isnan(got) && std::isnan(want))) return 0;
  double gap = t == DType::float32
                   ? double(std::nextafter(static_cast<float>(std::abs(want)), INFINITY)) -
                         double(static_cast<float>(std::abs(want)))
                   : std::nextafter(std::abs(want), INFINITY) - std::abs(want);
  return std::abs(got - want) / gap;
}

struct Row {
  const rt::Primitive& prim;
  bool integers;  // accepts int32 and int64 too
  double (*want)(double);
  double lo, hi;    // float inputs are spread over [lo, hi]
  double max_ulps;  // 0: exact
};
const Row rows[] = {
    {rt::neg_p, true, [](double x) { return -x; }, -50, 50, 0},
    {rt::abs_p, true, [](double x) { return std::abs(x); }, -50, 50, 0},
    {rt::sign_p, true, [](double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); }, -5, 5, 0},
    {rt::sin_p, false, [](double x) { return std::sin(x); }, -10, 10, 2},
    {rt::cos_p, false, [](double x) { return std::cos(x); }, -10, 10, 2},
    {rt::tan_p, false, [](double x) { return std::tan(x); }, -1.5, 1.5, 2},
    {rt::tanh_p, false, [](double x) { return std::tanh(x); }, -5, 5, 2},
    {rt::exp_p, false, [](double x) { return std::exp(x); }, -20, 20, 2},
    {rt::log_p, false, [](double x) { return std::log(x); }, 0.01, 100, 2},
    {rt::log1p_p, false, [](double x) { return std::log1p(x); }, -0.9, 10, 2},
    {rt::expm1_p, false, [](double x) { return std::expm1(x); }, -5, 5, 2},
    {rt::sqrt_p, false, [](double x) { return std::sqrt(x); }, 0, 100, 0},
    {rt::rsqrt_p, false, [](double x) { return 1 / std::sqrt(x); }, 0.01, 100, 1},
    {rt::logistic_p, false, [](double x) { return 1 / (1 + std::exp(-x)); }, -10, 10, 2},
    {rt::square_p, true, [](double x) { return x * x; }, -50, 50, 0},
    {rt::exp2_p, false, [](double x) { return std::exp2(x); }, -30, 30, 2},
    // xsimd 8.1's cbrt: within 3 ulps in f64 (measured over [-1000, 1000]), 1 in f32.
    {rt::cbrt_p, false, [](double x) { return std::cbrt(x); }, -100, 100, 3},
    {rt::erf_p, false, [](double x) { return std::erf(x); }, -5, 5, 2},
    {rt::floor_p, false, [](double x) { return std::floor(x); }, -7.5, 7.5, 0},
    {rt::ceil_p, false, [](double x) { return std::ceil(x); }, -7.5, 7.5, 0},
};

TEST(UnaryPrims, ValuesInEveryDtypeAndSize) {
  for (const Row& row : rows)
    for (DType t : {DType::int32, DType::int64, DType::float32, DType::float64}) {
      if (!row.integers && xpr::core::is_integer(t)) continue;
      const std::size_t w =
          t == DType::float64 ? xsimd::batch<double>::size : xsimd::batch<float>::size;
      for (std::size_t n : {std::size_t{0}, std::size_t{1}, w - 1, w, w + 1, std::size_t{1000}}) {
        SCOPED_TRACE(row.prim.name() + " " + std::string(xpr::core::name(t)) +
                     " n=" + std::to_string(n));
        std::vector<double> x(n);
        for (std::size_t i = 0; i < n; ++i)
          x[i] = xpr::core::is_integer(t)
                     ? static_cast<double>(i % 11) - 5
                     : round_to(t, row.lo + (row.hi - row.lo) * static_cast<double>(i) /
                                                static_cast<double>(n > 1 ? n - 1 : 1));
        Array out = rt::bind1(row.prim, {make(t, Shape{static_cast<std::int64_t>(n)}, x)});
        ASSERT_EQ(out.dtype(), t);
        ASSERT_EQ(out.shape(), (Shape{static_cast<std::int64_t>(n)}));
        std::vector<double> got = out.to_vector<double>();
        for (std::size_t i = 0; i < n; ++i) {
          double w_i = round_to(t, row.want(x[i]));
          if (row.max_ulps == 0)
            ASSERT_EQ(got[i], w_i) << "x=" << x[i];
          else
            ASSERT_LE(ulps(t, got[i], w_i), row.max_ulps) << "x=" << x[i];
        }
      }
    }
}

TEST(UnaryPrims, SpecialValuesMatchStd) {
  const std::vector<double> x{NAN, INFINITY, -INFINITY, 0.0, -0.0, -1.0, 1e300};
  for (DType t : {DType::float32, DType::float64})
    for (const Row& row : rows) {
      if (&row.prim == &rt::sign_p) continue;  // below: sign(NaN) is NaN, sign(±0) is ±0
      std::vector<double> got =
          rt::bind1(row.prim, {make(t, Shape{static_cast<std::int64_t>(x.size())}, x)})
              .to_vector<double>();
      for (std::size_t i = 0; i < x.size(); ++i) {
        double xi = round_to(t, x[i]), want = round_to(t, row.want(xi));
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(got[i])) << row.prim.name() << "(" << xi << ") = " << got[i];
        } else if (std::isinf(want) || want == 0) {
          EXPECT_EQ(got[i], want) << row.prim.name() << "(" << xi << ")";
        } else {
          EXPECT_LE(ulps(t, got[i], want), std::max(row.max_ulps, 2.0))
              << row.prim.name() << "(" << xi << ") = " << got[i] << ", want " << want;
        }
      }
    }
}

// xsimd's exp2 gave inf from 2^1023 on (finite up to 2^1024) and 0 for subnormal results; the
// SIMD body now takes libm's value in those lanes. Each input is repeated so that the SIMD body,
// not only the scalar tail, sees it.
TEST(UnaryPrims, Exp2AtTheEdgesOfItsRange) {
  const std::vector<double> f64{1022.9,  1023.0,  1023.5,  1023.99, 1024.0,  1100.0,  -1021.5,
                                -1022.0, -1022.5, -1030.3, -1074.0, -1074.5, -1075.5, -1100.0};
  const std::vector<double> f32{126.9,  127.0,  127.5,   127.99, 128.0, -125.5,
                                -126.0, -126.5, -140.25, -149.0, -150.5};
  for (DType t : {DType::float64, DType::float32}) {
    std::vector<double> x;
    for (double v : t == DType::float64 ? f64 : f32) x.insert(x.end(), 9, v);
    const std::vector<double> got =
        rt::bind1(rt::exp2_p, {make(t, Shape{static_cast<std::int64_t>(x.size())}, x)})
            .to_vector<double>();
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double want = round_to(t, std::exp2(round_to(t, x[i])));  // of the f32 input
      if (std::isinf(want) || want == 0)
        EXPECT_EQ(got[i], want) << "exp2(" << x[i] << ") " << (t == DType::float32 ? "f32" : "f64");
      else
        EXPECT_LE(ulps(t, got[i], want), 2.0) << "exp2(" << x[i] << ") = " << got[i] << ", want "
                                              << want << (t == DType::float32 ? " f32" : " f64");
    }
  }
}

// Near the bottom of its range expm1 is -1 + e^x with e^x below an ulp of 1: xsimd's gave
// exactly -1 on about [-37.4, -36.4] (f64), where the correctly rounded value is not -1, and
// log1p(expm1(x)) became -inf. Libm's value there; each input repeated for the SIMD body.
TEST(UnaryPrims, Expm1AtTheBottomOfItsRange) {
  for (DType t : {DType::float64, DType::float32}) {
    std::vector<double> x;
    const double from = t == DType::float64 ? -40.0 : -20.0;
    for (double v = from; v <= from + 10.0; v += 0.05) x.insert(x.end(), 9, v);
    const std::vector<double> got =
        rt::bind1(rt::expm1_p, {make(t, Shape{static_cast<std::int64_t>(x.size())}, x)})
            .to_vector<double>();
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double xi = round_to(t, x[i]), want = round_to(t, std::expm1(xi));
      EXPECT_LE(ulps(t, got[i], want), 1.0) << "expm1(" << xi << ") = " << got[i] << ", want "
                                            << want << (t == DType::float32 ? " f32" : " f64");
      EXPECT_EQ(got[i] == -1.0, want == -1.0)  // the class log1p sees: finite or -inf
          << "expm1(" << xi << ") = " << got[i] << (t == DType::float32 ? " f32" : " f64");
    }
  }
}

TEST(UnaryPrims, SignKeepsNanAndSignedZero) {
  for (DType t : {DType::float32, DType::float64}) {
    const std::size_t w =
        t == DType::float64 ? xsimd::batch<double>::size : xsimd::batch<float>::size;
    std::vector<double> x(w + 1, -3.0);  // NaN in a full batch and in the tail
    x[0] = NAN;
    x[1] = -0.0;
    x[w] = NAN;
    std::vector<double> got =
        rt::bind1(rt::sign_p, {make(t, Shape{static_cast<std::int64_t>(x.size())}, x)})
            .to_vector<double>();
    EXPECT_TRUE(std::isnan(got[0]));
    EXPECT_TRUE(std::isnan(got[w]));
    EXPECT_EQ(got[1], 0.0);
    EXPECT_TRUE(std::signbit(got[1]));
  }
}

template <class T>
void check_integer_wraparound() {
  constexpr T lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  rt::ArrayBuilder b(ShapedArray{Shape{3}, xpr::dtype_of<T>(), false});
  b.data<T>()[0] = lo;
  b.data<T>()[1] = hi;
  b.data<T>()[2] = -7;
  Array x = std::move(b).finish();
  // XLA: -INT_MIN == INT_MIN and abs(INT_MIN) == INT_MIN (two's complement), not undefined.
  EXPECT_EQ(rt::bind1(rt::neg_p, {x}).template to_vector<T>(), (std::vector<T>{lo, -hi, 7}));
  EXPECT_EQ(rt::bind1(rt::abs_p, {x}).template to_vector<T>(), (std::vector<T>{lo, hi, 7}));
  EXPECT_EQ(rt::bind1(rt::sign_p, {x}).template to_vector<T>(), (std::vector<T>{-1, 1, -1}));
}

TEST(UnaryPrims, IntegerNegAndAbsWrapAround) {
  check_integer_wraparound<std::int32_t>();
  check_integer_wraparound<std::int64_t>();
}

TEST(UnaryPrims, AbstractEval) {
  const ShapedArray x{Shape{2, 3}, DType::float32, true}, i{Shape{4}, DType::int64, false};
  for (const Row& row : rows) {
    EXPECT_EQ(row.prim.abstract_eval(std::vector{x}, {}).at(0), x) << row.prim.name();
    if (row.integers) {
      EXPECT_EQ(row.prim.abstract_eval(std::vector{i}, {}).at(0), i);
    }
    EXPECT_EQ(rt::find_primitive(row.prim.name()), &row.prim);
  }
}

TEST(UnaryPrims, Errors) {
  Array i = make(DType::int32, Shape{2}, {1, 2}), b = make(DType::bool_, Shape{2}, {1, 0});
  Array f = make(DType::float64, Shape{2}, {1, 2});
  for (const Row& row : rows) {
    const std::string_view name = row.prim.name();
    if (!row.integers) {
      expect_error<xpr::dtype_error>([&] { (void)rt::bind1(row.prim, {i}); },
                                     {name, "int32", "floating"});
      expect_error<xpr::dtype_error>(
          [&] { (void)row.prim.abstract_eval(std::vector{i.aval()}, {}); },
          {name, "int32", "floating"});
    }
    expect_error<xpr::dtype_error>([&] { (void)rt::bind1(row.prim, {b}); }, {name, "bool"});
    expect_error<xpr::type_error>(
        [&] {
          (void)rt::bind1(row.prim, {f, f});
        },
        {name, "1 operand", "found 2"});
    expect_error<xpr::type_error>(
        [&] { (void)row.prim.abstract_eval(std::vector<ShapedArray>{}, {}); },
        {name, "1 operand", "found 0"});
  }
}

// ---- jax.numpy promotion through the user-facing functions ----------------------------------

TEST(UnaryNumpy, IntegersAndBoolsArePromotedToFloatForFloatingFunctions) {
  Array i = make(DType::int32, Shape{3}, {0, 1, 2});
  Array s = xpr::sin(i);
  EXPECT_EQ(s.aval(), (ShapedArray{Shape{3}, DType::float64, false}));
  for (int k = 0; k < 3; ++k)
    EXPECT_LE(ulps(DType::float64, s.to_vector<double>()[static_cast<std::size_t>(k)], std::sin(k)),
              2);
  Array b = make(DType::bool_, Shape{2}, {1, 0});
  Array e = xpr::exp(b);
  EXPECT_EQ(e.dtype(), DType::float64);
  EXPECT_LE(ulps(DType::float64, e.to_vector<double>()[0], std::exp(1.0)), 2);
  EXPECT_EQ(e.to_vector<double>()[1], 1.0);
  // A weak integer (a C++ int made an array) stays weak after promotion.
  Array w = xpr::sqrt(Array(4));
  EXPECT_EQ(w.aval(), (ShapedArray{Shape{}, DType::float64, true}));
  EXPECT_EQ(w.item<double>(), 2.0);
  // Numeric functions take bools as int32 (jnp.square) and leave other dtypes alone; as
  // jax.numpy, abs returns bools unchanged, floor and ceil integers and bools, and -x and sign of
  // a bool are errors.
  EXPECT_EQ(xpr::square(b).dtype(), DType::int32);
  EXPECT_EQ(xpr::square(b).to_vector<int>(), (std::vector<int>{1, 0}));
  EXPECT_EQ(xpr::abs(b).dtype(), DType::bool_);
  EXPECT_EQ(xpr::abs(b).to_vector<bool>(), (std::vector<bool>{true, false}));
  EXPECT_EQ(xpr::sign(i).dtype(), DType::int32);
  EXPECT_EQ(xpr::floor(i).dtype(), DType::int32);
  EXPECT_EQ(xpr::ceil(i).to_vector<int>(), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(xpr::floor(b).dtype(), DType::bool_);
  expect_error<xpr::dtype_error>([&] { (void)(-b); },
                                 {"neg does not accept dtype bool", "a numeric dtype"});
  expect_error<xpr::dtype_error>([&] { (void)xpr::sign(b); }, {"sign does not accept dtype bool"});
  Array f = make(DType::float32, Shape{2}, {0.5, -2});
  EXPECT_EQ(xpr::cos(f).dtype(), DType::float32);
  EXPECT_EQ((-f).to_vector<double>(), (std::vector<double>{-0.5, 2}));
  EXPECT_EQ(xpr::logistic(f).dtype(), DType::float32);
}

TEST(UnaryNumpy, PlainNumbersStillComputeAtOnce) {
  static_assert(std::is_same_v<decltype(xpr::sin(1.0)), double>);
  static_assert(std::is_same_v<decltype(xpr::sin(1.0f)), float>);
  EXPECT_EQ(xpr::sin(1.0), std::sin(1.0));
  EXPECT_EQ(xpr::abs(-3), 3);
  EXPECT_EQ(xpr::negative(2.5), -2.5);
}

}  // namespace test_prims_unary

namespace test_prims_unary {

// ---- round, is_finite, not, copy: the unary primitives outside the list's float rows ----------

TEST(UnaryPrims, RoundBothMethodsAtHalves) {
  const std::vector<double> x{0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.4, -0.0, 1e300, NAN};
  const std::vector<double> even{0, 2, 2, -0.0, -2, -2, 0, -0.0, 1e300};
  const std::vector<double> away{1, 2, 3, -1, -2, -3, 0, -0.0, 1e300};
  for (DType t : {DType::float32, DType::float64})
    for (std::int64_t m : {0, 1}) {
      SCOPED_TRACE(std::string(xpr::core::name(t)) + " rounding_method=" + std::to_string(m));
      // Long enough for full SIMD batches and a tail.
      std::vector<double> xs;
      for (int r = 0; r < 3; ++r) xs.insert(xs.end(), x.begin(), x.end());
      Array out = rt::bind1(rt::round_p, {make(t, Shape{static_cast<std::int64_t>(xs.size())}, xs)},
                            {{"rounding_method", m}});
      ASSERT_EQ(out.dtype(), t);
      std::vector<double> got = out.to_vector<double>();
      for (std::size_t i = 0; i < xs.size(); ++i) {
        const std::size_t k = i % x.size();
        if (k == x.size() - 1) {
          EXPECT_TRUE(std::isnan(got[i]));
          continue;
        }
        const double want = round_to(t, (m == 1 ? even : away)[k]);
        EXPECT_EQ(got[i], want) << "x=" << xs[i];
        EXPECT_EQ(std::signbit(got[i]), std::signbit(want)) << "x=" << xs[i];
      }
    }
  // jnp.round is ties-to-even; lax.round's default, away from zero, by name.
  Array h = xpr::array({0.5, 1.5, 2.5});
  EXPECT_EQ(xpr::round(h).to_vector<double>(), (std::vector<double>{0, 2, 2}));
  EXPECT_EQ(xpr::round(h, xpr::rounding_method::away_from_zero).to_vector<double>(),
            (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(xpr::round(2.5), 2.0);
  EXPECT_EQ(xpr::round(2.5, xpr::rounding_method::away_from_zero), 3.0);
  // Integers are already whole: returned as they are (jnp.round of an int array).
  Array i = make(DType::int32, Shape{2}, {3, -4});
  EXPECT_EQ(xpr::round(i).aval(), i.aval());
  // A rounding method lax does not have is refused, saying which it got.
  expect_error<xpr::value_error>(
      [&] {
        (void)rt::bind1(rt::round_p, {h}, {{"rounding_method", std::int64_t{2}}});
      },
      {"round", "rounding_method=2", "TO_NEAREST_EVEN"});
  expect_error<xpr::dtype_error>(
      [&] {
        (void)rt::bind1(rt::round_p, {i}, {{"rounding_method", std::int64_t{1}}});
      },
      {"round", "int32", "floating"});
}

TEST(UnaryPrims, IsFiniteIsABoolOfFloats) {
  const std::vector<double> x{1.0, NAN, INFINITY, -INFINITY, -0.0, 1e300, -3.5, 1e-310};
  for (DType t : {DType::float32, DType::float64}) {
    Array out = rt::bind1(rt::is_finite_p, {make(t, Shape{8}, x)});
    EXPECT_EQ(out.aval(), (ShapedArray{Shape{8}, DType::bool_, false}));
    std::vector<bool> want;
    for (double v : x) want.push_back(std::isfinite(round_to(t, v)));
    EXPECT_EQ(out.to_vector<bool>(), want) << xpr::core::name(t);
  }
  expect_error<xpr::dtype_error>(
      [&] { (void)rt::bind1(rt::is_finite_p, {make(DType::int32, Shape{1}, {1})}); },
      {"is_finite", "int32", "floating"});
  expect_error<xpr::type_error>([&] { (void)rt::bind1(rt::is_finite_p, {}); },
                                {"is_finite", "1 operand", "found 0"});
  // jnp.isfinite: integers are always finite; plain numbers compute at once.
  EXPECT_EQ(xpr::isfinite(make(DType::int64, Shape{2}, {1, 2})).to_vector<bool>(),
            (std::vector<bool>{true, true}));
  EXPECT_FALSE(xpr::isfinite(INFINITY));
  EXPECT_TRUE(xpr::isfinite(2.0));
  EXPECT_EQ(rt::find_primitive("is_finite"), &rt::is_finite_p);
}

TEST(UnaryPrims, NotIsLogicalForBoolsAndBitwiseForIntegers) {
  Array b = make(DType::bool_, Shape{3}, {1, 0, 1});
  EXPECT_EQ(rt::bind1(rt::not_p, {b}).to_vector<bool>(), (std::vector<bool>{false, true, false}));
  EXPECT_EQ(rt::bind1(rt::not_p, {make(DType::int32, Shape{4}, {0, 5, -1, -6})})
                .to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{-1, -6, 0, 5}));
  Array big = make(DType::int64, Shape{1}, {0});
  EXPECT_EQ(rt::bind1(rt::not_p, {big}).to_vector<std::int64_t>(), (std::vector<std::int64_t>{-1}));
  expect_error<xpr::dtype_error>(
      [&] { (void)rt::bind1(rt::not_p, {make(DType::float64, Shape{1}, {1})}); },
      {"not", "float64", "bool or integer"});
  EXPECT_EQ(xpr::bitwise_not(make(DType::int32, Shape{1}, {7})).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{-8}));
  EXPECT_EQ(xpr::invert(5), -6);
  // logical_not converts to bool first: nonzero is true.
  EXPECT_EQ(xpr::logical_not(make(DType::float64, Shape{3}, {0.0, 2.5, -1.0})).to_vector<bool>(),
            (std::vector<bool>{true, false, false}));
  EXPECT_TRUE(xpr::logical_not(0));
  EXPECT_EQ(rt::find_primitive("not"), &rt::not_p);
}

TEST(UnaryPrims, CopyIsTheIdentityInEveryDtype) {
  for (DType t : {DType::bool_, DType::int32, DType::int64, DType::float32, DType::float64}) {
    Array x = make(t, Shape{5}, {1, 0, 3, 0, 1});
    Array y = rt::bind1(rt::copy_p, {x});
    EXPECT_EQ(y.aval(), x.aval());
    EXPECT_EQ(y.to_vector<double>(), x.to_vector<double>());
  }
}

}  // namespace test_prims_unary
