#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/core/device.h"
#include "engine/core/dtype.h"
#include "engine/core/error.h"
#include "engine/core/shape.h"
#include "engine/core/tensor.h"

using namespace kiln;

TEST(DType, PromotionFollowsPyTorch) {
  EXPECT_EQ(promote_types(DType::f32, DType::f64), DType::f64);
  EXPECT_EQ(promote_types(DType::i64, DType::f16), DType::f16);
  EXPECT_EQ(promote_types(DType::bool_, DType::u8), DType::u8);
  EXPECT_EQ(promote_types(DType::i32, DType::i64), DType::i64);
  EXPECT_EQ(promote_types(DType::f16, DType::bf16), DType::f32);
  EXPECT_EQ(promote_types(DType::bf16, DType::i8), DType::bf16);
  EXPECT_EQ(promote_with_scalar(DType::i64, true), DType::f32);
  EXPECT_EQ(promote_with_scalar(DType::f16, true), DType::f16);
  EXPECT_EQ(promote_with_scalar(DType::i32, false), DType::i32);
}

TEST(DType, HalfRoundTrip) {
  for (float f : {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f, 0.333251953125f})
    EXPECT_EQ(half_to_float(float_to_half(f)), f) << f;
  EXPECT_TRUE(std::isinf(half_to_float(float_to_half(70000.0f))));
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(half_to_float(float_to_half(1.0f + 1.0f / 4096)), 1.0f);  // ties to even
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f)), 1.0f);
  EXPECT_EQ(bf16_to_float(float_to_bf16(3.140625f)), 3.140625f);
}

TEST(DType, NamesRoundTripAndUnknownThrows) {
  for (int i = 0; i < kNumDTypes; ++i) EXPECT_EQ(dtype_from_name(dtype_name(DType(i))), DType(i));
  EXPECT_THROW(dtype_from_name("complex64"), DTypeError);
}

TEST(Shape, BroadcastAndErrorsNameShapes) {
  EXPECT_EQ(broadcast_shapes({3, 1, 5}, {4, 1}, "add"), (Shape{3, 4, 5}));
  EXPECT_EQ(broadcast_shapes({}, {2, 3}, "add"), (Shape{2, 3}));
  try {
    broadcast_shapes({2, 3}, {4}, "mul");
    FAIL();
  } catch (const ShapeError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("mul"), std::string::npos);
    EXPECT_NE(m.find("[2, 3]"), std::string::npos);
    EXPECT_NE(m.find("[4]"), std::string::npos);
  }
}

TEST(Device, ParseAndReject) {
  EXPECT_EQ(Device::parse("cpu"), Device(DeviceType::cpu, 0));
  EXPECT_EQ(Device::parse("cuda:1"), Device(DeviceType::cuda, 1));
  EXPECT_EQ(Device::parse("vulkan:0").str(), "vulkan:0");
  EXPECT_THROW(Device::parse("tpu:0"), DeviceError);
  EXPECT_THROW(Device::parse("cuda:x"), DeviceError);
  EXPECT_THROW(Device::parse("cuda:-1"), DeviceError);
}

TEST(Shape, NumelOverflowIsAShapeError) {
  EXPECT_EQ(kiln::numel({2, 3, 4}), 24);
  EXPECT_EQ(kiln::numel({int64_t(1) << 62, 0, 28}), 0);
  EXPECT_THROW(kiln::numel({int64_t(1) << 62, 1, 28, 28}), kiln::ShapeError);
  EXPECT_THROW(kiln::Tensor::zeros({int64_t(1) << 32, int64_t(1) << 30, 4}, kiln::DType::f32), kiln::ShapeError);
}
