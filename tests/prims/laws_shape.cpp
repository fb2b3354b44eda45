// Laws of the shape primitives' rules (shape.hpp: broadcast_in_dim, reshape, transpose, squeeze,
// expand_dims), over one table of op records: jvp against central finite differences, vmap against
// the loop for every batch axis placement (with and without a not_mapped operand), vmap of vmap,
// vmap of jvp, jvp of vmap; the equations the batching rules stage (no data movement where none
// is needed); and the errors of a batched application, reported against the per-example shape.
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/jaxpr_print.hpp"
#include "xpr/rt/prims/shape.hpp"
#include "xpr/rt/transformations.hpp"

#include "tests/laws/laws.hpp"

namespace test_prims_laws_shape {

namespace rt = xpr::rt;
namespace laws = xpr::laws;
using laws::ArgSpec;
using rt::Arrays;
using rt::Axes;
using rt::BatchDims;
using rt::FlatFunction;
using rt::None;
using rt::Params;
using xpr::Array;
using xpr::DType;
using xpr::Shape;

/// One shape primitive with fixed params, applied to an operand of shape `operand`.
struct ShapeRecord {
  std::string name;
  const rt::Primitive* prim;
  Params params;
  Shape operand;
};

std::ostream& operator<<(std::ostream& os, const ShapeRecord& r) { return os << r.name; }

// clang-format off
const std::vector<ShapeRecord>& records() {
  static const std::vector<ShapeRecord> table = {
    {"broadcast_in_dim_row", &rt::broadcast_in_dim_p,
     {{"shape", Shape{2, 3}}, {"broadcast_dimensions", Axes{1}}}, Shape{3}},
    {"broadcast_in_dim_size_one", &rt::broadcast_in_dim_p,
     {{"shape", Shape{2, 4}}, {"broadcast_dimensions", Axes{0, 1}}}, Shape{2, 1}},
    {"broadcast_in_dim_middle", &rt::broadcast_in_dim_p,
     {{"shape", Shape{2, 3, 4}}, {"broadcast_dimensions", Axes{0, 2}}}, Shape{2, 4}},
    {"broadcast_in_dim_scalar", &rt::broadcast_in_dim_p,
     {{"shape", Shape{2, 3}}, {"broadcast_dimensions", Axes{}}}, Shape{}},
    {"broadcast_in_dim_same", &rt::broadcast_in_dim_p,
     {{"shape", Shape{2, 3}}, {"broadcast_dimensions", Axes{0, 1}}}, Shape{2, 3}},
    {"reshape_flatten", &rt::reshape_p,
     {{"new_sizes", Shape{12}}, {"dimensions", None{}}}, Shape{2, 3, 2}},
    {"reshape_split", &rt::reshape_p,
     {{"new_sizes", Shape{3, 2, 2}}, {"dimensions", None{}}}, Shape{6, 2}},
    {"reshape_with_dimensions", &rt::reshape_p,
     {{"new_sizes", Shape{3, 4}}, {"dimensions", Axes{2, 0, 1}}}, Shape{2, 3, 2}},
    {"reshape_to_scalar", &rt::reshape_p,
     {{"new_sizes", Shape{}}, {"dimensions", None{}}}, Shape{1, 1}},
    {"transpose_2d", &rt::transpose_p, {{"permutation", Axes{1, 0}}}, Shape{2, 3}},
    {"transpose_3d", &rt::transpose_p, {{"permutation", Axes{2, 0, 1}}}, Shape{2, 3, 4}},
    {"transpose_3d_other", &rt::transpose_p, {{"permutation", Axes{1, 2, 0}}}, Shape{2, 3, 4}},
    {"transpose_identity", &rt::transpose_p, {{"permutation", Axes{0, 1}}}, Shape{2, 3}},
    {"squeeze_middle", &rt::squeeze_p, {{"dimensions", Axes{1}}}, Shape{2, 1, 3}},
    {"squeeze_ends", &rt::squeeze_p, {{"dimensions", Axes{0, 2}}}, Shape{1, 2, 1}},
    {"squeeze_negative", &rt::squeeze_p, {{"dimensions", Axes{-1}}}, Shape{2, 1}},
    {"squeeze_to_scalar", &rt::squeeze_p, {{"dimensions", Axes{0}}}, Shape{1}},
    {"expand_dims_front", &rt::expand_dims_p, {{"dimensions", Axes{0}}}, Shape{2, 3}},
    {"expand_dims_two", &rt::expand_dims_p, {{"dimensions", Axes{1, 3}}}, Shape{2, 3}},
    {"expand_dims_back", &rt::expand_dims_p, {{"dimensions", Axes{2}}}, Shape{2, 3}},
    {"expand_dims_scalar", &rt::expand_dims_p, {{"dimensions", Axes{0, 1}}}, Shape{}},
    {"expand_dims_negative", &rt::expand_dims_p, {{"dimensions", Axes{-1}}}, Shape{2, 3}},
  };
  return table;
}
// clang-format on

FlatFunction apply(const ShapeRecord& r) {
  return [prim = r.prim, params = r.params](std::span<const Array> args) {
    return rt::bind(*prim, args, params);  // qualified: ADL would find std::bind
  };
}

ArgSpec spec(const ShapeRecord& r, DType dtype, bool weak = false) {
  return {r.operand, dtype, -2, 2, false, false, weak};
}

/// The operand types tried by the first-order laws (shape primitives take every dtype and keep
/// the weak flag).
struct Case {
  DType dtype;
  bool weak;
};
const Case cases[] = {{DType::float32, false},
                      {DType::float64, false},
                      {DType::float64, true},
                      {DType::int32, false},
                      {DType::bool_, false}};

std::string case_str(const Case& c) {
  return std::string(xpr::core::name(c.dtype)) + (c.weak ? " (weak)" : "");
}

class ShapeLaws : public testing::TestWithParam<ShapeRecord> {};

TEST_P(ShapeLaws, JvpMatchesFiniteDifferences) {
  const ShapeRecord& r = GetParam();
  std::uint64_t seed = 1;
  for (const Case& c : cases) {
    SCOPED_TRACE(case_str(c));
    laws::check_jvp(apply(r), std::vector{spec(r, c.dtype, c.weak)}, seed++);
  }
}

TEST_P(ShapeLaws, VmapMatchesTheLoop) {
  const ShapeRecord& r = GetParam();
  std::uint64_t seed = 100;
  for (const Case& c : cases) {
    SCOPED_TRACE(case_str(c));
    EXPECT_GT(laws::check_batch(apply(r), std::vector{spec(r, c.dtype, c.weak)}, seed++), 0);
    // With a second, mapped argument passed through, the operand may be not_mapped too (the
    // rules' unbatched case; the result is then broadcast along out_axes).
    FlatFunction f = apply(r);
    FlatFunction with_witness = [f](std::span<const Array> args) {
      Arrays out = f(args.first(1));
      out.push_back(args[1]);
      return out;
    };
    std::vector<ArgSpec> specs{spec(r, c.dtype, c.weak),
                               {Shape{}, DType::float64, -2, 2, false, false, false}};
    EXPECT_GT(laws::check_batch(with_witness, specs, seed++), 0);
  }
}

// vmap(vmap(f)): the inner batching rule meets operands whose batch axis is anywhere, and the
// outer one operands already batched.
TEST_P(ShapeLaws, VmapOfVmapMatchesTheLoop) {
  const ShapeRecord& r = GetParam();
  std::uint64_t seed = 200;
  for (DType dtype : {DType::float32, DType::float64}) {
    const std::int64_t rank = static_cast<std::int64_t>(r.operand.rank());
    const auto out_rank = static_cast<std::int64_t>(
        r.prim->abstract_eval(std::vector{rt::ShapedArray{r.operand, dtype, false}}, r.params)[0]
            .ndim());
    for (std::int64_t in = 0; in <= rank; ++in) {
      SCOPED_TRACE(std::string(xpr::core::name(dtype)) + " inner in_axes " + std::to_string(in));
      // The inner result's batch axis: first, middle or last as `in` goes.
      FlatFunction inner =
          laws::vmap_of(apply(r), BatchDims{in}, BatchDims{std::min(in, out_rank)});
      EXPECT_GT(laws::check_batch(inner, std::vector{laws::batched_spec(spec(r, dtype), 2, in)},
                                  seed++, 3),
                0);
    }
  }
}

TEST_P(ShapeLaws, VmapOfJvpMatchesTheLoop) {
  const ShapeRecord& r = GetParam();
  std::uint64_t seed = 300;
  for (DType dtype : {DType::float32, DType::float64}) {
    SCOPED_TRACE(xpr::core::name(dtype));
    std::vector<ArgSpec> specs{spec(r, dtype), laws::tangent_spec(spec(r, dtype))};
    EXPECT_GT(laws::check_batch(laws::jvp_of(apply(r)), specs, seed++), 0);
  }
}

TEST_P(ShapeLaws, JvpOfVmapMatchesFiniteDifferences) {
  const ShapeRecord& r = GetParam();
  std::uint64_t seed = 400;
  for (DType dtype : {DType::float32, DType::float64}) {
    const std::int64_t rank = static_cast<std::int64_t>(r.operand.rank());
    for (std::int64_t in = 0; in <= rank; ++in) {
      SCOPED_TRACE(std::string(xpr::core::name(dtype)) + " in_axes " + std::to_string(in));
      FlatFunction f = laws::vmap_of(apply(r), BatchDims{in}, BatchDims{0});
      laws::check_jvp(f, std::vector{laws::batched_spec(spec(r, dtype), 3, in)}, seed++);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Prims, ShapeLaws, testing::ValuesIn(records()),
                         [](const testing::TestParamInfo<ShapeRecord>& p) { return p.param.name; });

// ---- the checkers' own machinery ---------------------------------------------------------------

// stack_at / slice_at against hand-placed elements: x_k = [[k, 10 + k], [20 + k, 30 + k]].
TEST(LawsHelpers, StackAndSliceByHand) {
  Arrays xs;
  for (int k = 0; k < 3; ++k)
    xs.push_back(laws::make_array(Shape{2, 2}, DType::int32, {0. + k, 10. + k, 20. + k, 30. + k}));
  Array s1 = laws::stack_at(xs, 1);  // s1[i][k][j] = x_k[i][j]
  ASSERT_EQ(s1.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(laws::values(s1), (std::vector<double>{0, 10, 1, 11, 2, 12, 20, 30, 21, 31, 22, 32}));
  Array s2 = laws::stack_at(xs, 2);  // s2[i][j][k]
  EXPECT_EQ(laws::values(s2), (std::vector<double>{0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32}));
  for (std::int64_t k = 0; k < 3; ++k) {
    EXPECT_TRUE(laws::identical(laws::slice_at(s1, 1, k), xs[static_cast<std::size_t>(k)]));
    EXPECT_TRUE(laws::identical(laws::slice_at(s2, 2, k), xs[static_cast<std::size_t>(k)]));
  }
  EXPECT_FALSE(laws::identical(xs[0], xs[1]));
  EXPECT_FALSE(laws::identical(xs[0], laws::make_array(Shape{2, 2}, DType::int32, {0, 10, 20, 30},
                                                       /*weak=*/true)));
}

// check_batch covers every in_axes and out_axes: for one operand of rank 2 (mapped at 0, 1 or 2;
// not_mapped alone is no vmap) and a rank-2 result (stacked at 0, 1 or 2), 3 x 3 vmaps.
TEST(LawsHelpers, CheckBatchCountsEveryPlacement) {
  FlatFunction f = [](std::span<const Array> a) {
    return rt::bind(rt::transpose_p, a, {{"permutation", Axes{1, 0}}});
  };
  EXPECT_EQ(laws::check_batch(f, std::vector{ArgSpec{Shape{2, 3}}}, 7), 9);
  // Two operands of rank 2: (4 x 4 - 1) in_axes, 3 out_axes; sampled when capped.
  FlatFunction g = [](std::span<const Array> a) { return Arrays{a[0], a[1]}; };
  std::vector<ArgSpec> two{ArgSpec{Shape{2, 3}}, ArgSpec{Shape{3, 2}}};
  EXPECT_EQ(laws::check_batch(g, two, 7), 45);
  EXPECT_EQ(laws::check_batch(g, two, 7, 3, 5), 15);
}

// ---- what the batching rules stage
// ---------------------------------------------------------------

/// The jaxpr of `vmap(prim[params], in_axes, out_axes)` on an f64 operand of `shape`.
std::string batched_jaxpr(const rt::Primitive& prim, const Params& params, const Shape& shape,
                          std::int64_t in_axis, std::int64_t out_axis) {
  FlatFunction f = [&](std::span<const Array> args) { return rt::bind(prim, args, params); };
  FlatFunction g = laws::vmap_of(f, BatchDims{in_axis}, BatchDims{out_axis});
  rt::Avals in{rt::ShapedArray{shape, DType::float64, false}};
  std::ostringstream os;
  os << rt::make_jaxpr_flat(g, in);
  return os.str();
}

// The batch axis stays where it is: one equation, no transpose, when out_axes is where the rule
// leaves the batch axis. Expected params derived by hand from the per-example ones.
TEST(ShapeBatchRules, StageOneEquationWithoutDataMovement) {
  // transpose[(1, 0)] on (2, 3), batch axis 1 of (2, 4, 3): the batch axis stays at 1.
  EXPECT_EQ(batched_jaxpr(rt::transpose_p, {{"permutation", Axes{1, 0}}}, Shape{2, 4, 3}, 1, 1),
            "{ lambda ; a:f64[2,4,3]. let\n"
            "    b:f64[3,4,2] = transpose[permutation=(2, 1, 0)] a\n"
            "  in (b,) }");
  // broadcast_in_dim (3,) -> (2, 3) along (1,), batch axis 1 of (3, 4): the batch axis goes right
  // after result dimension 1, which receives operand dimension 0.
  EXPECT_EQ(
      batched_jaxpr(rt::broadcast_in_dim_p,
                    {{"shape", Shape{2, 3}}, {"broadcast_dimensions", Axes{1}}}, Shape{3, 4}, 1, 2),
      "{ lambda ; a:f64[3,4]. let\n"
      "    b:f64[2,3,4] = broadcast_in_dim[broadcast_dimensions=(1, 2) shape=(2, 3, 4)] a\n"
      "  in (b,) }");
  // squeeze (2, 1, 3) at (1,), batch axis 2 of (2, 1, 4, 3): squeezes axis 1; the batch axis
  // moves to 1.
  EXPECT_EQ(batched_jaxpr(rt::squeeze_p, {{"dimensions", Axes{1}}}, Shape{2, 1, 4, 3}, 2, 1),
            "{ lambda ; a:f64[2,1,4,3]. let b:f64[2,4,3] = squeeze[dimensions=(1,)] a in (b,) }");
  // expand_dims (2, 3) at (1, 3), batch axis 1 of (2, 4, 3): operand dimension 0 lands at result
  // 0, so the batch axis goes to 1 and the new axes to 2 and 4.
  EXPECT_EQ(batched_jaxpr(rt::expand_dims_p, {{"dimensions", Axes{1, 3}}}, Shape{2, 4, 3}, 1, 1),
            "{ lambda ; a:f64[2,4,3]. let\n"
            "    b:f64[2,4,1,3,1] = expand_dims[dimensions=(2, 4)] a\n"
            "  in (b,) }");
}

// reshape moves the batch axis to the front first, as JAX's rule does.
TEST(ShapeBatchRules, ReshapeMovesTheBatchAxisFirst) {
  EXPECT_EQ(batched_jaxpr(rt::reshape_p, {{"new_sizes", Shape{6}}, {"dimensions", None{}}},
                          Shape{2, 4, 3}, 1, 0),
            "{ lambda ; a:f64[2,4,3]. let\n"
            "    b:f64[4,2,3] = transpose[permutation=(1, 0, 2)] a\n"
            "    c:f64[4,6] = reshape[dimensions=None new_sizes=(4, 6)] b\n"
            "  in (c,) }");
  EXPECT_EQ(batched_jaxpr(rt::reshape_p, {{"new_sizes", Shape{6}}, {"dimensions", Axes{1, 0}}},
                          Shape{4, 2, 3}, 0, 0),
            "{ lambda ; a:f64[4,2,3]. let\n"
            "    b:f64[4,6] = reshape[dimensions=(0, 2, 1) new_sizes=(4, 6)] a\n"
            "  in (b,) }");
}

// ---- errors of a batched application ------------------------------------------------------------

template <class E>
void expect_batched_error(const rt::Primitive& prim, const Params& params, const Shape& shape,
                          std::int64_t in_axis, std::initializer_list<std::string_view> parts) {
  FlatFunction f = [&](std::span<const Array> args) { return rt::bind(prim, args, params); };
  Arrays x{laws::make_array(shape, DType::float64,
                            std::vector<double>(static_cast<std::size_t>(shape.size())))};
  try {
    rt::vmap_flat(f, x, BatchDims{in_axis}, BatchDims{0});
    ADD_FAILURE() << "expected an exception from vmap of " << prim.name();
  } catch (const E& e) {
    for (std::string_view p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "message \"" << e.what() << "\" lacks \"" << p << "\"";
  }
}

// Malformed params are reported as without vmap: against the per-example operand shape.
TEST(ShapeBatchRules, ErrorsNameThePerExampleShape) {
  expect_batched_error<xpr::shape_error>(
      rt::broadcast_in_dim_p, {{"shape", Shape{2, 3}}, {"broadcast_dimensions", Axes{0}}},
      Shape{4, 2, 3}, 0, {"operand shape (2, 3)", "expected 2 broadcast dimension(s)", "found 1"});
  expect_batched_error<xpr::value_error>(rt::transpose_p, {{"permutation", Axes{0, 0}}},
                                         Shape{2, 4, 3}, 1,
                                         {"expected a permutation", "found (0, 0)", "(2, 3)"});
  expect_batched_error<xpr::shape_error>(rt::reshape_p,
                                         {{"new_sizes", Shape{5}}, {"dimensions", None{}}},
                                         Shape{2, 4, 3}, 1, {"(2, 3) (size 6)", "(5,) (size 5)"});
  expect_batched_error<xpr::shape_error>(rt::squeeze_p, {{"dimensions", Axes{1}}}, Shape{2, 4, 3},
                                         1, {"dimension 1", "(2, 3)", "found size 3"});
  expect_batched_error<xpr::index_error>(rt::squeeze_p, {{"dimensions", Axes{2}}}, Shape{2, 4, 3},
                                         1, {"squeeze"});
  expect_batched_error<xpr::value_error>(rt::expand_dims_p, {{"dimensions", Axes{0, 0}}},
                                         Shape{2, 4, 3}, 1, {"expand_dims", "repeated", "(0, 0)"});
}

}  // namespace test_prims_laws_shape
