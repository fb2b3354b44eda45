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

// The two-pass variance of `v` with divisor N - ddof, in long double.
double reference_var(const std::vector<double>& v, int ddof) {
  long double m = 0;
  for (double e : v) m += e;
  m /= static_cast<long double>(v.size());
  long double s = 0;
  for (double e : v) s += (e - m) * (e - m);
  return static_cast<double>(s / static_cast<long double>(static_cast<int>(v.size()) - ddof));
}

TEST(NumpyReductions, VarAndStdAgainstTwoPassLoops) {
  // m = [[1, 5, -2], [4, 0, 3]]: columns, rows, everything, with ddof 0 and 1.
  for (DType dtype : {xpr::int32, xpr::int64, xpr::float32, xpr::float64}) {
    SCOPED_TRACE(std::string(xpr::core::name(dtype)));
    Array m = make(dtype, m_values, Shape{2, 3});
    const DType want = dtype == xpr::float32 ? xpr::float32 : xpr::float64;
    const double tol = dtype == xpr::float32 ? 1e-6 : 1e-15;
    for (int ddof : {0, 1}) {
      SCOPED_TRACE(ddof);
      Array all = xpr::var(m, {}, ddof);
      EXPECT_EQ(all.dtype(), want);
      EXPECT_EQ(all.shape(), Shape{});
      EXPECT_NEAR(all.item<double>(), reference_var(m_values, ddof), tol * 10);
      EXPECT_NEAR(xpr::std(m, {}, ddof).item<double>(), std::sqrt(reference_var(m_values, ddof)),
                  tol * 10);
      std::vector<double> rows = xpr::var(m, 1, ddof).to_vector<double>();
      std::vector<double> cols = xpr::var(m, 0, ddof).to_vector<double>();
      ASSERT_EQ(rows.size(), 2u);
      ASSERT_EQ(cols.size(), 3u);
      EXPECT_NEAR(rows[0], reference_var({1, 5, -2}, ddof), tol * 20);
      EXPECT_NEAR(rows[1], reference_var({4, 0, 3}, ddof), tol * 20);
      for (std::size_t j = 0; j < 3; ++j)
        EXPECT_NEAR(cols[j], reference_var({m_values[j], m_values[3 + j]}, ddof), tol * 20) << j;
    }
    // keepdims comes after ddof, and keeps the reduced axes as size 1.
    EXPECT_EQ(xpr::var(m, 1, 0, true).shape(), (Shape{2, 1}));
    EXPECT_EQ(xpr::std(m, {0, 1}, 0, true).shape(), (Shape{1, 1}));
    EXPECT_EQ(xpr::var(m, -1).to_vector<double>(), xpr::var(m, 1).to_vector<double>());
  }
  // Bools are variables of 0 and 1: the Bernoulli variance p (1 - p).
  Array b = make(xpr::bool_, {1, 1, 0, 1}, Shape{4});
  EXPECT_EQ(xpr::var(b).dtype(), xpr::float64);
  EXPECT_DOUBLE_EQ(xpr::var(b).item<double>(), 0.75 * 0.25);
  // No axes: every element is its own mean.
  EXPECT_EQ(xpr::var(make(xpr::float64, m_values, Shape{2, 3}), Axes{}).to_vector<double>(),
            std::vector<double>(6, 0.0));
  // A large offset does not cancel the deviations (two passes, as jnp.var computes).
  Array shifted = make(xpr::float64, {1e9 + 4, 1e9 + 7, 1e9 + 13, 1e9 + 16}, Shape{4});
  EXPECT_DOUBLE_EQ(xpr::var(shifted).item<double>(), 22.5);
  EXPECT_THROW(xpr::var(make(xpr::float64, m_values, Shape{2, 3}), 2), xpr::index_error);
}

TEST(NumpyReductions, VarIsNanWhereNoDegreesOfFreedomRemain) {
  // jnp.var: N - ddof <= 0 gives NaN (not inf, not a negative variance), and no gradient.
  Array x = make(xpr::float64, {1, 2, 4}, Shape{3});
  for (int ddof : {3, 4}) {
    EXPECT_TRUE(std::isnan(xpr::var(x, {}, ddof).item<double>())) << ddof;
    EXPECT_TRUE(std::isnan(xpr::std(x, 0, ddof).item<double>())) << ddof;
    auto f = [ddof](const Array& a) { return xpr::var(a, {}, ddof); };
    EXPECT_EQ(xpr::grad(f)(x).to_vector<double>(), std::vector<double>(3, 0.0));
  }
  EXPECT_TRUE(std::isnan(xpr::var(make(xpr::float64, {}, Shape{0})).item<double>()));
  // One element, ddof 0: variance 0.
  EXPECT_EQ(xpr::var(make(xpr::float64, {5}, Shape{1})).item<double>(), 0.0);
}

TEST(NumpyReductions, VarAndStdDerivatives) {
  const std::vector<double> v{0.5, -1.25, 2.0, 3.5, 0.25};
  const double n = static_cast<double>(v.size());
  double mu = 0;
  for (double e : v) mu += e;
  mu /= n;
  Array x = make(xpr::float64, v, Shape{5});
  for (int ddof : {0, 1}) {
    SCOPED_TRACE(ddof);
    const double var = reference_var(v, ddof);
    // d var / dx_i = 2 (x_i - mean) / (N - ddof); d std / dx_i = (x_i - mean) / ((N - ddof) std).
    std::vector<double> gv =
        xpr::grad([ddof](const Array& a) { return xpr::var(a, {}, ddof); })(x).to_vector<double>();
    std::vector<double> gs =
        xpr::grad([ddof](const Array& a) { return xpr::std(a, {}, ddof); })(x).to_vector<double>();
    for (std::size_t i = 0; i < v.size(); ++i) {
      EXPECT_NEAR(gv[i], 2 * (v[i] - mu) / (n - ddof), 1e-14) << i;
      EXPECT_NEAR(gs[i], (v[i] - mu) / ((n - ddof) * std::sqrt(var)), 1e-14) << i;
    }
    // Hessian of the variance: 2 / (N - ddof) (I - 1 1^T / N), constant.
    std::vector<double> h =
        xpr::hessian([ddof](const Array& a) { return xpr::var(a, {}, ddof); })(x)
            .to_vector<double>();
    for (std::size_t i = 0; i < 5; ++i)
      for (std::size_t j = 0; j < 5; ++j)
        EXPECT_NEAR(h[i * 5 + j], 2 / (n - ddof) * ((i == j ? 1.0 : 0.0) - 1 / n), 1e-14);
  }
  // Equal elements: the variance's gradient is 0, the standard deviation's NaN (sqrt at 0), as
  // in JAX.
  Array flat = make(xpr::float64, {2, 2, 2}, Shape{3});
  EXPECT_EQ(xpr::grad([](const Array& a) { return xpr::var(a); })(flat).to_vector<double>(),
            std::vector<double>(3, 0.0));
  EXPECT_TRUE(std::isnan(
      xpr::grad([](const Array& a) { return xpr::std(a); })(flat).to_vector<double>()[0]));
}

TEST(NumpyReductions, StandardizingColumnsAsAUserWritesIt) {
  // z = (x - mean) / std per column, under vmap over a batch of matrices, jit, and grad of a
  // loss of z: against loops and central differences.
  const std::vector<double> data{0.3, 1.7, -0.4, 2.2, 0.9, 0.1, -1.3, 0.8, 1.5, 0.6, -0.2, 2.9};
  Array x = make(xpr::float64, data, Shape{4, 3});
  auto standardize = [](const Array& a) {
    return (a - xpr::mean(a, 0, true)) / xpr::std(a, 0, 0, true);
  };
  std::vector<double> z = standardize(x).to_vector<double>();
  for (std::size_t j = 0; j < 3; ++j) {
    std::vector<double> col{data[j], data[3 + j], data[6 + j], data[9 + j]};
    double mu = (col[0] + col[1] + col[2] + col[3]) / 4;
    double sd = std::sqrt(reference_var(col, 0));
    for (std::size_t i = 0; i < 4; ++i) EXPECT_NEAR(z[i * 3 + j], (col[i] - mu) / sd, 1e-14);
  }
  // jit and vmap agree with eager.
  EXPECT_EQ(xpr::jit(standardize)(x).to_vector<double>(), z);
  Array batch = xpr::stack({x, x * 2.0 + 1.0});
  std::vector<double> zb = xpr::vmap(standardize)(batch).to_vector<double>();
  ASSERT_EQ(zb.size(), 24u);
  for (std::size_t i = 0; i < 12; ++i) {
    EXPECT_NEAR(zb[i], z[i], 1e-14);
    EXPECT_NEAR(zb[12 + i], z[i], 1e-14);  // standardizing removes an affine map
  }
  // grad of sum(w * z) by central differences.
  Array w = make(xpr::float64, {1, -2, 0.5, 3, 1, -1, 0.25, 2, -0.5, 1, 1, 4}, Shape{4, 3});
  auto loss = [&](const Array& a) { return xpr::sum(w * standardize(a)); };
  std::vector<double> g = xpr::grad(loss)(x).to_vector<double>();
  std::vector<double> gj = xpr::jit(xpr::grad(loss))(x).to_vector<double>();
  for (std::size_t k = 0; k < data.size(); ++k) {
    std::vector<double> up = data, down = data;
    up[k] += 1e-6;
    down[k] -= 1e-6;
    double fd = (loss(make(xpr::float64, up, Shape{4, 3})).item<double>() -
                 loss(make(xpr::float64, down, Shape{4, 3})).item<double>()) /
                2e-6;
    EXPECT_NEAR(g[k], fd, 1e-7) << k;
    EXPECT_NEAR(gj[k], g[k], 1e-12) << k;
  }
}

TEST(NumpyReductions, VarPrintsAsJnpVarTracesIt) {
  Array m = make(xpr::float32, m_values, Shape{2, 3});
  const std::string text =
      xpr::pretty_print(xpr::make_jaxpr([](const Array& x) { return xpr::var(x, 1); })(m).jaxpr);
  // jnp.var: the mean with kept axes, the deviations squared (`square`, as current JAX binds
  // lax.square), summed, divided by the count.
  for (const char* part : {"reduce_sum[axes=(1,)]", "broadcast_in_dim", "sub", "square", "div"})
    EXPECT_NE(text.find(part), std::string::npos) << part << "\n" << text;
}

TEST(NumpyReductions, AnyAndAll) {
  // m = [[1, 5, -2], [4, 0, 3]]: one zero, at (1, 1).
  for (DType dtype : {xpr::bool_, xpr::int32, xpr::int64, xpr::float32, xpr::float64}) {
    SCOPED_TRACE(std::string(xpr::core::name(dtype)));
    Array m = make(dtype, m_values, Shape{2, 3});
    EXPECT_EQ(xpr::any(m).dtype(), xpr::bool_);
    EXPECT_TRUE(xpr::any(m).item<bool>());
    // The zero at (1, 1) (false in the bool array) makes `all` false.
    EXPECT_FALSE(xpr::all(m).item<bool>());
    EXPECT_EQ(xpr::all(m, 1).to_vector<bool>(), (std::vector<bool>{true, false}));
    EXPECT_EQ(xpr::all(m, 0).to_vector<bool>(), (std::vector<bool>{true, false, true}));
    EXPECT_EQ(xpr::any(m, 0, true).shape(), (Shape{1, 3}));
    EXPECT_EQ(xpr::all(m, {0, 1}, true).shape(), (Shape{1, 1}));
  }
  // Over nothing: any is false, all is true (jnp's identities).
  Array e = make(xpr::float64, {}, Shape{0, 2});
  EXPECT_FALSE(xpr::any(e).item<bool>());
  EXPECT_TRUE(xpr::all(e).item<bool>());
  EXPECT_EQ(xpr::all(e, 0).to_vector<bool>(), (std::vector<bool>{true, true}));
  // NaN is nonzero.
  Array n = make(xpr::float64, {std::numeric_limits<double>::quiet_NaN(), 0}, Shape{2});
  EXPECT_TRUE(xpr::any(n).item<bool>());
  EXPECT_FALSE(xpr::all(n).item<bool>());
  EXPECT_TRUE(xpr::all(n(xpr::range(0, 1))).item<bool>());
  // As the ambiguous-truth-value message advises, in a C++ condition; under jit and vmap.
  Array x = make(xpr::float64, {0.5, 2.0, -1.0}, Shape{3});
  try {
    if (x > 0) ADD_FAILURE() << "an array of three converted to bool";
  } catch (const xpr::type_error& err) {
    EXPECT_NE(std::string(err.what()).find("xpr::any or xpr::all"), std::string::npos);
  }
  EXPECT_TRUE(static_cast<bool>(xpr::any(x > 1.5)));
  EXPECT_FALSE(static_cast<bool>(xpr::all(x > 0)));
  auto both = [](const Array& v) { return std::make_tuple(xpr::any(v > 1.0), xpr::all(v > -2.0)); };
  auto [ja, jb] = xpr::jit(both)(x);
  EXPECT_TRUE(ja.item<bool>());
  EXPECT_TRUE(jb.item<bool>());
  Array rows = make(xpr::float64, {0.5, 2.0, -1.0, -3.0, 0.0, 0.1}, Shape{2, 3});
  EXPECT_EQ(xpr::vmap([](const Array& r) { return xpr::all(r > -2.0); })(rows).to_vector<bool>(),
            (std::vector<bool>{true, false}));
  // The index object is unchanged: x(all) is the whole axis.
  EXPECT_EQ(rows(xpr::all, 1).to_vector<double>(), (std::vector<double>{2.0, 0.0}));
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
