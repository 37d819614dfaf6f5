// Activation layers (torch.nn.ReLU, LeakyReLU, GELU, SiLU, Sigmoid, Tanh, Softmax,
// LogSoftmax). All keep the input's shape and have no parameters.
#pragma once
#include "engine/nn/module.h"

namespace kiln::nn {

// max(x, 0)
class ReLU : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "ReLU"; }
};

// x for x > 0, negative_slope * x otherwise.
class LeakyReLU : public Module {
 public:
  explicit LeakyReLU(double negative_slope = 0.01) : negative_slope(negative_slope) {}
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "LeakyReLU"; }
  std::string extra_repr() const override;
  const double negative_slope;
};

// x * Phi(x) with approximate "none", or its tanh approximation with "tanh"
// (torch.nn.GELU; ValueError for anything else).
class GELU : public Module {
 public:
  explicit GELU(std::string approximate = "none");
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "GELU"; }
  std::string extra_repr() const override { return "approximate='" + approximate + "'"; }
  const std::string approximate;
};

// x * sigmoid(x)
class SiLU : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "SiLU"; }
};

class Sigmoid : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Sigmoid"; }
};

class Tanh : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Tanh"; }
};

// exp(x) / sum(exp(x)) along dim (negative counts from the end).
class Softmax : public Module {
 public:
  explicit Softmax(int64_t dim) : dim(dim) {}
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Softmax"; }
  std::string extra_repr() const override { return "dim=" + std::to_string(dim); }
  const int64_t dim;
};

// x - logsumexp(x) along dim.
class LogSoftmax : public Module {
 public:
  explicit LogSoftmax(int64_t dim) : dim(dim) {}
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "LogSoftmax"; }
  std::string extra_repr() const override { return "dim=" + std::to_string(dim); }
  const int64_t dim;
};

}  // namespace kiln::nn
