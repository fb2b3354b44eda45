// Tests of include/xpr/rt/checkpoint.hpp: the linearized and the vjp program of sin(sin(sin(x)))
// close over three residuals (the cosines) without checkpoint and over x alone with it, the
// recomputation visible inside; values equal the unmodified function's and the closed-form
// derivatives under grad, grad of grad, jvp, vmap, jacfwd, jacrev and hessian; make_jaxpr prints
// JAX's `checkpoint[...]`; the partial_eval_jaxpr and dce rules split and prune the equation.
#include "xpr/rt/checkpoint.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/api.hpp"

namespace test_rt_checkpoint {

using xpr::Array;

double scalar(const Array& a) { return a.item<double>(); }
std::vector<double> values(const Array& a) { return a.to_vector<double>(); }

std::string text(const xpr::ClosedJaxpr& j) {
  std::ostringstream os;
  os << j;
  return os.str();
}

/// Equations of `prim` in `j`, those inside checkpoints included (the backward pass of a
/// checkpoint is a checkpoint of its transposed jaxpr, as JAX's remat_transpose makes it).
std::size_t count(const xpr::Jaxpr& j, const std::string& prim) {
  std::size_t n = 0;
  for (const auto& e : j.eqns) {
    n += e.primitive->name() == prim ? 1 : 0;
    if (e.primitive->name() == "checkpoint")
      n += count(e.params.get<xpr::rt::JaxprParam>("jaxpr")->jaxpr, prim);
  }
  return n;
}

auto sin3 = [](auto x) { return xpr::sin(xpr::sin(xpr::sin(x))); };
auto sin3_ckpt = xpr::checkpoint(sin3);

// d/dx sin(sin(sin x)) and its second derivative, by hand.
double d_sin3(double x) {
  return std::cos(std::sin(std::sin(x))) * std::cos(std::sin(x)) * std::cos(x);
}
double dd_sin3(double x) {
  double a = x, b = std::sin(a), c = std::sin(b);
  double ca = std::cos(a), cb = std::cos(b), cc = std::cos(c);
  // d/dx [cc * cb * ca] with c' = cb * ca, b' = ca.
  return -std::sin(c) * cb * ca * cb * ca + cc * (-std::sin(b) * ca) * ca +
         cc * cb * (-std::sin(a));
}

TEST(Checkpoint, LinearizeStoresOnlyTheInput) {
  auto [y0, lin0] = xpr::linearize(sin3, 1.0);
  auto [y1, lin1] = xpr::linearize(sin3_ckpt, 1.0);
  xpr::ClosedJaxpr plain = xpr::make_jaxpr(lin0)(1.0);
  xpr::ClosedJaxpr remat = xpr::make_jaxpr(lin1)(1.0);
  // Without checkpoint the residuals are cos(x), cos(sin x), cos(sin(sin x)).
  ASSERT_EQ(plain.consts.size(), 3u);
  EXPECT_EQ(count(plain.jaxpr, "sin"), 0u);
  std::vector<double> cosines{scalar(plain.consts[0]), scalar(plain.consts[1]),
                              scalar(plain.consts[2])};
  std::sort(cosines.begin(), cosines.end());
  std::vector<double> expected{std::cos(1.0), std::cos(std::sin(1.0)),
                               std::cos(std::sin(std::sin(1.0)))};
  std::sort(expected.begin(), expected.end());
  for (std::size_t i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(cosines[i], expected[i]);
  // With checkpoint the only residual is x, and the checkpoint recomputes the sines.
  ASSERT_EQ(remat.consts.size(), 1u);
  EXPECT_EQ(scalar(remat.consts[0]), 1.0);
  ASSERT_EQ(remat.jaxpr.eqns.size(), 1u);
  const xpr::Eqn& e = remat.jaxpr.eqns[0];
  EXPECT_EQ(e.primitive->name(), "checkpoint");
  EXPECT_TRUE(e.params.get<bool>("differentiated"));
  const xpr::Jaxpr& inner = e.params.get<xpr::rt::JaxprParam>("jaxpr")->jaxpr;
  EXPECT_EQ(count(inner, "sin"), 2u);  // sin x and sin(sin x): the arguments of the cosines
  EXPECT_EQ(count(inner, "cos"), 3u);
  EXPECT_EQ(count(inner, "mul"), 3u);
  // Same values.
  EXPECT_EQ(scalar(y0), scalar(y1));
  EXPECT_NEAR(scalar(lin1(2.0)), 2.0 * d_sin3(1.0), 1e-15);
  EXPECT_EQ(scalar(lin0(2.0)), scalar(lin1(2.0)));
}

TEST(Checkpoint, VjpRecomputesInTheBackwardPass) {
  auto [y, f_vjp] = xpr::vjp(sin3_ckpt, 1.0);
  EXPECT_DOUBLE_EQ(scalar(y), std::sin(std::sin(std::sin(1.0))));
  EXPECT_NEAR(scalar(std::get<0>(f_vjp(1.0))), d_sin3(1.0), 1e-15);
  xpr::ClosedJaxpr pullback = xpr::make_jaxpr([&](auto ct) { return std::get<0>(f_vjp(ct)); })(1.0);
  ASSERT_EQ(pullback.consts.size(), 1u);
  EXPECT_EQ(scalar(pullback.consts[0]), 1.0);
  EXPECT_EQ(count(pullback.jaxpr, "sin"), 2u);
  EXPECT_EQ(count(pullback.jaxpr, "cos"), 3u);
  auto [y0, f_vjp0] = xpr::vjp(sin3, 1.0);
  xpr::ClosedJaxpr pullback0 =
      xpr::make_jaxpr([&](auto ct) { return std::get<0>(f_vjp0(ct)); })(1.0);
  EXPECT_EQ(pullback0.consts.size(), 3u);
  EXPECT_EQ(count(pullback0.jaxpr, "sin"), 0u);
}

TEST(Checkpoint, SameDerivativesAsTheFunction) {
  for (double x : {-1.3, 0.2, 1.0, 2.5}) {
    EXPECT_EQ(scalar(sin3_ckpt(x)), scalar(sin3(xpr::full(xpr::Shape{}, x))));
    EXPECT_NEAR(scalar(xpr::grad(sin3_ckpt)(x)), d_sin3(x), 1e-15);
    EXPECT_EQ(scalar(xpr::grad(sin3_ckpt)(x)), scalar(xpr::grad(sin3)(x)));
    EXPECT_NEAR(scalar(xpr::grad(xpr::grad(sin3_ckpt))(x)), dd_sin3(x), 1e-14);
    EXPECT_NEAR(scalar(xpr::grad(xpr::grad(sin3_ckpt))(x)), scalar(xpr::grad(xpr::grad(sin3))(x)),
                1e-15);
    auto [p, t] = xpr::jvp(sin3_ckpt, x, 0.5);
    EXPECT_NEAR(scalar(t), 0.5 * d_sin3(x), 1e-15);
    // Central differences of the gradient.
    const double h = 1e-5;
    double fd =
        (scalar(xpr::grad(sin3_ckpt)(x + h)) - scalar(xpr::grad(sin3_ckpt)(x - h))) / (2 * h);
    EXPECT_NEAR(scalar(xpr::grad(xpr::grad(sin3_ckpt))(x)), fd, 1e-8);
  }
}

TEST(Checkpoint, VmapAndJacobians) {
  Array xs = xpr::array({-1.3, 0.2, 1.0});
  std::vector<double> x = values(xs);
  std::vector<double> y = values(xpr::vmap(sin3_ckpt)(xs));
  std::vector<double> g = values(xpr::vmap(xpr::grad(sin3_ckpt))(xs));
  std::vector<double> gv =
      values(xpr::grad([](auto v) { return xpr::sum(xpr::vmap(sin3_ckpt)(v)); })(xs));
  Array jf = xpr::jacfwd(sin3_ckpt)(xs), jr = xpr::jacrev(sin3_ckpt)(xs);
  Array h = xpr::hessian([](auto v) { return xpr::sum(sin3_ckpt(v)); })(xs);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(y[i], scalar(sin3(xpr::full(xpr::Shape{}, x[i]))));
    EXPECT_DOUBLE_EQ(y[i], std::sin(std::sin(std::sin(x[i]))));
    EXPECT_NEAR(g[i], d_sin3(x[i]), 1e-15);
    EXPECT_NEAR(gv[i], d_sin3(x[i]), 1e-15);
    for (std::size_t k = 0; k < 3; ++k) {
      double want = i == k ? d_sin3(x[i]) : 0.0;
      EXPECT_NEAR(values(jf)[i * 3 + k], want, 1e-15);
      EXPECT_NEAR(values(jr)[i * 3 + k], want, 1e-15);
      EXPECT_NEAR(values(h)[i * 3 + k], i == k ? dd_sin3(x[i]) : 0.0, 1e-14);
    }
  }
}

TEST(Checkpoint, MakeJaxprPrintsJaxsCheckpoint) {
  EXPECT_EQ(text(xpr::make_jaxpr(sin3_ckpt)(1.0)),
            "{ lambda ; a:f64[]. let\n"
            "    b:f64[] = checkpoint[\n"
            "      differentiated=False\n"
            "      jaxpr={ lambda ; c:f64[]. let\n"
            "          d:f64[] = sin c\n"
            "          e:f64[] = sin d\n"
            "          f:f64[] = sin e\n"
            "        in (f,) }\n"
            "      policy=None\n"
            "      prevent_cse=True\n"
            "    ] a\n"
            "  in (b,) }");
  // remat is the same transformation.
  xpr::ClosedJaxpr j = xpr::make_jaxpr(xpr::remat(sin3, false))(1.0);
  EXPECT_FALSE(j.jaxpr.eqns[0].params.get<bool>("prevent_cse"));
}

TEST(Checkpoint, RoundTripsThroughText) {
  // A checkpoint is all data, so a parsed one is differentiated like the original.
  xpr::ClosedJaxpr j = xpr::parse_jaxpr(text(xpr::make_jaxpr(sin3_ckpt)(1.0)));
  auto through_text = [&](auto x) { return xpr::eval_jaxpr(j, {x})[0]; };
  EXPECT_EQ(scalar(xpr::grad(through_text)(1.0)), scalar(xpr::grad(sin3_ckpt)(1.0)));
  auto [y, lin] = xpr::linearize(through_text, 1.0);
  EXPECT_EQ(xpr::make_jaxpr(lin)(1.0).consts.size(), 1u);
}

TEST(Checkpoint, PytreesClosuresAndNesting) {
  Array c = xpr::array({1.0, 2.0});
  auto f = xpr::checkpoint([c](auto xy) {
    auto [x, y] = xy;
    return std::tuple{xpr::sum(xpr::sin(x) * c), x * y};
  });
  auto loss = [&](auto xy) {
    auto [a, b] = f(xy);
    return a + xpr::sum(b);
  };
  Array x = xpr::array({0.3, 0.7}), y = xpr::array({2.0, 3.0});
  auto [gx, gy] = xpr::grad(loss)(std::tuple{x, y});
  std::vector<double> gxv = values(gx), gyv = values(gy);
  EXPECT_NEAR(gxv[0], std::cos(0.3) * 1.0 + 2.0, 1e-15);
  EXPECT_NEAR(gxv[1], std::cos(0.7) * 2.0 + 3.0, 1e-15);
  EXPECT_EQ(gyv, (std::vector<double>{0.3, 0.7}));
  // A checkpoint inside a checkpoint (the outer one's jaxpr is split by partial_eval_jaxpr).
  auto nested = xpr::checkpoint([](auto v) { return xpr::exp(sin3_ckpt(v) * 2.0); });
  for (double v : {0.4, 1.1}) {
    double s = std::sin(std::sin(std::sin(v)));
    EXPECT_NEAR(scalar(xpr::grad(nested)(v)), std::exp(2 * s) * 2 * d_sin3(v), 1e-14);
    auto [yv, lin] = xpr::linearize(nested, v);
    EXPECT_EQ(xpr::make_jaxpr(lin)(1.0).consts.size(), 1u);
  }
  // A closed-over value that is being differentiated is an operand, so its derivative counts.
  auto g = xpr::grad(
      [](auto w) { return xpr::checkpoint([w](auto v) { return xpr::sin(v * w); })(2.0); })(0.5);
  EXPECT_NEAR(scalar(g), 2.0 * std::cos(1.0), 1e-15);
}

TEST(Checkpoint, PartialEvalJaxprAndDceRules) {
  // A jaxpr with a checkpoint of two outputs.
  auto two = xpr::checkpoint([](auto a, auto b) {
    return std::tuple{xpr::sin(a) * b, xpr::cos(a)};
  });
  xpr::ClosedJaxpr j = xpr::make_jaxpr([&](auto a, auto b) {
    auto [p, q] = two(a, b);
    return std::tuple{p, q};
  })(0.5, 2.0);
  ASSERT_EQ(count(j.jaxpr, "checkpoint"), 1u);
  // a known, b unknown: the second output is known, the first is staged and reads a.
  xpr::rt::PartialEvalJaxpr split = xpr::partial_eval_jaxpr(j, {false, true});
  EXPECT_EQ(split.out_unknowns, (std::vector<bool>{true, false}));
  ASSERT_EQ(count(split.known.jaxpr, "checkpoint"), 1u);
  ASSERT_EQ(count(split.unknown.jaxpr, "checkpoint"), 1u);
  EXPECT_EQ(split.num_res, 1u);
  Array a = xpr::full(xpr::Shape{}, 0.5), b = xpr::full(xpr::Shape{}, 2.0);
  xpr::rt::Arrays known = xpr::eval_jaxpr(split.known, {a});
  ASSERT_EQ(known.size(), 2u);  // cos(a), then the residual a
  EXPECT_EQ(scalar(known[0]), std::cos(0.5));
  xpr::rt::Arrays unknown = xpr::eval_jaxpr(split.unknown, {known[1], b});
  EXPECT_EQ(scalar(unknown[0]), std::sin(0.5) * 2.0);
  // Only the second output used: the checkpoint's jaxpr loses the sin and mul, and b.
  auto [pruned, used] = xpr::dce_jaxpr(j.jaxpr, {false, true});
  EXPECT_EQ(used, (std::vector<bool>{true, false}));
  ASSERT_EQ(pruned.eqns.size(), 1u);
  const xpr::Jaxpr& inner = pruned.eqns[0].params.get<xpr::rt::JaxprParam>("jaxpr")->jaxpr;
  EXPECT_EQ(inner.eqns.size(), 1u);
  EXPECT_EQ(inner.invars.size(), 1u);
  EXPECT_EQ(scalar(xpr::eval_jaxpr(xpr::ClosedJaxpr{pruned, {}}, {a})[0]), std::cos(0.5));
}

}  // namespace test_rt_checkpoint
