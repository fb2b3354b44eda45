// Tests of include/xpr/rt/custom_derivatives.hpp: custom_jvp (JAX's log1pexp with its stable
// derivative, grad at 100 is 1 where plain autodiff gives nan; rules honoured by eval, jvp, vmap,
// make_jaxpr, linearize, vjp, grad, jacfwd, jacrev and grad of grad, against closed forms and
// finite differences) and custom_vjp (JAX's gradient clipping; reverse mode and vmap honour the
// rules, forward mode throws JAX's type_error), with closures and the error cases of rules that
// return the wrong structure, shape or dtype.
#include "xpr/rt/custom_derivatives.hpp"

#include <cmath>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/api.hpp"

namespace test_rt_custom_derivatives {

using xpr::Array;

double scalar(const Array& a) { return a.item<double>(); }
std::vector<double> values(const Array& a) { return a.to_vector<double>(); }
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

std::string text(const xpr::ClosedJaxpr& j) {
  std::ostringstream os;
  os << j;
  return os.str();
}

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const xpr::type_error& e) {
    return e.what();
  }
  return "no type_error";
}

// ---- custom_jvp ------------------------------------------------------------------------------

// JAX's example: log(1 + exp(x)) with the derivative written so that it is stable for large x.
auto log1pexp_fn = [](auto x) { return xpr::log(1.0 + xpr::exp(x)); };
auto log1pexp_jvp = [](auto primals, auto tangents) {
  auto [x] = primals;
  auto [x_dot] = tangents;
  auto ans = log1pexp_fn(x);
  auto ans_dot = x_dot * (1.0 - 1.0 / (1.0 + xpr::exp(x)));
  return std::pair{ans, ans_dot};
};
auto log1pexp = xpr::custom_jvp(log1pexp_fn, log1pexp_jvp);

TEST(CustomJvp, EagerCallsTheFunction) {
  for (double x : {-3.0, 0.0, 0.5, 3.0})
    EXPECT_NEAR(scalar(log1pexp(x)), std::log1p(std::exp(x)), 1e-14);
  Array xs = xpr::array({-1.0, 2.0});
  std::vector<double> got = values(log1pexp(xs));
  EXPECT_NEAR(got[0], std::log1p(std::exp(-1.0)), 1e-14);
  EXPECT_NEAR(got[1], std::log1p(std::exp(2.0)), 1e-14);
}

TEST(CustomJvp, GradAtOneHundredIsOneNotNan) {
  // In f32, exp(100) overflows: autodiff of the formula gives inf / inf, the rule gives 1.
  Array x = xpr::full(xpr::Shape{}, 100.0f);
  Array g = xpr::grad(log1pexp)(x);
  EXPECT_EQ(g.dtype(), xpr::float32);
  EXPECT_EQ(g.item<float>(), 1.0f);
  EXPECT_TRUE(std::isnan(xpr::grad(log1pexp_fn)(x).item<float>()));
  for (double v : {-2.0, 0.0, 1.5, 10.0})
    EXPECT_NEAR(scalar(xpr::grad(log1pexp)(v)), sigmoid(v), 1e-14);
}

TEST(CustomJvp, JvpCallsTheRule) {
  auto [y, y_dot] = xpr::jvp(log1pexp, 3.0, 2.0);
  EXPECT_NEAR(scalar(y), std::log1p(std::exp(3.0)), 1e-14);
  EXPECT_NEAR(scalar(y_dot), 2.0 * sigmoid(3.0), 1e-14);
}

// A rule that is deliberately not the derivative shows which transformations use it.
auto sin_times_two_rule = xpr::custom_jvp([](auto x) { return xpr::sin(x); },
                                          [](auto primals, auto tangents) {
                                            auto [x] = primals;
                                            auto [t] = tangents;
                                            return std::pair{xpr::sin(x), t * 2.0};
                                          });

TEST(CustomJvp, EveryTransformationUsesTheRule) {
  EXPECT_NEAR(scalar(sin_times_two_rule(0.3)), std::sin(0.3), 1e-15);
  EXPECT_EQ(scalar(xpr::jvp(sin_times_two_rule, 0.3, 1.5).second), 3.0);
  EXPECT_EQ(scalar(xpr::grad(sin_times_two_rule)(0.3)), 2.0);
  EXPECT_EQ(scalar(xpr::linearize(sin_times_two_rule, 0.3).second(4.0)), 8.0);
  EXPECT_EQ(scalar(std::get<0>(xpr::vjp(sin_times_two_rule, 0.3).second(0.25))), 0.5);
  Array xs = xpr::array({0.1, 0.2, 0.3});
  EXPECT_EQ(values(xpr::vmap(xpr::grad(sin_times_two_rule))(xs)),
            (std::vector<double>{2.0, 2.0, 2.0}));
  auto vec = [](auto v) { return sin_times_two_rule(v); };
  for (const Array& jac : {xpr::jacfwd(vec)(xs), xpr::jacrev(vec)(xs)})
    EXPECT_EQ(values(jac), (std::vector<double>{2, 0, 0, 0, 2, 0, 0, 0, 2}));
  // The rule's tangent does not depend on x: the second derivative is zero.
  EXPECT_EQ(scalar(xpr::grad(xpr::grad(sin_times_two_rule))(0.3)), 0.0);
}

TEST(CustomJvp, MakeJaxprStagesOneCustomJvpCall) {
  xpr::ClosedJaxpr j = xpr::make_jaxpr(log1pexp)(3.0);
  ASSERT_EQ(j.jaxpr.eqns.size(), 1u);
  EXPECT_EQ(j.jaxpr.eqns[0].primitive->name(), "custom_jvp_call");
  EXPECT_EQ(text(j),
            "{ lambda ; a:f64[]. let\n"
            "    b:f64[] = custom_jvp_call[\n"
            "      call_jaxpr={ lambda ; c:f64[]. let\n"
            "          d:f64[] = exp c\n"
            "          e:f64[] = add 1.0:f64[] d\n"
            "          f:f64[] = log e\n"
            "        in (f,) }\n"
            "      jvp_jaxpr_fun={ lambda ; . let  in () }\n"
            "      num_consts=0\n"
            "      symbolic_zeros=False\n"
            "    ] a\n"
            "  in (b,) }");
  // Evaluating the staged program calls the function.
  EXPECT_NEAR(scalar(xpr::eval_jaxpr(j, {xpr::full(xpr::Shape{}, 3.0)})[0]),
              std::log1p(std::exp(3.0)), 1e-14);
}

TEST(CustomJvp, ParsedBackFromTextItEvaluatesButHasNoRule) {
  xpr::ClosedJaxpr j = xpr::parse_jaxpr(text(xpr::make_jaxpr(log1pexp)(3.0)));
  EXPECT_EQ(text(j), text(xpr::make_jaxpr(log1pexp)(3.0)));
  EXPECT_NEAR(scalar(xpr::eval_jaxpr(j, {xpr::full(xpr::Shape{}, 3.0)})[0]),
              std::log1p(std::exp(3.0)), 1e-14);
  auto through_text = [&](auto x) { return xpr::eval_jaxpr(j, {x})[0]; };
  EXPECT_THROW((void)xpr::grad(through_text)(3.0), xpr::core::not_implemented_error);
}

TEST(CustomJvp, LinearizeKeepsOnlyTheRulesTangentWork) {
  auto [y, f_lin] = xpr::linearize(log1pexp, 3.0);
  EXPECT_NEAR(scalar(y), std::log1p(std::exp(3.0)), 1e-14);
  EXPECT_NEAR(scalar(f_lin(2.0)), 2.0 * sigmoid(3.0), 1e-14);
  xpr::ClosedJaxpr j = xpr::make_jaxpr(f_lin)(1.0);
  // t * (1 - 1 / (1 + exp(x))): one multiplication by one residual.
  ASSERT_EQ(j.jaxpr.eqns.size(), 1u);
  EXPECT_EQ(j.jaxpr.eqns[0].primitive->name(), "mul");
  ASSERT_EQ(j.consts.size(), 1u);
  EXPECT_NEAR(scalar(j.consts[0]), sigmoid(3.0), 1e-14);
}

TEST(CustomJvp, VmapBatchesTheFunctionAndTheRule) {
  Array xs = xpr::array({-1.0, 0.5, 100.0});
  std::vector<double> y = values(xpr::vmap(log1pexp)(xs));
  std::vector<double> g = values(xpr::vmap(xpr::grad(log1pexp))(xs));
  auto loss = [](auto v) { return xpr::sum(xpr::vmap(log1pexp)(v)); };
  std::vector<double> gv = values(xpr::grad(loss)(xs));
  auto [ys, ts] = xpr::jvp(xpr::vmap(log1pexp), xs, xpr::array({1.0, 2.0, 3.0}));
  std::vector<double> x = values(xs), t = values(ts);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(y[i], x[i] + std::log1p(std::exp(-x[i])), 1e-13);
    EXPECT_NEAR(g[i], sigmoid(x[i]), 1e-14);
    EXPECT_NEAR(gv[i], sigmoid(x[i]), 1e-14);
    EXPECT_NEAR(t[i], (1.0 + static_cast<double>(i)) * sigmoid(x[i]), 1e-14);
  }
  // vmap at another axis, with an unbatched argument mixed in.
  auto scaled = xpr::custom_jvp([](auto a, auto s) { return a * s; },
                                [](auto primals, auto tangents) {
                                  auto [a, s] = primals;
                                  auto [da, ds] = tangents;
                                  return std::pair{a * s, da * s + a * ds};
                                });
  Array m = xpr::array(std::vector<double>{1, 2, 3, 4, 5, 6}, xpr::Shape{2, 3});
  auto colsum = [&](auto col) { return xpr::sum(scaled(col, 3.0)); };
  Array gm = xpr::grad([&](auto mm) { return xpr::sum(xpr::vmap(colsum, 1)(mm)); })(m);
  EXPECT_EQ(values(gm), std::vector<double>(6, 3.0));
}

TEST(CustomJvp, JaxsTwoStepSpelling) {
  auto f = xpr::custom_jvp(log1pexp_fn).defjvp(log1pexp_jvp);
  EXPECT_NEAR(scalar(xpr::grad(f)(1.5)), sigmoid(1.5), 1e-15);
  auto g = xpr::custom_vjp([](auto x) { return xpr::sin(x); })
               .defvjp(
                   [](auto x) {
                     return std::pair{xpr::sin(x), x};
                   },
                   [](auto x, auto ct) { return std::tuple{ct * 2.0 * x}; });
  EXPECT_NEAR(scalar(g(1.5)), std::sin(1.5), 1e-15);
  EXPECT_EQ(scalar(xpr::grad(g)(1.5)), 3.0);
}

TEST(CustomJvp, GradOfGradDifferentiatesTheRule) {
  for (double x : {-2.0, 0.0, 1.0, 30.0}) {
    double s = sigmoid(x);
    EXPECT_NEAR(scalar(xpr::grad(xpr::grad(log1pexp))(x)), s * (1.0 - s), 1e-14);
    EXPECT_NEAR(scalar(xpr::grad(xpr::grad(xpr::grad(log1pexp)))(x)), s * (1 - s) * (1 - 2 * s),
                1e-13);
  }
  Array xs = xpr::array({0.5, -1.0});
  Array h = xpr::hessian([](auto v) { return xpr::sum(log1pexp(v)); })(xs);
  std::vector<double> hv = values(h);
  EXPECT_NEAR(hv[0], sigmoid(0.5) * (1 - sigmoid(0.5)), 1e-14);
  EXPECT_EQ(hv[1], 0.0);
  EXPECT_EQ(hv[2], 0.0);
  EXPECT_NEAR(hv[3], sigmoid(-1.0) * (1 - sigmoid(-1.0)), 1e-14);
}

// JAX's two-argument example: f(x, y) = sin(x) * y.
auto f_xy = xpr::custom_jvp(
    [](auto x, auto y) { return xpr::sin(x) * y; },
    [](auto primals, auto tangents) {
      auto [x, y] = primals;
      auto [x_dot, y_dot] = tangents;
      return std::pair{xpr::sin(x) * y, xpr::cos(x) * x_dot * y + xpr::sin(x) * y_dot};
    });

TEST(CustomJvp, SeveralArgumentsAndPytrees) {
  auto [gx, gy] = xpr::grad<0, 1>(f_xy)(2.0, 3.0);
  EXPECT_NEAR(scalar(gx), std::cos(2.0) * 3.0, 1e-14);
  EXPECT_NEAR(scalar(gy), std::sin(2.0), 1e-14);
  // A tuple in and a tuple out.
  auto polar = xpr::custom_jvp(
      [](auto rt) {
        auto [r, t] = rt;
        return std::tuple{r * xpr::cos(t), r * xpr::sin(t)};
      },
      [](auto primals, auto tangents) {
        auto [rt] = primals;
        auto [drt] = tangents;
        auto [r, t] = rt;
        auto [dr, dt] = drt;
        return std::pair{std::tuple{r * xpr::cos(t), r * xpr::sin(t)},
                         std::tuple{dr * xpr::cos(t) - r * xpr::sin(t) * dt,
                                    dr * xpr::sin(t) + r * xpr::cos(t) * dt}};
      });
  auto [x, y] = polar(std::tuple{2.0, 0.5});
  EXPECT_NEAR(scalar(x), 2.0 * std::cos(0.5), 1e-15);
  EXPECT_NEAR(scalar(y), 2.0 * std::sin(0.5), 1e-15);
  auto g = xpr::grad([&](auto rt) {
    auto [px, py] = polar(rt);
    return px * py;  // r^2 sin(t) cos(t)
  })(std::tuple{2.0, 0.5});
  EXPECT_NEAR(scalar(std::get<0>(g)), 2 * 2.0 * std::sin(0.5) * std::cos(0.5), 1e-14);
  EXPECT_NEAR(scalar(std::get<1>(g)), 4.0 * std::cos(2 * 0.5), 1e-14);
}

TEST(CustomJvp, ClosedOverConstantsBecomeOperands) {
  Array c = xpr::array({1.0, 2.0, 3.0});
  auto dot_c = xpr::custom_jvp([c](auto v) { return xpr::sum(v * c); },
                               [c](auto primals, auto tangents) {
                                 auto [v] = primals;
                                 auto [dv] = tangents;
                                 return std::pair{xpr::sum(v * c), xpr::sum(dv * c)};
                               });
  Array v = xpr::array({0.5, 0.25, 1.0});
  xpr::ClosedJaxpr j = xpr::make_jaxpr(dot_c)(v);
  ASSERT_EQ(j.jaxpr.eqns.size(), 1u);
  EXPECT_EQ(j.jaxpr.eqns[0].params.get<std::int64_t>("num_consts"), 1);
  EXPECT_EQ(values(xpr::grad(dot_c)(v)), values(c));
  EXPECT_EQ(values(xpr::vmap(xpr::grad(dot_c))(xpr::stack({v, v}))),
            (std::vector<double>{1, 2, 3, 1, 2, 3}));
}

TEST(CustomJvp, DifferentiatingAClosedOverValueIsAnError) {
  std::string msg = error_of([&] {
    (void)xpr::grad([](auto y) {
      auto g = xpr::custom_jvp([y](auto x) { return x * y; },
                               [y](auto primals, auto tangents) {
                                 auto [x] = primals;
                                 auto [t] = tangents;
                                 return std::pair{x * y, t * y};
                               });
      return g(2.0);
    })(3.0);
  });
  EXPECT_NE(msg.find("Detected differentiation of a custom_jvp function with respect to a "
                     "closed-over value"),
            std::string::npos)
      << msg;
}

TEST(CustomJvp, RulesWithTheWrongStructureOrTypesAreTypeErrors) {
  auto base = [](auto x) { return xpr::sin(x); };
  auto tuple_primal = xpr::custom_jvp(base, [](auto primals, auto tangents) {
    auto [x] = primals;
    auto [t] = tangents;
    return std::pair{std::tuple{xpr::sin(x), x}, std::tuple{t, t}};
  });
  std::string msg = error_of([&] { (void)xpr::grad(tuple_primal)(1.0); });
  EXPECT_NE(msg.find("Custom JVP rule must produce a pair"), std::string::npos) << msg;
  EXPECT_NE(msg.find("container/pytree structure"), std::string::npos) << msg;

  auto wrong_shape = xpr::custom_jvp(base, [](auto primals, auto tangents) {
    auto [x] = primals;
    auto [t] = tangents;
    return std::pair{xpr::sin(x), xpr::stack({t, t})};
  });
  msg = error_of([&] { (void)xpr::jvp(wrong_shape, 1.0, 1.0); });
  EXPECT_NE(msg.find("equal shapes and dtypes, but got f64[] and f64[2] respectively"),
            std::string::npos)
      << msg;

  auto wrong_dtype = xpr::custom_jvp(base, [](auto primals, auto tangents) {
    auto [x] = primals;
    auto [t] = tangents;
    return std::pair{xpr::sin(x), xpr::astype(t, xpr::float32)};
  });
  msg = error_of([&] { (void)xpr::grad(wrong_dtype)(1.0); });
  EXPECT_NE(msg.find("but got f64[] and f32[] respectively"), std::string::npos) << msg;

  auto wrong_primal = xpr::custom_jvp(base, [](auto primals, auto tangents) {
    auto [x] = primals;
    auto [t] = tangents;
    return std::pair{xpr::stack({x, x}), xpr::stack({t, t})};
  });
  msg = error_of([&] { (void)xpr::grad(wrong_primal)(1.0); });
  EXPECT_NE(msg.find("shape/dtype"), std::string::npos) << msg;
  // The failed transformation left nothing behind.
  EXPECT_NEAR(scalar(xpr::grad(log1pexp)(0.0)), 0.5, 1e-15);
}

// ---- custom_vjp ------------------------------------------------------------------------------

// JAX's example: the identity whose backward pass clips the cotangent to [lo, hi].
auto clip_gradient = xpr::custom_vjp(
    [](auto lo, auto hi, auto x) {
      (void)lo, (void)hi;
      return x;
    },
    [](auto lo, auto hi, auto x) {
      return std::pair{x, std::tuple{lo, hi}};
    },
    [](auto res, auto g) {
      auto [lo, hi] = res;
      return std::tuple{xpr::zeros_like(lo), xpr::zeros_like(hi),
                        xpr::minimum(xpr::maximum(g, lo), hi)};
    });

TEST(CustomVjp, ClipGradient) {
  auto f = [](auto x) { return clip_gradient(-0.75, 0.75, xpr::sin(x)); };
  for (double x : {0.5, 2.0, -1.0}) {
    EXPECT_NEAR(scalar(f(x)), std::sin(x), 1e-15);
    // The cotangent 1 is clipped to 0.75 before it meets cos(x).
    EXPECT_NEAR(scalar(xpr::grad(f)(x)), 0.75 * std::cos(x), 1e-15);
    auto [v, g] = xpr::value_and_grad(f)(x);
    EXPECT_NEAR(scalar(v), std::sin(x), 1e-15);
    EXPECT_NEAR(scalar(g), 0.75 * std::cos(x), 1e-15);
    auto [y, f_vjp] = xpr::vjp(f, x);
    EXPECT_NEAR(scalar(std::get<0>(f_vjp(0.5))), 0.5 * std::cos(x), 1e-15);  // inside the range
    EXPECT_NEAR(scalar(std::get<0>(f_vjp(-3.0))), -0.75 * std::cos(x), 1e-15);
  }
  Array xs = xpr::array({0.5, 2.0});
  std::vector<double> gs = values(xpr::vmap(xpr::grad(f))(xs));
  EXPECT_NEAR(gs[0], 0.75 * std::cos(0.5), 1e-15);
  EXPECT_NEAR(gs[1], 0.75 * std::cos(2.0), 1e-15);
  Array jac = xpr::jacrev([](auto v) { return clip_gradient(-0.75, 0.75, xpr::sin(v)); })(xs);
  EXPECT_EQ(jac.shape(), (xpr::Shape{2, 2}));
  std::vector<double> jv = values(jac);
  EXPECT_NEAR(jv[0], 0.75 * std::cos(0.5), 1e-15);
  EXPECT_EQ(jv[1], 0.0);
  EXPECT_EQ(jv[2], 0.0);
  EXPECT_NEAR(jv[3], 0.75 * std::cos(2.0), 1e-15);
}

TEST(CustomVjp, ForwardModeIsATypeError) {
  auto f = [](auto x) { return clip_gradient(-0.75, 0.75, xpr::sin(x)); };
  const std::string expected = "can't apply forward-mode autodiff (jvp) to a custom_vjp function.";
  EXPECT_EQ(error_of([&] { (void)xpr::jvp(f, 0.5, 1.0); }), expected);
  EXPECT_EQ(error_of([&] { (void)xpr::jacfwd(f)(0.5); }), expected);
  // Forward over reverse is fine: the outer jvp differentiates fwd and bwd themselves.
  EXPECT_NEAR(scalar(xpr::hessian(f)(0.5)), -0.75 * std::sin(0.5), 1e-15);
}

// JAX's two-argument example: f(x, y) = sin(x) * y with residuals (cos x, sin x, y).
auto f_vjp_xy =
    xpr::custom_vjp([](auto x, auto y) { return xpr::sin(x) * y; },
                    [](auto x, auto y) {
                      return std::pair{xpr::sin(x) * y, std::tuple{xpr::cos(x), xpr::sin(x), y}};
                    },
                    [](auto res, auto g) {
                      auto [cos_x, sin_x, y] = res;
                      return std::tuple{cos_x * g * y, sin_x * g};
                    });

TEST(CustomVjp, SeveralArgumentsVmapAndMakeJaxpr) {
  auto [gx, gy] = xpr::grad<0, 1>(f_vjp_xy)(2.0, 3.0);
  EXPECT_NEAR(scalar(gx), std::cos(2.0) * 3.0, 1e-14);
  EXPECT_NEAR(scalar(gy), std::sin(2.0), 1e-14);
  // vmap over x only: y's cotangent is summed over the batch.
  Array xs = xpr::array({0.5, 1.0, 1.5});
  auto loss = [](auto v, auto y) {
    return xpr::sum(xpr::vmap(f_vjp_xy, std::tuple{0, xpr::not_mapped})(v, y));
  };
  auto [gxs, gy_sum] = xpr::grad<0, 1>(loss)(xs, 2.0);
  std::vector<double> x = values(xs), g = values(gxs);
  double sum_sin = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(g[i], std::cos(x[i]) * 2.0, 1e-14);
    sum_sin += std::sin(x[i]);
  }
  EXPECT_NEAR(scalar(gy_sum), sum_sin, 1e-14);
  std::vector<double> ys = values(xpr::vmap(f_vjp_xy, std::tuple{0, xpr::not_mapped})(xs, 2.0));
  for (std::size_t i = 0; i < 3; ++i) EXPECT_NEAR(ys[i], std::sin(x[i]) * 2.0, 1e-15);

  xpr::ClosedJaxpr j = xpr::make_jaxpr(f_vjp_xy)(2.0, 3.0);
  ASSERT_EQ(j.jaxpr.eqns.size(), 1u);
  EXPECT_EQ(j.jaxpr.eqns[0].primitive->name(), "custom_vjp_call");
  std::string t = text(j);
  for (const char* part : {"bwd=", "call_jaxpr={ lambda ; d:f64[] e:f64[]. let",
                           "fwd_jaxpr_thunk=", "num_consts=0", "symbolic_zeros=False"})
    EXPECT_NE(t.find(part), std::string::npos) << part << " in\n" << t;
  // The linearized program holds custom_lin, which runs bwd when transposed.
  auto [y, f_lin] = xpr::linearize([](auto v) { return f_vjp_xy(v, 3.0); }, 2.0);
  xpr::ClosedJaxpr lin = xpr::make_jaxpr(f_lin)(1.0);
  ASSERT_EQ(lin.jaxpr.eqns.size(), 1u);
  EXPECT_EQ(lin.jaxpr.eqns[0].primitive->name(), "custom_lin");
  EXPECT_EQ(lin.jaxpr.eqns[0].params.get<std::int64_t>("num_res"), 3);
}

TEST(CustomVjp, GradOfGradDifferentiatesBwd) {
  // sin with residual x: bwd computes g * cos(x), which the outer grad differentiates.
  auto my_sin = xpr::custom_vjp([](auto x) { return xpr::sin(x); },
                                [](auto x) {
                                  return std::pair{xpr::sin(x), x};
                                },
                                [](auto x, auto g) { return std::tuple{g * xpr::cos(x)}; });
  for (double x : {0.3, 1.7}) {
    EXPECT_NEAR(scalar(xpr::grad(my_sin)(x)), std::cos(x), 1e-15);
    EXPECT_NEAR(scalar(xpr::grad(xpr::grad(my_sin))(x)), -std::sin(x), 1e-15);
  }
}

TEST(CustomVjp, RulesWithTheWrongStructureOrTypesAreTypeErrors) {
  auto id = [](auto x) { return x; };
  auto bare = xpr::custom_vjp(
      id,
      [](auto x) {
        return std::pair{x, x};
      },
      [](auto, auto g) { return g; });  // not a tuple
  std::string msg = error_of([&] { (void)xpr::grad(bare)(1.0); });
  EXPECT_NE(msg.find("Custom VJP bwd rule must produce an output with the same container"),
            std::string::npos)
      << msg;
  auto wrong_shape = xpr::custom_vjp(
      id,
      [](auto x) {
        return std::pair{x, x};
      },
      [](auto, auto g) {
        return std::tuple{xpr::stack({g, g})};
      });
  msg = error_of([&] { (void)xpr::grad(wrong_shape)(1.0); });
  EXPECT_NE(msg.find("shape/dtype f64[2] corresponding to an input of shape/dtype f64[]"),
            std::string::npos)
      << msg;
  auto wrong_fwd = xpr::custom_vjp(
      id,
      [](auto x) {
        return std::pair{std::tuple{x, x}, x};
      },
      [](auto, auto g) { return std::tuple{g}; });
  msg = error_of([&] { (void)xpr::grad(wrong_fwd)(1.0); });
  EXPECT_NE(msg.find("Custom VJP fwd rule must produce a pair"), std::string::npos) << msg;
  // A weakly typed number from bwd takes the argument's dtype, as a Python scalar does in JAX.
  auto zero_grad = xpr::custom_vjp(
      id,
      [](auto x) {
        return std::pair{x, x};
      },
      [](auto, auto) { return std::tuple{0.0}; });
  Array g = xpr::grad(zero_grad)(xpr::full(xpr::Shape{}, 2.0f));
  EXPECT_EQ(g.dtype(), xpr::float32);
  EXPECT_EQ(g.item<float>(), 0.0f);
}

TEST(CustomVjp, DifferentiatingAClosedOverValueIsAnError) {
  std::string msg = error_of([&] {
    (void)xpr::grad([](auto y) {
      auto g = xpr::custom_vjp([y](auto x) { return x * y; },
                               [y](auto x) {
                                 return std::pair{x * y, y};
                               },
                               [](auto r, auto ct) { return std::tuple{ct * r}; });
      return g(2.0);
    })(3.0);
  });
  EXPECT_NE(msg.find("Detected differentiation of a custom_vjp function with respect to a "
                     "closed-over value"),
            std::string::npos)
      << msg;
}

// A custom rule closing over a value that an enclosing vmap batches, differentiated from outside
// that vmap: refused in the user's terms (JAX batches the closure too). Evaluating works, and so
// does the value passed as an argument, which is the workaround the message gives.
TEST(CustomRules, ClosingOverAVmappedValueDifferentiatedFromOutsideIsRefused) {
  const Array ys = xpr::array({1.0, 2.0, 4.0});
  auto times_y_jvp = [](auto y) {
    return xpr::custom_jvp([y](auto x) { return x * y; },
                           [y](auto p, auto t) {
                             auto [x] = p;
                             auto [tx] = t;
                             return std::pair{x * y, tx * y};
                           });
  };
  auto times_y_vjp = [](auto y) {
    return xpr::custom_vjp([y](auto x) { return x * y; },
                           [y](auto x) {
                             return std::pair{x * y, y};
                           },
                           [](auto r, auto ct) { return std::tuple{ct * r}; });
  };
  auto g_jvp = [&](auto x) {
    return xpr::sum(xpr::vmap([&](auto y) { return times_y_jvp(y)(x); })(ys));
  };
  auto g_vjp = [&](auto x) {
    return xpr::sum(xpr::vmap([&](auto y) { return times_y_vjp(y)(x); })(ys));
  };
  EXPECT_EQ(scalar(g_jvp(Array(3.0))), 21.0);
  EXPECT_EQ(scalar(g_vjp(Array(3.0))), 21.0);
  auto refusal = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const xpr::not_implemented_error& e) {
      return e.what();
    }
    return "no not_implemented_error";
  };
  for (const std::string& msg : {refusal([&] { (void)xpr::jvp(g_jvp, 3.0, 1.0); }),
                                 refusal([&] { (void)xpr::grad(g_jvp)(3.0); }),
                                 refusal([&] { (void)xpr::grad(g_vjp)(3.0); })})
    EXPECT_NE(msg.find("closes over a value that an enclosing vmap batches"), std::string::npos)
        << msg;
  // The value as an argument: d/dx sum_i x y_i = sum(y) = 7, and likewise inside the vmap.
  auto as_argument = [](auto x, auto y) {
    return xpr::custom_jvp([](auto a, auto b) { return a * b; },
                           [](auto p, auto t) {
                             auto [a, b] = p;
                             auto [ta, tb] = t;
                             return std::pair{a * b, ta * b + a * tb};
                           })(x, y);
  };
  auto g_arg = [&](auto x) {
    return xpr::sum(xpr::vmap(as_argument, std::tuple{xpr::not_mapped, 0})(x, ys));
  };
  EXPECT_EQ(scalar(xpr::grad(g_arg)(3.0)), 7.0);
  EXPECT_EQ(scalar(xpr::jvp(g_arg, 3.0, 1.0).second), 7.0);
}

}  // namespace test_rt_custom_derivatives
