// Flatten layer (torch.nn.Flatten).
#pragma once
#include "engine/nn/module.h"

namespace kiln::nn {

// Flattens dims start_dim..end_dim into one (torch.nn.Flatten): [N, C, H, W] -> [N, C*H*W].
class Flatten : public Module {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1) : start_dim(start_dim), end_dim(end_dim) {}
  Tensor forward(const Tensor& x) override { return x.flatten(start_dim, end_dim); }
  std::string type_name() const override { return "Flatten"; }
  std::string extra_repr() const override {
    return "start_dim=" + std::to_string(start_dim) + ", end_dim=" + std::to_string(end_dim);
  }
  const int64_t start_dim, end_dim;
};

}  // namespace kiln::nn
