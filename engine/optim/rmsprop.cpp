#include "engine/optim/rmsprop.h"

#include "engine/core/error.h"
#include "engine/core/grad_mode.h"
#include "engine/core/ops.h"

namespace kiln::optim {

RMSprop::RMSprop(std::vector<Tensor> params, const RMSpropOptions& o)
    : Optimizer(std::move(params), o.lr), options_(o) {
  KILN_CHECK(o.eps >= 0, ValueError, "RMSprop: invalid epsilon value: ", o.eps);
  KILN_CHECK(o.alpha >= 0, ValueError, "RMSprop: invalid alpha value: ", o.alpha);
  KILN_CHECK(o.momentum >= 0, ValueError, "RMSprop: invalid momentum value: ", o.momentum);
  KILN_CHECK(o.weight_decay >= 0, ValueError, "RMSprop: invalid weight_decay value: ", o.weight_decay);
}

void RMSprop::step() {
  NoGradGuard no_grad;
  const RMSpropOptions& o = options_;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    Tensor g = p.grad();
    if (!g.defined()) continue;
    next_step(i);
    if (o.weight_decay != 0) g = g + p * o.weight_decay;
    Tensor& sq = state(i, "square_avg");
    sq.copy_(sq * o.alpha + g * g * (1 - o.alpha));
    Tensor avg;
    if (o.centered) {
      Tensor& ga = state(i, "grad_avg");
      ga.copy_(ga * o.alpha + g * (1 - o.alpha));
      avg = sqrt(sq - ga * ga) + o.eps;
    } else {
      avg = sqrt(sq) + o.eps;
    }
    if (o.momentum > 0) {
      Tensor& buf = state(i, "momentum_buffer");
      buf.copy_(buf * o.momentum + g / avg);
      p.copy_(p - buf * lr_);
    } else {
      p.copy_(p - g / avg * lr_);
    }
  }
}

std::map<std::string, double> RMSprop::hyperparameters() const {
  return {{"alpha", options_.alpha},
          {"eps", options_.eps},
          {"weight_decay", options_.weight_decay},
          {"momentum", options_.momentum},
          {"centered", options_.centered ? 1.0 : 0.0}};
}

void RMSprop::set_hyperparameters(const std::map<std::string, double>& h) {
  if (auto it = h.find("alpha"); it != h.end()) options_.alpha = it->second;
  if (auto it = h.find("eps"); it != h.end()) options_.eps = it->second;
  if (auto it = h.find("weight_decay"); it != h.end()) options_.weight_decay = it->second;
  if (auto it = h.find("momentum"); it != h.end()) options_.momentum = it->second;
  if (auto it = h.find("centered"); it != h.end()) options_.centered = it->second != 0;
  options_.lr = lr_;
}

}  // namespace kiln::optim
