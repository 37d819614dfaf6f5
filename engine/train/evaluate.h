// The evaluation loop: a classifier's loss and metrics over a whole DataLoader, in eval
// mode, without gradients. Used by Trainer (validation after each epoch), `kiln train`'s
// and `kiln eval`'s test-set figures and Kiln Studio's evaluation after a run.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "engine/core/device.h"
#include "engine/core/tensor.h"
#include "engine/data/dataloader.h"
#include "engine/nn/module.h"
#include "engine/train/metrics.h"

namespace kiln::train {

// loss(logits [B, C], target i64 [B]) -> scalar (the batch's mean).
using LossFn = std::function<Tensor(const Tensor& logits, const Tensor& target)>;

struct EvaluateOptions {
  int64_t num_classes = 10;
  int64_t top_k = 5;             // for ClassificationMetrics::top_k_accuracy
  Device device;                 // where the model lives; batches are moved there
  LossFn loss;                   // empty: cross_entropy (nn/functional.h)
  bool keep_predictions = false; // fill Evaluation::predictions, ::targets and ::probabilities
  // Asked before each batch (after it is loaded); true ends the pass there with
  // Evaluation::stopped set, e.g. on Ctrl-C. May be empty.
  std::function<bool()> should_stop;
};

struct Evaluation {
  ClassificationMetrics metrics;  // of the batches evaluated (all of them unless stopped)
  // With keep_predictions, per sample in the loader's order: the top-1 class (the column
  // of ClassificationMetrics::confusion it counted in) and the true class.
  std::vector<int64_t> predictions, targets;
  std::vector<float> probabilities;  // softmax probability of each prediction, in [0, 1]
  bool stopped = false;           // should_stop ended the pass early
  // With keep_predictions and a floating target (regression, output [B, 1]): each sample's
  // output and target instead (predictions, targets and probabilities stay empty).
  std::vector<double> outputs, actual;
};

// One pass over `loader` (from its epoch 0: set_epoch(0) first, so a loader whose earlier
// pass was cut short starts afresh) with `model` in eval mode under NoGradGuard; the model's
// training flag is restored afterwards. Throws what the model, loss or metrics throw
// (ShapeError when logits are not [B, num_classes]).
Evaluation evaluate(nn::Module& model, data::DataLoader& loader, const EvaluateOptions& options);

}  // namespace kiln::train
