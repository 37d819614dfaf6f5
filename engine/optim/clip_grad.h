// Gradient clipping (torch.nn.utils.clip_grad_norm_).
#pragma once
#include <vector>

#include "engine/core/tensor.h"

namespace kiln::optim {

// Scales the gradients of `params` in place so that their joint norm is at most
// max_norm. total = (sum over parameters of ||grad||_p^p)^(1/p), or the largest |grad|
// for norm_type = INFINITY; when max_norm / (total + 1e-6) < 1, every gradient is
// multiplied by that factor. Parameters without a gradient are skipped. Returns total
// (0 when no parameter has a gradient). ValueError for norm_type <= 0.
double clip_grad_norm(const std::vector<Tensor>& params, double max_norm, double norm_type = 2.0);

}  // namespace kiln::optim
