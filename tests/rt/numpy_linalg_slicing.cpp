// Tests of include/xpr/rt/numpy_linalg_slicing.hpp: dot, matmul (batch broadcasting, rank-1
// operands), inner and vdot against Eigen and loops written here; concatenate and stack with
// dtype promotion; lax-style slice, pad, dynamic_slice and dynamic_update_slice (negative indices
// count from the end, then clamp); iota; and the error paths.
#include "xpr/rt/numpy_linalg_slicing.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include <Eigen/Core>
#include <gtest/gtest.h>

#include "xpr/rt/api_transformations.hpp"
#include "xpr/rt/jaxpr_eval.hpp"

namespace test_rt_numpy_linalg_slicing {

using xpr::Array;
using xpr::DType;
using xpr::Shape;
using xpr::ShapedArray;
using xpr::rt::Axes;

Array make(DType dtype, const std::vector<double>& values, const Shape& shape, bool weak = false) {
  xpr::rt::ArrayBuilder b(ShapedArray{shape, dtype, weak});
  xpr::rt::dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    for (std::size_t i = 0; i < values.size(); ++i)
      b.data<T>()[i] = std::is_same_v<T, bool> ? values[i] != 0 : static_cast<T>(values[i]);
  });
  return std::move(b).finish();
}

std::vector<double> sample(std::int64_t n, int seed = 0) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] = static_cast<double>((i * 7 + seed * 3) % 11) - 5;
  return v;
}

Array ramp(const Shape& shape, int seed = 0, DType dtype = xpr::float64) {
  return make(dtype, sample(shape.size(), seed), shape);
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

using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
RowMatrix eigen_of(const Array& x, Eigen::Index rows, Eigen::Index cols) {
  std::vector<double> v = x.to_vector<double>();
  return Eigen::Map<const RowMatrix>(v.data(), rows, cols);
}

// ---- dot ----------------------------------------------------------------------------------------

TEST(Dot, VectorsAndMatricesAgreeWithEigen) {
  Array a = ramp({3, 4}, 1), b = ramp({4, 5}, 2), u = ramp({4}, 3), w = ramp({3}, 4);
  RowMatrix A = eigen_of(a, 3, 4), B = eigen_of(b, 4, 5), U = eigen_of(u, 4, 1),
            W = eigen_of(w, 3, 1);
  Array ab = xpr::dot(a, b);
  EXPECT_EQ(ab.shape(), (Shape{3, 5}));
  EXPECT_EQ(eigen_of(ab, 3, 5), A * B);
  Array au = xpr::dot(a, u);
  EXPECT_EQ(au.shape(), (Shape{3}));
  EXPECT_EQ(eigen_of(au, 3, 1), A * U);
  Array wa = xpr::dot(w, a);
  EXPECT_EQ(wa.shape(), (Shape{4}));
  EXPECT_EQ(eigen_of(wa, 1, 4), W.transpose() * A);
  Array uu = xpr::dot(u, u);
  EXPECT_EQ(uu.shape(), Shape{});
  EXPECT_EQ(uu.item<double>(), U.squaredNorm());
}

TEST(Dot, NDimensionalOperandsContractLastWithSecondToLast) {
  Array a = ramp({2, 3, 4}, 1), b = ramp({5, 4, 6}, 2), v = ramp({4}, 3);
  std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>(),
                      vv = v.to_vector<double>();
  Array ab = xpr::dot(a, b);
  ASSERT_EQ(ab.shape(), (Shape{2, 3, 5, 6}));
  std::vector<double> got = ab.to_vector<double>();
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 5; ++k)
        for (int l = 0; l < 6; ++l) {
          double s = 0;
          for (int m = 0; m < 4; ++m)
            s += av[static_cast<std::size_t>(i * 12 + j * 4 + m)] *
                 bv[static_cast<std::size_t>(k * 24 + m * 6 + l)];
          EXPECT_EQ(got[static_cast<std::size_t>(((i * 3 + j) * 5 + k) * 6 + l)], s);
        }
  Array av1 = xpr::dot(a, v);
  ASSERT_EQ(av1.shape(), (Shape{2, 3}));
  std::vector<double> g1 = av1.to_vector<double>();
  for (int i = 0; i < 6; ++i) {
    double s = 0;
    for (int m = 0; m < 4; ++m)
      s += av[static_cast<std::size_t>(i * 4 + m)] * vv[static_cast<std::size_t>(m)];
    EXPECT_EQ(g1[static_cast<std::size_t>(i)], s);
  }
}

TEST(Dot, ScalarsPromotionAndBool) {
  Array m = ramp({2, 2}, 1);
  Array twice = xpr::dot(m, 2.0);
  EXPECT_EQ(twice.shape(), (Shape{2, 2}));
  std::vector<double> mv = m.to_vector<double>(), tv = twice.to_vector<double>();
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(tv[i], 2 * mv[i]);
  // i32 . f32 is f32; i32 . i64 is i64; an f32 array with a C++ double (weak) stays f32.
  Array i = make(xpr::int32, {1, 2}, Shape{2}), f = make(xpr::float32, {0.5, 0.25}, Shape{2});
  Array l = make(xpr::int64, {3, 4}, Shape{2});
  EXPECT_EQ(xpr::dot(i, f).dtype(), xpr::float32);
  EXPECT_EQ(xpr::dot(i, f).item<double>(), 1.0);
  EXPECT_EQ(xpr::dot(i, l).dtype(), xpr::int64);
  EXPECT_EQ(xpr::dot(i, l).item<std::int64_t>(), 11);
  EXPECT_EQ(xpr::dot(f, 0.5).dtype(), xpr::float32);
  // bool . bool is bool: or of ands.
  Array p = make(xpr::bool_, {1, 0, 1}, Shape{3}), q = make(xpr::bool_, {0, 1, 0}, Shape{3});
  EXPECT_EQ(xpr::dot(p, q).dtype(), xpr::bool_);
  EXPECT_FALSE(xpr::dot(p, q).item<bool>());
  EXPECT_TRUE(xpr::dot(p, p).item<bool>());
}

TEST(Dot, InnerAndVdot) {
  Array a = ramp({2, 3}, 1), b = ramp({4, 3}, 2);
  RowMatrix A = eigen_of(a, 2, 3), B = eigen_of(b, 4, 3);
  Array ab = xpr::inner(a, b);
  EXPECT_EQ(ab.shape(), (Shape{2, 4}));
  EXPECT_EQ(eigen_of(ab, 2, 4), A * B.transpose());
  Array c = ramp({3, 2}, 3);
  RowMatrix C = eigen_of(c, 3, 2);
  Eigen::Map<const Eigen::VectorXd> af(A.data(), 6), cf(C.data(), 6);  // row-major flattening
  EXPECT_EQ(xpr::vdot(a, c).item<double>(), af.dot(cf));
  EXPECT_EQ(xpr::inner(a, 3.0).shape(), (Shape{2, 3}));
  expect_error<xpr::shape_error>([&] { xpr::inner(a, c); }, {"inner", "(2, 3)", "(3, 2)"});
  expect_error<xpr::shape_error>([&] { xpr::vdot(a, b); }, {"vdot", "equal size"});
}

TEST(Dot, Errors) {
  expect_error<xpr::shape_error>(
      [] {
        xpr::dot(ramp({2, 3}), ramp({4, 5}));
      },
      {"dot: shapes (2, 3) and (4, 5) are not aligned", "a.shape[1] == b.shape[0]",
       "found 3 and 4"});
  expect_error<xpr::shape_error>([] { xpr::dot(ramp({3}), ramp({4})); }, {"not aligned"});
}

// ---- matmul -------------------------------------------------------------------------------------

/// The reference: a @ b for rank >= 2 operands with broadcast batch axes, as nested loops.
std::vector<double> matmul_reference(const Array& a, const Array& b, const Shape& out) {
  std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>();
  const std::size_t r = out.rank();
  const std::int64_t m = out[r - 2], n = out[r - 1], k = a.shape()[a.ndim() - 1];
  std::int64_t batches = out.size() / std::max<std::int64_t>(m * n, 1);
  std::vector<double> res;
  for (std::int64_t bi = 0; bi < batches; ++bi) {
    // The batch index in each operand: dimensions aligned from the right, size 1 broadcast.
    auto offset = [&](const Array& x) {
      std::int64_t rem = bi, off = 0, stride = x.shape()[x.ndim() - 1] * x.shape()[x.ndim() - 2];
      for (std::size_t d = r - 2; d-- > 0;) {
        std::int64_t i = rem % out[d];
        rem /= out[d];
        std::size_t lead = r - x.ndim();
        if (d < lead) continue;
        std::int64_t size = x.shape()[d - lead];
        off += (size == 1 ? 0 : i) * stride;
        stride *= size;
      }
      return off;
    };
    std::int64_t ao = offset(a), bo = offset(b);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (std::int64_t l = 0; l < k; ++l)
          s += av[static_cast<std::size_t>(ao + i * k + l)] *
               bv[static_cast<std::size_t>(bo + l * n + j)];
        res.push_back(s);
      }
  }
  return res;
}

TEST(Matmul, BatchedAndBroadcastMatchTheLoop) {
  struct Case {
    Shape a, b, out;
  };
  const Case cases[] = {
      {{3, 4}, {4, 5}, {3, 5}},
      {{2, 3, 4}, {2, 4, 5}, {2, 3, 5}},
      {{1, 3, 4}, {5, 4, 2}, {5, 3, 2}},
      {{2, 1, 3, 4}, {5, 4, 2}, {2, 5, 3, 2}},
      {{3, 4}, {2, 4, 5}, {2, 3, 5}},        // matrix @ batch: the row axis moves behind
      {{2, 6, 3, 4}, {4, 5}, {2, 6, 3, 5}},  // batch @ matrix
      {{3, 4}, {2, 2, 4, 5}, {2, 2, 3, 5}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.a.str() + " @ " + c.b.str());
    Array a = ramp(c.a, 1), b = ramp(c.b, 2);
    Array out = xpr::matmul(a, b);
    ASSERT_EQ(out.shape(), c.out);
    EXPECT_EQ(out.to_vector<double>(), matmul_reference(a, b, c.out));
  }
}

TEST(Matmul, RankOneOperandsLoseTheirUnitAxis) {
  Array v = ramp({4}, 1), m = ramp({4, 3}, 2), bm = ramp({2, 4, 3}, 3), a = ramp({2, 3, 4}, 4);
  // v @ m = (1, 4) @ (4, 3) with the 1 dropped
  Array vm = xpr::matmul(v, m);
  EXPECT_EQ(vm.shape(), (Shape{3}));
  EXPECT_EQ(vm.to_vector<double>(), matmul_reference(xpr::reshape(v, {1, 4}), m, Shape{1, 3}));
  Array vbm = xpr::matmul(v, bm);
  EXPECT_EQ(vbm.shape(), (Shape{2, 3}));
  EXPECT_EQ(vbm.to_vector<double>(), matmul_reference(xpr::reshape(v, {1, 4}), bm, Shape{2, 1, 3}));
  Array av = xpr::matmul(a, v);
  EXPECT_EQ(av.shape(), (Shape{2, 3}));
  EXPECT_EQ(av.to_vector<double>(), matmul_reference(a, xpr::reshape(v, {4, 1}), Shape{2, 3, 1}));
  EXPECT_EQ(xpr::matmul(v, v).shape(), Shape{});
  EXPECT_EQ(xpr::matmul(v, v).item<double>(), xpr::dot(v, v).item<double>());
}

TEST(Matmul, Errors) {
  expect_error<xpr::shape_error>([] { xpr::matmul(ramp({3}), 2.0); },
                                 {"matmul", "rank >= 1", "()"});
  expect_error<xpr::shape_error>(
      [] {
        xpr::matmul(ramp({2, 3}), ramp({4, 5}));
      },
      {"matmul", "contracted dimension", "(2, 3)", "(4, 5)"});
  expect_error<xpr::shape_error>(
      [] {
        xpr::matmul(ramp({2, 3, 4}), ramp({3, 4, 5}));
      },
      {"batch shapes (2,) and (3,)", "cannot be broadcast"});
}

// ---- concatenate and stack ----------------------------------------------------------------------

TEST(Concatenate, PromotesAndAcceptsNegativeAxes) {
  Array a = make(xpr::int32, {1, 2, 3, 4}, Shape{2, 2});
  Array b = make(xpr::float32, {0.5, 1.5}, Shape{2, 1});
  Array ab = xpr::concatenate({a, b}, -1);
  EXPECT_EQ(ab.dtype(), xpr::float32);
  EXPECT_EQ(ab.shape(), (Shape{2, 3}));
  EXPECT_EQ(ab.to_vector<double>(), (std::vector<double>{1, 2, 0.5, 3, 4, 1.5}));
  Array aa = xpr::concatenate({a, a, a});
  EXPECT_EQ(aa.shape(), (Shape{6, 2}));
  EXPECT_EQ(aa.dtype(), xpr::int32);
  EXPECT_EQ(aa.to_vector<int>(), (std::vector<int>{1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4}));
  EXPECT_EQ(xpr::concatenate({a}).to_vector<int>(), (std::vector<int>{1, 2, 3, 4}));
  // i32 with i64 is i64; bool with i32 is i32.
  EXPECT_EQ(xpr::concatenate({a, make(xpr::int64, {5, 6}, Shape{1, 2})}).dtype(), xpr::int64);
  EXPECT_EQ(xpr::concatenate({make(xpr::bool_, {1, 0}, Shape{1, 2}), a}).to_vector<int>(),
            (std::vector<int>{1, 0, 1, 2, 3, 4}));
}

TEST(Stack, AlongEachAxis) {
  Array a = make(xpr::float64, {1, 2, 3}, Shape{3}), b = make(xpr::float64, {4, 5, 6}, Shape{3});
  Array s0 = xpr::stack({a, b});
  EXPECT_EQ(s0.shape(), (Shape{2, 3}));
  EXPECT_EQ(s0.to_vector<double>(), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  Array s1 = xpr::stack({a, b}, 1);
  EXPECT_EQ(s1.shape(), (Shape{3, 2}));
  EXPECT_EQ(s1.to_vector<double>(), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(xpr::stack({a, b}, -1).to_vector<double>(), s1.to_vector<double>());
  Array scalars = xpr::stack({Array(1.0), Array(2.0), Array(3.0)});
  EXPECT_EQ(scalars.shape(), (Shape{3}));
  EXPECT_EQ(scalars.to_vector<double>(), (std::vector<double>{1, 2, 3}));
}

TEST(ConcatenateAndStack, Errors) {
  Array a = ramp({2, 2}), c = ramp({2, 3});
  expect_error<xpr::value_error>([] { xpr::concatenate({}); }, {"at least one array"});
  expect_error<xpr::shape_error>(
      [] {
        xpr::concatenate({Array(1.0), Array(2.0)});
      },
      {"zero-dimensional arrays cannot be concatenated"});
  expect_error<xpr::index_error>(
      [&] {
        xpr::concatenate({a, a}, 2);
      },
      {"concatenate:", "axis 2", "rank 2"});
  expect_error<xpr::shape_error>(
      [&] {
        xpr::concatenate({a, c}, 0);
      },
      {"equal shapes except along dimension 0", "(2, 2)", "(2, 3)"});
  expect_error<xpr::value_error>([] { xpr::stack({}); }, {"at least one array"});
  expect_error<xpr::shape_error>([&] { xpr::stack({a, c}); }, {"one shape", "(2, 2)", "(2, 3)"});
  expect_error<xpr::index_error>([&] { xpr::stack({a, a}, 3); }, {"stack:", "axis 3", "rank 3"});
}

// ---- slicing ------------------------------------------------------------------------------------

TEST(LaxSlicing, SliceAndPad) {
  Array x = make(xpr::int32, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, Shape{3, 4});
  EXPECT_EQ(xpr::slice(x, {1, 1}, {3, 3}).to_vector<int>(), (std::vector<int>{5, 6, 9, 10}));
  EXPECT_EQ(xpr::slice(x, {0, 0}, {3, 4}, {2, 3}).to_vector<int>(),
            (std::vector<int>{0, 3, 8, 11}));
  Array v = make(xpr::float32, {1, 2, 3}, Shape{3});
  Array p = xpr::pad(v, {{1, 2, 1}}, 0.5);
  EXPECT_EQ(p.dtype(), xpr::float32);
  EXPECT_EQ(p.to_vector<float>(), (std::vector<float>{0.5f, 1, 0.5f, 2, 0.5f, 3, 0.5f, 0.5f}));
  EXPECT_EQ(xpr::pad(v, {{-1, -1, 0}}).to_vector<float>(), (std::vector<float>{2}));
  EXPECT_EQ(xpr::pad(x, {{0, -2, 0}, {1, 0, 0}}, 7).to_vector<int>(),
            (std::vector<int>{7, 0, 1, 2, 3}));
  expect_error<xpr::index_error>([&] { xpr::slice(x, {0, 0}, {4, 4}); }, {"limit_indices <= 3"});
}

TEST(LaxSlicing, DynamicSliceWrapsNegativeIndicesThenClamps) {
  Array x = make(xpr::float64, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, Shape{10});
  EXPECT_EQ(xpr::dynamic_slice(x, {2}, {3}).to_vector<double>(), (std::vector<double>{2, 3, 4}));
  // -2 counts from the end (8), then clamps into [0, 10 - 3].
  EXPECT_EQ(xpr::dynamic_slice(x, {-2}, {3}).to_vector<double>(), (std::vector<double>{7, 8, 9}));
  EXPECT_EQ(xpr::dynamic_slice(x, {-9}, {2}).to_vector<double>(), (std::vector<double>{1, 2}));
  EXPECT_EQ(xpr::dynamic_slice(x, {-30}, {2}).to_vector<double>(), (std::vector<double>{0, 1}));
  EXPECT_EQ(xpr::dynamic_slice(x, {42}, {2}).to_vector<double>(), (std::vector<double>{8, 9}));
  // Indices as int64 arrays.
  Array m = make(xpr::int32, {0, 1, 2, 3, 4, 5}, Shape{2, 3});
  Array i = make(xpr::int64, {1}, Shape{}), j = make(xpr::int64, {-1}, Shape{});
  EXPECT_EQ(xpr::dynamic_slice(m, {i, j}, {1, 1}).to_vector<int>(), (std::vector<int>{5}));
  EXPECT_EQ(xpr::dynamic_slice(m, {i, j}, {1, 1}).dtype(), xpr::int32);
  expect_error<xpr::type_error>(
      [&] {
        xpr::dynamic_slice(m, {i}, {1, 1});
      },
      {"dynamic_slice", "expected 2 start indices", "found 1"});
  expect_error<xpr::dtype_error>(
      [&] {
        xpr::dynamic_slice(m, {i, 0.5}, {1, 1});
      },
      {"integer dtype", "float64"});
}

TEST(LaxSlicing, DynamicUpdateSlice) {
  Array x = make(xpr::float32, {0, 0, 0, 0, 0, 0}, Shape{2, 3});
  Array u = make(xpr::float32, {1, 2}, Shape{1, 2});
  Array y = xpr::dynamic_update_slice(x, u, {1, -1});  // -1 -> 2, clamped to 1
  EXPECT_EQ(y.dtype(), xpr::float32);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 0, 0, 0, 1, 2}));
  EXPECT_EQ(xpr::dynamic_update_slice(x, u, {0, 0}).to_vector<float>(),
            (std::vector<float>{1, 2, 0, 0, 0, 0}));
  EXPECT_EQ(x.to_vector<float>(), std::vector<float>(6, 0.0f));  // arrays are immutable
  expect_error<xpr::type_error>([&] { xpr::dynamic_update_slice(x, u, {0}); },
                                {"dynamic_update_slice", "expected 2 start indices"});
  // As lax.dynamic_update_slice: the update has the operand's dtype. A float update into an
  // integer array would otherwise be truncated with no error; an update made from a C++ number
  // (weakly typed, as a Python scalar) is converted.
  Array counts = make(xpr::int32, {5, 5, 5}, Shape{3});
  expect_error<xpr::dtype_error>(
      [&] { xpr::dynamic_update_slice(counts, make(xpr::float64, {1.7}, Shape{1}), {Array(0)}); },
      {"dynamic_update_slice", "int32", "float64"});
  expect_error<xpr::dtype_error>(
      [&] {
        xpr::dynamic_update_slice(x, make(xpr::int32, {1, 2}, Shape{1, 2}), {0, 0});
      },
      {"dynamic_update_slice", "float32", "int32"});
  EXPECT_EQ(xpr::dynamic_update_slice(counts, make(xpr::float64, {7}, Shape{1}, true), {Array(1)})
                .to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{5, 7, 5}));
}

TEST(LaxSlicing, TracedIndicesAreWrappedInTheProgram) {
  // Staged out, the index is a tracer: the wrap of a negative index is recorded (with where), so
  // the jaxpr gives the eager answer for every index value.
  auto f = [](const Array& x, const Array& i) {
    return xpr::dynamic_update_slice(x, xpr::dynamic_slice(x, {i}, {2}) * 10.0, {i});
  };
  Array x = make(xpr::float64, {0, 1, 2, 3, 4}, Shape{5});
  xpr::rt::ClosedJaxpr j = xpr::make_jaxpr(f)(x, make(xpr::int32, {0}, Shape{}));
  for (std::int64_t i : {-7, -2, -1, 0, 1, 3, 9}) {
    SCOPED_TRACE(i);
    Array idx = make(xpr::int32, {static_cast<double>(i)}, Shape{});
    Array staged = xpr::rt::eval_jaxpr(j, std::vector<Array>{x, idx}).at(0);
    EXPECT_EQ(staged.to_vector<double>(), f(x, idx).to_vector<double>());
  }
  // -2 -> 3: elements 3 and 4 scaled.
  EXPECT_EQ(f(x, make(xpr::int32, {-2}, Shape{})).to_vector<double>(),
            (std::vector<double>{0, 1, 2, 30, 40}));
}

TEST(LaxSlicing, Iota) {
  EXPECT_EQ(xpr::iota(xpr::int64, 3).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{0, 1, 2}));
  EXPECT_EQ(xpr::broadcasted_iota(xpr::float32, Shape{2, 2}, 0).to_vector<float>(),
            (std::vector<float>{0, 0, 1, 1}));
}

}  // namespace test_rt_numpy_linalg_slicing
