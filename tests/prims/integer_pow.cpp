// Tests of rt/prims/integer_pow.hpp: x ** y for y in -3..5 in every numeric dtype, over sizes
// around the SIMD width, against repeated multiplication by hand; wrap-around of integers; NaN and
// zero; abstract_eval; every error.
#include "xpr/rt/prims/integer_pow.hpp"

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <xsimd/xsimd.hpp>

#include "tests/prims/common.hpp"

namespace test_prims_integer_pow {

using test_prims_common::expect_error;
using test_prims_common::make;

namespace rt = xpr::rt;
using rt::ShapedArray;
using xpr::Array;
using xpr::DType;
using xpr::Shape;

Array ipow(const Array& x, std::int64_t y) { return rt::bind1(rt::integer_pow_p, {x}, {{"y", y}}); }

TEST(IntegerPow, ValuesInEveryDtypeAndSize) {
  const DType dtypes[] = {DType::int32, DType::int64, DType::float32, DType::float64};
  for (DType t : dtypes) {
    const bool is_int = xpr::core::is_integer(t);
    const std::size_t w =
        t == DType::float64 ? xsimd::batch<double>::size : xsimd::batch<float>::size;
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, w - 1, w, w + 1, std::size_t{1000}})
      for (std::int64_t y = is_int ? 0 : -3; y <= 5; ++y) {
        SCOPED_TRACE(std::string(xpr::core::name(t)) + " n=" + std::to_string(n) +
                     " y=" + std::to_string(y));
        // Multiples of 1/2 in [-4, 4] (integers for int dtypes): every power with y >= 0 is
        // exact, and 1 / x**|y| is one correctly rounded division.
        std::vector<double> x(n);
        for (std::size_t i = 0; i < n; ++i) {
          double v = static_cast<double>(i % 17) - 8;
          x[i] = is_int ? v : v * 0.5;
        }
        Array out = ipow(make(t, Shape{static_cast<std::int64_t>(n)}, x), y);
        ASSERT_EQ(out.dtype(), t);
        ASSERT_EQ(out.shape(), (Shape{static_cast<std::int64_t>(n)}));
        std::vector<double> got = out.to_vector<double>();
        for (std::size_t i = 0; i < n; ++i) {
          double p = 1;  // by hand: |y| multiplications
          for (std::int64_t k = 0; k < (y < 0 ? -y : y); ++k) p *= x[i];
          double want = y < 0 ? 1 / p : p;
          if (t == DType::float32) want = static_cast<float>(want);
          ASSERT_EQ(got[i], want) << "x=" << x[i];
        }
      }
  }
}

TEST(IntegerPow, ZerothPowerIsOneEvenForNan) {
  std::vector<double> got =
      ipow(make(DType::float64, Shape{3}, {NAN, 0, -INFINITY}), 0).to_vector<double>();
  EXPECT_EQ(got, (std::vector<double>{1, 1, 1}));
  got = ipow(make(DType::float32, Shape{2}, {0, -0.0}), -1).to_vector<double>();
  EXPECT_EQ(got, (std::vector<double>{INFINITY, -INFINITY}));
}

TEST(IntegerPow, LargeExponents) {
  EXPECT_EQ(ipow(make(DType::float64, Shape{}, {2}), 62).item<double>(), 4611686018427387904.0);
  // 1.5**40 = 3**40 / 2**40. Repeated squaring is exact up to 1.5**32 (3**32 has 51 bits), so
  // only the last product rounds: the result is 3**40 correctly rounded, scaled by 2**-40.
  EXPECT_EQ(ipow(make(DType::float64, Shape{}, {1.5}), 40).item<double>(),
            12157665459056928801.0 / 1099511627776.0);
  EXPECT_EQ(ipow(make(DType::float64, Shape{}, {1.5}), -40).item<double>(),
            1 / (12157665459056928801.0 / 1099511627776.0));
}

TEST(IntegerPow, IntegersWrapAround) {
  EXPECT_EQ(ipow(make(DType::int32, Shape{}, {2}), 31).item<std::int64_t>(),
            std::numeric_limits<std::int32_t>::min());
  EXPECT_EQ(ipow(make(DType::int32, Shape{}, {2}), 32).item<std::int64_t>(), 0);
  EXPECT_EQ(ipow(make(DType::int32, Shape{}, {-1}), 1001).item<std::int64_t>(), -1);
  rt::ArrayBuilder b(ShapedArray{Shape{}, DType::int64, false});
  b.data<std::int64_t>()[0] = 2;
  EXPECT_EQ(ipow(std::move(b).finish(), 63).item<std::int64_t>(),
            std::numeric_limits<std::int64_t>::min());
  // 3**21 = 10460353203 does not fit in int32: it wraps to 10460353203 - 2 * 2**32.
  EXPECT_EQ(ipow(make(DType::int32, Shape{}, {3}), 21).item<std::int64_t>(),
            10460353203 - 2 * 4294967296);
}

TEST(IntegerPow, AbstractEval) {
  const ShapedArray x{Shape{2, 3}, DType::float32, true};
  EXPECT_EQ(rt::integer_pow_p.abstract_eval(std::vector{x}, {{"y", std::int64_t{-2}}}).at(0), x);
  const ShapedArray i{Shape{4}, DType::int64, false};
  EXPECT_EQ(rt::integer_pow_p.abstract_eval(std::vector{i}, {{"y", std::int64_t{3}}}).at(0), i);
  EXPECT_EQ(rt::find_primitive("integer_pow"), &rt::integer_pow_p);
}

TEST(IntegerPow, Errors) {
  Array b = make(DType::bool_, Shape{2}, {1, 0}), i = make(DType::int32, Shape{2}, {1, 2});
  const rt::Params y2{{"y", std::int64_t{2}}}, y_neg{{"y", std::int64_t{-1}}};
  expect_error<xpr::dtype_error>([&] { (void)ipow(b, 2); }, {"integer_pow", "bool", "numeric"});
  expect_error<xpr::dtype_error>([&] { (void)ipow(i, -1); }, {"y >= 0", "int32", "y=-1"});
  expect_error<xpr::dtype_error>(
      [&] { (void)rt::integer_pow_p.abstract_eval(std::vector{i.aval()}, y_neg); },
      {"y >= 0", "int32", "y=-1"});
  expect_error<xpr::type_error>([&] { (void)rt::bind1(rt::integer_pow_p, {i}); }, {"'y'"});
  expect_error<xpr::type_error>(
      [&] {
        (void)rt::bind1(rt::integer_pow_p, {i, i}, y2);
      },
      {"integer_pow", "1 operand", "found 2"});
}

}  // namespace test_prims_integer_pow
