// Fully connected layer (torch.nn.Linear) and the identity (torch.nn.Identity).
#pragma once
#include "engine/nn/module.h"

namespace kiln::nn {

// y = x @ weight^T + bias. x [*, in_features] -> y [*, out_features].
// weight [out_features, in_features] ~ kaiming_uniform_(a = sqrt(5)), i.e.
// U(-1/sqrt(in), 1/sqrt(in)); bias [out_features] ~ U(-1/sqrt(in), 1/sqrt(in))
// (torch.nn.Linear.reset_parameters), drawn from kiln::default_generator().
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Linear"; }
  std::string extra_repr() const override;
  void reset_parameters();

  const int64_t in_features, out_features;
  Tensor weight;
  Tensor bias;  // undefined when constructed with bias = false
};

// Returns its input unchanged (a placeholder in Sequential, as torch.nn.Identity).
class Identity : public Module {
 public:
  Tensor forward(const Tensor& x) override { return x; }
  std::string type_name() const override { return "Identity"; }
};

}  // namespace kiln::nn
