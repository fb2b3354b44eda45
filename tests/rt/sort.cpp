// SPDX-License-Identifier: MIT
// sort, argsort, sort_key_val and the sort primitive: values against std::stable_sort per row in
// every dtype and along every axis (NaN last, -0 equal to 0, ties in order), derivatives against
// the permutation and central differences, vmap against the loop, jit against eager, the jaxpr as
// JAX prints it (and parsed back), errors; and programs written as users write them (a median, a
// trimmed mean, a quantile, ranking by a key).
#include "xpr/rt/sort.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/api.hpp"

namespace test_rt_sort {

using xpr::Array;
using xpr::DType;
using xpr::Shape;

Array make(DType dtype, const std::vector<double>& values, const Shape& shape) {
  return xpr::astype(xpr::reshape(xpr::array(values), shape), dtype);
}

/// The reference order of one row: stable, NaN last, -0 equal to 0.
std::vector<std::size_t> reference_order(const std::vector<double>& row) {
  std::vector<std::size_t> idx(row.size());
  std::iota(idx.begin(), idx.end(), std::size_t{0});
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
    if (std::isnan(row[a])) return false;
    if (std::isnan(row[b])) return true;
    return row[a] < row[b];
  });
  return idx;
}

/// Checks sort and argsort of a row-major 3x4 matrix along both axes against the reference.
void check_matrix(DType dtype, const std::vector<double>& values) {
  SCOPED_TRACE(std::string(xpr::core::name(dtype)));
  const Array m = make(dtype, values, Shape{3, 4});
  // What the elements are once stored in the dtype (bools become 0 and 1, f32 rounds).
  const std::vector<double> stored = m.to_vector<double>();
  for (std::int64_t axis : {0, 1, -1, -2}) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    const std::size_t a =
        axis < 0 ? static_cast<std::size_t>(axis + 2) : static_cast<std::size_t>(axis);
    const std::size_t n = a == 0 ? 3 : 4, rows = a == 0 ? 4 : 3;
    const Array s = xpr::sort(m, axis);
    const Array i = xpr::argsort(m, axis);
    EXPECT_EQ(s.dtype(), dtype);
    EXPECT_EQ(i.dtype(), DType::int64);
    EXPECT_EQ(s.shape(), (Shape{3, 4}));
    const std::vector<double> sv = s.to_vector<double>();
    const std::vector<std::int64_t> iv = i.to_vector<std::int64_t>();
    for (std::size_t r = 0; r < rows; ++r) {
      auto at = [&](std::size_t k) { return a == 0 ? k * 4 + r : r * 4 + k; };
      std::vector<double> row;
      for (std::size_t k = 0; k < n; ++k) row.push_back(stored[at(k)]);
      const std::vector<std::size_t> order = reference_order(row);
      for (std::size_t k = 0; k < n; ++k) {
        const double want = row[order[k]];
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(sv[at(k)])) << r << "," << k;
        } else {
          EXPECT_EQ(sv[at(k)], want) << r << "," << k;
          EXPECT_EQ(std::signbit(sv[at(k)]), std::signbit(want)) << r << "," << k;
        }
        EXPECT_EQ(iv[at(k)], static_cast<std::int64_t>(order[k])) << r << "," << k;
      }
    }
    // take_along_axis by argsort is sort (NaN compared as NaN).
    const std::vector<double> taken = xpr::take_along_axis(m, i, axis).to_vector<double>();
    for (std::size_t k = 0; k < taken.size(); ++k)
      EXPECT_TRUE(taken[k] == sv[k] || (std::isnan(taken[k]) && std::isnan(sv[k]))) << k;
  }
}

TEST(Sort, ValuesAndIndicesAgainstStableSortInEveryDtype) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  // Ties, signed zeros, infinities and NaNs in rows and columns.
  const std::vector<double> floats{3, nan, -0.0, 0.0, -inf, 2, 2, nan, 0.0, -0.0, inf, -1.5};
  check_matrix(DType::float64, floats);
  check_matrix(DType::float32, floats);
  const std::vector<double> ints{7, -3, 7, 0, -2147483648.0, 5, 5, 1, 2, 2, -3, 9};
  check_matrix(DType::int32, ints);
  check_matrix(DType::int64, ints);
  check_matrix(DType::bool_, {1, 0, 1, 0, 0, 0, 1, 1, 1, 0, 0, 1});
}

TEST(Sort, FlattenedDescendingAndEmpty) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Array m = make(DType::float64, {4, 1, nan, 3, 1, 2}, Shape{2, 3});
  // axis = None: the flattened array.
  const std::vector<double> flat = xpr::sort(m, std::nullopt).to_vector<double>();
  ASSERT_EQ(flat.size(), 6u);
  EXPECT_EQ(std::vector<double>(flat.begin(), flat.begin() + 5),
            (std::vector<double>{1, 1, 2, 3, 4}));
  EXPECT_TRUE(std::isnan(flat[5]));
  EXPECT_EQ(xpr::argsort(m, std::nullopt).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{1, 4, 5, 3, 0, 2}));
  // Descending: the ascending order reversed (NaN first, as in JAX); argsort keeps equal
  // elements in their order.
  const std::vector<double> down = xpr::sort(m, 1, true).to_vector<double>();
  EXPECT_TRUE(std::isnan(down[0]));
  EXPECT_EQ(std::vector<double>(down.begin() + 1, down.end()),
            (std::vector<double>{4, 1, 3, 2, 1}));
  const Array ties = xpr::array({1.0, 3.0, 1.0, 3.0, 2.0});
  EXPECT_EQ(xpr::argsort(ties, -1, true).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{1, 3, 4, 0, 2}));
  EXPECT_EQ(xpr::argsort(ties).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{0, 2, 4, 1, 3}));
  // Empty rows sort to empty rows; a length-1 axis is the identity.
  EXPECT_EQ(xpr::sort(make(DType::float64, {}, Shape{0, 3}), 0).shape(), (Shape{0, 3}));
  EXPECT_EQ(xpr::argsort(make(DType::float64, {}, Shape{3, 0})).shape(), (Shape{3, 0}));
  EXPECT_EQ(xpr::sort(m, 0).shape(), (Shape{2, 3}));
  EXPECT_EQ(xpr::argsort(make(DType::float64, {5, 6}, Shape{2, 1}), 1).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{0, 0}));
}

TEST(Sort, SortKeyValAndSeveralKeys) {
  // Ranking names by score, written as a user would: values follow their keys; equal keys keep
  // their order.
  const Array scores = xpr::array({0.5, 0.9, 0.1, 0.9, 0.3});
  const Array ids = xpr::array(
      {std::int64_t{10}, std::int64_t{11}, std::int64_t{12}, std::int64_t{13}, std::int64_t{14}});
  auto [sorted_scores, sorted_ids] = xpr::sort_key_val(scores, ids);
  EXPECT_EQ(sorted_scores.to_vector<double>(), (std::vector<double>{0.1, 0.3, 0.5, 0.9, 0.9}));
  EXPECT_EQ(sorted_ids.to_vector<std::int64_t>(), (std::vector<std::int64_t>{12, 14, 10, 11, 13}));
  // Two keys (lax.sort with num_keys=2): by the first, ties broken by the second; the third
  // operand follows.
  const Array k0 = xpr::array({2, 1, 2, 1, 2});
  const Array k1 = xpr::array({0.5, 0.7, -1.0, 0.2, 0.5});
  const Array v = xpr::array({0.0, 1.0, 2.0, 3.0, 4.0});
  xpr::rt::Arrays out = xpr::rt::bind(
      xpr::rt::sort_p, xpr::rt::Arrays{k0, k1, v},
      {{"dimension", std::int64_t{0}}, {"is_stable", true}, {"num_keys", std::int64_t{2}}});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].to_vector<int>(), (std::vector<int>{1, 1, 2, 2, 2}));
  EXPECT_EQ(out[1].to_vector<double>(), (std::vector<double>{0.2, 0.7, -1.0, 0.5, 0.5}));
  EXPECT_EQ(out[2].to_vector<double>(), (std::vector<double>{3, 1, 2, 0, 4}));
}

TEST(Sort, LexsortAndTopK) {
  // jnp.lexsort's docstring examples: the last key is the primary one.
  const Array key1 = xpr::array({4, 2, 3, 2, 5});
  const Array key2 = xpr::array({2, 1, 1, 2, 2});
  EXPECT_EQ(xpr::lexsort({key1}).to_vector<std::int64_t>(),
            xpr::argsort(key1).to_vector<std::int64_t>());
  EXPECT_EQ(xpr::lexsort({key1, key2}).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{1, 2, 3, 0, 4}));
  const Array m1 = xpr::array(std::vector<int>{2, 4, 2, 3, 3, 1, 2, 2}, {2, 4});
  const Array m2 = xpr::array(std::vector<int>{1, 2, 1, 3, 2, 1, 2, 1}, {2, 4});
  EXPECT_EQ(xpr::lexsort({m1, m2}).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{0, 2, 1, 3, 1, 3, 2, 0}));
  EXPECT_EQ(xpr::lexsort({m1, m2}, 0).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{0, 1, 0, 1, 1, 0, 1, 0}));
  EXPECT_THROW(xpr::lexsort({}), xpr::type_error);
  // Rank-0 keys: index 0, as jnp.lexsort returns (examiner M).
  const Array r0 = xpr::lexsort({xpr::Array(1.0)});
  EXPECT_EQ(r0.ndim(), 0u);
  EXPECT_EQ(r0.dtype(), DType::int64);
  EXPECT_EQ(r0.item<std::int64_t>(), 0);
  EXPECT_THROW(xpr::lexsort({key1, xpr::array({1, 2})}), xpr::shape_error);
  // top_k: the largest first, ties by index, int32 indices; rows of a matrix independently.
  const Array x = xpr::array({1.0, 7.0, 3.0, 7.0, -2.0});
  auto [values, indices] = xpr::top_k(x, 3);
  EXPECT_EQ(values.to_vector<double>(), (std::vector<double>{7, 7, 3}));
  EXPECT_EQ(indices.dtype(), DType::int32);
  EXPECT_EQ(indices.to_vector<int>(), (std::vector<int>{1, 3, 2}));
  const Array m = xpr::array(std::vector<double>{5, 1, 4, 2, 3, 0, 9, 8}, {2, 4});
  auto [mv, mi] = xpr::top_k(m, 2);
  EXPECT_EQ(mv.shape(), (Shape{2, 2}));
  EXPECT_EQ(mv.to_vector<double>(), (std::vector<double>{5, 4, 9, 8}));
  EXPECT_EQ(mi.to_vector<int>(), (std::vector<int>{0, 2, 2, 3}));
  EXPECT_EQ(xpr::top_k(x, 0).first.shape(), (Shape{0}));
  EXPECT_THROW(xpr::top_k(x, 6), xpr::value_error);
  EXPECT_THROW(xpr::top_k(x, -1), xpr::value_error);
  EXPECT_THROW(xpr::top_k(xpr::Array(1.0), 1), xpr::shape_error);
  // The gradient of the sum of the top 2 is one-hot on the chosen elements.
  EXPECT_EQ(xpr::grad([](const Array& a) { return xpr::sum(xpr::top_k(a, 2).first); })(
                xpr::array({0.5, 3.0, -1.0, 2.0}))
                .to_vector<double>(),
            (std::vector<double>{0, 1, 0, 1}));
}

TEST(Sort, DerivativesFollowThePermutation) {
  const std::vector<double> xv{0.3, -1.2, 2.5, 0.7, -0.4};
  const Array x = xpr::array(xv);
  const Array w = xpr::array({1.0, 2.0, 3.0, 4.0, 5.0});
  // sorted order of x: -1.2 (1), -0.4 (4), 0.3 (0), 0.7 (3), 2.5 (2)
  const std::vector<std::int64_t> perm{1, 4, 0, 3, 2};
  auto f = [&](const Array& a) { return xpr::sum(w * xpr::sort(a)); };
  // d/dx_perm[k] = w_k.
  std::vector<double> want(5);
  for (std::size_t k = 0; k < 5; ++k) want[static_cast<std::size_t>(perm[k])] = k + 1.0;
  EXPECT_EQ(xpr::grad(f)(x).to_vector<double>(), want);
  EXPECT_EQ(xpr::jit(xpr::grad(f))(x).to_vector<double>(), want);
  // jvp: the tangent permuted with the values.
  const Array t = xpr::array({10.0, 20.0, 30.0, 40.0, 50.0});
  auto [y, dy] =
      xpr::jvp([](const Array& a) { return xpr::sort(a); }, std::tuple{x}, std::tuple{t});
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{-1.2, -0.4, 0.3, 0.7, 2.5}));
  EXPECT_EQ(dy.to_vector<double>(), (std::vector<double>{20, 50, 10, 40, 30}));
  // Descending, and a nonlinear loss: against central differences.
  auto g = [&](const Array& a) { return xpr::sum(xpr::sin(xpr::sort(a * a, -1, true)) * w); };
  const std::vector<double> grad = xpr::grad(g)(x).to_vector<double>();
  for (std::size_t k = 0; k < 5; ++k) {
    std::vector<double> up = xv, down = xv;
    up[k] += 1e-6;
    down[k] -= 1e-6;
    const double fd =
        (g(xpr::array(up)).item<double>() - g(xpr::array(down)).item<double>()) / 2e-6;
    EXPECT_NEAR(grad[k], fd, 1e-7) << k;
  }
  // Second order: the Hessian of sum(w * sort(x)^2) is diag(2 w_rank(i)).
  const std::vector<double> h =
      xpr::hessian([&](const Array& a) { return xpr::sum(w * xpr::square(xpr::sort(a))); })(x)
          .to_vector<double>();
  for (std::size_t i = 0; i < 5; ++i)
    for (std::size_t j = 0; j < 5; ++j)
      EXPECT_EQ(h[i * 5 + j], i == j ? 2 * want[i] : 0.0) << i << "," << j;
  // sort_key_val: the values' gradient goes back to where each value came from; the keys get
  // none through the values.
  auto kv = [&](const Array& keys, const Array& vals) {
    return xpr::sum(w * xpr::sort_key_val(keys, vals).second);
  };
  auto [gk, gv] = xpr::grad<0, 1>(kv)(x, t);
  EXPECT_EQ(gk.to_vector<double>(), std::vector<double>(5, 0.0));
  EXPECT_EQ(gv.to_vector<double>(), want);
}

TEST(Sort, VmapMatchesTheLoopAndJitMatchesEager) {
  const Array m = xpr::array(std::vector<double>{3, 1, 2, -1, 9, 0, 4, 4, -2, 7, 5, 6}, {3, 4});
  for (std::int64_t in_axis : {0, 1}) {
    SCOPED_TRACE(in_axis);
    const Array batched =
        xpr::vmap([](const Array& r) { return xpr::sort(r); }, std::tuple{in_axis})(m);
    const Array argb =
        xpr::vmap([](const Array& r) { return xpr::argsort(r, -1, true); }, std::tuple{in_axis})(m);
    const std::int64_t count = m.shape()[static_cast<std::size_t>(in_axis)];
    for (std::int64_t b = 0; b < count; ++b) {
      const Array row = in_axis == 0 ? m(b) : m(xpr::all, b);
      EXPECT_EQ(batched(b).to_vector<double>(), xpr::sort(row).to_vector<double>()) << b;
      EXPECT_EQ(argb(b).to_vector<std::int64_t>(),
                xpr::argsort(row, -1, true).to_vector<std::int64_t>())
          << b;
    }
  }
  // An unbatched key with batched values: sort_key_val under vmap of the values only.
  const Array keys = xpr::array({0.4, 0.1, 0.3, 0.2});
  const Array vals =
      xpr::vmap([&](const Array& v) { return xpr::sort_key_val(keys, v).second; })(m);
  for (std::int64_t b = 0; b < 3; ++b)
    EXPECT_EQ(vals(b).to_vector<double>(),
              xpr::take(m(b), xpr::array({std::int64_t{1}, std::int64_t{3}, std::int64_t{2},
                                          std::int64_t{0}}))
                  .to_vector<double>())
        << b;
  // jit agrees with eager along both axes and for argsort.
  for (std::int64_t axis : {0, 1}) {
    auto f = [axis](const Array& a) { return xpr::sort(a, axis); };
    auto g = [axis](const Array& a) { return xpr::argsort(a, axis, true); };
    EXPECT_EQ(xpr::jit(f)(m).to_vector<double>(), f(m).to_vector<double>()) << axis;
    EXPECT_EQ(xpr::jit(g)(m).to_vector<std::int64_t>(), g(m).to_vector<std::int64_t>()) << axis;
  }
}

TEST(Sort, PrintsAndParsesAsJax) {
  const Array x = xpr::astype(xpr::array({3.0, 1.0, 2.0}), DType::float32);
  const std::string text =
      xpr::pretty_print(xpr::make_jaxpr([](const Array& a) { return xpr::argsort(a); })(x).jaxpr);
  EXPECT_NE(text.find("iota[dimension=0 dtype=int64 shape=(3,)"), std::string::npos) << text;
  // The sorted keys are unused: `_`, as JAX prints a dropped result.
  EXPECT_NE(text.find("_:f32[3] c:i64[3] = sort[dimension=0 is_stable=True num_keys=1] a b"),
            std::string::npos)
      << text;
  EXPECT_EQ(xpr::eval_jaxpr(xpr::parse_jaxpr(text), {x})[0].to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{1, 2, 0}));
  // The text JAX prints for jnp.sort(x) of f32[2,3] along axis 0.
  const xpr::ClosedJaxpr jax = xpr::parse_jaxpr(
      "{ lambda ; a:f32[2,3]. let b:f32[2,3] = sort[dimension=0 is_stable=True num_keys=1] a in "
      "(b,) }");
  const Array m =
      xpr::astype(xpr::array(std::vector<double>{5, 1, 4, 2, 3, 0}, {2, 3}), DType::float32);
  EXPECT_EQ(xpr::eval_jaxpr(jax, {m})[0].to_vector<double>(),
            (std::vector<double>{2, 1, 0, 5, 3, 4}));
}

TEST(Sort, Errors) {
  EXPECT_THROW(xpr::sort(xpr::Array(1.0)), xpr::index_error);
  EXPECT_THROW(xpr::argsort(xpr::array({1.0, 2.0}), 1), xpr::index_error);
  EXPECT_THROW(xpr::sort_key_val(xpr::array({1.0, 2.0}), xpr::array({1.0, 2.0, 3.0})),
               xpr::shape_error);
  const Array v = xpr::array({1.0, 2.0});
  auto bind = [&](std::int64_t dimension, std::int64_t num_keys) {
    return xpr::rt::bind(xpr::rt::sort_p, xpr::rt::Arrays{v, v},
                         {{"dimension", dimension}, {"is_stable", true}, {"num_keys", num_keys}});
  };
  EXPECT_THROW(bind(1, 1), xpr::value_error);
  EXPECT_THROW(bind(-1, 1), xpr::value_error);
  EXPECT_THROW(bind(0, 0), xpr::value_error);
  EXPECT_THROW(bind(0, 3), xpr::value_error);
  try {
    bind(0, 3);
  } catch (const xpr::value_error& e) {
    EXPECT_NE(std::string(e.what()).find("expected num_keys in [1, 2]"), std::string::npos)
        << e.what();
  }
}

TEST(Sort, StatisticsWrittenAsUsersWriteThem) {
  const std::vector<double> data{4.2, -1.0, 3.3, 8.9, 0.5, 2.2, 7.1};
  const Array x = xpr::array(data);
  // The median of an odd count: the middle of the sorted data; its gradient is one-hot at the
  // element that is the median (3.3, index 2).
  auto median = [](const Array& a) { return xpr::sort(a)(a.shape()[0] / 2); };
  EXPECT_EQ(median(x).item<double>(), 3.3);
  EXPECT_EQ(xpr::grad(median)(x).to_vector<double>(), (std::vector<double>{0, 0, 1, 0, 0, 0, 0}));
  // A trimmed mean (drop the smallest and largest): d/dx_i = 1/5 for the kept elements.
  auto trimmed = [](const Array& a) {
    const Array s = xpr::sort(a);
    return xpr::mean(s(xpr::range(1, a.shape()[0] - 1)));
  };
  EXPECT_NEAR(trimmed(x).item<double>(), (4.2 + 3.3 + 0.5 + 2.2 + 7.1) / 5, 1e-15);
  const std::vector<double> gt = xpr::jit(xpr::grad(trimmed))(x).to_vector<double>();
  const std::vector<double> want{0.2, 0, 0.2, 0, 0.2, 0.2, 0.2};
  for (std::size_t i = 0; i < 7; ++i) EXPECT_NEAR(gt[i], want[i], 1e-15) << i;
  // A linearly interpolated quantile, q = 0.3: position 0.3 * 6 = 1.8 between sorted[1] = 0.5
  // and sorted[2] = 2.2.
  auto quantile = [](const Array& a, double q) {
    const Array s = xpr::sort(a);
    const double pos = q * static_cast<double>(a.shape()[0] - 1);
    const auto lo = static_cast<std::int64_t>(std::floor(pos));
    const double frac = pos - static_cast<double>(lo);
    return s(lo) * (1 - frac) + s(lo + 1) * frac;
  };
  EXPECT_NEAR(quantile(x, 0.3).item<double>(), 0.5 * 0.2 + 2.2 * 0.8, 1e-15);
  const std::vector<double> gq =
      xpr::grad([&](const Array& a) { return quantile(a, 0.3); })(x).to_vector<double>();
  EXPECT_NEAR(gq[4], 0.2, 1e-15);  // 0.5 is element 4
  EXPECT_NEAR(gq[5], 0.8, 1e-15);  // 2.2 is element 5
  // Top-k by argsort in a loop over rows, as a user indexes: the k largest of each row.
  const Array m = xpr::array(std::vector<double>{5, 1, 4, 2, 3, 0, 9, 8}, {2, 4});
  for (std::int64_t r = 0; r < 2; ++r) {
    const Array idx = xpr::argsort(m(r), -1, true)(xpr::range(0, 2));
    const Array top = xpr::take(m(r), idx);
    EXPECT_EQ(top.to_vector<double>(),
              r == 0 ? (std::vector<double>{5, 4}) : (std::vector<double>{9, 8}));
  }
}

/// numpy's quantile methods on a row, in long double, as the reference.
double reference_quantile(std::vector<double> row, double q, xpr::quantile_method m) {
  std::sort(row.begin(), row.end());
  const double pos = q * static_cast<double>(row.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = static_cast<std::size_t>(std::ceil(pos));
  const double w = pos - static_cast<double>(lo);
  switch (m) {
    case xpr::quantile_method::linear:
      return static_cast<double>(static_cast<long double>(row[lo]) * (1 - w) +
                                 static_cast<long double>(row[hi]) * w);
    case xpr::quantile_method::lower:
      return row[lo];
    case xpr::quantile_method::higher:
      return row[hi];
    case xpr::quantile_method::midpoint:
      return (row[lo] + row[hi]) / 2;
    case xpr::quantile_method::nearest:
      return w <= 0.5 ? row[lo] : row[hi];
  }
  return 0;
}

TEST(Quantile, MethodsAxesAndDtypesAgainstAReference) {
  const std::vector<double> data{4.5, -1.0, 3.25, 8.0, 0.5, 2.0, 7.5, -3.0, 6.0, 1.0, 5.5, 0.0};
  const Array m = xpr::array(data, {3, 4});
  using M = xpr::quantile_method;
  for (M method : {M::linear, M::lower, M::higher, M::midpoint, M::nearest})
    for (double q : {0.0, 0.1, 0.25, 0.5, 0.7, 0.9, 1.0}) {
      SCOPED_TRACE("method " + std::to_string(static_cast<int>(method)) + " q " +
                   std::to_string(q));
      // All elements, each row (axis 1), each column (axis 0).
      EXPECT_NEAR(xpr::quantile(m, q, std::nullopt, method).item<double>(),
                  reference_quantile(data, q, method), 1e-14);
      const std::vector<double> rows = xpr::quantile(m, q, 1, method).to_vector<double>();
      const std::vector<double> cols = xpr::quantile(m, q, -2, method).to_vector<double>();
      for (std::size_t r = 0; r < 3; ++r)
        EXPECT_NEAR(
            rows[r],
            reference_quantile({data[r * 4], data[r * 4 + 1], data[r * 4 + 2], data[r * 4 + 3]}, q,
                               method),
            1e-14)
            << r;
      for (std::size_t c = 0; c < 4; ++c)
        EXPECT_NEAR(cols[c], reference_quantile({data[c], data[4 + c], data[8 + c]}, q, method),
                    1e-14)
            << c;
    }
  // median and percentile are quantiles; keepdims keeps the reduced axes.
  EXPECT_EQ(xpr::median(m).item<double>(), (2.0 + 3.25) / 2);
  EXPECT_EQ(xpr::median(m, 1).to_vector<double>(), xpr::quantile(m, 0.5, 1).to_vector<double>());
  EXPECT_EQ(xpr::percentile(m, 25, 0).to_vector<double>(),
            xpr::quantile(m, 0.25, 0).to_vector<double>());
  EXPECT_EQ(xpr::median(m, 1, true).shape(), (Shape{3, 1}));
  EXPECT_EQ(xpr::median(m, std::nullopt, true).shape(), (Shape{1, 1}));
  // Integers in f64; f32 stays f32.
  const Array ints = xpr::array({3, 1, 4, 2});
  EXPECT_EQ(xpr::median(ints).dtype(), DType::float64);
  EXPECT_EQ(xpr::median(ints).item<double>(), 2.5);
  EXPECT_EQ(xpr::median(xpr::astype(m, DType::float32)).dtype(), DType::float32);
  // A NaN anywhere in the reduced elements gives NaN there (jnp.quantile); other rows unaffected.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> med =
      xpr::median(xpr::array(std::vector<double>{1, nan, 3, 4, 5, 6}, {2, 3}), 1)
          .to_vector<double>();
  EXPECT_TRUE(std::isnan(med[0]));
  EXPECT_EQ(med[1], 5);
  // Errors.
  EXPECT_THROW(xpr::quantile(m, 1.5), xpr::value_error);
  EXPECT_THROW(xpr::quantile(m, -0.1), xpr::value_error);
  EXPECT_THROW(xpr::quantile(m, nan), xpr::value_error);
  EXPECT_THROW(xpr::percentile(m, 101), xpr::value_error);
  EXPECT_THROW(xpr::median(xpr::zeros({0})), xpr::shape_error);
  EXPECT_THROW(xpr::median(m, 2), xpr::index_error);
}

TEST(Quantile, DerivativesFlowToThePickedElements) {
  // The median of an even count is the mean of the two middle elements: gradient 1/2 on each.
  const Array x = xpr::array({4.0, 1.0, 3.0, 2.0});
  EXPECT_EQ(xpr::grad([](const Array& a) { return xpr::median(a); })(x).to_vector<double>(),
            (std::vector<double>{0, 0, 0.5, 0.5}));
  // A linear quantile at q = 0.3 of 4 elements: position 0.9, weights 0.1 on the smallest and
  // 0.9 on the second smallest.
  const std::vector<double> g =
      xpr::grad([](const Array& a) { return xpr::quantile(a, 0.3); })(x).to_vector<double>();
  const std::vector<double> want{0, 0.1, 0, 0.9};
  for (std::size_t i = 0; i < 4; ++i) EXPECT_NEAR(g[i], want[i], 1e-15) << i;
  // The median absolute deviation, as a robust-statistics user writes it, under jit and vmap,
  // against a loop of the eager function.
  auto mad = [](const Array& a) { return xpr::median(xpr::abs(a - xpr::median(a))); };
  const Array rows = xpr::array(std::vector<double>{1, 2, 3, 4, 100, 5, -1, 0, 2, 8}, {2, 5});
  const std::vector<double> batched = xpr::jit(xpr::vmap(mad))(rows).to_vector<double>();
  EXPECT_EQ(batched[0], mad(rows(0)).item<double>());
  EXPECT_EQ(batched[1], mad(rows(1)).item<double>());
  EXPECT_EQ(batched[0], 1.0);  // median 3, deviations 2 1 0 1 97
}

}  // namespace test_rt_sort
