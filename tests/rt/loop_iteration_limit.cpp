// Tests of include/xpr/rt/loop_iteration_limit.hpp: a `while` that never ends (from code and
// from parsed text) stops with `value_error` under the guard, under eval, jvp and vmap (a batched
// predicate); the count is exact (a loop of n iterations runs under a bound of n and not under
// n - 1, scan iterations count too, nested loops add up); guards nest without raising the outer
// bound; the guard is per thread; nothing is counted without a guard.
#include "xpr/rt/loop_iteration_limit.hpp"

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <utility>

#include <gtest/gtest.h>

#include "xpr/rt/api.hpp"

namespace test_rt_loop_iteration_limit {

using xpr::Array;

/// Doubles `x` until it reaches 100: 1 -> 128 takes 7 iterations.
Array doubling(Array x) {
  return xpr::while_loop([](const Array& w) { return w < 100.0; },
                         [](const Array& w) { return w * 2.0; }, x);
}

/// A loop whose predicate stays true for every positive start.
Array forever(Array x) {
  return xpr::while_loop([](const Array& w) { return w > 0.0; },
                         [](const Array& w) { return w + 1.0; }, x);
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const xpr::value_error& e) {
    return e.what();
  }
  return "";
}

TEST(LoopIterationLimit, StopsAnEndlessWhile) {
  xpr::LoopIterationLimit limit(1000);
  std::string m = message_of([] { (void)forever(Array(1.0)); });
  EXPECT_NE(m.find("while: expected at most 1000 loop iterations"), std::string::npos) << m;
  EXPECT_NE(m.find("LoopIterationLimit"), std::string::npos) << m;
}

TEST(LoopIterationLimit, StopsAnEndlessWhileUnderTransformations) {
  xpr::LoopIterationLimit limit(1000);
  EXPECT_THROW((void)xpr::jvp(forever, Array(1.0), Array(1.0)), xpr::value_error);
  // A batched predicate: the loop runs until every lane is done, and one lane never is.
  EXPECT_THROW((void)xpr::vmap(forever)(xpr::array({-1.0, 1.0})), xpr::value_error);
  EXPECT_THROW((void)xpr::vmap(forever)(xpr::array({1.0, 2.0})), xpr::value_error);
}

TEST(LoopIterationLimit, StopsAnEndlessWhileReadFromText) {
  // The case the guard is for: a jaxpr text whose predicate is constant true.
  xpr::ClosedJaxpr j = xpr::parse_jaxpr(
      "{ lambda ; a:f64[]. let\n"
      "    b:f64[] = while[\n"
      "      body_jaxpr={ lambda ; c:f64[]. let d:f64[] = mul c 2.0:f64[] in (d,) }\n"
      "      body_nconsts=0\n"
      "      cond_jaxpr={ lambda ; e:f64[]. let f:bool[] = lt e inf:f64[] in (f,) }\n"
      "      cond_nconsts=0\n"
      "    ] a\n"
      "  in (b,) }");
  // Doubling 1.0 reaches inf after 1024 iterations, so the loop does end, but not within 500.
  {
    xpr::LoopIterationLimit limit(500);
    EXPECT_THROW((void)xpr::eval_jaxpr(j, {Array(1.0)}), xpr::value_error);
  }
  EXPECT_EQ(xpr::eval_jaxpr(j, {Array(1.0)})[0].item<double>(), INFINITY);
  // 0.0 never grows: the predicate stays true.
  xpr::LoopIterationLimit limit(500);
  EXPECT_THROW((void)xpr::eval_jaxpr(j, {Array(0.0)}), xpr::value_error);
}

TEST(LoopIterationLimit, CountsEveryIterationExactly) {
  {
    xpr::LoopIterationLimit limit(7);
    EXPECT_EQ(doubling(Array(1.0)).item<double>(), 128.0);
  }
  {
    xpr::LoopIterationLimit limit(6);
    EXPECT_THROW((void)doubling(Array(1.0)), xpr::value_error);
  }
  // scan iterations count too: a scan of length 4 and then the 7 of the loop.
  auto both = [](Array x) {
    auto [c, ys] = xpr::scan(
        [](Array acc, Array e) {
          return std::pair{acc + e, acc};
        },
        x, xpr::array({1.0, 2.0, 3.0, 4.0}));
    (void)ys;
    return doubling(c - 10.0);
  };
  {
    xpr::LoopIterationLimit limit(11);
    EXPECT_EQ(both(Array(1.0)).item<double>(), 128.0);
  }
  {
    xpr::LoopIterationLimit limit(10);
    std::string m = message_of([&] { (void)both(Array(1.0)); });
    EXPECT_NE(m.find("while: expected at most 10 loop iterations"), std::string::npos) << m;
  }
  // A loop inside a scan: every inner iteration counts (3 scan iterations + 3 x 7).
  auto nested = [](Array x) {
    return xpr::scan(
               [](Array acc, Array) {
                 return std::pair{acc + doubling(acc * 0.0 + 1.0), acc};
               },
               x, xpr::zeros({3}))
        .first;
  };
  {
    xpr::LoopIterationLimit limit(24);
    EXPECT_EQ(nested(Array(0.0)).item<double>(), 3 * 128.0);
  }
  {
    xpr::LoopIterationLimit limit(23);
    EXPECT_THROW((void)nested(Array(0.0)), xpr::value_error);
  }
}

TEST(LoopIterationLimit, NothingIsCountedWithoutAGuard) {
  EXPECT_EQ(xpr::while_loop([](const Array& i) { return i < 100000; },
                            [](const Array& i) { return i + 1; }, Array(0))
                .item<int>(),
            100000);
}

TEST(LoopIterationLimit, GuardsNest) {
  xpr::LoopIterationLimit outer(10);
  {
    // What an inner guard lets run counts against the outer one: 10 - 7 leaves 3...
    xpr::LoopIterationLimit inner(100);
    EXPECT_EQ(doubling(Array(1.0)).item<double>(), 128.0);
  }
  {
    // ... and an inner guard cannot raise the outer bound.
    xpr::LoopIterationLimit inner(100);
    std::string m = message_of([] { (void)doubling(Array(1.0)); });
    EXPECT_NE(m.find("at most 3 loop iterations"), std::string::npos) << m;
  }
  EXPECT_EQ(doubling(Array(100.0)).item<double>(), 100.0);  // no iteration: none left is enough
  EXPECT_THROW((void)doubling(Array(50.0)), xpr::value_error);
}

TEST(LoopIterationLimit, IsPerThread) {
  xpr::LoopIterationLimit limit(0);
  double other = 0.0;
  std::thread t([&] { other = doubling(Array(1.0)).item<double>(); });
  t.join();
  EXPECT_EQ(other, 128.0);
  EXPECT_THROW((void)doubling(Array(1.0)), xpr::value_error);
}

TEST(LoopIterationLimit, RejectsANegativeBound) {
  EXPECT_THROW(xpr::LoopIterationLimit(-1), xpr::value_error);
}

}  // namespace test_rt_loop_iteration_limit
