// Tests of rt/print.hpp against the strings NumPy (2.x, default print options) prints for
// `str(a)` and JAX prints for `repr(a)`. Each expected string is written out as Python shows it.
#include "xpr/rt/print.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/creation.hpp"

namespace test_rt_print {

using xpr::Array;
using xpr::DType;
using xpr::Shape;
using xpr::ShapedArray;

std::string str(const Array& a) {
  std::ostringstream os;
  os << a;
  return os.str();
}

Array arange_reshaped(std::int64_t n, Shape shape) {
  std::vector<std::int32_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return xpr::array(v, shape);
}

class FakeTracer final : public xpr::rt::detail::ArrayImpl {
 public:
  using ArrayImpl::ArrayImpl;
  const xpr::rt::detail::ConcreteArray* concrete() const noexcept override { return nullptr; }
  bool is_tracer() const noexcept override { return true; }
};

const double nan = std::numeric_limits<double>::quiet_NaN();
const double inf = std::numeric_limits<double>::infinity();

// ---- str: floats --------------------------------------------------------------------------------

TEST(Print, FloatsPaddedToACommonWidth) {
  // np.array([0.0, -0.682941969615793, 0.181405146234])
  EXPECT_EQ(str(xpr::array({0.0, -0.682941969615793, 0.181405146234})),
            "[ 0.         -0.68294197  0.18140515]");
  EXPECT_EQ(str(xpr::array({1.0, 2.0, 3.0})), "[1. 2. 3.]");
  EXPECT_EQ(str(xpr::array({1.5, 2.0})), "[1.5 2. ]");
  EXPECT_EQ(str(xpr::array({-1.0, 10.5})), "[-1.  10.5]");
  EXPECT_EQ(str(xpr::array({-0.0, 1.0})), "[-0.  1.]");
  EXPECT_EQ(str(xpr::array({12345678.9})), "[12345678.9]");
}

TEST(Print, FloatsUseTheShortestDigitsUpToEight) {
  EXPECT_EQ(str(xpr::array({0.1, 0.2, 0.1 + 0.2})), "[0.1 0.2 0.3]");  // 0.30000000000000004
  EXPECT_EQ(str(xpr::array({1.0 / 3.0})), "[0.33333333]");
  EXPECT_EQ(str(xpr::array({0.999999999})), "[1.]");  // rounded at the 8th digit
  // float32 values print their own shortest digits, not those of the double they widen to.
  EXPECT_EQ(str(xpr::array({0.1f, 0.25f})), "[0.1  0.25]");
  EXPECT_EQ(str(xpr::array({1.0f / 3.0f})), "[0.33333334]");
}

TEST(Print, ScientificWhenNumPyWouldUseIt) {
  EXPECT_EQ(str(xpr::array({1e-5, 1.0})), "[1.e-05 1.e+00]");      // min < 1e-4
  EXPECT_EQ(str(xpr::array({1.5e-5, 1.0})), "[1.5e-05 1.0e+00]");  // common mantissa digits
  EXPECT_EQ(str(xpr::array({1e8, 1.0})), "[1.e+08 1.e+00]");       // max >= 1e8
  EXPECT_EQ(str(xpr::array({1.0, 2000.0})), "[1.e+00 2.e+03]");    // max / min > 1000
  EXPECT_EQ(str(xpr::array({-1e-5, 1.0})), "[-1.e-05  1.e+00]");
  EXPECT_EQ(str(xpr::array({1e-100, 1.0})), "[1.e-100 1.e+000]");  // common exponent width
  EXPECT_EQ(str(xpr::array({0.0, 1e-5})), "[0.e+00 1.e-05]");
  EXPECT_EQ(str(xpr::array({1e-5, 0.123456789})), "[1.00000000e-05 1.23456789e-01]");
  // NumPy >= 2.2 switches float32 at 1e6 (10**finfo(float32).precision), float64 at 1e8.
  EXPECT_EQ(str(xpr::array({1e6f, 2e6f})), "[1.e+06 2.e+06]");
  EXPECT_EQ(str(xpr::array({1e6, 2e6})), "[1000000. 2000000.]");
}

TEST(Print, NanAndInf) {
  EXPECT_EQ(str(xpr::array({1.0, nan})), "[ 1. nan]");
  EXPECT_EQ(str(xpr::array({inf, -inf, 0.5})), "[ inf -inf  0.5]");
  EXPECT_EQ(str(xpr::array({nan, nan})), "[nan nan]");
  EXPECT_EQ(str(xpr::array({1e-5, nan})), "[1.e-05    nan]");
}

// ---- str: integers, bools, shapes
// -----------------------------------------------------------------

TEST(Print, IntegersRightAligned) {
  EXPECT_EQ(str(xpr::array({{1, 2}, {3, 4}})), "[[1 2]\n [3 4]]");
  EXPECT_EQ(str(xpr::array({-5, 10, 200})), "[ -5  10 200]");
  EXPECT_EQ(str(xpr::arange(std::int64_t{3})), "[0 1 2]");
}

TEST(Print, Bools) {
  EXPECT_EQ(str(xpr::array({true, false})), "[ True False]");
  EXPECT_EQ(str(xpr::array({{true, false}, {false, true}})), "[[ True False]\n [False  True]]");
}

TEST(Print, Rank3BlocksAreSeparatedByABlankLine) {
  EXPECT_EQ(str(arange_reshaped(8, {2, 2, 2})), "[[[0 1]\n  [2 3]]\n\n [[4 5]\n  [6 7]]]");
}

TEST(Print, EmptyArrays) {
  EXPECT_EQ(str(xpr::zeros({0})), "[]");
  EXPECT_EQ(str(xpr::zeros({2, 0})), "[]");
}

TEST(Print, Rank0PrintsTheBareNumberAsPythonDoes) {
  EXPECT_EQ(str(Array(1.0)), "1.0");
  EXPECT_EQ(str(Array(2)), "2");
  EXPECT_EQ(str(Array(true)), "True");
  EXPECT_EQ(str(Array(0.1f)), "0.1");
  EXPECT_EQ(str(Array(3.141592653589793)), "3.141592653589793");  // not cut at 8 digits
  EXPECT_EQ(str(Array(1e-5)), "1e-05");
  EXPECT_EQ(str(Array(1.5e16)), "1.5e+16");
  EXPECT_EQ(str(Array(123456789.0)), "123456789.0");
  EXPECT_EQ(str(Array(-0.0)), "-0.0");
  EXPECT_EQ(str(Array(nan)), "nan");
  EXPECT_EQ(str(Array(-inf)), "-inf");
}

// ---- str: line wrapping and summarization
// ---------------------------------------------------------

TEST(Print, LongRowsWrapAt75Columns) {
  EXPECT_EQ(str(xpr::arange(30)),
            "[ 0  1  2  3  4  5  6  7  8  9 10 11 12 13 14 15 16 17 18 19 20 21 22 23\n"
            " 24 25 26 27 28 29]");
  EXPECT_EQ(str(xpr::linspace(0.0, 1.0, 20)),
            "[0.         0.05263158 0.10526316 0.15789474 0.21052632 0.26315789\n"
            " 0.31578947 0.36842105 0.42105263 0.47368421 0.52631579 0.57894737\n"
            " 0.63157895 0.68421053 0.73684211 0.78947368 0.84210526 0.89473684\n"
            " 0.94736842 1.        ]");
}

TEST(Print, MoreThan1000ElementsAreSummarized) {
  EXPECT_EQ(str(xpr::arange(2000)), "[   0    1    2 ... 1997 1998 1999]");
  EXPECT_EQ(str(arange_reshaped(2000, {1000, 2})),
            "[[   0    1]\n [   2    3]\n [   4    5]\n ...\n [1994 1995]\n [1996 1997]\n"
            " [1998 1999]]");
  EXPECT_EQ(str(arange_reshaped(1600, {40, 40})),
            "[[   0    1    2 ...   37   38   39]\n"
            " [  40   41   42 ...   77   78   79]\n"
            " [  80   81   82 ...  117  118  119]\n"
            " ...\n"
            " [1480 1481 1482 ... 1517 1518 1519]\n"
            " [1520 1521 1522 ... 1557 1558 1559]\n"
            " [1560 1561 1562 ... 1597 1598 1599]]");
  // The element width comes from the printed elements only: 0..2 and 997..999 here.
  EXPECT_EQ(str(xpr::arange(0.0, 1001.0)), "[   0.    1.    2. ...  998.  999. 1000.]");
}

TEST(Print, Exactly1000ElementsAreNotSummarized) {
  std::string s = str(xpr::arange(1000));
  EXPECT_EQ(s.find("..."), std::string::npos);
  // Words of 3 characters and a space: 18 fit in the 74 columns before the bracket.
  EXPECT_EQ(s.substr(0, s.find('\n')),
            "[  0   1   2   3   4   5   6   7   8   9  10  11  12  13  14  15  16  17");
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 55);  // ceil(1000 / 18) = 56 lines
}

// ---- repr
// -----------------------------------------------------------------------------------------

TEST(Print, ReprLikeJax) {
  EXPECT_EQ(xpr::repr(xpr::array({1.0, 2.0, 3.0}, xpr::float32)),
            "Array([1., 2., 3.], dtype=float32)");
  EXPECT_EQ(xpr::repr(Array(1.0)), "Array(1., dtype=float64, weak_type=True)");
  EXPECT_EQ(xpr::repr(Array(2)), "Array(2, dtype=int32, weak_type=True)");
  EXPECT_EQ(xpr::repr(Array(true)), "Array(True, dtype=bool)");
  EXPECT_EQ(xpr::repr(xpr::array({{1, 2}, {3, 4}})),
            "Array([[1, 2],\n       [3, 4]], dtype=int32)");
  EXPECT_EQ(xpr::repr(xpr::array({true, false})), "Array([ True, False], dtype=bool)");
  EXPECT_EQ(xpr::repr(xpr::array({{1.0, 2.5}, {3.0, 4.0}})),
            "Array([[1. , 2.5],\n       [3. , 4. ]], dtype=float64)");
  EXPECT_EQ(xpr::repr(xpr::full({2}, 0.5f)), "Array([0.5, 0.5], dtype=float32, weak_type=True)");
}

TEST(Print, ReprOfEmptyArraysShowsTheShape) {
  EXPECT_EQ(xpr::repr(xpr::zeros({0})), "Array([], shape=(0,), dtype=float64)");
  EXPECT_EQ(xpr::repr(xpr::zeros({2, 0}, xpr::int32)), "Array([], shape=(2, 0), dtype=int32)");
}

TEST(Print, ReprWrapsUnderThePrefix) {
  EXPECT_EQ(xpr::repr(xpr::arange(2000)),
            "Array([   0,    1,    2, ..., 1997, 1998, 1999], dtype=int32)");
  // JAX pads with len('Array(') spaces instead of one when the dtype would pass column 75.
  EXPECT_EQ(xpr::repr(xpr::linspace(0.0, 1.0, 20)),
            "Array([0.        , 0.05263158, 0.10526316, 0.15789474, 0.21052632,\n"
            "       0.26315789, 0.31578947, 0.36842105, 0.42105263, 0.47368421,\n"
            "       0.52631579, 0.57894737, 0.63157895, 0.68421053, 0.73684211,\n"
            "       0.78947368, 0.84210526, 0.89473684, 0.94736842, 1.        ],      "
            "dtype=float64)");
}

// ---- tracers
// ----------------------------------------------------------------------------------------

TEST(Print, TracersPrintTheirAbstractValue) {
  Array t(std::make_shared<FakeTracer>(ShapedArray{Shape{3}, DType::float64, false}));
  EXPECT_EQ(str(t), "Traced<ShapedArray(f64[3])>");
  EXPECT_EQ(xpr::repr(t), "Traced<ShapedArray(f64[3])>");
  Array w(std::make_shared<FakeTracer>(ShapedArray{Shape{}, DType::float32, true}));
  EXPECT_EQ(str(w), "Traced<ShapedArray(f32[], weak_type=True)>");
}

}  // namespace test_rt_print
