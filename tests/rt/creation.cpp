// Tests of rt/creation.hpp: array (initializer lists, std::vector, Eigen), zeros/ones/full and
// their _like forms, arange, linspace and eye. Values are checked against hand-computed lists,
// Eigen's own element access and NumPy's documented formulas.
#include "xpr/rt/creation.hpp"

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <Eigen/Core>
#include <gtest/gtest.h>

#include "xpr/rt/api.hpp"  // arithmetic on the created arrays

namespace test_rt_creation {

using xpr::Array;
using xpr::DType;
using xpr::Shape;
using xpr::ShapedArray;

template <class E>
void expect_message_has(const E& e, std::initializer_list<std::string> parts) {
  std::string what = e.what();
  for (const auto& p : parts)
    EXPECT_NE(what.find(p), std::string::npos) << what << "\nlacks: " << p;
}

class FakeTracer final : public xpr::rt::detail::ArrayImpl {
 public:
  using ArrayImpl::ArrayImpl;
  const xpr::rt::detail::ConcreteArray* concrete() const noexcept override { return nullptr; }
  bool is_tracer() const noexcept override { return true; }
};

// ---- array ------------------------------------------------------------------------------------

TEST(Creation, ArrayFromAListTakesTheElementTypesDtype) {
  Array a = xpr::array({1.0, 2.0, 3.0});
  EXPECT_EQ(a.aval(), (ShapedArray{Shape{3}, DType::float64, false}));  // strongly typed
  EXPECT_EQ(a.to_vector<double>(), (std::vector<double>{1.0, 2.0, 3.0}));
  EXPECT_EQ(xpr::array({1.5f, 2.5f}).dtype(), DType::float32);
  EXPECT_EQ(xpr::array({1, 2}).dtype(), DType::int32);
  EXPECT_EQ(xpr::array({std::int64_t{1}}).dtype(), DType::int64);
  Array b = xpr::array({true, false});
  EXPECT_EQ(b.dtype(), DType::bool_);
  EXPECT_EQ(b.to_vector<bool>(), (std::vector<bool>{true, false}));
}

TEST(Creation, ArrayWithADtypeConverts) {
  Array a = xpr::array({1, 2}, xpr::float32);
  EXPECT_EQ(a.aval(), (ShapedArray{Shape{2}, DType::float32, false}));
  EXPECT_EQ(a.data<float>()[1], 2.0f);
  Array b = xpr::array({0.0, -2.5, 3.0}, xpr::bool_);  // nonzero is true
  EXPECT_EQ(b.to_vector<bool>(), (std::vector<bool>{false, true, true}));
  Array c = xpr::array({2.9, -2.9}, xpr::int32);  // C++ conversion truncates toward zero
  EXPECT_EQ(c.to_vector<std::int32_t>(), (std::vector<std::int32_t>{2, -2}));
}

TEST(Creation, NestedListsMakeRank2) {
  Array m = xpr::array({{1., 2., 3.}, {4., 5., 6.}});
  EXPECT_EQ(m.shape(), (Shape{2, 3}));
  EXPECT_EQ(m.to_vector<double>(), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(m[1][0].item<double>(), 4.0);
  EXPECT_EQ(xpr::array({{1, 2}, {3, 4}}, xpr::int64).dtype(), DType::int64);
}

TEST(Creation, RaggedRowsThrowShapeError) {
  try {
    (void)xpr::array({{1., 2.}, {3., 4., 5.}});
    FAIL() << "expected shape_error";
  } catch (const xpr::shape_error& e) {
    expect_message_has(e, {"2 elements", "found 3", "row 1"});
  }
}

TEST(Creation, ArrayFromAVector) {
  std::vector<double> v{1, 2, 3, 4, 5, 6};
  Array a = xpr::array(v);
  EXPECT_EQ(a.shape(), (Shape{6}));
  EXPECT_EQ(a.to_vector<double>(), v);
  EXPECT_NE(a.data<double>(), v.data());  // a copy
  Array m = xpr::array(v, {2, 3});
  EXPECT_EQ(m.shape(), (Shape{2, 3}));
  EXPECT_EQ(m[1].to_vector<double>(), (std::vector<double>{4, 5, 6}));
  Array f = xpr::array(v, {3, 2}, xpr::float32);
  EXPECT_EQ(f.dtype(), DType::float32);
  EXPECT_EQ(f.data<float>()[5], 6.0f);
  EXPECT_EQ(xpr::array(std::vector<int>{7}, xpr::float64).item<double>(), 7.0);
  // `{}` is the empty shape, not a dtype (DType{} is bool): a rank-0 array of the value.
  Array s = xpr::array(std::vector<int>{7}, {});
  EXPECT_EQ(s.shape(), Shape{});
  EXPECT_EQ(s.dtype(), DType::int32);
  EXPECT_EQ(s.item<std::int32_t>(), 7);
  EXPECT_THROW((void)xpr::array(std::vector<double>{1.5, 0.0}, {}), xpr::shape_error);
  Array b = xpr::array(std::vector<bool>{true, false, true});
  EXPECT_EQ(b.dtype(), DType::bool_);
  EXPECT_EQ(b.to_vector<bool>(), (std::vector<bool>{true, false, true}));
}

TEST(Creation, VectorOfTheWrongSizeThrowsShapeError) {
  try {
    (void)xpr::array(std::vector<double>(5), {2, 3});
    FAIL() << "expected shape_error";
  } catch (const xpr::shape_error& e) {
    expect_message_has(e, {"expected 6", "(2, 3)", "found 5"});
  }
}

TEST(Creation, ArrayFromEigenIsRowMajor) {
  Eigen::MatrixXd m(2, 3);  // column-major storage
  m << 1, 2, 3, 4, 5, 6;
  Array a = xpr::array(m);
  EXPECT_EQ(a.aval(), (ShapedArray{Shape{2, 3}, DType::float64, false}));
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 3; ++c) EXPECT_EQ(a[r][c].item<double>(), m(r, c));
  // Expressions are evaluated; the result has the expression's shape.
  Array t = xpr::array(m.transpose() * 2.0);
  EXPECT_EQ(t.shape(), (Shape{3, 2}));
  EXPECT_EQ(t.to_vector<double>(), (std::vector<double>{2, 8, 4, 10, 6, 12}));
  Eigen::ArrayXXf arr = Eigen::ArrayXXf::Constant(2, 2, 0.5f);
  EXPECT_EQ(xpr::array(arr).dtype(), DType::float32);
  Eigen::Matrix<int, 2, 2, Eigen::RowMajor> im;
  im << 1, 2, 3, 4;
  EXPECT_EQ(xpr::array(im).to_vector<std::int32_t>(), (std::vector<std::int32_t>{1, 2, 3, 4}));
  EXPECT_EQ(xpr::array(m, xpr::int64).dtype(), DType::int64);
  // A dynamic matrix with one column is still a matrix.
  EXPECT_EQ(xpr::array(Eigen::MatrixXd::Zero(3, 1)).shape(), (Shape{3, 1}));
}

TEST(Creation, EigenVectorsAreRank1) {
  Eigen::VectorXd v(3);
  v << 1, 2, 3;
  Array a = xpr::array(v);
  EXPECT_EQ(a.shape(), (Shape{3}));
  EXPECT_EQ(a.to_vector<double>(), (std::vector<double>{1, 2, 3}));
  Array r = xpr::array(Eigen::RowVector3f(4, 5, 6));
  EXPECT_EQ(r.aval(), (ShapedArray{Shape{3}, DType::float32, false}));
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{4, 5, 6}));
  EXPECT_EQ(xpr::array(Eigen::ArrayXd::LinSpaced(4, 0, 3)).shape(), (Shape{4}));
}

// ---- constants --------------------------------------------------------------------------------

TEST(Creation, ZerosAndOnes) {
  Array z = xpr::zeros({2, 3});
  EXPECT_EQ(z.aval(), (ShapedArray{Shape{2, 3}, DType::float64, false}));
  EXPECT_EQ(z.to_vector<double>(), std::vector<double>(6, 0.0));
  Array o = xpr::ones({4}, xpr::float32);
  EXPECT_EQ(o.aval(), (ShapedArray{Shape{4}, DType::float32, false}));
  EXPECT_EQ(o.to_vector<float>(), std::vector<float>(4, 1.0f));
  EXPECT_EQ(xpr::ones({3}, xpr::bool_).to_vector<bool>(), std::vector<bool>(3, true));
  Array s = xpr::zeros({});
  EXPECT_EQ(s.ndim(), 0u);
  EXPECT_EQ(s.item<double>(), 0.0);
  EXPECT_EQ(xpr::zeros({0, 3}).size(), 0);
}

TEST(Creation, FullIsWeakWithoutADtypeLikeJnpFull) {
  Array a = xpr::full({2, 2}, 2.5);
  EXPECT_EQ(a.aval(), (ShapedArray{Shape{2, 2}, DType::float64, true}));
  EXPECT_EQ(a.to_vector<double>(), std::vector<double>(4, 2.5));
  EXPECT_EQ(xpr::full({2}, 1.5f).aval(), (ShapedArray{Shape{2}, DType::float32, true}));
  EXPECT_EQ(xpr::full({2}, 7).aval(), (ShapedArray{Shape{2}, DType::int32, true}));
  EXPECT_EQ(xpr::full({2}, true).aval(), (ShapedArray{Shape{2}, DType::bool_, false}));
  Array s = xpr::full({3}, 3, xpr::float32);
  EXPECT_EQ(s.aval(), (ShapedArray{Shape{3}, DType::float32, false}));
  EXPECT_EQ(s.to_vector<float>(), std::vector<float>(3, 3.0f));
}

TEST(Creation, LikeFormsKeepShapeDtypeAndWeakType) {
  Array x = xpr::full({2, 3}, 1.5f);  // weak f32
  Array z = xpr::zeros_like(x), o = xpr::ones_like(x), f = xpr::full_like(x, 4);
  for (const Array* a : {&z, &o, &f}) EXPECT_EQ(a->aval(), x.aval());
  EXPECT_EQ(z.to_vector<float>(), std::vector<float>(6, 0.0f));
  EXPECT_EQ(o.to_vector<float>(), std::vector<float>(6, 1.0f));
  EXPECT_EQ(f.to_vector<float>(), std::vector<float>(6, 4.0f));
  // An explicit dtype gives a strongly typed result.
  Array i = xpr::ones_like(x, xpr::int32);
  EXPECT_EQ(i.aval(), (ShapedArray{Shape{2, 3}, DType::int32, false}));
  EXPECT_EQ(xpr::zeros_like(x, xpr::float64).dtype(), DType::float64);
  EXPECT_EQ(xpr::full_like(x, 2.5, xpr::int64).to_vector<std::int64_t>(),
            std::vector<std::int64_t>(6, 2));
  // full_like of an int array truncates the value, like a cast to the array's dtype.
  EXPECT_EQ(xpr::full_like(xpr::array({1, 2}), 2.7).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{2, 2}));
}

TEST(Creation, LikeFormsOfATracerNeedOnlyItsAbstractValue) {
  Array t(std::make_shared<FakeTracer>(ShapedArray{Shape{2}, DType::float32, false}));
  Array z = xpr::zeros_like(t);
  EXPECT_TRUE(z.is_concrete());
  EXPECT_EQ(z.aval(), t.aval());
  EXPECT_EQ(z.to_vector<float>(), (std::vector<float>{0, 0}));
}

// ---- ranges -----------------------------------------------------------------------------------

TEST(Creation, ArangeOfIntegers) {
  Array a = xpr::arange(5);
  EXPECT_EQ(a.aval(), (ShapedArray{Shape{5}, DType::int32, false}));
  EXPECT_EQ(a.to_vector<std::int32_t>(), (std::vector<std::int32_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(xpr::arange(2, 6).to_vector<int>(), (std::vector<int>{2, 3, 4, 5}));
  EXPECT_EQ(xpr::arange(1, 10, 3).to_vector<int>(), (std::vector<int>{1, 4, 7}));
  EXPECT_EQ(xpr::arange(10, 0, -3).to_vector<int>(), (std::vector<int>{10, 7, 4, 1}));
  EXPECT_EQ(xpr::arange(5, 2).size(), 0);
  EXPECT_EQ(xpr::arange(0).size(), 0);
  EXPECT_EQ(xpr::arange(std::int64_t{3}).dtype(), DType::int64);
  Array f = xpr::arange(0, 4, 1, xpr::float32);
  EXPECT_EQ(f.aval(), (ShapedArray{Shape{4}, DType::float32, false}));
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{0, 1, 2, 3}));
}

TEST(Creation, ArangeOfFloatsHasCeilLength) {
  Array a = xpr::arange(0.0, 1.0, 0.25);
  EXPECT_EQ(a.dtype(), DType::float64);
  EXPECT_EQ(a.to_vector<double>(), (std::vector<double>{0.0, 0.25, 0.5, 0.75}));
  // ceil((1 - 0) / 0.3) = 4 elements: 0, 0.3, 0.6, 0.9.
  std::vector<double> b = xpr::arange(0, 1.0, 0.3).to_vector<double>();
  ASSERT_EQ(b.size(), 4u);
  EXPECT_DOUBLE_EQ(b[3], 0.9);
  EXPECT_EQ(xpr::arange(0.5, 3).to_vector<double>(), (std::vector<double>{0.5, 1.5, 2.5}));
  EXPECT_EQ(xpr::arange(0.f, 1.f, 0.5f).dtype(), DType::float32);
  EXPECT_EQ(xpr::arange(2.5).to_vector<double>(), (std::vector<double>{0.0, 1.0, 2.0}));
  EXPECT_EQ(xpr::arange(1.0, 0.0, -0.5).to_vector<double>(), (std::vector<double>{1.0, 0.5}));
}

TEST(Creation, ArangeWithAZeroStepThrowsValueError) {
  try {
    (void)xpr::arange(0, 5, 0);
    FAIL() << "expected value_error";
  } catch (const xpr::value_error& e) {
    expect_message_has(e, {"nonzero step", "found 0"});
  }
  EXPECT_THROW((void)xpr::arange(0.0, 1.0, 0.0), xpr::value_error);
}

TEST(Creation, ArangeWithNonFiniteBoundsThrowsValueError) {
  try {
    (void)xpr::arange(0.0, std::numeric_limits<double>::infinity(), 1.0);
    FAIL() << "expected value_error";
  } catch (const xpr::value_error& e) {
    expect_message_has(e, {"finite", "stop inf"});
  }
}

TEST(Creation, Linspace) {
  Array a = xpr::linspace(0.0, 1.0, 5);
  EXPECT_EQ(a.aval(), (ShapedArray{Shape{5}, DType::float64, false}));
  EXPECT_EQ(a.to_vector<double>(), (std::vector<double>{0.0, 0.25, 0.5, 0.75, 1.0}));
  std::vector<double> b = xpr::linspace(0.0, 1.0, 5, false).to_vector<double>();
  std::vector<double> expected{0.0, 0.2, 0.4, 0.6, 0.8};
  ASSERT_EQ(b.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_DOUBLE_EQ(b[i], expected[i]);
  // The default is 50 samples, integers give f64, and the endpoint is exact.
  std::vector<double> c = xpr::linspace(0, 10).to_vector<double>();
  ASSERT_EQ(c.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_DOUBLE_EQ(c[i], 10.0 * i / 49.0);
  EXPECT_EQ(c.back(), 10.0);
  EXPECT_EQ(xpr::linspace(0.f, 1.f, 3).dtype(), DType::float32);
  EXPECT_EQ(xpr::linspace(0.f, 1.f, 3).to_vector<float>(), (std::vector<float>{0, 0.5f, 1}));
  EXPECT_EQ(xpr::linspace(2.0, 3.0, 1).to_vector<double>(), (std::vector<double>{2.0}));
  EXPECT_EQ(xpr::linspace(2.0, 3.0, 0).size(), 0);
  EXPECT_EQ(xpr::linspace(0, 4, 3, true, xpr::int32).to_vector<int>(), (std::vector<int>{0, 2, 4}));
}

TEST(Creation, LinspaceWithANegativeCountThrowsValueError) {
  try {
    (void)xpr::linspace(0.0, 1.0, -1);
    FAIL() << "expected value_error";
  } catch (const xpr::value_error& e) {
    expect_message_has(e, {"non-negative", "found -1"});
  }
}

TEST(Creation, Eye) {
  Array i = xpr::eye(3);
  EXPECT_EQ(i.aval(), (ShapedArray{Shape{3, 3}, DType::float64, false}));
  EXPECT_EQ(i.to_vector<double>(), (std::vector<double>{1, 0, 0, 0, 1, 0, 0, 0, 1}));
  EXPECT_EQ(xpr::eye(2, 3, 1).to_vector<double>(), (std::vector<double>{0, 1, 0, 0, 0, 1}));
  EXPECT_EQ(xpr::eye(3, 2, -1).to_vector<double>(), (std::vector<double>{0, 0, 1, 0, 0, 1}));
  Array b = xpr::eye(2, xpr::int32);
  EXPECT_EQ(b.dtype(), DType::int32);
  EXPECT_EQ(b.to_vector<int>(), (std::vector<int>{1, 0, 0, 1}));
  EXPECT_EQ(xpr::eye(2, 0).shape(), (Shape{2, 0}));
  EXPECT_THROW((void)xpr::eye(-1), xpr::value_error);
}

TEST(Creation, IntegersOutOfTheDtypesRangeAreRefusedNotWrapped) {
  // size_t and unsigned long map to int64: a value above INT64_MAX used to wrap negative.
  const std::size_t huge = std::numeric_limits<std::size_t>::max();
  auto expect_refused = [](auto make, const char* what) {
    try {
      make();
      ADD_FAILURE() << what << ": expected value_error";
    } catch (const xpr::value_error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("does not fit in"), std::string::npos) << what << ": " << msg;
    }
  };
  expect_refused([&] { return xpr::Array(huge); }, "Array(size_t max)");
  expect_refused(
      [&] {
        return xpr::array(std::vector<unsigned long>{1ul << 63, 3});
      },
      "array(vector<unsigned long>)");
  expect_refused([&] { return xpr::full({2}, 1ul << 63); }, "full(1 << 63)");
  expect_refused([&] { return xpr::full({1}, 3000000000LL, xpr::int32); }, "full int32");
  expect_refused([&] { return xpr::array(std::vector<long long>{3000000000LL}, xpr::int32); },
                 "array int32");
  // Values that fit convert exactly; floats still saturate as astype does.
  EXPECT_EQ(xpr::Array(std::size_t{1} << 62).item<std::int64_t>(), std::int64_t{1} << 62);
  EXPECT_EQ(xpr::array(std::vector<unsigned long>{7, 9}).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{7, 9}));
  EXPECT_EQ(xpr::full({1}, -2147483648LL, xpr::int32).item<std::int64_t>(), -2147483648LL);
  EXPECT_EQ(xpr::full({1}, 1e10, xpr::int32).item<std::int64_t>(), 2147483647);
  // Mixed into arithmetic, a weak unsigned number too large for int64 is refused as well, and
  // one mixed with floats converts to the float exactly as before.
  expect_refused([&] { return xpr::ones({2}, xpr::int64) + huge; }, "int64 array + size_t max");
  // (examiner J) Also an empty full, unsigned arange bounds, and a number as an .at() update,
  // which is typed as in `x + v`.
  expect_refused([&] { return xpr::full({0}, 3000000000LL, xpr::int32); }, "empty full int32");
  expect_refused([&] { return xpr::arange(std::uint64_t{1} << 63, (std::uint64_t{1} << 63) + 2); },
                 "arange beyond INT64_MAX");
  expect_refused([&] { return xpr::arange(std::uint64_t{0}, std::uint64_t{3}, ~std::uint64_t{0}); },
                 "arange step beyond INT64_MAX");
  const Array xi = xpr::array({1, 2});
  expect_refused([&] { return xi.at(0).set(3000000000LL); }, ".at().set");
  expect_refused([&] { return xi.at(0).add(3000000000LL); }, ".at().add");
  EXPECT_EQ(xi.at(1).set(-7LL).to_vector<int>(), (std::vector<int>{1, -7}));
  // A float update is computed in the common type and converted back to x's, as JAX's .at does.
  EXPECT_EQ(xi.at(0).add(2.5).to_vector<int>(), (std::vector<int>{3, 2}));
  EXPECT_EQ(xi.at(0).add(2.5).dtype(), xpr::int32);
  EXPECT_EQ(xpr::arange(std::uint64_t{2}, std::uint64_t{5}).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{2, 3, 4}));
  EXPECT_EQ((xpr::array({1.0}) * (1ul << 63)).item<double>(), 9223372036854775808.0);
}

}  // namespace test_rt_creation
