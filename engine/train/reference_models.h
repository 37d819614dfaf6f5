// The reference models trained by `kiln train` and tests/bench: the same two
// networks as tests/bench/pytorch_train.py, with PyTorch's state_dict key names
// ("1.weight" for the mlp's first Linear, "0.weight" for the cnn's first Conv2d),
// so weights move between Kiln and PyTorch as safetensors files.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "engine/nn/module.h"

namespace kiln::train {

// {"mlp", "cnn", "resnet"}.
const std::vector<std::string>& reference_model_names();

// A new, randomly initialized model (drawn from kiln::default_generator(), so
// kiln::manual_seed(s) first gives the same weights every time), on the CPU:
//  mlp: Flatten, Linear(in_features, 256), ReLU, Linear(256, 128), ReLU, Linear(128, out_features)
//  cnn: Conv2d(1, 32, 3, padding 1), ReLU, MaxPool2d(2), Conv2d(32, 64, 3, padding 1),
//       ReLU, MaxPool2d(2), Flatten, Linear(3136, 128), ReLU, Linear(128, out_features)
//  resnet: a small CIFAR-style ResNet (He et al. 2016, section 4.2, with n = 1: 8 layers; resnet.h):
//       Conv2d(1, 16, 3, padding 1, no bias), BatchNorm2d, ReLU, BasicBlock(16, 16),
//       BasicBlock(16, 32, stride 2), BasicBlock(32, 64, stride 2), AdaptiveAvgPool2d(1), Flatten,
//       Linear(64, out_features)
// The defaults are Fashion-MNIST's: [N, 1, 28, 28] images (784 features) to logits [N, 10]; the
// mlp also takes a table's rows [N, in_features] (data/tabular.h), the cnn and resnet only 28 x 28
// images. ValueError listing the known models for any other name, for sizes < 1, and for a cnn or
// resnet with in_features other than 784.
std::shared_ptr<nn::Module> make_model(const std::string& name, int64_t in_features = 784, int64_t out_features = 10);

// The same networks for images [N, channels, height, width] and `classes` logits: the mlp takes
// channels * height * width features; the cnn's first Conv2d takes `channels` and its first Linear
// 64 * (height / 4) * (width / 4) (each MaxPool2d(2) floors), so make_image_model("cnn", 1, 28, 28, 10)
// is make_model("cnn"); the resnet's stem takes `channels` and its global average pool any size.
// ValueError for sizes < 1, a cnn on images smaller than 4 x 4, another name.
std::shared_ptr<nn::Module> make_image_model(const std::string& name, int64_t channels, int64_t height, int64_t width,
                                             int64_t classes);

// The reference model whose state_dict keys are those of `state` (the shapes are
// load_state_dict's to check), or, when none matches exactly, the one sharing the
// most keys. ValueError naming the keys found when `state` shares no key with any.
// Leaves kiln::default_generator() as it found it.
std::string infer_model_name(const nn::StateDict& state);

}  // namespace kiln::train
