// Laws of the rules of the structural primitives (reduce.hpp, dot_general.hpp, slicing.hpp,
// iota.hpp, cumsum.hpp, cumulative.hpp with reduce_prod, sort.hpp), over one table of op records in
// float32 and float64: jvp against central finite differences, vmap against the loop for every
// batch axis placement (including not_mapped operands and batched or unbatched start indices), vmap
// of jvp and jvp of vmap for reduce_sum and dot_general, and the Jacobian of a matrix product by
// vmap of jvp against its closed form.
#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/api.hpp"
#include "xpr/rt/api_transformations.hpp"
#include "xpr/rt/cumulative.hpp"
#include "xpr/rt/sort.hpp"

#include "tests/laws/laws.hpp"

namespace test_prims_laws_structural {

namespace rt = xpr::rt;
namespace laws = xpr::laws;
using laws::ArgSpec;
using rt::Arrays;
using rt::Axes;
using rt::BatchDims;
using rt::DotDimensionNumbers;
using rt::FlatFunction;
using rt::PaddingConfig;
using rt::Params;
using xpr::Array;
using xpr::DType;
using xpr::Shape;

/// One primitive with fixed params; `specs` gives its operands for a floating dtype (start
/// indices stay int32).
struct Record {
  std::string name;
  const rt::Primitive* prim;
  Params params;
  std::function<std::vector<ArgSpec>(DType)> specs;
};

std::ostream& operator<<(std::ostream& os, const Record& r) { return os << r.name; }

ArgSpec real(Shape s, DType d) { return {std::move(s), d, -2, 2, false, false, false}; }
/// A start index in [-1, 4]: negative and too-large values exercise the clamping.
ArgSpec index() { return {Shape{}, DType::int32, -1, 4, false, true, false}; }

std::function<std::vector<ArgSpec>(DType)> reals(std::vector<Shape> shapes) {
  return [shapes](DType d) {
    std::vector<ArgSpec> out;
    for (const Shape& s : shapes) out.push_back(real(s, d));
    return out;
  };
}

Params dn(Axes lc, Axes rc, Axes lb, Axes rb) {
  return {{"dimension_numbers",
           DotDimensionNumbers{std::move(lc), std::move(rc), std::move(lb), std::move(rb)}}};
}

// clang-format off
const std::vector<Record>& records() {
  static const std::vector<Record> table = {
    {"reduce_sum_first", &rt::reduce_sum_p, {{"axes", Axes{0}}}, reals({Shape{2, 3, 2}})},
    {"reduce_sum_middle", &rt::reduce_sum_p, {{"axes", Axes{1}}}, reals({Shape{2, 3, 2}})},
    {"reduce_sum_two", &rt::reduce_sum_p, {{"axes", Axes{0, 2}}}, reals({Shape{2, 3, 2}})},
    {"reduce_sum_all", &rt::reduce_sum_p, {{"axes", Axes{0, 1}}}, reals({Shape{2, 3}})},
    {"reduce_sum_none", &rt::reduce_sum_p, {{"axes", Axes{}}}, reals({Shape{2, 3}})},
    {"reduce_max_last", &rt::reduce_max_p, {{"axes", Axes{1}}}, reals({Shape{2, 3}})},
    {"reduce_max_two", &rt::reduce_max_p, {{"axes", Axes{0, 2}}}, reals({Shape{2, 3, 2}})},
    {"reduce_min_first", &rt::reduce_min_p, {{"axes", Axes{0}}}, reals({Shape{3, 2}})},
    {"reduce_min_all", &rt::reduce_min_p, {{"axes", Axes{0, 1}}}, reals({Shape{2, 3}})},
    {"reduce_prod_last", &rt::reduce_prod_p, {{"axes", Axes{1}}}, reals({Shape{2, 5}})},
    {"reduce_prod_two", &rt::reduce_prod_p, {{"axes", Axes{2, 0}}}, reals({Shape{3, 2, 3}})},
    {"reduce_prod_all", &rt::reduce_prod_p, {{"axes", Axes{0, 1}}}, reals({Shape{2, 2}})},
    {"cumsum_first", &rt::cumsum_p, {{"axis", std::int64_t{0}}, {"reverse", false}},
     reals({Shape{3, 2}})},
    {"cumsum_middle_reverse", &rt::cumsum_p, {{"axis", std::int64_t{1}}, {"reverse", true}},
     reals({Shape{2, 3, 2}})},
    {"cumprod_last", &rt::cumprod_p, {{"axis", std::int64_t{1}}, {"reverse", false}},
     reals({Shape{2, 5}})},
    {"cummax_first_reverse", &rt::cummax_p, {{"axis", std::int64_t{0}}, {"reverse", true}},
     reals({Shape{4, 2}})},
    {"cummin_middle", &rt::cummin_p, {{"axis", std::int64_t{1}}, {"reverse", false}},
     reals({Shape{2, 3, 2}})},
    {"cumlogsumexp_last_reverse", &rt::cumlogsumexp_p, {{"axis", std::int64_t{1}}, {"reverse", true}},
     reals({Shape{2, 4}})},
    {"dot_general_matmul", &rt::dot_general_p, dn({1}, {0}, {}, {}),
     reals({Shape{2, 3}, Shape{3, 4}})},
    {"dot_general_batched", &rt::dot_general_p, dn({2}, {1}, {0}, {0}),
     reals({Shape{2, 3, 4}, Shape{2, 4, 2}})},
    {"dot_general_transposed", &rt::dot_general_p, dn({0}, {1}, {}, {}),
     reals({Shape{3, 2}, Shape{4, 3}})},
    {"dot_general_inner", &rt::dot_general_p, dn({0}, {0}, {}, {}),
     reals({Shape{3}, Shape{3}})},
    {"dot_general_outer", &rt::dot_general_p, dn({}, {}, {}, {}),
     reals({Shape{3}, Shape{2}})},
    {"slice_box", &rt::slice_p,
     {{"start_indices", Axes{1, 0}}, {"limit_indices", Axes{3, 4}}}, reals({Shape{4, 4}})},
    {"slice_strided", &rt::slice_p,
     {{"start_indices", Axes{0, 1}}, {"limit_indices", Axes{4, 5}}, {"strides", Axes{2, 3}}},
     reals({Shape{4, 5}})},
    {"pad_low_high_interior", &rt::pad_p,
     {{"padding_config", PaddingConfig{{{1, 0, 0}, {-1, 2, 1}}}}},
     reals({Shape{2, 3}, Shape{}})},
    {"pad_vector", &rt::pad_p, {{"padding_config", PaddingConfig{{{2, 1, 1}}}}},
     reals({Shape{3}, Shape{}})},
    {"concatenate_two", &rt::concatenate_p, {{"dimension", std::int64_t{1}}},
     reals({Shape{2, 3}, Shape{2, 1}})},
    {"concatenate_three", &rt::concatenate_p, {{"dimension", std::int64_t{0}}},
     reals({Shape{1, 2}, Shape{2, 2}, Shape{1, 2}})},
    {"sort_first", &rt::sort_p,
     {{"dimension", std::int64_t{0}}, {"is_stable", true}, {"num_keys", std::int64_t{1}}},
     reals({Shape{4, 3}})},
    {"sort_last_with_payload", &rt::sort_p,
     {{"dimension", std::int64_t{1}}, {"is_stable", true}, {"num_keys", std::int64_t{1}}},
     reals({Shape{2, 5}, Shape{2, 5}})},
    {"sort_two_keys", &rt::sort_p,
     {{"dimension", std::int64_t{0}}, {"is_stable", true}, {"num_keys", std::int64_t{2}}},
     reals({Shape{4}, Shape{4}, Shape{4}})},
    {"dynamic_slice_2d", &rt::dynamic_slice_p, {{"slice_sizes", Axes{2, 3}}},
     [](DType d) { return std::vector{real(Shape{4, 4}, d), index(), index()}; }},
    {"dynamic_slice_1d", &rt::dynamic_slice_p, {{"slice_sizes", Axes{2}}},
     [](DType d) { return std::vector{real(Shape{5}, d), index()}; }},
    {"dynamic_update_slice_2d", &rt::dynamic_update_slice_p, {},
     [](DType d) { return std::vector{real(Shape{4, 3}, d), real(Shape{2, 2}, d), index(),
                                      index()}; }},
    {"dynamic_update_slice_1d", &rt::dynamic_update_slice_p, {},
     [](DType d) { return std::vector{real(Shape{5}, d), real(Shape{2}, d), index()}; }},
  };
  return table;
}
// clang-format on

FlatFunction apply(const Record& r) {
  return [prim = r.prim, params = r.params](std::span<const Array> args) {
    return rt::bind(*prim, args, params);  // qualified: ADL would find std::bind
  };
}

const DType floats[] = {DType::float32, DType::float64};

class StructuralLaws : public testing::TestWithParam<Record> {};

TEST_P(StructuralLaws, JvpMatchesFiniteDifferences) {
  const Record& r = GetParam();
  std::uint64_t seed = 1;
  for (DType d : floats) {
    SCOPED_TRACE(xpr::core::name(d));
    for (int k = 0; k < 3; ++k) laws::check_jvp(apply(r), r.specs(d), seed++);
  }
}

// Every in_axes placement (each operand not_mapped or mapped at any axis, so unbatched operands
// and batched or unbatched start indices both occur) and every out_axes placement.
TEST_P(StructuralLaws, VmapMatchesTheLoop) {
  const Record& r = GetParam();
  std::uint64_t seed = 100;
  for (DType d : floats) {
    SCOPED_TRACE(xpr::core::name(d));
    EXPECT_GT(laws::check_batch(apply(r), r.specs(d), seed++), 0);
  }
}

TEST_P(StructuralLaws, VmapOfJvpMatchesTheLoop) {
  const Record& r = GetParam();
  std::uint64_t seed = 300;
  for (DType d : floats) {
    SCOPED_TRACE(xpr::core::name(d));
    std::vector<ArgSpec> specs = r.specs(d);
    for (const ArgSpec& s : r.specs(d)) specs.push_back(laws::tangent_spec(s));
    EXPECT_GT(laws::check_batch(laws::jvp_of(apply(r)), specs, seed++, 3, 48), 0);
  }
}

TEST_P(StructuralLaws, JvpOfVmapMatchesFiniteDifferences) {
  const Record& r = GetParam();
  std::uint64_t seed = 400;
  for (DType d : floats) {
    const std::vector<ArgSpec> specs = r.specs(d);
    const auto rank = static_cast<std::int64_t>(specs[0].shape.rank());
    for (std::int64_t in = 0; in <= rank; ++in) {
      SCOPED_TRACE(std::string(xpr::core::name(d)) + " first in_axes " + std::to_string(in));
      // The first operand mapped at `in`, the others not mapped.
      BatchDims in_axes{in};
      in_axes.resize(specs.size());
      std::vector<ArgSpec> batched = specs;
      batched[0] = laws::batched_spec(specs[0], 3, in);
      laws::check_jvp(laws::vmap_of(apply(r), in_axes, BatchDims{0}), batched, seed++);
      // Every operand mapped, at its last axis.
      BatchDims last(specs.size());
      std::vector<ArgSpec> all;
      for (std::size_t i = 0; i < specs.size(); ++i) {
        const auto ax = static_cast<std::int64_t>(specs[i].shape.rank());
        last[i] = ax;
        all.push_back(laws::batched_spec(specs[i], 2, ax));
      }
      laws::check_jvp(laws::vmap_of(apply(r), last, BatchDims{0}), all, seed++);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Prims, StructuralLaws, testing::ValuesIn(records()),
                         [](const testing::TestParamInfo<Record>& p) { return p.param.name; });

// ---- the Jacobian of a matrix product, by vmap of jvp ---------------------------------------

/// The identity basis of matrices of `shape`, stacked: (size, shape...).
Array basis(const Shape& shape, DType d) {
  const std::int64_t n = shape.size();
  std::vector<double> v(static_cast<std::size_t>(n * n), 0.0);
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i * n + i)] = 1.0;
  std::vector<std::int64_t> dims{n};
  dims.insert(dims.end(), shape.begin(), shape.end());
  return laws::make_array(Shape(std::move(dims)), d, v);
}

// C = A·B with A (2, 3), B (3, 4): ∂C[i,j]/∂A[k,l] = δ_ik B[l,j] and ∂C[i,j]/∂B[k,l] = A[i,k] δ_jl.
// vmap over the basis tangents of each input gives the Jacobian, row (k, l) per basis element.
TEST(StructuralJacobian, MatmulByVmapOfJvpIsTheClosedForm) {
  for (DType d : floats) {
    SCOPED_TRACE(xpr::core::name(d));
    laws::Rng rng(7);
    const Array a = laws::draw(real(Shape{2, 3}, d), rng),
                b = laws::draw(real(Shape{3, 4}, d), rng);
    const std::vector<double> av = laws::values(a), bv = laws::values(b);
    FlatFunction matmul = [](std::span<const Array> args) {
      return rt::bind(
          rt::dot_general_p, args,
          {{"dimension_numbers", DotDimensionNumbers{Axes{1}, Axes{0}, Axes{}, Axes{}}}});
    };
    const Array za = laws::make_array(a.shape(), d, std::vector<double>(6, 0.0));
    const Array zb = laws::make_array(b.shape(), d, std::vector<double>(12, 0.0));
    FlatFunction along_a = [&](std::span<const Array> t) {
      return rt::jvp_flat(matmul, Arrays{a, b}, Arrays{t[0], zb}).second;
    };
    FlatFunction along_b = [&](std::span<const Array> t) {
      return rt::jvp_flat(matmul, Arrays{a, b}, Arrays{za, t[0]}).second;
    };
    const Array ja =
        rt::vmap_flat(along_a, Arrays{basis(a.shape(), d)}, BatchDims{0}, BatchDims{0})[0];
    const Array jb =
        rt::vmap_flat(along_b, Arrays{basis(b.shape(), d)}, BatchDims{0}, BatchDims{0})[0];
    ASSERT_EQ(ja.shape(), (Shape{6, 2, 4}));
    ASSERT_EQ(jb.shape(), (Shape{12, 2, 4}));
    EXPECT_EQ(ja.dtype(), d);
    const std::vector<double> jav = laws::values(ja), jbv = laws::values(jb);
    // Each entry is one product of inputs (the others are exact zeros), so it is exact.
    for (int k = 0; k < 2; ++k)
      for (int l = 0; l < 3; ++l)
        for (int i = 0; i < 2; ++i)
          for (int j = 0; j < 4; ++j)
            EXPECT_EQ(jav[static_cast<std::size_t>(((k * 3 + l) * 2 + i) * 4 + j)],
                      i == k ? bv[static_cast<std::size_t>(l * 4 + j)] : 0.0)
                << "dC[" << i << "," << j << "]/dA[" << k << "," << l << "]";
    for (int k = 0; k < 3; ++k)
      for (int l = 0; l < 4; ++l)
        for (int i = 0; i < 2; ++i)
          for (int j = 0; j < 4; ++j)
            EXPECT_EQ(jbv[static_cast<std::size_t>(((k * 4 + l) * 2 + i) * 4 + j)],
                      j == l ? av[static_cast<std::size_t>(i * 3 + k)] : 0.0)
                << "dC[" << i << "," << j << "]/dB[" << k << "," << l << "]";
  }
}

// ---- reduce_max's tangent at ties, and iota ---------------------------------------------------

// The tangent of max over a tie is the mean of the tied elements' tangents (JAX's convention),
// hand-computed: max(1, 3, 3) along t = (5, 2, 4) is 3 with tangent (2 + 4) / 2 = 3.
TEST(StructuralRules, ReduceMaxTangentAveragesTies) {
  FlatFunction f = [](std::span<const Array> args) {
    return rt::bind(rt::reduce_max_p, args, {{"axes", Axes{0}}});
  };
  Array x = laws::make_array(Shape{3}, DType::float64, {1, 3, 3});
  Array t = laws::make_array(Shape{3}, DType::float64, {5, 2, 4});
  auto [ys, ts] = rt::jvp_flat(f, Arrays{x}, Arrays{t});
  EXPECT_EQ(laws::values(ys[0]), std::vector<double>{3});
  EXPECT_EQ(laws::values(ts[0]), std::vector<double>{3});
}

// iota has no operands: its rules are called directly. jvp gives a zero tangent; batch gives
// the unbatched iota (0, 1, 2 along dimension 1, hand-written) with no batch axis.
TEST(StructuralRules, IotaRules) {
  const Params params{
      {"dtype", DType::float64}, {"shape", Shape{2, 3}}, {"dimension", std::int64_t{1}}};
  const std::vector<double> want{0, 1, 2, 0, 1, 2};
  auto [ps, ts] = rt::iota_p.jvp({}, {}, params);
  ASSERT_EQ(ps.size(), 1u);
  EXPECT_EQ(laws::values(ps[0]), want);
  EXPECT_EQ(ts[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(laws::values(ts[0]), std::vector<double>(6, 0.0));
  auto [outs, dims] = rt::iota_p.batch({}, {}, 4, params);
  ASSERT_EQ(dims.size(), 1u);
  EXPECT_FALSE(dims[0].has_value());
  EXPECT_EQ(laws::values(outs[0]), want);
  // Inside a function of a batched, differentiated input: x * iota.
  FlatFunction f = [](std::span<const Array> args) {
    Array i = xpr::broadcasted_iota(DType::float64, Shape{3}, 0);
    return Arrays{args[0] * i};
  };
  laws::check_jvp(f, std::vector{real(Shape{3}, DType::float64)}, 5);
  EXPECT_GT(laws::check_batch(f, std::vector{real(Shape{3}, DType::float64)}, 6), 0);
}

// ---- errors of a batched application ------------------------------------------------------------

// Malformed params are reported as without vmap: against the per-example operand.
TEST(StructuralRules, BatchedErrorsNameThePerExampleOperand) {
  FlatFunction bad_axis = [](std::span<const Array> args) {
    return rt::bind(rt::reduce_sum_p, args, {{"axes", Axes{2}}});
  };
  Arrays x{laws::make_array(Shape{4, 2, 3}, DType::float64, std::vector<double>(24, 0.0))};
  try {
    rt::vmap_flat(bad_axis, x, BatchDims{0}, BatchDims{0});
    ADD_FAILURE() << "expected index_error";
  } catch (const xpr::index_error& e) {
    EXPECT_NE(std::string(e.what()).find("array of rank 2"), std::string::npos) << e.what();
  }
  FlatFunction bad_dot = [](std::span<const Array> args) {
    return rt::bind(rt::dot_general_p, args,
                    {{"dimension_numbers", DotDimensionNumbers{Axes{1}, Axes{0}, Axes{}, Axes{}}}});
  };
  Arrays ab{laws::make_array(Shape{4, 2, 3}, DType::float64, std::vector<double>(24, 0.0)),
            laws::make_array(Shape{2, 3}, DType::float64, std::vector<double>(6, 0.0))};
  try {
    rt::vmap_flat(bad_dot, ab, BatchDims{0, std::nullopt}, BatchDims{0});
    ADD_FAILURE() << "expected shape_error";
  } catch (const xpr::shape_error& e) {
    EXPECT_NE(std::string(e.what()).find("lhs shape (2, 3), rhs shape (2, 3)"), std::string::npos)
        << e.what();
  }
}

}  // namespace test_prims_laws_structural
