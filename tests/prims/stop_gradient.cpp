// Tests of rt/prims/stop_gradient.hpp: the identity on values of every dtype and rank, sharing the
// operand's buffer; abstract_eval keeps the weak type; the wrong operand count is an error.
#include "xpr/rt/prims/stop_gradient.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/prims/common.hpp"

namespace test_prims_stop_gradient {

using test_prims_common::make;

namespace rt = xpr::rt;
using rt::ShapedArray;
using xpr::Array;
using xpr::DType;
using xpr::Shape;

TEST(StopGradient, IsTheIdentityInEveryDtype) {
  for (DType t : {DType::bool_, DType::int32, DType::int64, DType::float32, DType::float64}) {
    std::vector<double> v(40);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i % 2);
    Array x = make(t, Shape{5, 8}, v);
    Array y = rt::bind1(rt::stop_gradient_p, {x});
    EXPECT_EQ(y.aval(), x.aval());
    EXPECT_EQ(y.to_vector<double>(), v);
    EXPECT_EQ(y.impl(), x.impl()) << "an immutable value needs no copy";
  }
  Array s = rt::bind1(rt::stop_gradient_p, {Array(2.5)});
  EXPECT_EQ(s.item<double>(), 2.5);
  EXPECT_TRUE(s.weak_type());
}

TEST(StopGradient, AbstractEvalIsTheIdentity) {
  const ShapedArray x{Shape{3, 0}, DType::int64, true};
  EXPECT_EQ(rt::stop_gradient_p.abstract_eval(std::vector{x}, {}).at(0), x);
  EXPECT_EQ(rt::find_primitive("stop_gradient"), &rt::stop_gradient_p);
}

TEST(StopGradient, WrongNumberOfOperands) {
  Array x(1.0);
  try {
    (void)rt::bind1(rt::stop_gradient_p, {x, x});
    ADD_FAILURE() << "expected type_error";
  } catch (const xpr::type_error& e) {
    EXPECT_NE(std::string(e.what()).find("expected 1 operand, found 2"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)rt::stop_gradient_p.abstract_eval(std::vector<ShapedArray>{}, {}),
               xpr::type_error);
}

}  // namespace test_prims_stop_gradient
