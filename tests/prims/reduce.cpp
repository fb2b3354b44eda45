// Tests of include/xpr/rt/prims/reduce.hpp: reduce_sum, reduce_max, reduce_min and reduce_prod
// (whose class is in rt/cumulative.hpp) over every
// subset of axes of rank-1/2/3 arrays (including size-1, empty and SIMD-width-crossing shapes) in
// every dtype, against a reference loop written here; NaN propagation; every error path.
#include "xpr/rt/prims/reduce.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/cumulative.hpp"
#include "xpr/rt/trace.hpp"

namespace test_prims_reduce {

using xpr::Array;
using xpr::DType;
using xpr::Shape;
using xpr::ShapedArray;
using xpr::rt::Axes;
using xpr::rt::Primitive;

constexpr DType all_dtypes[] = {xpr::bool_, xpr::int32, xpr::int64, xpr::float32, xpr::float64};

/// An array of `dtype` holding `values` (bool: nonzero is true).
Array make(DType dtype, const std::vector<double>& values, const Shape& shape, bool weak = false) {
  xpr::rt::ArrayBuilder b(ShapedArray{shape, dtype, weak});
  xpr::rt::dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    for (std::size_t i = 0; i < values.size(); ++i)
      b.data<T>()[i] = std::is_same_v<T, bool> ? values[i] != 0 : static_cast<T>(values[i]);
  });
  return std::move(b).finish();
}

/// Small integers (and halves for floats), so sums are exact in every dtype and every order.
std::vector<double> sample(DType dtype, std::int64_t n) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    double x = static_cast<double>((i * 37 + 11) % 23) - 11;
    if (dtype == xpr::bool_) x = (i * 7 + 3) % 5 < 2;
    if (xpr::core::is_floating(dtype)) x += (i % 3 == 0) ? 0.5 : 0.0;
    v[static_cast<std::size_t>(i)] = x;
  }
  return v;
}

/// For products: powers of two whose exponents cancel over every run of six, so every partial
/// product in any order is exact in every dtype (integers: +-1, and 3 once in 64 elements, at
/// most 3^5 over the largest shape).
std::vector<double> sample_for_product(DType dtype, std::int64_t n) {
  static const double floats[] = {2, 0.5, -1, 1, -2, -0.5}, ints[] = {1, -1, 1, 1, -1, 1};
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] = xpr::core::is_floating(dtype) ? floats[i % 6]
                                     : i % 64 == 5                 ? 3.0
                                                                   : ints[i % 6];
  return v;
}

enum class Kind { sum, max, min, prod };

const Primitive& prim(Kind k) {
  if (k == Kind::sum) return xpr::rt::reduce_sum_p;
  if (k == Kind::max) return xpr::rt::reduce_max_p;
  if (k == Kind::prod) return xpr::rt::reduce_prod_p;
  return xpr::rt::reduce_min_p;
}

/// The reference: a loop over every input index, accumulating into the output index it maps to.
std::vector<double> reference(Kind k, const std::vector<double>& in, const Shape& shape,
                              const Axes& axes) {
  std::vector<bool> red(shape.rank(), false);
  for (auto a : axes) red[static_cast<std::size_t>(a)] = true;
  std::int64_t out_size = 1;
  for (std::size_t i = 0; i < shape.rank(); ++i)
    if (!red[i]) out_size *= shape[i];
  double init = k == Kind::sum    ? 0.0
                : k == Kind::prod ? 1.0
                                  : std::numeric_limits<double>::quiet_NaN();
  std::vector<double> out(static_cast<std::size_t>(out_size), init);
  std::vector<std::int64_t> idx(shape.rank(), 0);
  for (std::int64_t flat = 0; flat < shape.size(); ++flat) {
    std::int64_t rem = flat, o = 0;
    for (std::size_t i = shape.rank(); i-- > 0;) {
      idx[i] = rem % shape[i];
      rem /= shape[i];
    }
    for (std::size_t i = 0; i < shape.rank(); ++i)
      if (!red[i]) o = o * shape[i] + idx[i];
    double& acc = out[static_cast<std::size_t>(o)];
    double x = in[static_cast<std::size_t>(flat)];
    if (k == Kind::sum)
      acc += x;
    else if (k == Kind::prod)
      acc *= x;
    else if (std::isnan(acc))
      acc = x;  // the first element seen
    else
      acc = k == Kind::max ? std::max(acc, x) : std::min(acc, x);
  }
  return out;
}

Array reduce(Kind k, const Array& x, const Axes& axes) {
  return xpr::rt::bind1(prim(k), {x}, {{"axes", axes}});
}

/// Every subset of the axes of `rank`, in increasing and (for two or more) decreasing order.
std::vector<Axes> axis_subsets(std::size_t rank) {
  std::vector<Axes> out;
  for (unsigned mask = 0; mask < (1u << rank); ++mask) {
    Axes a;
    for (std::size_t i = 0; i < rank; ++i)
      if (mask & (1u << i)) a.push_back(static_cast<std::int64_t>(i));
    out.push_back(a);
    if (a.size() >= 2) out.emplace_back(a.rbegin(), a.rend());
  }
  return out;
}

TEST(Reduce, EverySubsetOfAxesInEveryDtypeMatchesTheReferenceLoop) {
  const std::vector<Shape> shapes = {Shape{},         Shape{7},        Shape{64},
                                     Shape{3, 5},     Shape{33, 9},    Shape{2, 3, 4},
                                     Shape{3, 1, 37}, Shape{5, 2, 17}, Shape{1, 1, 1}};
  int cases = 0;
  for (DType dtype : all_dtypes)
    for (Kind k : {Kind::sum, Kind::max, Kind::min, Kind::prod}) {
      if ((k == Kind::sum || k == Kind::prod) && dtype == xpr::bool_) continue;
      for (const Shape& shape : shapes) {
        std::vector<double> in =
            k == Kind::prod ? sample_for_product(dtype, shape.size()) : sample(dtype, shape.size());
        Array x = make(dtype, in, shape);
        for (const Axes& axes : axis_subsets(shape.rank())) {
          SCOPED_TRACE(std::string(prim(k).name()) + " " + std::string(xpr::core::name(dtype)) +
                       " shape " + shape.str() + " axes " + Shape(axes).str());
          Array r = reduce(k, x, axes);
          std::vector<double> want = reference(k, in, shape, axes);
          ASSERT_EQ(r.dtype(), dtype);
          ASSERT_EQ(r.size(), static_cast<std::int64_t>(want.size()));
          EXPECT_EQ(r.ndim(), shape.rank() - axes.size());
          EXPECT_EQ(r.to_vector<double>(), want);
          ++cases;
        }
      }
    }
  EXPECT_GT(cases, 700);
}

TEST(Reduce, OutputShapeDropsTheReducedAxesAndKeepsTheWeakType) {
  Array x = make(xpr::float32, sample(xpr::float32, 24), Shape{2, 3, 4}, /*weak=*/true);
  Array r = reduce(Kind::sum, x, {2, 0});
  EXPECT_EQ(r.shape(), (Shape{3}));
  EXPECT_TRUE(r.weak_type());
  xpr::rt::Avals out = xpr::rt::reduce_max_p.abstract_eval(
      std::vector<ShapedArray>{{Shape{2, 3, 4}, xpr::int64, false}}, {{"axes", Axes{1}}});
  EXPECT_EQ(out.at(0), (ShapedArray{Shape{2, 4}, xpr::int64, false}));
}

TEST(Reduce, FloatSumsOfInexactValuesAreAccurate) {
  // 1000 values with no exact float sum: within n·eps of the sum of |x| (any summation order).
  for (DType dtype : {xpr::float32, xpr::float64}) {
    std::vector<double> in(1000);
    double abs_sum = 0;
    for (std::size_t i = 0; i < in.size(); ++i) {
      in[i] = std::sin(0.37 * static_cast<double>(i)) * 3.1;
      if (dtype == xpr::float32) in[i] = static_cast<float>(in[i]);
      abs_sum += std::abs(in[i]);
    }
    Array x = make(dtype, in, Shape{10, 100});
    double eps = dtype == xpr::float32 ? 6e-8 : 1.2e-16;
    std::vector<double> want_all = reference(Kind::sum, in, Shape{10, 100}, {0, 1});
    EXPECT_NEAR(reduce(Kind::sum, x, {0, 1}).item<double>(), want_all[0], 1000 * eps * abs_sum);
    for (Axes axes : {Axes{0}, Axes{1}}) {
      std::vector<double> want = reference(Kind::sum, in, Shape{10, 100}, axes);
      std::vector<double> got = reduce(Kind::sum, x, axes).to_vector<double>();
      for (std::size_t i = 0; i < want.size(); ++i)
        EXPECT_NEAR(got[i], want[i], 100 * eps * abs_sum);
    }
  }
}

TEST(Reduce, EmptyArrays) {
  // Sum of nothing is 0; max/min over a non-empty axis of an empty array is an empty array.
  for (DType dtype : {xpr::int32, xpr::int64, xpr::float32, xpr::float64}) {
    Array e = make(dtype, {}, Shape{2, 0, 3});
    EXPECT_EQ(reduce(Kind::sum, e, {1}).to_vector<double>(), std::vector<double>(6, 0.0));
    EXPECT_EQ(reduce(Kind::sum, e, {0, 1, 2}).to_vector<double>(), std::vector<double>{0.0});
    // The product of nothing is 1.
    EXPECT_EQ(reduce(Kind::prod, e, {1}).to_vector<double>(), std::vector<double>(6, 1.0));
    EXPECT_EQ(reduce(Kind::prod, e, {0, 1, 2}).to_vector<double>(), std::vector<double>{1.0});
    EXPECT_EQ(reduce(Kind::sum, e, {0}).shape(), (Shape{0, 3}));
    EXPECT_EQ(reduce(Kind::max, e, {0, 2}).shape(), (Shape{0}));
    EXPECT_EQ(reduce(Kind::min, e, {}).shape(), (Shape{2, 0, 3}));
  }
}

TEST(Reduce, MaxAndMinOfAnEmptyAxisHaveNoIdentity) {
  Array e = make(xpr::float64, {}, Shape{2, 0});
  for (Kind k : {Kind::max, Kind::min}) {
    try {
      reduce(k, e, {1});
      ADD_FAILURE() << "expected shape_error";
    } catch (const xpr::shape_error& err) {
      std::string msg = err.what();
      EXPECT_NE(msg.find("zero-size array to reduction operation"), std::string::npos) << msg;
      EXPECT_NE(msg.find("which has no identity"), std::string::npos) << msg;
      EXPECT_NE(msg.find("axis 1 of size 0"), std::string::npos) << msg;
    }
  }
}

TEST(Reduce, NanPropagatesThroughMaxAndMin) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (DType dtype : {xpr::float32, xpr::float64})
    for (std::size_t pos : {0u, 5u, 38u, 99u}) {  // in a SIMD body, in the tail
      std::vector<double> in = sample(dtype, 100);
      in[pos] = nan;
      Array x = make(dtype, in, Shape{100});
      EXPECT_TRUE(std::isnan(reduce(Kind::max, x, {0}).item<double>())) << pos;
      EXPECT_TRUE(std::isnan(reduce(Kind::min, x, {0}).item<double>())) << pos;
      EXPECT_TRUE(std::isnan(reduce(Kind::sum, x, {0}).item<double>())) << pos;
      // Column-wise (the vertical kernel): only the NaN's column is NaN.
      Array m = make(dtype, in, Shape{10, 10});
      std::vector<double> cols = reduce(Kind::max, m, {0}).to_vector<double>();
      for (std::size_t c = 0; c < 10; ++c) EXPECT_EQ(std::isnan(cols[c]), c == pos % 10) << pos;
    }
  // Infinities are ordinary values.
  const double inf = std::numeric_limits<double>::infinity();
  Array x = make(xpr::float32, {-inf, -inf, -inf}, Shape{3});
  EXPECT_EQ(reduce(Kind::max, x, {0}).item<double>(), -inf);
}

TEST(Reduce, IntegerSumsWrapAround) {
  const double big = std::numeric_limits<std::int32_t>::max();
  Array x = make(xpr::int32, {big, 1.0}, Shape{2});
  EXPECT_EQ(reduce(Kind::sum, x, {0}).item<std::int64_t>(),
            std::numeric_limits<std::int32_t>::min());
  // So do products: 2^31 in int32 is INT32_MIN, 2^32 is 0 (also past the SIMD width).
  for (std::int64_t n : {31, 32, 40}) {
    Array twos = make(xpr::int32, std::vector<double>(static_cast<std::size_t>(n), 2.0), Shape{n});
    const std::int64_t want = n == 31 ? std::numeric_limits<std::int32_t>::min() : 0;
    EXPECT_EQ(reduce(Kind::prod, twos, {0}).item<std::int64_t>(), want) << n;
  }
}

TEST(Reduce, ProductsPropagateNanAndInfinity) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (DType dtype : {xpr::float32, xpr::float64}) {
    std::vector<double> in = sample_for_product(dtype, 37);
    in[20] = 0.0;
    Array x = make(dtype, in, Shape{37});
    EXPECT_EQ(reduce(Kind::prod, x, {0}).item<double>(), 0.0);
    in[30] = inf;  // 0 * inf
    EXPECT_TRUE(std::isnan(reduce(Kind::prod, make(dtype, in, Shape{37}), {0}).item<double>()));
    in[20] = 1.0;
    EXPECT_EQ(std::abs(reduce(Kind::prod, make(dtype, in, Shape{37}), {0}).item<double>()), inf);
    in[5] = nan;
    EXPECT_TRUE(std::isnan(reduce(Kind::prod, make(dtype, in, Shape{37}), {0}).item<double>()));
  }
}

// ---- errors -----------------------------------------------------------------------------------

template <class E>
void expect_error(const Primitive& p, const Array& x, const Axes& axes,
                  std::initializer_list<const char*> parts) {
  try {
    xpr::rt::bind1(p, {x}, {{"axes", axes}});
    ADD_FAILURE() << "expected an exception";
  } catch (const E& e) {
    std::string msg = e.what();
    for (const char* part : parts) EXPECT_NE(msg.find(part), std::string::npos) << msg;
  }
  // The abstract evaluation rule checks the same.
  EXPECT_THROW(p.abstract_eval(std::vector<ShapedArray>{x.aval()}, {{"axes", axes}}), E);
}

TEST(Reduce, Errors) {
  Array m = make(xpr::float32, sample(xpr::float32, 6), Shape{2, 3});
  Array b = make(xpr::bool_, {1, 0}, Shape{2});
  expect_error<xpr::dtype_error>(xpr::rt::reduce_sum_p, b, {0},
                                 {"reduce_sum", "bool", "numeric dtype"});
  expect_error<xpr::dtype_error>(xpr::rt::reduce_prod_p, b, {0},
                                 {"reduce_prod", "bool", "numeric dtype"});
  expect_error<xpr::index_error>(xpr::rt::reduce_prod_p, m, {3}, {"reduce_prod", "axis 3"});
  expect_error<xpr::index_error>(xpr::rt::reduce_max_p, m, {2},
                                 {"reduce_max", "axis 2", "rank 2", "0 <= axis < 2"});
  expect_error<xpr::index_error>(xpr::rt::reduce_min_p, m, {-1}, {"axis -1", "rank 2"});
  expect_error<xpr::value_error>(xpr::rt::reduce_sum_p, m, {1, 1},
                                 {"distinct axes", "axis 1 more than once"});
  try {
    xpr::rt::bind(xpr::rt::reduce_sum_p, std::vector<Array>{m, m}, {{"axes", Axes{0}}});
    ADD_FAILURE() << "expected type_error";
  } catch (const xpr::type_error& e) {
    EXPECT_NE(std::string(e.what()).find("expected 1 operand, found 2"), std::string::npos);
  }
}

}  // namespace test_prims_reduce
