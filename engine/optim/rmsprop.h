// RMSprop (Hinton's lecture 6e; torch.optim.RMSprop).
#pragma once
#include "engine/optim/optimizer.h"

namespace kiln::optim {

struct RMSpropOptions {
  double lr = 1e-2;
  double alpha = 0.99;  // smoothing constant
  double eps = 1e-8;
  double weight_decay = 0;
  double momentum = 0;
  bool centered = false;
};

// Per parameter, as torch's _single_tensor_rmsprop:
//   g = grad + weight_decay * p
//   sq = alpha * sq + (1 - alpha) * g^2
//   avg = sqrt(sq - ga^2) + eps with ga = alpha * ga + (1 - alpha) * g when centered,
//         else sqrt(sq) + eps
//   buf = momentum * buf + g / avg;  p = p - lr * buf    (momentum > 0)
//   p = p - lr * g / avg                                  (otherwise)
// ValueError for negative lr, alpha, eps, weight_decay or momentum.
// State: "square_avg", "grad_avg", "momentum_buffer".
class RMSprop : public Optimizer {
 public:
  RMSprop(std::vector<Tensor> params, const RMSpropOptions& options);
  void step() override;
  const RMSpropOptions& options() const { return options_; }  // as constructed; the current lr is lr()

 protected:
  std::map<std::string, double> hyperparameters() const override;
  void set_hyperparameters(const std::map<std::string, double>& h) override;

 private:
  RMSpropOptions options_;
};

}  // namespace kiln::optim
