// gradcheck: compares backward() with central finite differences in f64
// (the idea of torch.autograd.gradcheck, checked along random projections).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "engine/core/tensor.h"

namespace kiln::autograd {

struct GradcheckOptions {
  double eps = 1e-6;   // finite-difference step
  double atol = 1e-5;  // |analytic - numeric| <= atol + rtol * |numeric|
  double rtol = 1e-3;
  int projections = 2;  // random output weightings w; each checks d(sum(w * f(x)))/dx
  uint64_t seed = 0;
};

struct GradcheckResult {
  bool ok = true;
  double max_abs_error = 0;
  std::string message;  // which input and element failed, with both values
};

// `fn` maps the inputs to one floating output. Inputs must be f64 CPU tensors;
// those with requires_grad() are checked. Throws ValueError otherwise.
GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                          const std::vector<Tensor>& inputs, const GradcheckOptions& options = {});

}  // namespace kiln::autograd
