// Tests of rt/array.hpp: accessors, item, data, to_vector, the Eigen view, operator[] views that
// share buffers, explicit operator bool, weak typing of C++ numbers, and element access on
// tracers. Arrays are built with ArrayBuilder, so these tests do not depend on creation.hpp.
#include "xpr/rt/array.hpp"

#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include <Eigen/Core>
#include <gtest/gtest.h>

#include "xpr/rt/indexing.hpp"  // defines operator[] (it binds slice and squeeze)
#include "xpr/rt/zeros.hpp"

namespace test_rt_array {

using xpr::Array;
using xpr::DType;
using xpr::Shape;
using xpr::ShapedArray;

// A concrete array of `shape` and dtype T holding 0, 1, 2, ... (row-major).
template <class T>
Array iota_array(Shape shape) {
  xpr::rt::ArrayBuilder b(ShapedArray{shape, xpr::dtype_of<T>(), false});
  T* p = b.data<T>();
  for (std::int64_t i = 0; i < shape.size(); ++i) p[i] = static_cast<T>(i);
  return std::move(b).finish();
}

// What a transformation's tracer looks like to Array: an abstract value and no data.
class FakeTracer final : public xpr::rt::detail::ArrayImpl {
 public:
  using ArrayImpl::ArrayImpl;
  const xpr::rt::detail::ConcreteArray* concrete() const noexcept override { return nullptr; }
  bool is_tracer() const noexcept override { return true; }
};

Array fake_tracer(ShapedArray aval) { return Array(std::make_shared<FakeTracer>(std::move(aval))); }

template <class E>
void expect_message_has(const E& e, std::initializer_list<std::string> parts) {
  std::string what = e.what();
  for (const auto& p : parts)
    EXPECT_NE(what.find(p), std::string::npos) << what << "\nlacks: " << p;
}

TEST(Array, Accessors) {
  Array a = iota_array<float>(Shape{2, 3, 4});
  EXPECT_EQ(a.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(a.ndim(), 3u);
  EXPECT_EQ(a.size(), 24);
  EXPECT_EQ(a.dtype(), DType::float32);
  EXPECT_FALSE(a.weak_type());
  EXPECT_EQ(a.aval(), (ShapedArray{Shape{2, 3, 4}, DType::float32, false}));
  EXPECT_TRUE(a.is_concrete());
  EXPECT_FALSE(a.is_tracer());
}

TEST(Array, NumbersAreWeaklyTypedLikePythonScalars) {
  Array d = 0.5, f = 0.5f, i = 2, l = std::int64_t{7}, u = 3u, b = true;
  EXPECT_EQ(d.aval(), (ShapedArray{Shape{}, DType::float64, true}));
  EXPECT_EQ(f.aval(), (ShapedArray{Shape{}, DType::float32, true}));
  EXPECT_EQ(i.aval(), (ShapedArray{Shape{}, DType::int32, true}));
  EXPECT_EQ(l.aval(), (ShapedArray{Shape{}, DType::int64, true}));
  EXPECT_EQ(u.aval(), (ShapedArray{Shape{}, DType::int64, true}));   // all of unsigned's values
  EXPECT_EQ(b.aval(), (ShapedArray{Shape{}, DType::bool_, false}));  // a bool is never weak
  EXPECT_EQ(d.item<double>(), 0.5);
  EXPECT_EQ(f.item<float>(), 0.5f);
  EXPECT_EQ(i.item<int>(), 2);
  EXPECT_EQ(l.item<std::int64_t>(), 7);
  EXPECT_EQ(u.item<std::int64_t>(), 3);
  EXPECT_TRUE(b.item<bool>());
  Array z;  // default: a rank-0 zero
  EXPECT_EQ(z.ndim(), 0u);
  EXPECT_EQ(z.item<double>(), 0.0);
}

TEST(Array, DataPointsAtTheRowMajorElements) {
  Array a = iota_array<std::int64_t>(Shape{3, 2});
  const std::int64_t* p = a.data<std::int64_t>();
  for (int i = 0; i < 6; ++i) EXPECT_EQ(p[i], i);
  static_assert(std::is_same_v<decltype(a.data<std::int64_t>()), const std::int64_t*>);
  // Copies share the buffer: arrays are immutable values.
  Array b = a;
  EXPECT_EQ(b.data<std::int64_t>(), p);
}

TEST(Array, DataOfAnotherTypeThrowsDtypeError) {
  Array a = iota_array<float>(Shape{4});
  try {
    (void)a.data<double>();
    FAIL() << "expected dtype_error";
  } catch (const xpr::dtype_error& e) {
    expect_message_has(e, {"float32", "float64"});
  }
}

TEST(Array, ItemConvertsTheOnlyElement) {
  EXPECT_EQ(iota_array<double>(Shape{}).item<double>(), 0.0);
  Array one = Array(2.75);
  EXPECT_EQ(one.item<int>(), 2);  // C++ conversion truncates toward zero
  EXPECT_EQ(one.item<float>(), 2.75f);
  // Any array of size 1 has an item, whatever its rank.
  xpr::rt::ArrayBuilder b(ShapedArray{Shape{1, 1}, DType::int32, false});
  b.data<std::int32_t>()[0] = -4;
  EXPECT_EQ(std::move(b).finish().item<double>(), -4.0);
}

TEST(Array, ItemOfANonScalarThrowsTypeError) {
  Array a = iota_array<double>(Shape{2, 3});
  try {
    (void)a.item<double>();
    FAIL() << "expected type_error";
  } catch (const xpr::type_error& e) {
    expect_message_has(e, {"size 1", "(2, 3)", "size 6"});
  }
}

TEST(Array, ToVectorConverts) {
  Array a = iota_array<std::int32_t>(Shape{2, 2});
  EXPECT_EQ(a.to_vector<std::int32_t>(), (std::vector<std::int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(a.to_vector<double>(), (std::vector<double>{0.0, 1.0, 2.0, 3.0}));
  EXPECT_EQ(a.to_vector<bool>(), (std::vector<bool>{false, true, true, true}));
}

TEST(Array, EigenViewIsAConstMapOfTheBuffer) {
  Array m = iota_array<double>(Shape{2, 3});
  auto v = m.eigen<double>();
  EXPECT_EQ(v.rows(), 2);
  EXPECT_EQ(v.cols(), 3);
  EXPECT_EQ(v.data(), m.data<double>());  // a view, not a copy
  Eigen::ArrayXXd expected(2, 3);
  expected << 0, 1, 2, 3, 4, 5;
  EXPECT_TRUE((v == expected).all());
  static_assert(std::is_const_v<std::remove_pointer_t<decltype(v.data())>>);
  // Rank 1 is a column, rank 0 is 1x1, rank 3 is (first dim) x (the rest).
  // (The arrays are kept alive: a view does not own the buffer.)
  Array vector = iota_array<float>(Shape{4}), scalar = Array(1.5);
  Array cube = iota_array<double>(Shape{2, 3, 4});
  auto col = vector.eigen<float>();
  EXPECT_EQ(col.rows(), 4);
  EXPECT_EQ(col.cols(), 1);
  EXPECT_EQ(col(3, 0), 3.0f);
  auto s = scalar.eigen<double>();
  EXPECT_EQ(s.rows(), 1);
  EXPECT_EQ(s.cols(), 1);
  EXPECT_EQ(s(0, 0), 1.5);
  auto t = cube.eigen<double>();
  EXPECT_EQ(t.rows(), 2);
  EXPECT_EQ(t.cols(), 12);
  EXPECT_EQ(t(1, 5), 17.0);
  EXPECT_THROW((void)m.eigen<float>(), xpr::dtype_error);
}

TEST(Array, IndexingViewsShareTheBuffer) {
  Array m = iota_array<double>(Shape{3, 4});  // rows of 32 bytes: views
  Array row = m[1];
  EXPECT_EQ(row.shape(), (Shape{4}));
  EXPECT_EQ(row.dtype(), DType::float64);
  EXPECT_FALSE(row.weak_type());
  EXPECT_EQ(row.data<double>(), m.data<double>() + 4);
  EXPECT_EQ(row.to_vector<double>(), (std::vector<double>{4, 5, 6, 7}));
  EXPECT_EQ(m[-1].data<double>(), m.data<double>() + 8);  // negative indices count from the end
  EXPECT_EQ(m[2][3].item<double>(), 11.0);
  EXPECT_EQ(m[2][3].ndim(), 0u);
  // The view keeps the buffer alive after the array it came from is gone.
  Array view;
  {
    Array t = iota_array<std::int64_t>(Shape{2, 5});
    view = t[1];
  }
  EXPECT_EQ(view.to_vector<std::int64_t>(), (std::vector<std::int64_t>{5, 6, 7, 8, 9}));
  // Small rows are copied into inline storage; the values are the same.
  Array small = iota_array<float>(Shape{2, 2});
  EXPECT_EQ(small[1].to_vector<float>(), (std::vector<float>{2, 3}));
}

TEST(Array, IndexOutOfRangeThrowsIndexError) {
  Array m = iota_array<double>(Shape{3, 4});
  try {
    (void)m[3];
    FAIL() << "expected index_error";
  } catch (const xpr::index_error& e) {
    expect_message_has(e, {"index 3", "size 3"});
  }
  EXPECT_THROW((void)m[-4], xpr::index_error);
  try {
    (void)Array(1.0)[0];
    FAIL() << "expected index_error";
  } catch (const xpr::index_error& e) {
    expect_message_has(e, {"rank >= 1", "rank-0"});
  }
}

TEST(Array, ExplicitBoolOfASizeOneArray) {
  static_assert(!std::is_convertible_v<Array, bool>, "operator bool must be explicit");
  static_assert(std::is_constructible_v<bool, Array>);
  EXPECT_TRUE(static_cast<bool>(Array(0.5)));
  EXPECT_FALSE(static_cast<bool>(Array(0)));
  EXPECT_TRUE(static_cast<bool>(Array(true)));
  bool taken = false;
  if (Array(-1.0)) taken = true;
  EXPECT_TRUE(taken);
}

TEST(Array, BoolOfALargerArrayThrowsTypeError) {
  try {
    (void)static_cast<bool>(iota_array<double>(Shape{2}));
    FAIL() << "expected type_error";
  } catch (const xpr::type_error& e) {
    expect_message_has(e, {"ambiguous", "size 1", "(2,)"});
  }
}

TEST(Array, ElementsOfATracerThrowConcretizationError) {
  Array t = fake_tracer(ShapedArray{Shape{3}, DType::float64, false});
  EXPECT_TRUE(t.is_tracer());
  EXPECT_FALSE(t.is_concrete());
  EXPECT_EQ(t.shape(), (Shape{3}));  // the abstract value is known
  try {
    (void)t.data<double>();
    FAIL() << "expected concretization_error";
  } catch (const xpr::concretization_error& e) {
    expect_message_has(e, {"concrete value is expected", "data()", "f64[3]"});
  }
  EXPECT_THROW((void)t.to_vector<double>(), xpr::concretization_error);
  // t[0] is traced, not read: it binds slice and squeeze (tests/rt/indexing.cpp), which a fake
  // tracer without a trace cannot do.
  Array s = fake_tracer(ShapedArray{Shape{}, DType::bool_, false});
  EXPECT_THROW((void)s.item<bool>(), xpr::concretization_error);
  EXPECT_THROW((void)static_cast<bool>(s), xpr::concretization_error);
  // A concretization_error is a type_error, as JAX's ConcretizationTypeError is a TypeError.
  EXPECT_THROW((void)s.item<bool>(), xpr::type_error);
}

TEST(Array, ArrayBuilderStoresSmallValuesInline) {
  Array small = iota_array<double>(Shape{2});  // 16 bytes: inline
  EXPECT_EQ(small.concrete()->owner(), nullptr);
  Array big = iota_array<double>(Shape{3});  // 24 bytes: a shared, 64-byte aligned buffer
  ASSERT_NE(big.concrete()->owner(), nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(big.data<double>()) % 64, 0u);
}

}  // namespace test_rt_array

namespace test_rt_array_cache {
// Large buffers freed by one array are reused by the next array of the same size (no fresh page
// faults); a buffer still shared by a view is never handed out again.
TEST(ArrayBufferCache, ReusesFreedBuffersOfTheSameSizeOnly) {
  const std::int64_t n = 1 << 15;  // 256 KiB of f64: above the cache's minimum
  const double* first = nullptr;
  {
    xpr::Array a = xpr::rt::zeros_like_aval({xpr::Shape{n}, xpr::float64});
    first = a.data<double>();
  }
  xpr::Array b = xpr::rt::zeros_like_aval({xpr::Shape{n}, xpr::float64});
  EXPECT_EQ(b.data<double>(), first);
  EXPECT_EQ(b.data<double>()[n - 1], 0.0);  // refilled by its creator, not stale
  xpr::Array view = b.ndim() ? b : b;       // a second handle keeps the buffer alive
  const double* held = b.data<double>();
  b = xpr::Array(1.0);
  xpr::Array c = xpr::rt::zeros_like_aval({xpr::Shape{n}, xpr::float64});
  EXPECT_NE(c.data<double>(), held);  // still owned by `view`
  EXPECT_EQ(view.data<double>(), held);
}
}  // namespace test_rt_array_cache
