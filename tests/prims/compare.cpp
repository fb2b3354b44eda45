// Tests of rt/prims/compare.hpp: eq ne lt le gt ge in every dtype against C++'s operators, over
// sizes around the SIMD width, with rank-0 operands in either position; NaN; abstract_eval; errors.
#include "xpr/rt/prims/compare.hpp"

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <xsimd/xsimd.hpp>

#include "tests/prims/common.hpp"

namespace test_prims_compare {

using test_prims_common::expect_error;
using test_prims_common::make;

namespace rt = xpr::rt;
using rt::ShapedArray;
using xpr::Array;
using xpr::DType;
using xpr::Shape;

std::vector<std::size_t> sizes(DType t) {
  std::size_t w = t == DType::float64 ? xsimd::batch<double>::size : xsimd::batch<float>::size;
  return {0, 1, w - 1, w, w + 1, 1000};
}

const DType all_dtypes[] = {DType::bool_, DType::int32, DType::int64, DType::float32,
                            DType::float64};

struct Row {
  const rt::Primitive& prim;
  bool (*want)(double, double);
};
const Row rows[] = {
    {rt::eq_p, [](double a, double b) { return a == b; }},
    {rt::ne_p, [](double a, double b) { return a != b; }},
    {rt::lt_p, [](double a, double b) { return a < b; }},
    {rt::le_p, [](double a, double b) { return a <= b; }},
    {rt::gt_p, [](double a, double b) { return a > b; }},
    {rt::ge_p, [](double a, double b) { return a >= b; }},
};

// Values from a small range, so that equal pairs occur often; exact in every dtype.
double value(std::size_t i, std::size_t k, DType t) {
  if (t == DType::bool_) return (i / (k + 1)) % 2;
  double v = static_cast<double>((i * (k + 3)) % 7) - 3;
  return xpr::core::is_floating(t) ? v * 0.5 : v;
}

TEST(ComparePrims, ValuesInEveryDtypeSizeAndRank0Position) {
  for (const Row& row : rows)
    for (DType t : all_dtypes)
      for (std::size_t n : sizes(t))
        for (int mode = 0; mode < 3; ++mode) {  // 0: both (n,); 1: left rank-0; 2: right rank-0
          SCOPED_TRACE(row.prim.name() + " " + std::string(xpr::core::name(t)) +
                       " n=" + std::to_string(n) + " mode=" + std::to_string(mode));
          std::vector<double> a(n), b(n);
          for (std::size_t i = 0; i < n; ++i) {
            a[i] = value(mode == 1 ? 0 : i, 0, t);
            b[i] = value(mode == 2 ? 0 : i, 1, t);
          }
          const Shape vec{static_cast<std::int64_t>(n)};
          Array x = mode == 1 ? make(t, Shape{}, {value(0, 0, t)}) : make(t, vec, a);
          Array y = mode == 2 ? make(t, Shape{}, {value(0, 1, t)}) : make(t, vec, b);
          Array out = rt::bind1(row.prim, {x, y});
          ASSERT_EQ(out.dtype(), DType::bool_);
          ASSERT_EQ(out.shape(), vec);
          const bool* got = out.data<bool>();
          for (std::size_t i = 0; i < n; ++i)
            ASSERT_EQ(got[i], row.want(a[i], b[i])) << "at " << i << ": " << a[i] << ", " << b[i];
        }
}

TEST(ComparePrims, NanComparesUnequalToEverything) {
  for (DType t : {DType::float32, DType::float64}) {
    Array x = make(t, Shape{3}, {NAN, 1, NAN}), y = make(t, Shape{3}, {1, NAN, NAN});
    for (const Row& row : rows) {
      std::vector<bool> got = rt::bind1(row.prim, {x, y}).to_vector<bool>();
      bool want = &row.prim == &rt::ne_p;
      EXPECT_EQ(got, std::vector<bool>(3, want)) << row.prim.name();
    }
  }
}

TEST(ComparePrims, Int64ExtremesCompareExactly) {
  // Values a double cannot tell apart, so a comparison through double would be wrong.
  rt::ArrayBuilder b(ShapedArray{Shape{2}, DType::int64, false});
  b.data<std::int64_t>()[0] = (std::int64_t{1} << 62) + 1;
  b.data<std::int64_t>()[1] = (std::int64_t{1} << 62);
  Array x = std::move(b).finish();
  EXPECT_EQ(rt::bind1(rt::eq_p, {x[0], x[1]}).item<bool>(), false);
  EXPECT_EQ(rt::bind1(rt::gt_p, {x[0], x[1]}).item<bool>(), true);
}

TEST(ComparePrims, AbstractEvalGivesStrongBool) {
  const ShapedArray m_weak{Shape{2, 3}, DType::float32, true},
      s_weak{Shape{}, DType::float32, true};
  const ShapedArray want{Shape{2, 3}, DType::bool_, false};
  for (const Row& row : rows) {
    EXPECT_EQ(row.prim.abstract_eval(std::vector{m_weak, s_weak}, {}).at(0), want);
    EXPECT_EQ(row.prim.abstract_eval(std::vector{s_weak, m_weak}, {}).at(0), want);
    EXPECT_EQ(row.prim.abstract_eval(std::vector{s_weak, s_weak}, {}).at(0),
              (ShapedArray{Shape{}, DType::bool_, false}));
  }
}

TEST(ComparePrims, NamesAndRegistry) {
  const std::string_view names[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(rows[i].prim.name(), names[i]);
    EXPECT_EQ(rt::find_primitive(names[i]), &rows[i].prim);
  }
}

template <class E>
void expect_rejected(const rt::Primitive& p, const std::vector<Array>& args,
                     std::initializer_list<std::string_view> parts) {
  expect_error<E>([&] { (void)rt::bind(p, args); }, parts);
  std::vector<ShapedArray> avals;
  for (const Array& a : args) avals.push_back(a.aval());
  expect_error<E>([&] { (void)p.abstract_eval(avals, {}); }, parts);
}

TEST(ComparePrims, Errors) {
  Array i = make(DType::int32, Shape{3}, {1, 2, 3}), f = make(DType::float32, Shape{3}, {1, 2, 3});
  Array f4 = make(DType::float32, Shape{4}, {});
  for (const Row& row : rows) {
    expect_rejected<xpr::dtype_error>(row.prim, {i, f}, {row.prim.name(), "int32", "float32"});
    expect_rejected<xpr::shape_error>(row.prim, {f, f4}, {row.prim.name(), "(3,)", "(4,)"});
    expect_rejected<xpr::type_error>(row.prim, {f}, {row.prim.name(), "2 operands", "found 1"});
  }
}

}  // namespace test_prims_compare
