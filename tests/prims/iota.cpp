// Tests of include/xpr/rt/prims/iota.hpp: iota along each dimension of rank-1/2/3 shapes in every
// numeric dtype against the index formula, lax.iota and broadcasted_iota, and the error paths.
#include "xpr/rt/prims/iota.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace test_prims_iota {

using xpr::DType;
using xpr::Shape;
using xpr::ShapedArray;
namespace rt = xpr::rt;

TEST(Iota, CountsAlongTheDimensionInEveryNumericDtype) {
  const Shape shapes[] = {Shape{5}, Shape{0}, Shape{3, 4}, Shape{2, 3, 4}, Shape{2, 0, 3}};
  for (DType dtype : {xpr::int32, xpr::int64, xpr::float32, xpr::float64})
    for (const Shape& shape : shapes)
      for (std::int64_t dim = 0; dim < static_cast<std::int64_t>(shape.rank()); ++dim) {
        SCOPED_TRACE(std::string(xpr::core::name(dtype)) + " " + shape.str() + " dimension " +
                     std::to_string(dim));
        xpr::Array x = xpr::broadcasted_iota(dtype, shape, dim);
        EXPECT_EQ(x.aval(), (ShapedArray{shape, dtype, false}));
        std::vector<double> got = x.to_vector<double>();
        // Row-major: the index along `dim` of flat position f is (f / stride) % size.
        std::int64_t stride = 1;
        for (std::size_t i = static_cast<std::size_t>(dim) + 1; i < shape.rank(); ++i)
          stride *= shape[i];
        for (std::int64_t f = 0; f < shape.size(); ++f)
          EXPECT_EQ(got[static_cast<std::size_t>(f)],
                    static_cast<double>((f / stride) % shape[static_cast<std::size_t>(dim)]));
      }
}

TEST(Iota, LaxIota) {
  EXPECT_EQ(xpr::iota(xpr::int32, 4).to_vector<int>(), (std::vector<int>{0, 1, 2, 3}));
  xpr::Array f = xpr::iota(xpr::float32, 3);
  EXPECT_EQ(f.dtype(), xpr::float32);
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{0, 1, 2}));
  EXPECT_EQ(xpr::iota(xpr::int64, 0).shape(), (Shape{0}));
  EXPECT_EQ(
      rt::iota_p
          .abstract_eval(
              {}, {{"dtype", xpr::float64}, {"shape", Shape{2, 7}}, {"dimension", std::int64_t{1}}})
          .at(0),
      (ShapedArray{Shape{2, 7}, xpr::float64, false}));
}

template <class E>
void expect_error(auto f, std::initializer_list<const char*> parts) {
  try {
    f();
    ADD_FAILURE() << "expected an exception";
  } catch (const E& e) {
    std::string msg = e.what();
    for (const char* part : parts) EXPECT_NE(msg.find(part), std::string::npos) << msg;
  }
}

TEST(Iota, Errors) {
  expect_error<xpr::dtype_error>([] { xpr::iota(xpr::bool_, 3); }, {"numeric dtype", "bool"});
  expect_error<xpr::index_error>(
      [] {
        xpr::broadcasted_iota(xpr::int32, Shape{2, 3}, 2);
      },
      {"dimension 2", "(2, 3)", "rank 2"});
  expect_error<xpr::index_error>([] { xpr::broadcasted_iota(xpr::int32, Shape{}, 0); }, {"rank 0"});
  expect_error<xpr::index_error>([] { xpr::broadcasted_iota(xpr::int32, Shape{3}, -1); },
                                 {"dimension -1"});
  expect_error<xpr::value_error>([] { xpr::iota(xpr::int32, -1); },
                                 {"non-negative size", "found -1"});
  xpr::Array x = xpr::iota(xpr::int32, 2);
  expect_error<xpr::type_error>(
      [&] {
        rt::bind(rt::iota_p, std::vector<xpr::Array>{x},
                 {{"dtype", xpr::int32}, {"shape", Shape{2}}, {"dimension", std::int64_t{0}}});
      },
      {"expected no operands, found 1"});
}

}  // namespace test_prims_iota
