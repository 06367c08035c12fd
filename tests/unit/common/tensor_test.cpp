#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "spmd/tensor.hpp"

using namespace spmd;

TEST(Half, ExactValuesRoundTrip) {
  for (float f : {0.0f, -0.0f, 1.0f, -2.5f, 0.099975586f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f}) {
    EXPECT_EQ(static_cast<float>(half(f)), f) << f;
  }
}

TEST(Half, RoundsToNearestEvenAndSaturatesToInf) {
  EXPECT_EQ(static_cast<float>(half(1.0f + 1.0f / 2048)), 1.0f);           // tie -> even
  EXPECT_EQ(static_cast<float>(half(1.0f + 3.0f / 2048)), 1.0f + 2.0f / 1024);  // tie -> even (up)
  EXPECT_TRUE(std::isinf(static_cast<float>(half(1e6f))));
  EXPECT_TRUE(std::isnan(static_cast<float>(half(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(static_cast<float>(half(1e-9f)), 0.0f);
}

TEST(Half, AllBitPatternsRoundTripThroughFloat) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    half h;
    h.bits = static_cast<uint16_t>(b);
    float f = static_cast<float>(h);
    if (std::isnan(f)) continue;
    EXPECT_EQ(half(f).bits, h.bits) << b;
  }
}

TEST(BFloat16, RoundTripAndRounding) {
  for (float f : {0.0f, 1.0f, -3.0f, 0x1.8p100f, -7.25f}) EXPECT_EQ(static_cast<float>(bfloat16(f)), f);
  EXPECT_EQ(static_cast<float>(bfloat16(1.0f + 1.0f / 256)), 1.0f);  // tie -> even
  EXPECT_TRUE(std::isnan(static_cast<float>(bfloat16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(TensorView, FromVectorSpanPointerAndSlice) {
  std::vector<int32_t> v(10, 7);
  TensorView a(v);
  EXPECT_EQ(a.count, 10u);
  EXPECT_EQ(a.dtype, DType::I32);
  EXPECT_EQ(a.bytes(), 40u);
  std::span<double> s;
  TensorView b(s);
  EXPECT_EQ(b.dtype, DType::F64);
  const half* hp = nullptr;
  TensorView c(hp, 0);
  EXPECT_EQ(c.dtype, DType::F16);
  TensorView d = a.slice(3, 4);
  EXPECT_EQ(d.as<int32_t>(), v.data() + 3);
  EXPECT_EQ(d.count, 4u);
}

TEST(DType, NamesAndSizes) {
  EXPECT_STREQ(dtype_name(DType::BF16), "bf16");
  EXPECT_EQ(dtype_size(DType::I64), 8u);
  EXPECT_TRUE(dtype_is_integer(DType::U8));
  EXPECT_FALSE(dtype_is_integer(DType::F16));
  EXPECT_STREQ(reduce_op_name(ReduceOp::BitXor), "BitXor");
}
