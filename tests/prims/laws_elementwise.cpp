// Laws of the elementwise primitives' rules (unary.hpp, binary.hpp, compare.hpp, select.hpp,
// integer_pow.hpp, convert.hpp, stop_gradient.hpp), over one table of op records as in JAX's
// LAX_GRAD_OPS: jvp against central finite differences, vmap against the loop for every batch
// axis placement, second derivatives, vmap of jvp, jvp of vmap; second derivatives against
// closed forms; and make_jaxpr of a jvp against the text JAX prints.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/jaxpr_print.hpp"
#include "xpr/rt/numpy_elementwise.hpp"
#include "xpr/rt/prims/binary.hpp"
#include "xpr/rt/prims/compare.hpp"
#include "xpr/rt/prims/convert.hpp"
#include "xpr/rt/prims/integer_pow.hpp"
#include "xpr/rt/prims/select.hpp"
#include "xpr/rt/prims/stop_gradient.hpp"
#include "xpr/rt/prims/unary.hpp"
#include "xpr/rt/transformations.hpp"

#include "tests/laws/laws.hpp"

namespace test_prims_laws_elementwise {

namespace rt = xpr::rt;
namespace laws = xpr::laws;
using laws::ArgSpec;
using rt::Arrays;
using rt::FlatFunction;
using rt::Params;
using xpr::Array;
using xpr::DType;
using xpr::Shape;

/// Where an operand's elements come from; its dtype is the case's unless `dtype` fixes it.
struct Operand {
  Operand(double lo_ = -2, double hi_ = 2, bool away = false, bool whole = false,
          std::optional<DType> fixed = std::nullopt)
      : lo(lo_), hi(hi_), away_from_zero(away), integers(whole), dtype(fixed) {}
  double lo, hi;
  bool away_from_zero, integers;
  std::optional<DType> dtype;
};

const Operand any{};
const Operand positive{0.25, 3};
const Operand nonzero{0.25, 2, true};
const Operand whole{-2, 2, false, true};
const Operand bool_predicate{0, 1, false, false, DType::bool_};
const Operand int_predicate{0, 2, false, false, DType::int32};

constexpr DType f32 = DType::float32, f64 = DType::float64, i32 = DType::int32;

/// One primitive applied with fixed params: a row of the table.
struct OpRecord {
  OpRecord(std::string name_, const rt::Primitive* prim_, Params params_,
           std::vector<Operand> operands_,
           std::vector<DType> dtypes_ = {DType::float32, DType::float64},
           std::optional<Params> reference_params_ = std::nullopt, bool zero_tangent_ = false)
      : name(std::move(name_)),
        prim(prim_),
        params(std::move(params_)),
        operands(std::move(operands_)),
        dtypes(std::move(dtypes_)),
        reference_params(std::move(reference_params_)),
        zero_tangent(zero_tangent_) {}
  std::string name;
  const rt::Primitive* prim;
  Params params;
  std::vector<Operand> operands;
  /// The case dtypes (the dtype of every operand whose dtype is not fixed).
  std::vector<DType> dtypes;
  /// Params for the float64 reference of the finite differences, when they differ
  /// (conversions to a fixed float dtype convert to float64 there).
  std::optional<Params> reference_params;
  bool zero_tangent;  // stop_gradient
};

std::ostream& operator<<(std::ostream& os, const OpRecord& r) { return os << r.name; }

// clang-format off
const std::vector<OpRecord>& records() {
  static const std::vector<OpRecord> table = {
    //  name             primitive              params         operands
    {"neg",              &rt::neg_p,            {},            {any}, {f32, f64, i32}},
    {"sin",              &rt::sin_p,            {},            {any}},
    {"cos",              &rt::cos_p,            {},            {any}},
    {"tan",              &rt::tan_p,            {},            {{-1.2, 1.2}}},
    {"tanh",             &rt::tanh_p,           {},            {any}},
    {"exp",              &rt::exp_p,            {},            {any}},
    {"log",              &rt::log_p,            {},            {positive}},
    {"log1p",            &rt::log1p_p,          {},            {{-0.5, 2}}},
    {"expm1",            &rt::expm1_p,          {},            {any}},
    {"sqrt",             &rt::sqrt_p,           {},            {positive}},
    {"rsqrt",            &rt::rsqrt_p,          {},            {positive}},
    {"abs",              &rt::abs_p,            {},            {nonzero}, {f32, f64, i32}},
    {"sign",             &rt::sign_p,           {},            {nonzero}, {f32, f64, i32}},
    {"logistic",         &rt::logistic_p,       {},            {any}},
    {"add",              &rt::add_p,            {},            {any, any}, {f32, f64, i32}},
    {"sub",              &rt::sub_p,            {},            {any, any}, {f32, f64, i32}},
    {"mul",              &rt::mul_p,            {},            {any, any}, {f32, f64, i32}},
    {"div",              &rt::div_p,            {},            {any, nonzero}, {f32, f64, i32}},
    {"max",              &rt::max_p,            {},            {any, any}, {f32, f64, i32}},
    {"min",              &rt::min_p,            {},            {any, any}, {f32, f64, i32}},
    {"pow",              &rt::pow_p,            {},            {{0.25, 2}, any}},
    {"eq",               &rt::eq_p,             {},            {whole, whole}, {f32, f64, i32}},
    {"ne",               &rt::ne_p,             {},            {whole, whole}, {f32, f64, i32}},
    {"lt",               &rt::lt_p,             {},            {whole, whole}, {f32, f64, i32}},
    {"le",               &rt::le_p,             {},            {whole, whole}, {f32, f64, i32}},
    {"gt",               &rt::gt_p,             {},            {whole, whole}, {f32, f64, i32}},
    {"ge",               &rt::ge_p,             {},            {whole, whole}, {f32, f64, i32}},
    {"select_n_bool",    &rt::select_n_p,       {},            {bool_predicate, any, any}, {f32, f64, i32}},
    {"select_n_int",     &rt::select_n_p,       {},            {int_predicate, any, any, any}},
    {"integer_pow_0",    &rt::integer_pow_p,    {{"y", std::int64_t{0}}},  {any}, {f32, f64, i32}},
    {"integer_pow_1",    &rt::integer_pow_p,    {{"y", std::int64_t{1}}},  {any}, {f32, f64, i32}},
    {"integer_pow_2",    &rt::integer_pow_p,    {{"y", std::int64_t{2}}},  {any}, {f32, f64, i32}},
    {"integer_pow_3",    &rt::integer_pow_p,    {{"y", std::int64_t{3}}},  {any}, {f32, f64, i32}},
    {"integer_pow_m1",   &rt::integer_pow_p,    {{"y", std::int64_t{-1}}}, {nonzero}},
    {"integer_pow_m2",   &rt::integer_pow_p,    {{"y", std::int64_t{-2}}}, {nonzero}},
    {"convert_to_f32",   &rt::convert_element_type_p, {{"new_dtype", f32}, {"weak_type", false}}, {any},
     {f32, f64}, Params{{"new_dtype", f64}, {"weak_type", false}}},
    {"convert_to_f64",   &rt::convert_element_type_p, {{"new_dtype", f64}, {"weak_type", false}}, {any}},
    {"convert_to_weak_f64", &rt::convert_element_type_p, {{"new_dtype", f64}, {"weak_type", true}}, {any}},
    {"convert_to_i32",   &rt::convert_element_type_p, {{"new_dtype", i32}, {"weak_type", false}}, {any}},
    {"convert_to_bool",  &rt::convert_element_type_p, {{"new_dtype", DType::bool_}, {"weak_type", false}}, {whole}},
    {"convert_int_to_f32", &rt::convert_element_type_p, {{"new_dtype", f32}, {"weak_type", false}}, {{-3, 3}},
     {i32, DType::int64, DType::bool_}},
    {"convert_int_to_f64", &rt::convert_element_type_p, {{"new_dtype", f64}, {"weak_type", false}}, {{-3, 3}},
     {i32, DType::int64, DType::bool_}},
    {"stop_gradient",    &rt::stop_gradient_p,  {},            {any}, {f32, f64, i32}, std::nullopt, true},
    {"square",           &rt::square_p,         {},            {any}, {f32, f64, i32}},
    {"exp2",             &rt::exp2_p,           {},            {any}},
    {"cbrt",             &rt::cbrt_p,           {},            {nonzero}},
    {"erf",              &rt::erf_p,            {},            {any}},
    {"floor",            &rt::floor_p,          {},            {any}, {f32, f64}, std::nullopt, true},
    {"ceil",             &rt::ceil_p,           {},            {any}, {f32, f64}, std::nullopt, true},
    {"round_away",       &rt::round_p,          {{"rounding_method", std::int64_t{0}}}, {any}, {f32, f64},
     std::nullopt, true},
    {"round_even",       &rt::round_p,          {{"rounding_method", std::int64_t{1}}}, {any}, {f32, f64},
     std::nullopt, true},
    {"copy",             &rt::copy_p,           {},            {any}, {f32, f64, i32}},
    {"is_finite",        &rt::is_finite_p,      {},            {any}},
    {"not",              &rt::not_p,            {},            {whole}, {i32, DType::int64, DType::bool_}},
    {"and",              &rt::and_p,            {},            {whole, whole}, {i32, DType::int64, DType::bool_}},
    {"or",               &rt::or_p,             {},            {whole, whole}, {i32, DType::int64, DType::bool_}},
    {"xor",              &rt::xor_p,            {},            {whole, whole}, {i32, DType::int64, DType::bool_}},
    // x / y in (1, 3): away from the jumps at integer quotients, where rem has no derivative
    {"rem",              &rt::rem_p,            {},            {{2.2, 2.8}, {1.0, 1.9}}, {f32, f64}},
    {"rem_int",          &rt::rem_p,            {},            {whole, {1, 3, false, true}}, {i32, DType::int64}},
  };
  return table;
}
// clang-format on

FlatFunction apply(const rt::Primitive* prim, Params params) {
  return [prim, params = std::move(params)](std::span<const Array> args) {
    return rt::bind(*prim, args, params);  // qualified: ADL would find std::bind
  };
}

/// The operand shapes tried: all (2, 3); for n-ary ones also each operand rank 0 in turn (a rank-0
/// operand stands for any shape); and all rank 0. Rank-0 operands are weakly typed (specs_for).
std::vector<std::vector<Shape>> shape_configs(std::size_t arity) {
  const Shape s{2, 3};
  std::vector<std::vector<Shape>> out{std::vector<Shape>(arity, s)};
  if (arity > 1)
    for (std::size_t i = 0; i < arity; ++i) {
      out.push_back(std::vector<Shape>(arity, s));
      out.back()[i] = Shape{};
    }
  out.push_back(std::vector<Shape>(arity, Shape{}));
  return out;
}

std::vector<ArgSpec> specs_for(const OpRecord& r, DType dtype, const std::vector<Shape>& shapes) {
  std::vector<ArgSpec> specs;
  for (std::size_t i = 0; i < r.operands.size(); ++i) {
    const Operand& o = r.operands[i];
    // Rank-0 operands of the case dtype are weakly typed, like C++ numbers mixed with arrays.
    const bool weak = shapes[i].rank() == 0 && !o.dtype && dtype != DType::bool_;
    specs.push_back(
        {shapes[i], o.dtype.value_or(dtype), o.lo, o.hi, o.away_from_zero, o.integers, weak});
  }
  return specs;
}

std::string config_str(DType dtype, const std::vector<Shape>& shapes) {
  std::ostringstream os;
  os << xpr::core::name(dtype) << " operands";
  for (const Shape& s : shapes) os << ' ' << s.str();
  return os.str();
}

laws::JvpOptions jvp_options(const OpRecord& r) {
  laws::JvpOptions o;
  if (r.reference_params) o.reference = apply(r.prim, *r.reference_params);
  o.zero_tangent = r.zero_tangent;
  return o;
}

class ElementwiseLaws : public testing::TestWithParam<OpRecord> {};

TEST_P(ElementwiseLaws, JvpMatchesFiniteDifferences) {
  const OpRecord& r = GetParam();
  std::uint64_t seed = 1;
  for (DType dtype : r.dtypes)
    for (const auto& shapes : shape_configs(r.operands.size())) {
      SCOPED_TRACE(config_str(dtype, shapes));
      laws::check_jvp(apply(r.prim, r.params), specs_for(r, dtype, shapes), seed++, jvp_options(r));
    }
}

TEST_P(ElementwiseLaws, VmapMatchesTheLoop) {
  const OpRecord& r = GetParam();
  std::uint64_t seed = 100;
  for (DType dtype : r.dtypes)
    for (const auto& shapes : shape_configs(r.operands.size())) {
      SCOPED_TRACE(config_str(dtype, shapes));
      int n = laws::check_batch(apply(r.prim, r.params), specs_for(r, dtype, shapes), seed++);
      EXPECT_GT(n, 0);
    }
}

// d/dx of the tangent along a fixed direction: second derivatives against finite differences of
// the first (JAX's check_grads with order 2), in float64.
TEST_P(ElementwiseLaws, JvpOfJvpMatchesFiniteDifferences) {
  const OpRecord& r = GetParam();
  std::uint64_t seed = 200;
  for (const auto& shapes : shape_configs(r.operands.size())) {
    const bool has_f64 = std::find(r.dtypes.begin(), r.dtypes.end(), f64) != r.dtypes.end();
    const DType dtype = has_f64 ? f64 : r.dtypes.front();
    SCOPED_TRACE(config_str(dtype, shapes));
    const std::vector<ArgSpec> specs = specs_for(r, dtype, shapes);
    laws::Rng rng(seed++);
    Arrays primals, t1, t2;
    for (const ArgSpec& s : specs) primals.push_back(laws::draw(s, rng));
    for (const ArgSpec& s : specs) t1.push_back(laws::draw(laws::tangent_spec(s), rng));
    for (const ArgSpec& s : specs) t2.push_back(laws::draw(laws::tangent_spec(s), rng));
    laws::JvpOptions o = jvp_options(r);
    if (o.reference) o.reference = laws::tangent_of(o.reference, t1);
    laws::check_jvp(laws::tangent_of(apply(r.prim, r.params), t1), primals, t2, o);
  }
}

// vmap of (x, t) -> jvp(f, x, t): batching the jvp rule's equations, for every in_axes of primals
// and tangents (jacfwd maps the tangents only).
TEST_P(ElementwiseLaws, VmapOfJvpMatchesTheLoop) {
  const OpRecord& r = GetParam();
  std::uint64_t seed = 300;
  for (DType dtype : r.dtypes)
    for (const auto& shapes : shape_configs(r.operands.size())) {
      SCOPED_TRACE(config_str(dtype, shapes));
      std::vector<ArgSpec> specs = specs_for(r, dtype, shapes);
      const std::size_t n = specs.size();
      for (std::size_t i = 0; i < n; ++i) specs.push_back(laws::tangent_spec(specs[i]));
      EXPECT_GT(laws::check_batch(laws::jvp_of(apply(r.prim, r.params)), specs, seed++, 3, 64), 0);
    }
}

// jvp of vmap(f): the batched equations differentiated, against finite differences of vmap(f).
TEST_P(ElementwiseLaws, JvpOfVmapMatchesFiniteDifferences) {
  const OpRecord& r = GetParam();
  std::uint64_t seed = 400;
  const std::int64_t n = 3;
  for (DType dtype : r.dtypes)
    for (const auto& shapes : shape_configs(r.operands.size())) {
      SCOPED_TRACE(config_str(dtype, shapes));
      // Operand i mapped at axis min(i, rank); the second operand (if any) not mapped; the result
      // batched along its last axis.
      std::vector<ArgSpec> specs = specs_for(r, dtype, shapes);
      rt::BatchDims in_axes(specs.size());
      for (std::size_t i = 0; i < specs.size(); ++i) {
        if (i == 1) continue;
        auto axis = static_cast<std::int64_t>(std::min(i, specs[i].shape.rank()));
        in_axes[i] = axis;
        specs[i] = laws::batched_spec(specs[i], n, axis);
      }
      std::size_t out_rank = 0;
      for (const Shape& s : shapes) out_rank = std::max(out_rank, s.rank());
      rt::BatchDims out_axes{static_cast<std::int64_t>(out_rank)};
      laws::JvpOptions o = jvp_options(r);
      if (o.reference) o.reference = laws::vmap_of(o.reference, in_axes, out_axes);
      laws::check_jvp(laws::vmap_of(apply(r.prim, r.params), in_axes, out_axes), specs, seed++, o);
    }
}

INSTANTIATE_TEST_SUITE_P(Prims, ElementwiseLaws, testing::ValuesIn(records()),
                         [](const testing::TestParamInfo<OpRecord>& p) { return p.param.name; });

// ---- second derivatives against closed forms ----------------------------------------------------

/// A function of one array as a flat function (the flat transformations are not templates, which
/// keeps this file's compile time down; the pytree API over them is tested in tests/rt).
FlatFunction flat(std::function<Array(const Array&)> f) {
  return [f = std::move(f)](std::span<const Array> a) { return Arrays{f(a[0])}; };
}

/// d²f/dx² at x by jvp of jvp, with the same input and unit tangents (perturbation confusion would
/// show here).
double second_derivative(const std::function<Array(const Array&)>& f, double x) {
  FlatFunction df = [f1 = flat(f)](std::span<const Array> a) {
    return rt::jvp_flat(f1, a, Arrays{Array(1.0)}).second;
  };
  return rt::jvp_flat(df, Arrays{Array(x)}, Arrays{Array(1.0)}).second[0].item<double>();
}

TEST(SecondDerivatives, MatchClosedForms) {
  const double x = 0.7;
  const double s = 1 / (1 + std::exp(-x)), t = std::tan(x), th = std::tanh(x);
  struct Case {
    const char* name;
    std::function<Array(const Array&)> f;
    double want;
  };
  const Case cases[] = {
      {"sin", [](const Array& y) { return xpr::sin(y); }, -std::sin(x)},
      {"cos", [](const Array& y) { return xpr::cos(y); }, -std::cos(x)},
      {"tan", [](const Array& y) { return xpr::tan(y); }, 2 * t * (1 + t * t)},
      {"tanh", [](const Array& y) { return xpr::tanh(y); }, -2 * th * (1 - th * th)},
      {"exp", [](const Array& y) { return xpr::exp(y); }, std::exp(x)},
      {"log", [](const Array& y) { return xpr::log(y); }, -1 / (x * x)},
      {"log1p", [](const Array& y) { return xpr::log1p(y); }, -1 / ((1 + x) * (1 + x))},
      {"expm1", [](const Array& y) { return xpr::expm1(y); }, std::exp(x)},
      {"sqrt", [](const Array& y) { return xpr::sqrt(y); }, -0.25 * std::pow(x, -1.5)},
      {"rsqrt", [](const Array& y) { return xpr::rsqrt(y); }, 0.75 * std::pow(x, -2.5)},
      {"logistic", [](const Array& y) { return xpr::logistic(y); }, s * (1 - s) * (1 - 2 * s)},
      {"abs", [](const Array& y) { return xpr::abs(y); }, 0.0},
      {"x*x", [](const Array& y) { return y * y; }, 2.0},
      {"1/x", [](const Array& y) { return 1.0 / y; }, 2 / (x * x * x)},
      {"x^3 (integer_pow)", [](const Array& y) { return xpr::integer_pow(y, 3); }, 6 * x},
      {"x^-2 (integer_pow)", [](const Array& y) { return xpr::integer_pow(y, -2); },
       6 / (x * x * x * x)},
      {"x^2.5 (pow)", [](const Array& y) { return xpr::pow(y, 2.5); }, 2.5 * 1.5 * std::sqrt(x)},
      {"2^x (pow)", [](const Array& y) { return xpr::pow(2.0, y); },
       std::log(2.0) * std::log(2.0) * std::pow(2.0, x)},
      {"max(x, 0.3x)", [](const Array& y) { return xpr::maximum(y, 0.3 * y); }, 0.0},
  };
  for (const Case& c : cases)
    EXPECT_NEAR(second_derivative(c.f, x), c.want, 1e-12 * (1 + std::abs(c.want))) << c.name;
}

// A C++ float is a weakly typed float32 (like a Python scalar); its tangent must stay float32
// (the rules once wrote their constants as C++ doubles, weak float64, and failed here).
TEST(WeakFloat32, TangentsStayFloat32) {
  const float x = 2.0f;
  struct Case {
    const char* name;
    std::function<Array(const Array&)> f;
    double want;  // d/dx at x
  };
  const Case cases[] = {
      {"sqrt", [](const Array& y) { return xpr::sqrt(y); }, 0.5 / std::sqrt(2.0)},
      {"rsqrt", [](const Array& y) { return xpr::rsqrt(y); }, -0.5 * std::pow(2.0, -1.5)},
      {"x^3", [](const Array& y) { return xpr::integer_pow(y, 3); }, 12.0},
      {"x^x", [](const Array& y) { return xpr::pow(y, y); }, 4 * (std::log(2.0) + 1)},
  };
  for (const Case& c : cases) {
    auto [ys, ts] = rt::jvp_flat(flat(c.f), Arrays{Array(x)}, Arrays{Array(1.0f)});
    const Array &y = ys[0], &t = ts[0];
    EXPECT_EQ(t.dtype(), DType::float32) << c.name;
    EXPECT_EQ(y.dtype(), DType::float32) << c.name;
    if (t.dtype() == DType::float32) {
      EXPECT_FLOAT_EQ(t.item<float>(), static_cast<float>(c.want)) << c.name;
    }
  }
}

// ---- make_jaxpr of a jvp ---------------------------------------------------------------------

// jax.make_jaxpr(lambda x, t: jax.jvp(jnp.sin, (x,), (t,)))(1., 1.) with x64 enabled prints the
// primal first, then the tangent rule mul(g, cos(x)) (lax.py: ad.defjvp(sin_p, lambda g, x:
// mul(g, cos(x)))); the two outputs are the pair.
TEST(MakeJaxpr, OfJvpOfSinIsWhatJaxPrints) {
  FlatFunction f = [](std::span<const Array> a) {
    auto [y, t] =
        rt::jvp_flat(flat([](const Array& x) { return xpr::sin(x); }), a.first(1), a.subspan(1));
    return Arrays{y[0], t[0]};
  };
  const rt::ShapedArray weak_f64{Shape{}, DType::float64, true};  // what 1.0 becomes
  std::ostringstream os;
  os << rt::make_jaxpr_flat(f, rt::Avals{weak_f64, weak_f64});
  EXPECT_EQ(os.str(),
            "{ lambda ; a:f64[] b:f64[]. let\n"
            "    c:f64[] = sin a\n"
            "    d:f64[] = cos a\n"
            "    e:f64[] = mul b d\n"
            "  in (c, e) }");
}

}  // namespace test_prims_laws_elementwise
