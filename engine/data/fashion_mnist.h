// Fashion-MNIST (Xiao, Rasul, Vollgraf 2017, arXiv:1708.07747): 28 x 28 grey
// images of 10 kinds of clothing, 60000 for training and 10000 for testing, as
// shipped by the Debian package dataset-fashion-mnist.
#pragma once
#include <array>
#include <string>

#include "engine/data/dataset.h"
#include "engine/data/transforms.h"

namespace kiln::data {

class FashionMNIST : public Dataset {
 public:
  static constexpr const char* kDefaultDir = "/usr/share/datasets/fashion-mnist";
  // Mean and std of the training pixels scaled to [0, 1] (the values commonly used
  // with torchvision.datasets.FashionMNIST).
  static constexpr double kMean = 0.2860, kStd = 0.3530;
  static const std::array<const char*, 10> kClassNames;  // "T-shirt/top", "Trouser", ... "Ankle boot"

  // Loads the train (60000) or test (10000) split from dir (load_mnist_like's
  // errors). The images stay in memory as u8 (47 MB for the training split).
  explicit FashionMNIST(bool train = true, const std::string& dir = kDefaultDir,
                        Normalize normalize = Normalize({kMean}, {kStd}));

  int64_t size() const override;
  // input f32 [B, 1, 28, 28] = (x / 255 - mean) / std, target i64 [B]; built in one
  // pass over the bytes (no per-sample tensors). IndexError for a bad index.
  Batch get_batch(const std::vector<int64_t>& indices) const override;

  const Tensor& images() const { return images_; }  // u8 [N, 28, 28]
  const Tensor& labels() const { return labels_; }  // i64 [N]

 private:
  Tensor images_, labels_;
  std::array<float, 256> table_;  // byte -> normalized value
};

}  // namespace kiln::data
