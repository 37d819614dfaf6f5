// Fake quantization (ops.h fake_quantize_per_tensor_affine / _per_channel_affine) beyond the
// PyTorch fixtures (test_pytorch_reference.cpp) and the gradcheck (test_gradcheck.cpp): the CPU
// kernel against PyTorch's formula written out in f32, the composed path (f16 on the CPU, and
// every device without the kernel) against the kernel, the straight-through gradient at the
// range's ends, NaN, and bad arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/core/ops.h"
#include "engine/core/random.h"
#include "engine/core/registry.h"
#include "tests/common/error_of.h"

using namespace kiln;

// stmt throws `type` and its message holds `text`.
#define EXPECT_THAT_ERROR(stmt, type, text)                                                  \
  do {                                                                                       \
    EXPECT_THROW((void)(stmt), type);                                                        \
    const std::string message_ = kiln::test::error_of([&] { (void)(stmt); });               \
    EXPECT_NE(message_.find(text), std::string::npos) << message_;                           \
  } while (0)

namespace {

// PyTorch's CPU kernel for one f32 value: qval = int64(zp + nearbyint(x * (1.0f / scale))).
float torch_fake_quant(float x, float scale, int64_t zp, int64_t qmin, int64_t qmax, bool* inside) {
  const float inv_scale = 1.0f / scale;
  const auto q = static_cast<int64_t>(static_cast<float>(zp) + std::nearbyint(x * inv_scale));
  *inside = qmin <= q && q <= qmax;
  return static_cast<float>((std::fmin(std::fmax(q, qmin), qmax) - zp) * static_cast<double>(scale));
}

}  // namespace

TEST(FakeQuantize, CpuKernelIsPyTorchsFormulaInF32) {
  ASSERT_TRUE(backend_for(Device())->supports(OpId::fake_quantize, DType::f32));
  Tensor x = uniform({4, 3, 5, 7}, -3, 3, DType::f32);
  std::vector<float> v = x.to_vector<float>();
  v[0] = 0.05f;  // a tie at scale 0.1f is not exact in binary; 0.25 at scale 0.5 is
  x = Tensor::from_vector(v, x.shape()).requires_grad_();
  const float scale = 0.023f;
  Tensor y = fake_quantize_per_tensor_affine(x, scale, 37, 0, 255);
  y.backward(Tensor::ones(y.shape()));
  const std::vector<float> got = y.to_vector<float>(), grad = x.grad().to_vector<float>();
  for (size_t i = 0; i < v.size(); ++i) {
    bool inside = false;
    ASSERT_EQ(got[i], torch_fake_quant(v[i], scale, 37, 0, 255, &inside)) << "element " << i << " x " << v[i];
    ASSERT_EQ(grad[i], inside ? 1.0f : 0.0f) << "element " << i << " x " << v[i];
  }

  // Per channel along axis 1 (3 channels of 5 * 7 values), each with its scale and zero point.
  const std::vector<float> scales{0.01f, 0.05f, 0.2f};
  const std::vector<int64_t> zps{-3, 0, 4};
  Tensor yc = fake_quantize_per_channel_affine(x.detach(), Tensor::from_vector(scales, {3}),
                                               Tensor::from_vector(zps, {3}), 1, -127, 127);
  const std::vector<float> gc = yc.to_vector<float>();
  for (size_t i = 0; i < v.size(); ++i) {
    const size_t c = (i / 35) % 3;
    bool inside = false;
    ASSERT_EQ(gc[i], torch_fake_quant(v[i], scales[c], zps[c], -127, 127, &inside)) << "element " << i;
  }
}

TEST(FakeQuantize, ComposedPathEqualsTheKernel) {
  // f16 has no CPU kernel, so it takes the composed path that devices without the kernel take.
  // Multiples of 1/64 in [-4, 4] with scale 0.25 are exact in f16 and f32 (ties included), so
  // both paths must agree exactly, output and gradient.
  ASSERT_FALSE(backend_for(Device())->supports(OpId::fake_quantize, DType::f16));
  std::vector<float> v;
  for (int i = -256; i <= 256; i += 3) v.push_back(static_cast<float>(i) / 64.0f);
  const Shape shape{static_cast<int64_t>(v.size())};
  Tensor x32 = Tensor::from_vector(v, shape).requires_grad_();
  Tensor x16 = Tensor::from_vector(v, shape).to(DType::f16).detach().requires_grad_();
  Tensor g = uniform(shape, -1, 1, DType::f32).to(DType::f16).to(DType::f32);
  Tensor y32 = fake_quantize_per_tensor_affine(x32, 0.25f, 5, 0, 20);
  Tensor y16 = fake_quantize_per_tensor_affine(x16, 0.25f, 5, 0, 20);
  ASSERT_EQ(y16.dtype(), DType::f16);
  y32.backward(g);
  y16.backward(g.to(DType::f16));
  EXPECT_EQ(y16.to(DType::f32).to_vector<float>(), y32.to_vector<float>());
  EXPECT_EQ(x16.grad().to(DType::f32).to_vector<float>(), x32.grad().to_vector<float>());

  Tensor w32 = Tensor::from_vector(v, {1, shape[0]}).expand({3, shape[0]}).contiguous();
  const Tensor scales = Tensor::from_vector(std::vector<float>{0.25f, 0.5f, 0.125f}, {3});
  const Tensor zps = Tensor::from_vector(std::vector<int32_t>{0, -2, 3}, {3});
  EXPECT_EQ(fake_quantize_per_channel_affine(w32.to(DType::f16), scales, zps, 0, -8, 7).to(DType::f32).to_vector<float>(),
            fake_quantize_per_channel_affine(w32, scales, zps, 0, -8, 7).to_vector<float>());
}

TEST(FakeQuantize, StraightThroughGradientIncludesTheRangesEnds) {
  // scale 1, zero point 2, range [0, 5]: x = -2 and 3 quantize to 0 and 5 exactly (gradient 1),
  // -2.5 rounds to -2 (q = 0, gradient 1: ties to even), -2.6 to -3 (q = -1, gradient 0), 3.5 to
  // 4 (q = 6, gradient 0), 3.4 to 3 (q = 5, gradient 1).
  Tensor x = Tensor::from_vector(std::vector<float>{-2, 3, -2.5f, -2.6f, 3.5f, 3.4f, 0.5f, 1.5f}, {8}).requires_grad_();
  Tensor y = fake_quantize_per_tensor_affine(x, 1.0f, 2, 0, 5);
  y.backward(Tensor::full({8}, 3.0));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{-2, 3, -2, -2, 3, 3, 0, 2}));
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{3, 3, 3, 0, 0, 3, 3, 3}));
}

TEST(FakeQuantize, NanStaysNanWithoutGradient) {
  Tensor x = Tensor::from_vector(std::vector<float>{NAN, 1.0f}, {2}).requires_grad_();
  Tensor y = fake_quantize_per_tensor_affine(x, 0.5f, 0, -127, 127);
  y.backward(Tensor::ones({2}));
  const std::vector<float> out = y.to_vector<float>();
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_EQ(out[1], 1.0f);
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{0, 1}));
}

TEST(FakeQuantize, BadArgumentsNameTheProblem) {
  const Tensor x = Tensor::ones({2, 3});
  const Tensor s3 = Tensor::full({3}, 0.1), z3 = Tensor::zeros({3}, DType::i32);
  EXPECT_THAT_ERROR(fake_quantize_per_tensor_affine(x, 0.1f, 0, 5, 4), ValueError, "quant_min 5 must be <= quant_max 4");
  EXPECT_THAT_ERROR(fake_quantize_per_tensor_affine(x, 0.1f, 300, 0, 255), ValueError, "zero_point 300 is outside");
  EXPECT_THAT_ERROR(fake_quantize_per_tensor_affine(x, 0.0f, 0, 0, 255), ValueError, "must be finite and > 0");
  EXPECT_THAT_ERROR(fake_quantize_per_tensor_affine(x, NAN, 0, 0, 255), ValueError, "must be finite and > 0");
  EXPECT_THAT_ERROR(fake_quantize_per_tensor_affine(Tensor::ones({2}, DType::i32), 0.1f, 0, 0, 255), DTypeError,
                    "x must be floating");
  EXPECT_THAT_ERROR(fake_quantize_per_channel_affine(x, s3, z3, 0, -127, 127), ShapeError, "must be [2]");
  EXPECT_THAT_ERROR(fake_quantize_per_channel_affine(x, s3, z3, 2, -127, 127), IndexError, "axis 2");
  EXPECT_THAT_ERROR(fake_quantize_per_channel_affine(x, s3, Tensor::zeros({3}), 1, -127, 127), DTypeError,
                    "zero_point integer");
  EXPECT_THAT_ERROR(fake_quantize_per_channel_affine(x, Tensor::from_vector(std::vector<float>{0.1f, -1, 0.1f}, {3}),
                                                     z3, 1, -127, 127),
                    ValueError, "scale[1] = -1");
}
