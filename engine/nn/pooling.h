// 2-d pooling layers (torch.nn.MaxPool2d, AvgPool2d, AdaptiveAvgPool2d).
// Input [N, C, H, W] -> [N, C, Ho, Wo] with Ho = floor((H + 2*pad - dil*(k-1) - 1) / stride) + 1
// (ceil instead of floor with ceil_mode). ValueError when padding exceeds half the kernel.
#pragma once
#include <optional>

#include "engine/nn/module.h"
#include "engine/nn/size2.h"

namespace kiln::nn {

// stride defaults to kernel_size (as torch).
class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(Size2 kernel_size, std::optional<Size2> stride = std::nullopt, Size2 padding = 0,
                     Size2 dilation = 1, bool ceil_mode = false);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "MaxPool2d"; }
  std::string extra_repr() const override;
  const Pool2dParams params;
};

// Mean over each window; count_include_pad counts padded zeros in the divisor (as torch).
class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(Size2 kernel_size, std::optional<Size2> stride = std::nullopt, Size2 padding = 0,
                     bool ceil_mode = false, bool count_include_pad = true);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "AvgPool2d"; }
  std::string extra_repr() const override;
  const Pool2dParams params;
};

// Output [N, C, oh, ow] whatever H and W; bin i covers rows [floor(i*H/oh), ceil((i+1)*H/oh)).
class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(Size2 output_size);
  AdaptiveAvgPool2d(int64_t oh, int64_t ow) : AdaptiveAvgPool2d(Size2(oh, ow)) {}
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "AdaptiveAvgPool2d"; }
  std::string extra_repr() const override { return "output_size=" + output_size.str(); }
  const Size2 output_size;
};

}  // namespace kiln::nn
