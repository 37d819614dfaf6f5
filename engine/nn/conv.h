// 2-d convolution layers (torch.nn.Conv2d, torch.nn.ConvTranspose2d).
#pragma once
#include "engine/nn/module.h"
#include "engine/nn/size2.h"

namespace kiln::nn {

// x [N, in_channels, H, W] -> [N, out_channels, Ho, Wo], Ho = floor((H + 2*pad - dil*(k-1) - 1) / stride) + 1.
// weight [out_channels, in_channels / groups, kH, kW], bias [out_channels], initialized as
// torch.nn.Conv2d.reset_parameters (kaiming_uniform_(a = sqrt(5)); bias U(+-1/sqrt(fan_in))).
// ValueError unless both channel counts are divisible by groups.
class Conv2d : public Module {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, Size2 kernel_size, Size2 stride = 1, Size2 padding = 0,
         Size2 dilation = 1, int64_t groups = 1, bool bias = true);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Conv2d"; }
  std::string extra_repr() const override;
  void reset_parameters();

  const int64_t in_channels, out_channels;
  const Size2 kernel_size, stride, padding, dilation;
  const int64_t groups;
  Tensor weight;
  Tensor bias;  // undefined when constructed with bias = false
};

// The adjoint of Conv2d, for upsampling (decoders, U-Nets, GAN generators):
// x [N, in_channels, H, W] -> [N, out_channels, Ho, Wo],
// Ho = (H - 1)*stride - 2*pad + dil*(k - 1) + output_padding + 1 (torch.nn.ConvTranspose2d).
// weight [in_channels, out_channels / groups, kH, kW], bias [out_channels], initialized as
// PyTorch's reset_parameters (kaiming_uniform_(a = sqrt(5)) with fan_in = weight.size(1)*kH*kW;
// bias U(+-1/sqrt(fan_in))). ValueError unless both channel counts are divisible by groups and
// output_padding is smaller than the stride.
class ConvTranspose2d : public Module {
 public:
  ConvTranspose2d(int64_t in_channels, int64_t out_channels, Size2 kernel_size, Size2 stride = 1, Size2 padding = 0,
                  Size2 output_padding = 0, int64_t groups = 1, bool bias = true, Size2 dilation = 1);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "ConvTranspose2d"; }
  std::string extra_repr() const override;
  void reset_parameters();

  const int64_t in_channels, out_channels;
  const Size2 kernel_size, stride, padding, output_padding;
  const int64_t groups;
  const Size2 dilation;
  Tensor weight;
  Tensor bias;  // undefined when constructed with bias = false
};

}  // namespace kiln::nn
