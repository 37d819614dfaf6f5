// The reference resnet (engine/train/resnet.h, reference_models.h): shapes for any channel count,
// image size and class count, its layers, residual shortcuts, and that the name is recognized from
// its weights.
#include <gtest/gtest.h>

#include <array>
#include <map>

#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/core/random.h"
#include "engine/train/reference_models.h"
#include "engine/train/resnet.h"

using namespace kiln;

namespace {
Tensor randn(const Shape& s) { return normal(s, 0, 1); }
// The shapes of a state_dict by key.
std::map<std::string, Shape> shapes(const nn::StateDict& state) {
  std::map<std::string, Shape> m;
  for (const auto& [k, t] : state) m[k] = t.shape();
  return m;
}
}  // namespace

TEST(ReferenceResnet, ShapesFollowTheData) {
  manual_seed(0);
  for (auto [c, h, w, k] : {std::array<int64_t, 4>{3, 20, 24, 5}, {1, 28, 28, 10}, {4, 7, 9, 2}}) {
    auto model = train::make_image_model("resnet", c, h, w, k);
    model->eval();
    Tensor y = model->forward(randn({2, c, h, w}));
    EXPECT_EQ(y.shape(), (Shape{2, k})) << c << " " << h << " " << w;
  }
  // Stem (conv + bn), three blocks (the last two with a 1x1 downsample), Linear(64, k).
  auto model = train::make_image_model("resnet", 3, 32, 32, 7);
  const std::map<std::string, Shape> state = shapes(model->state_dict());
  EXPECT_EQ(state.at("0.weight"), (Shape{16, 3, 3, 3}));
  EXPECT_EQ(state.count("0.bias"), 0u);  // no bias before a BatchNorm
  EXPECT_EQ(state.at("3.conv1.weight"), (Shape{16, 16, 3, 3}));
  EXPECT_EQ(state.count("3.downsample_conv.weight"), 0u);  // same width and stride: the identity shortcut
  EXPECT_EQ(state.at("4.downsample_conv.weight"), (Shape{32, 16, 1, 1}));
  EXPECT_EQ(state.at("5.conv2.weight"), (Shape{64, 64, 3, 3}));
  EXPECT_EQ(state.at("8.weight"), (Shape{7, 64}));
  // 16*27 + 2*16 + 2*(16*16*9 + 2*16) + (16*32*9 + 32*32*9 + 4*32 + 16*32 + 2*32) +
  // (32*64*9 + 64*64*9 + 4*64 + 32*64 + 2*64) + 64*7 + 7
  EXPECT_EQ(model->num_parameters(), 432 + 32 + 2 * (2304 + 32) + (4608 + 9216 + 128 + 512 + 64) +
                                         (18432 + 36864 + 256 + 2048 + 128) + 448 + 7);
}

TEST(ReferenceResnet, BasicBlockAddsItsShortcut) {
  manual_seed(1);
  train::BasicBlock block(4, 4, 1);
  block.eval();
  // With every convolution weight zero, the residual branch is bn2's shift (0 at init) and the block is relu(x).
  for (auto [name, t] : block.state_dict())
    if (name.find("conv") != std::string::npos) t.fill_(0.0);
  Tensor x = randn({1, 4, 5, 5});
  Tensor y = block.forward(x);
  EXPECT_EQ(y.to_vector<float>(), relu(x).to_vector<float>());
  train::BasicBlock down(4, 8, 2);
  EXPECT_EQ(down.forward(x).shape(), (Shape{1, 8, 3, 3}));
}

TEST(ReferenceResnet, NamedByItsWeightsAndBadSizes) {
  manual_seed(2);
  auto fashion = train::make_model("resnet");  // Fashion-MNIST's [N, 1, 28, 28] to 10 classes
  EXPECT_EQ(train::infer_model_name(fashion->state_dict()), "resnet");
  EXPECT_EQ(fashion->forward(randn({3, 1, 28, 28})).shape(), (Shape{3, 10}));
  EXPECT_THROW(train::make_model("resnet", 30, 2), ValueError);  // a table's rows are not images
  EXPECT_THROW(train::make_image_model("resnet", 0, 8, 8, 2), ValueError);
  EXPECT_THROW(train::resnet_cifar(3, 2, {}, 1), ValueError);
}
