// Tests of rt/jit.hpp: jitted functions give the eager values; jit composes with every
// transformation in either order (values against eager evaluation and hand-derived derivatives);
// a jitted function traces once per input signature (counted by a side effect in the traced
// function), with static arguments and pytree arguments in the signature; JAX's printed form of
// pjit; and the errors (bad static_argnums, an escaped tracer, wrong operand counts).
#include "xpr/rt/jit.hpp"

#include <atomic>
#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/api.hpp"

namespace test_rt_jit {

using xpr::Array;

std::vector<double> values(const Array& a) { return a.to_vector<double>(); }
double scalar(const Array& a) { return a.item<double>(); }

std::string text(const xpr::ClosedJaxpr& j) {
  std::ostringstream os;
  os << j;
  return os.str();
}

void expect_near(const Array& a, const Array& b, double tol = 1e-12) {
  ASSERT_EQ(a.shape(), b.shape());
  std::vector<double> x = values(a), y = values(b);
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], y[i], tol) << "element " << i;
}

// f(x, y) = sum(sin(x) * y + x^2): gradient cos(x) * y + 2x in x, sin(x) in y.
auto f = [](auto x, auto y) { return xpr::sum(xpr::sin(x) * y + x * x); };

Array x3() { return xpr::array({0.5, -1.0, 2.0}); }
Array y3() { return xpr::array({1.5, 2.0, -0.25}); }

// ---- values ---------------------------------------------------------------------------------

TEST(Jit, GivesTheEagerValues) {
  auto jf = xpr::jit(f);
  expect_near(jf(x3(), y3()), f(x3(), y3()));
  // A loop with indexing, a constant output, a dot product and a reduction, as users write them.
  auto g = [](auto x) {
    Array acc = xpr::zeros_like(x[0]);
    for (int i = 0; i < 3; ++i) acc = acc + x[i] * static_cast<double>(i + 1);
    return std::tuple{acc, xpr::dot(x, x), Array(7.0), xpr::max(x)};
  };
  auto [a, b, c, d] = xpr::jit(g)(x3());
  auto [ea, eb, ec, ed] = g(x3());
  expect_near(a, ea);
  expect_near(b, eb);
  expect_near(c, ec);
  expect_near(d, ed);
  EXPECT_EQ(scalar(c), 7.0);
  EXPECT_EQ(scalar(a), 0.5 - 2.0 + 6.0);
}

TEST(Jit, NumbersAndDtypes) {
  auto h = xpr::jit([](auto x, auto n) { return x * n + 1; });
  EXPECT_EQ(scalar(h(2.0, 3.0)), 7.0);
  Array i = h(xpr::array({1, 2}), 3);
  EXPECT_EQ(i.dtype(), xpr::DType::int32);
  EXPECT_EQ(i.to_vector<int>(), (std::vector<int>{4, 7}));
}

// ---- transformations, in both orders -----------------------------------------------------------

TEST(Jit, GradOfJitAndJitOfGrad) {
  Array x = x3(), y = y3();
  std::vector<double> expect;
  for (std::size_t i = 0; i < 3; ++i)
    expect.push_back(std::cos(values(x)[i]) * values(y)[i] + 2 * values(x)[i]);
  auto g1 = xpr::grad(xpr::jit(f));
  auto g2 = xpr::jit(xpr::grad(f));
  auto g3 = xpr::jit(xpr::grad(xpr::jit(f)));
  for (const Array& g : {g1(x, y), g2(x, y), g3(x, y)}) {
    std::vector<double> v = values(g);
    for (std::size_t i = 0; i < 3; ++i) EXPECT_NEAR(v[i], expect[i], 1e-12);
  }
  // Both arguments.
  auto [gx, gy] = xpr::grad<0, 1>(xpr::jit(f))(x, y);
  expect_near(gx, g1(x, y));
  for (std::size_t i = 0; i < 3; ++i) EXPECT_NEAR(values(gy)[i], std::sin(values(x)[i]), 1e-12);
}

TEST(Jit, JvpLinearizeVjpOfJit) {
  auto jf = xpr::jit(f);
  Array x = x3(), y = y3(), t = xpr::array({1.0, 0.0, -2.0});
  auto [p, tan] = xpr::jvp([&](auto u) { return jf(u, y); }, std::tuple{x}, std::tuple{t});
  auto [ep, etan] = xpr::jvp([&](auto u) { return f(u, y); }, std::tuple{x}, std::tuple{t});
  expect_near(p, ep);
  expect_near(tan, etan);
  auto [yl, lin] = xpr::linearize([&](auto u) { return jf(u, y); }, x);
  expect_near(yl, ep);
  expect_near(lin(t), etan);
  auto [yv, pullback] = xpr::vjp([&](auto u) { return jf(u, y); }, x);
  expect_near(yv, ep);
  auto [ct] = pullback(Array(1.0));
  expect_near(ct, xpr::grad(f)(x, y));
}

TEST(Jit, VmapOfJitAndJitOfVmap) {
  auto g = [](auto x, auto y) { return xpr::sin(x) * y; };
  Array xs = xpr::array({{0.1, 0.2, 0.3}, {1.0, 2.0, 3.0}});
  Array y = y3();
  // in_axes=None for y: jit's batching rule sees an unbatched operand.
  auto v1 = xpr::vmap(xpr::jit(g), std::tuple{0, xpr::not_mapped})(xs, y);
  auto v2 = xpr::jit(xpr::vmap(g, std::tuple{0, xpr::not_mapped}))(xs, y);
  auto v3 = xpr::vmap(xpr::jit(g), 1)(xpr::transpose(xs), xpr::transpose(xs));  // axis 1
  expect_near(v1, xpr::sin(xs) * y);
  expect_near(v2, xpr::sin(xs) * y);
  expect_near(v3, xpr::sin(xs) * xs);  // mapped over axis 1, stacked on axis 0
}

TEST(Jit, JitOfJitAndHigherOrder) {
  auto inner = xpr::jit([](auto x) { return xpr::sin(x) * x; }, {.name = "inner"});
  auto outer = xpr::jit([&](auto x) { return inner(x) + inner(2.0 * x); }, {.name = "outer"});
  // d/dx [x sin x + 2x sin 2x] = sin x + x cos x + 2 sin 2x + 4x cos 2x.
  const double x = 0.7;
  double d = std::sin(x) + x * std::cos(x) + 2 * std::sin(2 * x) + 4 * x * std::cos(2 * x);
  double dd = 2 * std::cos(x) - x * std::sin(x) + 8 * std::cos(2 * x) - 8 * x * std::sin(2 * x);
  EXPECT_NEAR(scalar(outer(x)), x * std::sin(x) + 2 * x * std::sin(2 * x), 1e-12);
  EXPECT_NEAR(scalar(xpr::grad(outer)(x)), d, 1e-12);
  EXPECT_NEAR(scalar(xpr::grad(xpr::grad(outer))(x)), dd, 1e-12);
  EXPECT_NEAR(scalar(xpr::jit(xpr::grad(xpr::jit(xpr::grad(outer))))(x)), dd, 1e-12);
  EXPECT_NEAR(scalar(xpr::jacfwd(xpr::grad(outer))(x)), dd, 1e-12);
  // vmap of grad of jit, and jit of vmap of grad.
  Array xs = xpr::array({0.7, -0.3});
  Array g = xpr::vmap(xpr::grad(outer))(xs);
  Array h = xpr::jit(xpr::vmap(xpr::grad(outer)))(xs);
  for (std::size_t i = 0; i < 2; ++i) {
    double v = values(xs)[i];
    double e = std::sin(v) + v * std::cos(v) + 2 * std::sin(2 * v) + 4 * v * std::cos(2 * v);
    EXPECT_NEAR(values(g)[i], e, 1e-12);
    EXPECT_NEAR(values(h)[i], e, 1e-12);
  }
}

TEST(Jit, ClosingOverATracer) {
  // The jitted function closes over the differentiated variable: its trace is good for this
  // call only (a constant that is a tracer), and the derivative flows through it.
  auto g = [](auto a) {
    auto h = xpr::jit([&](auto x) { return xpr::sin(a * x); });
    return h(3.0);
  };
  EXPECT_NEAR(scalar(xpr::grad(g)(0.5)), 3 * std::cos(1.5), 1e-12);
}

// ---- printing ---------------------------------------------------------------------------------

TEST(Jit, PrintsAsJaxPrintsPjit) {
  auto jf = xpr::jit([](auto x) { return xpr::sin(x) * 2.0; }, {.name = "f"});
  EXPECT_EQ(text(xpr::make_jaxpr(jf)(x3())),
            "{ lambda ; a:f64[3]. let\n"
            "    b:f64[3] = pjit[\n"
            "      name=f\n"
            "      jaxpr={ lambda ; c:f64[3]. let\n"
            "          d:f64[3] = sin c\n"
            "          e:f64[3] = mul d 2.0:f64[]\n"
            "        in (e,) }\n"
            "    ] a\n"
            "  in (b,) }");
  // The parser reads it back (names of transformed calls included) and it evaluates.
  std::string grad_text =
      text(xpr::make_jaxpr(xpr::grad([&](auto x) { return xpr::sum(jf(x)); }))(x3()));
  EXPECT_NE(grad_text.find("name=transpose(jvp(f))"), std::string::npos) << grad_text;
  xpr::ClosedJaxpr back = xpr::parse_jaxpr(grad_text);
  EXPECT_EQ(text(back), grad_text);
  expect_near(xpr::eval_jaxpr(back, {x3()})[0], 2.0 * xpr::cos(x3()));
  // Non-default options are parameters too.
  auto interp =
      xpr::jit([](auto x) { return -x; },
               {.name = "neg", .backend = xpr::JitBackend::interpreter, .precise_math = true});
  EXPECT_EQ(text(xpr::make_jaxpr(interp)(1.0)),
            "{ lambda ; a:f64[]. let\n"
            "    b:f64[] = pjit[\n"
            "      name=neg\n"
            "      jaxpr={ lambda ; c:f64[]. let d:f64[] = neg c in (d,) }\n"
            "      backend=interpreter\n"
            "      precise_math=True\n"
            "    ] a\n"
            "  in (b,) }");
}

TEST(Jit, LowerGivesTheJaxprAndTheSource) {
  Array k = xpr::array({1.0, 2.0, 3.0});
  auto jf = xpr::jit([&](auto x) { return x * k; }, {.name = "scale"});
  xpr::Lowered low = jf.lower(x3());
  EXPECT_EQ(low.jaxpr().consts.size(), 1u);  // k, closed over, is a constvar again
  EXPECT_EQ(text(low.jaxpr()), "{ lambda a:f64[3]; b:f64[3]. let c:f64[3] = mul b a in (c,) }");
  EXPECT_FALSE(low.as_text().empty());
  EXPECT_EQ(jf.trace_count(), 1u);
  expect_near(jf(x3()), x3() * k);
  EXPECT_EQ(jf.trace_count(), 1u);  // lower filled the cache the call uses
}

// ---- tracing once per signature ----------------------------------------------------------------

TEST(Jit, TracesOncePerSignature) {
  int tracing = 0;  // Autodidax's print("tracing!"), counted
  auto jf = xpr::jit([&](auto x, auto y) {
    ++tracing;
    return xpr::sin(x) + y;
  });
  jf(x3(), y3());
  EXPECT_EQ(tracing, 1);
  jf(y3(), x3());  // other values, same types: no trace
  jf(x3(), y3());
  EXPECT_EQ(tracing, 1);
  // Another size: f read no size and its jaxpr names none, so the trace is rebound, not redone
  // (docs/jit.md, "Sizes known only at run time"); the values are those of the new size.
  Array two = jf(xpr::array({1.0, 2.0}), xpr::array({0.5, -1.0}));
  EXPECT_EQ(tracing, 1);
  EXPECT_NEAR(values(two)[1], std::sin(2.0) - 1.0, 1e-12);
  jf(xpr::array({1.0f, 2.0f}), xpr::array({1.0f, 2.0f}));  // another dtype
  EXPECT_EQ(tracing, 2);
  jf(1.0, 2.0);  // weakly typed scalars
  EXPECT_EQ(tracing, 3);
  // Weak f64 scalars too, but Arrays: the generic lambda is other C++ code, another signature.
  EXPECT_TRUE(Array(1.0).aval().weak_type);
  jf(Array(1.0), Array(2.0));
  EXPECT_EQ(tracing, 4);
  jf(3.0, 4.0);
  EXPECT_EQ(tracing, 4);
  // Strongly typed f64 scalars: the same C++ type as Array(1.0), another aval.
  jf(xpr::convert_element_type(Array(1.0), xpr::float64), Array(2.0));
  EXPECT_EQ(tracing, 5);
  jf(Array(5.0), Array(6.0));
  EXPECT_EQ(tracing, 5);
  // Under transformations the trace is shared too: grad and vmap trace nothing new.
  xpr::grad([&](auto x) { return xpr::sum(jf(x, y3())); })(x3());
  xpr::grad([&](auto x) { return xpr::sum(jf(x, y3())); })(y3());
  EXPECT_EQ(tracing, 5);
  EXPECT_EQ(jf.trace_count(), 5u);
  // Copies share the cache.
  auto copy = jf;
  copy(x3(), y3());
  EXPECT_EQ(tracing, 5);
}

TEST(Jit, ConcurrentCallsTraceOnce) {
  std::atomic<int> tracing{0};
  auto jf = xpr::jit([&](auto x) {
    ++tracing;
    return xpr::exp(x) * 2.0;
  });
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        Array r = jf(x3());
        if (std::abs(values(r)[2] - 2 * std::exp(2.0)) > 1e-12) ++wrong;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(tracing.load(), 1);
  EXPECT_EQ(wrong.load(), 0);
}

// ---- static arguments ---------------------------------------------------------------------------

TEST(Jit, StaticArguments) {
  int tracing = 0;
  // `n` is a loop bound: a C++ int, not an Array, so it must be static.
  auto power = xpr::jit(
      [&](auto x, int n) {
        ++tracing;
        Array y = x;
        for (int i = 1; i < n; ++i) y = y * x;
        return y;
      },
      {.static_argnums = {1}});
  EXPECT_EQ(scalar(power(2.0, 3)), 8.0);
  EXPECT_EQ(scalar(power(3.0, 3)), 27.0);
  EXPECT_EQ(tracing, 1);
  EXPECT_EQ(scalar(power(2.0, 5)), 32.0);  // a new static value retraces
  EXPECT_EQ(tracing, 2);
  EXPECT_EQ(scalar(power(2.0, 3)), 8.0);
  EXPECT_EQ(tracing, 2);
  // d/dx x^4 = 4x^3.
  EXPECT_EQ(scalar(xpr::grad([&](auto x) { return power(x, 4); })(2.0)), 32.0);

  // A value jit cannot trace is static without being listed; it is part of the key.
  auto pick = xpr::jit(
      [](auto x, const std::string& op) { return op == "sin" ? xpr::sin(x) : xpr::cos(x); });
  EXPECT_EQ(scalar(pick(0.0, std::string("sin"))), 0.0);
  EXPECT_EQ(scalar(pick(0.0, std::string("cos"))), 1.0);
  EXPECT_EQ(pick.trace_count(), 2u);

  // A number listed as static but the function takes an Array: the values still agree.
  auto both = xpr::jit([](auto x, auto n) { return x * n; }, {.static_argnums = {1}});
  EXPECT_EQ(scalar(both(2.0, 3.0)), 6.0);
  EXPECT_EQ(scalar(both(2.0, 4.0)), 8.0);
  EXPECT_EQ(both.trace_count(), 2u);
}

TEST(Jit, BadStaticArgnums) {
  auto jf = xpr::jit([](auto x, auto y) { return x + y; }, {.static_argnums = {2}});
  try {
    jf(1.0, 2.0);
    ADD_FAILURE() << "no type_error";
  } catch (const xpr::type_error& e) {
    EXPECT_NE(std::string(e.what()).find("static_argnums within the 2 positional arguments, "
                                         "found 2"),
              std::string::npos)
        << e.what();
  }
  auto arr = xpr::jit([](auto x, auto y) { return x + y; }, {.static_argnums = {0}});
  EXPECT_THROW(arr(x3(), 1.0), xpr::type_error);  // an Array is always traced
  // A number the function takes as an int must be static: the message says which.
  auto needs = xpr::jit([](auto x, int n) { return x * static_cast<double>(n); });
  try {
    needs(1.0, 2);
    ADD_FAILURE() << "no type_error";
  } catch (const xpr::type_error& e) {
    EXPECT_NE(std::string(e.what()).find("every argument traced (as xpr::Array), found one that "
                                         "takes a C++ value where an Array would be passed: it "
                                         "can be called with static_argnums = {1}"),
              std::string::npos)
        << e.what();
  }
  // A negative position counts from the end, as in JAX.
  auto last =
      xpr::jit([](auto x, int n) { return x * static_cast<double>(n); }, {.static_argnums = {-1}});
  EXPECT_EQ(scalar(last(1.5, 2)), 3.0);
  EXPECT_THROW(xpr::jit([](auto x, auto y) { return x + y; }, {.static_argnums = {-3}})(1.0, 2.0),
               xpr::type_error);
}

// ---- pytrees
// ---------------------------------------------------------------------------------------

struct Params {
  Array w, b;
};

}  // namespace test_rt_jit

template <>
struct xpr::pytree_node<test_rt_jit::Params>
    : xpr::fields<&test_rt_jit::Params::w, &test_rt_jit::Params::b> {};

namespace test_rt_jit {

TEST(Jit, PytreeArgumentsAndResults) {
  int tracing = 0;
  auto loss = [&](const Params& p, const std::vector<Array>& xs) {
    ++tracing;
    Array s = xpr::zeros_like(p.b);
    for (const Array& x : xs) s = s + xpr::sum(xpr::tanh(p.w * x + p.b));
    return s;
  };
  auto jl = xpr::jit(loss);
  Params p{x3(), Array(0.5)};
  std::vector<Array> xs{y3(), x3()};
  expect_near(jl(p, xs), loss(p, xs));
  EXPECT_EQ(tracing, 2);  // once eager, once traced
  jl(p, xs);
  EXPECT_EQ(tracing, 2);
  xs.push_back(y3());  // a longer list: another structure
  expect_near(jl(p, xs), loss(p, xs));
  EXPECT_EQ(jl.trace_count(), 2u);
  // grad of jit with respect to a struct.
  Params g = xpr::grad([&](const Params& q) { return jl(q, xs); })(p);
  Params e = xpr::grad([&](const Params& q) { return loss(q, xs); })(p);
  expect_near(g.w, e.w);
  expect_near(g.b, e.b);
  // Results: a map of tuples.
  auto split = xpr::jit([](auto x) {
    return std::map<std::string, std::tuple<Array, Array>>{{"a", {x, -x}}, {"b", {x * x, x}}};
  });
  auto out = split(2.0);
  EXPECT_EQ(scalar(std::get<1>(out["a"])), -2.0);
  EXPECT_EQ(scalar(std::get<0>(out["b"])), 4.0);
}

// ---- errors -------------------------------------------------------------------------------------

TEST(Jit, EscapedTracer) {
  Array leaked;
  auto jf = xpr::jit([&](auto x) {
    leaked = x;  // a tracer of the trace jit makes, kept after it ends
    return x * 2.0;
  });
  jf(1.0);
  EXPECT_THROW(xpr::sin(leaked), xpr::escaped_tracer_error);
}

TEST(Jit, AJittedFunctionRefusesAnEscapedTracerAsEveryOtherUseDoes) {
  // A tracer leaked out of grad (or jvp, linearize, another thread's live grad) and passed to a
  // jitted function outside any transformation: the compiled kernel ran on its primal and
  // returned a value (examiner K); plain functions, and jit's interpreter backend, throw.
  auto sq = [](const Array& x) { return x * x; };
  const auto jsq = xpr::jit(sq);
  const auto jsq_interp = xpr::jit(sq, {.backend = xpr::JitBackend::interpreter});
  const auto jsum = xpr::jit([](const std::vector<Array>& xs) { return xs[0] + xs[1]; });
  const auto jscale = xpr::jit([](const Array& x, int n) { return x * static_cast<double>(n); },
                               {.static_argnums = {1}});
  Array leaked;
  (void)xpr::grad([&](const Array& x) {
    leaked = x * 2.0;
    return x * x;
  })(3.0);
  EXPECT_THROW(sq(leaked), xpr::escaped_tracer_error);
  EXPECT_THROW(jsq(leaked), xpr::escaped_tracer_error);
  EXPECT_THROW(jsq_interp(leaked), xpr::escaped_tracer_error);
  EXPECT_THROW(jsum(std::vector<Array>{leaked, leaked}), xpr::escaped_tracer_error);
  EXPECT_THROW(jscale(leaked, 3), xpr::escaped_tracer_error);
  // The same jitted functions still run on data, and on the tracers of a live transformation.
  EXPECT_EQ(scalar(jsq(xpr::Array(6.0))), 36.0);
  EXPECT_EQ(scalar(xpr::grad([&](const Array& x) { return jsq(x); })(3.0)), 6.0);
  Array from_jvp;
  (void)xpr::jvp(
      [&](const Array& x) {
        from_jvp = xpr::sin(x);
        return x;
      },
      std::tuple{xpr::Array(0.5)}, std::tuple{xpr::Array(1.0)});
  EXPECT_THROW(jsq(from_jvp), xpr::escaped_tracer_error);
  // Another thread's live tracer.
  std::atomic<int> phase{0};
  Array other;
  std::thread t([&] {
    (void)xpr::grad([&](const Array& x) {
      other = x * 2.0;
      phase = 1;
      while (phase.load() != 2) std::this_thread::yield();
      return x * x;
    })(4.0);
  });
  while (phase.load() != 1) std::this_thread::yield();
  EXPECT_THROW(jsq(other), xpr::escaped_tracer_error);
  phase = 2;
  t.join();
}

TEST(Jit, WrongOperandCount) {
  // A pjit equation whose operands do not match its jaxpr's inputs (here from text).
  try {
    xpr::parse_jaxpr(
        "{ lambda ; a:f64[] b:f64[]. let\n"
        "    c:f64[] = pjit[name=f jaxpr={ lambda ; d:f64[]. let e:f64[] = sin d in (e,) }] a b\n"
        "  in (c,) }");
    ADD_FAILURE() << "no type_error";
  } catch (const xpr::type_error& e) {
    EXPECT_NE(std::string(e.what()).find("pjit: expected 1 operands, found 2"), std::string::npos)
        << e.what();
  }
}

}  // namespace test_rt_jit
