// Tests of rt/prims/select.hpp: select_n with a bool predicate in every dtype, over sizes around
// the SIMD width and with rank-0 operands in each position; with an int32 predicate and three
// cases; abstract_eval (shapes, weak types); every error.
#include "xpr/rt/prims/select.hpp"

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <xsimd/xsimd.hpp>

#include "tests/prims/common.hpp"

namespace test_prims_select {

using test_prims_common::expect_error;
using test_prims_common::make;

namespace rt = xpr::rt;
using rt::ShapedArray;
using xpr::Array;
using xpr::DType;
using xpr::Shape;

const DType all_dtypes[] = {DType::bool_, DType::int32, DType::int64, DType::float32,
                            DType::float64};

double on_false(std::size_t i, DType t) {
  return t == DType::bool_ ? i % 2 == 0 : -static_cast<double>(i % 50) - 1;
}
double on_true(std::size_t i, DType t) {
  return t == DType::bool_ ? i % 2 == 1 : static_cast<double>(i % 50) + 1;
}

TEST(SelectN, BoolPredicateInEveryDtypeSizeAndRank0Position) {
  const std::size_t w = xsimd::batch<float>::size;
  for (DType t : all_dtypes)
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, w - 1, w, w + 1, std::size_t{1000}})
      for (int scalar = 0; scalar < 4; ++scalar) {  // 0: none; 1, 2, 3: that operand is rank-0
        SCOPED_TRACE(std::string(xpr::core::name(t)) + " n=" + std::to_string(n) +
                     " rank-0 operand=" + std::to_string(scalar));
        const Shape vec{static_cast<std::int64_t>(n)};
        std::vector<double> p(n), f(n), tr(n);
        for (std::size_t i = 0; i < n; ++i) {
          p[i] = scalar == 1 ? 1 : (i * 7) % 3 == 0;
          f[i] = on_false(scalar == 2 ? 0 : i, t);
          tr[i] = on_true(scalar == 3 ? 0 : i, t);
        }
        Array pa = scalar == 1 ? make(DType::bool_, Shape{}, {1}) : make(DType::bool_, vec, p);
        Array fa = scalar == 2 ? make(t, Shape{}, {on_false(0, t)}) : make(t, vec, f);
        Array ta = scalar == 3 ? make(t, Shape{}, {on_true(0, t)}) : make(t, vec, tr);
        Array out = rt::bind1(rt::select_n_p, {pa, fa, ta});
        ASSERT_EQ(out.dtype(), t);
        ASSERT_EQ(out.shape(), vec);
        std::vector<double> got = out.to_vector<double>();
        for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], p[i] ? tr[i] : f[i]) << "at " << i;
      }
}

TEST(SelectN, KeepsTheBitsOfTheChosenElement) {
  Array p = make(DType::bool_, Shape{3}, {1, 0, 1});
  Array f = make(DType::float64, Shape{3}, {1, 2, 3});
  Array t = make(DType::float64, Shape{3}, {-0.0, 5, NAN});
  std::vector<double> got = rt::bind1(rt::select_n_p, {p, f, t}).to_vector<double>();
  EXPECT_TRUE(std::signbit(got[0]));
  EXPECT_EQ(got[1], 2);
  EXPECT_TRUE(std::isnan(got[2]));
}

TEST(SelectN, Int32PredicateIndexesTheCases) {
  Array which = make(DType::int32, Shape{6}, {0, 1, 2, 2, 1, 0});
  Array c0 = make(DType::float32, Shape{6}, {10, 11, 12, 13, 14, 15});
  Array c1 = make(DType::float32, Shape{}, {-1});
  Array c2 = make(DType::float32, Shape{6}, {20, 21, 22, 23, 24, 25});
  Array out = rt::bind1(rt::select_n_p, {which, c0, c1, c2});
  EXPECT_EQ(out.to_vector<double>(), (std::vector<double>{10, -1, 22, 23, -1, 15}));
  // A rank-0 index picks one case everywhere; out of range clamps to the first or last case.
  EXPECT_EQ(
      rt::bind1(rt::select_n_p, {make(DType::int32, Shape{}, {2}), c0, c1, c2}).to_vector<double>(),
      (std::vector<double>{20, 21, 22, 23, 24, 25}));
  Array wild = make(DType::int32, Shape{6}, {-5, 9, 0, 0, 0, 0});
  EXPECT_EQ(rt::bind1(rt::select_n_p, {wild, c0, c1, c2}).to_vector<double>(),
            (std::vector<double>{10, 21, 12, 13, 14, 15}));
  // One case: select_n is the identity on it.
  EXPECT_EQ(rt::bind1(rt::select_n_p, {which, c0}).to_vector<double>(), c0.to_vector<double>());
}

TEST(SelectN, AbstractEval) {
  const ShapedArray p{Shape{2, 3}, DType::bool_, false}, p0{Shape{}, DType::bool_, false};
  const ShapedArray x{Shape{2, 3}, DType::float32, false}, s_weak{Shape{}, DType::float32, true};
  auto eval = [](std::vector<ShapedArray> a) { return rt::select_n_p.abstract_eval(a, {}).at(0); };
  EXPECT_EQ(eval({p, x, x}), x);
  EXPECT_EQ(eval({p0, x, s_weak}), x);
  EXPECT_EQ(eval({p0, s_weak, x}), x);
  // The predicate alone may carry the shape; weak only when every case is.
  EXPECT_EQ(eval({p, s_weak, s_weak}), (ShapedArray{Shape{2, 3}, DType::float32, true}));
  EXPECT_EQ(eval({p0, s_weak, s_weak}), s_weak);
  const ShapedArray i{Shape{2, 3}, DType::int32, false};
  EXPECT_EQ(eval({i, x, x, x}), x);
  EXPECT_EQ(rt::select_n_p.name(), "select_n");
  EXPECT_EQ(rt::find_primitive("select_n"), &rt::select_n_p);
}

template <class E>
void expect_rejected(const std::vector<Array>& args,
                     std::initializer_list<std::string_view> parts) {
  expect_error<E>([&] { (void)rt::bind(rt::select_n_p, args); }, parts);
  std::vector<ShapedArray> avals;
  for (const Array& a : args) avals.push_back(a.aval());
  expect_error<E>([&] { (void)rt::select_n_p.abstract_eval(avals, {}); }, parts);
}

TEST(SelectN, Errors) {
  Array p = make(DType::bool_, Shape{3}, {1, 0, 1}), x = make(DType::float32, Shape{3}, {1, 2, 3});
  Array d = make(DType::float64, Shape{3}, {1, 2, 3}), x4 = make(DType::float32, Shape{4}, {});
  Array fp = make(DType::float32, Shape{3}, {1, 0, 1}), i = make(DType::int32, Shape{3}, {});
  expect_rejected<xpr::dtype_error>({fp, x, x}, {"select_n", "bool or int32", "float32"});
  expect_rejected<xpr::dtype_error>({p, x, d}, {"select_n", "same dtype", "float32", "float64"});
  expect_rejected<xpr::shape_error>({p, x, x4}, {"select_n", "(3,)", "(4,)"});
  expect_rejected<xpr::shape_error>({make(DType::bool_, Shape{4}, {}), x, x}, {"(4,)", "(3,)"});
  expect_rejected<xpr::type_error>({p, x, x, x}, {"bool predicate", "2 cases", "found 3"});
  expect_rejected<xpr::type_error>({p, x}, {"bool predicate", "2 cases", "found 1"});
  expect_rejected<xpr::type_error>({i}, {"select_n", "at least one case", "found 1"});
}

}  // namespace test_prims_select
