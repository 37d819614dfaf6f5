#include "engine/optim/sgd.h"

#include "engine/core/error.h"
#include "engine/core/grad_mode.h"
#include "engine/core/ops.h"

namespace kiln::optim {

SGD::SGD(std::vector<Tensor> params, const SGDOptions& o) : Optimizer(std::move(params), o.lr), options_(o) {
  KILN_CHECK(o.momentum >= 0, ValueError, "SGD: invalid momentum value: ", o.momentum);
  KILN_CHECK(o.weight_decay >= 0, ValueError, "SGD: invalid weight_decay value: ", o.weight_decay);
  KILN_CHECK(!o.nesterov || (o.momentum > 0 && o.dampening == 0), ValueError,
             "SGD: nesterov momentum requires a momentum and zero dampening");
}

void SGD::step() {
  NoGradGuard no_grad;
  const SGDOptions& o = options_;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (o.weight_decay != 0) g = g + p * o.weight_decay;
    if (o.momentum != 0) {
      bool first = !has_state(i, "momentum_buffer");
      Tensor& buf = state(i, "momentum_buffer");
      buf.copy_(first ? g : buf * o.momentum + g * (1 - o.dampening));
      g = o.nesterov ? g + buf * o.momentum : buf;
    }
    p.copy_(p - g * lr_);
  }
}

std::map<std::string, double> SGD::hyperparameters() const {
  return {{"momentum", options_.momentum},
          {"dampening", options_.dampening},
          {"weight_decay", options_.weight_decay},
          {"nesterov", options_.nesterov ? 1.0 : 0.0}};
}

void SGD::set_hyperparameters(const std::map<std::string, double>& h) {
  if (auto it = h.find("momentum"); it != h.end()) options_.momentum = it->second;
  if (auto it = h.find("dampening"); it != h.end()) options_.dampening = it->second;
  if (auto it = h.find("weight_decay"); it != h.end()) options_.weight_decay = it->second;
  if (auto it = h.find("nesterov"); it != h.end()) options_.nesterov = it->second != 0;
  options_.lr = lr_;
}

}  // namespace kiln::optim
