// Tests of the runtime tier on hostile input (issue 11, "Bad input can corrupt memory"): sizes
// that overflow int64 or size_t throw a clear error instead of wrapping, float-to-int
// conversions are XLA's, long chains and deep nesting neither crash nor take exponential time,
// printed jaxprs parse back, and tracers used where they may not be throw.
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <new>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/api.hpp"

namespace test_rt_hardening {

using xpr::Array;

constexpr std::int64_t big = (std::int64_t{1} << 61) + 1;

/// Runs `f` and expects a shape_error (or std::bad_alloc) whose text mentions `needle`.
template <class F>
void expect_size_error(F f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "expected an error mentioning '" << needle << "', found none";
  } catch (const xpr::error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(HardeningSizes, CreationRejectsByteCountsPastSizeT) {
  // 8 * (2^61 + 1) wraps to 8: the old buffer was 8 bytes long and the fill wrote past it.
  expect_size_error([] { (void)xpr::zeros({big}); }, "byte count");
  expect_size_error([] { (void)xpr::arange(std::int64_t{0}, big); }, "byte count");
  expect_size_error([] { (void)xpr::iota(xpr::float64, big); }, "byte count");
  expect_size_error([] { (void)xpr::full({big}, 1.0f); }, "2^47 bytes");  // 4 bytes each: fits
  expect_size_error([] { (void)xpr::iota(xpr::int32, big); }, "2^47 bytes");
  // (2^32, 2^32) has 2^64 elements: wrapped to 0 and accepted before.
  expect_size_error(
      [] {
        (void)xpr::zeros({std::int64_t{1} << 32, std::int64_t{1} << 32});
      },
      "fits in int64");
  expect_size_error([] { (void)xpr::Shape({std::int64_t{1} << 62, 0, 4}); }, "fits in int64");
  expect_size_error(
      [] {
        (void)xpr::arange(std::numeric_limits<std::int64_t>::min(),
                          std::numeric_limits<std::int64_t>::max());
      },
      "arange");
  expect_size_error([] { (void)xpr::arange(0.0, 1e300, 1e-300); }, "arange");
}

TEST(HardeningSizes, ParsedShapesPastInt64AreParseErrors) {
  const std::string bcast =
      "{ lambda ; a:f32[3]. let\n"
      "    b:f32[4611686018427387904,3] = broadcast_in_dim[broadcast_dimensions=(1,) "
      "shape=(4611686018427387904, 3) sharding=None] a\n  in (b,) }";
  try {
    (void)xpr::parse_jaxpr(bcast);
    ADD_FAILURE() << "expected a parse_error";
  } catch (const xpr::parse_error& e) {
    EXPECT_EQ(e.line(), 2u);
    EXPECT_NE(std::string(e.what()).find("fits in int64"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)xpr::parse_jaxpr(
                   "{ lambda ; . let a:i32[4294967296,4294967296] = iota[dimension=0 dtype=int32 "
                   "shape=(4294967296, 4294967296) sharding=None]  in (a,) }"),
               xpr::parse_error);
  // reshape to a shape whose size wraps to the operand's: the shape itself is refused.
  EXPECT_THROW(
      (void)xpr::parse_jaxpr(
          "{ lambda ; a:f32[4]. let b:f32[2,4611686018427387906] = reshape[dimensions=None "
          "new_sizes=(2, 4611686018427387906) sharding=None] a in (b,) }"),
      xpr::parse_error);
  // concatenate whose result size passes int64 (each operand is representable).
  expect_size_error(
      [] {
        (void)xpr::parse_jaxpr(
            "{ lambda ; a:bool[0,9223372036854775807] b:bool[0,9223372036854775807]. let\n"
            "    c:bool[0,0] = concatenate[dimension=1] a b\n  in (c,) }");
      },
      "concatenate");
}

TEST(HardeningSizes, ExtremeSliceStridesAndPadAmounts) {
  // A stride of 2^62 takes one element: it must not be multiplied into a wrapped offset.
  xpr::ClosedJaxpr s = xpr::parse_jaxpr(
      "{ lambda ; a:f32[5]. let b:f32[1] = slice[limit_indices=(5,) start_indices=(1,) "
      "strides=(4611686018427387904,)] a in (b,) }");
  EXPECT_EQ(xpr::eval_jaxpr(s, {xpr::arange(5.0f)})[0].to_vector<float>(),
            (std::vector<float>{1.0f}));
  // The stride of the padding's transpose: a slice of stride interior + 1.
  expect_size_error(
      [] {
        xpr::ClosedJaxpr p = xpr::parse_jaxpr(
            "{ lambda ; a:f32[2] v:f32[]. let b:f32[1] = "
            "pad[padding_config=((-9223372036854775808, "
            "9223372036854775807, 0),)] a v in (b,) }");
        (void)xpr::eval_jaxpr(p, {xpr::arange(2.0f), Array(0.0f)});
      },
      "pad");
  expect_size_error(
      [] {
        (void)xpr::parse_jaxpr(
            "{ lambda ; a:f32[3] v:f32[]. let b:f32[3] = pad[padding_config=((0, 0, "
            "9223372036854775807),)] a v in (b,) }");
      },
      "pad");
}

TEST(HardeningSizes, IntegerPowOfTheMostNegativeExponents) {
  // x ** INT_MIN: 0 - n in unsigned arithmetic, not -n (which overflows int).
  EXPECT_EQ(xpr::integer_pow(2.0, std::numeric_limits<int>::min()), 0.0);
  EXPECT_EQ(xpr::integer_pow(1.0, std::numeric_limits<int>::min()), 1.0);
  EXPECT_EQ((xpr::integer_pow(Array(1.0), std::numeric_limits<int>::min()).item<double>()), 1.0);
  // d/dx x^n = n x^(n-1): at x = 1 that is n.
  EXPECT_EQ(
      xpr::grad([](auto x) { return xpr::integer_pow(x, std::numeric_limits<int>::min()); })(1.0)
          .item<double>(),
      static_cast<double>(std::numeric_limits<int>::min()));
  // y - 1 does not exist for y = INT64_MIN.
  EXPECT_THROW((void)xpr::grad([](auto x) {
                 return xpr::integer_pow(x, std::numeric_limits<std::int64_t>::min());
               })(1.0),
               xpr::value_error);
}

TEST(HardeningConversions, FloatToIntIsXlasConvert) {
  // XLA's convert (elemental_ir_emitter.cc): NaN -> 0, beyond the range -> min / max, else
  // truncation toward zero. jnp.array([nan, 1e300, -1e300, 3.7, -3.7]).astype(jnp.int32).
  Array x = xpr::array({std::nan(""), 1e300, -1e300, 3.7, -3.7, 2147483647.5, -2147483648.9});
  EXPECT_EQ(xpr::astype(x, xpr::int32).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{0, 2147483647, -2147483647 - 1, 3, -3, 2147483647,
                                       -2147483647 - 1}));
  const auto i64max = std::numeric_limits<std::int64_t>::max();
  const auto i64min = std::numeric_limits<std::int64_t>::min();
  // The largest float below 2^63 is converted exactly; 2^63 itself saturates.
  const float below = std::nextafter(0x1p63f, 0.0f);
  EXPECT_EQ(xpr::astype(xpr::array({std::nanf(""), 1e30f, -1e30f, below, 0x1p63f}), xpr::int64)
                .to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{0, i64max, i64min, 9223371487098961920, i64max}));
  EXPECT_EQ(Array(std::nan("")).item<int>(), 0);
  EXPECT_EQ(Array(1e300).item<int>(), std::numeric_limits<int>::max());
  EXPECT_EQ(Array(-std::numeric_limits<double>::infinity()).item<std::int64_t>(), i64min);
  EXPECT_EQ(xpr::full({2}, 1e300, xpr::int32).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{2147483647, 2147483647}));
  // An f32 literal written past f32's range (by hand) is an infinity, as IEEE rounding gives.
  xpr::ClosedJaxpr j =
      xpr::parse_jaxpr("{ lambda ; a:f32[]. let b:f32[] = add a 1e300:f32[] in (b,) }");
  EXPECT_EQ(xpr::eval_jaxpr(j, {Array(1.0f)})[0].item<float>(),
            std::numeric_limits<float>::infinity());
}

// ---- long chains --------------------------------------------------------------------------------

TEST(HardeningChains, GradOfALongChainDoesNotRecurse) {
  // An unrolled loop of 200 000 sin calls: the partial-evaluation graph is a chain as long, and
  // its tracers and recipes were destroyed recursively (a stack overflow at about 100 000).
  constexpr int n = 200000;
  auto chain = [](auto x) {
    for (int i = 0; i < n; ++i) x = xpr::sin(x);
    return x;
  };
  double x = 0.7, d = 1.0;  // the chain rule by hand: the product of cos at each step
  for (int i = 0; i < n; ++i) {
    d *= std::cos(x);
    x = std::sin(x);
  }
  EXPECT_NEAR(xpr::grad(chain)(0.7).item<double>(), d, 1e-12 * std::abs(d) + 1e-300);
  // The jaxpr of the chain prints, parses back, type-checks, evaluates and loses its dead code
  // without recursion over the equations either.
  xpr::ClosedJaxpr j = xpr::make_jaxpr(chain)(0.7);
  ASSERT_EQ(j.jaxpr.eqns.size(), static_cast<std::size_t>(n));
  xpr::ClosedJaxpr back = xpr::parse_jaxpr(xpr::pretty_print(j.jaxpr));
  xpr::typecheck_jaxpr(back);
  EXPECT_NEAR(xpr::eval_jaxpr(back, {Array(0.7)})[0].item<double>(), x, 1e-12);
  EXPECT_EQ(xpr::rt::dce_jaxpr(back, {true}).first.jaxpr.eqns.size(), static_cast<std::size_t>(n));
}

// ---- nesting ------------------------------------------------------------------------------------

/// The text of sin under `depth` nested checkpoints.
std::string nested_checkpoints(std::size_t depth) {
  std::string open, close;
  for (std::size_t i = 0; i < depth; ++i) {
    open += "{ lambda ; a:f64[]. let b:f64[] = checkpoint[differentiated=False jaxpr=";
    close += " policy=None prevent_cse=True] a in (b,) }";
  }
  return open + "{ lambda ; a:f64[]. let b:f64[] = sin a in (b,) }" + close;
}

TEST(HardeningNesting, NestingUpToTheLimitWorks) {
  xpr::ClosedJaxpr j = xpr::parse_jaxpr(nested_checkpoints(xpr::rt::max_jaxpr_nesting - 1));
  xpr::typecheck_jaxpr(j);
  EXPECT_EQ(xpr::eval_jaxpr(j, {Array(0.5)})[0].item<double>(), std::sin(0.5));
  std::string printed = xpr::pretty_print(j.jaxpr);
  EXPECT_EQ(xpr::pretty_print(xpr::parse_jaxpr(printed).jaxpr), printed);
  xpr::ClosedJaxpr shallow = xpr::parse_jaxpr(nested_checkpoints(40));
  auto f = [&](auto x) { return xpr::eval_jaxpr(shallow, {x})[0]; };
  EXPECT_DOUBLE_EQ(xpr::grad(f)(0.5).item<double>(), std::cos(0.5));
}

TEST(HardeningNesting, DeeperNestingIsAClearError) {
  // 5000 levels crashed the parser (3000 the printer and the evaluator) with a stack overflow.
  try {
    (void)xpr::parse_jaxpr(nested_checkpoints(5000));
    ADD_FAILURE() << "expected a parse_error";
  } catch (const xpr::parse_error& e) {
    EXPECT_NE(std::string(e.what()).find("nested at most 200"), std::string::npos) << e.what();
  }
  // Built in memory past the limit: printing, checking and evaluating refuse it.
  xpr::ClosedJaxpr j = xpr::parse_jaxpr(nested_checkpoints(xpr::rt::max_jaxpr_nesting - 1));
  for (int i = 0; i < 10; ++i) {
    xpr::rt::Eqn e = j.jaxpr.eqns[0];
    e.params.set("jaxpr", std::make_shared<const xpr::ClosedJaxpr>(j));
    xpr::rt::Var in(j.jaxpr.invars[0].aval()), out(e.outputs[0].aval());
    e.inputs = {in};
    e.outputs = {out};
    xpr::rt::Jaxpr outer;
    outer.invars = {in};
    outer.eqns = {e};
    outer.outvars = {out};
    j = xpr::ClosedJaxpr{outer, {}};
  }
  EXPECT_THROW((void)xpr::pretty_print(j.jaxpr), xpr::type_error);
  EXPECT_THROW(xpr::typecheck_jaxpr(j), xpr::type_error);
  EXPECT_THROW((void)xpr::eval_jaxpr(j, {Array(0.5)}), xpr::type_error);
}

/// Sub-jaxprs j0 ... j<depth>, each (but j0 = sin) calling the one below twice through
/// checkpoints, shared by name: 2^depth paths through `depth` distinct jaxprs.
std::string shared_dag(int depth) {
  std::string text = "let j0 = { lambda ; a:f64[]. let b:f64[] = sin a in (b,) } in\n";
  for (int k = 1; k <= depth; ++k) {
    std::string call = "checkpoint[differentiated=False jaxpr=j" + std::to_string(k - 1) +
                       " policy=None prevent_cse=True]";
    text += "let j" + std::to_string(k) + " = { lambda ; a:f64[]. let b:f64[] = " + call +
            " a; c:f64[] = " + call + " b in (c,) } in\n";
  }
  return text + "{ lambda ; a:f64[]. let b:f64[] = checkpoint[differentiated=False jaxpr=j" +
         std::to_string(depth) + " policy=None prevent_cse=True] a in (b,) }";
}

TEST(HardeningNesting, SharedSubJaxprsAreVisitedOnce) {
  // Printing, type checking, hashing and comparing walk each distinct sub-jaxpr once (depth 40
  // is 2^40 paths: exponential walks would never finish).
  xpr::ClosedJaxpr j = xpr::parse_jaxpr(shared_dag(40));
  xpr::typecheck_jaxpr(j);
  std::string printed = xpr::pretty_print(j.jaxpr);
  xpr::ClosedJaxpr again = xpr::parse_jaxpr(printed);
  EXPECT_EQ(xpr::pretty_print(again.jaxpr), printed);
  EXPECT_TRUE(j == again);
  EXPECT_EQ(xpr::rt::hash_value(j), xpr::rt::hash_value(again));
  // A small one computes sin applied 2^depth times, and its derivative.
  xpr::ClosedJaxpr small = xpr::parse_jaxpr(shared_dag(3));
  double x = 0.4, d = 1.0;
  for (int i = 0; i < 8; ++i) {
    d *= std::cos(x);
    x = std::sin(x);
  }
  auto f = [&](auto v) { return xpr::eval_jaxpr(small, {v})[0]; };
  EXPECT_DOUBLE_EQ(f(Array(0.4)).item<double>(), x);
  EXPECT_NEAR(xpr::grad(f)(0.4).item<double>(), d, 1e-15);
}

/// The distinct sub-jaxprs reachable from `j`.
std::size_t distinct_subjaxprs(const xpr::rt::Jaxpr& top) {
  std::set<const xpr::rt::Jaxpr*> seen;
  std::vector<const xpr::rt::Jaxpr*> work{&top};
  while (!work.empty()) {
    const xpr::rt::Jaxpr* j = work.back();
    work.pop_back();
    for (const auto& e : j->eqns)
      for (const auto& [k, v] : e.params)
        if (const auto* p = std::get_if<xpr::rt::JaxprParam>(&v); p && *p)
          if (seen.insert(&(*p)->jaxpr).second) work.push_back(&(*p)->jaxpr);
  }
  return seen.size();
}

TEST(HardeningNesting, SharedSubJaxprsAreTransformedOnce) {
  // vjp of the depth-30 DAG, staged: jvp, partial evaluation, dce and transpose of each shared
  // sub-jaxpr happen once per distinct sub-jaxpr (2.7x per level before: depth 15 took 10 s and
  // depth 30 would never finish), and the staged pullback shares them in turn.
  xpr::ClosedJaxpr j = xpr::parse_jaxpr(shared_dag(30));
  auto f = [&](auto x) { return xpr::eval_jaxpr(j, {x})[0]; };
  auto pullback = [&](auto x) {
    auto [y, f_vjp] = xpr::vjp(f, x);
    return std::get<0>(f_vjp(xpr::ones_like(y)));
  };
  xpr::ClosedJaxpr staged = xpr::make_jaxpr(pullback)(0.4);
  xpr::typecheck_jaxpr(staged);
  EXPECT_LT(distinct_subjaxprs(staged.jaxpr), 20u * 30u);
  // The same staging at depth 3 computes the derivative of sin applied 8 times.
  xpr::ClosedJaxpr small = xpr::parse_jaxpr(shared_dag(3));
  auto g = [&](auto x) { return xpr::eval_jaxpr(small, {x})[0]; };
  auto small_pullback = [&](auto x) {
    auto [y, g_vjp] = xpr::vjp(g, x);
    return std::get<0>(g_vjp(xpr::ones_like(y)));
  };
  double x = 0.4, d = 1.0;
  for (int i = 0; i < 8; ++i) {
    d *= std::cos(x);
    x = std::sin(x);
  }
  xpr::ClosedJaxpr staged_small = xpr::make_jaxpr(small_pullback)(0.4);
  EXPECT_NEAR(xpr::eval_jaxpr(staged_small, {Array(0.4)})[0].item<double>(), d, 1e-15);
}

// ---- printed jaxprs parse back ------------------------------------------------------------------

TEST(HardeningText, WrappedInfAndNanLiteralsParseBack) {
  // Long operand lists wrap; a literal inf or nan at the start of a continuation line was read
  // as the binder of the next equation.
  auto f = [](auto x) {
    auto inf = std::numeric_limits<double>::infinity();
    auto y = xpr::maximum(x, -inf) + xpr::minimum(x, inf);
    auto z = xpr::where(x > 0.0, std::nan(""), x);
    return y * z + xpr::maximum(xpr::minimum(y, inf), -inf);
  };
  Array xs = xpr::zeros({2, 3, 4, 5, 6, 7, 8, 9, 10});
  for (std::ptrdiff_t width : {80, 40, 20, 10}) {
    xpr::ClosedJaxpr j = xpr::make_jaxpr(f)(xs);
    std::string printed = xpr::pretty_print(j.jaxpr, width);
    xpr::ClosedJaxpr back = xpr::parse_jaxpr(printed);
    EXPECT_EQ(xpr::pretty_print(back.jaxpr, width), printed);
  }
}

// ---- tracers used where they may not be
// -----------------------------------------------------------

TEST(HardeningTracers, EscapedJvpTracerCannotBeRead) {
  Array leaked;
  (void)xpr::jvp(
      [&](auto x) {
        leaked = x;
        return x;
      },
      Array(2.0), Array(1.0));
  EXPECT_THROW((void)(leaked + 1.0), xpr::escaped_tracer_error);
  EXPECT_THROW((void)leaked.item<double>(), xpr::escaped_tracer_error);
  EXPECT_THROW((void)leaked.to_vector<double>(), xpr::escaped_tracer_error);
  EXPECT_THROW((void)static_cast<bool>(leaked), xpr::escaped_tracer_error);
  EXPECT_THROW((void)leaked.data<double>(), xpr::escaped_tracer_error);
  // Inside its jvp the primal is readable, as JAX allows concrete control flow under jvp.
  double seen = 0;
  (void)xpr::jvp(
      [&](auto x) {
        seen = x.template item<double>();
        return x;
      },
      Array(2.0), Array(1.0));
  EXPECT_EQ(seen, 2.0);
}

TEST(HardeningTracers, TracerUsedOnAnotherThreadThrowsThere) {
  std::string binding, reading;
  (void)xpr::make_jaxpr([&](auto x) {
    std::thread t([&] {
      try {
        (void)xpr::sin(x);
      } catch (const xpr::escaped_tracer_error& e) {
        binding = e.what();
      }
    });
    t.join();
    return x * 2.0;
  })(1.0);
  EXPECT_NE(binding.find("another thread"), std::string::npos) << binding;
  (void)xpr::jvp(
      [&](auto x) {
        std::thread t([&] {
          try {
            (void)x.template item<double>();
          } catch (const xpr::escaped_tracer_error& e) {
            reading = e.what();
          }
        });
        t.join();
        return x;
      },
      Array(2.0), Array(1.0));
  EXPECT_NE(reading.find("another thread"), std::string::npos) << reading;
}

}  // namespace test_rt_hardening
