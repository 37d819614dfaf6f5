// Adam (Kingma & Ba 2015) and AdamW (Loshchilov & Hutter 2019), as torch.optim.Adam / AdamW.
#pragma once
#include "engine/optim/optimizer.h"

namespace kiln::optim {

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  bool amsgrad = false;
};
// The same fields; AdamW's default weight_decay is 1e-2 (torch.optim.AdamW).
struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 1e-2;
  bool amsgrad = false;
};

// Per parameter, at its step t (1-based), as torch's _single_tensor_adam:
//   Adam:  g = grad + weight_decay * p          AdamW: p = p * (1 - lr * weight_decay)
//   m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g^2
//   v_hat = max(v_hat, v) with amsgrad, else v
//   p = p - lr / (1 - beta1^t) * m / (sqrt(v_hat) / sqrt(1 - beta2^t) + eps)
// Contiguous parameters whose backend supports OpId::adam_step (f32 on the CPU) use the
// fused kernel when amsgrad is off; others compose ops. ValueError for lr, eps or
// weight_decay < 0 or betas outside [0, 1). State: "exp_avg", "exp_avg_sq", "max_exp_avg_sq".
class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, const AdamOptions& options);
  void step() override;
  const AdamOptions& options() const { return options_; }  // as constructed; the current lr is lr()
  // follows_lr when the last step() updated every parameter with the fused adam_step,
  // else not_replayable (the composed update bakes in the bias corrections of its step).
  ReplayMode replay_mode() const override { return fused_ ? ReplayMode::follows_lr : ReplayMode::not_replayable; }

 protected:
  Adam(std::vector<Tensor> params, const AdamOptions& options, bool decoupled);
  std::map<std::string, double> hyperparameters() const override;
  void set_hyperparameters(const std::map<std::string, double>& h) override;

 private:
  AdamOptions options_;
  bool decoupled_;  // AdamW's decoupled weight decay
  bool fused_ = false;  // the last step() used adam_step for every parameter it updated
};

class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, const AdamWOptions& options);
};

}  // namespace kiln::optim
