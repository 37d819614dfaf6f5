// Dropout layer (torch.nn.Dropout; Srivastava et al. 2014, inverted scaling).
#pragma once
#include "engine/nn/module.h"

namespace kiln::nn {

// Training: zeroes each element with probability p (kiln::bernoulli on the default
// generator) and scales the kept ones by 1 / (1 - p). Evaluation: identity.
// Any shape. ValueError unless 0 <= p <= 1.
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Dropout"; }
  std::string extra_repr() const override;
  const double p;
};

}  // namespace kiln::nn
