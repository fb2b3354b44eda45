// Tests of include/xpr/rt/trace.hpp: the interpreter stack's invariants, using a primitive defined
// here (so they do not depend on any built-in primitive's rules): escaped tracers, exceptions
// crossing a transformation, threads tracing at once, levels of nested transformations.
#include "xpr/rt/trace.hpp"

#include <atomic>
#include <barrier>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/interp/batch.hpp"
#include "xpr/rt/interp/jvp.hpp"
#include "xpr/rt/transformations.hpp"

namespace test_rt_trace {

using xpr::Array;
using xpr::rt::Arrays;
using xpr::rt::BatchDim;
using xpr::rt::BatchDims;
using xpr::rt::Params;

// triple(x) = 3 x on f64: linear, so its jvp is itself on the tangent.
class Triple final : public xpr::rt::Primitive {
 public:
  Triple() : Primitive("test_triple") {}
  Arrays impl(std::span<const Array> args, const Params&) const override {
    xpr::rt::ArrayBuilder b(args[0].aval());
    const double* in = args[0].data<double>();
    for (std::int64_t i = 0; i < args[0].size(); ++i) b.data<double>()[i] = 3 * in[i];
    return {std::move(b).finish()};
  }
  xpr::rt::Avals abstract_eval(std::span<const xpr::ShapedArray> args,
                               const Params&) const override {
    return {args[0]};
  }
  std::pair<Arrays, Arrays> jvp(std::span<const Array> p, std::span<const Array> t,
                                const Params&) const override {
    return {{xpr::rt::bind1(*this, {p[0]})}, {xpr::rt::bind1(*this, {t[0]})}};
  }
  std::pair<Arrays, BatchDims> batch(std::span<const Array> args, std::span<const BatchDim> dims,
                                     std::int64_t, const Params&) const override {
    return {{xpr::rt::bind1(*this, {args[0]})}, {dims[0]}};
  }
};
const Triple triple_p;
Array triple(const Array& x) { return xpr::rt::bind1(triple_p, {x}); }

std::size_t stack_depth() { return xpr::rt::detail::trace_state().stack.size(); }

TEST(Trace, EagerBindRunsImpl) {
  EXPECT_DOUBLE_EQ(triple(Array(2.0)).item<double>(), 6.0);
  EXPECT_EQ(stack_depth(), 1u);
}

TEST(Trace, JvpOfLinearPrimitive) {
  auto [p, t] = xpr::rt::jvp_flat([](std::span<const Array> x) { return Arrays{triple(x[0])}; },
                                  Arrays{Array(2.0)}, Arrays{Array(1.0)});
  EXPECT_DOUBLE_EQ(p[0].item<double>(), 6.0);
  EXPECT_DOUBLE_EQ(t[0].item<double>(), 3.0);
}

TEST(Trace, NestedJvpTracksLevels) {
  // d/dx of d/dx of triple(triple(x)) is 0; the inner jvp's tangent is 9.
  auto inner = [](std::span<const Array> x) {
    auto [p, t] =
        xpr::rt::jvp_flat([](std::span<const Array> y) { return Arrays{triple(triple(y[0]))}; },
                          Arrays{x[0]}, Arrays{Array(1.0)});
    return Arrays{t[0]};
  };
  auto [p, t] = xpr::rt::jvp_flat(inner, Arrays{Array(5.0)}, Arrays{Array(1.0)});
  EXPECT_DOUBLE_EQ(p[0].item<double>(), 9.0);
  EXPECT_DOUBLE_EQ(t[0].item<double>(), 0.0);
  EXPECT_EQ(stack_depth(), 1u);
}

TEST(Trace, EscapedTracerIsAnError) {
  std::optional<Array> leaked;
  xpr::rt::jvp_flat(
      [&](std::span<const Array> x) {
        leaked = x[0];  // stored outside the transformation
        return Arrays{triple(x[0])};
      },
      Arrays{Array(1.0)}, Arrays{Array(1.0)});
  ASSERT_TRUE(leaked->is_tracer());
  try {
    triple(*leaked);
    FAIL() << "expected escaped_tracer_error";
  } catch (const xpr::escaped_tracer_error& e) {
    EXPECT_NE(std::string(e.what()).find("created by jvp (as grad, value_and_grad, vjp"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("f64[]"), std::string::npos) << e.what();
  }
  // An escaped tracer used inside a later transformation is caught as well.
  EXPECT_THROW(xpr::rt::jvp_flat([&](std::span<const Array>) { return Arrays{triple(*leaked)}; },
                                 Arrays{Array(1.0)}, Arrays{Array(1.0)}),
               xpr::escaped_tracer_error);
  EXPECT_EQ(stack_depth(), 1u);
}

TEST(Trace, ExceptionThenContinue) {
  EXPECT_THROW(
      xpr::rt::jvp_flat(
          [](std::span<const Array> x) -> Arrays {
            xpr::rt::vmap_flat(
                [](std::span<const Array>) -> Arrays { throw std::runtime_error("user error"); },
                Arrays{xpr::rt::zeros_like_aval({xpr::Shape{3}, xpr::float64})}, BatchDims{0},
                BatchDims{0});
            return Arrays{x[0]};
          },
          Arrays{Array(1.0)}, Arrays{Array(1.0)}),
      std::runtime_error);
  EXPECT_EQ(stack_depth(), 1u);
  EXPECT_EQ(xpr::rt::detail::trace_state().dynamic->level(), 0);
  auto [p, t] = xpr::rt::jvp_flat([](std::span<const Array> x) { return Arrays{triple(x[0])}; },
                                  Arrays{Array(1.0)}, Arrays{Array(2.0)});
  EXPECT_DOUBLE_EQ(t[0].item<double>(), 6.0);
}

TEST(Trace, TwoThreadsTraceAtOnce) {
  // Each thread holds a transformation open while the other runs one: stacks are per thread.
  std::barrier sync(2);
  std::atomic<int> ok{0};
  auto work = [&](double x0) {
    auto [p, t] = xpr::rt::jvp_flat(
        [&](std::span<const Array> x) {
          sync.arrive_and_wait();
          Array y = triple(triple(x[0]));
          sync.arrive_and_wait();
          return Arrays{y};
        },
        Arrays{Array(x0)}, Arrays{Array(1.0)});
    if (p[0].item<double>() == 9 * x0 && t[0].item<double>() == 9.0 && stack_depth() == 1) ++ok;
  };
  std::thread a(work, 1.0), b(work, 2.0);
  a.join();
  b.join();
  EXPECT_EQ(ok.load(), 2);
}

TEST(Trace, VmapOfUserPrimitive) {
  std::vector<double> xs{1, 2, 3};
  xpr::rt::ArrayBuilder b({xpr::Shape{3}, xpr::float64});
  for (int i = 0; i < 3; ++i) b.data<double>()[i] = xs[static_cast<std::size_t>(i)];
  Arrays out = xpr::rt::vmap_flat([](std::span<const Array> x) { return Arrays{triple(x[0])}; },
                                  Arrays{std::move(b).finish()}, BatchDims{0}, BatchDims{0});
  ASSERT_EQ(out[0].shape(), (xpr::Shape{3}));
  for (int i = 0; i < 3; ++i)
    EXPECT_DOUBLE_EQ(out[0].data<double>()[i], 3 * xs[static_cast<std::size_t>(i)]);
}

TEST(Trace, MissingRuleSaysWhich) {
  class NoRules final : public xpr::rt::Primitive {
   public:
    NoRules() : Primitive("no_rules") {}
    Arrays impl(std::span<const Array> a, const Params&) const override { return {a[0]}; }
    xpr::rt::Avals abstract_eval(std::span<const xpr::ShapedArray> a,
                                 const Params&) const override {
      return {a[0]};
    }
  };
  static const NoRules p;
  try {
    xpr::rt::jvp_flat([](std::span<const Array> x) { return xpr::rt::bind(p, x); },
                      Arrays{Array(1.0)}, Arrays{Array(1.0)});
    FAIL();
  } catch (const xpr::not_implemented_error& e) {
    EXPECT_EQ(std::string(e.what()), "Differentiation rule for 'no_rules' not implemented");
  }
  EXPECT_EQ(stack_depth(), 1u);
}

}  // namespace test_rt_trace
