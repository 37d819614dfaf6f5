#include "engine/train/evaluate.h"

#include <algorithm>
#include <cmath>

#include "engine/core/grad_mode.h"
#include "engine/nn/functional.h"

namespace kiln::train {

namespace {
// Eval mode for its lifetime; the module's training flag comes back afterwards, also on a throw.
struct EvalModeGuard {
  explicit EvalModeGuard(nn::Module& m) : module(m), was_training(m.is_training()) { m.eval(); }
  ~EvalModeGuard() { module.train(was_training); }
  nn::Module& module;
  bool was_training;
};

// softmax(row)[argmax] = 1 / sum_j exp(row_j - max) per row of logits [B, C]; NaN rows give NaN.
void append_top_probabilities(const Tensor& logits, std::vector<float>& out) {
  if (logits.dim() != 2) return;  // regression outputs: ClassificationMetrics keeps no predictions either
  const std::vector<float> l = logits.to_vector<float>();
  const size_t c = static_cast<size_t>(logits.size(1));
  for (size_t i = 0; c && i < l.size() / c; ++i) {
    const float* row = l.data() + i * c;
    const float m = *std::max_element(row, row + c);
    double sum = 0;
    for (size_t j = 0; j < c; ++j) sum += std::exp(static_cast<double>(row[j]) - m);
    out.push_back(static_cast<float>(1.0 / sum));
  }
}
}  // namespace

Evaluation evaluate(nn::Module& model, data::DataLoader& loader, const EvaluateOptions& options) {
  NoGradGuard no_grad;
  EvalModeGuard eval_mode(model);
  Evaluation out{ClassificationMetrics(options.num_classes, options.top_k), {}, {}, {}, false, {}, {}};
  loader.set_epoch(0);
  for (const data::Batch& batch : loader) {
    if (options.should_stop && options.should_stop()) {
      out.stopped = true;
      break;
    }
    Tensor x = batch.input.to(options.device), y = batch.target.to(options.device);
    Tensor logits = model.forward(x);
    Tensor loss = options.loss ? options.loss(logits, y) : nn::functional::cross_entropy(logits, y);
    out.metrics.update(logits, y, loss.item<double>(), options.keep_predictions ? &out.predictions : nullptr);
    if (options.keep_predictions && is_floating(batch.target.dtype())) {
      const std::vector<double> o = logits.to_vector<double>(), t = batch.target.to_vector<double>();
      out.outputs.insert(out.outputs.end(), o.begin(), o.end());
      out.actual.insert(out.actual.end(), t.begin(), t.end());
    } else if (options.keep_predictions) {
      const std::vector<int64_t> t = batch.target.to_vector<int64_t>();
      out.targets.insert(out.targets.end(), t.begin(), t.end());
      append_top_probabilities(logits, out.probabilities);
    }
  }
  return out;
}

}  // namespace kiln::train
