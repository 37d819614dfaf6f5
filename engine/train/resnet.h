// Residual networks of He et al. 2016 ("Deep Residual Learning for Image Recognition") in their
// CIFAR form: a 3x3 convolution stem without max-pool, stages of BasicBlocks, global average
// pooling and a Linear head. The reference model `resnet` (reference_models.h) and the `kiln bench`
// resnet18 are built from them.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/nn/conv.h"
#include "engine/nn/module.h"
#include "engine/nn/normalization.h"

namespace kiln::train {

// torchvision.models.resnet.BasicBlock: relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)), both
// convolutions 3x3 without bias (the first with `stride`); the shortcut is x, or a 1x1 convolution
// with `stride` and a BatchNorm2d when the stride or the width changes (state_dict keys
// downsample_conv.* and downsample_bn.*). [N, in, H, W] -> [N, out, ceil(H / stride), ceil(W / stride)].
class BasicBlock : public nn::Module {
 public:
  BasicBlock(int64_t in, int64_t out, int64_t stride);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "BasicBlock"; }

 private:
  std::shared_ptr<nn::Conv2d> conv1_, conv2_, down_conv_;
  std::shared_ptr<nn::BatchNorm2d> bn1_, bn2_, down_bn_;
};

// Conv2d(channels, widths[0], 3, padding 1, no bias), BatchNorm2d, ReLU, then for each stage s
// blocks_per_stage BasicBlocks of widths[s] (the first of every stage but the first with stride 2),
// AdaptiveAvgPool2d(1), Flatten, Linear(widths.back(), classes): images [N, channels, H, W] of any
// size to logits [N, classes]. ValueError for sizes < 1 or no stage.
std::shared_ptr<nn::Module> resnet_cifar(int64_t channels, int64_t classes, const std::vector<int64_t>& widths,
                                         int blocks_per_stage);

}  // namespace kiln::train
