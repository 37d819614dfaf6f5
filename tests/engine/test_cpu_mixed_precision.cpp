// CPU mixed precision (--precision bf16, engine/train/mixed_precision.h): under autocast the
// convolution and the matmul really compute in bf16 (their results match a computation from
// bf16-rounded inputs to a bf16 rounding step and differ from f32 by a bf16-sized amount), the
// weights' gradients arrive in f32 holding bf16 values (the backward ran in bf16), and
// KILN_CPU_BF16=0 takes the f32 fallback with a note.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "engine/core/autocast.h"
#include "engine/core/ops.h"
#include "engine/core/random.h"
#include "engine/train/mixed_precision.h"

namespace kiln {
namespace {

std::vector<double> values(const Tensor& t) { return t.to(DType::f64).contiguous().to_vector<double>(); }

double bf16_round(double v) { return bf16_to_float(float_to_bf16(static_cast<float>(v))); }

// got (bf16) against want_exact (computed in f64 from bf16-rounded inputs): within one bf16
// rounding of the result plus f32 accumulation noise; and at least one element differs from
// the f32 result by a bf16-sized amount relative to the largest output (f32 noise is ~1e-7).
void expect_bf16_result(const std::vector<double>& got, const std::vector<double>& want_exact,
                        const std::vector<double>& f32, const char* what) {
  ASSERT_EQ(got.size(), want_exact.size());
  double max_diff = 0, scale = 0;  // against f32, relative to the largest output
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i], bf16_round(got[i])) << what << " element " << i << " is not a bf16 value";
    EXPECT_NEAR(got[i], want_exact[i], std::fabs(want_exact[i]) * std::ldexp(1.0, -8) + 1e-5) << what << " " << i;
    max_diff = std::max(max_diff, std::fabs(got[i] - f32[i]));
    scale = std::max(scale, std::fabs(f32[i]));
  }
  EXPECT_GT(max_diff / scale, 1e-4) << what << ": no element differs from f32 by a bf16-sized amount";
  EXPECT_LT(max_diff / scale, 0.05) << what;
}

TEST(CpuMixedPrecision, ConvAndLinearComputeInBf16WithF32Gradients) {
  Generator g(11);
  Tensor x = normal({2, 3, 6, 6}, 0, 1, DType::f32, Device(), &g).requires_grad_(true);
  Tensor w = normal({4, 3, 3, 3}, 0, 1, DType::f32, Device(), &g).requires_grad_(true);
  Tensor a = normal({5, 40}, 0, 1, DType::f32, Device(), &g);
  Tensor lw = normal({7, 40}, 0, 1, DType::f32, Device(), &g).requires_grad_(true);
  Conv2dParams p;
  p.padding[0] = p.padding[1] = 1;
  const Tensor y32 = conv2d(x, w, Tensor(), p), z32 = linear(a, lw, Tensor());
  // The f64 references from bf16-rounded inputs.
  const Tensor y_ref = conv2d(x.detach().to(DType::bf16).to(DType::f64), w.detach().to(DType::bf16).to(DType::f64),
                              Tensor(), p);
  const Tensor z_ref = linear(a.to(DType::bf16).to(DType::f64), lw.detach().to(DType::bf16).to(DType::f64), Tensor());
  Tensor y, z;
  {
    AutocastGuard on(DType::bf16);
    y = conv2d(x, w, Tensor(), p);
    z = linear(a, lw, Tensor());
    ASSERT_EQ(y.dtype(), DType::bf16);
    ASSERT_EQ(z.dtype(), DType::bf16);
    add(sum(y.to(DType::f32)), sum(z.to(DType::f32))).backward();
  }
  expect_bf16_result(values(y), values(y_ref), values(y32), "conv2d");
  expect_bf16_result(values(z), values(z_ref), values(z32), "linear");
  // Master weights get f32 gradients, computed by the bf16 backward kernels (bf16 values).
  for (const Tensor* t : {&w, &lw, &x}) {
    ASSERT_EQ(t->grad().dtype(), DType::f32);
    for (double v : values(t->grad())) ASSERT_EQ(v, bf16_round(v)) << "a gradient that is not a bf16 value";
  }
}

TEST(CpuMixedPrecision, Bf16PlanAndTheForcedF32Fallback) {
  const bool has = train::cpu_has_bf16_dot();
  train::PrecisionPlan plan = train::plan_precision("bf16", Device());
  EXPECT_EQ(plan.autocast.has_value(), has);
  EXPECT_EQ(plan.note.empty(), has);
  ASSERT_EQ(setenv("KILN_CPU_BF16", "0", 1), 0);
  EXPECT_FALSE(train::cpu_has_bf16_dot());
  plan = train::plan_precision("bf16", Device());
  unsetenv("KILN_CPU_BF16");
  EXPECT_FALSE(plan.autocast.has_value());
  EXPECT_NE(plan.note.find("KILN_CPU_BF16=0"), std::string::npos) << plan.note;
  EXPECT_NE(plan.note.find("f32"), std::string::npos) << plan.note;
  EXPECT_EQ(train::cpu_has_bf16_dot(), has);
}

}  // namespace
}  // namespace kiln
