// Tests of include/xpr/rt/interp/transpose.hpp: backward_pass over linear jaxprs written by hand
// (cotangents derived by hand), accumulation of a cotangent read twice, symbolic zeros for inputs
// the outputs do not depend on, non-linear work on constants evaluated first, error messages.
#include "xpr/rt/interp/transpose.hpp"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/api.hpp"

namespace test_rt_transpose {

using xpr::Array;
using xpr::rt::Cotangent;
using xpr::rt::Cotangents;
using xpr::rt::LinearArg;
using xpr::rt::UndefinedPrimal;

double scalar(const Array& a) { return a.item<double>(); }

UndefinedPrimal undefined_f64() { return UndefinedPrimal{Array(0.0).aval()}; }

TEST(BackwardPass, TheArticlesLinearJaxpr) {
  // The linear part of sin(x) - exp(x + y) at (1, 2), residuals cos(1) and exp(3) as constants.
  auto lin = xpr::parse_jaxpr(R"({ lambda a:f64[] b:f64[]; c:f64[] d:f64[]. let
    e:f64[] = mul c a
    f:f64[] = add c d
    g:f64[] = mul f b
    h:f64[] = sub e g
  in (h,) })",
                              {Array(std::cos(1.0)), Array(std::exp(3.0))});
  std::vector<LinearArg> args{undefined_f64(), undefined_f64()};
  std::vector<Cotangent> cts{Array(1.0)};
  Cotangents out = xpr::rt::backward_pass(lin.jaxpr, lin.consts, args, cts);
  ASSERT_EQ(out.size(), 2u);
  ASSERT_TRUE(out[0] && out[1]);
  EXPECT_NEAR(scalar(*out[0]), std::cos(1.0) - std::exp(3.0), 1e-12);  // c is read twice
  EXPECT_NEAR(scalar(*out[1]), -std::exp(3.0), 1e-12);
}

TEST(BackwardPass, KnownInputsGetNoCotangentAndZerosStaySymbolic) {
  // f(x, t, u) = x * t: linear in t; u is unused; x is known.
  auto j = xpr::parse_jaxpr(R"({ lambda ; a:f64[] b:f64[] c:f64[]. let
    d:f64[] = mul a b
  in (d,) })");
  std::vector<LinearArg> args{Array(3.0), undefined_f64(), undefined_f64()};
  std::vector<Cotangent> cts{Array(2.0)};
  Cotangents out = xpr::rt::backward_pass(j.jaxpr, j.consts, args, cts);
  EXPECT_FALSE(out[0]);  // a known input
  ASSERT_TRUE(out[1]);
  EXPECT_EQ(scalar(*out[1]), 6.0);
  EXPECT_FALSE(out[2]);  // a symbolic zero: the output does not depend on c
  // A zero output cotangent skips every equation.
  std::vector<Cotangent> zero{std::nullopt};
  Cotangents none = xpr::rt::backward_pass(j.jaxpr, j.consts, args, zero);
  EXPECT_FALSE(none[1]);
}

TEST(BackwardPass, NonLinearWorkOnConstantsRunsForward) {
  auto j = xpr::parse_jaxpr(R"({ lambda ; a:f64[]. let
    b:f64[] = sin 2.0:f64[]
    c:f64[] = mul a b
    d:f64[] = neg c
  in (d, a) })");
  std::vector<LinearArg> args{undefined_f64()};
  std::vector<Cotangent> cts{Array(1.0), Array(10.0)};
  Cotangents out = xpr::rt::backward_pass(j.jaxpr, j.consts, args, cts);
  ASSERT_TRUE(out[0]);
  EXPECT_NEAR(scalar(*out[0]), -std::sin(2.0) + 10.0, 1e-15);  // both outputs reach a
}

TEST(BackwardPass, ChecksTypes) {
  auto j = xpr::parse_jaxpr(R"({ lambda ; a:f64[]. let b:f64[] = neg a in (b,) })");
  std::vector<LinearArg> args{UndefinedPrimal{Array(0.0f).aval()}};
  std::vector<Cotangent> cts{Array(1.0)};
  EXPECT_THROW(xpr::rt::backward_pass(j.jaxpr, j.consts, args, cts), xpr::type_error);
  std::vector<LinearArg> ok{undefined_f64()};
  std::vector<Cotangent> bad{Array(1.0f)};
  EXPECT_THROW(xpr::rt::backward_pass(j.jaxpr, j.consts, ok, bad), xpr::type_error);
}

TEST(BackwardPass, NonLinearPrimitiveHasNoTransposeRule) {
  auto j = xpr::parse_jaxpr(R"({ lambda ; a:f64[]. let b:f64[] = sin a in (b,) })");
  std::vector<LinearArg> args{undefined_f64()};
  std::vector<Cotangent> cts{Array(1.0)};
  try {
    xpr::rt::backward_pass(j.jaxpr, j.consts, args, cts);
    FAIL() << "expected an error";
  } catch (const xpr::error& e) {
    EXPECT_NE(std::string(e.what()).find("Transpose rule for 'sin' not implemented"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace test_rt_transpose
