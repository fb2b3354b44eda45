// Tests of include/xpr/rt/api_transformations.hpp: Autodidax Parts 1-2's printed results
// reproduced to 1e-12, pytrees through jvp and vmap, in_axes/out_axes, control flow on values,
// perturbation confusion and closed-over tracers, the func1 jaxpr text of issue 3.
#include "xpr/rt/api_transformations.hpp"

#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/api.hpp"
#include "xpr/rt/creation.hpp"
#include "xpr/rt/numpy_reductions.hpp"

namespace test_rt_api_transformations {

using xpr::Array;

// deriv(f)(x) = jvp(f, (x,), (1.,))[1], as in Autodidax.
template <class F>
auto deriv(F f) {
  return [f](const auto& x) { return xpr::jvp(f, std::tuple{x}, std::tuple{1.0}).second; };
}

TEST(Autodidax, JvpOfTheFirstExample) {
  auto f = [](auto x) {
    auto y = xpr::sin(x) * 2.;
    return -y + x;
  };
  auto [y, ydot] = xpr::jvp(f, std::tuple{3.0}, std::tuple{1.0});
  EXPECT_NEAR(y.item<double>(), 2.7177599838802657, 1e-12);
  EXPECT_NEAR(ydot.item<double>(), 2.979984993200891, 1e-12);
  EXPECT_NEAR(deriv(deriv(f))(3.0).item<double>(), 0.2822400161197344, 1e-12);
}

TEST(Autodidax, DerivTowersOfSin) {
  auto sin = [](auto x) { return xpr::sin(x); };
  EXPECT_NEAR(deriv(sin)(3.0).item<double>(), -0.9899924966004454, 1e-12);
  EXPECT_NEAR(deriv(deriv(sin))(3.0).item<double>(), -0.1411200080598672, 1e-12);
  EXPECT_NEAR(deriv(deriv(deriv(sin)))(3.0).item<double>(), 0.9899924966004454, 1e-12);
  EXPECT_NEAR(deriv(deriv(deriv(deriv(sin))))(3.0).item<double>(), 0.1411200080598672, 1e-12);
}

TEST(Autodidax, PythonControlFlowUnderJvp) {
  auto f = [](const Array& x) -> Array {
    if (x > 0.) return 2. * x;  // the primal is concrete under jvp
    return x;
  };
  EXPECT_DOUBLE_EQ(deriv(f)(3.0).item<double>(), 2.0);
  EXPECT_DOUBLE_EQ(deriv(f)(-3.0).item<double>(), 1.0);
}

TEST(Autodidax, ControlFlowOnTracedValueIsAConcretizationError) {
  auto f = [](const Array& x) -> Array {
    if (x > 0.) return 2. * x;
    return x;
  };
  try {
    xpr::make_jaxpr(f)(3.0);
    FAIL() << "expected concretization_error";
  } catch (const xpr::concretization_error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("xpr::where"), std::string::npos) << msg;
    EXPECT_NE(msg.find("xpr::cond"), std::string::npos) << msg;
  }
  EXPECT_THROW(xpr::vmap(f)(xpr::arange(3.0)), xpr::concretization_error);
}

TEST(Autodidax, VmapExamples) {
  Array out = xpr::vmap([](auto s) { return 1 + s; }, std::tuple{0})(xpr::arange(3.0));
  EXPECT_EQ(out.to_vector<double>(), (std::vector<double>{1, 2, 3}));
  auto f = [](auto x) { return -(xpr::sin(x) * 2.) + x; };
  std::vector<double> v = xpr::vmap(f)(xpr::arange(3.0)).to_vector<double>();
  const double want[] = {0, -0.68294197, 0.18140515};
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(v[static_cast<std::size_t>(i)], want[i], 1e-8);
}

TEST(Autodidax, JacfwdByHand) {
  // jacfwd(f, x) = vmap(v -> jvp(f, (x,), (v,))[1])(eye(n)): the Jacobian of sin at arange(3.).
  Array x = xpr::arange(3.0);
  auto pushfwd = [&](const Array& v) {
    return xpr::jvp(xpr::sin, std::tuple{x}, std::tuple{v}).second;
  };
  Array jac = xpr::vmap(pushfwd, std::tuple{0})(xpr::eye(3));
  ASSERT_EQ(jac.shape(), (xpr::Shape{3, 3}));
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      EXPECT_NEAR(jac[i][j].item<double>(), i == j ? std::cos(double(i)) : 0.0, 1e-12);
}

TEST(MakeJaxpr, Func1TextExactly) {
  auto func1 = [](auto first, auto second) { return xpr::sum(first + xpr::sin(second) * 3.0); };
  std::ostringstream os;
  os << xpr::make_jaxpr(func1)(xpr::zeros({8}), xpr::ones({8}));
  EXPECT_EQ(os.str(),
            "{ lambda ; a:f64[8] b:f64[8]. let\n"
            "    c:f64[8] = sin b\n"
            "    d:f64[8] = mul c 3.0:f64[]\n"
            "    e:f64[8] = add a d\n"
            "    f:f64[] = reduce_sum[axes=(0,)] e\n"
            "  in (f,) }");
}

TEST(MakeJaxpr, ConstantsBecomeConstvarsAndEvalAgrees) {
  Array c = xpr::array({1.0, 2.0, 3.0});
  auto f = [&](auto x) { return x * c + 1.0; };
  xpr::rt::ClosedJaxpr j = xpr::make_jaxpr(f)(xpr::zeros({3}));
  ASSERT_EQ(j.jaxpr.constvars.size(), 1u);
  Array x = xpr::array({4.0, 5.0, 6.0});
  auto out = xpr::rt::eval_jaxpr(j, std::vector<Array>{x});
  EXPECT_EQ(out[0].to_vector<double>(), (std::vector<double>{5, 11, 19}));
}

TEST(Jvp, PytreesInAndOut) {
  // f({a, b}) = (a * b, sin(a)); tangents along (1, 0).
  auto f = [](const std::map<std::string, Array>& p) {
    return std::tuple{p.at("a") * p.at("b"), xpr::sin(p.at("a"))};
  };
  std::map<std::string, double> primal{{"a", 0.5}, {"b", 3.0}}, tangent{{"a", 1.0}, {"b", 0.0}};
  auto [y, dy] = xpr::jvp(f, std::tuple{primal}, std::tuple{tangent});
  EXPECT_DOUBLE_EQ(std::get<0>(y).item<double>(), 1.5);
  EXPECT_DOUBLE_EQ(std::get<0>(dy).item<double>(), 3.0);
  EXPECT_NEAR(std::get<1>(dy).item<double>(), std::cos(0.5), 1e-15);
  std::map<std::string, double> bad{{"a", 1.0}};
  EXPECT_THROW(xpr::jvp(f, std::tuple{primal}, std::tuple{bad}), xpr::type_error);
}

TEST(Jvp, PerturbationConfusion) {
  // d/dx [x * d/dy (x + y)] at x = 1 is 1: the inner derivative must not see x's perturbation.
  auto outer = [](const Array& x) {
    auto inner = [&](const Array& y) { return x + y; };
    return x * deriv(inner)(x);
  };
  EXPECT_DOUBLE_EQ(deriv(outer)(1.0).item<double>(), 1.0);
  // jvp of jvp with the same input: d/dx d/dx x^3 = 6x.
  auto cube = [](const Array& x) { return x * x * x; };
  EXPECT_DOUBLE_EQ(deriv(deriv(cube))(2.0).item<double>(), 12.0);
}

TEST(Jvp, ClosedOverTracer) {
  // The inner function closes over the outer tracer x: d/dx jvp(y -> sin(x * y), 1, 1)[1]
  // = d/dx x cos(x) = cos x - x sin x.
  auto g = [](const Array& x) {
    return xpr::jvp([&](const Array& y) { return xpr::sin(x * y); }, std::tuple{1.0},
                    std::tuple{1.0})
        .second;
  };
  EXPECT_NEAR(deriv(g)(0.7).item<double>(), std::cos(0.7) - 0.7 * std::sin(0.7), 1e-12);
}

TEST(Vmap, InAxesOutAxesAndNotMapped) {
  Array m = xpr::array({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});  // (2, 3)
  Array w = xpr::array({10.0, 20.0});
  // Map over columns of m, broadcast w: out[j] = m[:, j] * w, stacked along axis 1.
  Array out = xpr::vmap([](auto col, auto ww) { return col * ww; }, std::tuple{1, xpr::not_mapped},
                        1)(m, w);
  ASSERT_EQ(out.shape(), (xpr::Shape{2, 3}));
  EXPECT_EQ(out.to_vector<double>(), (std::vector<double>{10, 20, 30, 80, 100, 120}));
  // An unmapped output is broadcast along out_axes.
  Array k = xpr::vmap([](auto, auto ww) { return ww; }, std::tuple{0, xpr::not_mapped})(m, w);
  EXPECT_EQ(k.shape(), (xpr::Shape{2, 2}));
  EXPECT_THROW(xpr::vmap([](auto a, auto b) { return a + b; })(m, xpr::arange(3.0)),
               xpr::shape_error);
  EXPECT_THROW(xpr::vmap([](auto a) { return a; }, xpr::not_mapped)(m), xpr::value_error);
  // Axes out of range name vmap, in_axes or out_axes, the leaf, its shape and rank.
  auto message = [](auto&& call) {
    try {
      call();
    } catch (const xpr::index_error& e) {
      return std::string(e.what());
    }
    return std::string("no index_error");
  };
  const std::string scalar = message([] { xpr::vmap([](auto a) { return a; })(Array(1.0)); });
  EXPECT_NE(scalar.find("vmap was requested to map leaf 0 of its arguments (shape ()) along axis "
                        "0 (in_axes): expected an array of rank at least 1, found rank 0"),
            std::string::npos)
      << scalar;
  const std::string axis2 = message([&] { xpr::vmap([](auto a) { return a; }, 2)(m); });
  EXPECT_NE(axis2.find("rank at least 3, found rank 2"), std::string::npos) << axis2;
  const std::string out_axis =
      message([&] { xpr::vmap([](auto a) { return xpr::sum(a); }, 0, 1)(m); });
  EXPECT_NE(out_axis.find("vmap: out_axes puts the mapped axis of output leaf 0 at axis 1: "
                          "expected -1 <= axis < 1"),
            std::string::npos)
      << out_axis;
}

TEST(Vmap, PytreeArgumentsWithAxisPrefixes) {
  // in_axes (0, {"a": 0, "b": not_mapped}) against an argument pair (x, {a, b}).
  Array x = xpr::array({1.0, 2.0, 3.0});
  std::map<std::string, Array> p{{"a", xpr::array({1.0, 1.0, 2.0})}, {"b", Array(10.0)}};
  std::map<std::string, std::optional<int>> axes{{"a", 0}, {"b", std::nullopt}};
  Array out = xpr::vmap(
      [](auto xi, const std::map<std::string, Array>& q) { return xi * q.at("a") + q.at("b"); },
      std::tuple{0, axes})(x, p);
  EXPECT_EQ(out.to_vector<double>(), (std::vector<double>{11, 12, 16}));
  std::tuple<int, int> wrong{0, 0};
  EXPECT_THROW(xpr::vmap([](auto a) { return a; }, std::make_tuple(wrong))(x), xpr::type_error);
}

TEST(Transformations, VmapOfJvpAndJvpOfVmap) {
  auto f = [](const Array& x) { return xpr::sin(x) * x; };
  auto df = [&](const Array& x) { return deriv(f)(x); };  // sin x + x cos x
  Array xs = xpr::array({0.1, 0.2, 0.3});
  std::vector<double> v = xpr::vmap(df)(xs).to_vector<double>();
  auto [y, t] = xpr::jvp(xpr::vmap(f), std::tuple{xs}, std::tuple{xpr::ones({3})});
  std::vector<double> tv = t.to_vector<double>();
  for (int i = 0; i < 3; ++i) {
    double x = 0.1 * (i + 1);
    EXPECT_NEAR(v[static_cast<std::size_t>(i)], std::sin(x) + x * std::cos(x), 1e-15);
    EXPECT_NEAR(tv[static_cast<std::size_t>(i)], std::sin(x) + x * std::cos(x), 1e-15);
  }
}

}  // namespace test_rt_api_transformations
