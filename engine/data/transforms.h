// Transforms applied to batches (torchvision.transforms).
#pragma once
#include <array>
#include <vector>

#include "engine/core/tensor.h"

namespace kiln::data {

// Per-channel normalization: out[c] = (x[c] - mean[c]) / std[c]
// (torchvision.transforms.Normalize). One mean/std value applies to every channel.
class Normalize {
 public:
  // ValueError when the lists are empty, differ in length (unless one has one
  // value), or a std is not positive.
  Normalize(std::vector<double> mean, std::vector<double> stddev);

  // x f32/f64/f16/bf16 [B, C, H, W] or [C, H, W]; C must equal the number of
  // channels given (or one value was given). Returns a new tensor of x's dtype.
  // ShapeError for another rank or channel count, DTypeError for integer input.
  Tensor operator()(const Tensor& x) const;

  // For readers of 8-bit images: table[v] = (v / 255 - mean[c]) / std[c], so that a
  // batch is converted and normalized in one pass over the bytes.
  std::array<float, 256> u8_table(int64_t channel) const;

  const std::vector<double>& mean() const { return mean_; }
  const std::vector<double>& stddev() const { return std_; }

 private:
  std::vector<double> mean_, std_;
};

}  // namespace kiln::data
