// Tests of the transpose rules of include/xpr/rt/prims/*.hpp: for every linear primitive, with
// random operands and a random cotangent, the defining identity of the transpose
//   <ct, f(t)> == sum_i <f^T(ct)_i, t_i>
// (f the primitive with its known operands fixed, t its undefined ones; f(t) - f(0) where the
// known operands make it affine), with the inner products
// computed here in long double; each cotangent has its operand's exact type (shape, dtype, weak
// flag). Then the rules on tracers (under vmap and jvp), and their errors.
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/api.hpp"

#include "tests/laws/laws.hpp"
#include "tests/prims/common.hpp"

namespace test_prims_transpose {

namespace rt = xpr::rt;
namespace laws = xpr::laws;
using rt::Axes;
using rt::DotDimensionNumbers;
using rt::LinearArg;
using rt::PaddingConfig;
using rt::Params;
using rt::Primitive;
using rt::UndefinedPrimal;
using xpr::Array;
using xpr::DType;
using xpr::Shape;
using xpr::ShapedArray;

/// An operand of the primitive under test: known (a value) or linear (only its type).
struct Operand {
  std::optional<Array> value;
  ShapedArray aval;
};
Operand known(Array a) {
  ShapedArray t = a.aval();
  return {std::move(a), std::move(t)};
}
Operand linear(Shape s, DType d, bool weak = false) {
  return {std::nullopt, {std::move(s), d, weak}};
}
Operand index(std::int64_t i) {
  return known(test_prims_common::make(DType::int32, Shape{}, {double(i)}));
}

Array random(const ShapedArray& a, laws::Rng& rng, double lo = -1, double hi = 1) {
  return laws::draw({a.shape, a.dtype, lo, hi, false, false, a.weak_type}, rng);
}

/// sum_i a_i b_i and sum_i |a_i b_i| over arrays of one shape, in long double.
std::pair<long double, long double> inner_products(const Array& a, const Array& b) {
  EXPECT_EQ(a.shape(), b.shape());
  std::vector<double> va = laws::values(a), vb = laws::values(b);
  long double s = 0, m = 0;
  for (std::size_t i = 0; i < va.size() && i < vb.size(); ++i) {
    s += static_cast<long double>(va[i]) * vb[i];
    m += std::fabs(static_cast<long double>(va[i]) * vb[i]);
  }
  return {s, m};
}

/// Checks `<ct, prim(ops)> == sum_i <transpose(ct)_i, t_i>` at random t and ct, and the types of
/// the cotangents.
void check_transpose(const Primitive& prim, const std::vector<Operand>& ops,
                     const Params& params = {}, std::uint64_t seed = 1) {
  SCOPED_TRACE(prim.name());
  laws::Rng rng(seed);
  std::vector<LinearArg> args;
  rt::Arrays primals, ts(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].value) {
      args.emplace_back(*ops[i].value);
      primals.push_back(*ops[i].value);
    } else {
      ts[i] = random(ops[i].aval, rng);
      args.emplace_back(UndefinedPrimal{ops[i].aval});
      primals.push_back(ts[i]);
    }
  }
  // f(t) - f(0): the linear part, when a known operand makes f affine (add(t, y), pad(t, v)).
  Array out = rt::bind(prim, primals, params)[0];
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (!ops[i].value) primals[i] = rt::zeros_like_aval(ops[i].aval);
  std::vector<double> at_zero = laws::values(rt::bind(prim, primals, params)[0]),
                      lin = laws::values(out);
  for (std::size_t i = 0; i < lin.size(); ++i) lin[i] -= at_zero[i];
  out = laws::make_array(out.shape(), out.dtype(), lin, out.weak_type());
  Array ct = random(out.aval(), rng);
  rt::Cotangents cts = prim.transpose(std::vector<rt::Cotangent>{ct}, args, params);
  ASSERT_EQ(cts.size(), ops.size());
  auto [lhs, scale] = inner_products(ct, out);
  long double rhs = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].value) {
      EXPECT_FALSE(cts[i].has_value()) << "operand " << i << " is known";
      continue;
    }
    ASSERT_TRUE(cts[i].has_value()) << "operand " << i;
    EXPECT_EQ(cts[i]->aval(), ops[i].aval)
        << "operand " << i << ": cotangent " << cts[i]->aval().str();
    if (cts[i]->aval().shape != ops[i].aval.shape) return;
    auto [r, m] = inner_products(*cts[i], ts[i]);
    rhs += r;
    scale += m;
  }
  // Rounding: each inner product sums products rounded in the least precise dtype involved (a
  // cotangent converted f64 -> f32 is rounded to f32).
  bool f32 = out.dtype() == DType::float32;
  for (const Operand& o : ops) f32 = f32 || (!o.value && o.aval.dtype == DType::float32);
  const long double tol = (f32 ? 1e-5L : 1e-12L) * std::max<long double>(scale, 1);
  EXPECT_NEAR(static_cast<double>(lhs), static_cast<double>(rhs), static_cast<double>(tol));
}

constexpr DType floats[] = {DType::float32, DType::float64};

// ---- elementwise --------------------------------------------------------------------------------

TEST(Transpose, AddAndSubInEitherOrBothOperands) {
  laws::Rng rng(7);
  for (DType d : floats) {
    for (const Primitive* p :
         {static_cast<const Primitive*>(&rt::add_p), static_cast<const Primitive*>(&rt::sub_p)}) {
      Shape s{3, 4};
      Array y = random({s, d}, rng);
      check_transpose(*p, {linear(s, d), known(y)});
      check_transpose(*p, {known(y), linear(s, d)});
      check_transpose(*p, {linear(s, d), linear(s, d)});
      // A rank-0 operand stands for any shape: its cotangent is summed to rank 0.
      check_transpose(*p, {linear(Shape{}, d), known(y)});
      check_transpose(*p, {known(y), linear(Shape{}, d)});
      check_transpose(*p, {linear(Shape{}, d), linear(s, d)});
      check_transpose(*p, {linear(s, d), known(random({Shape{}, d}, rng))});
      // Weak operands keep their weak flag.
      check_transpose(*p, {linear(Shape{}, d, true), linear(s, d)});
      check_transpose(*p, {linear(s, d, true), known(y)});
    }
  }
}

TEST(Transpose, NegIsItsOwnTranspose) {
  for (DType d : floats) {
    check_transpose(rt::neg_p, {linear(Shape{5}, d)});
    check_transpose(rt::neg_p, {linear(Shape{}, d, true)});
  }
}

TEST(Transpose, MulByAKnownOperandOnEitherSide) {
  laws::Rng rng(8);
  for (DType d : floats) {
    Shape s{2, 3};
    Array y = random({s, d}, rng);
    check_transpose(rt::mul_p, {linear(s, d), known(y)});
    check_transpose(rt::mul_p, {known(y), linear(s, d)});
    check_transpose(rt::mul_p, {linear(Shape{}, d), known(y)});
    check_transpose(rt::mul_p, {known(y), linear(Shape{}, d)});
    check_transpose(rt::mul_p, {linear(s, d), known(random({Shape{}, d, true}, rng))});
    check_transpose(rt::mul_p, {linear(s, d, true), known(random({Shape{}, d, true}, rng))});
  }
}

TEST(Transpose, DivByAKnownDivisor) {
  laws::Rng rng(9);
  for (DType d : floats) {
    Shape s{4};
    Array y = laws::draw({s, d, 0.5, 2, true, false, false}, rng);
    check_transpose(rt::div_p, {linear(s, d), known(y)});
    check_transpose(rt::div_p, {linear(Shape{}, d), known(y)});
    check_transpose(rt::div_p, {linear(s, d), known(laws::draw({Shape{}, d, 0.5, 2, true}, rng))});
  }
}

TEST(Transpose, NonLinearOperandsAreErrors) {
  using test_prims_common::expect_error;
  Array y = test_prims_common::make(DType::float64, Shape{2}, {1, 2});
  Array ct = y;
  std::vector<rt::Cotangent> cts{ct};
  UndefinedPrimal u{y.aval()};
  expect_error<xpr::type_error>(
      [&] {
        (void)rt::mul_p.transpose(cts, std::vector<LinearArg>{u, u}, {});
      },
      {"mul", "expected one operand to be known", "not linear"});
  expect_error<xpr::type_error>(
      [&] {
        (void)rt::div_p.transpose(cts, std::vector<LinearArg>{y, u}, {});
      },
      {"div", "the divisor", "not linear"});
  expect_error<xpr::core::not_implemented_error>(
      [&] { (void)rt::sin_p.transpose(cts, std::vector<LinearArg>{u}, {}); },
      {"Transpose rule for 'sin' not implemented"});
  expect_error<xpr::core::not_implemented_error>(
      [&] {
        (void)rt::max_p.transpose(cts, std::vector<LinearArg>{u, y}, {});
      },
      {"Transpose rule for 'max' not implemented"});
}

// ---- shape --------------------------------------------------------------------------------------

TEST(Transpose, BroadcastInDimSumsOverNewAndRepeatedDimensions) {
  for (DType d : floats) {
    auto bid = [](Shape shape, Axes dims) {
      return Params{{"shape", std::move(shape)}, {"broadcast_dimensions", std::move(dims)}};
    };
    check_transpose(rt::broadcast_in_dim_p, {linear(Shape{}, d)}, bid({2, 3}, {}));
    check_transpose(rt::broadcast_in_dim_p, {linear(Shape{3}, d)}, bid({2, 3}, {1}));
    check_transpose(rt::broadcast_in_dim_p, {linear(Shape{2}, d)}, bid({2, 3}, {0}));
    // Operand dimensions of size 1 repeated to size n: summed, kept as size 1.
    check_transpose(rt::broadcast_in_dim_p, {linear(Shape{1, 3}, d)}, bid({4, 3}, {0, 1}));
    check_transpose(rt::broadcast_in_dim_p, {linear(Shape{2, 1}, d, true)}, bid({5, 2, 4}, {1, 2}));
    check_transpose(rt::broadcast_in_dim_p, {linear(Shape{1, 1}, d)}, bid({1, 3, 1}, {0, 2}));
    check_transpose(rt::broadcast_in_dim_p, {linear(Shape{2, 3}, d)}, bid({2, 3}, {0, 1}));
  }
}

TEST(Transpose, ReshapeTransposeSqueezeExpandDims) {
  for (DType d : floats) {
    check_transpose(rt::reshape_p, {linear(Shape{2, 3}, d)},
                    {{"new_sizes", Shape{3, 2}}, {"dimensions", rt::None{}}});
    check_transpose(rt::reshape_p, {linear(Shape{2, 3, 4}, d, true)},
                    {{"new_sizes", Shape{6, 4}}, {"dimensions", rt::None{}}});
    check_transpose(rt::reshape_p, {linear(Shape{2, 3, 4}, d)},
                    {{"new_sizes", Shape{4, 6}}, {"dimensions", Axes{2, 0, 1}}});
    check_transpose(rt::transpose_p, {linear(Shape{2, 3}, d)}, {{"permutation", Axes{1, 0}}});
    check_transpose(rt::transpose_p, {linear(Shape{2, 3, 4}, d)}, {{"permutation", Axes{2, 0, 1}}});
    check_transpose(rt::transpose_p, {linear(Shape{2, 3, 4}, d)}, {{"permutation", Axes{1, 2, 0}}});
    check_transpose(rt::squeeze_p, {linear(Shape{1, 3, 1}, d)}, {{"dimensions", Axes{0, 2}}});
    check_transpose(rt::squeeze_p, {linear(Shape{2, 1}, d, true)}, {{"dimensions", Axes{1}}});
    check_transpose(rt::expand_dims_p, {linear(Shape{3}, d)}, {{"dimensions", Axes{0, 2}}});
    check_transpose(rt::expand_dims_p, {linear(Shape{}, d)}, {{"dimensions", Axes{0}}});
  }
}

// ---- reductions and dot_general -------------------------------------------------------------

TEST(Transpose, ReduceSumBroadcastsBack) {
  for (DType d : floats) {
    check_transpose(rt::reduce_sum_p, {linear(Shape{3, 4}, d)}, {{"axes", Axes{1}}});
    check_transpose(rt::reduce_sum_p, {linear(Shape{3, 4}, d)}, {{"axes", Axes{0}}});
    check_transpose(rt::reduce_sum_p, {linear(Shape{2, 3, 4}, d, true)}, {{"axes", Axes{0, 2}}});
    check_transpose(rt::reduce_sum_p, {linear(Shape{2, 3}, d)}, {{"axes", Axes{0, 1}}});
    check_transpose(rt::reduce_sum_p, {linear(Shape{2, 3}, d)}, {{"axes", Axes{}}});
  }
}

Params dn(Axes lc, Axes rc, Axes lb = {}, Axes rb = {}) {
  return {{"dimension_numbers",
           DotDimensionNumbers{std::move(lc), std::move(rc), std::move(lb), std::move(rb)}}};
}

TEST(Transpose, DotGeneralInEitherOperandWithBatchAndContractingDimensions) {
  laws::Rng rng(11);
  struct Case {
    Shape lhs, rhs;
    Params params;
  };
  const Case cases[] = {
      {{3, 4}, {4, 5}, dn({1}, {0})},                  // matmul
      {{4}, {4}, dn({0}, {0})},                        // inner product
      {{3}, {5}, dn({}, {})},                          // outer product
      {{4, 3}, {5, 4}, dn({0}, {1})},                  // contracting dims not last/first
      {{2, 3, 4}, {2, 4, 5}, dn({2}, {1}, {0}, {0})},  // batched matmul
      {{3, 2, 4}, {4, 5, 2}, dn({2}, {0}, {1}, {2})},  // batch dims in the middle and last
      {{2, 3, 4, 5}, {5, 2, 6, 3}, dn({1, 3}, {3, 0}, {0}, {1})},  // two contracting, reordered
      {{4, 2, 3}, {3, 4, 2}, dn({0, 2}, {1, 0}, {1}, {2})},
      {{2, 3}, {3, 2}, dn({}, {}, {0, 1}, {1, 0})},  // batch only, reordered
  };
  for (DType d : floats) {
    for (const Case& c : cases) {
      SCOPED_TRACE(c.lhs.str() + " . " + c.rhs.str());
      check_transpose(rt::dot_general_p, {linear(c.lhs, d), known(random({c.rhs, d}, rng))},
                      c.params);
      check_transpose(rt::dot_general_p, {known(random({c.lhs, d}, rng)), linear(c.rhs, d)},
                      c.params);
    }
    check_transpose(rt::dot_general_p,
                    {linear(Shape{3, 4}, d, true), known(random({Shape{4}, d, true}, rng))},
                    dn({1}, {0}));
  }
  Array y = random({Shape{2}, DType::float64}, rng);
  test_prims_common::expect_error<xpr::type_error>(
      [&] {
        (void)rt::dot_general_p.transpose(
            std::vector<rt::Cotangent>{y},
            std::vector<LinearArg>{UndefinedPrimal{y.aval()}, UndefinedPrimal{y.aval()}},
            dn({}, {}, {0}, {0}));
      },
      {"dot_general", "not linear"});
}

// ---- select_n and convert_element_type ----------------------------------------------------------

Array bools(const Shape& s, laws::Rng& rng) { return laws::draw({s, DType::bool_, 0, 1}, rng); }

TEST(Transpose, SelectNWithAKnownPredicate) {
  laws::Rng rng(12);
  for (DType d : floats) {
    Shape s{3, 4};
    Array which = bools(s, rng);
    Array y = random({s, d}, rng);
    check_transpose(rt::select_n_p, {known(which), linear(s, d), known(y)});
    check_transpose(rt::select_n_p, {known(which), known(y), linear(s, d)});
    check_transpose(rt::select_n_p, {known(which), linear(s, d), linear(s, d)});
    // Rank-0 predicate or cases stand for any shape.
    check_transpose(rt::select_n_p, {known(bools(Shape{}, rng)), linear(s, d), linear(s, d, true)});
    check_transpose(rt::select_n_p, {known(which), linear(Shape{}, d), known(y)});
    check_transpose(rt::select_n_p, {known(which), linear(Shape{}, d, true), linear(Shape{}, d)});
    // An int32 predicate choosing among three cases.
    Array k = laws::draw({s, DType::int32, 0, 2}, rng);
    check_transpose(rt::select_n_p, {known(k), linear(s, d), known(y), linear(s, d)});
  }
  Array y = random({Shape{2}, DType::float64}, rng);
  test_prims_common::expect_error<xpr::type_error>(
      [&] {
        (void)rt::select_n_p.transpose(
            std::vector<rt::Cotangent>{y},
            std::vector<LinearArg>{UndefinedPrimal{{Shape{2}, DType::bool_}}, y, y}, {});
      },
      {"select_n", "the predicate", "not linear"});
}

TEST(Transpose, ConvertElementTypeConvertsBack) {
  auto to = [](DType d, bool weak) { return Params{{"new_dtype", d}, {"weak_type", weak}}; };
  check_transpose(rt::convert_element_type_p, {linear(Shape{3}, DType::float32)},
                  to(DType::float64, false));
  check_transpose(rt::convert_element_type_p, {linear(Shape{3}, DType::float64)},
                  to(DType::float32, false));
  check_transpose(rt::convert_element_type_p, {linear(Shape{2, 2}, DType::float32, true)},
                  to(DType::float32, false));
  check_transpose(rt::convert_element_type_p, {linear(Shape{}, DType::float64)},
                  to(DType::float64, true));
  // An integer operand has a zero (empty) cotangent.
  Array ct = test_prims_common::make(DType::float64, Shape{2}, {1, 2});
  rt::Cotangents cts = rt::convert_element_type_p.transpose(
      std::vector<rt::Cotangent>{ct},
      std::vector<LinearArg>{UndefinedPrimal{{Shape{2}, DType::int32}}}, to(DType::float64, false));
  ASSERT_EQ(cts.size(), 1u);
  EXPECT_FALSE(cts[0].has_value());
}

// ---- slicing ------------------------------------------------------------------------------------

TEST(Transpose, SlicePadsBackIncludingStrides) {
  auto sl = [](Axes start, Axes limit, Axes strides = {}) {
    Params p{{"start_indices", std::move(start)}, {"limit_indices", std::move(limit)}};
    if (!strides.empty()) p.set("strides", std::move(strides));
    return p;
  };
  for (DType d : floats) {
    check_transpose(rt::slice_p, {linear(Shape{7}, d)}, sl({1}, {5}));
    check_transpose(rt::slice_p, {linear(Shape{7}, d)}, sl({0}, {7}, {2}));
    check_transpose(rt::slice_p, {linear(Shape{7}, d)}, sl({2}, {7}, {3}));  // limit past the last
    check_transpose(rt::slice_p, {linear(Shape{7}, d)}, sl({3}, {3}));       // empty
    check_transpose(rt::slice_p, {linear(Shape{4, 5}, d, true)}, sl({1, 0}, {3, 5}));
    check_transpose(rt::slice_p, {linear(Shape{4, 5}, d)}, sl({0, 1}, {4, 5}, {3, 2}));
    check_transpose(rt::slice_p, {linear(Shape{2, 3, 4}, d)}, sl({1, 0, 1}, {2, 3, 4}, {1, 2, 2}));
  }
}

TEST(Transpose, PadInOperandAndPaddingValueWithNegativeAndInteriorPadding) {
  laws::Rng rng(13);
  auto cfg = [](std::vector<std::array<std::int64_t, 3>> dims) {
    return Params{{"padding_config", PaddingConfig{std::move(dims)}}};
  };
  const std::pair<Shape, Params> cases[] = {
      {Shape{4}, cfg({{1, 2, 0}})},
      {Shape{4}, cfg({{0, 0, 2}})},
      {Shape{5}, cfg({{-1, -2, 0}})},  // cropping
      {Shape{5}, cfg({{-2, 1, 1}})},   // cropping into interior padding
      {Shape{3, 4}, cfg({{1, -1, 1}, {-3, 2, 2}})},
      {Shape{2, 3}, cfg({{0, 0, 0}, {2, 1, 3}})},
      {Shape{0}, cfg({{2, 1, 1}})},  // all padding
  };
  for (DType d : floats) {
    for (const auto& [s, p] : cases) {
      SCOPED_TRACE(s.str());
      check_transpose(rt::pad_p, {linear(s, d), linear(Shape{}, d)}, p);
      check_transpose(rt::pad_p, {linear(s, d), known(random({Shape{}, d}, rng))}, p);
      check_transpose(rt::pad_p, {known(random({s, d}, rng)), linear(Shape{}, d)}, p);
    }
    check_transpose(rt::pad_p, {linear(Shape{3}, d, true), linear(Shape{}, d, true)},
                    cfg({{1, 1, 1}}));
  }
}

TEST(Transpose, ConcatenateSlicesEachUndefinedOperand) {
  laws::Rng rng(14);
  for (DType d : floats) {
    const Params dim0{{"dimension", std::int64_t{0}}}, dim1{{"dimension", std::int64_t{1}}};
    check_transpose(rt::concatenate_p, {linear(Shape{2, 3}, d), linear(Shape{4, 3}, d)}, dim0);
    check_transpose(rt::concatenate_p,
                    {linear(Shape{2, 1}, d), known(random({Shape{2, 3}, d}, rng)),
                     linear(Shape{2, 2}, d, true), linear(Shape{2, 0}, d)},
                    dim1);
    check_transpose(rt::concatenate_p,
                    {known(random({Shape{1, 2}, d}, rng)), linear(Shape{3, 2}, d)}, dim0);
    check_transpose(rt::concatenate_p, {linear(Shape{5}, d)}, dim0);
  }
}

TEST(Transpose, DynamicSliceAndDynamicUpdateSliceWithClampedIndices) {
  laws::Rng rng(15);
  for (DType d : floats) {
    Shape s{5, 4};
    for (auto [i, j] : {std::pair{1, 2}, std::pair{-1, 3}, std::pair{4, 0}, std::pair{0, 9}}) {
      SCOPED_TRACE(std::to_string(i) + ", " + std::to_string(j));
      check_transpose(rt::dynamic_slice_p, {linear(s, d), index(i), index(j)},
                      {{"slice_sizes", Axes{2, 2}}});
      check_transpose(rt::dynamic_slice_p, {linear(s, d, true), index(i), index(j)},
                      {{"slice_sizes", Axes{5, 1}}});
      Shape u{3, 2};
      check_transpose(rt::dynamic_update_slice_p, {linear(s, d), linear(u, d), index(i), index(j)});
      check_transpose(rt::dynamic_update_slice_p,
                      {linear(s, d), known(random({u, d}, rng)), index(i), index(j)});
      check_transpose(rt::dynamic_update_slice_p,
                      {known(random({s, d}, rng)), linear(u, d), index(i), index(j)});
    }
  }
}

// ---- on tracers ---------------------------------------------------------------------------------

/// A transpose rule as a function of (ct, known operands...): `layout[i]` is the type of operand
/// i when it is undefined, empty when it is known (then taken from the arguments in order). It
/// returns the undefined operands' cotangents.
rt::FlatFunction transpose_fn(const Primitive& prim, std::vector<std::optional<ShapedArray>> layout,
                              Params params) {
  return [&prim, layout, params](std::span<const Array> in) {
    std::vector<LinearArg> args;
    std::size_t next = 1;
    for (const auto& l : layout) {
      if (l)
        args.emplace_back(UndefinedPrimal{*l});
      else
        args.emplace_back(in[next++]);
    }
    rt::Cotangents cts = prim.transpose(std::vector<rt::Cotangent>{in[0]}, args, params);
    rt::Arrays out;
    for (std::size_t i = 0; i < layout.size(); ++i)
      if (layout[i]) out.push_back(*cts[i]);
    return out;
  };
}

laws::ArgSpec spec(Shape s, DType d = DType::float64) { return {std::move(s), d, -2, 2}; }

struct TracerCase {
  std::string name;
  const Primitive* prim;
  std::vector<std::optional<ShapedArray>> layout;
  Params params;
  std::vector<laws::ArgSpec> specs;  // ct, then the known operands
  /// For finite differences where the rule rounds to float32: the same map in float64.
  rt::FlatFunction reference = {};
};

std::vector<TracerCase> tracer_cases() {
  const DType f = DType::float64;
  const ShapedArray a3{Shape{3}, f}, a34{Shape{3, 4}, f}, a54{Shape{5, 4}, f};
  const laws::ArgSpec idx{Shape{}, DType::int32, -1, 4, false, true, false};
  return {
      {"mul", &rt::mul_p, {a3, std::nullopt}, {}, {spec({3}), spec({3})}},
      {"mul by rank 0",
       &rt::mul_p,
       {std::nullopt, ShapedArray{Shape{}, f}},
       {},
       {spec({3}), spec({3})}},
      {"neg", &rt::neg_p, {a3}, {}, {spec({3})}},
      {"sub", &rt::sub_p, {a3, a3}, {}, {spec({3})}},
      {"div", &rt::div_p, {a3, std::nullopt}, {}, {spec({3}), {Shape{3}, f, 0.5, 2, true}}},
      {"reduce_sum", &rt::reduce_sum_p, {a34}, {{"axes", Axes{1}}}, {spec({3})}},
      {"broadcast_in_dim",
       &rt::broadcast_in_dim_p,
       {ShapedArray{Shape{1, 3}, f}},
       {{"shape", Shape{4, 3}}, {"broadcast_dimensions", Axes{0, 1}}},
       {spec({4, 3})}},
      {"transpose", &rt::transpose_p, {a34}, {{"permutation", Axes{1, 0}}}, {spec({4, 3})}},
      {"dot_general lhs",
       &rt::dot_general_p,
       {a34, std::nullopt},
       dn({1}, {0}),
       {spec({3, 5}), spec({4, 5})}},
      {"dot_general rhs batched",
       &rt::dot_general_p,
       {std::nullopt, ShapedArray{Shape{4, 2, 5}, f}},
       dn({2}, {0}, {0}, {1}),
       {spec({2, 3, 5}), spec({2, 3, 4})}},
      {"select_n",
       &rt::select_n_p,
       {std::nullopt, a34, a34},
       {},
       {spec({3, 4}), {Shape{3, 4}, DType::bool_, 0, 1}}},
      {"convert_element_type",
       &rt::convert_element_type_p,
       {ShapedArray{Shape{3}, DType::float32}},
       {{"new_dtype", f}, {"weak_type", false}},
       {spec({3})},
       [](std::span<const Array> in) { return rt::Arrays{in[0]}; }},
      {"slice",
       &rt::slice_p,
       {ShapedArray{Shape{7}, f}},
       {{"start_indices", Axes{1}}, {"limit_indices", Axes{7}}, {"strides", Axes{2}}},
       {spec({3})}},
      {"pad",
       &rt::pad_p,
       {ShapedArray{Shape{3}, f}, ShapedArray{Shape{}, f}},
       {{"padding_config", PaddingConfig{{{-1, 2, 1}}}}},
       {spec({6})}},
      {"concatenate",
       &rt::concatenate_p,
       {a3, std::nullopt, ShapedArray{Shape{2}, f}},
       {{"dimension", std::int64_t{0}}},
       {spec({9}), spec({4})}},
      {"dynamic_slice",
       &rt::dynamic_slice_p,
       {a54, std::nullopt, std::nullopt},
       {{"slice_sizes", Axes{2, 3}}},
       {spec({2, 3}), idx, idx}},
      {"dynamic_update_slice",
       &rt::dynamic_update_slice_p,
       {a54, ShapedArray{Shape{2, 3}, f}, std::nullopt, std::nullopt},
       {},
       {spec({5, 4}), idx, idx}},
  };
}

TEST(Transpose, RulesRunUnderVmapAsTheLoop) {
  std::uint64_t seed = 20;
  for (const TracerCase& c : tracer_cases()) {
    SCOPED_TRACE(c.name);
    laws::check_batch(transpose_fn(*c.prim, c.layout, c.params), c.specs, seed++, 3, 16);
  }
}

TEST(Transpose, RulesRunUnderJvp) {
  std::uint64_t seed = 40;
  for (const TracerCase& c : tracer_cases()) {
    SCOPED_TRACE(c.name);
    laws::check_jvp(transpose_fn(*c.prim, c.layout, c.params), c.specs, seed++,
                    {c.reference, false});
  }
}

}  // namespace test_prims_transpose
