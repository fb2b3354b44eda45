// Tests of include/xpr/rt/prims/slicing.hpp: slice, pad (negative and interior padding),
// dynamic_slice and dynamic_update_slice (index clamping), concatenate (along every axis, with
// empty operands), in every dtype, against index formulas evaluated here; every error path.
#include "xpr/rt/prims/slicing.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/trace.hpp"

namespace test_prims_slicing {

using xpr::Array;
using xpr::DType;
using xpr::Shape;
using xpr::ShapedArray;
using xpr::rt::Axes;
using xpr::rt::PaddingConfig;
using xpr::rt::Params;
namespace rt = xpr::rt;

constexpr DType all_dtypes[] = {xpr::bool_, xpr::int32, xpr::int64, xpr::float32, xpr::float64};

Array make(DType dtype, const std::vector<double>& values, const Shape& shape, bool weak = false) {
  rt::ArrayBuilder b(ShapedArray{shape, dtype, weak});
  rt::dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    for (std::size_t i = 0; i < values.size(); ++i)
      b.data<T>()[i] = std::is_same_v<T, bool> ? values[i] != 0 : static_cast<T>(values[i]);
  });
  return std::move(b).finish();
}

/// Distinct values (for bool: a pattern), so a misplaced element shows.
std::vector<double> sample(DType dtype, std::int64_t n, double offset = 1) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] =
        dtype == xpr::bool_ ? (i % 3 == 1) : offset + static_cast<double>(i);
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

Array scalar_index(std::int64_t i, DType dtype = xpr::int32) {
  return make(dtype, {static_cast<double>(i)}, Shape{});
}

// ---- slice --------------------------------------------------------------------------------------

struct SliceCase {
  Shape shape;
  Axes start, limit, strides;  // empty strides: the parameter is left out
};

TEST(Slice, MatchesTheIndexFormulaInEveryDtype) {
  const SliceCase cases[] = {
      {{7}, {1}, {5}, {}},
      {{7}, {0}, {7}, {2}},
      {{7}, {2}, {7}, {3}},
      {{7}, {3}, {3}, {}},  // empty
      {{4, 5}, {1, 0}, {3, 5}, {}},
      {{4, 5}, {0, 1}, {4, 5}, {3, 2}},
      {{2, 3, 4}, {1, 0, 1}, {2, 3, 4}, {1, 2, 2}},
      {{3, 1, 40}, {0, 0, 3}, {3, 1, 38}, {2, 1, 1}},
      {{}, {}, {}, {}},
  };
  for (DType dtype : all_dtypes)
    for (const SliceCase& c : cases) {
      SCOPED_TRACE(std::string(xpr::core::name(dtype)) + " " + c.shape.str() + " start " +
                   Shape(c.start).str() + " limit " + Shape(c.limit).str());
      std::vector<double> in = sample(dtype, c.shape.size());
      Params p{{"start_indices", c.start}, {"limit_indices", c.limit}};
      if (!c.strides.empty()) p.set("strides", c.strides);
      Array out = rt::bind1(rt::slice_p, {make(dtype, in, c.shape)}, p);
      std::vector<std::int64_t> dims;
      for (std::size_t i = 0; i < c.shape.rank(); ++i) {
        std::int64_t st = c.strides.empty() ? 1 : c.strides[i];
        dims.push_back((c.limit[i] - c.start[i] + st - 1) / st);
      }
      ASSERT_EQ(out.shape(), Shape(dims));
      EXPECT_EQ(out.dtype(), dtype);
      std::vector<double> got = out.to_vector<double>();
      for (std::int64_t o = 0; o < out.size(); ++o) {
        auto idx = unravel(o, out.shape());
        for (std::size_t i = 0; i < idx.size(); ++i)
          idx[i] = c.start[i] + idx[i] * (c.strides.empty() ? 1 : c.strides[i]);
        EXPECT_EQ(got[static_cast<std::size_t>(o)],
                  in[static_cast<std::size_t>(ravel(idx, c.shape))]);
      }
    }
}

TEST(Slice, HandComputedCase) {
  Array x = make(xpr::float64, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, Shape{3, 4});
  Array s = rt::bind1(
      rt::slice_p, {x},
      {{"start_indices", Axes{0, 1}}, {"limit_indices", Axes{3, 4}}, {"strides", Axes{2, 2}}});
  EXPECT_EQ(s.shape(), (Shape{2, 2}));
  EXPECT_EQ(s.to_vector<double>(), (std::vector<double>{1, 3, 9, 11}));
}

// ---- pad ----------------------------------------------------------------------------------------

/// The reference: output index j of a dimension comes from operand index (j - lo) / (interior + 1)
/// when that divides exactly and lies in range; otherwise it is the padding value.
std::vector<double> pad_reference(const std::vector<double>& in, const Shape& shape,
                                  const PaddingConfig& cfg, double value, Shape& out_shape) {
  std::vector<std::int64_t> od;
  for (std::size_t i = 0; i < shape.rank(); ++i) {
    auto [lo, hi, interior] = cfg.dims[i];
    od.push_back(lo + hi + shape[i] + (shape[i] > 0 ? (shape[i] - 1) * interior : 0));
  }
  out_shape = Shape(od);
  std::vector<double> out(static_cast<std::size_t>(out_shape.size()));
  for (std::int64_t o = 0; o < out_shape.size(); ++o) {
    auto idx = unravel(o, out_shape);
    bool inside = true;
    for (std::size_t i = 0; i < idx.size(); ++i) {
      std::int64_t j = idx[i] - cfg.dims[i][0], step = cfg.dims[i][2] + 1;
      inside = inside && j >= 0 && j % step == 0 && j / step < shape[i];
      idx[i] = inside ? j / step : 0;
    }
    out[static_cast<std::size_t>(o)] =
        inside ? in[static_cast<std::size_t>(ravel(idx, shape))] : value;
  }
  return out;
}

TEST(Pad, MatchesTheReferenceWithNegativeAndInteriorPadding) {
  struct Case {
    Shape shape;
    PaddingConfig cfg;
  };
  const Case cases[] = {
      {{5}, {{{2, 1, 0}}}},
      {{5}, {{{0, 0, 2}}}},
      {{5}, {{{-2, -1, 0}}}},
      {{5}, {{{-3, 2, 1}}}},  // crops into the interior padding
      {{5}, {{{1, -4, 1}}}},
      {{5}, {{{-9, 0, 1}}}},  // everything cropped: size 0
      {{0}, {{{1, 2, 3}}}},   // an empty operand: all padding
      {{3, 4}, {{{1, 0, 0}, {0, 2, 1}}}},
      {{3, 4}, {{{-1, 1, 1}, {2, -3, 0}}}},
      {{2, 3, 2}, {{{0, 1, 1}, {-1, -1, 2}, {1, 1, 0}}}},
      {{}, {{}}},
  };
  for (DType dtype : all_dtypes)
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(xpr::core::name(dtype)) + " " + c.shape.str() + " low " +
                   std::to_string(c.cfg.dims.empty() ? 0 : c.cfg.dims[0][0]));
      std::vector<double> in = sample(dtype, c.shape.size(), 2);
      double value = dtype == xpr::bool_ ? 0 : -1;  // bool samples contain both values
      Shape want_shape;
      std::vector<double> want = pad_reference(in, c.shape, c.cfg, value, want_shape);
      Array out = rt::bind1(rt::pad_p, {make(dtype, in, c.shape), make(dtype, {value}, Shape{})},
                            {{"padding_config", c.cfg}});
      ASSERT_EQ(out.shape(), want_shape);
      EXPECT_EQ(out.dtype(), dtype);
      EXPECT_EQ(out.to_vector<double>(), want);
    }
}

TEST(Pad, HandComputedCase) {
  // [1 2 3] with low 2, high -1, interior 1: [v v 1 v 2 v 3] without its last element.
  Array x = make(xpr::int32, {1, 2, 3}, Shape{3});
  Array out = rt::bind1(rt::pad_p, {x, make(xpr::int32, {9}, Shape{})},
                        {{"padding_config", PaddingConfig{{{2, -1, 1}}}}});
  EXPECT_EQ(out.to_vector<int>(), (std::vector<int>{9, 9, 1, 9, 2, 9}));
}

// ---- dynamic_slice / dynamic_update_slice -------------------------------------------------------

TEST(DynamicSlice, ClampsStartIndicesIntoTheOperand) {
  const Shape shape{4, 6};
  struct Case {
    std::int64_t i, j, si, sj;
  };
  const Case cases[] = {{1, 2, 2, 3},  {0, 0, 4, 6}, {3, 5, 2, 2}, {-2, 1, 2, 2},
                        {9, -9, 1, 6}, {2, 4, 0, 2}, {1, 1, 4, 1}};
  for (DType dtype : all_dtypes)
    for (DType index_dtype : {xpr::int32, xpr::int64})
      for (const Case& c : cases) {
        SCOPED_TRACE(std::string(xpr::core::name(dtype)) + " start (" + std::to_string(c.i) + ", " +
                     std::to_string(c.j) + ")");
        std::vector<double> in = sample(dtype, shape.size());
        Array out =
            rt::bind(rt::dynamic_slice_p,
                     std::vector<Array>{make(dtype, in, shape), scalar_index(c.i, index_dtype),
                                        scalar_index(c.j, index_dtype)},
                     {{"slice_sizes", Axes{c.si, c.sj}}})
                .at(0);
        ASSERT_EQ(out.shape(), (Shape{c.si, c.sj}));
        std::int64_t i0 = std::min(std::max<std::int64_t>(c.i, 0), 4 - c.si);
        std::int64_t j0 = std::min(std::max<std::int64_t>(c.j, 0), 6 - c.sj);
        std::vector<double> want;
        for (std::int64_t a = 0; a < c.si; ++a)
          for (std::int64_t b = 0; b < c.sj; ++b)
            want.push_back(in[static_cast<std::size_t>((i0 + a) * 6 + j0 + b)]);
        EXPECT_EQ(out.to_vector<double>(), want);
      }
}

TEST(DynamicUpdateSlice, ClampsStartIndicesAndLeavesTheRestUnchanged) {
  const Shape shape{3, 5};
  struct Case {
    std::int64_t i, j;
    Shape update;
  };
  const Case cases[] = {{1, 1, {2, 3}},  {0, 0, {3, 5}}, {2, 4, {2, 2}},
                        {-1, 7, {1, 3}}, {1, 2, {0, 2}}, {0, 3, {3, 1}}};
  for (DType dtype : all_dtypes)
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(xpr::core::name(dtype)) + " update " + c.update.str());
      std::vector<double> in = sample(dtype, shape.size(), 1);
      std::vector<double> up(static_cast<std::size_t>(c.update.size()));
      for (std::size_t k = 0; k < up.size(); ++k)
        up[k] = dtype == xpr::bool_ ? (k % 2 == 0) : 100 + static_cast<double>(k);
      Array out = rt::bind(rt::dynamic_update_slice_p,
                           std::vector<Array>{make(dtype, in, shape), make(dtype, up, c.update),
                                              scalar_index(c.i), scalar_index(c.j, xpr::int64)})
                      .at(0);
      ASSERT_EQ(out.shape(), shape);
      std::int64_t i0 = std::min(std::max<std::int64_t>(c.i, 0), 3 - c.update[0]);
      std::int64_t j0 = std::min(std::max<std::int64_t>(c.j, 0), 5 - c.update[1]);
      std::vector<double> want = in;
      for (std::int64_t a = 0; a < c.update[0]; ++a)
        for (std::int64_t b = 0; b < c.update[1]; ++b)
          want[static_cast<std::size_t>((i0 + a) * 5 + j0 + b)] =
              up[static_cast<std::size_t>(a * c.update[1] + b)];
      EXPECT_EQ(out.to_vector<double>(), want);
    }
}

// ---- concatenate --------------------------------------------------------------------------------

TEST(Concatenate, AlongEveryAxisMatchesTheIndexFormula) {
  struct Case {
    std::vector<Shape> shapes;
    std::int64_t dim;
  };
  const Case cases[] = {
      {{{3}}, 0},
      {{{3}, {4}}, 0},
      {{{2}, {0}, {3}}, 0},
      {{{2, 3}, {1, 3}}, 0},
      {{{2, 3}, {2, 1}, {2, 2}}, 1},
      {{{2, 3, 4}, {2, 3, 1}}, 2},
      {{{2, 1, 4}, {2, 3, 4}, {2, 0, 4}}, 1},
      {{{1, 2, 2}, {3, 2, 2}}, 0},
      {{{0, 2}, {0, 3}}, 1},
  };
  for (DType dtype : all_dtypes)
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(xpr::core::name(dtype)) + " first shape " + c.shapes[0].str() +
                   " dimension " + std::to_string(c.dim));
      std::vector<Array> xs;
      std::vector<std::vector<double>> vals;
      for (std::size_t k = 0; k < c.shapes.size(); ++k) {
        vals.push_back(sample(dtype, c.shapes[k].size(), 100.0 * static_cast<double>(k)));
        xs.push_back(make(dtype, vals.back(), c.shapes[k]));
      }
      Array out = rt::bind(rt::concatenate_p, xs, {{"dimension", c.dim}}).at(0);
      std::vector<std::int64_t> od = c.shapes[0].dims();
      od[static_cast<std::size_t>(c.dim)] = 0;
      for (const Shape& s : c.shapes)
        od[static_cast<std::size_t>(c.dim)] += s[static_cast<std::size_t>(c.dim)];
      ASSERT_EQ(out.shape(), Shape(od));
      std::vector<double> got = out.to_vector<double>();
      for (std::int64_t o = 0; o < out.size(); ++o) {
        auto idx = unravel(o, out.shape());
        std::size_t k = 0;  // which operand holds this index along `dim`
        auto& j = idx[static_cast<std::size_t>(c.dim)];
        while (j >= c.shapes[k][static_cast<std::size_t>(c.dim)])
          j -= c.shapes[k++][static_cast<std::size_t>(c.dim)];
        EXPECT_EQ(got[static_cast<std::size_t>(o)],
                  vals[k][static_cast<std::size_t>(ravel(idx, c.shapes[k]))]);
      }
    }
}

TEST(Concatenate, WeakOnlyWhenEveryOperandIs) {
  Array a = make(xpr::float64, {1}, Shape{1}, true), b = make(xpr::float64, {2}, Shape{1}, true);
  Array c = make(xpr::float64, {3}, Shape{1});
  EXPECT_TRUE(rt::bind1(rt::concatenate_p, {a, b}, {{"dimension", std::int64_t{0}}}).weak_type());
  Array abc = rt::bind1(rt::concatenate_p, {a, b, c}, {{"dimension", std::int64_t{0}}});
  EXPECT_FALSE(abc.weak_type());
  EXPECT_EQ(abc.to_vector<double>(), (std::vector<double>{1, 2, 3}));
}

// ---- errors -------------------------------------------------------------------------------------

template <class E>
void expect_error(const rt::Primitive& p, const std::vector<Array>& args, const Params& params,
                  std::initializer_list<const char*> parts) {
  try {
    rt::bind(p, args, params);
    ADD_FAILURE() << "expected an exception from " << p.name();
  } catch (const E& e) {
    std::string msg = e.what();
    for (const char* part : parts) EXPECT_NE(msg.find(part), std::string::npos) << msg;
  }
  std::vector<ShapedArray> avals;
  for (const Array& a : args) avals.push_back(a.aval());
  EXPECT_THROW(p.abstract_eval(avals, params), E) << p.name();
}

TEST(Slicing, Errors) {
  Array m = make(xpr::float32, sample(xpr::float32, 12), Shape{3, 4});
  Array v = make(xpr::float32, {0}, Shape{});
  Array vi = make(xpr::int32, {0}, Shape{});
  auto slice_params = [](Axes s, Axes l, Axes st) {
    return Params{{"start_indices", s}, {"limit_indices", l}, {"strides", st}};
  };
  // slice
  expect_error<xpr::shape_error>(rt::slice_p, {m}, slice_params({0}, {3, 4}, {1, 1}),
                                 {"start_indices of length 2", "found length 1"});
  expect_error<xpr::shape_error>(rt::slice_p, {m}, slice_params({0, 0}, {3, 4}, {1}),
                                 {"strides of length 2"});
  expect_error<xpr::index_error>(rt::slice_p, {m}, slice_params({0, 0}, {3, 5}, {1, 1}),
                                 {"limit_indices <= 4", "dimension 1", "limit 5"});
  expect_error<xpr::index_error>(rt::slice_p, {m}, slice_params({-1, 0}, {3, 4}, {1, 1}),
                                 {"0 <= start_indices", "start -1"});
  expect_error<xpr::index_error>(rt::slice_p, {m}, slice_params({2, 0}, {1, 4}, {1, 1}),
                                 {"start 2 and limit 1"});
  expect_error<xpr::value_error>(rt::slice_p, {m}, slice_params({0, 0}, {3, 4}, {1, 0}),
                                 {"positive strides", "found 0"});
  expect_error<xpr::type_error>(rt::slice_p, {m, m}, slice_params({0, 0}, {3, 4}, {1, 1}),
                                {"expected 1 operands, found 2"});
  // pad
  auto pad_params = [](PaddingConfig c) { return Params{{"padding_config", c}}; };
  expect_error<xpr::dtype_error>(rt::pad_p, {m, vi}, pad_params({{{0, 0, 0}, {0, 0, 0}}}),
                                 {"padding_value", "float32", "found int32"});
  expect_error<xpr::shape_error>(rt::pad_p, {m, m}, pad_params({{{0, 0, 0}, {0, 0, 0}}}),
                                 {"rank-0 padding_value", "(3, 4)"});
  expect_error<xpr::shape_error>(rt::pad_p, {m, v}, pad_params({{{0, 0, 0}}}),
                                 {"padding_config of length 2", "found length 1"});
  expect_error<xpr::value_error>(rt::pad_p, {m, v}, pad_params({{{0, 0, -1}, {0, 0, 0}}}),
                                 {"non-negative interior", "found -1"});
  expect_error<xpr::shape_error>(rt::pad_p, {m, v}, pad_params({{{-2, -2, 0}, {0, 0, 0}}}),
                                 {"padded size >= 0", "found -1", "low=-2"});
  expect_error<xpr::type_error>(rt::pad_p, {m}, pad_params({{{0, 0, 0}, {0, 0, 0}}}),
                                {"expected 2 operands (operand, padding_value), found 1"});
  // dynamic_slice
  Params sizes{{"slice_sizes", Axes{2, 2}}};
  expect_error<xpr::type_error>(rt::dynamic_slice_p, {m, vi}, sizes,
                                {"expected 2 start indices", "found 1"});
  expect_error<xpr::dtype_error>(rt::dynamic_slice_p, {m, vi, v}, sizes,
                                 {"integer dtype", "index 1 of dtype float32"});
  expect_error<xpr::shape_error>(rt::dynamic_slice_p, {m, vi, make(xpr::int32, {0, 0}, Shape{2})},
                                 sizes, {"rank-0 start indices", "index 1 of shape (2,)"});
  expect_error<xpr::shape_error>(rt::dynamic_slice_p, {m, vi, vi}, {{"slice_sizes", Axes{2, 5}}},
                                 {"slice_sizes <= operand shape", "slice size 5"});
  expect_error<xpr::shape_error>(rt::dynamic_slice_p, {m, vi, vi}, {{"slice_sizes", Axes{2}}},
                                 {"slice_sizes of length 2"});
  expect_error<xpr::type_error>(rt::dynamic_slice_p, {}, sizes, {"expected an operand"});
  // dynamic_update_slice
  Array u = make(xpr::float32, {1, 2}, Shape{1, 2});
  expect_error<xpr::dtype_error>(rt::dynamic_update_slice_p,
                                 {m, make(xpr::int32, {1, 2}, Shape{1, 2}), vi, vi}, {},
                                 {"update of the operand's dtype float32", "found int32"});
  expect_error<xpr::shape_error>(rt::dynamic_update_slice_p,
                                 {m, make(xpr::float32, {1, 2}, Shape{2}), vi, vi}, {},
                                 {"operand's rank 2", "(2,)"});
  expect_error<xpr::shape_error>(
      rt::dynamic_update_slice_p,
      {m, make(xpr::float32, sample(xpr::float32, 5), Shape{1, 5}), vi, vi}, {},
      {"no larger than the operand", "(1, 5)", "(3, 4)"});
  expect_error<xpr::type_error>(rt::dynamic_update_slice_p, {m, u, vi}, {},
                                {"expected 2 start indices", "found 1"});
  expect_error<xpr::type_error>(rt::dynamic_update_slice_p, {m}, {},
                                {"expected an operand and an update"});
  // concatenate
  auto dim = [](std::int64_t d) { return Params{{"dimension", d}}; };
  expect_error<xpr::value_error>(rt::concatenate_p, {}, dim(0), {"at least one operand"});
  expect_error<xpr::index_error>(rt::concatenate_p, {m, m}, dim(2),
                                 {"dimension 2", "rank 2", "0 <= dimension < 2"});
  expect_error<xpr::index_error>(rt::concatenate_p, {v, v}, dim(0), {"rank 0"});
  expect_error<xpr::dtype_error>(rt::concatenate_p, {m, make(xpr::int32, {0}, Shape{1, 4})}, dim(0),
                                 {"one dtype", "float32", "int32"});
  expect_error<xpr::shape_error>(rt::concatenate_p, {m, u}, dim(0),
                                 {"equal shapes except along dimension 0", "(3, 4)", "(1, 2)"});
  expect_error<xpr::shape_error>(rt::concatenate_p, {m, make(xpr::float32, {1, 2, 3}, Shape{3})},
                                 dim(0), {"(3,)"});
}

}  // namespace test_prims_slicing
