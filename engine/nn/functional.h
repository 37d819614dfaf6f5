// Functional forms of layers and the losses (torch.nn.functional).
// All are composed of differentiable ops (engine/core/ops.h), so autograd and
// every backend work without extra kernels.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/core/tensor.h"

namespace kiln::nn::functional {

// How a loss reduces its per-element values (torch's reduction='none'|'mean'|'sum').
enum class Reduction { none, mean, sum };

// ---- losses ----

// torch.nn.functional.cross_entropy.
//  logits [N, C] or [N, C, d1, ...] (or [C] with a 0-d target), floating.
//  target i64 class indices [N] or [N, d1, ...]; or, when floating and of logits' shape,
//         class probabilities.
//  weight [C] per-class weights, or undefined.
// Equals (1 - ls) * nll_loss(log_softmax(logits), target) + ls / C * smooth, where smooth_i =
// -sum_c weight[c] * log_softmax(logits)[i, c] (0 for ignored targets) and ls =
// label_smoothing; 'mean' divides both terms by the summed weight[target] of non-ignored
// targets (their count without weights), as PyTorch's cross_entropy_loss_label_smoothing.
// Throws IndexError "cross_entropy: target 7 is out of bounds for 5 classes", ShapeError
// for mismatched shapes, ValueError for label_smoothing outside [0, 1].
Tensor cross_entropy(const Tensor& logits, const Tensor& target, const Tensor& weight = Tensor(),
                     int64_t ignore_index = -100, Reduction reduction = Reduction::mean,
                     double label_smoothing = 0.0);
// torch.nn.functional.nll_loss: loss_i = -weight[t_i] * log_probs[i, t_i] (0 where t_i ==
// ignore_index); 'mean' divides the sum by the summed weight[t_i] of non-ignored targets.
// Shapes as cross_entropy with class-index targets.
Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const Tensor& weight = Tensor(),
                int64_t ignore_index = -100, Reduction reduction = Reduction::mean);
// (input - target)^2, broadcasting (torch.nn.functional.mse_loss).
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::mean);
// |input - target| (torch.nn.functional.l1_loss).
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::mean);
// Stable sigmoid + binary cross entropy (torch.nn.functional.binary_cross_entropy_with_logits):
//   loss = (1 - y) * x + (1 + (pos_weight - 1) * y) * (log1p(exp(-|x|)) + max(-x, 0)),
// which without pos_weight is max(x, 0) - x * y + log1p(exp(-|x|)); then times `weight`.
// weight and pos_weight (one per class, broadcast along the last dim) may be undefined.
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight = Tensor(),
                                        Reduction reduction = Reduction::mean, const Tensor& pos_weight = Tensor());

// ---- layers ----

// Inverted dropout (torch.nn.functional.dropout): in training, zeroes each element with
// probability p (kiln::bernoulli on the default generator) and scales the rest by
// 1 / (1 - p); identity when !training or p == 0. ValueError unless 0 <= p <= 1.
Tensor dropout(const Tensor& x, double p = 0.5, bool training = true);

// torch.nn.functional.batch_norm. x [N, C, *]; running_mean / running_var [C] or undefined;
// weight / bias [C] or undefined. training: normalize by the batch mean and biased variance
// over all dims but 1, and (when the running stats are defined) update them in place:
//   running = (1 - momentum) * running + momentum * stat (unbiased variance for running_var).
// Otherwise normalize by the running stats. y = (x - mean) / sqrt(var + eps) * weight + bias.
// ValueError when training with a single value per channel.
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = Tensor(), const Tensor& bias = Tensor(), bool training = false,
                  double momentum = 0.1, double eps = 1e-5);

// torch.nn.functional.layer_norm: normalizes over the last normalized_shape.size() dims,
// which must equal normalized_shape (ShapeError), with the biased variance;
// weight / bias of normalized_shape or undefined.
Tensor layer_norm(const Tensor& x, const std::vector<int64_t>& normalized_shape, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);

}  // namespace kiln::nn::functional

namespace kiln::nn {
namespace F = functional;
}
