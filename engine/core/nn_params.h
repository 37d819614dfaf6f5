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
