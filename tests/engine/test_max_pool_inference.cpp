// max_pool2d without a gradient on the CPU (Note [Max pool inference] in backends/cpu/cpu_pool.cpp):
// oneDNN's pooling on NCHW and on channels-last input, and our loops where it does not apply
// (ceil_mode, dilation, f64), give the values of the training path (which finds the indices).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/core/grad_mode.h"
#include "engine/core/ops.h"
#include "engine/core/random.h"

using namespace kiln;

namespace {

Tensor with_indices(const Tensor& x, const Pool2dParams& p) {  // the training path
  Tensor xg = x.contiguous().to(DType::f64).to(x.dtype()).requires_grad_();
  return max_pool2d(xg, p).detach();
}

Pool2dParams pool(int64_t k, int64_t s, int64_t pad, int64_t dilation = 1, bool ceil_mode = false) {
  Pool2dParams p;
  p.kernel[0] = p.kernel[1] = k;
  p.stride[0] = p.stride[1] = s;
  p.padding[0] = p.padding[1] = pad;
  p.dilation[0] = p.dilation[1] = dilation;
  p.ceil_mode = ceil_mode;
  return p;
}

}  // namespace

TEST(MaxPoolInference, EqualsTheTrainingPathInEitherLayout) {
  manual_seed(21);
  for (const Pool2dParams& p : {pool(3, 2, 1), pool(2, 2, 0), pool(3, 1, 1), pool(3, 2, 1, 2), pool(3, 2, 0, 1, true)}) {
    const Tensor nchw = normal({2, 5, 13, 12}, 0, 1);
    const Tensor nhwc = normal({2, 13, 12, 5}, 0, 1).permute({0, 3, 1, 2});
    for (const Tensor& x : {nchw, nhwc}) {
      const Tensor want = with_indices(x, p);
      const Tensor got = max_pool2d(x, p);
      EXPECT_FALSE(got.requires_grad());
      EXPECT_EQ(got.shape(), want.shape());
      EXPECT_EQ(got.to_vector<float>(), want.to_vector<float>())
          << "kernel " << p.kernel[0] << " stride " << p.stride[0] << " dilation " << p.dilation[0] << " ceil "
          << p.ceil_mode << " contiguous " << x.is_contiguous();
      if (!x.is_contiguous() && !p.ceil_mode && p.dilation[0] == 1)
        EXPECT_EQ(got.strides()[1], 1) << "a channels-last input gives a channels-last output";
    }
    const Tensor x64 = nchw.to(DType::f64);
    EXPECT_EQ(max_pool2d(x64, p).to_vector<double>(), with_indices(x64, p).to_vector<double>());
  }
}

TEST(MaxPoolInference, NaNInAWindowIsItsMaximum) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, {1, 1, 4, 4});
  std::vector<float> v = x.to_vector<float>();
  v[5] = std::numeric_limits<float>::quiet_NaN();  // in the top-left 2x2 window
  x = Tensor::from_vector<float>(v, {1, 1, 4, 4});
  const std::vector<float> got = max_pool2d(x, pool(2, 2, 0)).to_vector<float>();
  ASSERT_EQ(got.size(), 4u);
  EXPECT_TRUE(std::isnan(got[0]));
  EXPECT_EQ(got[1], 8.0f);
  EXPECT_EQ(with_indices(x, pool(2, 2, 0)).to_vector<float>()[1], 8.0f);
}
