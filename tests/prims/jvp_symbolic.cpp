// Tests of the jvp_symbolic rules of include/xpr/rt/prims/*.hpp: with any subset of the tangents
// symbolic zeros (empty), each rule gives the primal outputs and tangents of `jvp` with those
// zeros instantiated, and an empty tangent exactly where every contribution is zero or the output
// is not floating; and the jaxpr of a JVP stages no work for zero tangents (no `mul x 0.0`).
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/api.hpp"

#include "tests/laws/laws.hpp"

namespace test_prims_jvp_symbolic {

namespace rt = xpr::rt;
namespace laws = xpr::laws;
using laws::ArgSpec;
using rt::Axes;
using rt::DotDimensionNumbers;
using rt::PaddingConfig;
using rt::Params;
using rt::Primitive;
using xpr::Array;
using xpr::DType;
using xpr::Shape;

/// One primitive with params and operands; `differentiable[i]` says whether operand i may carry
/// a nonzero tangent (start indices never do).
struct Record {
  std::string name;
  const Primitive* prim;
  Params params;
  std::vector<ArgSpec> specs;
  std::vector<bool> differentiable;
};

ArgSpec real(Shape s, DType d = DType::float64) { return {std::move(s), d, -2, 2}; }
ArgSpec positive(Shape s, DType d = DType::float64) { return {std::move(s), d, 0.5, 2}; }
ArgSpec index() { return {Shape{}, DType::int32, -1, 4, false, true, false}; }
Params dn(Axes lc, Axes rc, Axes lb = {}, Axes rb = {}) {
  return {{"dimension_numbers",
           DotDimensionNumbers{std::move(lc), std::move(rc), std::move(lb), std::move(rb)}}};
}

std::vector<Record> records() {
  const Shape s{3, 4};
  std::vector<Record> out;
  for (DType d : {DType::float32, DType::float64}) {
    const Primitive* const binary[] = {&rt::add_p, &rt::sub_p, &rt::mul_p, &rt::max_p, &rt::min_p};
    for (const Primitive* prim : binary) {
      out.push_back({prim->name(), prim, {}, {real(s, d), real(s, d)}, {true, true}});
      out.push_back(
          {prim->name() + " rank 0 lhs", prim, {}, {real({}, d), real(s, d)}, {true, true}});
      out.push_back(
          {prim->name() + " rank 0 rhs", prim, {}, {real(s, d), real({}, d)}, {true, true}});
    }
    // Ties for max and min, where each side gets half.
    ArgSpec ints{s, d, -1, 1, false, true};
    out.push_back({"max ties", &rt::max_p, {}, {ints, ints}, {true, true}});
    out.push_back({"div", &rt::div_p, {}, {real(s, d), positive(s, d)}, {true, true}});
    out.push_back({"div rank 0", &rt::div_p, {}, {real({}, d), positive(s, d)}, {true, true}});
    out.push_back({"pow", &rt::pow_p, {}, {positive(s, d), real(s, d)}, {true, true}});
    out.push_back({"select_n",
                   &rt::select_n_p,
                   {},
                   {{s, DType::bool_, 0, 1}, real(s, d), real(s, d)},
                   {false, true, true}});
    out.push_back({"select_n int32 rank 0 case",
                   &rt::select_n_p,
                   {},
                   {{s, DType::int32, 0, 2}, real(s, d), real({}, d), real(s, d)},
                   {false, true, true, true}});
    out.push_back({"dot_general",
                   &rt::dot_general_p,
                   dn({1}, {0}),
                   {real({3, 4}, d), real({4, 2}, d)},
                   {true, true}});
    out.push_back({"dot_general batched",
                   &rt::dot_general_p,
                   dn({2}, {1}, {0}, {0}),
                   {real({2, 3, 4}, d), real({2, 4, 5}, d)},
                   {true, true}});
    out.push_back({"concatenate",
                   &rt::concatenate_p,
                   {{"dimension", std::int64_t{1}}},
                   {real({2, 1}, d), real({2, 3}, d), real({2, 2}, d)},
                   {true, true, true}});
    out.push_back({"pad",
                   &rt::pad_p,
                   {{"padding_config", PaddingConfig{{{1, -1, 1}, {0, 2, 0}}}}},
                   {real({3, 2}, d), real({}, d)},
                   {true, true}});
    out.push_back({"dynamic_slice",
                   &rt::dynamic_slice_p,
                   {{"slice_sizes", Axes{2, 2}}},
                   {real({4, 3}, d), index(), index()},
                   {true, false, false}});
    out.push_back({"dynamic_update_slice",
                   &rt::dynamic_update_slice_p,
                   {},
                   {real({4, 3}, d), real({2, 2}, d), index(), index()},
                   {true, true, false, false}});
  }
  // Integer results: the tangent is a symbolic zero whatever the operands' tangents.
  out.push_back({"add int32",
                 &rt::add_p,
                 {},
                 {{s, DType::int32, -3, 3}, {s, DType::int32, -3, 3}},
                 {true, true}});
  out.push_back({"dot_general int32",
                 &rt::dot_general_p,
                 dn({1}, {0}),
                 {{{2, 3}, DType::int32, -3, 3}, {{3}, DType::int32, -3, 3}},
                 {true, true}});
  out.push_back({"lt", &rt::lt_p, {}, {real(s), real(s)}, {true, true}});
  out.push_back({"stop_gradient", &rt::stop_gradient_p, {}, {real(s)}, {true}});
  out.push_back({"convert_element_type to int32",
                 &rt::convert_element_type_p,
                 {{"new_dtype", DType::int32}, {"weak_type", false}},
                 {real(s)},
                 {true}});
  out.push_back({"convert_element_type to float32",
                 &rt::convert_element_type_p,
                 {{"new_dtype", DType::float32}, {"weak_type", false}},
                 {real(s)},
                 {true}});
  return out;
}

bool all_zero(const Array& x) {
  for (double v : laws::values(x))
    if (v != 0) return false;
  return true;
}

/// Every subset of the differentiable operands' tangents left nonzero (the rest empty): the
/// primal outputs are identical to `jvp`'s with zeros instantiated, the tangent equal (the
/// dropped terms are exact zeros), and empty when no tangent is nonzero or the output is not
/// floating.
TEST(JvpSymbolic, EqualsJvpWithZerosInstantiated) {
  std::uint64_t seed = 1;
  for (const Record& r : records()) {
    SCOPED_TRACE(r.name);
    laws::Rng rng(seed++);
    rt::Arrays primals, tangents;
    for (const ArgSpec& sp : r.specs) primals.push_back(laws::draw(sp, rng));
    for (const ArgSpec& sp : r.specs) tangents.push_back(laws::draw(laws::tangent_spec(sp), rng));
    const std::size_t n = r.specs.size();
    for (std::uint32_t mask = 0; mask < (1u << n); ++mask) {
      bool valid = true, any = false;
      for (std::size_t i = 0; i < n; ++i) {
        const bool on = (mask >> i) & 1u;
        valid = valid && (!on || r.differentiable[i]);
        any = any || on;
      }
      if (!valid || !any) continue;  // the interpreter never calls a rule with no tangent
      SCOPED_TRACE("nonzero tangents mask " + std::to_string(mask));
      rt::Tangents sym(n);
      rt::Arrays inst;
      for (std::size_t i = 0; i < n; ++i) {
        if ((mask >> i) & 1u) sym[i] = tangents[i];
        inst.push_back((mask >> i) & 1u ? tangents[i] : rt::zeros_like_aval(primals[i].aval()));
      }
      auto [ys, ts] = r.prim->jvp_symbolic(primals, sym, r.params);
      auto [ys_ref, ts_ref] = r.prim->jvp(primals, inst, r.params);
      ASSERT_EQ(ys.size(), 1u);
      ASSERT_EQ(ts.size(), 1u);
      EXPECT_TRUE(laws::identical(ys[0], ys_ref[0])) << laws::describe_difference(ys[0], ys_ref[0]);
      const bool floating = xpr::core::is_floating(ys[0].dtype());
      if (!ts[0]) {
        EXPECT_TRUE(all_zero(ts_ref[0])) << "an empty tangent where jvp gives a nonzero one";
        bool contributes = false;  // some differentiable operand has a nonzero tangent
        for (std::size_t i = 0; i < n; ++i)
          contributes = contributes || (((mask >> i) & 1u) && r.differentiable[i]);
        if (r.name != "lt" && r.name != "stop_gradient") {
          EXPECT_TRUE(!floating || !contributes) << "a floating output lost its tangent";
        }
        continue;
      }
      EXPECT_TRUE(floating) << "a tangent for a non-floating output " << ys[0].aval().str();
      EXPECT_EQ(ts[0]->aval(), ys[0].aval()) << "tangent " << ts[0]->aval().str();
      EXPECT_EQ(laws::values(*ts[0]), laws::values(ts_ref[0]));
    }
  }
}

/// A weakly typed operand's tangent alone still gives a tangent of the output's type.
TEST(JvpSymbolic, TangentHasTheOutputsWeakType) {
  Array x = laws::make_array(Shape{3}, DType::float32, {1, 2, 3}, true);
  Array y = laws::make_array(Shape{3}, DType::float32, {4, 5, 6}, false);
  auto [ys, ts] =
      rt::add_p.jvp_symbolic(std::vector<Array>{x, y}, rt::Tangents{x, std::nullopt}, {});
  ASSERT_TRUE(ts[0]);
  EXPECT_EQ(ts[0]->aval(), ys[0].aval());
  EXPECT_FALSE(ts[0]->weak_type());
}

// ---- jaxprs of jvp --------------------------------------------------------------------------

/// The number of equations of `j` binding the primitive named `name`.
std::size_t count(const rt::ClosedJaxpr& j, const std::string& name) {
  std::size_t n = 0;
  for (const rt::Eqn& e : j.jaxpr.eqns) n += e.primitive->name() == name;
  return n;
}

TEST(JvpSymbolic, JvpJaxprStagesNoWorkForConstants) {
  Array c = laws::make_array(Shape{3, 2}, DType::float64, {1, 2, 3, 4, 5, 6});
  auto tangent_of = [](auto f) {
    return [f](const Array& x, const Array& t) { return xpr::jvp(f, x, t).second; };
  };
  const Array x = laws::make_array(Shape{3}, DType::float64, {1, 2, 3});
  // x * 2.0: the primal mul and the tangent's mul by 2.0; no mul by zero, no add.
  auto j = xpr::make_jaxpr(tangent_of([](auto v) { return v * 2.0; }))(x, x);
  EXPECT_EQ(count(j, "mul"), 2u) << j;
  EXPECT_EQ(count(j, "add"), 0u) << j;
  // x + 1.0: the tangent is t itself.
  j = xpr::make_jaxpr(tangent_of([](auto v) { return v + 1.0; }))(x, x);
  EXPECT_EQ(j.jaxpr.eqns.size(), 1u) << j;
  // 1.0 - x: the tangent is -t.
  j = xpr::make_jaxpr(tangent_of([](auto v) { return 1.0 - v; }))(x, x);
  EXPECT_EQ(count(j, "neg"), 1u) << j;
  EXPECT_EQ(count(j, "sub"), 1u) << j;
  // x @ c for a constant c: one dot_general for the primal and one for the tangent.
  j = xpr::make_jaxpr(tangent_of([c](auto v) { return xpr::dot(v, c); }))(x, x);
  EXPECT_EQ(count(j, "dot_general"), 2u) << j;
  EXPECT_EQ(count(j, "add"), 0u) << j;
}

}  // namespace test_prims_jvp_symbolic
