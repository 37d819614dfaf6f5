#include "engine/optim/adam.h"

#include <cmath>

#include "engine/core/backend.h"
#include "engine/core/error.h"
#include "engine/core/grad_mode.h"
#include "engine/core/ops.h"

namespace kiln::optim {

Adam::Adam(std::vector<Tensor> params, const AdamOptions& o) : Adam(std::move(params), o, false) {}

Adam::Adam(std::vector<Tensor> params, const AdamOptions& o, bool decoupled)
    : Optimizer(std::move(params), o.lr), options_(o), decoupled_(decoupled) {
  KILN_CHECK(o.eps >= 0, ValueError, "Adam: invalid epsilon value: ", o.eps);
  KILN_CHECK(o.beta1 >= 0 && o.beta1 < 1, ValueError, "Adam: invalid beta parameter at index 0: ", o.beta1);
  KILN_CHECK(o.beta2 >= 0 && o.beta2 < 1, ValueError, "Adam: invalid beta parameter at index 1: ", o.beta2);
  KILN_CHECK(o.weight_decay >= 0, ValueError, "Adam: invalid weight_decay value: ", o.weight_decay);
}

AdamW::AdamW(std::vector<Tensor> params, const AdamWOptions& o)
    : Adam(std::move(params), AdamOptions{o.lr, o.beta1, o.beta2, o.eps, o.weight_decay, o.amsgrad}, true) {}

void Adam::step() {
  NoGradGuard no_grad;
  const AdamOptions& o = options_;
  fused_ = true;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    Tensor g = p.grad();
    if (!g.defined()) continue;
    int64_t t = next_step(i);
    Tensor& m = state(i, "exp_avg");
    Tensor& v = state(i, "exp_avg_sq");
    if (!o.amsgrad && p.is_contiguous() && g.is_contiguous() && g.dtype() == p.dtype() && m.is_contiguous() &&
        v.is_contiguous() && p.backend()->supports(OpId::adam_step, p.dtype())) {
      AdamParams ap;
      ap.lr = lr_, ap.beta1 = o.beta1, ap.beta2 = o.beta2, ap.eps = o.eps, ap.weight_decay = o.weight_decay;
      ap.decoupled = decoupled_;
      ap.step = t;
      p.backend()->adam_step(p.arg(), g.arg(), m.arg(), v.arg(), ap);
      continue;
    }
    fused_ = false;
    if (o.weight_decay != 0) {
      if (decoupled_)
        p.copy_(p * (1 - lr_ * o.weight_decay));
      else
        g = g + p * o.weight_decay;
    }
    m.copy_(m * o.beta1 + g * (1 - o.beta1));
    v.copy_(v * o.beta2 + g * g * (1 - o.beta2));
    double td = static_cast<double>(t);
    double bias_correction1 = 1 - std::pow(o.beta1, td);
    double bias_correction2_sqrt = std::sqrt(1 - std::pow(o.beta2, td));
    Tensor v_hat = v;
    if (o.amsgrad) {
      Tensor& vmax = state(i, "max_exp_avg_sq");
      vmax.copy_(maximum(vmax, v));
      v_hat = vmax;
    }
    Tensor denom = sqrt(v_hat) / bias_correction2_sqrt + o.eps;
    p.copy_(p - m / denom * (lr_ / bias_correction1));
  }
}

std::map<std::string, double> Adam::hyperparameters() const {
  return {{"beta1", options_.beta1},
          {"beta2", options_.beta2},
          {"eps", options_.eps},
          {"weight_decay", options_.weight_decay},
          {"amsgrad", options_.amsgrad ? 1.0 : 0.0}};
}

void Adam::set_hyperparameters(const std::map<std::string, double>& h) {
  if (auto it = h.find("beta1"); it != h.end()) options_.beta1 = it->second;
  if (auto it = h.find("beta2"); it != h.end()) options_.beta2 = it->second;
  if (auto it = h.find("eps"); it != h.end()) options_.eps = it->second;
  if (auto it = h.find("weight_decay"); it != h.end()) options_.weight_decay = it->second;
  if (auto it = h.find("amsgrad"); it != h.end()) options_.amsgrad = it->second != 0;
  options_.lr = lr_;
}

}  // namespace kiln::optim
