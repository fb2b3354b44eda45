// Tests of rt/prims/argminmax.hpp and jax.numpy's argmax/argmin: values against indices found by
// hand, XLA's NaN and tie rules, every dtype, axis=None and keepdims, the jaxpr as JAX prints it,
// errors; vmap against the loop; derivatives through an argmax used as an index; and the way a
// training loop uses it (accuracy of predictions).
#include "xpr/rt/prims/argminmax.hpp"

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/api.hpp"

#include "tests/prims/common.hpp"

namespace test_prims_argminmax {

using test_prims_common::expect_error;
using xpr::Array;
using xpr::DType;
using xpr::Shape;
namespace rt = xpr::rt;

TEST(ArgMinMax, FirstExtremeAlongAnAxis) {
  Array m = xpr::array({{3.0, 7.0, 7.0, -1.0}, {2.0, -5.0, 9.0, 9.0}, {3.0, 7.0, 0.0, -1.0}});
  EXPECT_EQ(xpr::argmax(m, 1).to_vector<std::int32_t>(), (std::vector<std::int32_t>{1, 2, 1}));
  EXPECT_EQ(xpr::argmin(m, 1).to_vector<std::int32_t>(), (std::vector<std::int32_t>{3, 1, 3}));
  EXPECT_EQ(xpr::argmax(m, 0).to_vector<std::int32_t>(), (std::vector<std::int32_t>{0, 0, 1, 1}));
  EXPECT_EQ(xpr::argmin(m, -2).to_vector<std::int32_t>(), (std::vector<std::int32_t>{1, 1, 2, 0}));
  EXPECT_EQ(xpr::argmax(m).item<std::int32_t>(), 6);  // flattened: the first 9.0
  EXPECT_EQ(xpr::argmin(m).item<std::int32_t>(), 5);
  EXPECT_EQ(xpr::argmax(m, 1).dtype(), DType::int32);
  EXPECT_EQ(xpr::argmax(m, 1, true).shape(), (Shape{3, 1}));
  EXPECT_EQ(xpr::argmax(m, std::nullopt, true).shape(), (Shape{1, 1}));
  EXPECT_EQ(xpr::argmax(Array(4.0)).item<std::int32_t>(), 0);
  // Rank 3, the middle axis: the kernel's strided walk. Example 0 is rows (5, 1) (4, 8) (2, 6),
  // example 1 rows (0, 9) (7, 3) (1, 1).
  Array t = xpr::reshape(xpr::array({5, 1, 4, 8, 2, 6, 0, 9, 7, 3, 1, 1}), {2, 3, 2});
  EXPECT_EQ(xpr::argmax(t, 1).to_vector<std::int32_t>(), (std::vector<std::int32_t>{0, 1, 1, 0}));
  EXPECT_EQ(xpr::argmin(t, 1).to_vector<std::int32_t>(), (std::vector<std::int32_t>{2, 0, 0, 2}));
}

TEST(ArgMinMax, NanWinsAndEveryDtype) {
  Array x = xpr::array({1.0, std::nan(""), 5.0, std::nan("")});
  EXPECT_EQ(xpr::argmax(x).item<std::int32_t>(), 1);  // XLA: the first NaN, for both
  EXPECT_EQ(xpr::argmin(x).item<std::int32_t>(), 1);
  Array f = xpr::astype(xpr::array({2.0, -1.0, 8.0}), DType::float32);
  EXPECT_EQ(xpr::argmax(f).item<std::int32_t>(), 2);
  Array l = xpr::array(std::vector<std::int64_t>{4, -9, 4}, Shape{3});
  EXPECT_EQ(xpr::argmin(l).item<std::int32_t>(), 1);
  Array b = xpr::array({false, true, true});
  EXPECT_EQ(xpr::argmax(b).item<std::int32_t>(), 1);
  EXPECT_EQ(xpr::argmin(b).item<std::int32_t>(), 0);
  // index_dtype int64, bound directly.
  Array r = rt::bind1(rt::argmax_p, {l}, {{"axes", rt::Axes{0}}, {"index_dtype", DType::int64}});
  EXPECT_EQ(r.dtype(), DType::int64);
  EXPECT_EQ(r.item<std::int64_t>(), 0);
}

TEST(ArgMinMax, JaxprAsJaxPrintsItAndParsesBack) {
  Array m = xpr::zeros({3, 4}, DType::float32);
  std::ostringstream os;
  os << xpr::make_jaxpr([](const Array& v) { return xpr::argmax(v, 0); })(m);
  EXPECT_EQ(os.str(),
            "{ lambda ; a:f32[3,4]. let\n    b:i32[4] = argmax[axes=(0,) index_dtype=int32] a\n"
            "  in (b,) }");
  // print(jax.make_jaxpr(lambda v: jnp.argmin(v, axis=1))(jnp.zeros((3, 4), jnp.float32)))
  xpr::ClosedJaxpr j = xpr::parse_jaxpr(
      "{ lambda ; a:f32[3,4]. let\n    b:i32[3] = argmin[axes=(1,) index_dtype=int32] a\n"
      "  in (b,) }");
  Array v =
      xpr::astype(xpr::array({{1.0, 0.0, 2.0, 3.0}, {4.0, 5.0, -6.0, 7.0}, {9.0, 8.0, 7.0, 6.0}}),
                  DType::float32);
  EXPECT_EQ(xpr::eval_jaxpr(j, {v})[0].to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{1, 2, 3}));
}

TEST(ArgMinMax, Errors) {
  expect_error<xpr::shape_error>(
      [] {
        (void)xpr::argmax(xpr::zeros({2, 0}), 1);
      },
      {"argmax", "nonempty", "size 0"});
  expect_error<xpr::index_error>(
      [] {
        (void)xpr::argmin(xpr::zeros({2, 3}), 2);
      },
      {"argmin", "axis 2"});
  Array x = xpr::zeros({3});
  expect_error<xpr::type_error>([] { (void)rt::argmax_p.impl({}, {}); },
                                {"argmax", "1 operand", "found 0"});
  expect_error<xpr::value_error>(
      [&] {
        (void)rt::bind1(rt::argmax_p, {x}, {{"axes", rt::Axes{}}, {"index_dtype", DType::int32}});
      },
      {"argmax", "one axis"});
  expect_error<xpr::dtype_error>(
      [&] {
        (void)rt::bind1(rt::argmax_p, {x},
                        {{"axes", rt::Axes{0}}, {"index_dtype", DType::float32}});
      },
      {"argmax", "index_dtype", "float32"});
}

TEST(ArgMinMax, VmapEqualsTheLoop) {
  Array m = xpr::reshape(xpr::array({3.0, 1.0, -2.0, 8.0, 5.0, 0.0, 0.0, 0.0, 4.0, -4.0, 1.0, 9.0}),
                         {2, 3, 2});
  for (std::int64_t axis : {0, 1}) {
    auto f = [axis](const Array& v) { return xpr::argmax(v, axis); };
    for (std::int64_t in_axis : {0, 1, 2}) {
      Array batched = xpr::vmap(f, in_axis)(m);
      for (std::int64_t k = 0; k < m.shape()[static_cast<std::size_t>(in_axis)]; ++k) {
        Array want = f(rt::moveaxis(m, in_axis, 0)[k]);
        EXPECT_EQ(batched[k].to_vector<std::int32_t>(), want.to_vector<std::int32_t>())
            << axis << " " << in_axis << " " << k;
      }
    }
  }
}

// The derivative flows through the value read at the argmax (a one-hot gradient), not through the
// index; jitted, the same.
TEST(ArgMinMax, GradientThroughTheElementItPicks) {
  auto f = [](const Array& v) { return v[xpr::argmax(v)] * 3.0; };
  Array x = xpr::array({0.5, 2.0, -1.0, 2.0});
  EXPECT_EQ(xpr::grad(f)(x).to_vector<double>(), (std::vector<double>{0, 3, 0, 0}));
  EXPECT_EQ(xpr::grad(xpr::jit(f))(x).to_vector<double>(), (std::vector<double>{0, 3, 0, 0}));
  EXPECT_EQ(xpr::jit(f)(x).item<double>(), 6.0);
}

// As a training loop computes it: the fraction of rows whose largest logit is the label.
TEST(ArgMinMax, AccuracyOfPredictionsAsATrainingLoopComputesIt) {
  Array logits = xpr::array({{0.1, 2.0, -1.0}, {3.0, 0.0, 0.5}, {0.0, 0.1, 0.2}, {1.0, 1.0, 0.0}});
  Array labels = xpr::array({1, 0, 0, 1});
  auto accuracy =
      xpr::jit([](const Array& z, const Array& y) { return xpr::mean(xpr::argmax(z, 1) == y); });
  EXPECT_DOUBLE_EQ(accuracy(logits, labels).item<double>(), 0.5);  // rows 0 and 1; row 3 ties to 0
}

}  // namespace test_prims_argminmax
