// Tests of include/xpr/rt/prims/dot_general.hpp: a table of contractions (matrix products in
// every storage order, batch dimensions anywhere, several and reordered contracting dimensions,
// outer products, empty operands) in every dtype against a brute-force sum written here, one
// product against Eigen, and every error path.
#include "xpr/rt/prims/dot_general.hpp"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <Eigen/Core>
#include <gtest/gtest.h>

#include "xpr/rt/trace.hpp"

namespace test_prims_dot_general {

using xpr::Array;
using xpr::DType;
using xpr::Shape;
using xpr::ShapedArray;
using xpr::rt::Axes;
using xpr::rt::DotDimensionNumbers;

Array make(DType dtype, const std::vector<double>& values, const Shape& shape, bool weak = false) {
  xpr::rt::ArrayBuilder b(ShapedArray{shape, dtype, weak});
  xpr::rt::dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    for (std::size_t i = 0; i < values.size(); ++i)
      b.data<T>()[i] = std::is_same_v<T, bool> ? values[i] != 0 : static_cast<T>(values[i]);
  });
  return std::move(b).finish();
}

std::vector<double> sample(DType dtype, std::int64_t n, int seed) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    auto& x = v[static_cast<std::size_t>(i)];
    x = static_cast<double>((i * 13 + seed * 7) % 9) - 4;
    if (dtype == xpr::bool_) x = (i * 5 + seed) % 3 == 0;
  }
  return v;
}

std::vector<std::int64_t> unravel(std::int64_t flat, const Shape& s) {
  std::vector<std::int64_t> idx(s.rank());
  for (std::size_t i = s.rank(); i-- > 0;) {
    idx[i] = flat % s[i];
    flat /= s[i];
  }
  return idx;
}

std::int64_t ravel(const std::vector<std::int64_t>& idx, const Shape& s) {
  std::int64_t f = 0;
  for (std::size_t i = 0; i < s.rank(); ++i) f = f * s[i] + idx[i];
  return f;
}

/// The definition, summed term by term: for every output index (batch, lhs free, rhs free) and
/// every contracting index. Bool products are or-of-ands.
std::vector<double> reference(const std::vector<double>& l, const Shape& ls,
                              const std::vector<double>& r, const Shape& rs,
                              const DotDimensionNumbers& dn, bool logical, Shape& out_shape) {
  auto free_of = [](const Shape& s, const Axes& b, const Axes& c) {
    Axes f;
    for (std::int64_t d = 0; d < static_cast<std::int64_t>(s.rank()); ++d)
      if (std::find(b.begin(), b.end(), d) == b.end() &&
          std::find(c.begin(), c.end(), d) == c.end())
        f.push_back(d);
    return f;
  };
  Axes lf = free_of(ls, dn.lhs_batch, dn.lhs_contracting);
  Axes rf = free_of(rs, dn.rhs_batch, dn.rhs_contracting);
  std::vector<std::int64_t> od, cd;
  for (auto d : dn.lhs_batch) od.push_back(ls[static_cast<std::size_t>(d)]);
  for (auto d : lf) od.push_back(ls[static_cast<std::size_t>(d)]);
  for (auto d : rf) od.push_back(rs[static_cast<std::size_t>(d)]);
  for (auto d : dn.lhs_contracting) cd.push_back(ls[static_cast<std::size_t>(d)]);
  out_shape = Shape(od);
  Shape cshape(cd);
  std::vector<double> out(static_cast<std::size_t>(out_shape.size()), 0.0);
  for (std::int64_t o = 0; o < out_shape.size(); ++o) {
    auto oi = unravel(o, out_shape);
    std::vector<std::int64_t> li(ls.rank()), ri(rs.rank());
    std::size_t p = 0;
    for (std::size_t i = 0; i < dn.lhs_batch.size(); ++i, ++p) {
      li[static_cast<std::size_t>(dn.lhs_batch[i])] = oi[p];
      ri[static_cast<std::size_t>(dn.rhs_batch[i])] = oi[p];
    }
    for (auto d : lf) li[static_cast<std::size_t>(d)] = oi[p++];
    for (auto d : rf) ri[static_cast<std::size_t>(d)] = oi[p++];
    double acc = 0;
    for (std::int64_t c = 0; c < cshape.size(); ++c) {
      auto ci = unravel(c, cshape);
      for (std::size_t i = 0; i < ci.size(); ++i) {
        li[static_cast<std::size_t>(dn.lhs_contracting[i])] = ci[i];
        ri[static_cast<std::size_t>(dn.rhs_contracting[i])] = ci[i];
      }
      double t =
          l[static_cast<std::size_t>(ravel(li, ls))] * r[static_cast<std::size_t>(ravel(ri, rs))];
      acc = logical ? (acc != 0 || t != 0) : acc + t;
    }
    out[static_cast<std::size_t>(o)] = acc;
  }
  return out;
}

struct Case {
  const char* what;
  Shape lhs, rhs;
  DotDimensionNumbers dn;  // contracting lhs, rhs; batch lhs, rhs
};

const Case cases[] = {
    {"matmul", {3, 4}, {4, 5}, {{1}, {0}, {}, {}}},
    {"a . b^T (rhs column-major)", {3, 4}, {5, 4}, {{1}, {1}, {}, {}}},
    {"a^T . b (lhs column-major)", {4, 3}, {4, 5}, {{0}, {0}, {}, {}}},
    {"a^T . b^T", {4, 3}, {5, 4}, {{0}, {1}, {}, {}}},
    {"batched matmul", {2, 3, 4}, {2, 4, 5}, {{2}, {1}, {0}, {0}}},
    {"batch dims in the middle and last (copies)", {3, 2, 4}, {4, 5, 2}, {{2}, {0}, {1}, {2}}},
    {"two batch dims, reordered", {2, 3, 4, 2}, {3, 2, 2, 5}, {{3}, {2}, {0, 1}, {1, 0}}},
    {"two contracting dims", {2, 3, 4, 5}, {4, 5, 6}, {{2, 3}, {0, 1}, {}, {}}},
    {"contracting dims in reverse order", {2, 3, 5, 4}, {5, 4, 6}, {{3, 2}, {1, 0}, {}, {}}},
    {"batch and two free dims", {2, 3, 2, 4}, {2, 4, 3}, {{3}, {1}, {0}, {0}}},
    {"inner product", {7}, {7}, {{0}, {0}, {}, {}}},
    {"outer product", {3}, {4}, {{}, {}, {}, {}}},
    {"matrix-vector", {3, 6}, {6}, {{1}, {0}, {}, {}}},
    {"vector-matrix", {6}, {6, 3}, {{0}, {0}, {}, {}}},
    {"scalar times matrix", {}, {2, 3}, {{}, {}, {}, {}}},
    {"batched inner products", {4, 5}, {4, 5}, {{1}, {1}, {0}, {0}}},
    {"empty contraction (zeros)", {2, 0}, {0, 3}, {{1}, {0}, {}, {}}},
    {"empty free dimension", {0, 3}, {3, 4}, {{1}, {0}, {}, {}}},
    {"empty batch", {0, 2, 3}, {0, 3, 1}, {{2}, {1}, {0}, {0}}},
    {"larger (GEMM blocking)", {37, 65}, {65, 19}, {{1}, {0}, {}, {}}},
};

TEST(DotGeneral, TableOfContractionsInEveryDtypeMatchesTheDefinition) {
  for (DType dtype : {xpr::bool_, xpr::int32, xpr::int64, xpr::float32, xpr::float64})
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(c.what) + " in " + std::string(xpr::core::name(dtype)));
      auto lv = sample(dtype, c.lhs.size(), 1), rv = sample(dtype, c.rhs.size(), 2);
      Shape want_shape;
      std::vector<double> want =
          reference(lv, c.lhs, rv, c.rhs, c.dn, dtype == xpr::bool_, want_shape);
      Array out = xpr::rt::dot_general(make(dtype, lv, c.lhs), make(dtype, rv, c.rhs), c.dn);
      EXPECT_EQ(out.shape(), want_shape);
      EXPECT_EQ(out.dtype(), dtype);
      EXPECT_FALSE(out.weak_type());
      // Small integers: every partial sum is exact in every dtype and summation order.
      EXPECT_EQ(out.to_vector<double>(), want);
      xpr::rt::Avals avals = xpr::rt::dot_general_p.abstract_eval(
          std::vector<ShapedArray>{{c.lhs, dtype, false}, {c.rhs, dtype, false}},
          {{"dimension_numbers", c.dn}});
      EXPECT_EQ(avals.at(0), out.aval());
    }
}

TEST(DotGeneral, AgreesWithEigenOnInexactValues) {
  Eigen::MatrixXd a = Eigen::MatrixXd::Random(23, 41), b = Eigen::MatrixXd::Random(41, 17);
  std::vector<double> av, bv;
  for (Eigen::Index i = 0; i < a.rows(); ++i)
    for (Eigen::Index j = 0; j < a.cols(); ++j) av.push_back(a(i, j));
  for (Eigen::Index i = 0; i < b.rows(); ++i)
    for (Eigen::Index j = 0; j < b.cols(); ++j) bv.push_back(b(i, j));
  Eigen::MatrixXd want = a * b;
  for (DType dtype : {xpr::float32, xpr::float64}) {
    Array out = xpr::rt::dot_general(make(dtype, av, Shape{23, 41}), make(dtype, bv, Shape{41, 17}),
                                     {{1}, {0}, {}, {}});
    std::vector<double> got = out.to_vector<double>();
    double tol = dtype == xpr::float32 ? 41 * 1.2e-7 : 41 * 2.3e-16;
    for (Eigen::Index i = 0; i < want.rows(); ++i)
      for (Eigen::Index j = 0; j < want.cols(); ++j)
        EXPECT_NEAR(got[static_cast<std::size_t>(i * 17 + j)], want(i, j), tol);
  }
}

// f32 dot products and matrix-vector products of a million terms sum in vector lanes, as XLA's
// do: within 2e-6 of the double sum where one running f32 sum is about 1.5e-4 off (and sums 2^24
// ones to 2^24); also the rows of a matrix times a vector.
TEST(DotGeneral, LongF32DotProductsAreSummedInLanes) {
  constexpr std::int64_t k = 1000000;
  std::vector<double> a(k), b(k);
  double ref = 0, ref2 = 0;
  for (std::int64_t i = 0; i < k; ++i) {
    a[static_cast<std::size_t>(i)] = static_cast<float>((i * 7919 % 1000) / 1000.0);
    b[static_cast<std::size_t>(i)] = static_cast<float>((i * 104729 % 997) / 997.0);
    ref += a[static_cast<std::size_t>(i)] * b[static_cast<std::size_t>(i)];
    ref2 += 2.0 * a[static_cast<std::size_t>(i)] * b[static_cast<std::size_t>(i)];
  }
  const Array x = make(xpr::float32, a, Shape{k}), y = make(xpr::float32, b, Shape{k});
  const double dot = xpr::rt::dot_general(x, y, {{0}, {0}, {}, {}}).to_vector<double>()[0];
  EXPECT_LT(std::abs(dot - ref) / ref, 2e-6) << dot << " " << ref;
  std::vector<double> rows(a);
  for (double v : a) rows.push_back(2 * v);
  const std::vector<double> mv =
      xpr::rt::dot_general(make(xpr::float32, rows, Shape{2, k}), y, {{1}, {0}, {}, {}})
          .to_vector<double>();
  EXPECT_LT(std::abs(mv[0] - ref) / ref, 2e-6) << mv[0];
  EXPECT_LT(std::abs(mv[1] - ref2) / ref2, 2e-6) << mv[1];
}

TEST(DotGeneral, OutputIsWeakOnlyWhenBothOperandsAre) {
  Array a = make(xpr::float64, {1, 2}, Shape{2}, true),
        b = make(xpr::float64, {3, 4}, Shape{2}, true);
  Array c = make(xpr::float64, {3, 4}, Shape{2});
  DotDimensionNumbers dn{{0}, {0}, {}, {}};
  EXPECT_TRUE(xpr::rt::dot_general(a, b, dn).weak_type());
  EXPECT_FALSE(xpr::rt::dot_general(a, c, dn).weak_type());
  EXPECT_EQ(xpr::rt::dot_general(a, b, dn).item<double>(), 11.0);
}

// ---- errors -----------------------------------------------------------------------------------

template <class E>
void expect_error(const Array& l, const Array& r, const DotDimensionNumbers& dn,
                  std::initializer_list<const char*> parts) {
  try {
    xpr::rt::dot_general(l, r, dn);
    ADD_FAILURE() << "expected an exception";
  } catch (const E& e) {
    std::string msg = e.what();
    for (const char* part : parts) EXPECT_NE(msg.find(part), std::string::npos) << msg;
  }
  EXPECT_THROW(xpr::rt::dot_general_p.abstract_eval(std::vector<ShapedArray>{l.aval(), r.aval()},
                                                    {{"dimension_numbers", dn}}),
               E);
}

TEST(DotGeneral, Errors) {
  Array m = make(xpr::float32, sample(xpr::float32, 6, 0), Shape{2, 3});
  Array n = make(xpr::float32, sample(xpr::float32, 12, 0), Shape{3, 4});
  Array i = make(xpr::int32, sample(xpr::int32, 12, 0), Shape{3, 4});
  expect_error<xpr::dtype_error>(m, i, {{1}, {0}, {}, {}}, {"same dtype", "float32", "int32"});
  expect_error<xpr::shape_error>(m, n, {{1}, {0}, {0}, {}},
                                 {"batch dimensions", "lhs_batch=(0,)", "rhs_batch=()"});
  expect_error<xpr::shape_error>(m, n, {{1}, {}, {}, {}},
                                 {"contracting dimensions", "lhs_contracting=(1,)"});
  expect_error<xpr::index_error>(m, n, {{2}, {0}, {}, {}},
                                 {"lhs dimension 2", "rank 2", "0 <= dimension < 2"});
  expect_error<xpr::index_error>(m, n, {{1}, {-1}, {}, {}}, {"rhs dimension -1", "rank 2"});
  expect_error<xpr::value_error>(m, n, {{1, 1}, {0, 1}, {}, {}},
                                 {"distinct", "lhs dimension 1 more than once"});
  expect_error<xpr::shape_error>(m, n, {{0}, {0}, {}, {}},
                                 {"contracting dimensions to have the same size",
                                  "lhs dimension 0 of size 2", "rhs dimension 0 of size 3"});
  expect_error<xpr::shape_error>(m, n, {{1}, {0}, {0}, {1}},
                                 {"batch dimensions to have the same size"});
  try {
    xpr::rt::bind(xpr::rt::dot_general_p, std::vector<Array>{m},
                  {{"dimension_numbers", DotDimensionNumbers{}}});
    ADD_FAILURE() << "expected type_error";
  } catch (const xpr::type_error& e) {
    EXPECT_NE(std::string(e.what()).find("expected 2 operands, found 1"), std::string::npos);
  }
}

}  // namespace test_prims_dot_general
