// Tests of include/xpr/rt/cond.hpp: the jaxprs of func7 and func8 of "Understanding jaxprs" in
// today's JAX form (cond[branches=(false, true)] with an int32 index), the Autodidax Part 5
// examples, values and derivatives against closed forms and finite differences (grad, jacrev,
// hessian, closed-over tracers, nested conds, switch_), vmap with a batched predicate against the
// loop (select_n over both branches), the laws (jvp vs finite differences, vmap vs loop, the
// vjp/jvp inner-product identity, print -> parse -> print), dce and the type errors.
#include "xpr/rt/cond.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/api.hpp"
#include "xpr/rt/checkpoint.hpp"
#include "xpr/rt/custom_derivatives.hpp"

#include "tests/laws/laws.hpp"

namespace test_rt_cond {

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

/// Central finite differences of a scalar function.
template <class F>
double fd(F f, double x, double h = 1e-6) {
  return (f(x + h) - f(x - h)) / (2 * h);
}

// ---- the jaxprs of "Understanding jaxprs" ----------------------------------------------------

// func7: lax.cond(arg >= 0., lambda x: x + 3., lambda x: x - 3., arg). Today's JAX converts the
// predicate to an int32 index and lists the branches (false, true).
auto func7 = [](Array arg) {
  return xpr::cond(
      arg >= 0.0, [](Array xtrue) { return xtrue + 3.0; },
      [](Array xfalse) { return xfalse - 3.0; }, arg);
};

TEST(Cond, Func7Jaxpr) {
  EXPECT_EQ(text(xpr::make_jaxpr(func7)(5.0)),
            "{ lambda ; a:f64[]. let\n"
            "    b:bool[] = ge a 0.0:f64[]\n"
            "    c:i32[] = convert_element_type[new_dtype=int32 weak_type=False] b\n"
            "    d:f64[] = cond[\n"
            "      branches=(\n"
            "        { lambda ; e:f64[]. let f:f64[] = sub e 3.0:f64[] in (f,) }\n"
            "        { lambda ; g:f64[]. let h:f64[] = add g 3.0:f64[] in (h,) }\n"
            "      )\n"
            "    ] c a\n"
            "  in (d,) }");
  EXPECT_EQ(scalar(func7(Array(5.0))), 8.0);
  EXPECT_EQ(scalar(func7(Array(-5.0))), -8.0);
}

// func8: the operand is a pair, and the false branch closes over jnp.ones(1), which becomes a
// constant of the outer jaxpr passed to both branches ahead of the operands (the true branch
// ignores it): operands `index, const, pair...`.
auto func8 = [](Array arg1, std::tuple<Array, Array> arg2) {
  return xpr::cond(
      arg1 >= 0.0, [](std::tuple<Array, Array> xtrue) { return std::get<0>(xtrue); },
      [](std::tuple<Array, Array> xfalse) { return xpr::ones({1}) + std::get<1>(xfalse); }, arg2);
};

TEST(Cond, Func8Jaxpr) {
  xpr::ClosedJaxpr j = xpr::make_jaxpr(func8)(5.0, std::tuple{xpr::zeros({1}), Array(2.0)});
  EXPECT_EQ(text(j),
            "{ lambda a:f64[1]; b:f64[] c:f64[1] d:f64[]. let\n"
            "    e:bool[] = ge b 0.0:f64[]\n"
            "    f:i32[] = convert_element_type[new_dtype=int32 weak_type=False] e\n"
            "    g:f64[1] = cond[\n"
            "      branches=(\n"
            "        { lambda ; h:f64[1] i:f64[1] j:f64[]. let\n"
            "            k:f64[] = convert_element_type[new_dtype=float64 weak_type=False] j\n"
            "            l:f64[1] = add h k\n"
            "          in (l,) }\n"
            "        { lambda ; m:f64[1] n:f64[1] o:f64[]. let  in (n,) }\n"
            "      )\n"
            "    ] f a c d\n"
            "  in (g,) }");
  ASSERT_EQ(j.consts.size(), 1u);
  EXPECT_EQ(values(j.consts[0]), std::vector<double>{1.0});
  EXPECT_EQ(values(func8(Array(5.0), std::tuple{xpr::full({1}, 7.0), Array(2.0)})),
            std::vector<double>{7.0});
  EXPECT_EQ(values(func8(Array(-5.0), std::tuple{xpr::full({1}, 7.0), Array(2.0)})),
            std::vector<double>{3.0});
}

// ---- Autodidax Part 5 -------------------------------------------------------------------------

TEST(Cond, AutodidaxPart5Examples) {
  const Array yes(true), no(false);
  // cond(True, lambda: 3, lambda: 4) and cond(False, ...), staged as a cond.
  EXPECT_EQ(xpr::cond(
                yes, [] { return Array(3); }, [] { return Array(4); })
                .item<int>(),
            3);
  EXPECT_EQ(xpr::cond(
                no, [] { return Array(1); }, [] { return Array(2); })
                .item<int>(),
            2);
  // jvp(lambda x: cond(True, lambda: x * x, lambda: 0.), (1.,), (1.,)) -> tangent 2.
  auto sq = [&](Array x) {
    return xpr::cond(
        yes, [&] { return x * x; }, [] { return Array(0.0); });
  };
  EXPECT_EQ(scalar(xpr::jvp(sq, Array(1.0), Array(1.0)).second), 2.0);
  // vmap(lambda x: cond(True, lambda: x + 1., lambda: 0.))([1., 2., 3.]) -> [2., 3., 4.].
  auto inc = [&](Array x) {
    return xpr::cond(
        yes, [&] { return x + 1.0; }, [] { return Array(0.0); });
  };
  EXPECT_EQ(values(xpr::vmap(inc)(xpr::array({1.0, 2.0, 3.0}))), (std::vector<double>{2, 3, 4}));
  // linearize(lambda x: cond(True, lambda: x, lambda: 0.), 1.) applied to 3.14 -> 3.14.
  auto id = [&](Array x) {
    return xpr::cond(
        yes, [&] { return x; }, [] { return Array(0.0); });
  };
  auto [y, f_lin] = xpr::linearize(id, 1.0);
  EXPECT_EQ(scalar(y), 1.0);
  EXPECT_EQ(scalar(f_lin(Array(3.14))), 3.14);
  // grad(lambda x: cond(True, lambda: x * x, lambda: 0.))(1.) -> 2.
  EXPECT_EQ(scalar(xpr::grad(sq)(1.0)), 2.0);
  // Plain C++ numbers just branch.
  EXPECT_EQ(xpr::cond(
                true, [] { return 3; }, [] { return 4; }),
            3);
  EXPECT_EQ(xpr::cond(
                false, [](double x) { return x; }, [](double x) { return -x; }, 2.0),
            -2.0);
}

// ---- values and derivatives -------------------------------------------------------------------

// f(x) = x sin x for x > 0, else exp(x).
auto piecewise = [](Array x) {
  return xpr::cond(
      x > 0.0, [](Array v) { return xpr::sin(v) * v; }, [](Array v) { return xpr::exp(v); }, x);
};
double piecewise_ref(double x) { return x > 0 ? std::sin(x) * x : std::exp(x); }
double d_piecewise(double x) { return x > 0 ? std::cos(x) * x + std::sin(x) : std::exp(x); }
double dd_piecewise(double x) { return x > 0 ? 2 * std::cos(x) - x * std::sin(x) : std::exp(x); }

TEST(Cond, GradJacrevHessianAgainstClosedForms) {
  for (double x : {-1.5, -0.25, 0.5, 1.0, 2.5}) {
    EXPECT_DOUBLE_EQ(scalar(piecewise(Array(x))), piecewise_ref(x)) << x;
    EXPECT_NEAR(scalar(xpr::grad(piecewise)(x)), d_piecewise(x), 1e-14) << x;
    EXPECT_NEAR(scalar(xpr::jacrev(piecewise)(x)), d_piecewise(x), 1e-14) << x;
    EXPECT_NEAR(scalar(xpr::jacfwd(piecewise)(x)), d_piecewise(x), 1e-14) << x;
    EXPECT_NEAR(scalar(xpr::hessian(piecewise)(x)), dd_piecewise(x), 1e-13) << x;
    EXPECT_NEAR(scalar(xpr::grad(piecewise)(x)), fd(piecewise_ref, x), 1e-8) << x;
    EXPECT_NEAR(scalar(xpr::hessian(piecewise)(x)), fd(d_piecewise, x), 1e-7) << x;
  }
}

TEST(Cond, ClosedOverTracers) {
  // The branches close over y (a tracer of grad): f = x y if x > 0 else x + y^2.
  auto f = [](Array x, Array y) {
    return xpr::cond(
        x > 0.0, [&](Array v) { return v * y; }, [&](Array v) { return v + y * y; }, x);
  };
  for (double x : {-2.0, 2.0}) {
    auto [gx, gy] = xpr::grad<0, 1>(f)(x, 3.0);
    EXPECT_EQ(scalar(gx), x > 0 ? 3.0 : 1.0);
    EXPECT_EQ(scalar(gy), x > 0 ? x : 6.0);
  }
  // The closed-over y is an operand of the cond: make_jaxpr shows it after the index.
  xpr::ClosedJaxpr j = xpr::make_jaxpr(f)(2.0, 3.0);
  ASSERT_EQ(count(j.jaxpr, "cond"), 1u);
  EXPECT_EQ(j.jaxpr.eqns.back().inputs.size(), 3u);  // index, y, x
  // Second derivative through the closure: d2/dy2 (x + y^2) = 2, d2/dy2 (x y) = 0.
  auto fy = [&](double x) { return [x, &f](Array y) { return f(Array(x), y); }; };
  EXPECT_EQ(scalar(xpr::hessian(fy(-1.0))(3.0)), 2.0);
  EXPECT_EQ(scalar(xpr::hessian(fy(1.0))(3.0)), 0.0);
}

TEST(Cond, NestedCondInCond) {
  // x > 0 ? (x > 1 ? x^3 : x^2) : -x
  auto f = [](Array x) {
    return xpr::cond(
        x > 0.0,
        [](Array v) {
          return xpr::cond(
              v > 1.0, [](Array w) { return w * w * w; }, [](Array w) { return w * w; }, v);
        },
        [](Array v) { return -v; }, x);
  };
  auto ref = [](double x) { return x > 0 ? (x > 1 ? x * x * x : x * x) : -x; };
  auto dref = [](double x) { return x > 0 ? (x > 1 ? 3 * x * x : 2 * x) : -1.0; };
  auto ddref = [](double x) { return x > 0 ? (x > 1 ? 6 * x : 2.0) : 0.0; };
  for (double x : {-0.5, 0.5, 2.0}) {
    EXPECT_EQ(scalar(f(Array(x))), ref(x));
    EXPECT_DOUBLE_EQ(scalar(xpr::grad(f)(x)), dref(x));
    EXPECT_DOUBLE_EQ(scalar(xpr::hessian(f)(x)), ddref(x));
  }
  Array xs = xpr::array({-0.5, 0.5, 2.0});
  EXPECT_EQ(values(xpr::vmap(f)(xs)), (std::vector<double>{0.5, 0.25, 8.0}));
  EXPECT_EQ(values(xpr::vmap(xpr::grad(f))(xs)), (std::vector<double>{-1.0, 1.0, 12.0}));
  xpr::ClosedJaxpr j = xpr::make_jaxpr(f)(2.0);
  ASSERT_EQ(count(j.jaxpr, "cond"), 1u);
  const auto& branches = j.jaxpr.eqns.back().params.get<xpr::rt::JaxprTuple>("branches");
  EXPECT_EQ(count(branches[1]->jaxpr, "cond"), 1u);  // the inner cond is in the true branch
}

TEST(Cond, VmapBatchedPredicateAgainstLoop) {
  Array xs = xpr::array({-1.5, -0.25, 0.5, 1.0, 2.5});
  std::vector<double> got = values(xpr::vmap(piecewise)(xs));
  std::vector<double> grads = values(xpr::vmap(xpr::grad(piecewise))(xs));
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double x = values(xs)[i];
    EXPECT_EQ(got[i], scalar(piecewise(Array(x))));
    EXPECT_EQ(grads[i], scalar(xpr::grad(piecewise)(x)));
  }
  // A batched predicate: both branches run and select_n picks; no cond is left.
  xpr::ClosedJaxpr j = xpr::make_jaxpr(xpr::vmap(piecewise))(xs);
  EXPECT_EQ(count(j.jaxpr, "cond"), 0u);
  EXPECT_GE(count(j.jaxpr, "select_n"), 1u);
  // A branch not taken on a lane puts no NaN in that lane's derivative: log(x) for x > 0 else 0.
  auto safe_log = [](Array x) {
    return xpr::cond(
        x > 0.0, [](Array v) { return xpr::log(v); }, [](Array v) { return v * 0.0; }, x);
  };
  std::vector<double> g = values(xpr::vmap(xpr::grad(safe_log))(xpr::array({-1.0, 0.0, 2.0})));
  EXPECT_EQ(g, (std::vector<double>{0.0, 0.0, 0.5}));
}

TEST(Cond, VmapUnbatchedPredicateStaysCond) {
  // The predicate depends only on an unbatched value: the cond stays, with batched branches.
  auto f = [](Array p, Array x) {
    return xpr::cond(
        p > 0.0, [](Array v) { return v * 2.0; }, [](Array v) { return v - 1.0; }, x);
  };
  auto batched = xpr::vmap(f, std::tuple{xpr::not_mapped, 0});
  Array xs = xpr::array({1.0, 2.0, 3.0});
  EXPECT_EQ(values(batched(Array(1.0), xs)), (std::vector<double>{2, 4, 6}));
  EXPECT_EQ(values(batched(Array(-1.0), xs)), (std::vector<double>{0, 1, 2}));
  xpr::ClosedJaxpr j = xpr::make_jaxpr(batched)(Array(1.0), xs);
  EXPECT_EQ(count(j.jaxpr, "cond"), 1u);
  EXPECT_EQ(count(j.jaxpr, "select_n"), 0u);
  // An output that depends on no batched value stays unbatched inside the cond.
  auto two = [](Array p, Array x) {
    return xpr::cond(
        p > 0.0,
        [](Array v, Array q) {
          return std::tuple{v * 2.0, q + 1.0};
        },
        [](Array v, Array q) {
          return std::tuple{v - 1.0, q * q};
        },
        x, p);
  };
  auto two_batched = xpr::vmap(two, std::tuple{xpr::not_mapped, 0});
  auto [a, b] = two_batched(Array(3.0), xs);
  EXPECT_EQ(values(a), (std::vector<double>{2, 4, 6}));
  EXPECT_EQ(values(b), (std::vector<double>{4, 4, 4}));
  xpr::ClosedJaxpr j2 = xpr::make_jaxpr(two_batched)(Array(3.0), xs);
  const xpr::Eqn* c = nullptr;
  for (const auto& e : j2.jaxpr.eqns)
    if (e.primitive->name() == "cond") c = &e;
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->outputs[0].aval().shape, xpr::Shape({3}));
  EXPECT_EQ(c->outputs[1].aval().shape, xpr::Shape{});
}

TEST(Cond, SwitchThreeBranchesUnderJacrev) {
  // branch 0: x^2 (elementwise), branch 1: sin x, branch 2: x * sum(x); index clamped.
  auto f = [](Array i, Array x) {
    return xpr::switch_(
        i,
        std::tuple{[](Array v) { return v * v; }, [](Array v) { return xpr::sin(v); },
                   [](Array v) { return v * xpr::sum(v); }},
        x);
  };
  const std::vector<double> x{0.5, -1.0, 2.0};
  for (int i : {-3, 0, 1, 2, 7}) {
    const int b = std::clamp(i, 0, 2);
    auto fi = [&](Array v) { return f(Array(i), v); };
    std::vector<double> jac = values(xpr::jacrev(fi)(xpr::array(x)));
    ASSERT_EQ(jac.size(), 9u);
    for (std::size_t r = 0; r < 3; ++r)
      for (std::size_t c = 0; c < 3; ++c) {
        double want = 0;
        if (b == 0) want = r == c ? 2 * x[r] : 0;
        if (b == 1) want = r == c ? std::cos(x[r]) : 0;
        if (b == 2) want = (r == c ? x[0] + x[1] + x[2] : 0) + x[r];
        EXPECT_DOUBLE_EQ(jac[r * 3 + c], want) << "index " << i << " (" << r << ", " << c << ")";
      }
  }
  // A traced index is clamped with max/min before the cond; a plain integer index just calls.
  xpr::ClosedJaxpr j = xpr::make_jaxpr(f)(Array(std::int32_t(1)), xpr::array(x));
  EXPECT_EQ(count(j.jaxpr, "cond"), 1u);
  EXPECT_EQ(j.jaxpr.eqns.back().params.get<xpr::rt::JaxprTuple>("branches").size(), 3u);
  auto plain =
      xpr::switch_(5, std::tuple{[](double v) { return v; }, [](double v) { return 2 * v; }}, 1.5);
  EXPECT_EQ(plain, 3.0);
}

// An int64 index beyond int32's range is clamped, not wrapped by its conversion to int32 (an
// examiner's program: 2^31 picked branch 0, 2^32 + 1 branch 1), eagerly, under jit and batched.
TEST(Cond, SwitchClampsAnInt64IndexBeforeNarrowingIt) {
  auto s = [](Array i, Array x) {
    return xpr::switch_(i,
                        std::tuple{[](Array v) { return v; }, [](Array v) { return -v; },
                                   [](Array v) { return v * 3.0; }},
                        x);
  };
  const std::vector<std::int64_t> idx = {std::int64_t{1} << 31,
                                         (std::int64_t{1} << 32) + 1,
                                         -(std::int64_t{1} << 32) + 2,
                                         std::int64_t{1} << 40,
                                         -(std::int64_t{1} << 40),
                                         1,
                                         2,
                                         -1};
  auto want = [](std::int64_t i) {
    return std::array{1.0, -1.0, 3.0}[std::clamp<std::int64_t>(i, 0, 2)];
  };
  auto js = xpr::jit(s);
  for (std::int64_t i : idx) {
    EXPECT_EQ(s(Array(i), Array(1.0)).item<double>(), want(i)) << i;
    EXPECT_EQ(js(Array(i), Array(1.0)).item<double>(), want(i)) << i;
  }
  const Array batched = xpr::vmap(s, std::tuple{0, xpr::not_mapped})(xpr::array(idx), Array(1.0));
  for (std::size_t k = 0; k < idx.size(); ++k)
    EXPECT_EQ(batched.to_vector<double>()[k], want(idx[k])) << idx[k];
}

TEST(Cond, PytreeOperandsAndOutputs) {
  // Operands and outputs are pytrees: swap a pair or scale it.
  auto f = [](Array p, std::tuple<Array, Array> xy) {
    return xpr::cond(
        p,
        [](std::tuple<Array, Array> v) {
          return std::tuple{std::get<1>(v), std::get<0>(v)};
        },
        [](std::tuple<Array, Array> v) {
          return std::tuple{std::get<0>(v) * 2.0, std::get<1>(v) * 3.0};
        },
        xy);
  };
  auto [a, b] = f(Array(true), std::tuple{Array(1.0), Array(2.0)});
  EXPECT_EQ(scalar(a), 2.0);
  EXPECT_EQ(scalar(b), 1.0);
  auto [c, d] = f(Array(false), std::tuple{Array(1.0), Array(2.0)});
  EXPECT_EQ(scalar(c), 2.0);
  EXPECT_EQ(scalar(d), 6.0);
  // A numeric predicate is true when nonzero, as in JAX.
  EXPECT_EQ(scalar(xpr::cond(
                Array(2.0), [] { return Array(1.0); }, [] { return Array(0.0); })),
            1.0);
}

TEST(Cond, TypeErrorsNameTheMismatch) {
  auto wrong_dtype = [](Array x) {
    return xpr::cond(
        x > 0.0, [](Array v) { return v; },
        [](Array v) { return xpr::astype(v, xpr::DType::float32); }, x);
  };
  try {
    (void)wrong_dtype(Array(1.0));
    FAIL() << "expected type_error";
  } catch (const xpr::type_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("output 0"), std::string::npos) << m;
    EXPECT_NE(m.find("f32[]"), std::string::npos) << m;
    EXPECT_NE(m.find("f64[]"), std::string::npos) << m;
    EXPECT_NE(m.find("true_fn"), std::string::npos) << m;
  }
  // As users write "else return 0" beside an f32 branch: JAX raises too; the message says
  // that the f64 is a C++ number's weak type, and what to write instead.
  auto zero_else = [](Array x) {
    return xpr::cond(
        x > 0.0, [](Array v) { return v * v; }, [](Array) { return Array(0.0); }, x);
  };
  try {
    (void)zero_else(xpr::array({0.7f})(0));
    FAIL() << "expected type_error";
  } catch (const xpr::type_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("f32[] in true_fn"), std::string::npos) << m;
    EXPECT_NE(m.find("float64 one is weakly typed, a C++ number"), std::string::npos) << m;
    EXPECT_NE(m.find("xpr::zeros_like"), std::string::npos) << m;
  }
  auto wrong_shape = [](Array x) {
    return xpr::cond(
        x[0] > 0.0, [](Array v) { return v; }, [](Array v) { return v[0]; }, x);
  };
  EXPECT_THROW((void)wrong_shape(xpr::array({1.0, 2.0})), xpr::type_error);
  auto wrong_structure = [](Array x) {
    return xpr::cond(
        x > 0.0,
        [](Array v) {
          return std::tuple{v, v};
        },
        [](Array v) {
          return std::tuple{v, std::tuple{v}};
        },
        x);
  };
  EXPECT_THROW((void)wrong_structure(Array(1.0)), xpr::type_error);
  EXPECT_THROW((void)xpr::cond(
                   xpr::array({true, false}), [] { return Array(1.0); }, [] { return Array(0.0); }),
               xpr::type_error);
  EXPECT_THROW((void)xpr::switch_(Array(1.5), std::tuple{[](Array v) { return v; }}, Array(0.0)),
               xpr::type_error);
}

TEST(Cond, ComposesWithWhileLoopCustomJvpAndCheckpoint) {
  // A cond inside a while body, closing over c: six steps of x -> x > 1 ? x c / 2 : 3 x.
  using S = std::tuple<Array, Array>;
  auto f = [](Array x0, Array c) {
    auto out = xpr::while_loop([](const S& s) { return std::get<1>(s) < 6; },
                               [&](const S& s) {
                                 auto [x, k] = s;
                                 return S{xpr::cond(
                                              x > 1.0, [&](Array v) { return v * 0.5 * c; },
                                              [](Array v) { return v * 3.0; }, x),
                                          k + 1};
                               },
                               S{x0, Array(0)});
    return std::get<0>(out);
  };
  auto ref = [](double x, double c) {
    for (int k = 0; k < 6; ++k) x = x > 1 ? x * 0.5 * c : x * 3;
    return x;
  };
  EXPECT_DOUBLE_EQ(scalar(f(Array(5.0), Array(1.0))), ref(5.0, 1.0));
  const Array t =
      xpr::jvp(f, std::tuple{Array(5.0), Array(1.0)}, std::tuple{Array(0.0), Array(1.0)}).second;
  EXPECT_NEAR(scalar(t), fd([&](double c) { return ref(5.0, c); }, 1.0), 1e-6);
  std::vector<double> v =
      values(xpr::vmap(f)(xpr::array({5.0, 0.5, 2.0}), xpr::array({1.0, 1.1, 0.9})));
  EXPECT_DOUBLE_EQ(v[0], ref(5.0, 1.0));
  EXPECT_DOUBLE_EQ(v[1], ref(0.5, 1.1));
  EXPECT_DOUBLE_EQ(v[2], ref(2.0, 0.9));
  // A while_loop inside a branch, under jvp and vmap (every lane's loop terminates).
  auto g = [](Array x) {
    return xpr::cond(
        x > 0.0,
        [](Array w) {
          return xpr::while_loop([](Array u) { return u < 100.0; }, [](Array u) { return u * 3.0; },
                                 w);
        },
        [](Array w) { return -w; }, x);
  };
  EXPECT_EQ(scalar(xpr::jvp(g, Array(2.0), Array(1.0)).second), 81.0);  // 2 -> 162 = 2 * 3^4
  EXPECT_EQ(values(xpr::vmap(g)(xpr::array({2.0, 5.0, 200.0}))),
            (std::vector<double>{162.0, 135.0, 200.0}));
  // Branches holding a custom_jvp and a checkpoint, under grad, vmap(grad) and hessian.
  auto softplus =
      xpr::custom_jvp([](auto x) { return xpr::log(1.0 + xpr::exp(x)); },
                      [](auto p, auto tt) {
                        auto [x] = p;
                        auto [xd] = tt;
                        return std::pair{xpr::log(1.0 + xpr::exp(x)), xd * xpr::logistic(x)};
                      });
  auto k = [&](Array x) {
    return xpr::cond(
        x > 0.0, [&](Array w) { return softplus(w) * w; },
        [](Array w) { return xpr::checkpoint([](Array u) { return xpr::sin(u); })(w); }, x);
  };
  const double dk1 = std::log1p(std::exp(1.0)) + 1.0 / (1.0 + std::exp(-1.0));
  EXPECT_NEAR(scalar(xpr::grad(k)(1.0)), dk1, 1e-14);
  EXPECT_NEAR(scalar(xpr::grad(k)(-1.0)), std::cos(-1.0), 1e-14);
  std::vector<double> gk = values(xpr::vmap(xpr::grad(k))(xpr::array({1.0, -1.0})));
  EXPECT_NEAR(gk[0], dk1, 1e-14);
  EXPECT_NEAR(gk[1], std::cos(-1.0), 1e-14);
  EXPECT_NEAR(scalar(xpr::hessian(k)(-1.0)), -std::sin(-1.0), 1e-14);
}

// ---- the laws ---------------------------------------------------------------------------------

// A cond of two operands whose predicate is an input: f(p, x, y) = p > 0 ? sin(x) y : x - exp(y).
FlatFunction cond_fn = [](std::span<const Array> a) {
  return Arrays{xpr::cond(
      a[0] > 0.0, [](Array x, Array y) { return xpr::sin(x) * y; },
      [](Array x, Array y) { return x - xpr::exp(y); }, a[1], a[2])};
};

TEST(CondLaws, JvpAgainstFiniteDifferences) {
  using xpr::laws::ArgSpec;
  for (double p : {-1.0, 1.0}) {
    std::vector<ArgSpec> specs{{xpr::Shape{}, xpr::DType::float64, p, p},
                               {xpr::Shape{3}, xpr::DType::float64, -2.0, 2.0},
                               {xpr::Shape{3}, xpr::DType::float64, -1.0, 1.0}};
    xpr::laws::check_jvp(cond_fn, specs, 7);
  }
}

TEST(CondLaws, VmapAgainstLoop) {
  using xpr::laws::ArgSpec;
  std::vector<ArgSpec> specs{{xpr::Shape{}, xpr::DType::float64, -1.0, 1.0},
                             {xpr::Shape{2}, xpr::DType::float64, -2.0, 2.0},
                             {xpr::Shape{2}, xpr::DType::float64, -1.0, 1.0}};
  EXPECT_GT(xpr::laws::check_batch(cond_fn, specs, 11, 4), 0);
  // And of its forward mode.
  std::vector<ArgSpec> jspecs = specs;
  for (const ArgSpec& s : specs) jspecs.push_back(xpr::laws::tangent_spec(s));
  jspecs[3] = {xpr::Shape{}, xpr::DType::float64, 0.0, 0.0};
  EXPECT_GT(xpr::laws::check_batch(xpr::laws::jvp_of(cond_fn), jspecs, 12, 3, 64), 0);
}

TEST(CondLaws, VjpJvpInnerProduct) {
  // <ct, J t> = <J^T ct, t> for random t and ct, on both branches.
  xpr::laws::Rng rng(5);
  for (double p : {-1.0, 1.0}) {
    Array x = xpr::laws::draw({xpr::Shape{3}, xpr::DType::float64, -2.0, 2.0}, rng);
    Array y = xpr::laws::draw({xpr::Shape{3}, xpr::DType::float64, -1.0, 1.0}, rng);
    Array tx = xpr::laws::draw({xpr::Shape{3}, xpr::DType::float64, -1.0, 1.0}, rng);
    Array ty = xpr::laws::draw({xpr::Shape{3}, xpr::DType::float64, -1.0, 1.0}, rng);
    Array ct = xpr::laws::draw({xpr::Shape{3}, xpr::DType::float64, -1.0, 1.0}, rng);
    auto f = [&](Array a, Array b) { return cond_fn(Arrays{Array(p), a, b})[0]; };
    Array jt = xpr::jvp(f, std::tuple{x, y}, std::tuple{tx, ty}).second;
    auto [out, pullback] = xpr::vjp(f, x, y);
    auto [cx, cy] = pullback(ct);
    const double lhs = scalar(xpr::sum(ct * jt));
    const double rhs = scalar(xpr::sum(cx * tx) + xpr::sum(cy * ty));
    EXPECT_NEAR(lhs, rhs, 1e-12 * (1 + std::abs(lhs))) << "p = " << p;
  }
}

TEST(CondLaws, PrintParsePrint) {
  auto roundtrip = [](const xpr::ClosedJaxpr& j) {
    const std::string first = text(j);
    xpr::ClosedJaxpr parsed = xpr::parse_jaxpr(first, j.consts);
    xpr::typecheck_jaxpr(parsed);
    EXPECT_EQ(text(parsed), first);
    return parsed;
  };
  auto f = [](Array p, Array x, Array y) { return cond_fn(Arrays{p, x, y})[0]; };
  Array x = xpr::array({0.5, 1.0}), y = xpr::array({-0.5, 0.25});
  xpr::ClosedJaxpr j = roundtrip(xpr::make_jaxpr(f)(1.0, x, y));
  // The parsed jaxpr computes what the function does, on both branches.
  for (double p : {-1.0, 1.0}) {
    Arrays want = cond_fn(Arrays{Array(p), x, y});
    Arrays got = xpr::eval_jaxpr(j, {Array(p), x, y});
    EXPECT_EQ(values(got[0]), values(want[0]));
  }
  roundtrip(xpr::make_jaxpr(xpr::grad<1>([&](Array p, Array a) { return xpr::sum(f(p, a, y)); }))(
      1.0, x));
  roundtrip(xpr::make_jaxpr(xpr::vmap(f, std::tuple{xpr::not_mapped, 0, 0}))(1.0, xpr::ones({3, 2}),
                                                                             xpr::ones({3, 2})));
  roundtrip(xpr::make_jaxpr([&](Array p, Array a, Array t) {
    return xpr::jvp([&](Array v) { return f(p, v, y); }, a, t).second;
  })(1.0, x, x));
  roundtrip(xpr::make_jaxpr(func8)(5.0, std::tuple{xpr::zeros({1}), Array(2.0)}));
}

TEST(Cond, DceDropsUnusedOutputsAndOperands) {
  // Two outputs, the second reading y only; keep the first.
  auto f = [](Array p, Array x, Array y) {
    return xpr::cond(
        p > 0.0,
        [](Array a, Array b) {
          return std::tuple{a * 2.0, b * 3.0};
        },
        [](Array a, Array b) {
          return std::tuple{a + 1.0, b - 1.0};
        },
        x, y);
  };
  xpr::ClosedJaxpr j = xpr::make_jaxpr(f)(1.0, 2.0, 3.0);
  auto [pruned, used] = xpr::dce_jaxpr(j.jaxpr, {true, false});
  EXPECT_EQ(used, (std::vector<bool>{true, true, false}));
  const xpr::Eqn& e = pruned.eqns.back();
  ASSERT_EQ(e.primitive->name(), "cond");
  EXPECT_EQ(e.inputs.size(), 2u);  // index, x
  EXPECT_EQ(e.outputs.size(), 1u);
  for (const auto& b : e.params.get<xpr::rt::JaxprTuple>("branches")) {
    EXPECT_EQ(b->jaxpr.invars.size(), 1u);
    EXPECT_EQ(b->jaxpr.eqns.size(), 1u);
  }
  xpr::typecheck_jaxpr(pruned);
}

TEST(Cond, PartialEvalJoinsResiduals) {
  // The linearized cond: the known cond computes the primal and the residuals of both branches
  // (each zero-filling the other's), the linear cond reads them.
  auto [y, lin] = xpr::linearize(piecewise, 1.0);
  EXPECT_DOUBLE_EQ(scalar(y), piecewise_ref(1.0));
  EXPECT_NEAR(scalar(lin(Array(1.0))), d_piecewise(1.0), 1e-14);
  xpr::ClosedJaxpr lj = xpr::make_jaxpr(lin)(1.0);
  EXPECT_EQ(count(lj.jaxpr, "cond"), 1u);
  EXPECT_EQ(count(lj.jaxpr, "sin"), 0u);  // the primal work was done while linearizing
  // The jaxpr-level rule (inside a checkpoint, whose linearization splits its jaxpr).
  auto g = xpr::checkpoint(piecewise);
  for (double x : {-1.0, 1.0}) EXPECT_NEAR(scalar(xpr::grad(g)(x)), d_piecewise(x), 1e-14);
}

}  // namespace test_rt_cond
