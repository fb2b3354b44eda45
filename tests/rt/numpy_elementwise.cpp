// Tests of rt/numpy_elementwise.hpp: jax.numpy's elementwise functions and operators on arrays and
// C++ numbers: JAX's promotion with weak C++ numbers, true division, bool arithmetic, NumPy
// broadcasting, where, clip, square, pow / integer_pow, stop_gradient, comparisons, and errors.
// Expected values are computed by hand or with C++ arithmetic on the same inputs.
#include "xpr/rt/numpy_elementwise.hpp"

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/api.hpp"          // jit and grad, for isnan traced
#include "xpr/rt/prims/unary.hpp"  // unary minus

namespace test_rt_numpy_elementwise {

namespace rt = xpr::rt;
using rt::ShapedArray;
using xpr::Array;
using xpr::DType;
using xpr::Shape;

Array make(DType t, const Shape& s, const std::vector<double>& v) {
  rt::ArrayBuilder b(ShapedArray{s, t, false});
  rt::dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    for (std::size_t i = 0; i < v.size(); ++i) b.data<T>()[i] = static_cast<T>(v[i]);
  });
  return std::move(b).finish();
}
Array vec(DType t, const std::vector<double>& v) {
  return make(t, Shape{static_cast<std::int64_t>(v.size())}, v);
}
std::vector<double> values(const Array& a) { return a.to_vector<double>(); }

ShapedArray aval(Shape s, DType t, bool weak = false) { return {std::move(s), t, weak}; }

template <class E, class F>
void expect_error(F&& f, std::initializer_list<std::string_view> parts) {
  try {
    f();
    ADD_FAILURE() << "expected an exception";
  } catch (const E& e) {
    for (std::string_view p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "message \"" << e.what() << "\" lacks \"" << p << "\"";
  }
}

// ---- promotion --------------------------------------------------------------------------------

TEST(NumpyPromotion, WeakCxxNumbersAdoptTheArrayDtype) {
  Array f = vec(DType::float32, {1, 2, 3}), i = vec(DType::int32, {1, 2, 3});
  // f32 array * 0.5 is f32; i32 array * 0.5 is (weak) f64; i32 array * 2 is i32.
  Array a = f * 0.5;
  EXPECT_EQ(a.aval(), aval({3}, DType::float32));
  EXPECT_EQ(values(a), (std::vector<double>{0.5, 1, 1.5}));
  Array b = i * 0.5;
  EXPECT_EQ(b.aval(), aval({3}, DType::float64, true));
  EXPECT_EQ(values(b), (std::vector<double>{0.5, 1, 1.5}));
  Array c = i * 2;
  EXPECT_EQ(c.aval(), aval({3}, DType::int32));
  EXPECT_EQ(values(c), (std::vector<double>{2, 4, 6}));
  // The number on the left, and a float (weak f32) with an int64 array.
  EXPECT_EQ((0.5 * f).aval(), aval({3}, DType::float32));
  EXPECT_EQ((vec(DType::int64, {1}) + 1.5f).aval(), aval({1}, DType::float32, true));
  EXPECT_EQ((f + std::int64_t{1}).aval(), aval({3}, DType::float32));
}

TEST(NumpyPromotion, StrongDtypesJoinOnTheLattice) {
  Array f32 = vec(DType::float32, {1.5}), f64 = vec(DType::float64, {2}),
        i32 = vec(DType::int32, {3}), i64 = vec(DType::int64, {4}), b = vec(DType::bool_, {1});
  EXPECT_EQ((f32 * f64).aval(), aval({1}, DType::float64));
  EXPECT_EQ(values(f32 * f64), std::vector<double>{3});
  EXPECT_EQ((i32 + i64).aval(), aval({1}, DType::int64));
  EXPECT_EQ((i64 + f32).aval(), aval({1}, DType::float32));
  EXPECT_EQ((b + i32).aval(), aval({1}, DType::int32));
  EXPECT_EQ(values(b + i32), std::vector<double>{4});
  // A bool array with a C++ int is a weak int; a weak array meets a strong one.
  EXPECT_EQ((b + 1).aval(), aval({1}, DType::int32, true));
  EXPECT_EQ((Array(2) + i64).aval(), aval({1}, DType::int64));
  EXPECT_EQ((Array(2.0) + 1.0).aval(), aval({}, DType::float64, true));
  EXPECT_EQ((Array(2.0) + 1.0).item<double>(), 3.0);
}

TEST(NumpyPromotion, IntegerTooLargeForThePromotedDtype) {
  Array i = vec(DType::int32, {1});
  expect_error<xpr::value_error>([&] { (void)(i + 3000000000LL); },
                                 {"3000000000", "int32", "2147483647"});
  EXPECT_EQ((vec(DType::int64, {1}) + 3000000000LL).item<std::int64_t>(), 3000000001LL);
  EXPECT_EQ((i + 3000000000.0).dtype(), DType::float64);
}

// ---- arithmetic -------------------------------------------------------------------------------

TEST(NumpyArithmetic, OperatorsWithNumbersOnEitherSide) {
  Array x = vec(DType::float64, {1, 2, 4});
  EXPECT_EQ(values(x + 1), (std::vector<double>{2, 3, 5}));
  EXPECT_EQ(values(1 + x), (std::vector<double>{2, 3, 5}));
  EXPECT_EQ(values(x - 1), (std::vector<double>{0, 1, 3}));
  EXPECT_EQ(values(10 - x), (std::vector<double>{9, 8, 6}));
  EXPECT_EQ(values(x * x), (std::vector<double>{1, 4, 16}));
  EXPECT_EQ(values(x / 4), (std::vector<double>{0.25, 0.5, 1}));
  EXPECT_EQ(values(1 / x), (std::vector<double>{1, 0.5, 0.25}));
  EXPECT_EQ(values(-x + x * 2.0), values(x));
  EXPECT_EQ(values(xpr::add(x, 1.0)), values(x + 1.0));
  EXPECT_EQ(values(xpr::subtract(3, x)), (std::vector<double>{2, 1, -1}));
  EXPECT_EQ(values(xpr::multiply(x, x)), values(x * x));
}

TEST(NumpyArithmetic, DivisionIsTrueDivision) {
  Array i = vec(DType::int32, {7, -7, 1}), j = vec(DType::int32, {2, 2, 0});
  Array q = i / j;
  EXPECT_EQ(q.aval(), aval({3}, DType::float64));
  EXPECT_EQ(values(q), (std::vector<double>{3.5, -3.5, INFINITY}));
  EXPECT_EQ((i / 2).aval(), aval({3}, DType::float64));
  EXPECT_EQ(values(i / 2), (std::vector<double>{3.5, -3.5, 0.5}));
  EXPECT_EQ((vec(DType::float32, {1}) / 2).aval(), aval({1}, DType::float32));
  EXPECT_EQ((vec(DType::bool_, {1}) / vec(DType::bool_, {1})).aval(), aval({1}, DType::float64));
  EXPECT_EQ((Array(7) / 2).aval(), aval({}, DType::float64, true));
  EXPECT_EQ(values(xpr::divide(1, i)), (std::vector<double>{1.0 / 7, -1.0 / 7, 1}));
}

TEST(NumpyArithmetic, BoolAddIsOrMultiplyIsAnd) {
  Array p = vec(DType::bool_, {0, 0, 1, 1}), q = vec(DType::bool_, {0, 1, 0, 1});
  EXPECT_EQ((p + q).aval(), aval({4}, DType::bool_));
  EXPECT_EQ(values(p + q), (std::vector<double>{0, 1, 1, 1}));
  EXPECT_EQ(values(p * q), (std::vector<double>{0, 0, 0, 1}));
  EXPECT_EQ(values(p + true), (std::vector<double>{1, 1, 1, 1}));
  EXPECT_EQ(values(xpr::maximum(p, q)), (std::vector<double>{0, 1, 1, 1}));
  EXPECT_EQ(values(xpr::minimum(p, q)), (std::vector<double>{0, 0, 0, 1}));
  expect_error<xpr::dtype_error>([&] { (void)(p - q); }, {"sub", "bool"});
}

TEST(NumpyArithmetic, MaximumMinimumClipSquare) {
  Array x = vec(DType::float32, {-2, 0.25, 3});
  EXPECT_EQ(values(xpr::maximum(x, 0.0)), (std::vector<double>{0, 0.25, 3}));
  EXPECT_EQ(values(xpr::minimum(1, x)), (std::vector<double>{-2, 0.25, 1}));
  Array c = xpr::clip(x, 0.0, 1.0);
  EXPECT_EQ(c.aval(), aval({3}, DType::float32));
  EXPECT_EQ(values(c), (std::vector<double>{0, 0.25, 1}));
  Array ci = xpr::clip(vec(DType::int32, {-5, 2, 9}), 0, 4);
  EXPECT_EQ(ci.aval(), aval({3}, DType::int32));
  EXPECT_EQ(values(ci), (std::vector<double>{0, 2, 4}));
  // clip with array bounds broadcasts them.
  EXPECT_EQ(values(xpr::clip(x, vec(DType::float32, {-1, -1, -1}), Array(2.0f))),
            (std::vector<double>{-1, 0.25, 2}));
  Array s = xpr::square(x);
  EXPECT_EQ(s.aval(), aval({3}, DType::float32));
  EXPECT_EQ(values(s), (std::vector<double>{4, 0.0625, 9}));
  EXPECT_EQ(values(xpr::square(vec(DType::int64, {-3}))), std::vector<double>{9});
  EXPECT_EQ(xpr::square(vec(DType::bool_, {1})).aval(), aval({1}, DType::int32));
}

TEST(NumpyArithmetic, PowAndIntegerPow) {
  Array f = vec(DType::float32, {1.5, -2, 3});
  // A C++ integer exponent is integer_pow: exact repeated multiplication, in the base's dtype.
  Array p2 = xpr::pow(f, 2);
  EXPECT_EQ(p2.aval(), aval({3}, DType::float32));
  EXPECT_EQ(values(p2), (std::vector<double>{2.25, 4, 9}));
  Array i = vec(DType::int32, {2, -3, 4});
  EXPECT_EQ(xpr::pow(i, 3).aval(), aval({3}, DType::int32));
  EXPECT_EQ(values(xpr::power(i, 3)), (std::vector<double>{8, -27, 64}));
  EXPECT_EQ(values(xpr::pow(vec(DType::float64, {2}), -2)), std::vector<double>{0.25});
  // Float exponents use pow; the result matches the C library's.
  Array d = vec(DType::float64, {2, 9, 0.3});
  std::vector<double> half = values(xpr::pow(d, 0.5));
  for (std::size_t k = 0; k < 3; ++k) EXPECT_EQ(half[k], std::pow(values(d)[k], 0.5));
  EXPECT_EQ(xpr::pow(i, 0.5).aval(), aval({3}, DType::float64, true));
  Array base2 = xpr::pow(2.0, vec(DType::float32, {3, -1}));
  EXPECT_EQ(base2.aval(), aval({2}, DType::float32));
  EXPECT_EQ(values(base2), (std::vector<double>{8, 0.5}));
  EXPECT_EQ(values(xpr::pow(d, vec(DType::float64, {3, 0.5, 1}))),
            (std::vector<double>{8, 3, 0.3}));
  expect_error<xpr::dtype_error>([&] { (void)xpr::pow(i, i); }, {"pow", "int32", "integer_pow"});
  expect_error<xpr::dtype_error>([&] { (void)xpr::pow(i, -1); }, {"y >= 0", "int32"});
  // integer_pow directly.
  EXPECT_EQ(values(xpr::integer_pow(f, 3)), (std::vector<double>{3.375, -8, 27}));
  EXPECT_EQ(xpr::integer_pow(vec(DType::bool_, {1, 0}), 2).aval(), aval({2}, DType::int32));
}

TEST(NumpyArithmetic, StopGradient) {
  Array x = vec(DType::float32, {1, 2});
  Array y = xpr::stop_gradient(x);
  EXPECT_EQ(y.aval(), x.aval());
  EXPECT_EQ(values(y), values(x));
  static_assert(std::is_same_v<decltype(xpr::stop_gradient(2.0)), double>);
  EXPECT_EQ(xpr::stop_gradient(2.0), 2.0);
}

// ---- comparisons and where --------------------------------------------------------------------

TEST(NumpyComparisons, AllSixReturnBoolArrays) {
  Array x = vec(DType::int32, {0, 1, 2});
  const std::vector<double> lt{1, 0, 0}, le{1, 1, 0}, gt{0, 0, 1}, ge{0, 1, 1}, eq{0, 1, 0},
      ne{1, 0, 1};
  EXPECT_EQ((x < 1).aval(), aval({3}, DType::bool_));
  EXPECT_EQ(values(x < 1), lt);
  EXPECT_EQ(values(x <= 1), le);
  EXPECT_EQ(values(x > 1), gt);
  EXPECT_EQ(values(x >= 1), ge);
  EXPECT_EQ(values(x == 1), eq);
  EXPECT_EQ(values(x != 1), ne);
  EXPECT_EQ(values(1 > x), lt);  // numbers on the left
  EXPECT_EQ(values(1 == x), eq);
  // Promotion before comparing: 0.5 is a weak float, so the ints are compared as f64.
  EXPECT_EQ(values(x > 0.5), (std::vector<double>{0, 1, 1}));
  EXPECT_EQ(values(x == vec(DType::float32, {0, 1.5, 2})), (std::vector<double>{1, 0, 1}));
  EXPECT_EQ(values(xpr::less(x, 1)), lt);
  EXPECT_EQ(values(xpr::greater_equal(x, x)), (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(values(xpr::not_equal(x, x)), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(values(xpr::equal(x, x)), (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(values(xpr::less_equal(x, 0)), (std::vector<double>{1, 0, 0}));
  EXPECT_EQ(values(xpr::greater(x, 0)), (std::vector<double>{0, 1, 1}));
  // A size-1 comparison is a C++ condition.
  EXPECT_TRUE(Array(2.0) > 1.0);
  EXPECT_FALSE(vec(DType::float64, {0}) > 1.0);
}

TEST(NumpyWhere, ChoosesPromotesAndBroadcasts) {
  Array c = vec(DType::bool_, {1, 0, 1}), a = vec(DType::float32, {1, 2, 3}),
        b = vec(DType::float32, {-1, -2, -3});
  Array w = xpr::where(c, a, b);
  EXPECT_EQ(w.aval(), aval({3}, DType::float32));
  EXPECT_EQ(values(w), (std::vector<double>{1, -2, 3}));
  // A non-bool condition means "nonzero"; numbers are weak and adopt the array's dtype.
  EXPECT_EQ(values(xpr::where(vec(DType::int32, {0, 5, -1}), a, 0.0)),
            (std::vector<double>{0, 2, 3}));
  EXPECT_EQ(values(xpr::where(vec(DType::float64, {0, NAN, 0.5}), 1, 2)),
            (std::vector<double>{2, 1, 1}));
  EXPECT_EQ(xpr::where(c, a, 0.0).aval(), aval({3}, DType::float32));
  // Only the condition is an array: the result takes its shape and the numbers' (weak) type.
  EXPECT_EQ(xpr::where(c, 1.0, 0.0).aval(), aval({3}, DType::float64, true));
  EXPECT_EQ(values(xpr::where(c, 1.0, 0.0)), (std::vector<double>{1, 0, 1}));
  EXPECT_EQ(values(xpr::where(false, a, b)), values(b));
  EXPECT_EQ(xpr::where(c, vec(DType::int32, {1, 2, 3}), a).dtype(), DType::float32);
  // Broadcasting across all three operands.
  Array col = make(DType::bool_, Shape{3, 1}, {1, 0, 1});
  Array row = make(DType::float64, Shape{1, 4}, {10, 20, 30, 40});
  Array g = xpr::where(col, row, -1.0);
  ASSERT_EQ(g.shape(), (Shape{3, 4}));
  EXPECT_EQ(values(g), (std::vector<double>{10, 20, 30, 40, -1, -1, -1, -1, 10, 20, 30, 40}));
  expect_error<xpr::shape_error>(
      [&] {
        (void)xpr::where(c, vec(DType::float32, {1, 2}), b);
      },
      {"(3,)", "(2,)"});
}

// ---- broadcasting -----------------------------------------------------------------------------

TEST(NumpyBroadcasting, FollowsNumpyRules) {
  Array col = make(DType::float64, Shape{3, 1}, {1, 2, 3});
  Array row = make(DType::float64, Shape{1, 4}, {10, 20, 30, 40});
  Array s = col + row;
  ASSERT_EQ(s.shape(), (Shape{3, 4}));
  std::vector<double> got = values(s);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 4; ++j)
      EXPECT_EQ(got[i * 4 + j], static_cast<double>(i + 1) + 10.0 * static_cast<double>(j + 1));
  Array v = vec(DType::int32, {1, 2, 3, 4});
  std::vector<double> cube(24);
  for (std::size_t k = 0; k < 24; ++k) cube[k] = static_cast<double>(k) * 100;
  Array m = make(DType::int32, Shape{2, 3, 4}, cube);
  Array p = m - v;
  ASSERT_EQ(p.shape(), (Shape{2, 3, 4}));
  got = values(p);
  for (std::size_t k = 0; k < 24; ++k) EXPECT_EQ(got[k], cube[k] - static_cast<double>(k % 4 + 1));
  EXPECT_EQ(values(v - m), values(-p));  // and the other way round
  // Rank-0 arrays, size-1 arrays and empty arrays.
  EXPECT_EQ((Array(1.0) + m).shape(), (Shape{2, 3, 4}));
  EXPECT_EQ((vec(DType::int32, {5}) + v).shape(), (Shape{4}));
  EXPECT_EQ(values(vec(DType::int32, {5}) + v), (std::vector<double>{6, 7, 8, 9}));
  EXPECT_EQ(
      (make(DType::float32, Shape{0, 1}, {}) * make(DType::float32, Shape{3}, {1, 2, 3})).shape(),
      (Shape{0, 3}));
  EXPECT_EQ(values(xpr::maximum(col, row))[0], 10);
}

TEST(NumpyBroadcasting, IncompatibleShapesNameBoth) {
  Array a = vec(DType::float64, {1, 2, 3}), b = vec(DType::float64, {1, 2, 3, 4});
  expect_error<xpr::shape_error>([&] { (void)(a + b); }, {"(3,)", "(4,)"});
  expect_error<xpr::shape_error>([&] { (void)(a < b); }, {"(3,)", "(4,)"});
  Array m = make(DType::float64, Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  Array n = make(DType::float64, Shape{3, 2}, {1, 2, 3, 4, 5, 6});
  expect_error<xpr::shape_error>([&] { (void)xpr::maximum(m, n); }, {"(2, 3)", "(3, 2)"});
}

// ---- plain numbers ----------------------------------------------------------------------------

TEST(NumpyNumbers, PlainNumbersStillComputeAtOnce) {
  static_assert(std::is_same_v<decltype(xpr::add(1, 2)), int>);
  static_assert(std::is_same_v<decltype(xpr::maximum(1.0, 2.0)), double>);
  static_assert(std::is_same_v<decltype(xpr::where(true, 1.0, 2.0)), double>);
  EXPECT_EQ(xpr::add(1, 2), 3);
  EXPECT_EQ(xpr::maximum(1.0, 2.0), 2.0);
  EXPECT_EQ(xpr::where(false, 1.0, 2.0), 2.0);
  EXPECT_EQ(xpr::pow(2.0, 3.0), 8.0);
  EXPECT_EQ(xpr::integer_pow(1.5, 2), 2.25);
  EXPECT_EQ(xpr::clip(5, 0, 3), 3);
  EXPECT_EQ(xpr::square(3.0), 9.0);
  EXPECT_TRUE(xpr::less(1, 2));
}

TEST(NumpyPredicates, IsnanAndIsinfInEveryDtype) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (DType t : {DType::float32, DType::float64}) {
    Array x = xpr::convert_element_type(xpr::array({0.0, -inf, nan, inf, -0.0, 1e308}), t);
    EXPECT_EQ(xpr::isnan(x).dtype(), DType::bool_);
    EXPECT_EQ(xpr::isnan(x).to_vector<bool>(),
              (std::vector<bool>{false, false, true, false, false, false}));
    // 1e308 is infinite in float32.
    EXPECT_EQ(xpr::isinf(x).to_vector<bool>(),
              (std::vector<bool>{false, true, false, true, false, t == DType::float32}));
    // Together with isfinite, exactly one holds.
    Array one = xpr::astype(xpr::isnan(x), DType::int32) +
                xpr::astype(xpr::isinf(x), DType::int32) +
                xpr::astype(xpr::isfinite(x), DType::int32);
    EXPECT_EQ(one.to_vector<int>(), std::vector<int>(6, 1));
  }
  Array i = xpr::array({std::int64_t{-9223372036854775807LL - 1}, std::int64_t{0}});
  EXPECT_EQ(xpr::isnan(i).to_vector<bool>(), (std::vector<bool>{false, false}));
  EXPECT_EQ(xpr::isinf(i).to_vector<bool>(), (std::vector<bool>{false, false}));
  EXPECT_EQ(xpr::isinf(xpr::array({true})).to_vector<bool>(), (std::vector<bool>{false}));
  // Traced: the same values under jit, and a NaN-masking loss. As in JAX, a where alone passes
  // the NaN into the gradient (0 * d(w * w) at w = NaN); the double where keeps it out.
  Array v = xpr::array({1.0, nan, 3.0});
  auto masked = [](const Array& w) { return xpr::sum(xpr::where(xpr::isnan(w), 0.0, w * w)); };
  EXPECT_EQ(xpr::jit(masked)(v).item<double>(), 10.0);
  std::vector<double> g = xpr::grad(masked)(v).to_vector<double>();
  EXPECT_EQ(g[0], 2.0);
  EXPECT_TRUE(std::isnan(g[1]));
  auto safe = [](const Array& w) {
    const Array nan_mask = xpr::isnan(w);
    const Array clean = xpr::where(nan_mask, 0.0, w);
    return xpr::sum(xpr::where(nan_mask, 0.0, clean * clean));
  };
  EXPECT_EQ(xpr::grad(safe)(v).to_vector<double>(), (std::vector<double>{2, 0, 6}));
  EXPECT_EQ(xpr::jit(xpr::grad(safe))(v).to_vector<double>(), (std::vector<double>{2, 0, 6}));
}

TEST(NumpyArithmetic, PowWithAnIntegerArrayExponentDifferentiatesAsJax) {
  // Polynomial features written as in JAX, x[:, None] ** arange(deg + 1), at a data point 0:
  // JAX's lax.pow with an integer exponent has d/dx x^0 = 0 (not 0 * 0^-1 = NaN), so
  // d/dx sum_k c_k x^k = c_1 + 2 c_2 x: [2, 8] at x = [0, 1] for c = [1, 2, 3] (examiner L).
  auto poly = [](const Array& x) {
    return xpr::sum(
        xpr::matmul(xpr::pow(xpr::expand_dims(x, 1), xpr::arange(3)), xpr::array({1.0, 2.0, 3.0})));
  };
  const Array at = xpr::array({0.0, 1.0});
  EXPECT_EQ(poly(at).item<double>(), 1.0 + 6.0);
  EXPECT_EQ(values(xpr::grad(poly)(at)), (std::vector<double>{2, 8}));
  EXPECT_EQ(values(xpr::jit(xpr::grad(poly))(at)), (std::vector<double>{2, 8}));
  // Second derivative: 2 c_2 = 6 (away from 0: there the x^0 term's second derivative meets
  // 0 * x^-2, as JAX's rule does).
  EXPECT_EQ(values(xpr::hessian(poly)(xpr::array({0.5}))), (std::vector<double>{6}));
  // Per exponent, under vmap: d/dx x^n at 0 is 0, 1, 0 for n = 0, 1, 2; and at 2: 0, 1, 4.
  auto d = xpr::grad([](const Array& x, const Array& n) { return xpr::pow(x, n); });
  const Array ns = xpr::array({0, 1, 2});
  EXPECT_EQ(values(xpr::vmap(d, std::tuple{xpr::not_mapped, 0})(0.0, ns)),
            (std::vector<double>{0, 1, 0}));
  EXPECT_EQ(values(xpr::vmap(d, std::tuple{xpr::not_mapped, 0})(2.0, ns)),
            (std::vector<double>{0, 1, 4}));
  // Values: the base's dtype; x^0 = 1 for every x, NaN and 0 included; negative exponents.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Array x32 = vec(DType::float32, {0, nan, -2, 4});
  const Array e = xpr::array({0, 0, 3, -1});
  const Array r = xpr::pow(x32, e);
  EXPECT_EQ(r.dtype(), DType::float32);
  EXPECT_EQ(values(r), (std::vector<double>{1, 1, -8, 0.25}));
  EXPECT_EQ(values(xpr::pow(2.0, e)), (std::vector<double>{1, 1, 8, 0.5}));
  // The derivative away from zero is n x^(n - 1), as the float exponent's.
  const Array xs = xpr::array({1.5, -0.5, 3.0, 4.0});
  const std::vector<double> gi =
      values(xpr::grad([&](const Array& x) { return xpr::sum(xpr::pow(x, e)); })(xs));
  const std::vector<double> gf = values(xpr::grad(
      [&](const Array& x) { return xpr::sum(xpr::pow(x, xpr::astype(e, DType::float64))); })(xs));
  for (std::size_t i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(gi[i], gf[i]) << i;
  // Integer to integer array powers stay a dtype_error.
  EXPECT_THROW(xpr::pow(xpr::array({2, 3}), e(xpr::range(0, 2))), xpr::dtype_error);
}

TEST(NumpyRounding, TruncRoundsTowardZero) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> v{-2.7, -2.5, -0.5, -0.0, 0.0, 0.4, 1.5, 2.9, 1e17 + 0.0, -inf, inf};
  for (DType t : {DType::float32, DType::float64}) {
    SCOPED_TRACE(std::string(xpr::core::name(t)));
    Array x = vec(t, v);
    Array y = xpr::trunc(x);
    EXPECT_EQ(y.dtype(), t);
    std::vector<double> got = values(y);
    ASSERT_EQ(got.size(), v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
      // std::trunc of the element as stored in t is the reference; signs of zeros included.
      const double stored =
          t == DType::float32 ? static_cast<double>(static_cast<float>(v[i])) : v[i];
      EXPECT_EQ(got[i], std::trunc(stored)) << i;
      EXPECT_EQ(std::signbit(got[i]), std::signbit(std::trunc(stored))) << i;
    }
    EXPECT_TRUE(std::isnan(xpr::trunc(vec(t, {nan})).item<double>()));
    // Under jit, the same values; its derivative is zero, as JAX's (floor and ceil are flat).
    EXPECT_EQ(values(xpr::jit([](const Array& a) { return xpr::trunc(a); })(x)), got);
    EXPECT_EQ(values(xpr::grad([](const Array& a) { return xpr::sum(xpr::trunc(a) * a); })(
                  vec(t, {-2.5, 1.5}))),
              (std::vector<double>{-2, 1}));  // d(trunc(a) a)/da = trunc(a)
  }
  // Integers and bools are unchanged.
  Array i = xpr::array({std::int64_t{-7}, std::int64_t{9}});
  EXPECT_EQ(xpr::trunc(i).dtype(), DType::int64);
  EXPECT_EQ(xpr::trunc(i).to_vector<std::int64_t>(), (std::vector<std::int64_t>{-7, 9}));
  EXPECT_EQ(xpr::trunc(xpr::array({true, false})).dtype(), DType::bool_);
  // A user's "integer part and fraction" split: x = trunc(x) + fraction, fraction with x's sign.
  Array x = vec(DType::float64, {-3.75, 3.75});
  EXPECT_EQ(values(x - xpr::trunc(x)), (std::vector<double>{-0.75, 0.75}));
}

}  // namespace test_rt_numpy_elementwise
