// Tests of rt/jaxpr_parse.hpp: print -> parse -> print is the identity for every primitive's
// printed form and for nested and shared sub-jaxprs; parsed jaxprs equal the printed ones
// structurally; literal and parameter values are read exactly; malformed text throws parse_error
// at the right line and column, and ill-typed equations throw type_error.
#include "xpr/rt/jaxpr_parse.hpp"

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/api.hpp"
#include "xpr/rt/jaxpr_eval.hpp"
#include "xpr/rt/jaxpr_print.hpp"
#include "xpr/rt/prims/binary.hpp"
#include "xpr/rt/prims/compare.hpp"
#include "xpr/rt/prims/convert.hpp"
#include "xpr/rt/prims/dot_general.hpp"
#include "xpr/rt/prims/integer_pow.hpp"
#include "xpr/rt/prims/iota.hpp"
#include "xpr/rt/prims/reduce.hpp"
#include "xpr/rt/prims/select.hpp"
#include "xpr/rt/prims/shape.hpp"
#include "xpr/rt/prims/slicing.hpp"
#include "xpr/rt/prims/stop_gradient.hpp"
#include "xpr/rt/prims/unary.hpp"

namespace test_rt_jaxpr_parse {

using namespace xpr::rt;
using xpr::DType;
using xpr::Shape;

ShapedArray aval(DType t, Shape s) { return {std::move(s), t, false}; }
ShapedArray f64(Shape s) { return aval(DType::float64, std::move(s)); }

Eqn eqn(const Primitive& p, std::vector<Atom> ins, Params params = {}) {
  Avals in_avals;
  for (const Atom& a : ins) in_avals.push_back(aval_of(a));
  Eqn e{&p, std::move(ins), std::move(params), {}};
  for (ShapedArray& a : p.abstract_eval(in_avals, e.params)) e.outputs.emplace_back(std::move(a));
  return e;
}

/// Higher-order and parameter-testing primitives, with names of their own in this file.
class CallPrim final : public Primitive {
 public:
  CallPrim() : Primitive("parse_test_call") {}
  Avals abstract_eval(std::span<const ShapedArray>, const Params& params) const override {
    return params.get<JaxprParam>("jaxpr")->out_avals();
  }
};
const CallPrim call_p;

class CondPrim final : public Primitive {
 public:
  CondPrim() : Primitive("parse_test_cond") {}
  Avals abstract_eval(std::span<const ShapedArray>, const Params& params) const override {
    return params.get<JaxprTuple>("branches")[0]->out_avals();
  }
};
const CondPrim cond_p;

/// Accepts any parameters; its result has its first operand's type.
class IdentityPrim final : public Primitive {
 public:
  IdentityPrim() : Primitive("parse_test_id") {}
  Avals abstract_eval(std::span<const ShapedArray> args, const Params&) const override {
    return {args[0]};
  }
};
const IdentityPrim id_p;

void expect_round_trip(const std::string& text) {
  Jaxpr j = parse_open_jaxpr(text);
  EXPECT_EQ(pretty_print(j), text);
  typecheck_jaxpr(j);
}

// ---- every primitive --------------------------------------------------------------------------

TEST(JaxprParse, EveryPrimitivesPrintedFormRoundTrips) {
  // Inputs a..g of the types each primitive needs; the equation's result is h.
  const std::vector<ShapedArray> in_types{
      f64({3}), f64({3}),   f64({2, 3}), aval(DType::bool_, {3}), aval(DType::int32, {}),
      f64({2}), f64({3, 1})};
  struct Case {
    std::function<Eqn(const std::vector<Var>&)> make;
    std::string printed;  // the equation as JAX prints it
  };
  auto unary = [](const Primitive& p) {
    return [&p](const std::vector<Var>& v) { return eqn(p, {v[0]}); };
  };
  auto binary = [](const Primitive& p) {
    return [&p](const std::vector<Var>& v) { return eqn(p, {v[0], v[1]}); };
  };
  const std::vector<Case> cases{
      {unary(neg_p), "h:f64[3] = neg a"},
      {unary(sin_p), "h:f64[3] = sin a"},
      {unary(cos_p), "h:f64[3] = cos a"},
      {unary(tan_p), "h:f64[3] = tan a"},
      {unary(tanh_p), "h:f64[3] = tanh a"},
      {unary(exp_p), "h:f64[3] = exp a"},
      {unary(log_p), "h:f64[3] = log a"},
      {unary(log1p_p), "h:f64[3] = log1p a"},
      {unary(expm1_p), "h:f64[3] = expm1 a"},
      {unary(sqrt_p), "h:f64[3] = sqrt a"},
      {unary(rsqrt_p), "h:f64[3] = rsqrt a"},
      {unary(abs_p), "h:f64[3] = abs a"},
      {unary(sign_p), "h:f64[3] = sign a"},
      {unary(logistic_p), "h:f64[3] = logistic a"},
      {unary(stop_gradient_p), "h:f64[3] = stop_gradient a"},
      {binary(add_p), "h:f64[3] = add a b"},
      {binary(sub_p), "h:f64[3] = sub a b"},
      {binary(mul_p), "h:f64[3] = mul a b"},
      {binary(div_p), "h:f64[3] = div a b"},
      {binary(max_p), "h:f64[3] = max a b"},
      {binary(min_p), "h:f64[3] = min a b"},
      {binary(pow_p), "h:f64[3] = pow a b"},
      {binary(eq_p), "h:bool[3] = eq a b"},
      {binary(ne_p), "h:bool[3] = ne a b"},
      {binary(lt_p), "h:bool[3] = lt a b"},
      {binary(le_p), "h:bool[3] = le a b"},
      {binary(gt_p), "h:bool[3] = gt a b"},
      {binary(ge_p), "h:bool[3] = ge a b"},
      {[](const auto& v) {
         return eqn(integer_pow_p, {v[0]}, {{"y", std::int64_t{3}}});
       },
       "h:f64[3] = integer_pow[y=3] a"},
      {[](const auto& v) {
         return eqn(select_n_p, {v[3], v[0], v[1]});
       },
       "h:f64[3] = select_n d a b"},
      {[](const auto& v) {
         return eqn(reduce_sum_p, {v[2]}, {{"axes", Axes{0, 1}}});
       },
       "h:f64[] = reduce_sum[axes=(0, 1)] c"},
      {[](const auto& v) {
         return eqn(reduce_max_p, {v[2]}, {{"axes", Axes{1}}});
       },
       "h:f64[2] = reduce_max[axes=(1,)] c"},
      {[](const auto& v) {
         return eqn(reduce_min_p, {v[2]}, {{"axes", Axes{0}}});
       },
       "h:f64[3] = reduce_min[axes=(0,)] c"},
      {[](const auto& v) {
         return eqn(broadcast_in_dim_p, {v[0]},
                    {{"shape", Shape{2, 3}}, {"broadcast_dimensions", Axes{1}}});
       },
       "h:f64[2,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(2, 3)] a"},
      {[](const auto& v) {
         return eqn(reshape_p, {v[2]}, {{"new_sizes", Shape{3, 2}}, {"dimensions", None{}}});
       },
       "h:f64[3,2] = reshape[dimensions=None new_sizes=(3, 2)] c"},
      {[](const auto& v) {
         return eqn(reshape_p, {v[2]}, {{"new_sizes", Shape{6}}, {"dimensions", Axes{1, 0}}});
       },
       "h:f64[6] = reshape[dimensions=(1, 0) new_sizes=(6,)] c"},
      {[](const auto& v) {
         return eqn(transpose_p, {v[2]}, {{"permutation", Axes{1, 0}}});
       },
       "h:f64[3,2] = transpose[permutation=(1, 0)] c"},
      {[](const auto& v) {
         return eqn(squeeze_p, {v[6]}, {{"dimensions", Axes{1}}});
       },
       "h:f64[3] = squeeze[dimensions=(1,)] g"},
      {[](const auto& v) {
         return eqn(expand_dims_p, {v[0]}, {{"dimensions", Axes{0}}});
       },
       "h:f64[1,3] = expand_dims[dimensions=(0,)] a"},
      {[](const auto& v) {
         return eqn(dot_general_p, {v[2], v[2]},
                    {{"dimension_numbers", DotDimensionNumbers{{1}, {1}, {}, {}}}});
       },
       "h:f64[2,2] = dot_general[dimension_numbers=(([1], [1]), ([], []))] c c"},
      {[](const auto& v) {
         return eqn(slice_p, {v[0]},
                    {{"start_indices", Axes{1}}, {"limit_indices", Axes{3}}, {"strides", None{}}});
       },
       "h:f64[2] = slice[limit_indices=(3,) start_indices=(1,) strides=None] a"},
      {[](const auto& v) {
         return eqn(slice_p, {v[0]},
                    {{"start_indices", Axes{0}}, {"limit_indices", Axes{3}}, {"strides", Axes{2}}});
       },
       "h:f64[2] = slice[limit_indices=(3,) start_indices=(0,) strides=(2,)] a"},
      {[](const auto& v) {
         return eqn(pad_p, {v[0], Literal{Array(0.0)}},
                    {{"padding_config", PaddingConfig{{{1, 2, 1}}}}});
       },
       "h:f64[8] = pad[padding_config=((1, 2, 1),)] a 0.0:f64[]"},
      {[](const auto& v) {
         return eqn(dynamic_slice_p, {v[0], v[4]}, {{"slice_sizes", Axes{2}}});
       },
       "h:f64[2] = dynamic_slice[slice_sizes=(2,)] a e"},
      {[](const auto& v) {
         return eqn(dynamic_update_slice_p, {v[0], v[5], v[4]});
       },
       "h:f64[3] = dynamic_update_slice a f e"},
      {[](const auto& v) {
         return eqn(concatenate_p, {v[0], v[1], v[5]}, {{"dimension", std::int64_t{0}}});
       },
       "h:f64[8] = concatenate[dimension=0] a b f"},
      {[](const auto& v) {
         return eqn(convert_element_type_p, {v[0]},
                    {{"new_dtype", DType::float32}, {"weak_type", false}});
       },
       "h:f32[3] = convert_element_type[new_dtype=float32 weak_type=False] a"},
      {[](const auto&) {
         return eqn(
             iota_p, {},
             {{"dtype", DType::int64}, {"shape", Shape{2, 3}}, {"dimension", std::int64_t{1}}});
       },
       "h:i64[2,3] = iota[dimension=1 dtype=int64 shape=(2, 3)] "},
  };
  for (const Case& c : cases) {
    Jaxpr j;
    for (const ShapedArray& t : in_types) j.invars.emplace_back(t);
    j.eqns.push_back(c.make(j.invars));
    j.outvars = {j.eqns[0].outputs[0]};
    ASSERT_EQ(pretty_print_eqn(j, 0), c.printed);
    const std::string text = pretty_print(j);
    Jaxpr parsed = parse_open_jaxpr(text);
    EXPECT_EQ(pretty_print(parsed), text) << c.printed;
    EXPECT_TRUE(parsed == j) << c.printed;  // the same primitive, params, literals and types
    EXPECT_EQ(hash_value(parsed), hash_value(j)) << c.printed;
    typecheck_jaxpr(parsed);
  }
}

// ---- whole jaxprs -----------------------------------------------------------------------------

TEST(JaxprParse, Func1) {
  const std::string text =
      "{ lambda ; a:f64[8] b:f64[8]. let\n"
      "    c:f64[8] = sin b\n"
      "    d:f64[8] = mul c 3.0:f64[]\n"
      "    e:f64[8] = add a d\n"
      "    f:f64[] = reduce_sum[axes=(0,)] e\n"
      "  in (f,) }";
  ClosedJaxpr j = parse_jaxpr(text);
  ASSERT_EQ(j.jaxpr.invars.size(), 2u);
  EXPECT_EQ(j.jaxpr.invars[0].aval(), f64({8}));
  ASSERT_EQ(j.jaxpr.eqns.size(), 4u);
  EXPECT_EQ(j.jaxpr.eqns[0].primitive, &sin_p);
  EXPECT_EQ(j.jaxpr.eqns[1].primitive, &mul_p);
  EXPECT_EQ(j.jaxpr.eqns[2].primitive, &add_p);
  EXPECT_EQ(j.jaxpr.eqns[3].primitive, &reduce_sum_p);
  EXPECT_TRUE(std::get<Var>(j.jaxpr.eqns[0].inputs[0]) == j.jaxpr.invars[1]);
  const auto& lit = std::get<Literal>(j.jaxpr.eqns[1].inputs[1]);
  EXPECT_EQ(lit.value.item<double>(), 3.0);
  EXPECT_TRUE(lit.aval().weak_type);  // numbers in the text are weakly typed, like C++ numbers
  EXPECT_EQ(j.jaxpr.eqns[3].params.get<Axes>("axes"), Axes{0});
  EXPECT_EQ(j.jaxpr.outvars.size(), 1u);
  EXPECT_TRUE(j.consts.empty());
  EXPECT_EQ(pretty_print(j.jaxpr), text);
}

TEST(JaxprParse, FlatLayoutAndFreeWhitespace) {
  // One line with `;` between equations, as JAX prints short jaxprs, and any spacing.
  expect_round_trip("{ lambda ; a:f64[]. let b:f64[] = sin a; c:f64[] = cos b in (c,) }");
  expect_round_trip("{ lambda ; a:f64[]. let  in (a,) }");
  expect_round_trip("{ lambda ; . let  in () }");
  Jaxpr j = parse_open_jaxpr(
      "{lambda;a:f64[2,3].let\n\n b:f64[3,2]=transpose[permutation=(1,0)]a\r\n"
      "c:f64[3,2]   =   neg b in(c,)}");
  EXPECT_EQ(pretty_print(j),
            "{ lambda ; a:f64[2,3]. let\n"
            "    b:f64[3,2] = transpose[permutation=(1, 0)] a\n"
            "    c:f64[3,2] = neg b\n"
            "  in (c,) }");
}

TEST(JaxprParse, ConstvarsNeedTheirValues) {
  const std::string text =
      "{ lambda a:f64[3]; b:f64[]. let\n"
      "    c:f64[3] = mul a b\n"
      "    d:f64[] = reduce_sum[axes=(0,)] c\n"
      "  in (d,) }";
  Jaxpr open = parse_open_jaxpr(text);
  EXPECT_EQ(open.constvars.size(), 1u);
  EXPECT_EQ(pretty_print(open), text);
  try {
    parse_jaxpr(text);
    ADD_FAILURE() << "expected type_error";
  } catch (const xpr::type_error& e) {
    EXPECT_NE(std::string(e.what()).find("expected 1 consts"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("found 0"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_jaxpr(text, {Array(1.0)}), xpr::type_error);  // f64[] for f64[3]
  ArrayBuilder k(f64({3}));
  for (int i = 0; i < 3; ++i) k.data<double>()[i] = i + 1.0;
  ClosedJaxpr closed = parse_jaxpr(text, {std::move(k).finish()});
  EXPECT_EQ(closed.consts.size(), 1u);
  typecheck_jaxpr(closed);
}

TEST(JaxprParse, NestedSubJaxprs) {
  const std::string text =
      "{ lambda ; a:i32[] b:f64[]. let\n"
      "    c:f64[] = parse_test_cond[\n"
      "      branches=(\n"
      "        { lambda ; d:f64[]. let e:f64[] = sin d in (e,) }\n"
      "        { lambda ; f:f64[]. let g:f64[] = cos f; h:f64[] = sin f in (g,) }\n"
      "      )\n"
      "    ] a b\n"
      "  in (c,) }";
  Jaxpr j = parse_open_jaxpr(text);
  EXPECT_EQ(pretty_print(j), text);
  const auto& branches = j.eqns[0].params.get<JaxprTuple>("branches");
  ASSERT_EQ(branches.size(), 2u);
  EXPECT_EQ(branches[1]->jaxpr.eqns.size(), 2u);
  EXPECT_EQ(branches[1]->jaxpr.eqns[0].primitive, &cos_p);
  // The sub-jaxpr of a `jaxpr` parameter, its equation fitting on one line.
  expect_round_trip(
      "{ lambda ; a:f64[]. let\n"
      "    b:f64[] = parse_test_call[jaxpr={ lambda ; c:f64[]. let  in (c,) }] a\n"
      "  in (b,) }");
}

TEST(JaxprParse, SharedSubJaxprsKeepTheirIdentity) {
  const std::string text =
      "let jaxpr = { lambda ; a:f64[]. let b:f64[] = sin a in (b,) } in\n"
      "{ lambda ; c:f64[]. let\n"
      "    d:f64[] = parse_test_call[jaxpr=jaxpr] c\n"
      "    e:f64[] = parse_test_call[jaxpr=jaxpr] d\n"
      "  in (e,) }";
  Jaxpr j = parse_open_jaxpr(text);
  EXPECT_EQ(pretty_print(j), text);
  EXPECT_EQ(j.eqns[0].params.get<JaxprParam>("jaxpr"), j.eqns[1].params.get<JaxprParam>("jaxpr"));

  // A definition may refer to one printed after it (JAX prints outer jaxprs first).
  Jaxpr fwd = parse_open_jaxpr(
      "let jaxpr = { lambda ; a:f64[]. let b:f64[] = parse_test_call[jaxpr=jaxpr1] a in (b,) } in\n"
      "let jaxpr1 = { lambda ; c:f64[]. let d:f64[] = cos c in (d,) } in\n"
      "{ lambda ; e:f64[]. let\n"
      "    f:f64[] = parse_test_call[jaxpr=jaxpr] e\n"
      "    g:f64[] = parse_test_call[jaxpr=jaxpr] f\n"
      "  in (g,) }");
  const auto& outer = fwd.eqns[0].params.get<JaxprParam>("jaxpr");
  EXPECT_EQ(outer->jaxpr.eqns[0].params.get<JaxprParam>("jaxpr")->jaxpr.eqns[0].primitive, &cos_p);
}

TEST(JaxprParse, LiteralValuesAreExact) {
  Jaxpr j = parse_open_jaxpr(
      "{ lambda ; a:f64[] p:f32[] q:i64[]. let b:f64[] = add a -2.5:f64[]; c:f64[] = add b "
      "1e-05:f64[]; d:f64[] = add c inf:f64[]; e:f64[] = add d -inf:f64[]; f:f64[] = add e "
      "nan:f64[]; g:f32[] = mul p 0.10000000149011612:f32[]; h:i64[] = add q "
      "-9000000000:i64[]; i:bool[] = eq q 3:i64[]; k:bool[] = ne i False:bool[] in (f, g, h, "
      "k) }");
  auto lit = [&](std::size_t e) { return std::get<Literal>(j.eqns[e].inputs[1]).value; };
  EXPECT_EQ(lit(0).item<double>(), -2.5);
  EXPECT_EQ(lit(1).item<double>(), 1e-05);
  EXPECT_EQ(lit(2).item<double>(), std::numeric_limits<double>::infinity());
  EXPECT_EQ(lit(3).item<double>(), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(lit(4).item<double>()));
  EXPECT_EQ(lit(5).dtype(), DType::float32);
  EXPECT_EQ(lit(5).item<float>(), 0.1f);  // the exact f32 value, not a rounding of it
  EXPECT_EQ(lit(6).dtype(), DType::int64);
  EXPECT_EQ(lit(6).item<std::int64_t>(), -9000000000);
  EXPECT_EQ(lit(8).dtype(), DType::bool_);
  EXPECT_FALSE(lit(8).aval().weak_type);
  EXPECT_EQ(lit(8).item<bool>(), false);
}

TEST(JaxprParse, KeywordsAndLiteralWordsAsVariableNames) {
  // JAX names the 222nd variable `in`; `inf`, `let` are names too. They are read by context.
  Jaxpr j = parse_open_jaxpr(
      "{ lambda ; in:f64[] let:f64[]. let\n"
      "    inf:f64[] = add in let\n"
      "    nan:f64[] = add inf inf:f64[]\n"
      "    b:f64[] = mul nan nan\n"
      "  in (b, inf) }");
  ASSERT_EQ(j.eqns.size(), 3u);
  EXPECT_TRUE(std::holds_alternative<Literal>(j.eqns[1].inputs[1]));
  EXPECT_TRUE(std::get<Var>(j.eqns[1].inputs[0]) == j.eqns[0].outputs[0]);
  EXPECT_TRUE(std::get<Var>(j.eqns[2].inputs[0]) == j.eqns[1].outputs[0]);

  // A chain long enough to name variables `in`, `io`, ...: printed text reads back the same.
  Jaxpr chain;
  chain.invars.emplace_back(f64({}));
  Atom cur = chain.invars[0];
  for (int i = 0; i < 230; ++i) {
    chain.eqns.push_back(eqn(sin_p, {cur}));
    cur = chain.eqns.back().outputs[0];
  }
  chain.outvars = {cur};
  const std::string text = pretty_print(chain);
  ASSERT_NE(text.find("    in:f64[] = sin im\n"), std::string::npos);
  ASSERT_NE(text.find("    io:f64[] = sin in\n"), std::string::npos);
  Jaxpr back = parse_open_jaxpr(text);
  EXPECT_EQ(pretty_print(back), text);
  EXPECT_TRUE(back == chain);
}

TEST(JaxprParse, ParamsOfUnknownNamesAreReadByTheirSyntax) {
  const std::string text =
      "{ lambda ; a:f64[]. let\n"
      "    b:f64[] = parse_test_id[\n"
      "      p01=1\n"
      "      p02=0.5\n"
      "      p03=True\n"
      "      p04=float32\n"
      "      p05=(1, 2)\n"
      "      p06=((1, 2, 0),)\n"
      "      p07=(([1], [0]), ([], []))\n"
      "      p08=n\n"
      "      p09=None\n"
      "      p10={ lambda ; c:f64[]. let  in (c,) }\n"
      "      p11=inf\n"
      "      p12=()\n"
      "      p13=-3\n"
      "      p14=1e-05\n"
      "    ] a\n"
      "  in (b,) }";
  Jaxpr j = parse_open_jaxpr(text);
  EXPECT_EQ(pretty_print(j), text);
  const Params& p = j.eqns[0].params;
  EXPECT_EQ(p.get<std::int64_t>("p01"), 1);
  EXPECT_EQ(p.get<double>("p02"), 0.5);
  EXPECT_EQ(p.get<bool>("p03"), true);
  EXPECT_EQ(p.get<DType>("p04"), DType::float32);
  EXPECT_EQ(p.get<Axes>("p05"), (Axes{1, 2}));
  EXPECT_EQ(p.get<PaddingConfig>("p06"), (PaddingConfig{{{1, 2, 0}}}));
  EXPECT_EQ(p.get<DotDimensionNumbers>("p07"), (DotDimensionNumbers{{1}, {0}, {}, {}}));
  EXPECT_EQ(p.get<Dim>("p08"), Dim{"n"});
  const ParamValue* p09 = p.find("p09");
  ASSERT_NE(p09, nullptr);
  EXPECT_TRUE(std::holds_alternative<None>(*p09));
  EXPECT_EQ(p.get<JaxprParam>("p10")->jaxpr.invars.size(), 1u);
  EXPECT_EQ(p.get<double>("p11"), std::numeric_limits<double>::infinity());
  EXPECT_EQ(p.get<Axes>("p12"), Axes{});
  EXPECT_EQ(p.get<std::int64_t>("p13"), -3);
  EXPECT_EQ(p.get<double>("p14"), 1e-05);
}

TEST(JaxprParse, ParamKindTable) {
  EXPECT_EQ(param_kind("axes"), ParamKind::axes);
  EXPECT_EQ(param_kind("shape"), ParamKind::shape);
  EXPECT_EQ(param_kind("new_dtype"), ParamKind::dtype);
  EXPECT_EQ(param_kind("branches"), ParamKind::jaxprs);
  EXPECT_EQ(param_kind("no_such_param"), ParamKind::inferred);
  // Known names are read as their kind: `shape` as a Shape, not as Axes.
  Jaxpr j = parse_open_jaxpr(
      "{ lambda ; a:f64[]. let b:f64[] = parse_test_id[shape=(2,) weak_type=True y=2] a in (b,) }");
  EXPECT_EQ(j.eqns[0].params.get<Shape>("shape"), Shape{2});
  // A user-defined primitive's parameter can be declared.
  register_param_kind("parse_test_extent", ParamKind::shape);
  Jaxpr k = parse_open_jaxpr(
      "{ lambda ; a:f64[]. let b:f64[] = parse_test_id[parse_test_extent=(4, 5)] a in (b,) }");
  EXPECT_EQ(k.eqns[0].params.get<Shape>("parse_test_extent"), (Shape{4, 5}));
}

// ---- errors -----------------------------------------------------------------------------------

struct BadText {
  std::string text;
  std::size_t line, column;
  std::vector<std::string> message;  // substrings: what was expected and what was found
};

TEST(JaxprParse, MalformedTextThrowsParseErrorWithLineAndColumn) {
  const std::vector<BadText> cases{
      {"{ lambda ; a:f64[]. let\n    b:f64[] = foo a\n  in (b,) }",
       2,
       15,
       {"expected a primitive name", "unknown primitive 'foo'"}},
      {"{ lambda ; a:f64[]. let\n    b:f64[] = sin c\n  in (b,) }",
       2,
       19,
       {"expected a defined variable", "'c', which is not defined"}},
      {"{ lambda ; a:f16[]. let b:f64[] = sin a in (b,) }",
       1,
       14,
       {"expected a dtype", "found 'f16'"}},
      {"{ lambda ; a:f64[]. let\n    b:f64[] = sin a\n  (b,) }", 3, 3, {"'in'", "found '('"}},
      {"{ lambda ; a:f64[n]. let  in (a,) }", 1, 18, {"dimension size", "found 'n'"}},
      {"{ lambda ; a:f64[]. let b:f64[] = sin @a in (b,) }", 1, 39, {"found '@'"}},
      {"{ lambda ; a:f64[]. let  in (a,)", 1, 33, {"'}'", "end of text"}},
      {"{ lambda ; a:f64[]. let  in (a,) } b", 1, 36, {"end of text after the jaxpr", "'b'"}},
      {"{ lambda ; a:f64[] a:f64[]. let  in (a,) }", 1, 20, {"already defined"}},
      {"{ lambda ; a:f64[]. let a:f64[] = sin a in (a,) }", 1, 25, {"already defined"}},
      {"{ lambda ; a:i32[]. let b:i32[] = add a 1.5:i32[] in (b,) }",
       1,
       41,
       {"an integer", "'1.5'"}},
      {"{ lambda ; a:i32[]. let b:i32[] = add a 3000000000:i32[] in (b,) }",
       1,
       41,
       {"range of int32", "'3000000000'"}},
      {"{ lambda ; a:bool[]. let b:bool[] = ne a 1:bool[] in (b,) }",
       1,
       42,
       {"True or False", "'1'"}},
      {"{ lambda ; a:f64[3]. let b:f64[3] = add a 1.0:f64[3] in (b,) }",
       1,
       47,
       {"rank-0 type", "'f64[3]'"}},
      {"{ lambda ; a:f64[3]. let b:f64[] = reduce_sum[axes=float32] a in (b,) }",
       1,
       52,
       {"'axes'", "'float32'"}},
      {"{ lambda ; a:f64[3]. let b:f64[] = reduce_sum[axes=(0,) axes=(0,)] a in (b,) }",
       1,
       57,
       {"each parameter once", "'axes' a second time"}},
      {"{ lambda ; a:f64[]. let b:f64[] = parse_test_call[jaxpr={ lambda c:f64[]; d:f64[]. let  "
       "in (d,) }] a in (b,) }",
       1,
       66,
       {"no constvars in a sub-jaxpr", "found 1"}},
      {"{ lambda ; a:f64[]. let b:f64[] = parse_test_call[jaxpr=foo] a in (b,) }",
       1,
       57,
       {"name of a shared jaxpr", "'foo'"}},
      {"{ a:f64[]. let  in (a,) }", 1, 3, {"'lambda'", "'a'"}},
      {"{ lambda ; a:. let  in (a,) }", 1, 14, {"a type", "'.'"}},
      {"let jaxpr = { lambda ; a:f64[]. let b:f64[] = parse_test_call[jaxpr=jaxpr] a in (b,) } "
       "in\n{ lambda ; a:f64[]. let b:f64[] = parse_test_call[jaxpr=jaxpr] a in (b,) }",
       1,
       69,
       {"does not contain itself", "inside its own definition"}},
      {"let jaxpr = { lambda ; . let  in () } in\nlet jaxpr = { lambda ; . let  in () } in\n"
       "{ lambda ; . let  in () }",
       2,
       5,
       {"new name for a shared jaxpr", "already defined"}},
      {"let jaxpr = { lambda ; . let\n  in",
       2,
       5,
       {"'}' closing the jaxpr that starts at line 1, column 13", "end of text"}},
      {"{ lambda ; a:f64[]. let b:f64[] = convert_element_type[new_dtype=float32 weak_type=1] a "
       "in (b,) }",
       1,
       84,
       {"True or False for 'weak_type'", "'1'"}},
  };
  for (const BadText& c : cases) {
    try {
      parse_open_jaxpr(c.text);
      ADD_FAILURE() << "expected parse_error for:\n" << c.text;
    } catch (const xpr::parse_error& e) {
      EXPECT_EQ(e.line(), c.line) << e.what();
      EXPECT_EQ(e.column(), c.column) << e.what();
      for (const std::string& m : c.message)
        EXPECT_NE(std::string(e.what()).find(m), std::string::npos) << e.what() << "\nlacks " << m;
    }
  }
}

TEST(JaxprParse, IllTypedEquationsThrowTypeError) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases{
      {"{ lambda ; a:f64[]. let b:f32[] = sin a in (b,) }",
       {"line 1, column 35", "expected result b of sin to have type f64[]", "found f32[]"}},
      {"{ lambda ; a:f64[]. let b:f64[] c:f64[] = sin a in (b,) }",
       {"expected 1 results from sin, found 2"}},
      {"{ lambda ; a:f64[3] b:f64[4]. let\n    c:f64[3] = add a b\n  in (c,) }",
       {"line 2, column 16", "add rejects these operands", "(3,)", "(4,)"}},
      {"{ lambda ; a:f64[3]. let b:f64[] = reduce_sum a in (b,) }",
       {"reduce_sum rejects these operands", "axes"}},
  };
  for (const auto& [text, message] : cases) {
    try {
      parse_open_jaxpr(text);
      ADD_FAILURE() << "expected type_error for:\n" << text;
    } catch (const xpr::type_error& e) {
      for (const std::string& m : message)
        EXPECT_NE(std::string(e.what()).find(m), std::string::npos) << e.what() << "\nlacks " << m;
    }
  }
}

TEST(JaxprParse, IndexingJaxprWithConstvarsReadsBack) {
  // The fuzz corpus's indexing jaxprs once failed Fuzz.CorpusParses: `make_jaxpr` of a function
  // that closes over an index array has constvars (as in JAX), and `parse_jaxpr` reads such a
  // text only with their values. The printed gather, scatter-add, scatter and rev equations
  // read back to the same text, open or with the consts, and compute the same values.
  const xpr::Array ids = xpr::array({2, 0, 2}), x = xpr::array({0.5, -1.0, 2.0});
  auto f = [ids](const xpr::Array& v) {
    return v.at(ids).add(v * v) + v.at(ids).set(v) + v[ids] +
           v(xpr::range(xpr::none, xpr::none, -1));
  };
  const ClosedJaxpr j = xpr::make_jaxpr(f)(x);
  ASSERT_FALSE(j.jaxpr.constvars.empty());
  const std::string text = pretty_print(j.jaxpr);
  for (const char* prim : {"= gather[", "= scatter-add[", "= scatter[", "= rev["})
    EXPECT_NE(text.find(prim), std::string::npos) << prim << " not in\n" << text;
  EXPECT_EQ(pretty_print(parse_open_jaxpr(text)), text);
  const ClosedJaxpr back = parse_jaxpr(text, j.consts);
  EXPECT_EQ(pretty_print(back.jaxpr), text);
  // Not `back.jaxpr == j.jaxpr`: the index normalization's `add d 3:i32[]` has a strongly typed
  // literal, which the text cannot say, and literals read from text are weak (docs/jaxpr.md).
  // Read once, the jaxpr is a fixed point.
  EXPECT_TRUE(parse_open_jaxpr(pretty_print(back.jaxpr)) == back.jaxpr);
  EXPECT_EQ(eval_jaxpr(back, {x})[0].to_vector<double>(), f(x).to_vector<double>());
  try {
    (void)parse_jaxpr(text);
    ADD_FAILURE() << "expected type_error: the constvars have no values";
  } catch (const xpr::type_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("consts for the constvars of the jaxpr, found 0"), std::string::npos) << m;
    EXPECT_NE(m.find("use parse_open_jaxpr"), std::string::npos) << m;
  }
}

}  // namespace test_rt_jaxpr_parse
