// Mixed precision: autocast of matmul/conv2d (engine/core/autocast.h), --precision plans
// and dynamic loss scaling (engine/train/mixed_precision.h); on the CPU, and on the CUDA
// device when there is one.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/core/autocast.h"
#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/core/random.h"
#include "engine/core/registry.h"
#include "engine/nn/functional.h"
#include "engine/optim/sgd.h"
#include "engine/train/mixed_precision.h"
#include "engine/train/reference_models.h"

namespace kiln {
namespace {

std::vector<double> values(const Tensor& t) { return t.to(Device()).to(DType::f64).contiguous().to_vector<double>(); }

TEST(Autocast, MatmulAndConvRunLowWithF32Gradients) {
  Generator g(1);
  Tensor a = normal({4, 8}, 0, 1, DType::f32, Device(), &g).requires_grad_();
  Tensor w = normal({8, 3}, 0, 1, DType::f32, Device(), &g).requires_grad_();
  Tensor ref = matmul(a, w);
  {
    AutocastGuard on(DType::bf16);
    EXPECT_EQ(autocast_dtype(), DType::bf16);
    Tensor y = matmul(a, w);
    EXPECT_EQ(y.dtype(), DType::bf16);
    std::vector<double> got = values(y), want = values(ref);
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 0.05 * (1 + std::fabs(want[i])));
    sum(y.to(DType::f32)).backward();
    Tensor x = normal({1, 2, 5, 5}, 0, 1, DType::f32, Device(), &g), k = normal({3, 2, 3, 3}, 0, 1, DType::f32);
    EXPECT_EQ(conv2d(x, k, Tensor()).dtype(), DType::bf16);
    AutocastGuard off(std::nullopt);
    EXPECT_EQ(matmul(a, w).dtype(), DType::f32);
  }
  EXPECT_FALSE(autocast_dtype().has_value());
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().dtype(), DType::f32);  // master weights get f32 gradients
  EXPECT_EQ(a.grad().dtype(), DType::f32);
  EXPECT_THROW(set_autocast(DType::i64), DTypeError);
}

TEST(MixedPrecision, PlansPerDevice) {
  EXPECT_THROW(train::plan_precision("f8", Device()), ValueError);
  EXPECT_FALSE(train::plan_precision("f32", Device()).autocast);
  train::PrecisionPlan f16cpu = train::plan_precision("f16", Device());
  EXPECT_FALSE(f16cpu.autocast);
  EXPECT_NE(f16cpu.note.find("f32"), std::string::npos);
  train::PrecisionPlan bf16cpu = train::plan_precision("bf16", Device());
  EXPECT_TRUE(bf16cpu.autocast.has_value() != !bf16cpu.note.empty()) << "either bf16 runs or a note says why not";
  train::PrecisionPlan gpu = train::plan_precision("f16", Device(DeviceType::cuda, 0));
  EXPECT_EQ(gpu.autocast, DType::f16);
  EXPECT_TRUE(gpu.loss_scaling);
}

TEST(MixedPrecision, GradScalerSkipsNonFiniteStepsAndAdaptsTheScale) {
  EXPECT_THROW(train::GradScaler(0), ValueError);
  Tensor p = Tensor::ones({3}).requires_grad_();
  optim::SGD opt({p}, optim::SGDOptions{.lr = 1.0});
  train::GradScaler scaler(8.0, 2.0, 0.5, 2);
  // finite: the gradient (2 per element) is unscaled before the step
  scaler.scale(sum(mul(p, scalar_like(2.0, p)))).backward();
  EXPECT_TRUE(scaler.step(opt));
  EXPECT_EQ(values(p), (std::vector<double>{-1, -1, -1}));
  opt.zero_grad();
  // an infinite gradient: no step, the scale halves
  p.set_grad(Tensor::from_vector<float>({1, INFINITY, 1}, {3}));
  EXPECT_FALSE(scaler.step(opt));
  EXPECT_EQ(values(p), (std::vector<double>{-1, -1, -1}));
  EXPECT_EQ(scaler.get_scale(), 4.0);
  EXPECT_EQ(scaler.skipped_steps(), 1);
  // two good steps double it
  for (int i = 0; i < 2; ++i) {
    p.set_grad(Tensor::zeros({3}));
    EXPECT_TRUE(scaler.step(opt));
  }
  EXPECT_EQ(scaler.get_scale(), 8.0);
  EXPECT_EQ(scaler.steps(), 4);
}

TEST(MixedPrecision, CudaCnnBf16AndF16TrackF32) {
  bool cuda = false;
  for (const DeviceInfo& d : list_devices()) cuda = cuda || d.device.type == DeviceType::cuda;
  if (!cuda) GTEST_SKIP() << "no CUDA device";
  const Device dev(DeviceType::cuda, 0);
  Generator g(2);
  Tensor x = normal({32, 1, 28, 28}, 0, 1, DType::f32, dev, &g);
  Tensor y = floor(uniform({32}, 0, 9.99, DType::f32, dev, &g)).to(DType::i64);
  double losses[3];
  const std::optional<DType> modes[3] = {std::nullopt, DType::bf16, DType::f16};
  for (int m = 0; m < 3; ++m) {
    manual_seed(4);
    auto model = train::make_model("cnn");
    model->to(dev);
    AutocastGuard guard(modes[m]);
    Tensor logits = (*model)(x);
    EXPECT_EQ(logits.dtype(), DType::f32);  // the last Linear's f32 bias promotes
    Tensor loss = nn::F::cross_entropy(logits, y);
    loss.backward();
    for (const Tensor& p : model->parameters()) EXPECT_EQ(p.grad().dtype(), DType::f32);
    losses[m] = loss.item<double>();
  }
  EXPECT_NEAR(losses[1], losses[0], 0.02 * losses[0]);
  EXPECT_NEAR(losses[2], losses[0], 0.005 * losses[0]);
}

}  // namespace
}  // namespace kiln
