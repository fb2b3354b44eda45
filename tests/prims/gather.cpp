// Tests of the gather/scatter family (include/xpr/rt/prims/gather.hpp): evaluation against index
// formulas computed here (the layouts jax.numpy indexing produces, every dtype, every mode with
// out-of-range indices, repeated indices), the laws (jvp against finite differences, vmap against
// the loop for every batch axis placement, <vjp(ct), t> == <ct, jvp(t)>), gradients users write,
// print -> parse -> print of each primitive, and the errors.
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/api.hpp"
#include "xpr/rt/api_transformations.hpp"

#include "tests/laws/laws.hpp"
#include "tests/prims/common.hpp"

namespace test_prims_gather {

namespace rt = xpr::rt;
namespace laws = xpr::laws;
using laws::ArgSpec;
using rt::Arrays;
using rt::Axes;
using rt::BatchDims;
using rt::FlatFunction;
using rt::GatherDimensionNumbers;
using rt::GatherScatterMode;
using rt::Params;
using rt::ScatterDimensionNumbers;
using test_prims_common::expect_error;
using test_prims_common::make;
using xpr::Array;
using xpr::DType;
using xpr::Shape;
using xpr::ShapedArray;

constexpr GatherScatterMode kClip = GatherScatterMode::clip;
constexpr GatherScatterMode kFill = GatherScatterMode::fill_or_drop;
constexpr GatherScatterMode kPromise = GatherScatterMode::promise_in_bounds;
const DType all_dtypes[] = {DType::bool_, DType::int32, DType::int64, DType::float32,
                            DType::float64};
const DType floats[] = {DType::float32, DType::float64};

std::vector<double> vals(const Array& a) { return laws::values(a); }

/// `x[i]` of a vector: indices (m, 1).
const GatherDimensionNumbers kTake1{{}, {0}, {0}, {}, {}};
/// `x[idx, :]` of a matrix.
const GatherDimensionNumbers kRows{{1}, {0}, {0}, {}, {}};
/// `x[i, j]` for index pairs (m, 2) of a matrix.
const GatherDimensionNumbers kPoints{{}, {0, 1}, {0, 1}, {}, {}};
/// `take_along_axis(x, idx, axis=1)` as jax.numpy builds it: rows are a batching pair.
const GatherDimensionNumbers kAlong{{}, {1}, {1}, {0}, {0}};
/// `x.at[i].op(u)` of a vector, and `x.at[idx, :].op(u)` of a matrix.
const ScatterDimensionNumbers kPut1{{}, {0}, {0}, {}, {}};
const ScatterDimensionNumbers kPutRows{{1}, {0}, {0}, {}, {}};

/// The index an out-of-range `i` reads under clip / promise_in_bounds for a window of `size` in a
/// dimension of `n`: clamped to [0, n - size]. Empty under fill_or_drop.
std::optional<std::int64_t> ref_start(std::int64_t i, std::int64_t size, std::int64_t n,
                                      GatherScatterMode mode) {
  if (i >= 0 && i <= n - size) return i;
  if (mode == kFill) return std::nullopt;
  return std::clamp<std::int64_t>(i, 0, n - size);
}

/// JAX's default fill value, as a double.
double default_fill(DType t) {
  switch (t) {
    case DType::bool_:
      return 1;
    case DType::int32:
      return std::numeric_limits<std::int32_t>::min();
    case DType::int64:
      return static_cast<double>(std::numeric_limits<std::int64_t>::min());
    default:
      return std::nan("");
  }
}

/// Element-wise equality where NaN equals NaN.
void expect_values(const Array& a, const std::vector<double>& want, const std::string& what) {
  std::vector<double> got = vals(a);
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t k = 0; k < got.size(); ++k) {
    if (std::isnan(want[k]))
      EXPECT_TRUE(std::isnan(got[k])) << what << " element " << k;
    else
      EXPECT_EQ(got[k], want[k]) << what << " element " << k;
  }
}

std::string mode_name(GatherScatterMode m) {
  return m == kClip ? "clip" : m == kFill ? "fill_or_drop" : "promise_in_bounds";
}

// ---- gather evaluation against index formulas -------------------------------------------------

TEST(GatherImpl, VectorTakeEveryDtypeAndMode) {
  const std::vector<double> xv{3, 0, 7, 1, 5};
  const std::vector<double> iv{0, 4, 2, 2, -1, 5, 1, 100};  // repeats and out of range
  for (DType t : all_dtypes)
    for (DType it : {DType::int32, DType::int64})
      for (GatherScatterMode m : {kClip, kFill, kPromise}) {
        SCOPED_TRACE(std::string(xpr::core::name(t)) + " " + mode_name(m));
        Array x = make(t, Shape{5}, xv);
        Array i = make(it, Shape{8, 1}, iv);
        Array out = xpr::gather(x, i, kTake1, {1}, m);
        EXPECT_EQ(out.shape(), (Shape{8}));
        EXPECT_EQ(out.dtype(), t);
        std::vector<double> want;
        for (double e : iv) {
          auto s = ref_start(static_cast<std::int64_t>(e), 1, 5, m);
          double v = s ? xv[static_cast<std::size_t>(*s)] : default_fill(t);
          if (t == DType::bool_) v = v != 0;
          want.push_back(v);
        }
        expect_values(out, want, "x[i]");
      }
}

TEST(GatherImpl, ExplicitFillValue) {
  Array x = xpr::array({1.0, 2.0, 3.0});
  Array i = make(DType::int32, Shape{3, 1}, {2, 3, -1});
  expect_values(xpr::gather(x, i, kTake1, {1}, kFill, -4.5), {3, -4.5, -4.5}, "f64");
  Array xi = make(DType::int32, Shape{3}, {1, 2, 3});
  expect_values(xpr::gather(xi, i, kTake1, {1}, kFill, 9.0), {3, 9, 9}, "i32");
  expect_error<xpr::value_error>([&] { (void)xpr::gather(xi, i, kTake1, {1}, kFill, 0.5); },
                                 {"fill_value", "int32"});
}

TEST(GatherImpl, RowsOfAMatrix) {  // x[idx, :]
  for (DType t : all_dtypes) {
    SCOPED_TRACE(xpr::core::name(t));
    std::vector<double> xv(12);
    for (std::size_t k = 0; k < 12; ++k) xv[k] = static_cast<double>((k * 7) % 5);
    Array x = make(t, Shape{4, 3}, xv);
    const std::vector<double> iv{3, 0, 3, 9, -2};
    for (GatherScatterMode m : {kClip, kFill}) {
      Array out = xpr::gather(x, make(DType::int32, Shape{5, 1}, iv), kRows, {1, 3}, m);
      ASSERT_EQ(out.shape(), (Shape{5, 3}));
      std::vector<double> want;
      for (double e : iv)
        for (std::size_t c = 0; c < 3; ++c) {
          auto s = ref_start(static_cast<std::int64_t>(e), 1, 4, m);
          double v = s ? xv[static_cast<std::size_t>(*s) * 3 + c] : default_fill(t);
          want.push_back(t == DType::bool_ ? v != 0 : v);
        }
      expect_values(out, want, mode_name(m));
    }
  }
}

TEST(GatherImpl, PointsOfAMatrix) {  // x[i, j] for pairs
  std::vector<double> xv(20);
  for (std::size_t k = 0; k < 20; ++k) xv[k] = static_cast<double>(k) + 0.5;
  Array x = make(DType::float64, Shape{4, 5}, xv);
  const std::vector<double> iv{0, 0, 3, 4, 1, 2, 1, 2, 4, 0, 2, -7};
  for (GatherScatterMode m : {kClip, kFill, kPromise}) {
    Array out = xpr::gather(x, make(DType::int64, Shape{6, 2}, iv), kPoints, {1, 1}, m);
    ASSERT_EQ(out.shape(), (Shape{6}));
    std::vector<double> want;
    for (std::size_t j = 0; j < 6; ++j) {
      auto r = ref_start(static_cast<std::int64_t>(iv[2 * j]), 1, 4, m);
      auto c = ref_start(static_cast<std::int64_t>(iv[2 * j + 1]), 1, 5, m);
      want.push_back(r && c ? xv[static_cast<std::size_t>(*r * 5 + *c)] : std::nan(""));
    }
    expect_values(out, want, mode_name(m));
  }
}

TEST(GatherImpl, TakeAlongAxisWithBatchingDims) {
  std::vector<double> xv(12);
  for (std::size_t k = 0; k < 12; ++k) xv[k] = static_cast<double>(k * k);
  Array x = make(DType::float32, Shape{3, 4}, xv);
  const std::vector<double> iv{3, 0, 1, 1, 2, 0};  // (3, 2, 1)
  Array out = xpr::gather(x, make(DType::int32, Shape{3, 2, 1}, iv), kAlong, {1, 1});
  ASSERT_EQ(out.shape(), (Shape{3, 2}));
  std::vector<double> want;
  for (std::size_t r = 0; r < 3; ++r)
    for (std::size_t j = 0; j < 2; ++j)
      want.push_back(xv[r * 4 + static_cast<std::size_t>(iv[r * 2 + j])]);
  expect_values(out, want, "take_along_axis");
}

TEST(GatherImpl, WindowsClampAsAWhole) {
  // Windows of 3 columns of a (2, 6) matrix at column starts; output (m, 2, 3) with the batch
  // dimension first; a start of 5 is clamped to 3 under clip (the whole window stays inside).
  std::vector<double> xv(12);
  for (std::size_t k = 0; k < 12; ++k) xv[k] = static_cast<double>(k);
  Array x = make(DType::float64, Shape{2, 6}, xv);
  const std::vector<double> iv{0, 2, 5, -1};
  const GatherDimensionNumbers dn{{1, 2}, {}, {1}, {}, {}};
  for (GatherScatterMode m : {kClip, kFill}) {
    Array out = xpr::gather(x, make(DType::int32, Shape{4, 1}, iv), dn, {2, 3}, m);
    ASSERT_EQ(out.shape(), (Shape{4, 2, 3}));
    std::vector<double> want;
    for (double e : iv) {
      auto s = ref_start(static_cast<std::int64_t>(e), 3, 6, m);
      for (std::size_t r = 0; r < 2; ++r)
        for (std::size_t c = 0; c < 3; ++c)
          want.push_back(s ? xv[r * 6 + static_cast<std::size_t>(*s) + c] : std::nan(""));
    }
    expect_values(out, want, mode_name(m));
  }
}

TEST(GatherImpl, ExtremeIndicesAreClampedWithoutOverflow) {
  Array x = xpr::array({1.0, 2.0, 3.0});
  const double lo = -9223372036854775808.0;
  Array i = make(DType::int64, Shape{2, 1}, {lo, 9.2e18});
  expect_values(xpr::gather(x, i, kTake1, {1}, kPromise), {1, 3}, "promise");
  expect_values(xpr::gather(x, i, kTake1, {1}, kFill), {NAN, NAN}, "fill");
  Array u = xpr::array({5.0, 6.0});
  expect_values(xpr::scatter_add(x, i, u, ScatterDimensionNumbers{{}, {0}, {0}, {}, {}}), {1, 2, 3},
                "drop");
  expect_values(xpr::scatter_add(x, i, u, ScatterDimensionNumbers{{}, {0}, {0}, {}, {}}, kClip),
                {6, 2, 9}, "clip");
}

TEST(GatherImpl, EmptyIndicesAndEmptyWindows) {
  Array x = xpr::array({1.0, 2.0, 3.0});
  Array none = make(DType::int32, Shape{0, 1}, {});
  EXPECT_EQ(xpr::gather(x, none, kTake1, {1}).shape(), (Shape{0}));
  // Updates for an operand of size 0 have nowhere to go, in every mode.
  for (GatherScatterMode m : {kClip, kFill, kPromise})
    EXPECT_EQ(xpr::scatter_add(xpr::zeros({0, 2}), make(DType::int32, Shape{3, 1}, {0, -1, 4}),
                               xpr::ones({3, 2}), kPutRows, m)
                  .shape(),
              (Shape{0, 2}));
  EXPECT_EQ(
      xpr::gather(x, make(DType::int32, Shape{2, 1}, {0, 5}), {{1}, {}, {0}, {}, {}}, {0}).shape(),
      (Shape{2, 0}));
}

// ---- scatter evaluation ------------------------------------------------------------------------

/// The reference scatter of scalars into a vector: each update in order, combined by `f`.
std::vector<double> ref_scatter(std::vector<double> x, const std::vector<double>& idx,
                                const std::vector<double>& upd, GatherScatterMode m,
                                const std::function<double(double, double)>& f) {
  for (std::size_t j = 0; j < idx.size(); ++j) {
    auto s = ref_start(static_cast<std::int64_t>(idx[j]), 1, static_cast<std::int64_t>(x.size()),
                       m == kPromise ? kClip : m);
    if (s) x[static_cast<std::size_t>(*s)] = f(x[static_cast<std::size_t>(*s)], upd[j]);
  }
  return x;
}

TEST(ScatterImpl, EveryKindDtypeAndModeWithRepeatedIndices) {
  const std::vector<double> xv{1, 0, 3, 2, 1};
  const std::vector<double> iv{1, 3, 1, 6, -1, 4, 1};
  const std::vector<double> uv{2, 1, 3, 5, 1, 0, 1};
  struct Kind {
    const char* name;
    std::function<Array(const Array&, const Array&, const Array&, GatherScatterMode)> fn;
    std::function<double(double, double)> ref;
    bool numeric_only;
  };
  const std::vector<Kind> kinds = {
      {"scatter",
       [](const Array& x, const Array& i, const Array& u, GatherScatterMode m) {
         return xpr::scatter(x, i, u, kPut1, m);
       },
       [](double, double b) { return b; }, false},
      {"scatter-add",
       [](const Array& x, const Array& i, const Array& u, GatherScatterMode m) {
         return xpr::scatter_add(x, i, u, kPut1, m);
       },
       [](double a, double b) { return a + b; }, true},
      {"scatter-mul",
       [](const Array& x, const Array& i, const Array& u, GatherScatterMode m) {
         return xpr::scatter_mul(x, i, u, kPut1, m);
       },
       [](double a, double b) { return a * b; }, true},
      {"scatter-min",
       [](const Array& x, const Array& i, const Array& u, GatherScatterMode m) {
         return xpr::scatter_min(x, i, u, kPut1, m);
       },
       [](double a, double b) { return std::min(a, b); }, false},
      {"scatter-max",
       [](const Array& x, const Array& i, const Array& u, GatherScatterMode m) {
         return xpr::scatter_max(x, i, u, kPut1, m);
       },
       [](double a, double b) { return std::max(a, b); }, false},
  };
  for (const Kind& k : kinds)
    for (DType t : all_dtypes) {
      if (k.numeric_only && t == DType::bool_) continue;
      for (GatherScatterMode m : {kClip, kFill, kPromise}) {
        SCOPED_TRACE(std::string(k.name) + " " + std::string(xpr::core::name(t)) + " " +
                     mode_name(m));
        auto cast = [&](std::vector<double> v) {
          if (t == DType::bool_)
            for (double& e : v) e = e != 0;
          return v;
        };
        Array out = k.fn(make(t, Shape{5}, xv), make(DType::int32, Shape{7, 1}, iv),
                         make(t, Shape{7}, uv), m);
        EXPECT_EQ(out.dtype(), t);
        expect_values(out, ref_scatter(cast(xv), iv, cast(uv), m, k.ref), k.name);
      }
    }
}

TEST(ScatterImpl, AddRowsOfAMatrix) {  // x.at[idx, :].add(u), a segment sum of rows
  Array x = xpr::zeros({3, 2});
  Array i = make(DType::int32, Shape{4, 1}, {2, 0, 2, 2});
  Array u = make(DType::float64, Shape{4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  expect_values(xpr::scatter_add(x, i, u, kPutRows), {3, 4, 0, 0, 13, 16}, "rows");
}

TEST(ScatterImpl, BatchingDimsPairOperandAndIndexRows) {
  // put_along_axis-style: row r of the operand receives row r of the updates.
  Array x = xpr::zeros({2, 3});
  Array i = make(DType::int32, Shape{2, 2, 1}, {0, 0, 2, 1});
  Array u = make(DType::float64, Shape{2, 2}, {1, 2, 3, 4});
  expect_values(xpr::scatter_add(x, i, u, ScatterDimensionNumbers{{}, {1}, {1}, {0}, {0}}),
                {3, 0, 0, 0, 4, 3}, "along");
}

// ---- laws ---------------------------------------------------------------------------------------

/// One application with fixed parameters; `specs` gives the operands for a floating dtype.
struct Record {
  std::string name;
  FlatFunction fn;
  std::function<std::vector<ArgSpec>(DType)> specs;
};
std::ostream& operator<<(std::ostream& os, const Record& r) { return os << r.name; }

ArgSpec real(Shape s, DType d) { return {std::move(s), d, -2, 2, false, false, false}; }
/// Indices in [-1, hi]: repeats and out-of-range values.
ArgSpec idx(Shape s, double hi) { return {std::move(s), DType::int32, -1, hi, false, true, false}; }

FlatFunction gather_fn(GatherDimensionNumbers dn, Axes ss, GatherScatterMode m,
                       std::optional<double> fill = std::nullopt) {
  return [=](std::span<const Array> a) { return Arrays{xpr::gather(a[0], a[1], dn, ss, m, fill)}; };
}

template <class F>
FlatFunction scatter_fn(F f, ScatterDimensionNumbers dn, GatherScatterMode m) {
  return [=](std::span<const Array> a) { return Arrays{f(a[0], a[1], a[2], dn, m, false, false)}; };
}

/// A scatter at fixed unique indices (0, 3, 1), as a function of operand and updates only.
template <class F>
FlatFunction unique_scatter_fn(F f) {
  return [=](std::span<const Array> a) {
    Array i = make(DType::int32, Shape{3, 1}, {0, 3, 1});
    return Arrays{f(a[0], i, a[1], kPut1, kFill, false, true)};
  };
}

/// A vector of 4, five scalar updates at indices in [-1, 4].
std::vector<ArgSpec> vector_scatter(DType d) {
  return {real(Shape{4}, d), idx(Shape{5, 1}, 4), real(Shape{5}, d)};
}

// clang-format off
const std::vector<Record>& records() {
  static const std::vector<Record> table = {
    {"gather_take", gather_fn(kTake1, {1}, kPromise),
     [](DType d) { return std::vector{real(Shape{5}, d), idx(Shape{4, 1}, 5)}; }},
    {"gather_take_fill", gather_fn(kTake1, {1}, kFill, 7.0),
     [](DType d) { return std::vector{real(Shape{5}, d), idx(Shape{4, 1}, 5)}; }},
    {"gather_rows_clip", gather_fn(kRows, {1, 3}, kClip),
     [](DType d) { return std::vector{real(Shape{4, 3}, d), idx(Shape{3, 1}, 4)}; }},
    {"gather_points", gather_fn(kPoints, {1, 1}, kClip),
     [](DType d) { return std::vector{real(Shape{3, 4}, d), idx(Shape{2, 2}, 3)}; }},
    {"gather_along", gather_fn(kAlong, {1, 1}, kPromise),
     [](DType d) { return std::vector{real(Shape{2, 4}, d), idx(Shape{2, 3, 1}, 4)}; }},
    {"gather_windows", gather_fn({{1, 2}, {}, {1}, {}, {}}, {2, 2}, kFill, 0.25),
     [](DType d) { return std::vector{real(Shape{2, 4}, d), idx(Shape{3, 1}, 3)}; }},
    {"scatter_add_take", scatter_fn(xpr::scatter_add, kPut1, kFill),
     vector_scatter},
    {"scatter_add_rows_clip", scatter_fn(xpr::scatter_add, kPutRows, kClip),
     [](DType d) {
       return std::vector{real(Shape{3, 2}, d), idx(Shape{4, 1}, 3), real(Shape{4, 2}, d)};
     }},
    {"scatter_add_along", scatter_fn(xpr::scatter_add, {{}, {1}, {1}, {0}, {0}}, kFill),
     [](DType d) {
       return std::vector{real(Shape{2, 3}, d), idx(Shape{2, 2, 1}, 3), real(Shape{2, 2}, d)};
     }},
    {"scatter_repeated", scatter_fn(xpr::scatter, kPut1, kFill),
     vector_scatter},
    {"scatter_rows_clip", scatter_fn(xpr::scatter, kPutRows, kClip),
     [](DType d) {
       return std::vector{real(Shape{3, 2}, d), idx(Shape{4, 1}, 3), real(Shape{4, 2}, d)};
     }},
    {"scatter_min", scatter_fn(xpr::scatter_min, kPut1, kFill),
     vector_scatter},
    {"scatter_max_clip", scatter_fn(xpr::scatter_max, kPut1, kClip),
     vector_scatter},
    {"scatter_mul_operand", scatter_fn(xpr::scatter_mul, kPut1, kFill),
     vector_scatter},
    {"scatter_mul_unique", unique_scatter_fn(xpr::scatter_mul),
     [](DType d) { return std::vector{real(Shape{4}, d), real(Shape{3}, d)}; }},
    {"scatter_unique", unique_scatter_fn(xpr::scatter),
     [](DType d) { return std::vector{real(Shape{4}, d), real(Shape{3}, d)}; }},
  };
  return table;
}
// clang-format on

class GatherLaws : public testing::TestWithParam<Record> {};

/// scatter-mul with repeated indices has no derivative with respect to the updates (JAX raises
/// too): its jvp is checked with a zero updates tangent.
bool updates_tangent_unsupported(const Record& r) { return r.name == "scatter_mul_operand"; }

TEST_P(GatherLaws, JvpMatchesFiniteDifferences) {
  const Record& r = GetParam();
  std::uint64_t seed = 1;
  for (DType d : floats) {
    SCOPED_TRACE(xpr::core::name(d));
    for (int k = 0; k < 4; ++k) {
      laws::Rng rng(seed++);
      std::vector<ArgSpec> specs = r.specs(d);
      Arrays primals, tangents;
      for (const ArgSpec& s : specs) primals.push_back(laws::draw(s, rng));
      for (std::size_t i = 0; i < specs.size(); ++i) {
        Array t = laws::draw(laws::tangent_spec(specs[i]), rng);
        if (updates_tangent_unsupported(r) && i == 2) t = xpr::zeros_like(t);
        tangents.push_back(t);
      }
      FlatFunction f = r.fn;
      if (updates_tangent_unsupported(r)) {
        // Finite differences along the operand only: the updates are held fixed.
        Array u = primals[2];
        f = [fn = r.fn, u](std::span<const Array> a) {
          return fn(Arrays{a[0], a[1], xpr::astype(u, a[0].dtype())});
        };
        laws::check_jvp(f, Arrays{primals[0], primals[1], u}, tangents);
      } else {
        laws::check_jvp(f, primals, tangents);
      }
    }
  }
}

// Every in_axes placement (operand, indices, updates each not mapped or mapped at any axis) and
// every out_axes placement.
TEST_P(GatherLaws, VmapMatchesTheLoop) {
  const Record& r = GetParam();
  std::uint64_t seed = 100;
  for (DType d : floats) {
    SCOPED_TRACE(xpr::core::name(d));
    EXPECT_GT(laws::check_batch(r.fn, r.specs(d), seed++), 0);
  }
}

TEST_P(GatherLaws, VmapOfJvpMatchesTheLoop) {
  const Record& r = GetParam();
  if (updates_tangent_unsupported(r)) GTEST_SKIP() << "no updates derivative with repeats";
  std::uint64_t seed = 300;
  for (DType d : floats) {
    SCOPED_TRACE(xpr::core::name(d));
    std::vector<ArgSpec> specs = r.specs(d);
    for (const ArgSpec& s : r.specs(d)) specs.push_back(laws::tangent_spec(s));
    EXPECT_GT(laws::check_batch(laws::jvp_of(r.fn), specs, seed++, 3, 48), 0);
  }
}

long double host_inner(const Array& a, const Array& b) {
  std::vector<double> x = vals(a), y = vals(b);
  long double s = 0;
  for (std::size_t k = 0; k < x.size(); ++k) s += static_cast<long double>(x[k]) * y[k];
  return s;
}

// <ct, J t> == <J^T ct, t>: reverse mode (the transpose rules) against forward mode, in float64,
// at random points, tangents and cotangents. For the nonlinear scatters J is the Jacobian at the
// point. Indices are fixed at their drawn values.
TEST_P(GatherLaws, VjpIsTheTransposeOfJvp) {
  const Record& r = GetParam();
  for (std::uint64_t seed = 500; seed < 504; ++seed) {
    laws::Rng rng(seed);
    std::vector<ArgSpec> specs = r.specs(DType::float64);
    Arrays primals, tangents;
    for (const ArgSpec& s : specs) primals.push_back(laws::draw(s, rng));
    for (const ArgSpec& s : specs) tangents.push_back(laws::draw(laws::tangent_spec(s), rng));
    // The pullback of the floating arguments, the integer ones held fixed (and scatter-mul's
    // updates where it has no derivative for them).
    std::vector<std::size_t> wrt;
    for (std::size_t i = 0; i < primals.size(); ++i) {
      if (updates_tangent_unsupported(r) && i == 2)
        tangents[i] = xpr::zeros_like(tangents[i]);
      else if (xpr::core::is_floating(primals[i].dtype()))
        wrt.push_back(i);
    }
    auto [ys, ts] = updates_tangent_unsupported(r)
                        ? rt::jvp_flat(
                              [&](std::span<const Array> a) {
                                return r.fn(Arrays{a[0], a[1], primals[2]});
                              },
                              primals, tangents)
                        : rt::jvp_flat(r.fn, primals, tangents);
    Array ct = laws::draw(real(ys[0].shape(), DType::float64), rng);
    auto g = [&](std::vector<Array> xs) {
      Arrays args = primals;
      for (std::size_t k = 0; k < wrt.size(); ++k) args[wrt[k]] = xs[k];
      return r.fn(args)[0];
    };
    std::vector<Array> at;
    for (std::size_t i : wrt) at.push_back(primals[i]);
    auto [y, pullback] = xpr::vjp(g, at);
    std::vector<Array> cts = std::get<0>(pullback(ct));
    long double lhs = host_inner(ct, ts[0]), rhs = 0;
    for (std::size_t k = 0; k < wrt.size(); ++k) rhs += host_inner(cts[k], tangents[wrt[k]]);
    EXPECT_NEAR(static_cast<double>(lhs), static_cast<double>(rhs),
                1e-12 * (1 + std::abs(static_cast<double>(lhs))))
        << "seed " << seed;
  }
}

// Reverse mode under vmap: the pullback of the floating operands at a cotangent, batched over
// operands, indices and cotangent alike, against the loop.
TEST_P(GatherLaws, VmapOfVjpMatchesTheLoop) {
  const Record& r = GetParam();
  if (updates_tangent_unsupported(r)) GTEST_SKIP() << "no updates derivative with repeats";
  std::vector<ArgSpec> specs = r.specs(DType::float64);
  laws::Rng rng(700);
  Arrays sample;
  for (const ArgSpec& s : specs) sample.push_back(laws::draw(s, rng));
  specs.push_back(real(r.fn(sample)[0].shape(), DType::float64));
  FlatFunction pullback = [fn = r.fn](std::span<const Array> a) {
    const Arrays args(a.begin(), a.end() - 1);
    std::vector<std::size_t> wrt;
    for (std::size_t i = 0; i < args.size(); ++i)
      if (xpr::core::is_floating(args[i].dtype())) wrt.push_back(i);
    auto g = [&](std::vector<Array> xs) {
      Arrays all = args;
      for (std::size_t k = 0; k < wrt.size(); ++k) all[wrt[k]] = xs[k];
      return fn(all)[0];
    };
    std::vector<Array> at;
    for (std::size_t i : wrt) at.push_back(args[i]);
    auto [y, pb] = xpr::vjp(g, at);
    std::vector<Array> cts = std::get<0>(pb(a.back()));
    return Arrays(cts.begin(), cts.end());
  };
  EXPECT_GT(laws::check_batch(pullback, specs, 800, 3, 24), 0);
}

INSTANTIATE_TEST_SUITE_P(Prims, GatherLaws, testing::ValuesIn(records()),
                         [](const testing::TestParamInfo<Record>& p) { return p.param.name; });

// ---- derivatives as users write them ----------------------------------------------------------

TEST(GatherGrad, TheSameElementTwiceCountsTwice) {
  Array x = xpr::array({0.5, -1.0, 2.0});
  Array i = make(DType::int32, Shape{3, 1}, {1, 1, 2});
  auto f = [&](const Array& a) { return xpr::sum(xpr::gather(a, i, kTake1, {1})); };
  expect_values(xpr::grad(f)(x), {0, 2, 1}, "grad");
  // Squares: d/dx sum(x[i]^2) = 2 x times the count.
  auto g = [&](const Array& a) {
    Array y = xpr::gather(a, i, kTake1, {1});
    return xpr::sum(y * y);
  };
  expect_values(xpr::grad(g)(x), {0, 4 * -1.0, 2 * 2.0}, "grad of squares");
  expect_values(xpr::jacfwd(g)(x), {0, 4 * -1.0, 2 * 2.0}, "jacfwd of squares");
}

TEST(GatherGrad, ScatterAddSegmentSumGradient) {
  // y = segment sums of u into 3 segments; d sum(w * y) / du_j = w[seg_j].
  Array seg = make(DType::int32, Shape{5, 1}, {2, 0, 2, 1, 2});
  Array w = xpr::array({1.0, 10.0, 100.0});
  auto f = [&](const Array& u) {
    return xpr::sum(w * xpr::scatter_add(xpr::zeros({3}), seg, u, kPut1));
  };
  expect_values(xpr::grad(f)(xpr::array({1.0, 2.0, 3.0, 4.0, 5.0})), {100, 1, 100, 10, 100},
                "segment sum");
}

TEST(GatherGrad, ScatterWithRepeatsDifferentiatesTheWinner) {
  // The last update to a location wins; only its tangent reaches the output.
  Array i = make(DType::int32, Shape{3, 1}, {1, 1, 0});
  auto f = [&](const Array& x, const Array& u) {
    return xpr::sum(xpr::array({1.0, 10.0, 100.0}) * xpr::scatter(x, i, u, kPut1));
  };
  auto [gx, gu] = xpr::grad<0, 1>(f)(xpr::array({5.0, 6.0, 7.0}), xpr::array({1.0, 2.0, 3.0}));
  expect_values(gx, {0, 0, 100}, "operand");
  expect_values(gu, {0, 10, 1}, "updates");
}

TEST(GatherGrad, ScatterMaxTiesAverageAsJax) {
  // Location 0: the operand (2) and two updates (2, 2) tie: each gets a third. Location 1: the
  // update 5 wins over the operand 1.
  Array i = make(DType::int32, Shape{3, 1}, {0, 0, 1});
  auto f = [&](const Array& x, const Array& u) {
    return xpr::sum(xpr::scatter_max(x, i, u, kPut1));
  };
  auto [gx, gu] = xpr::grad<0, 1>(f)(xpr::array({2.0, 1.0}), xpr::array({2.0, 2.0, 5.0}));
  std::vector<double> a = vals(gx), b = vals(gu);
  EXPECT_NEAR(a[0], 1.0 / 3, 1e-15);
  EXPECT_EQ(a[1], 0.0);
  EXPECT_NEAR(b[0], 1.0 / 3, 1e-15);
  EXPECT_NEAR(b[1], 1.0 / 3, 1e-15);
  EXPECT_EQ(b[2], 1.0);
}

TEST(GatherGrad, ScatterMulWithRepeatsRaisesForTheUpdates) {
  Array i = make(DType::int32, Shape{2, 1}, {0, 0});
  auto f = [&](const Array& u) {
    return xpr::sum(xpr::scatter_mul(xpr::array({1.0, 2.0}), i, u, kPut1));
  };
  expect_error<xpr::core::not_implemented_error>(
      [&] {
        (void)xpr::grad(f)(xpr::array({3.0, 4.0}));
      },
      {"scatter-mul", "unique_indices"});
}

TEST(GatherGrad, RosenbrockByGathersSecondOrder) {
  // f(x) = sum_j 100 (x[j+1] - x[j]^2)^2 + (1 - x[j])^2 with x[j], x[j+1] read by gathers.
  const std::vector<double> xv{0.3, -0.7, 1.1, 0.5};
  const Array cur = make(DType::int32, Shape{3, 1}, {0, 1, 2});
  const Array nxt = make(DType::int32, Shape{3, 1}, {1, 2, 3});
  auto f = [&](const Array& x) {
    Array a = xpr::gather(x, cur, kTake1, {1}), b = xpr::gather(x, nxt, kTake1, {1});
    Array d = b - a * a;
    return xpr::sum(100.0 * d * d + (1.0 - a) * (1.0 - a));
  };
  std::vector<double> g(4, 0.0), h(16, 0.0);
  for (std::size_t j = 0; j < 3; ++j) {
    const double x = xv[j], y = xv[j + 1];
    g[j] += -400 * x * (y - x * x) - 2 * (1 - x);
    g[j + 1] += 200 * (y - x * x);
    h[j * 4 + j] += 1200 * x * x - 400 * y + 2;
    h[(j + 1) * 4 + j + 1] += 200;
    h[j * 4 + j + 1] += -400 * x;
    h[(j + 1) * 4 + j] += -400 * x;
  }
  const Array x = xpr::array({0.3, -0.7, 1.1, 0.5});
  auto near = [](const Array& a, const std::vector<double>& want, const char* what) {
    std::vector<double> got = vals(a);
    ASSERT_EQ(got.size(), want.size()) << what;
    for (std::size_t k = 0; k < got.size(); ++k)
      EXPECT_NEAR(got[k], want[k], 1e-12 * (1 + std::abs(want[k]))) << what << " " << k;
  };
  near(xpr::grad(f)(x), g, "grad");
  near(xpr::jacfwd(xpr::grad(f))(x), h, "jacfwd(grad)");
  near(xpr::jacrev(xpr::grad(f))(x), h, "jacrev(grad)");
}

// ---- dynamic_slice / dynamic_update_slice with batched indices --------------------------------

TEST(DynamicSliceBatched, IsOneGatherNotALoop) {
  Array x = xpr::array({0.0, 1.0, 2.0, 3.0, 4.0});
  auto f = [](const Array& a, const Array& s) { return xpr::dynamic_slice(a, {s}, {2}); };
  Array starts = make(DType::int32, Shape{4}, {0, 3, 9, -1});
  Array out = xpr::vmap(f, std::tuple{xpr::not_mapped, 0})(x, starts);
  // -1 counts from the end (4), then clamps to 3; 9 clamps to 3.
  expect_values(out, {0, 1, 3, 4, 3, 4, 3, 4}, "rows");
  std::ostringstream os;
  os << xpr::make_jaxpr(xpr::vmap(f, std::tuple{xpr::not_mapped, 0}))(x, starts);
  EXPECT_NE(os.str().find("gather["), std::string::npos) << os.str();
  EXPECT_EQ(os.str().find("concatenate"), std::string::npos) << os.str();
  auto g = [](const Array& a, const Array& u, const Array& s) {
    return xpr::dynamic_update_slice(a, u, {s});
  };
  Array u = make(DType::float64, Shape{4, 2}, {10, 11, 20, 21, 30, 31, 40, 41});
  Array out2 = xpr::vmap(g, std::tuple{xpr::not_mapped, 0, 0})(x, u, starts);
  expect_values(out2, {10, 11, 2, 3, 4, 0, 1, 2, 20, 21, 0, 1, 2, 30, 31, 0, 1, 2, 40, 41},
                "updates");
  std::ostringstream os2;
  os2 << xpr::make_jaxpr(xpr::vmap(g, std::tuple{xpr::not_mapped, 0, 0}))(x, u, starts);
  EXPECT_NE(os2.str().find("scatter["), std::string::npos) << os2.str();
}

// ---- print -> parse -> print -------------------------------------------------------------------

void expect_round_trip(const FlatFunction& f, const Arrays& args) {
  Arrays avals_src = args;
  std::vector<ShapedArray> avals;
  for (const Array& a : args) avals.push_back(a.aval());
  rt::ClosedJaxpr j = rt::make_jaxpr_flat(f, avals);
  std::ostringstream first;
  first << j.jaxpr;
  rt::ClosedJaxpr parsed = rt::parse_jaxpr(first.str(), j.consts);
  std::ostringstream second;
  second << parsed.jaxpr;
  EXPECT_EQ(first.str(), second.str());
  Arrays want = f(args), got = rt::eval_jaxpr(parsed, args);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_TRUE(laws::identical(got[0], want[0])) << laws::describe_difference(got[0], want[0]);
}

TEST(GatherPrint, PrintsAsJax) {
  Array x = xpr::array({1.0f, 2.0f, 3.0f});
  Array i = make(DType::int32, Shape{2, 1}, {0, 2});
  std::ostringstream os;
  os << xpr::make_jaxpr([&](const Array& a) { return xpr::gather(a, i, kTake1, {1}); })(x);
  EXPECT_NE(os.str().find(
                "gather[\n      dimension_numbers=GatherDimensionNumbers(offset_dims=(), "
                "collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), "
                "start_indices_batching_dims=())\n      fill_value=None\n      "
                "indices_are_sorted=False\n      mode=GatherScatterMode.PROMISE_IN_BOUNDS\n      "
                "slice_sizes=(1,)\n      unique_indices=False\n    ]"),
            std::string::npos)
      << os.str();
  std::ostringstream os2;
  os2 << xpr::make_jaxpr([&](const Array& a) {
    return xpr::scatter_add(a, i, xpr::array({1.0f, 1.0f}), kPut1);
  })(x);
  EXPECT_NE(os2.str().find("mode=GatherScatterMode.FILL_OR_DROP"), std::string::npos);
  EXPECT_NE(os2.str().find("update_consts=()"), std::string::npos);
  EXPECT_NE(os2.str().find("update_jaxpr={ lambda ; "), std::string::npos) << os2.str();
  EXPECT_NE(os2.str().find(":f32[] = add "), std::string::npos) << os2.str();
  std::ostringstream os3;
  os3 << xpr::make_jaxpr([&](const Array& a) {
    return xpr::scatter(a, i, xpr::array({1.0f, 1.0f}), kPut1);
  })(x);
  EXPECT_NE(os3.str().find("update_jaxpr=None"), std::string::npos) << os3.str();
  std::ostringstream os4;
  os4 << xpr::make_jaxpr([&](const Array& a) { return xpr::gather(a, i, kTake1, {1}, kFill); })(x);
  EXPECT_NE(os4.str().find("fill_value=nan"), std::string::npos) << os4.str();
}

TEST(GatherPrint, RoundTripsAndEvaluatesAfterParsing) {
  Array i = make(DType::int32, Shape{4, 1}, {2, 0, 2, 7});
  Array x = xpr::array({1.0, -2.0, 3.0, 0.5});
  Array u = xpr::array({4.0, 5.0, -6.0, 7.0});
  for (GatherScatterMode m : {kClip, kFill, kPromise}) {
    SCOPED_TRACE(mode_name(m));
    expect_round_trip(gather_fn(kTake1, {1}, m), {x, i});
    expect_round_trip(scatter_fn(xpr::scatter, kPut1, m), {x, i, u});
    expect_round_trip(scatter_fn(xpr::scatter_add, kPut1, m), {x, i, u});
    expect_round_trip(scatter_fn(xpr::scatter_mul, kPut1, m), {x, i, u});
    expect_round_trip(scatter_fn(xpr::scatter_min, kPut1, m), {x, i, u});
    expect_round_trip(scatter_fn(xpr::scatter_max, kPut1, m), {x, i, u});
  }
  Array xi = make(DType::int32, Shape{4}, {1, 2, 3, 4});
  expect_round_trip(gather_fn(kTake1, {1}, kFill), {xi, i});  // fill_value=-2147483648
  Array xb = make(DType::bool_, Shape{4}, {1, 0, 1, 0});
  expect_round_trip(gather_fn(kTake1, {1}, kFill), {xb, i});  // fill_value=True
  expect_round_trip(gather_fn(kAlong, {1, 1}, kClip),
                    {make(DType::float64, Shape{2, 3}, {1, 2, 3, 4, 5, 6}),
                     make(DType::int64, Shape{2, 2, 1}, {0, 2, 1, 1})});
  // The jaxpr of a gradient: gather's transpose is a scatter-add, the scatter jvp's ids trick.
  auto h = [&](std::span<const Array> a) {
    auto f = [&](const Array& y, const Array& v) {
      return xpr::sum(xpr::scatter(xpr::gather(y, i, kTake1, {1}, kClip), i, v, kPut1));
    };
    auto [gx, gu] = xpr::grad<0, 1>(f)(a[0], a[1]);
    return Arrays{gx + gu};
  };
  expect_round_trip(h, {x, u});
}

TEST(GatherPrint, ParseRejectsAnotherCombiner) {
  const std::string text =
      "{ lambda ; a:f32[3] b:i32[2,1] c:f32[2]. let\n"
      "    d:f32[3] = scatter-add[\n"
      "      dimension_numbers=ScatterDimensionNumbers(update_window_dims=(), "
      "inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), "
      "scatter_indices_batching_dims=())\n"
      "      indices_are_sorted=False\n"
      "      mode=GatherScatterMode.FILL_OR_DROP\n"
      "      unique_indices=False\n"
      "      update_consts=()\n"
      "      update_jaxpr={ lambda ; e:f32[] f:f32[]. let g:f32[] = mul e f in (g,) }\n"
      "    ] a b c\n"
      "  in (d,) }";
  expect_error<xpr::core::type_error>([&] { (void)rt::parse_jaxpr(text); },
                                      {"scatter-add", "update_jaxpr"});
  std::string ok = text;
  ok.replace(ok.find("mul e f"), 7, "add e f");
  EXPECT_NO_THROW((void)rt::parse_jaxpr(ok));
  std::string bad_mode = ok;
  bad_mode.replace(bad_mode.find("FILL_OR_DROP"), 12, "WRAP");
  expect_error<xpr::parse_error>([&] { (void)rt::parse_jaxpr(bad_mode); },
                                 {"CLIP, FILL_OR_DROP or PROMISE_IN_BOUNDS"});
}

// ---- errors ------------------------------------------------------------------------------------

TEST(GatherErrors, ClearMessages) {
  Array x = xpr::array({1.0, 2.0, 3.0});
  Array i = make(DType::int32, Shape{2, 1}, {0, 1});
  expect_error<xpr::dtype_error>(
      [&] {
        (void)xpr::gather(x, xpr::array({0.0, 1.0}), kTake1, {1});
      },
      {"gather", "integer", "float64"});
  expect_error<xpr::shape_error>(
      [&] { (void)xpr::gather(x, make(DType::int32, Shape{}, {0}), kTake1, {1}); }, {"rank >= 1"});
  expect_error<xpr::shape_error>(
      [&] {
        (void)xpr::gather(x, i, kTake1, {1, 1});
      },
      {"slice_sizes", "length 1"});
  expect_error<xpr::shape_error>([&] { (void)xpr::gather(x, i, kTake1, {4}); },
                                 {"slice_sizes", "(4,)"});
  expect_error<xpr::shape_error>([&] { (void)xpr::gather(x, i, kTake1, {2}); },
                                 {"slice size 1", "collapsed"});
  expect_error<xpr::shape_error>(
      [&] {
        (void)xpr::gather(x, i, {{0}, {0}, {0}, {}, {}}, {1});
      },
      {"offset_dims"});
  expect_error<xpr::shape_error>(
      [&] {
        (void)xpr::gather(x, i, {{}, {0}, {0, 0}, {}, {}}, {1});
      },
      {"start_index_map"});
  expect_error<xpr::shape_error>(
      [&] {
        (void)xpr::gather(x, i, {{}, {0}, {3}, {}, {}}, {1});
      },
      {"start_index_map", "[0, 1)"});
  expect_error<xpr::shape_error>(
      [&] {
        (void)xpr::gather(xpr::zeros({3, 4}), make(DType::int32, Shape{2, 2, 1}, {0, 0, 0, 0}),
                          kAlong, {1, 1});
      },
      {"batching", "equal sizes"});
  expect_error<xpr::shape_error>(
      [&] {
        (void)xpr::gather(x, i, {{}, {0}, {0}, {}, {1}}, {1});
      },
      {"start_indices_batching_dims"});
  // Scatters.
  Array u = xpr::array({1.0, 2.0});
  expect_error<xpr::dtype_error>(
      [&] {
        (void)xpr::scatter_add(x, i, make(DType::float32, Shape{2}, {1, 2}), kPut1);
      },
      {"scatter-add", "float64", "float32"});
  expect_error<xpr::shape_error>(
      [&] {
        (void)xpr::scatter_add(x, i, xpr::array({1.0, 2.0, 3.0}), kPut1);
      },
      {"scatter dimensions", "(2,)"});
  expect_error<xpr::shape_error>(
      [&] {
        (void)xpr::scatter(x, i, xpr::zeros({2, 2}), kPut1);
      },
      {"rank 1"});
  expect_error<xpr::shape_error>(
      [&] {
        (void)xpr::scatter(x, i, xpr::zeros({2, 4}), kPutRows);
      },
      {"update_window_dims"});
  expect_error<xpr::dtype_error>(
      [&] {
        Array b = make(DType::bool_, Shape{3}, {1, 0, 1});
        (void)xpr::scatter_add(b, i, make(DType::bool_, Shape{2}, {1, 1}), kPut1);
      },
      {"scatter-add", "bool"});
  expect_error<xpr::dtype_error>(
      [&] {
        (void)xpr::scatter_max(x, xpr::array({0.0, 1.0}), u, kPut1);
      },
      {"integer"});
  // A size that overflows int64 is a shape_error, before any allocation.
  const ShapedArray big{Shape{std::int64_t{1} << 40, 1}, DType::int32, false};
  const ShapedArray op{Shape{std::int64_t{1} << 40}, DType::float64, false};
  Params p{{"dimension_numbers", GatherDimensionNumbers{{1}, {}, {0}, {}, {}}},
           {"fill_value", rt::None{}},
           {"indices_are_sorted", false},
           {"mode", kClip},
           {"slice_sizes", Axes{std::int64_t{1} << 40}},
           {"unique_indices", false}};
  const ShapedArray ops[2] = {op, big};
  expect_error<xpr::shape_error>([&] { (void)rt::gather_p.abstract_eval(ops, p); }, {"overflows"});
}

}  // namespace test_prims_gather
