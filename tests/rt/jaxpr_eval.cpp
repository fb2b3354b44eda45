// Tests of rt/jaxpr_eval.hpp: hand-written jaxpr text evaluated against hand-computed values,
// evaluation under transformations (it binds), and typecheck_jaxpr's errors, which name the
// offending equation with what was expected and what was found.
#include "xpr/rt/jaxpr_eval.hpp"

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/jaxpr_parse.hpp"
#include "xpr/rt/jaxpr_print.hpp"
#include "xpr/rt/prims/binary.hpp"
#include "xpr/rt/prims/compare.hpp"
#include "xpr/rt/prims/convert.hpp"
#include "xpr/rt/prims/dot_general.hpp"
#include "xpr/rt/prims/iota.hpp"
#include "xpr/rt/prims/reduce.hpp"
#include "xpr/rt/prims/select.hpp"
#include "xpr/rt/prims/shape.hpp"
#include "xpr/rt/prims/unary.hpp"
#include "xpr/rt/transformations.hpp"

namespace test_rt_jaxpr_eval {

using namespace xpr::rt;
using xpr::DType;
using xpr::Shape;

ShapedArray f64(Shape s) { return {std::move(s), DType::float64, false}; }

Array f64_array(const std::vector<double>& xs, Shape shape) {
  ArrayBuilder b(f64(std::move(shape)));
  std::memcpy(b.data<double>(), xs.data(), xs.size() * sizeof(double));
  return std::move(b).finish();
}

void expect_values(const Array& a, Shape shape, const std::vector<double>& expected) {
  ASSERT_EQ(a.shape(), shape);
  std::vector<double> got = a.to_vector<double>();
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-12) << i;
}

void expect_type_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "expected type_error";
  } catch (const xpr::type_error& e) {
    for (const std::string& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what() << "\nlacks " << p;
  }
}

/// x * x with its own derivative rule, to see eval_jaxpr run under jvp.
class SquarePrim final : public Primitive {
 public:
  SquarePrim() : Primitive("eval_test_square") {}
  Arrays impl(std::span<const Array> args, const Params&) const override {
    ArrayBuilder b(args[0].aval());
    const double* x = args[0].data<double>();
    for (std::int64_t i = 0; i < args[0].size(); ++i) b.data<double>()[i] = x[i] * x[i];
    return {std::move(b).finish()};
  }
  Avals abstract_eval(std::span<const ShapedArray> args, const Params&) const override {
    return {args[0]};
  }
  std::pair<Arrays, Arrays> jvp(std::span<const Array> primals, std::span<const Array> tangents,
                                const Params&) const override {
    Array y = bind1(*this, {primals[0]});
    Array t = bind1(mul_p, {bind1(mul_p, {primals[0], tangents[0]}), Array(2.0)});
    return {{y}, {t}};
  }
};
const SquarePrim square_p;

class CallPrim final : public Primitive {
 public:
  CallPrim() : Primitive("eval_test_call") {}
  Avals abstract_eval(std::span<const ShapedArray>, const Params& params) const override {
    return params.get<JaxprParam>("jaxpr")->out_avals();
  }
};
const CallPrim call_p;

const char* const func1_text =
    "{ lambda ; a:f64[3] b:f64[3]. let\n"
    "    c:f64[3] = sin b\n"
    "    d:f64[3] = mul c 3.0:f64[]\n"
    "    e:f64[3] = add a d\n"
    "    f:f64[] = reduce_sum[axes=(0,)] e\n"
    "  in (f,) }";

// ---- eval_jaxpr -------------------------------------------------------------------------------

TEST(EvalJaxpr, HandWrittenFunc1) {
  ClosedJaxpr j = parse_jaxpr(func1_text);
  Arrays out = eval_jaxpr(j, {f64_array({1, 2, 3}, {3}), f64_array({0.5, 1, 2}, {3})});
  ASSERT_EQ(out.size(), 1u);
  const double expected = 1 + 2 + 3 + 3 * (std::sin(0.5) + std::sin(1.0) + std::sin(2.0));
  expect_values(out[0], {}, {expected});
}

TEST(EvalJaxpr, HandWrittenMatrixProgram) {
  ClosedJaxpr j = parse_jaxpr(
      "{ lambda ; a:f64[2,3] b:f64[3]. let\n"
      "    c:f64[2] = dot_general[dimension_numbers=(([1], [0]), ([], []))] a b\n"
      "    d:f64[2] = max c 0.0:f64[]\n"
      "    e:f64[2,3] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(2, 3)] d\n"
      "    f:f64[2,3] = mul e a\n"
      "    g:bool[2,3] = gt a 1.0:f64[]\n"
      "    h:f64[2,3] = select_n g f a\n"
      "    i:f64[3] = reduce_sum[axes=(0,)] h\n"
      "  in (i, d) }");
  Arrays out =
      eval_jaxpr(j, {f64_array({1, -2, 3, 0.5, 2, -1}, {2, 3}), f64_array({1, 2, 3}, {3})});
  ASSERT_EQ(out.size(), 2u);
  // By hand: c = (1-4+9, 0.5+4-3) = (6, 1.5) = d; f = d[i] * a[i][j] = (6 -12 18; 0.75 3 -1.5);
  // where a > 1 take a: h = (6 -12 3; 0.75 2 -1.5); column sums (6.75, -10, 1.5).
  expect_values(out[0], {3}, {6.75, -10, 1.5});
  expect_values(out[1], {2}, {6, 1.5});
}

TEST(EvalJaxpr, ConstsLiteralsPassThroughAndIntegers) {
  ClosedJaxpr j = parse_jaxpr(
      "{ lambda a:f64[3]; b:f64[]. let\n"
      "    c:i32[3] = iota[dimension=0 dtype=int32 shape=(3,)] \n"
      "    d:f64[3] = convert_element_type[new_dtype=float64 weak_type=False] c\n"
      "    e:f64[3] = mul a d\n"
      "    f:f64[3] = add e b\n"
      "  in (f, b, 2.5:f64[], c) }",
      {f64_array({10, 20, 30}, {3})});
  Arrays out = eval_jaxpr(j, {Array(0.5)});
  ASSERT_EQ(out.size(), 4u);
  expect_values(out[0], {3}, {0.5, 20.5, 60.5});  // 10*0 + 0.5, 20*1 + 0.5, 30*2 + 0.5
  expect_values(out[1], {}, {0.5});
  expect_values(out[2], {}, {2.5});
  EXPECT_EQ(out[3].dtype(), DType::int32);
  EXPECT_EQ(out[3].to_vector<std::int32_t>(), (std::vector<std::int32_t>{0, 1, 2}));
  // The open form takes the consts at evaluation.
  Jaxpr open = parse_open_jaxpr(pretty_print(j.jaxpr));
  Arrays again = eval_jaxpr(open, j.consts, std::vector<Array>{Array(0.5)});
  expect_values(again[0], {3}, {0.5, 20.5, 60.5});
}

TEST(EvalJaxpr, SubJaxprsRunThroughTheirPrimitive) {
  // eval_test_call has no impl: evaluating it reports the missing rule by name.
  Jaxpr j = parse_open_jaxpr(
      "{ lambda ; a:f64[]. let\n"
      "    b:f64[] = eval_test_call[jaxpr={ lambda ; c:f64[]. let d:f64[] = sin c in (d,) }] a\n"
      "  in (b,) }");
  try {
    eval_jaxpr(j, {}, std::vector<Array>{Array(1.0)});
    ADD_FAILURE() << "expected not_implemented_error";
  } catch (const xpr::not_implemented_error& e) {
    EXPECT_NE(std::string(e.what()).find("'eval_test_call'"), std::string::npos) << e.what();
  }
}

TEST(EvalJaxpr, WrongArgumentsThrowTypeError) {
  ClosedJaxpr j = parse_jaxpr(func1_text);
  expect_type_error(
      [&] {
        eval_jaxpr(j, {f64_array({1, 2, 3}, {3})});
      },
      {"expected 2 arguments", "found 1"});
  expect_type_error(
      [&] {
        eval_jaxpr(j, {f64_array({1, 2, 3}, {3}), Array(1.0)});
      },
      {"expected arguments 1 of type f64[3]", "found f64[]"});
  expect_type_error([&] { eval_jaxpr(j.jaxpr, std::vector<Array>{Array(1.0)}, {}); },
                    {"expected 0 consts", "found 1"});
}

TEST(EvalJaxpr, RunsUnderTransformations) {
  // make_jaxpr of eval_jaxpr stages the same equations out again.
  ClosedJaxpr j = parse_jaxpr(func1_text);
  ClosedJaxpr staged =
      make_jaxpr_flat([&](std::span<const Array> args) { return eval_jaxpr(j.jaxpr, {}, args); },
                      j.jaxpr.in_avals());
  EXPECT_TRUE(staged == j) << staged;
  EXPECT_EQ(pretty_print(staged.jaxpr), func1_text);

  // jvp of eval_jaxpr uses the primitive's derivative rule: d(x^2) = 2 x t.
  ClosedJaxpr sq = parse_jaxpr("{ lambda ; a:f64[3]. let b:f64[3] = eval_test_square a in (b,) }");
  std::vector<Array> primals{f64_array({1, 2, 3}, {3})}, tangents{f64_array({1, 0.5, -1}, {3})};
  auto [ys, ts] =
      jvp_flat([&](std::span<const Array> args) { return eval_jaxpr(sq.jaxpr, {}, args); }, primals,
               tangents);
  expect_values(ys[0], {3}, {1, 4, 9});
  expect_values(ts[0], {3}, {2, 2, -6});
}

// ---- typecheck_jaxpr --------------------------------------------------------------------------

TEST(TypecheckJaxpr, WellTypedJaxprsPass) {
  EXPECT_NO_THROW(typecheck_jaxpr(parse_jaxpr(func1_text)));
  const Avals types{f64({3}), f64({3})};
  EXPECT_NO_THROW(typecheck_jaxpr(parse_open_jaxpr(func1_text), types));
}

TEST(TypecheckJaxpr, NamesTheOffendingEquation) {
  Var a(f64({3})), free(f64({3}));
  {  // an operand nobody defined
    Jaxpr j;
    j.invars = {a};
    j.eqns.push_back(Eqn{&sin_p, {free}, {}, {Var(f64({3}))}});
    j.outvars = {j.eqns[0].outputs[0]};
    expect_type_error(
        [&] { typecheck_jaxpr(j); },
        {"equation 1 of 1", "`b:f64[3] = sin c`",
         "expected every operand to be defined before it is used", "found c:f64[3] undefined"});
  }
  {  // used before it is defined
    Var b(f64({3})), c(f64({3}));
    Jaxpr j;
    j.invars = {a};
    j.eqns.push_back(Eqn{&cos_p, {b}, {}, {c}});
    j.eqns.push_back(Eqn{&sin_p, {a}, {}, {b}});
    j.outvars = {c};
    expect_type_error([&] { typecheck_jaxpr(j); }, {"equation 1 of 2", "`b:f64[3] = cos _`"});
  }
  {  // a result type the primitive does not compute
    Jaxpr j;
    j.invars = {a};
    j.eqns.push_back(Eqn{&mul_p, {a, Literal{Array(2.0)}}, {}, {Var(f64({}))}});
    j.outvars = {j.eqns[0].outputs[0]};
    expect_type_error(
        [&] { typecheck_jaxpr(j); },
        {"`b:f64[] = mul a 2.0:f64[]`",
         "expected result 0 of type f64[3] (from mul's abstract evaluation)", "found b:f64[]"});
  }
  {  // the wrong number of results
    Jaxpr j;
    j.invars = {a};
    j.eqns.push_back(Eqn{&sin_p, {a}, {}, {Var(f64({3})), Var(f64({3}))}});
    j.outvars = {j.eqns[0].outputs[0]};
    expect_type_error([&] { typecheck_jaxpr(j); }, {"expected 1 results from sin, found 2"});
  }
  {  // operands the primitive rejects
    Var b(f64({4}));
    Jaxpr j;
    j.invars = {a, b};
    j.eqns.push_back(Eqn{&add_p, {a, b}, {}, {Var(f64({3}))}});
    j.outvars = {j.eqns[0].outputs[0]};
    expect_type_error([&] { typecheck_jaxpr(j); },
                      {"`c:f64[3] = add a b`", "add rejects operands (f64[3], f64[4])", "(4,)"});
  }
  {  // a variable defined twice
    Var b(f64({3}));
    Jaxpr j;
    j.invars = {a};
    j.eqns.push_back(Eqn{&sin_p, {a}, {}, {b}});
    j.eqns.push_back(Eqn{&cos_p, {b}, {}, {b}});
    j.outvars = {b};
    expect_type_error([&] { typecheck_jaxpr(j); },
                      {"expected each variable to be defined once", "result f64[3] defined again"});
  }
  {  // an output nobody defined
    Jaxpr j;
    j.invars = {a};
    j.outvars = {free};
    expect_type_error([&] { typecheck_jaxpr(j); },
                      {"expected every output to be defined", "output 0 b:f64[3] undefined"});
  }
  {  // no primitive
    Jaxpr j;
    j.invars = {a};
    j.eqns.push_back(Eqn{nullptr, {a}, {}, {Var(f64({3}))}});
    j.outvars = {a};
    expect_type_error([&] { typecheck_jaxpr(j); }, {"expected a primitive, found none"});
  }
}

TEST(TypecheckJaxpr, SubJaxprsConstsAndInputTypes) {
  // An ill-typed sub-jaxpr is reported through the equation that holds it.
  Var x(f64({})), y(ShapedArray{{}, DType::float32, false});
  Jaxpr bad_sub;
  bad_sub.invars = {x};
  bad_sub.eqns.push_back(Eqn{&sin_p, {x}, {}, {y}});
  bad_sub.outvars = {y};
  Var a(f64({})), b(ShapedArray{{}, DType::float32, false});
  Jaxpr j;
  j.invars = {a};
  j.eqns.push_back(Eqn{&call_p,
                       {a},
                       {{"jaxpr", std::make_shared<const ClosedJaxpr>(ClosedJaxpr{bad_sub, {}})}},
                       {b}});
  j.outvars = {b};
  expect_type_error([&] { typecheck_jaxpr(j); },
                    {"in its parameter 'jaxpr'", "expected result 0 of type f64[]"});

  // The consts of a closed jaxpr must match its constvars.
  Jaxpr open = parse_open_jaxpr("{ lambda a:f64[3]; b:f64[]. let c:f64[3] = mul a b in (c,) }");
  expect_type_error(
      [&] {
        typecheck_jaxpr(ClosedJaxpr{open, {}});
      },
      {"expected 1 consts", "found 0"});
  expect_type_error(
      [&] {
        typecheck_jaxpr(ClosedJaxpr{open, {Array(1.0)}});
      },
      {"expected consts 0 of type f64[3]", "found f64[]"});
  EXPECT_NO_THROW(typecheck_jaxpr(ClosedJaxpr{open, {f64_array({1, 2, 3}, {3})}}));

  // Input types, when given, must match the invars.
  const Avals wrong{f64({3})};
  expect_type_error([&] { typecheck_jaxpr(open, wrong); },
                    {"expected inputs of types (f64[3])", "found invars of types (f64[])"});
}

}  // namespace test_rt_jaxpr_eval
