// Stochastic gradient descent with momentum (torch.optim.SGD).
#pragma once
#include "engine/optim/optimizer.h"

namespace kiln::optim {

struct SGDOptions {
  double lr = 1e-3;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;  // L2 penalty added to the gradient
  bool nesterov = false;
};

// Per parameter, as torch.optim.SGD (_single_tensor_sgd):
//   g = grad + weight_decay * p
//   buf = g at the first step, else momentum * buf + (1 - dampening) * g   (when momentum != 0)
//   g = g + momentum * buf if nesterov, else buf
//   p = p - lr * g
// ValueError for negative lr, momentum or weight_decay, or nesterov without
// momentum > 0 and dampening == 0. State: "momentum_buffer".
class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, const SGDOptions& options);
  void step() override;
  const SGDOptions& options() const { return options_; }  // as constructed; the current lr is lr()

 protected:
  std::map<std::string, double> hyperparameters() const override;
  void set_hyperparameters(const std::map<std::string, double>& h) override;

 private:
  SGDOptions options_;
};

}  // namespace kiln::optim
