#include "engine/train/resnet.h"

#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/nn/nn.h"

namespace kiln::train {

BasicBlock::BasicBlock(int64_t in, int64_t out, int64_t stride) {
  conv1_ = register_module("conv1", std::make_shared<nn::Conv2d>(in, out, 3, stride, 1, 1, 1, false));
  bn1_ = register_module("bn1", std::make_shared<nn::BatchNorm2d>(out));
  conv2_ = register_module("conv2", std::make_shared<nn::Conv2d>(out, out, 3, 1, 1, 1, 1, false));
  bn2_ = register_module("bn2", std::make_shared<nn::BatchNorm2d>(out));
  if (stride != 1 || in != out) {
    down_conv_ = register_module("downsample_conv", std::make_shared<nn::Conv2d>(in, out, 1, stride, 0, 1, 1, false));
    down_bn_ = register_module("downsample_bn", std::make_shared<nn::BatchNorm2d>(out));
  }
}

Tensor BasicBlock::forward(const Tensor& x) {
  Tensor y = bn2_->forward(conv2_->forward(relu(bn1_->forward(conv1_->forward(x)))));
  Tensor shortcut = down_conv_ ? down_bn_->forward(down_conv_->forward(x)) : x;
  return relu(add(y, shortcut));
}

std::shared_ptr<nn::Module> resnet_cifar(int64_t channels, int64_t classes, const std::vector<int64_t>& widths,
                                         int blocks_per_stage) {
  KILN_CHECK(channels >= 1 && classes >= 1 && blocks_per_stage >= 1 && !widths.empty(), ValueError,
             "resnet: sizes must be >= 1 and there must be a stage, got ", channels, " channels, ", classes,
             " classes, ", widths.size(), " stages of ", blocks_per_stage, " blocks");
  auto m = std::make_shared<nn::Sequential>(std::make_shared<nn::Conv2d>(channels, widths[0], 3, 1, 1, 1, 1, false),
                                            std::make_shared<nn::BatchNorm2d>(widths[0]), std::make_shared<nn::ReLU>());
  int64_t in = widths[0];
  for (size_t s = 0; s < widths.size(); ++s) {
    KILN_CHECK(widths[s] >= 1, ValueError, "resnet: stage ", s, " has width ", widths[s]);
    for (int b = 0; b < blocks_per_stage; ++b) {
      m->push_back(std::make_shared<BasicBlock>(in, widths[s], b == 0 && s > 0 ? 2 : 1));
      in = widths[s];
    }
  }
  m->push_back(std::make_shared<nn::AdaptiveAvgPool2d>(1, 1));
  m->push_back(std::make_shared<nn::Flatten>());
  m->push_back(std::make_shared<nn::Linear>(in, classes));
  return m;
}

}  // namespace kiln::train
