// Tests of include/xpr/rt/while_loop.hpp: the jaxpr of func10 of "Understanding jaxprs" (its
// fori_loop written as the while_loop JAX lowers it to), Newton's method for x^3 = a (values,
// jvp with respect to a against 1 / (3 a^(2/3)), vmap over values of a that need different
// numbers of iterations against the loop), the reverse-mode error, linearize, closed-over
// tracers, the laws (jvp vs finite differences, vmap vs loop, print -> parse -> print), dce and
// the type errors.
#include "xpr/rt/while_loop.hpp"

#include <cmath>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/api.hpp"

#include "tests/laws/laws.hpp"

namespace test_rt_while_loop {

using xpr::Array;
using xpr::rt::Arrays;
using xpr::rt::FlatFunction;

double scalar(const Array& a) { return a.item<double>(); }
std::vector<double> values(const Array& a) { return a.to_vector<double>(); }

template <class J>
std::string text(const J& j) {
  std::ostringstream os;
  os << j;
  return os.str();
}

std::size_t count(const xpr::Jaxpr& j, const std::string& prim) {
  std::size_t n = 0;
  for (const auto& e : j.eqns) n += e.primitive->name() == prim ? 1 : 0;
  return n;
}

// ---- func10 -----------------------------------------------------------------------------------

// func10: fori_loop(0, n, lambda i, carry: carry + ones * 3. + arg, arg + ones) with a traced n,
// which JAX lowers to a while over (i, upper, carry).
using Carry3 = std::tuple<Array, Array, Array>;
auto func10 = [](Array arg, Array n) {
  Array ones = xpr::ones(arg.shape());
  auto out = xpr::while_loop([](const Carry3& c) { return std::get<0>(c) < std::get<1>(c); },
                             [&](const Carry3& c) {
                               auto [i, upper, carry] = c;
                               return std::tuple{i + 1, upper, carry + ones * 3.0 + arg};
                             },
                             std::tuple{Array(0), n, arg + ones});
  return std::get<2>(out);
};

TEST(WhileLoop, Func10Jaxpr) {
  // As in "Understanding jaxprs": body_nconsts=2 (ones and arg, which the body closes over),
  // cond_nconsts=0, operands `ones arg 0 n (arg + ones)`, the index and bound dropped. (Today's
  // JAX stages `ones * 3.` inside the body too.)
  xpr::ClosedJaxpr j = xpr::make_jaxpr(func10)(xpr::ones({16}), Array(std::int32_t(5)));
  EXPECT_EQ(text(j),
            "{ lambda a:f64[16]; b:f64[16] c:i32[]. let\n"
            "    d:f64[16] = add b a\n"
            "    _:i32[] _:i32[] e:f64[16] = while[\n"
            "      body_jaxpr={ lambda ; f:f64[16] g:f64[16] h:i32[] i:i32[] j:f64[16]. let\n"
            "          k:i32[] = add h 1:i32[]\n"
            "          l:f64[16] = mul f 3.0:f64[]\n"
            "          m:f64[16] = add j l\n"
            "          n:f64[16] = add m g\n"
            "        in (k, i, n) }\n"
            "      body_nconsts=2\n"
            "      cond_jaxpr={ lambda ; o:i32[] p:i32[] q:f64[16]. let\n"
            "          r:bool[] = lt o p\n"
            "        in (r,) }\n"
            "      cond_nconsts=0\n"
            "    ] a b 0:i32[] c d\n"
            "  in (e,) }");
  // (1 + 1) + 5 (3 + 1) = 22 for arg = 1.
  EXPECT_EQ(values(func10(xpr::ones({2}), Array(std::int32_t(5)))), (std::vector<double>{22, 22}));
  EXPECT_EQ(values(func10(xpr::ones({2}), Array(std::int32_t(0)))), (std::vector<double>{2, 2}));
}

// ---- Newton's method for x^3 = a --------------------------------------------------------------

using Newton = std::tuple<Array, Array, Array>;  // (x, a, iterations)

/// The cube root of `a` by Newton's method from x = a, and the number of iterations.
auto newton = [](Array a) {
  return xpr::while_loop(
      [](const Newton& s) {
        auto [x, a_, n] = s;
        return xpr::abs(x * x * x - a_) > 1e-12 * a_;
      },
      [](const Newton& s) {
        auto [x, a_, n] = s;
        return Newton{x - (x * x * x - a_) / (3.0 * x * x), a_, n + 1};
      },
      Newton{a, a, Array(0)});
};
auto cbrt = [](Array a) { return std::get<0>(newton(a)); };

TEST(WhileLoop, NewtonValues) {
  for (double a : {1.0, 2.0, 8.0, 27.0, 1000.0}) {
    EXPECT_NEAR(scalar(cbrt(Array(a))), std::cbrt(a), 1e-12 * std::cbrt(a)) << a;
  }
  EXPECT_EQ(std::get<2>(newton(Array(1.0))).item<int>(), 0);  // already converged
}

TEST(WhileLoop, NewtonJvpAgainstClosedForm) {
  // d/da a^(1/3) = 1 / (3 a^(2/3)): the tangent carried through the iterations converges to it.
  for (double a : {2.0, 8.0, 27.0, 1000.0}) {
    auto [y, t] = xpr::jvp(cbrt, Array(a), Array(1.0));
    EXPECT_NEAR(scalar(y), std::cbrt(a), 1e-12 * std::cbrt(a));
    EXPECT_NEAR(scalar(t), 1.0 / (3.0 * std::pow(a, 2.0 / 3.0)), 1e-10) << a;
  }
  // jacfwd and linearize are forward mode too.
  EXPECT_NEAR(scalar(xpr::jacfwd(cbrt)(8.0)), 1.0 / 12.0, 1e-12);
  auto [y, lin] = xpr::linearize(cbrt, 8.0);
  EXPECT_NEAR(scalar(y), 2.0, 1e-12);
  EXPECT_NEAR(scalar(lin(Array(1.0))), 1.0 / 12.0, 1e-12);
  // The jvp loop carries tangents for x and a (a's tangent is nonzero from init), not for the
  // integer counter.
  xpr::ClosedJaxpr j =
      xpr::make_jaxpr([](Array a, Array t) { return xpr::jvp(cbrt, a, t).second; })(8.0, 1.0);
  ASSERT_EQ(count(j.jaxpr, "while"), 1u);
  EXPECT_EQ(j.jaxpr.eqns.back().outputs.size(), 5u);
}

TEST(WhileLoop, NewtonVmapDifferentIterationCounts) {
  const std::vector<double> as{1.0, 2.0, 8.0, 1000.0, 1e6};
  Array batch = xpr::array(as);
  auto [xs, a_out, ns] = xpr::vmap(newton)(batch);
  std::vector<double> x = values(xs);
  std::vector<int> n = ns.to_vector<int>();
  for (std::size_t i = 0; i < as.size(); ++i) {
    auto [x1, a1, n1] = newton(Array(as[i]));
    EXPECT_EQ(x[i], scalar(x1)) << as[i];  // each lane stops where its own loop stops
    EXPECT_EQ(n[i], n1.item<int>()) << as[i];
  }
  EXPECT_EQ(n[0], 0);
  EXPECT_GT(n[4], n[2] + 5);  // 1e6 needs many more steps than 8
  // Forward mode under vmap, against the closed form.
  std::vector<double> ts =
      values(xpr::vmap([](Array a) { return xpr::jvp(cbrt, a, Array(1.0)).second; })(batch));
  // a = 1 takes no step, so x = a and the derivative of the computation is 1 (as in JAX); the
  // others converge to the derivative of the cube root.
  EXPECT_EQ(ts[0], 1.0);
  for (std::size_t i = 1; i < as.size(); ++i)
    EXPECT_NEAR(ts[i], 1.0 / (3.0 * std::pow(as[i], 2.0 / 3.0)), 1e-10) << as[i];
}

// An empty batch (a filtered set, a trailing minibatch): no lane's predicate holds, so the loop
// runs zero times and returns the (empty) carry, as JAX's reduce_or of nothing gives; also for
// fori_loop with batched bounds, a max_trips loop and under jit.
TEST(WhileLoop, VmapOverAnEmptyBatch) {
  auto up = [](const Array& a) {
    return xpr::while_loop([](const Array& z) { return z < 3.0; },
                           [](const Array& z) { return z + 1.0; }, a);
  };
  EXPECT_EQ(xpr::vmap(up)(xpr::zeros(xpr::Shape{0})).shape(), (xpr::Shape{0}));
  EXPECT_EQ(xpr::jit(xpr::vmap(up))(xpr::zeros(xpr::Shape{0})).shape(), (xpr::Shape{0}));
  EXPECT_EQ(values(xpr::vmap(up)(xpr::array({0.5, 5.0}))), (std::vector<double>{3.5, 5.0}));
  auto count = [](const Array& n) {
    return xpr::fori_loop(
        Array(0), n, [](const Array&, const Array& c) { return c + 1.0; }, Array(0.0));
  };
  EXPECT_EQ(xpr::vmap(count)(xpr::array(std::vector<std::int32_t>{})).shape(), (xpr::Shape{0}));
  auto bounded = [](const Array& a) {
    return xpr::while_loop([](const Array& z) { return z < 3.0; },
                           [](const Array& z) { return z + 1.0; }, a, xpr::max_trips(8));
  };
  EXPECT_EQ(xpr::vmap(bounded)(xpr::zeros(xpr::Shape{0})).shape(), (xpr::Shape{0}));
}

TEST(WhileLoop, ReverseModeThrowsClearError) {
  auto expect_error = [](auto&& fn) {
    try {
      fn();
      ADD_FAILURE() << "expected type_error";
    } catch (const xpr::type_error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("Reverse-mode differentiation does not work for xpr::while_loop"),
                std::string::npos)
          << m;
      EXPECT_NE(m.find("xpr::scan"), std::string::npos) << m;
      EXPECT_NE(m.find("xpr::max_trips(N)"), std::string::npos) << m;
    }
  };
  expect_error([] { (void)xpr::grad(cbrt)(8.0); });
  expect_error([] { (void)xpr::jacrev(cbrt)(8.0); });
  expect_error([] { (void)xpr::vjp(cbrt, Array(8.0)).second(Array(1.0)); });
  // The trace state is left clean: forward mode still works afterwards.
  EXPECT_NEAR(scalar(xpr::jvp(cbrt, Array(8.0), Array(1.0)).second), 1.0 / 12.0, 1e-12);
  // A loop the derivative does not flow through is fine under grad.
  auto g = [](Array x, Array n) {
    auto k = xpr::while_loop(
        [](const std::tuple<Array, Array>& s) { return std::get<0>(s) < std::get<1>(s); },
        [](const std::tuple<Array, Array>& s) {
          return std::tuple{std::get<0>(s) + 1, std::get<1>(s)};
        },
        std::tuple{Array(0), n});
    return x * xpr::astype(std::get<0>(k), xpr::DType::float64);
  };
  EXPECT_EQ(scalar(xpr::grad(g)(2.0, Array(std::int32_t(4)))), 4.0);
}

TEST(WhileLoop, ClosedOverTracers) {
  // x_{k+1} = x_k * c while x < 100: the body closes over c, a jvp tracer.
  auto f = [](Array c) {
    return xpr::while_loop([](Array x) { return x < 100.0; }, [&](Array x) { return x * c; },
                           Array(1.0));
  };
  // c = 3: 1, 3, 9, 27, 81, 243 -> c^5, derivative 5 c^4.
  auto [y, t] = xpr::jvp(f, Array(3.0), Array(1.0));
  EXPECT_EQ(scalar(y), 243.0);
  EXPECT_EQ(scalar(t), 405.0);
  std::vector<double> ys = values(xpr::vmap(f)(xpr::array({3.0, 10.0, 101.0})));
  EXPECT_EQ(ys, (std::vector<double>{243.0, 100.0, 101.0}));  // lanes stop at 5, 2, 0 steps
}

TEST(WhileLoop, PlainNumbersAndWeakTypes) {
  // A C++ number as the carry: weakly typed, it keeps the body's type.
  Array r = xpr::while_loop([](Array x) { return x < 10.0; }, [](Array x) { return x * 2.0; }, 1.0);
  EXPECT_EQ(scalar(r), 16.0);
  Array i = xpr::while_loop([](Array k) { return k < 5; }, [](Array k) { return k + 1; }, 0);
  EXPECT_EQ(i.item<int>(), 5);
}

TEST(WhileLoop, TypeErrors) {
  EXPECT_THROW((void)xpr::while_loop([](Array x) { return x < 1.0; },
                                     [](Array x) { return xpr::astype(x, xpr::DType::float32); },
                                     xpr::array({0.0, 1.0})),
               xpr::type_error);
  EXPECT_THROW((void)xpr::while_loop([](Array x) { return x < 1.0; },
                                     [](Array x) {
                                       return std::tuple{x, x};
                                     },
                                     Array(0.0)),
               xpr::type_error);
  EXPECT_THROW((void)xpr::while_loop([](Array x) { return x < 1.0; },
                                     [](Array x) { return x + 1.0; }, xpr::array({0.0, 1.0})),
               xpr::type_error);  // a predicate of shape (2,)
  EXPECT_THROW(
      (void)xpr::while_loop([](Array x) { return x; }, [](Array x) { return x + 1.0; }, Array(0.0)),
      xpr::type_error);  // a predicate of dtype f64
}

// ---- the laws ---------------------------------------------------------------------------------

// (x, y) -> repeat (x, y) = (x * y + sin x, y * 0.9) while |x| < 5 and fewer than 8 steps.
FlatFunction loop_fn = [](std::span<const Array> a) {
  using S = std::tuple<Array, Array, Array>;
  auto out = xpr::while_loop(
      [](const S& s) {
        return xpr::where(std::get<2>(s) < 8, xpr::abs(std::get<0>(s)) < 5.0, false);
      },
      [](const S& s) {
        auto [x, y, k] = s;
        return S{x * y + xpr::sin(x), y * 0.9, k + 1};
      },
      S{a[0], a[1], Array(0)});
  return Arrays{std::get<0>(out), std::get<1>(out)};
};

TEST(WhileLoopLaws, JvpAgainstFiniteDifferences) {
  using xpr::laws::ArgSpec;
  std::vector<ArgSpec> specs{{xpr::Shape{}, xpr::DType::float64, 0.5, 1.0},
                             {xpr::Shape{}, xpr::DType::float64, 0.8, 1.2}};
  for (std::uint64_t seed : {1u, 2u, 3u}) xpr::laws::check_jvp(loop_fn, specs, seed);
}

TEST(WhileLoopLaws, VmapAgainstLoop) {
  using xpr::laws::ArgSpec;
  // Batched x: a batched predicate (lanes stop at different steps); batched y only: also.
  std::vector<ArgSpec> specs{{xpr::Shape{}, xpr::DType::float64, -3.0, 3.0},
                             {xpr::Shape{}, xpr::DType::float64, 0.5, 1.5}};
  EXPECT_GT(xpr::laws::check_batch(loop_fn, specs, 4, 5), 0);
  // An unbatched predicate: the loop counts with an unbatched bound and scales a batched vector.
  FlatFunction counted = [](std::span<const Array> a) {
    using S = std::tuple<Array, Array>;
    auto out = xpr::while_loop([](const S& s) { return std::get<0>(s) < 3; },
                               [](const S& s) {
                                 return S{std::get<0>(s) + 1, xpr::sin(std::get<1>(s)) * 2.0};
                               },
                               S{Array(0), a[0]});
    return Arrays{std::get<1>(out)};
  };
  EXPECT_GT(xpr::laws::check_batch(counted, std::vector<ArgSpec>{{xpr::Shape{2}}}, 6, 3), 0);
  xpr::ClosedJaxpr j =
      xpr::make_jaxpr(xpr::vmap([&](Array x) { return counted(Arrays{x})[0]; }))(xpr::ones({3, 2}));
  ASSERT_EQ(count(j.jaxpr, "while"), 1u);
  EXPECT_EQ(count(j.jaxpr, "select_n"), 0u);
  // And of its forward mode.
  std::vector<ArgSpec> jspecs = specs;
  jspecs.push_back({xpr::Shape{}, xpr::DType::float64, -1.0, 1.0});
  jspecs.push_back({xpr::Shape{}, xpr::DType::float64, -1.0, 1.0});
  EXPECT_GT(xpr::laws::check_batch(xpr::laws::jvp_of(loop_fn), jspecs, 8, 3, 32), 0);
}

TEST(WhileLoopLaws, PrintParsePrint) {
  auto roundtrip = [](const xpr::ClosedJaxpr& j) {
    const std::string first = text(j);
    xpr::ClosedJaxpr parsed = xpr::parse_jaxpr(first, j.consts);
    xpr::typecheck_jaxpr(parsed);
    EXPECT_EQ(text(parsed), first);
    return parsed;
  };
  auto f = [](Array x, Array y) { return loop_fn(Arrays{x, y}); };
  xpr::ClosedJaxpr j = roundtrip(xpr::make_jaxpr(f)(0.7, 1.1));
  Arrays want = loop_fn(Arrays{Array(0.7), Array(1.1)});
  Arrays got = xpr::eval_jaxpr(j, {Array(0.7), Array(1.1)});
  EXPECT_EQ(scalar(got[0]), scalar(want[0]));
  roundtrip(xpr::make_jaxpr(func10)(xpr::ones({4}), Array(std::int32_t(5))));
  roundtrip(xpr::make_jaxpr(xpr::vmap(f))(xpr::ones({3}), xpr::ones({3})));
  roundtrip(
      xpr::make_jaxpr([](Array a, Array t) { return xpr::jvp(cbrt, a, t).second; })(8.0, 1.0));
}

TEST(WhileLoop, DcePrunesUnneededCarries) {
  // The iteration counter is an output nobody uses and that the predicate does not read: gone.
  auto f = [](Array x) {
    using S = std::tuple<Array, Array>;
    auto out = xpr::while_loop([](const S& s) { return std::get<0>(s) < 10.0; },
                               [](const S& s) {
                                 return S{std::get<0>(s) * 2.0, std::get<1>(s) + 1};
                               },
                               S{x, Array(0)});
    return std::get<0>(out);
  };
  xpr::ClosedJaxpr j = xpr::make_jaxpr(f)(1.0);
  auto [pruned, used] = xpr::dce_jaxpr(j.jaxpr, {true});
  const xpr::Eqn& e = pruned.eqns.back();
  ASSERT_EQ(e.primitive->name(), "while");
  EXPECT_EQ(e.outputs.size(), 1u);
  EXPECT_EQ(e.inputs.size(), 1u);
  xpr::typecheck_jaxpr(pruned);
  EXPECT_EQ(scalar(xpr::eval_jaxpr(xpr::ClosedJaxpr{pruned, j.consts}, {Array(1.0)})[0]), 16.0);
  // The counter stays when the predicate reads it.
  auto g = [](Array x) {
    using S = std::tuple<Array, Array>;
    auto out = xpr::while_loop([](const S& s) { return std::get<1>(s) < 3; },
                               [](const S& s) {
                                 return S{std::get<0>(s) * 2.0, std::get<1>(s) + 1};
                               },
                               S{x, Array(0)});
    return std::get<0>(out);
  };
  auto [pruned_g, used_g] = xpr::dce_jaxpr(xpr::make_jaxpr(g)(1.0).jaxpr, {true});
  EXPECT_EQ(pruned_g.eqns.back().outputs.size(), 2u);
}

}  // namespace test_rt_while_loop
