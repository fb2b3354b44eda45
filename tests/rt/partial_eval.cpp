// Tests of include/xpr/rt/interp/partial_eval.hpp: known work is done at trace time and only the
// unknown work is staged with its residuals; tracers_to_jaxpr keeps only what the outputs need;
// partial_eval_jaxpr unzips Autodidax's JVP jaxpr into its primal and tangent halves (compared
// with the text Autodidax prints); dce_jaxpr; the hook for higher-order primitives.
#include "xpr/rt/interp/partial_eval.hpp"

#include <cmath>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/api.hpp"

namespace test_rt_partial_eval {

using xpr::Array;
using xpr::rt::Arrays;
using xpr::rt::PartialVal;

double scalar(const Array& a) { return a.item<double>(); }

TEST(PartialEvalFlat, KnownWorkRunsNowUnknownWorkIsStaged) {
  int traced = 0;
  auto f = [&](std::span<const Array> in) {
    ++traced;
    Array s = xpr::sin(in[0]);  // known: computed now
    return Arrays{s * in[1], s + 1.0};
  };
  std::vector<PartialVal> pvals{PartialVal::known(Array(2.0)),
                                PartialVal::unknown(Array(0.0).aval())};
  auto pe = xpr::rt::partial_eval_flat(f, pvals);
  EXPECT_EQ(traced, 1);
  ASSERT_EQ(pe.pvals_out.size(), 2u);
  EXPECT_TRUE(pe.pvals_out[0].is_unknown());
  ASSERT_TRUE(pe.pvals_out[1].is_known());
  EXPECT_NEAR(scalar(*pe.pvals_out[1].value), std::sin(2.0) + 1.0, 1e-15);
  // Only the product is staged; sin(2) is its one constant (a residual).
  const auto& j = pe.jaxpr.jaxpr;
  ASSERT_EQ(j.eqns.size(), 1u);
  EXPECT_EQ(j.eqns[0].primitive->name(), "mul");
  ASSERT_EQ(pe.jaxpr.consts.size(), 1u);
  EXPECT_NEAR(scalar(pe.jaxpr.consts[0]), std::sin(2.0), 1e-15);
  EXPECT_EQ(j.invars.size(), 1u);
  EXPECT_EQ(j.outvars.size(), 1u);
  xpr::typecheck_jaxpr(pe.jaxpr);
  // The staged jaxpr finishes the computation.
  Arrays out = xpr::eval_jaxpr(pe.jaxpr, {Array(5.0)});
  EXPECT_NEAR(scalar(out[0]), std::sin(2.0) * 5.0, 1e-15);
}

TEST(PartialEvalFlat, ControlFlowOnKnownValuesWorks) {
  auto f = [](std::span<const Array> in) {
    // A branch on a known value is taken at trace time, as Python control flow is in JAX.
    return Arrays{in[0] > 0.0 ? in[1] * 2.0 : in[1] * 3.0};
  };
  std::vector<PartialVal> pvals{PartialVal::known(Array(-1.0)),
                                PartialVal::unknown(Array(0.0).aval())};
  auto pe = xpr::rt::partial_eval_flat(f, pvals);
  Arrays out = xpr::eval_jaxpr(pe.jaxpr, {Array(2.0)});
  EXPECT_EQ(scalar(out[0]), 6.0);
}

TEST(PartialEvalFlat, InstantiateMakesKnownOutputsUnknown) {
  auto f = [](std::span<const Array> in) { return Arrays{in[0] * 2.0, in[1]}; };
  std::vector<PartialVal> pvals{PartialVal::known(Array(4.0)),
                                PartialVal::unknown(Array(0.0).aval())};
  auto pe = xpr::rt::partial_eval_flat(f, pvals, {true});
  EXPECT_TRUE(pe.pvals_out[0].is_unknown());
  EXPECT_TRUE(pe.pvals_out[1].is_unknown());
  // The known output became a constant of the jaxpr.
  Arrays out = xpr::eval_jaxpr(pe.jaxpr, {Array(7.0)});
  EXPECT_EQ(scalar(out[0]), 8.0);
  EXPECT_EQ(scalar(out[1]), 7.0);
}

TEST(TracersToJaxpr, KeepsOnlyWhatTheOutputsNeed) {
  // Unknown work whose result is dropped, and known values it alone reads, leave no trace.
  auto f = [](std::span<const Array> in) {
    Array unused = xpr::exp(in[1]) * xpr::cos(in[0]);
    (void)unused;
    return Arrays{in[1] * xpr::sin(in[0])};
  };
  std::vector<PartialVal> pvals{PartialVal::known(Array(1.0)),
                                PartialVal::unknown(Array(0.0).aval())};
  auto pe = xpr::rt::partial_eval_flat(f, pvals);
  EXPECT_EQ(pe.jaxpr.jaxpr.eqns.size(), 1u);
  ASSERT_EQ(pe.jaxpr.consts.size(), 1u);
  EXPECT_NEAR(scalar(pe.jaxpr.consts[0]), std::sin(1.0), 1e-15);
}

TEST(TracersToJaxpr, SharesOneConstvarPerValue) {
  auto f = [](std::span<const Array> in) {
    Array c = xpr::cos(in[0]);
    return Arrays{in[1] * c + in[1] / c};
  };
  std::vector<PartialVal> pvals{PartialVal::known(Array(0.5)),
                                PartialVal::unknown(Array(0.0).aval())};
  auto pe = xpr::rt::partial_eval_flat(f, pvals);
  EXPECT_EQ(pe.jaxpr.consts.size(), 1u);
  Arrays out = xpr::eval_jaxpr(pe.jaxpr, {Array(3.0)});
  EXPECT_NEAR(scalar(out[0]), 3.0 * std::cos(0.5) + 3.0 / std::cos(0.5), 1e-14);
}

// Autodidax Part 4: "unzipping" the JVP jaxpr of neg(sin(a)) into its primal and tangent halves.
TEST(PartialEvalJaxpr, UnzipsAutodidaxsJvpJaxpr) {
  const char* jvp_text = R"({ lambda ; a:f64[] b:f64[]. let
    c:f64[] = sin a
    d:f64[] = cos a
    e:f64[] = mul d b
    f:f64[] = neg c
    g:f64[] = neg e
  in (f, g) })";
  // Autodidax prints (our printer renames variables in order of definition):
  //   { lambda a:float64[] .            { lambda d:float64[] b:float64[] .
  //     let c:float64[] = sin a           let e:float64[] = mul d b
  //         d:float64[] = cos a               g:float64[] = neg e
  //         f:float64[] = neg c           in ( g ) }
  //     in ( f, d ) }
  const char* known_text = R"({ lambda ; a:f64[]. let
    b:f64[] = sin a
    c:f64[] = cos a
    d:f64[] = neg b
  in (d, c) })";
  const char* unknown_text = R"({ lambda ; a:f64[] b:f64[]. let
    c:f64[] = mul a b
    d:f64[] = neg c
  in (d,) })";
  auto jvp_jaxpr = xpr::parse_jaxpr(jvp_text);
  auto split = xpr::rt::partial_eval_jaxpr(jvp_jaxpr, {false, true});
  EXPECT_EQ(split.out_unknowns, (std::vector<bool>{false, true}));
  EXPECT_EQ(split.num_res, 1u);
  EXPECT_TRUE(split.known == xpr::parse_jaxpr(known_text)) << split.known;
  EXPECT_TRUE(split.unknown == xpr::parse_jaxpr(unknown_text)) << split.unknown;
  xpr::typecheck_jaxpr(split.known);
  xpr::typecheck_jaxpr(split.unknown);
  // The halves compose to the whole.
  Arrays k = xpr::eval_jaxpr(split.known, {Array(0.7)});
  Arrays u = xpr::eval_jaxpr(split.unknown, {k[1], Array(2.0)});
  Arrays whole = xpr::eval_jaxpr(jvp_jaxpr, {Array(0.7), Array(2.0)});
  EXPECT_EQ(scalar(k[0]), scalar(whole[0]));
  EXPECT_EQ(scalar(u[0]), scalar(whole[1]));
}

TEST(PartialEvalJaxpr, InstantiateAndDeadResiduals) {
  // `e` reads a known value but is dead: its residual must not be kept.
  const char* text = R"({ lambda ; a:f64[] b:f64[]. let
    c:f64[] = sin a
    d:f64[] = exp a
    e:f64[] = mul d b
    f:f64[] = mul c b
  in (f, c) })";
  auto split = xpr::rt::partial_eval_jaxpr(xpr::parse_jaxpr(text), {false, true}, {false, true});
  EXPECT_EQ(split.out_unknowns, (std::vector<bool>{true, true}));
  EXPECT_EQ(split.num_res, 1u);  // only sin a
  EXPECT_EQ(split.unknown.jaxpr.eqns.size(), 1u);
  for (const auto& e : split.known.jaxpr.eqns) EXPECT_NE(e.primitive->name(), "exp");
  Arrays k = xpr::eval_jaxpr(split.known, {Array(0.3)});
  ASSERT_EQ(k.size(), 1u);
  Arrays u = xpr::eval_jaxpr(split.unknown, {k[0], Array(2.0)});
  EXPECT_NEAR(scalar(u[0]), std::sin(0.3) * 2.0, 1e-15);
  EXPECT_NEAR(scalar(u[1]), std::sin(0.3), 1e-15);
}

TEST(DceJaxpr, RemovesDeadEquationsAndInputs) {
  const char* text = R"({ lambda ; a:f64[] b:f64[] c:f64[]. let
    d:f64[] = sin a
    e:f64[] = cos b
    f:f64[] = mul d 2.0:f64[]
  in (f, e) })";
  auto j = xpr::parse_jaxpr(text);
  auto [dced, used] = xpr::dce_jaxpr(j.jaxpr, {true, false});
  EXPECT_EQ(used, (std::vector<bool>{true, false, false}));
  EXPECT_EQ(dced.eqns.size(), 2u);
  EXPECT_EQ(dced.invars.size(), 1u);
  EXPECT_EQ(dced.outvars.size(), 1u);
  auto [kept, used_all] = xpr::dce_jaxpr(j.jaxpr, {true, false}, true);
  EXPECT_EQ(kept.invars.size(), 3u);  // instantiate keeps every input
  EXPECT_EQ(used_all, (std::vector<bool>{true, true, true}));
}

// A higher-order-style primitive with its own partial-evaluation rules: the hook later helpers use
// for checkpoint and custom rules.
struct ProbePrimitive final : xpr::rt::Primitive, xpr::rt::PartialEvalRules {
  ProbePrimitive() : Primitive("pe_probe") {}
  mutable int partial_eval_calls = 0, partial_eval_jaxpr_calls = 0, dce_calls = 0;
  Arrays impl(std::span<const Array> args, const xpr::rt::Params&) const override {
    return {xpr::sin(args[0])};
  }
  xpr::rt::Avals abstract_eval(std::span<const xpr::rt::ShapedArray> avals,
                               const xpr::rt::Params&) const override {
    return {avals[0]};
  }
  std::optional<Arrays> partial_eval(xpr::rt::PartialEvalTrace& trace,
                                     std::span<const Array> tracers,
                                     const xpr::rt::Params& params) const override {
    ++partial_eval_calls;
    return trace.default_process_primitive(*this, tracers, params);
  }
  std::optional<xpr::rt::PartialEvalEqn> partial_eval_jaxpr(const std::vector<bool>&,
                                                            const xpr::rt::Eqn&) const override {
    ++partial_eval_jaxpr_calls;
    return std::nullopt;  // the default treatment
  }
  std::optional<xpr::rt::DceEqn> dce(const std::vector<bool>&,
                                     const xpr::rt::Eqn& eqn) const override {
    ++dce_calls;
    return xpr::rt::DceEqn{{true}, eqn};
  }
};

TEST(PartialEvalRules, HigherOrderPrimitivesGetTheirRulesCalled) {
  ProbePrimitive probe;
  auto f = [&](std::span<const Array> in) { return xpr::rt::bind(probe, in); };
  std::vector<PartialVal> unknown{PartialVal::unknown(Array(0.0).aval())};
  auto pe = xpr::rt::partial_eval_flat(f, unknown);
  EXPECT_EQ(probe.partial_eval_calls, 1);
  ASSERT_EQ(pe.jaxpr.jaxpr.eqns.size(), 1u);
  EXPECT_EQ(pe.jaxpr.jaxpr.eqns[0].primitive, &probe);
  // Known inputs never reach the rule: the primitive is applied at once.
  std::vector<PartialVal> known{PartialVal::known(Array(1.0))};
  auto pe2 = xpr::rt::partial_eval_flat(f, known);
  EXPECT_EQ(probe.partial_eval_calls, 1);
  EXPECT_NEAR(scalar(*pe2.pvals_out[0].value), std::sin(1.0), 1e-15);
  auto split = xpr::rt::partial_eval_jaxpr(pe.jaxpr, {true});
  EXPECT_EQ(probe.partial_eval_jaxpr_calls, 1);
  EXPECT_GE(probe.dce_calls, 1);
  EXPECT_EQ(split.unknown.jaxpr.eqns.size(), 1u);
}

}  // namespace test_rt_partial_eval
