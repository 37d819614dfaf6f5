// Classification metrics accumulated over batches.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/core/tensor.h"

namespace kiln::train {

class ClassificationMetrics {
 public:
  explicit ClassificationMetrics(int64_t num_classes, int64_t top_k = 5);
  // logits [B, C] (any floating dtype/device), target i64 [B], loss = the batch's mean loss.
  // ShapeError when the shapes do not fit num_classes. predictions: when given, each sample's
  // top-1 class (the first largest logit, as counted in confusion()) is appended to it.
  // A floating target (regression: output [B, 1], target f32 [B, 1], e.g. with mse_loss) counts
  // samples and loss only; accuracy() and top_k_accuracy() are then NaN.
  void update(const Tensor& logits, const Tensor& target, double loss, std::vector<int64_t>* predictions = nullptr);
  int64_t count() const { return count_; }
  int64_t correct() const { return correct_; }  // top-1 hits so far
  double loss() const;            // mean loss per sample
  double accuracy() const;        // top-1, fraction in [0, 1]
  double top_k_accuracy() const;  // fraction whose target is among the k largest logits
  int64_t top_k() const { return top_k_; }
  // confusion[t * C + p] = samples of true class t predicted as p.
  const std::vector<int64_t>& confusion() const { return confusion_; }
  int64_t num_classes() const { return num_classes_; }

  // The sums so far as named numbers ("count", "correct", "correct_k", "loss_sum", "regression",
  // "confusion.<t*C+p>" for the non-zero cells), so that a checkpoint taken in the middle of an
  // epoch (Trainer) carries the epoch's metrics; load_state_dict restores them exactly.
  // load_state_dict: ValueError naming the key for a missing count or a cell outside C x C.
  std::map<std::string, double> state_dict() const;
  void load_state_dict(const std::map<std::string, double>& state);

 private:
  int64_t num_classes_, top_k_;
  int64_t count_ = 0, correct_ = 0, correct_k_ = 0;
  bool regression_ = false;
  double loss_sum_ = 0;
  std::vector<int64_t> confusion_;
};

}  // namespace kiln::train
