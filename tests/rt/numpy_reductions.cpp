// Tests of include/xpr/rt/numpy_reductions.hpp: xpr::sum, max, min and mean over all axes, one
// axis, negative axes and several axes, with keepdims, against hand-computed values and loops
// written here; jax.numpy's dtype rules (bool sums in int32, integer means in f64); errors.
// xpr::prod (rt/cumulative.hpp) likewise, and its derivatives against hand-derived ones, with
// zeros among the factors, as a user's likelihood or determinant code meets them.
#include "xpr/rt/numpy_reductions.hpp"

#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/api.hpp"

namespace test_rt_numpy_reductions {

using xpr::Array;
using xpr::DType;
using xpr::Shape;
using xpr::ShapedArray;
using xpr::rt::Axes;

Array make(DType dtype, const std::vector<double>& values, const Shape& shape) {
  xpr::rt::ArrayBuilder b(ShapedArray{shape, dtype, false});
  xpr::rt::dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    for (std::size_t i = 0; i < values.size(); ++i)
      b.data<T>()[i] = std::is_same_v<T, bool> ? values[i] != 0 : static_cast<T>(values[i]);
  });
  return std::move(b).finish();
}

// m = [[1, 5, -2],
//      [4, 0,  3]]
const std::vector<double> m_values{1, 5, -2, 4, 0, 3};

TEST(NumpyReductions, SumOverAllOneAndNegativeAxes) {
  for (DType dtype : {xpr::int32, xpr::int64, xpr::float32, xpr::float64}) {
    SCOPED_TRACE(std::string(xpr::core::name(dtype)));
    Array m = make(dtype, m_values, Shape{2, 3});
    Array all = xpr::sum(m);
    EXPECT_EQ(all.shape(), Shape{});
    EXPECT_EQ(all.dtype(), dtype == xpr::int32 ? xpr::int64 : dtype);
    EXPECT_EQ(all.item<double>(), 11.0);
    EXPECT_EQ(xpr::sum(m, 0).to_vector<double>(), (std::vector<double>{5, 5, 1}));
    EXPECT_EQ(xpr::sum(m, 1).to_vector<double>(), (std::vector<double>{4, 7}));
    EXPECT_EQ(xpr::sum(m, -1).to_vector<double>(), (std::vector<double>{4, 7}));
    EXPECT_EQ(xpr::sum(m, -2).to_vector<double>(), (std::vector<double>{5, 5, 1}));
    EXPECT_EQ(xpr::sum(m, {0, 1}).item<double>(), 11.0);
    EXPECT_EQ(xpr::sum(m, {-1, 0}).item<double>(), 11.0);
    EXPECT_EQ(xpr::sum(m, std::nullopt).item<double>(), 11.0);
    // No axes: nothing is reduced.
    EXPECT_EQ(xpr::sum(m, Axes{}).to_vector<double>(), m_values);
    // Empty braces are the default, every axis (reference.md says so).
    EXPECT_EQ(xpr::sum(m, {}).item<double>(), 11.0);
  }
}

TEST(NumpyReductions, SeveralAxesOfARank3ArrayMatchALoop) {
  std::vector<double> v(24);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((i * 7) % 10);
  Array x = make(xpr::float64, v, Shape{2, 3, 4});
  // sum over axes 0 and 2: out[j] = Σ_i Σ_k x[i, j, k]
  std::vector<double> want(3, 0.0);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k)
        want[static_cast<std::size_t>(j)] += v[static_cast<std::size_t>(i * 12 + j * 4 + k)];
  EXPECT_EQ(xpr::sum(x, {0, 2}).to_vector<double>(), want);
  EXPECT_EQ(xpr::sum(x, {2, -3}).to_vector<double>(), want);
  Array kept = xpr::sum(x, {0, 2}, true);
  EXPECT_EQ(kept.shape(), (Shape{1, 3, 1}));
  EXPECT_EQ(kept.to_vector<double>(), want);
  // max over axis 1: out[i, k] = max_j x[i, j, k]
  std::vector<double> mx;
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 4; ++k) {
      double best = -1;
      for (int j = 0; j < 3; ++j)
        best = std::max(best, v[static_cast<std::size_t>(i * 12 + j * 4 + k)]);
      mx.push_back(best);
    }
  EXPECT_EQ(xpr::max(x, 1).to_vector<double>(), mx);
  EXPECT_EQ(xpr::max(x, 1, true).shape(), (Shape{2, 1, 4}));
}

TEST(NumpyReductions, KeepDims) {
  Array m = make(xpr::float32, m_values, Shape{2, 3});
  Array s = xpr::sum(m, 1, true);
  EXPECT_EQ(s.shape(), (Shape{2, 1}));
  EXPECT_EQ(s.to_vector<double>(), (std::vector<double>{4, 7}));
  EXPECT_EQ(xpr::sum(m, std::nullopt, true).shape(), (Shape{1, 1}));
  EXPECT_EQ(xpr::min(m, 0, true).shape(), (Shape{1, 3}));
  EXPECT_EQ(xpr::mean(m, -1, true).shape(), (Shape{2, 1}));
}

TEST(NumpyReductions, MaxAndMin) {
  for (DType dtype : {xpr::int32, xpr::int64, xpr::float32, xpr::float64}) {
    Array m = make(dtype, m_values, Shape{2, 3});
    EXPECT_EQ(xpr::max(m).item<double>(), 5.0);
    EXPECT_EQ(xpr::min(m).item<double>(), -2.0);
    EXPECT_EQ(xpr::max(m, 0).to_vector<double>(), (std::vector<double>{4, 5, 3}));
    EXPECT_EQ(xpr::min(m, -1).to_vector<double>(), (std::vector<double>{-2, 0}));
    EXPECT_EQ(xpr::max(m, 0).dtype(), dtype);
  }
  // bool: any / all
  Array b = make(xpr::bool_, {1, 0, 0, 0}, Shape{2, 2});
  EXPECT_EQ(xpr::max(b, 1).to_vector<int>(), (std::vector<int>{1, 0}));
  EXPECT_EQ(xpr::min(b, 0).to_vector<int>(), (std::vector<int>{0, 0}));
  EXPECT_EQ(xpr::max(b).dtype(), xpr::bool_);
}

TEST(NumpyReductions, BoolAndInt32SumsCountInInt64) {
  // jnp.sum's promote_integers with x64: the widest integer, so counts do not wrap.
  Array b = make(xpr::bool_, {1, 0, 1, 1, 1, 0}, Shape{2, 3});
  Array s = xpr::sum(b);
  EXPECT_EQ(s.dtype(), xpr::int64);
  EXPECT_FALSE(s.weak_type());
  EXPECT_EQ(s.item<int>(), 4);
  EXPECT_EQ(xpr::sum(b, 0).to_vector<int>(), (std::vector<int>{2, 1, 1}));
  const double big = 2147483647;
  Array i = make(xpr::int32, {big, 1, big}, Shape{3});
  EXPECT_EQ(xpr::sum(i).dtype(), xpr::int64);
  EXPECT_EQ(xpr::sum(i).item<std::int64_t>(), 2 * 2147483647LL + 1);
  EXPECT_EQ(xpr::prod(i).item<std::int64_t>(), 2147483647LL * 2147483647LL);
  // The cumulative ones count bools in int64 and keep int32 (jnp.cumsum).
  EXPECT_EQ(xpr::cumsum(b).dtype(), xpr::int64);
  EXPECT_EQ(xpr::cumprod(b).dtype(), xpr::int64);
  EXPECT_EQ(xpr::cumsum(i).dtype(), xpr::int32);
  // Under jit, the same types and values.
  auto both = [](const Array& v) { return std::vector<Array>{xpr::sum(v), xpr::prod(v, 0)}; };
  std::vector<Array> jitted = xpr::jit(both)(i);
  EXPECT_EQ(jitted[0].dtype(), xpr::int64);
  EXPECT_EQ(jitted[0].item<std::int64_t>(), 2 * 2147483647LL + 1);
  EXPECT_EQ(jitted[1].item<std::int64_t>(), 2147483647LL * 2147483647LL);
}

TEST(NumpyReductions, Mean) {
  Array m32 = make(xpr::float32, m_values, Shape{2, 3});
  Array mean32 = xpr::mean(m32);
  EXPECT_EQ(mean32.dtype(), xpr::float32);  // the count is weak: f32 stays f32
  EXPECT_FLOAT_EQ(mean32.item<float>(), 11.0f / 6.0f);
  EXPECT_EQ(xpr::mean(m32, 0).to_vector<float>(), (std::vector<float>{2.5f, 2.5f, 0.5f}));
  for (DType dtype : {xpr::int32, xpr::int64, xpr::bool_}) {
    Array mi = make(dtype, m_values, Shape{2, 3});
    Array r = xpr::mean(mi, 1);
    EXPECT_EQ(r.dtype(), xpr::float64);
    std::vector<double> want = dtype == xpr::bool_ ? std::vector<double>{1.0, 2.0 / 3}
                                                   // nonzero: [[1 1 1] [1 0 1]]
                                                   : std::vector<double>{4.0 / 3, 7.0 / 3};
    std::vector<double> got = r.to_vector<double>();
    ASSERT_EQ(got.size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) EXPECT_DOUBLE_EQ(got[i], want[i]);
  }
  Array x = make(xpr::float64, {1, 2, 3, 4, 5, 6, 7, 8}, Shape{2, 2, 2});
  EXPECT_EQ(xpr::mean(x, {0, 2}).to_vector<double>(), (std::vector<double>{3.5, 5.5}));
  // The mean of nothing is 0 / 0.
  EXPECT_TRUE(std::isnan(xpr::mean(make(xpr::float64, {}, Shape{0})).item<double>()));
}

TEST(NumpyReductions, EmptyArrays) {
  Array e = make(xpr::float64, {}, Shape{0, 3});
  EXPECT_EQ(xpr::sum(e).item<double>(), 0.0);
  EXPECT_EQ(xpr::sum(e, 0).to_vector<double>(), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(xpr::max(e, 1).shape(), (Shape{0}));
  EXPECT_THROW(xpr::max(e), xpr::shape_error);
  EXPECT_THROW(xpr::min(e, 0), xpr::shape_error);
}

TEST(NumpyReductions, ProdValuesDtypesAndAxes) {
  for (DType dtype : {xpr::int32, xpr::int64, xpr::float32, xpr::float64}) {
    SCOPED_TRACE(std::string(xpr::core::name(dtype)));
    Array m = make(dtype, m_values, Shape{2, 3});
    EXPECT_EQ(xpr::prod(m).dtype(), dtype == xpr::int32 ? xpr::int64 : dtype);
    EXPECT_EQ(xpr::prod(m).item<double>(), 0.0);
    EXPECT_EQ(xpr::prod(m, 0).to_vector<double>(), (std::vector<double>{4, 0, -6}));
    EXPECT_EQ(xpr::prod(m, -1).to_vector<double>(), (std::vector<double>{-10, 0}));
    EXPECT_EQ(xpr::prod(m, 1, true).shape(), (Shape{2, 1}));
    EXPECT_EQ(xpr::prod(m, Axes{}).to_vector<double>(), m_values);
  }
  // Bools multiply in int64 (jnp.prod's promote_integers); nothing multiplies to 1.
  Array b = make(xpr::bool_, {1, 1, 0, 1}, Shape{2, 2});
  EXPECT_EQ(xpr::prod(b).dtype(), xpr::int64);
  EXPECT_EQ(xpr::prod(b, 1).to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 0}));
  EXPECT_EQ(xpr::prod(make(xpr::float64, {}, Shape{0, 3}), 0).to_vector<double>(),
            (std::vector<double>{1, 1, 1}));
  EXPECT_THROW(xpr::prod(make(xpr::float64, m_values, Shape{2, 3}), 2), xpr::index_error);
  EXPECT_THROW(xpr::prod(make(xpr::float64, m_values, Shape{2, 3}), {0, -2}), xpr::value_error);
}

TEST(NumpyReductions, ProdDerivativesAreTheProductsOfTheOtherFactors) {
  auto f = [](const Array& x) { return xpr::prod(x); };
  auto at = [](std::vector<double> v) {
    return make(xpr::float64, v, Shape{static_cast<std::int64_t>(v.size())});
  };
  // d/dx_i prod(x) = prod_{j != i} x_j, also where factors are zero (no division).
  EXPECT_EQ(xpr::grad(f)(at({2, 3, 5, 7})).to_vector<double>(),
            (std::vector<double>{105, 70, 42, 30}));
  EXPECT_EQ(xpr::grad(f)(at({2, 0, 5, 7})).to_vector<double>(), (std::vector<double>{0, 70, 0, 0}));
  EXPECT_EQ(xpr::grad(f)(at({2, 0, 0, 7})).to_vector<double>(), (std::vector<double>(4, 0.0)));
  EXPECT_EQ(xpr::grad(f)(at({-4})).to_vector<double>(), (std::vector<double>{1}));
  // Second derivatives: d2/dx_i dx_j = prod of the factors but i and j (0 on the diagonal).
  EXPECT_EQ(xpr::hessian(f)(at({2, 3, 5})).to_vector<double>(),
            (std::vector<double>{0, 5, 3, 5, 0, 2, 3, 2, 0}));
  EXPECT_EQ(xpr::hessian(f)(at({2, 0, 5})).to_vector<double>(),
            (std::vector<double>{0, 5, 0, 5, 0, 2, 0, 2, 0}));
  // Over an axis, forward and reverse: row i's product depends on row i only.
  Array m = make(xpr::float64, {1, 2, 3, 4, 0, 6}, Shape{2, 3});
  Array t = make(xpr::float64, {1, 0, 0, 0, 1, 1}, Shape{2, 3});
  auto rows = [](const Array& x) { return xpr::prod(x, 1); };
  auto [y, dy] = xpr::jvp(rows, std::tuple{m}, std::tuple{t});
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{6, 0}));
  EXPECT_EQ(dy.to_vector<double>(), (std::vector<double>{6, 4 * 6 + 4 * 0}));
  EXPECT_EQ(xpr::jacrev(rows)(m).to_vector<double>(),
            (std::vector<double>{6, 3, 2, 0, 0, 0, 0, 0, 0, 0, 24, 0}));
  // A log-likelihood of independent factors, written as a user would: against the closed form
  // d/dx_i log(prod(x)) = 1 / x_i.
  Array p = make(xpr::float64, {0.5, 0.25, 0.8, 0.1}, Shape{4});
  std::vector<double> g =
      xpr::grad([](const Array& x) { return xpr::log(xpr::prod(x)); })(p).to_vector<double>();
  const std::vector<double> pv{0.5, 0.25, 0.8, 0.1};
  for (std::size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], 1 / pv[i], 1e-12) << i;
  // vmap over rows equals the loop; the integer gradient is zero.
  Array batched = xpr::vmap(f)(m);
  EXPECT_EQ(batched.to_vector<double>(), (std::vector<double>{6, 0}));
  EXPECT_EQ(xpr::vmap(xpr::grad(f))(m).to_vector<double>(),
            (std::vector<double>{6, 3, 2, 0, 24, 0}));
}

TEST(NumpyReductions, ProdPrintsAsJaxDoes) {
  Array m = make(xpr::float32, m_values, Shape{2, 3});
  const std::string text =
      xpr::pretty_print(xpr::make_jaxpr([](const Array& x) { return xpr::prod(x, 1); })(m).jaxpr);
  EXPECT_NE(text.find("reduce_prod[axes=(1,)] a"), std::string::npos) << text;
  // And parses back to the same computation.
  xpr::ClosedJaxpr parsed = xpr::parse_jaxpr(text);
  EXPECT_EQ(xpr::eval_jaxpr(parsed, {m})[0].to_vector<double>(), (std::vector<double>{-10, 0}));
}

template <class E>
void expect_error(auto f, std::initializer_list<const char*> parts) {
  try {
    f();
    ADD_FAILURE() << "expected an exception";
  } catch (const E& e) {
    std::string msg = e.what();
    for (const char* part : parts) EXPECT_NE(msg.find(part), std::string::npos) << msg;
  }
}

TEST(NumpyReductions, Errors) {
  Array m = make(xpr::float64, m_values, Shape{2, 3});
  expect_error<xpr::index_error>([&] { xpr::sum(m, 2); },
                                 {"sum:", "axis 2", "rank 2", "-2 <= axis < 2"});
  // A rank-0 array has no axes (the range would read "-0 <= axis < 0").
  expect_error<xpr::index_error>([&] { xpr::prod(xpr::Array(2.0), 0); },
                                 {"prod:", "axis 0", "rank 0", "has no axes"});
  expect_error<xpr::index_error>([&] { xpr::max(m, -3); }, {"max:", "axis -3"});
  expect_error<xpr::index_error>([&] { xpr::mean(m, {0, 5}); }, {"mean:", "axis 5"});
  expect_error<xpr::value_error>(
      [&] {
        xpr::min(m, {1, -1});
      },
      {"min:", "distinct axes", "axis 1"});
  expect_error<xpr::shape_error>(
      [&] {
        xpr::max(make(xpr::int32, {}, Shape{2, 0}), 1);
      },
      {"zero-size array to reduction operation max"});
}

}  // namespace test_rt_numpy_reductions
