// Tests of rt/prims/shape.hpp: broadcast_in_dim, transpose, reshape, squeeze and expand_dims in
// every dtype against index arithmetic done here (unravel / ravel), abstract_eval, buffer sharing,
// every error; and the jax.numpy functions xpr::reshape (-1), transpose, squeeze, expand_dims,
// broadcast_to, ravel.
#include "xpr/rt/prims/shape.hpp"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/indexing.hpp"  // x[i] binds primitives; Array declares it, indexing.hpp defines it
#include "xpr/rt/numpy_shape.hpp"  // the jax.numpy functions on the shape primitives

#include "tests/prims/common.hpp"

namespace test_prims_shape {

using test_prims_common::expect_error;
using test_prims_common::make;

namespace rt = xpr::rt;
using rt::Axes;
using rt::Params;
using rt::ShapedArray;
using xpr::Array;
using xpr::DType;
using xpr::Shape;

const DType all_dtypes[] = {DType::bool_, DType::int32, DType::int64, DType::float32,
                            DType::float64};

// Distinct values 0, 1, 2, ... as stored in dtype `t` (bool: alternating).
std::vector<double> iota_values(DType t, std::int64_t n) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::size_t k = 0; k < v.size(); ++k)
    v[k] = t == DType::bool_ ? static_cast<double>(k % 2) : static_cast<double>(k);
  return v;
}
Array iota(DType t, const Shape& s) { return make(t, s, iota_values(t, s.size())); }

// The row-major multi-index of flat position k, and back.
std::vector<std::int64_t> unravel(std::int64_t k, const Shape& s) {
  std::vector<std::int64_t> idx(s.rank());
  for (std::size_t d = s.rank(); d-- > 0;) {
    idx[d] = k % s[d];
    k /= s[d];
  }
  return idx;
}
std::int64_t ravel_index(const std::vector<std::int64_t>& idx, const Shape& s) {
  std::int64_t k = 0;
  for (std::size_t d = 0; d < s.rank(); ++d) k = k * s[d] + idx[d];
  return k;
}

// Errors are checked through impl (bind) and abstract_eval alike.
template <class E>
void expect_rejected(const rt::Primitive& p, const Array& x, const Params& params,
                     std::initializer_list<std::string_view> parts) {
  expect_error<E>([&] { (void)rt::bind1(p, {x}, params); }, parts);
  expect_error<E>([&] { (void)p.abstract_eval(std::vector{x.aval()}, params); }, parts);
}

// ---- broadcast_in_dim -------------------------------------------------------------------------

struct BroadcastCase {
  Shape in, out;
  Axes dims;
};
const BroadcastCase broadcast_cases[] = {
    {{3}, {2, 3}, {1}},
    {{3}, {3, 2}, {0}},
    {{3, 1}, {3, 4}, {0, 1}},
    {{}, {2, 2}, {}},
    {{2, 1, 3}, {2, 4, 3}, {0, 1, 2}},
    {{1}, {5}, {0}},
    {{2, 3}, {4, 2, 5, 3}, {1, 3}},
    {{0}, {2, 0}, {1}},
    {{4}, {2, 3, 4}, {2}},
    {{2, 3}, {2, 3}, {0, 1}},
    {{1, 1}, {3, 1, 2}, {1, 2}},
    {{5, 7}, {3, 5, 7}, {1, 2}},
    {{3, 4}, {3, 2, 4}, {0, 2}},
    {{3, 1, 4}, {3, 5, 2, 4}, {0, 2, 3}},
};

TEST(BroadcastInDim, ValuesInEveryDtype) {
  for (DType t : all_dtypes)
    for (const BroadcastCase& c : broadcast_cases) {
      SCOPED_TRACE(std::string(xpr::core::name(t)) + " " + c.in.str() + " -> " + c.out.str());
      Array x = iota(t, c.in);
      Array y = rt::bind1(rt::broadcast_in_dim_p, {x},
                          {{"shape", c.out}, {"broadcast_dimensions", c.dims}});
      ASSERT_EQ(y.aval(), (ShapedArray{c.out, t, false}));
      std::vector<double> in = x.to_vector<double>(), got = y.to_vector<double>();
      for (std::int64_t k = 0; k < c.out.size(); ++k) {
        std::vector<std::int64_t> o = unravel(k, c.out), i(c.in.rank());
        for (std::size_t d = 0; d < c.in.rank(); ++d)
          i[d] = c.in[d] == 1 ? 0 : o[static_cast<std::size_t>(c.dims[d])];
        ASSERT_EQ(got[static_cast<std::size_t>(k)],
                  in[static_cast<std::size_t>(ravel_index(i, c.in))])
            << "at " << k;
      }
    }
}

TEST(BroadcastInDim, AbstractEvalKeepsWeakType) {
  const ShapedArray x{Shape{3}, DType::float32, true};
  EXPECT_EQ(rt::broadcast_in_dim_p
                .abstract_eval(std::vector{x},
                               {{"shape", Shape{2, 3}}, {"broadcast_dimensions", Axes{1}}})
                .at(0),
            (ShapedArray{Shape{2, 3}, DType::float32, true}));
}

TEST(BroadcastInDim, Errors) {
  Array x = iota(DType::float64, Shape{3, 1});
  auto params = [](Shape s, Axes d) { return Params{{"shape", s}, {"broadcast_dimensions", d}}; };
  expect_rejected<xpr::shape_error>(rt::broadcast_in_dim_p, x, params({3, 4}, {0}),
                                    {"expected 2 broadcast dimension(s)", "found 1", "(3, 1)"});
  expect_rejected<xpr::index_error>(rt::broadcast_in_dim_p, x, params({3, 4}, {0, 2}),
                                    {"[0, 2)", "found 2"});
  expect_rejected<xpr::index_error>(rt::broadcast_in_dim_p, x, params({3, 4}, {-1, 1}),
                                    {"[0, 2)", "found -1"});
  expect_rejected<xpr::value_error>(rt::broadcast_in_dim_p, x, params({4, 3}, {1, 0}),
                                    {"strictly increasing", "(1, 0)"});
  expect_rejected<xpr::value_error>(rt::broadcast_in_dim_p, x, params({4, 3, 3}, {1, 1}),
                                    {"strictly increasing", "(1, 1)"});
  expect_rejected<xpr::shape_error>(rt::broadcast_in_dim_p, x, params({2, 4}, {0, 1}),
                                    {"dimension 0", "size 1 or 2", "found 3"});
  expect_rejected<xpr::type_error>(rt::broadcast_in_dim_p, x, Params{{"shape", Shape{3, 4}}},
                                   {"broadcast_dimensions"});
}

// ---- transpose --------------------------------------------------------------------------------

TEST(Transpose, EveryPermutationInEveryDtype) {
  for (DType t : all_dtypes)
    for (const Shape& s : {Shape{2, 3, 4}, Shape{7, 33}, Shape{0, 3}, Shape{5}, Shape{}}) {
      Axes perm(s.rank());
      for (std::size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<std::int64_t>(i);
      Array x = iota(t, s);
      std::vector<double> in = x.to_vector<double>();
      do {
        SCOPED_TRACE(std::string(xpr::core::name(t)) + " " + s.str() + " perm " +
                     rt::detail::axes_str(perm));
        Array y = rt::bind1(rt::transpose_p, {x}, {{"permutation", perm}});
        Shape out;
        for (std::int64_t p : perm) out.push_back(s[static_cast<std::size_t>(p)]);
        ASSERT_EQ(y.aval(), (ShapedArray{out, t, false}));
        std::vector<double> got = y.to_vector<double>();
        for (std::int64_t k = 0; k < out.size(); ++k) {
          std::vector<std::int64_t> o = unravel(k, out), i(s.rank());
          for (std::size_t j = 0; j < perm.size(); ++j) i[static_cast<std::size_t>(perm[j])] = o[j];
          ASSERT_EQ(got[static_cast<std::size_t>(k)],
                    in[static_cast<std::size_t>(ravel_index(i, s))]);
        }
      } while (std::next_permutation(perm.begin(), perm.end()));
    }
}

TEST(Transpose, AbstractEvalAndErrors) {
  const ShapedArray x{Shape{2, 3, 4}, DType::int32, true};
  EXPECT_EQ(rt::transpose_p.abstract_eval(std::vector{x}, {{"permutation", Axes{2, 0, 1}}}).at(0),
            (ShapedArray{Shape{4, 2, 3}, DType::int32, true}));
  Array m = iota(DType::float32, Shape{2, 3});
  for (const Axes& bad : {Axes{0, 0}, Axes{0}, Axes{0, 2}, Axes{0, 1, 2}, Axes{-1, 0}})
    expect_rejected<xpr::value_error>(
        rt::transpose_p, m, {{"permutation", bad}},
        {"permutation of the operand's 2 axes", rt::detail::axes_str(bad), "(2, 3)"});
}

// ---- reshape ----------------------------------------------------------------------------------

TEST(Reshape, KeepsRowMajorOrderInEveryDtype) {
  struct Case {
    Shape in, out;
  };
  const Case cases[] = {{{2, 3}, {3, 2}},   {{2, 3}, {6}},         {{2, 3}, {1, 6, 1}},
                        {{}, {1, 1}},       {{1, 1}, {}},          {{0, 3}, {3, 0}},
                        {{4, 250}, {1000}}, {{1000}, {10, 10, 10}}};
  for (DType t : all_dtypes)
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(xpr::core::name(t)) + " " + c.in.str() + " -> " + c.out.str());
      Array x = iota(t, c.in);
      Array y = rt::bind1(rt::reshape_p, {x}, {{"new_sizes", c.out}, {"dimensions", rt::None{}}});
      EXPECT_EQ(y.aval(), (ShapedArray{c.out, t, false}));
      EXPECT_EQ(y.to_vector<double>(), x.to_vector<double>());
    }
}

TEST(Reshape, SharesLargeBuffersAndCopiesInlineOnes) {
  Array big = iota(DType::float64, Shape{4, 250});
  Array r =
      rt::bind1(rt::reshape_p, {big}, {{"new_sizes", Shape{1000}}, {"dimensions", rt::None{}}});
  EXPECT_EQ(r.data<double>(), big.data<double>());
  Array small = iota(DType::float32, Shape{2});
  Array s =
      rt::bind1(rt::reshape_p, {small}, {{"new_sizes", Shape{1, 2}}, {"dimensions", rt::None{}}});
  EXPECT_EQ(s.to_vector<double>(), (std::vector<double>{0, 1}));
  // A view of a view (a row of a reshaped array) still reads the right elements.
  EXPECT_EQ(
      rt::bind1(rt::reshape_p, {r}, {{"new_sizes", Shape{10, 100}}, {"dimensions", rt::None{}}})[3]
          .to_vector<double>()[5],
      305);
}

TEST(Reshape, DimensionsTransposeFirst) {
  Array x = iota(DType::int32, Shape{2, 3});  // [[0 1 2] [3 4 5]]
  Array y = rt::bind1(rt::reshape_p, {x}, {{"new_sizes", Shape{6}}, {"dimensions", Axes{1, 0}}});
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  // Absent `dimensions` means None.
  EXPECT_EQ(rt::bind1(rt::reshape_p, {x}, {{"new_sizes", Shape{3, 2}}}).to_vector<double>(),
            x.to_vector<double>());
}

TEST(Reshape, AbstractEvalAndErrors) {
  const ShapedArray x{Shape{2, 3}, DType::float32, true};
  EXPECT_EQ(
      rt::reshape_p
          .abstract_eval(std::vector{x}, {{"new_sizes", Shape{3, 2}}, {"dimensions", rt::None{}}})
          .at(0),
      (ShapedArray{Shape{3, 2}, DType::float32, true}));
  Array m = iota(DType::float32, Shape{2, 3});
  expect_rejected<xpr::shape_error>(rt::reshape_p, m,
                                    {{"new_sizes", Shape{4}}, {"dimensions", rt::None{}}},
                                    {"(2, 3) (size 6)", "(4,) (size 4)", "equal sizes"});
  expect_rejected<xpr::value_error>(rt::reshape_p, m,
                                    {{"new_sizes", Shape{6}}, {"dimensions", Axes{0, 0}}},
                                    {"permutation", "(0, 0)"});
}

// ---- squeeze and expand_dims ------------------------------------------------------------------

TEST(Squeeze, ValuesShapesAndErrors) {
  for (DType t : all_dtypes) {
    Array x = iota(t, Shape{1, 3, 1});
    auto sq = [&](Axes d) { return rt::bind1(rt::squeeze_p, {x}, {{"dimensions", d}}); };
    EXPECT_EQ(sq({0, 2}).aval(), (ShapedArray{Shape{3}, t, false}));
    EXPECT_EQ(sq({2}).shape(), (Shape{1, 3}));
    EXPECT_EQ(sq({-1}).shape(), (Shape{1, 3}));  // negative dimensions count from the end
    EXPECT_EQ(sq({}).shape(), (Shape{1, 3, 1}));
    EXPECT_EQ(sq({0, 2}).to_vector<double>(), x.to_vector<double>());
  }
  Array one = iota(DType::int64, Shape{1});
  EXPECT_EQ(rt::bind1(rt::squeeze_p, {one}, {{"dimensions", Axes{0}}}).shape(), Shape{});
  const ShapedArray w{Shape{1, 2}, DType::float32, true};
  EXPECT_EQ(rt::squeeze_p.abstract_eval(std::vector{w}, {{"dimensions", Axes{0}}}).at(0),
            (ShapedArray{Shape{2}, DType::float32, true}));
  Array x = iota(DType::float32, Shape{1, 3, 1});
  expect_rejected<xpr::shape_error>(rt::squeeze_p, x, {{"dimensions", Axes{1}}},
                                    {"dimension 1", "(1, 3, 1)", "size 1", "found size 3"});
  expect_rejected<xpr::index_error>(rt::squeeze_p, x, {{"dimensions", Axes{3}}},
                                    {"squeeze", "axis 3", "rank 3"});
  expect_rejected<xpr::value_error>(rt::squeeze_p, x, {{"dimensions", Axes{0, -3}}},
                                    {"squeeze", "repeated", "(0, -3)"});
}

TEST(ExpandDims, ValuesShapesAndErrors) {
  for (DType t : all_dtypes) {
    Array x = iota(t, Shape{3});
    auto ed = [&](Axes d) { return rt::bind1(rt::expand_dims_p, {x}, {{"dimensions", d}}); };
    EXPECT_EQ(ed({0}).aval(), (ShapedArray{Shape{1, 3}, t, false}));
    EXPECT_EQ(ed({1}).shape(), (Shape{3, 1}));
    EXPECT_EQ(ed({0, 2}).shape(), (Shape{1, 3, 1}));
    EXPECT_EQ(ed({2, 0}).shape(), (Shape{1, 3, 1}));
    EXPECT_EQ(ed({-1}).shape(), (Shape{3, 1}));
    EXPECT_EQ(ed({0, 1}).shape(), (Shape{1, 1, 3}));
    EXPECT_EQ(ed({0, 2}).to_vector<double>(), x.to_vector<double>());
  }
  EXPECT_EQ(rt::bind1(rt::expand_dims_p, {Array(2.0)}, {{"dimensions", Axes{0}}}).shape(),
            Shape{1});
  Array x = iota(DType::float32, Shape{3});
  expect_rejected<xpr::index_error>(rt::expand_dims_p, x, {{"dimensions", Axes{2}}},
                                    {"expand_dims", "axis 2", "rank 2"});
  expect_rejected<xpr::value_error>(rt::expand_dims_p, x, {{"dimensions", Axes{1, 1}}},
                                    {"expand_dims", "repeated", "(1, 1)"});
}

TEST(ShapePrims, NamesAndOperandCount) {
  const std::pair<const rt::Primitive*, std::string_view> names[] = {
      {&rt::broadcast_in_dim_p, "broadcast_in_dim"},
      {&rt::reshape_p, "reshape"},
      {&rt::transpose_p, "transpose"},
      {&rt::squeeze_p, "squeeze"},
      {&rt::expand_dims_p, "expand_dims"}};
  Array x(1.0);
  for (auto [p, name] : names) {
    EXPECT_EQ(rt::find_primitive(name), p);
    expect_error<xpr::type_error>(
        [&] {
          (void)rt::bind1(*p, {x, x});
        },
        {name, "1 operand", "found 2"});
    expect_error<xpr::type_error>([&] { (void)p->abstract_eval(std::vector<ShapedArray>{}, {}); },
                                  {name, "1 operand", "found 0"});
  }
}

// ---- jax.numpy functions ----------------------------------------------------------------------

TEST(NumpyShapeFunctions, Reshape) {
  Array x = iota(DType::float64, Shape{2, 3});
  EXPECT_EQ(xpr::reshape(x, {3, -1}).shape(), (Shape{3, 2}));
  EXPECT_EQ(xpr::reshape(x, {-1}).shape(), (Shape{6}));
  EXPECT_EQ(xpr::reshape(x, {-1, 1, 2}).to_vector<double>(), x.to_vector<double>());
  EXPECT_EQ(xpr::reshape(x, Shape{6, 1}).shape(), (Shape{6, 1}));
  std::vector<std::int64_t> dims{1, 6};
  EXPECT_EQ(xpr::reshape(x, dims).shape(), (Shape{1, 6}));
  EXPECT_EQ(xpr::reshape(x, {2, 3}).impl(), x.impl()) << "same shape: no equation, no copy";
  EXPECT_EQ(xpr::reshape(iota(DType::int32, Shape{0, 4}), {2, -1, 2}).shape(), (Shape{2, 0, 2}));
  EXPECT_EQ(xpr::ravel(x).shape(), (Shape{6}));
  EXPECT_EQ(xpr::ravel(Array(1.0)).shape(), (Shape{1}));
  expect_error<xpr::value_error>(
      [&] {
        (void)xpr::reshape(x, {-1, -1});
      },
      {"at most one -1", "(-1, -1)"});
  expect_error<xpr::value_error>([&] { (void)xpr::reshape(x, {-2, -3}); }, {"(-2, -3)"});
  expect_error<xpr::shape_error>(
      [&] {
        (void)xpr::reshape(x, {4, -1});
      },
      {"(2, 3) (size 6)", "(4, -1)", "divisible by 4"});
  expect_error<xpr::shape_error>([&] { (void)xpr::reshape(x, {4}); }, {"(2, 3)", "(4,)"});
}

TEST(NumpyShapeFunctions, Transpose) {
  Array x = iota(DType::int32, Shape{2, 3, 4});
  Array t = xpr::transpose(x);
  ASSERT_EQ(t.shape(), (Shape{4, 3, 2}));
  // t[k, j, i] == x[i, j, k] == 12 i + 4 j + k
  EXPECT_EQ(t.to_vector<double>()[static_cast<std::size_t>(ravel_index({3, 2, 1}, t.shape()))],
            12 * 1 + 4 * 2 + 3);
  EXPECT_EQ(xpr::transpose(x, {-1, 0, 1}).shape(), (Shape{4, 2, 3}));
  EXPECT_EQ(xpr::transpose(x, {0, 1, 2}).impl(), x.impl());
  EXPECT_EQ(xpr::transpose(Array(3)).item<int>(), 3);
  expect_error<xpr::index_error>(
      [&] {
        (void)xpr::transpose(x, {0, 1, 3});
      },
      {"transpose", "axis 3", "rank 3"});
  expect_error<xpr::value_error>([&] { (void)xpr::transpose(x, {0, 1}); }, {"permutation"});
}

TEST(NumpyShapeFunctions, SqueezeAndExpandDims) {
  Array x = iota(DType::float32, Shape{1, 3, 1});
  EXPECT_EQ(xpr::squeeze(x).shape(), (Shape{3}));
  EXPECT_EQ(xpr::squeeze(x, -1).shape(), (Shape{1, 3}));
  EXPECT_EQ(xpr::squeeze(x, {0, 2}).shape(), (Shape{3}));
  EXPECT_EQ(xpr::squeeze(iota(DType::float32, Shape{2, 3})).shape(), (Shape{2, 3}));
  expect_error<xpr::shape_error>([&] { (void)xpr::squeeze(x, 1); }, {"size 1", "found size 3"});
  expect_error<xpr::index_error>([&] { (void)xpr::squeeze(x, 5); }, {"axis 5"});
  Array v = iota(DType::float32, Shape{3});
  EXPECT_EQ(xpr::expand_dims(v, 0).shape(), (Shape{1, 3}));
  EXPECT_EQ(xpr::expand_dims(v, -1).shape(), (Shape{3, 1}));
  EXPECT_EQ(xpr::expand_dims(v, {0, -1}).shape(), (Shape{1, 3, 1}));
  expect_error<xpr::index_error>([&] { (void)xpr::expand_dims(v, 2); }, {"axis 2"});
  expect_error<xpr::value_error>([&] { (void)xpr::expand_dims(v, {0, -3}); }, {"repeated"});
}

TEST(NumpyShapeFunctions, BroadcastTo) {
  Array c = iota(DType::float64, Shape{3, 1});  // a column [0, 1, 2]
  Array b = xpr::broadcast_to(c, Shape{2, 3, 4});
  ASSERT_EQ(b.shape(), (Shape{2, 3, 4}));
  std::vector<double> got = b.to_vector<double>();
  for (std::int64_t k = 0; k < 24; ++k)
    EXPECT_EQ(got[static_cast<std::size_t>(k)], static_cast<double>(unravel(k, b.shape())[1]));
  EXPECT_EQ(xpr::broadcast_to(Array(7.0), {2, 2}).to_vector<double>(), std::vector<double>(4, 7.0));
  EXPECT_EQ(xpr::broadcast_to(c, Shape{3, 1}).impl(), c.impl());
  expect_error<xpr::shape_error>([] { (void)xpr::broadcast_to(iota(DType::int32, Shape{3}), {4}); },
                                 {"(3,)", "(4,)"});
  expect_error<xpr::shape_error>(
      [] {
        (void)xpr::broadcast_to(iota(DType::int32, Shape{2, 3}), {3});
      },
      {"(2, 3)", "(3,)"});
}

}  // namespace test_prims_shape
