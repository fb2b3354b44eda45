// Tests of core/dtype.hpp: names, dtype_of, and the promotion table against JAX's documented
// table (jax.numpy type promotion, with 64-bit types enabled).
#include "xpr/core/dtype.hpp"

#include <cstdint>

#include <gtest/gtest.h>

namespace test_core_dtype {

using xpr::DType;
using xpr::WeakDType;

TEST(DType, DtypeOfCxxTypes) {
  static_assert(xpr::dtype_of<double>() == xpr::float64);
  static_assert(xpr::dtype_of<float>() == xpr::float32);
  static_assert(xpr::dtype_of<int>() == xpr::int32);
  static_assert(xpr::dtype_of<std::int64_t>() == xpr::int64);
  static_assert(xpr::dtype_of<long long>() == xpr::int64);
  static_assert(xpr::dtype_of<bool>() == xpr::bool_);
  static_assert(xpr::dtype_of<unsigned>() == xpr::int64);
  EXPECT_EQ(xpr::core::short_name(xpr::float32), "f32");
  EXPECT_EQ(xpr::core::name(xpr::int64), "int64");
}

// JAX's table (https://jax.readthedocs.io/en/latest/type_promotion.html), rows and columns in the
// order b1 i32 i64 f32 f64 i* f*, with x64 enabled. i* and f* are the weak integer / float nodes.
TEST(DType, PromotionTableMatchesJax) {
  const WeakDType b1{DType::bool_}, i32{DType::int32}, i64{DType::int64}, f32{DType::float32},
      f64{DType::float64}, iw{DType::int32, true}, fw{DType::float64, true};
  const WeakDType types[] = {b1, i32, i64, f32, f64, iw, fw};
  // The expected entries, copied from JAX's table.
  const WeakDType table[7][7] = {
      /* b1  */ {b1, i32, i64, f32, f64, iw, fw},
      /* i32 */ {i32, i32, i64, f32, f64, i32, fw},
      /* i64 */ {i64, i64, i64, f32, f64, i64, fw},
      /* f32 */ {f32, f32, f32, f32, f64, f32, f32},
      /* f64 */ {f64, f64, f64, f64, f64, f64, f64},
      /* i*  */ {iw, i32, i64, f32, f64, iw, fw},
      /* f*  */ {fw, fw, fw, f32, f64, fw, fw},
  };
  for (int r = 0; r < 7; ++r)
    for (int c = 0; c < 7; ++c) {
      WeakDType got = xpr::result_type(types[r], types[c]);
      EXPECT_EQ(got.weak, table[r][c].weak) << r << "," << c;
      EXPECT_EQ(got.dtype, table[r][c].dtype) << r << "," << c;
    }
}

TEST(DType, WeakTypesFollowTheirCxxType) {
  // f32 array * 0.5 is f32; i32 array * 0.5 is (weak) f64; i32 array * 2 is i32.
  EXPECT_EQ(xpr::result_type({DType::float32}, {DType::float64, true}),
            (WeakDType{DType::float32, false}));
  EXPECT_EQ(xpr::result_type({DType::int32}, {DType::float64, true}),
            (WeakDType{DType::float64, true}));
  EXPECT_EQ(xpr::result_type({DType::int32}, {DType::int32, true}),
            (WeakDType{DType::int32, false}));
  // A lone float stays f32, a lone double f64; weak with weak joins the strong counterparts.
  EXPECT_EQ(xpr::result_type({DType::float32, true}, {DType::float32, true}),
            (WeakDType{DType::float32, true}));
  EXPECT_EQ(xpr::result_type({DType::float32, true}, {DType::float64, true}),
            (WeakDType{DType::float64, true}));
  EXPECT_EQ(xpr::result_type({DType::int64}, {DType::float32, true}),
            (WeakDType{DType::float32, true}));
  EXPECT_THROW(xpr::result_type({}), xpr::value_error);
}

}  // namespace test_core_dtype

namespace test_core_dtype {
TEST(DType, ItemsizeMatchesTheElementType) {
  static_assert(xpr::core::itemsize(xpr::bool_) == sizeof(bool));
  static_assert(xpr::core::itemsize(xpr::int32) == sizeof(std::int32_t));
  static_assert(xpr::core::itemsize(xpr::int64) == sizeof(std::int64_t));
  static_assert(xpr::core::itemsize(xpr::float32) == sizeof(float));
  static_assert(xpr::core::itemsize(xpr::float64) == sizeof(double));
  EXPECT_EQ(xpr::core::itemsize(xpr::int64), 8u);
}
}  // namespace test_core_dtype
