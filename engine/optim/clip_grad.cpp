#include "engine/optim/clip_grad.h"

#include <cmath>

#include "engine/core/error.h"
#include "engine/core/grad_mode.h"
#include "engine/core/ops.h"

namespace kiln::optim {

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm, double norm_type) {
  KILN_CHECK(norm_type > 0, ValueError, "clip_grad_norm: norm_type must be positive, got ", norm_type);
  NoGradGuard no_grad;
  std::vector<Tensor> grads;
  for (const Tensor& p : params)
    if (p.defined() && p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return 0.0;
  double total = 0;
  if (std::isinf(norm_type)) {
    for (const Tensor& g : grads)
      if (g.numel()) total = std::max(total, amax(abs(g.to(DType::f64))).item<double>());
  } else {
    for (const Tensor& g : grads) total += sum(pow(abs(g.to(DType::f64)), norm_type)).item<double>();
    total = std::pow(total, 1.0 / norm_type);
  }
  double coef = max_norm / (total + 1e-6);
  if (coef < 1)
    for (Tensor& g : grads) g.copy_(g * coef);
  return total;
}

}  // namespace kiln::optim
