// The CPU backend's fused batch normalization (backends/cpu/cpu_batch_norm.cpp) against
// the definition (forward, running statistics) and against autograd through the
// decomposition into reductions and elementwise ops (gradients); f32, the only dtype it takes.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/core/ops.h"
#include "engine/core/random.h"
#include "tests/engine/test_util.h"

using namespace kiln;

namespace {

Tensor randn(const Shape& s, uint64_t seed, DType dtype) {
  Generator g(seed);
  return normal(s, 0.5, 2, dtype, Device(), &g);
}

std::vector<double> values(const Tensor& t) { return t.to(DType::f64).contiguous().to_vector<double>(); }

// x [n, c, h, w]: h * w elements per sample and channel.
void check_forward(DType dtype, double tol, const Shape& shape) {
  const int64_t n = shape[0], c = shape[1], s = shape[2] * shape[3];
  Tensor x = randn(shape, 1, dtype);
  Tensor w = randn({c}, 2, DType::f32), b = randn({c}, 3, DType::f32);
  Tensor rm = randn({c}, 4, DType::f32), rv = randn({c}, 5, DType::f32).abs();
  const std::vector<double> rm0 = values(rm), rv0 = values(rv);
  ASSERT_TRUE(x.backend()->supports(OpId::batch_norm_forward, dtype));
  Tensor y = Tensor::empty(x.shape(), dtype), mean = Tensor::empty({c}), invstd = Tensor::empty({c});
  const double momentum = 0.1, eps = 1e-5;
  x.backend()->batch_norm_forward(y.arg(), mean.arg(), invstd.arg(), x.arg(), w.arg(), b.arg(), rm.arg(), rv.arg(),
                                  momentum, eps);
  const std::vector<double> xv = values(x), yv = values(y), wv = values(w), bv = values(b);
  for (int64_t ch = 0; ch < c; ++ch) {
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < s; ++j) sum += xv[(i * c + ch) * s + j];
    const double mu = sum / (n * s);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < s; ++j) sq += std::pow(xv[(i * c + ch) * s + j] - mu, 2);
    const double var = sq / (n * s), is = 1 / std::sqrt(var + eps);
    EXPECT_NEAR(values(mean)[ch], mu, 1e-5);
    EXPECT_NEAR(values(invstd)[ch], is, 1e-5 * is);
    EXPECT_NEAR(values(rm)[ch], 0.9 * rm0[ch] + 0.1 * mu, 1e-5);
    EXPECT_NEAR(values(rv)[ch], 0.9 * rv0[ch] + 0.1 * var * (n * s) / (n * s - 1), 1e-4);  // unbiased
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < s; ++j) {
        const int64_t k = (i * c + ch) * s + j;
        ASSERT_NEAR(yv[k], (xv[k] - mu) * is * wv[ch] + bv[ch], tol) << "element " << k;
      }
  }
}

// Gradients of sum(y * gy) through the fused backward and through autograd of
// (x - mean) * rsqrt(var + eps) * weight + bias (with and without the affine tensors).
void check_backward(DType dtype, bool affine, double tol) {
  const int64_t n = 3, c = 4;
  Tensor x = randn({n, c, 3, 5}, 7, dtype).requires_grad_(true);
  Tensor w = randn({c}, 8, DType::f32).requires_grad_(true), b = randn({c}, 9, DType::f32).requires_grad_(true);
  Tensor gy = randn(x.shape(), 10, dtype);
  const double eps = 1e-5;
  Tensor mu = mean(x, {0, 2, 3}, true), var_ = var(x, {0, 2, 3}, 0, true);
  Tensor ref = mul(sub(x, mu), rsqrt(add(var_, scalar_like(eps, var_))));
  if (affine) ref = add(mul(ref, w.to(dtype).reshape({1, c, 1, 1})), b.to(dtype).reshape({1, c, 1, 1}));
  sum(mul(ref, gy)).backward();

  Tensor y = Tensor::empty(x.shape(), dtype), save_mean = Tensor::empty({c}), save_invstd = Tensor::empty({c});
  TensorArg none;
  x.backend()->batch_norm_forward(y.arg(), save_mean.arg(), save_invstd.arg(), x.arg(), affine ? w.arg() : none,
                                  affine ? b.arg() : none, none, none, 0.1, eps);
  for (size_t i = 0; i < values(y).size(); ++i) ASSERT_NEAR(values(y)[i], values(ref)[i], tol);
  Tensor gx = Tensor::empty(x.shape(), dtype), gw = Tensor::empty({c}), gb = Tensor::empty({c});
  x.backend()->batch_norm_backward(gx.arg(), affine ? gw.arg() : none, affine ? gb.arg() : none, gy.arg(), x.arg(),
                                   affine ? w.arg() : none, save_mean.arg(), save_invstd.arg());
  const std::vector<double> want = values(x.grad()), got = values(gx);
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], tol) << "grad_x element " << i;
  if (affine) {
    for (int64_t ch = 0; ch < c; ++ch) {
      EXPECT_NEAR(values(gw)[ch], values(w.grad())[ch], tol * 10);
      EXPECT_NEAR(values(gb)[ch], values(b.grad())[ch], tol * 10);
    }
  }
}

}  // namespace

TEST(CpuBatchNorm, ForwardMatchesTheDefinition) {
  check_forward(DType::f32, 1e-4, {4, 3, 5, 6});
  // the executor's LayerNormalization form [1, rows, D]: rows not a multiple of the 8 lanes
  // (Note [Lane sums]), and enough channels for several chunks on several threads
  check_forward(DType::f32, 1e-4, {1, 37, 203, 1});
  check_forward(DType::f32, 1e-4, {2, 300, 61, 1});
}

TEST(CpuBatchNorm, BackwardMatchesAutogradOfTheDecomposition) {
  check_backward(DType::f32, true, 1e-4);
  check_backward(DType::f32, false, 1e-4);
}

TEST(CpuBatchNorm, OnlyFloatTypesWithKernels) {
  Tensor x = Tensor::ones({2, 2});
  EXPECT_TRUE(x.backend()->supports(OpId::batch_norm_backward, DType::f32));
  for (DType d : {DType::f64, DType::f16, DType::bf16})  // decomposed by the front end
    EXPECT_FALSE(x.backend()->supports(OpId::batch_norm_forward, d));
}
