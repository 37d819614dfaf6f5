// The parameters of the convolution and pooling ops, shared by the kernels' interface
// (backend.h) and the autograd records (node.h).
#pragma once
#include <cstdint>

namespace kiln {

// Parameters of conv2d (PyTorch's torch.nn.functional.conv2d).
struct Conv2dParams {
  int64_t stride[2] = {1, 1};
  int64_t padding[2] = {0, 0};
  int64_t dilation[2] = {1, 1};
  int64_t groups = 1;
};
// Parameters of conv_transpose2d (PyTorch's torch.nn.functional.conv_transpose2d): conv2d's,
// whose input-gradient it computes, and the rows and columns added at the bottom and right of the
// output, each smaller than its stride (PyTorch's output_padding).
struct ConvTranspose2dParams : Conv2dParams {
  int64_t output_padding[2] = {0, 0};
};
// What an inference convolution does to its output in the same pass (Backend::
// conv2d_fused_forward, conv2d_fused): y = act(conv(x, w) + b [+ residual]), the residual (a
// tensor of y's shape) added before the activation, as a ResNet block's Add -> Relu.
enum class ConvActivation : uint8_t {
  none,
  relu,  // max(y, 0)
  clip,  // min(max(y, lo), hi); ReLU6 is lo 0, hi 6 (ONNX Clip)
  hardswish,  // y * min(max(y + 3, 0), 6) / 6 (ONNX HardSwish; Howard et al. 2019)
  silu,       // y * sigmoid(y) (PyTorch's SiLU, which its exporter writes as Sigmoid -> Mul)
};
struct ConvEpilogue {
  ConvActivation activation = ConvActivation::none;
  float lo = 0, hi = 0;   // clip only
  bool residual = false;  // a residual is added before the activation
};
// Parameters of 2-d pooling (PyTorch's max_pool2d / avg_pool2d).
struct Pool2dParams {
  int64_t kernel[2] = {1, 1};
  int64_t stride[2] = {1, 1};
  int64_t padding[2] = {0, 0};
  int64_t dilation[2] = {1, 1};  // max pooling only
  bool ceil_mode = false;
  bool count_include_pad = true;  // avg pooling only
};

}  // namespace kiln
