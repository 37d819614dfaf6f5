#include "engine/train/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "engine/core/error.h"

namespace kiln::train {

ClassificationMetrics::ClassificationMetrics(int64_t num_classes, int64_t top_k)
    : num_classes_(num_classes), top_k_(std::min(top_k, num_classes)),
      confusion_(static_cast<size_t>(num_classes * num_classes), 0) {
  KILN_CHECK(num_classes > 0, ValueError, "ClassificationMetrics: num_classes must be positive");
}

void ClassificationMetrics::update(const Tensor& logits, const Tensor& target, double loss,
                                   std::vector<int64_t>* predictions) {
  if (is_floating(target.dtype())) {  // regression: loss only
    KILN_CHECK(logits.dim() >= 1 && target.dim() >= 1 && target.size(0) == logits.size(0), ShapeError,
               "metrics: output ", shape_str(logits.shape()), " and target ", shape_str(target.shape()),
               " differ in batch size");
    regression_ = true;
    count_ += target.size(0);
    loss_sum_ += loss * static_cast<double>(target.size(0));
    return;
  }
  KILN_CHECK(logits.dim() == 2 && logits.size(1) == num_classes_ && target.dim() == 1 &&
                 target.size(0) == logits.size(0),
             ShapeError, "metrics: logits ", shape_str(logits.shape()), " and target ", shape_str(target.shape()),
             " do not fit [B, ", num_classes_, "] and [B]");
  std::vector<float> l = logits.to_vector<float>();
  std::vector<int64_t> t = target.to_vector<int64_t>();
  const int64_t c = num_classes_;
  for (size_t i = 0; i < t.size(); ++i) {
    const float* row = l.data() + i * static_cast<size_t>(c);
    int64_t pred = std::max_element(row, row + c) - row;
    int64_t truth = t[i];
    KILN_CHECK(truth >= 0 && truth < c, IndexError, "metrics: target class ", truth, " is out of range [0, ", c, ")");
    if (predictions) predictions->push_back(pred);
    correct_ += pred == truth;
    int64_t above = 0;  // classes scoring strictly higher than the target
    for (int64_t j = 0; j < c; ++j) above += row[j] > row[truth];
    correct_k_ += above < top_k_ && !std::isnan(row[truth]);  // a NaN score ranks nowhere
    ++confusion_[static_cast<size_t>(truth * c + pred)];
  }
  count_ += static_cast<int64_t>(t.size());
  loss_sum_ += loss * static_cast<double>(t.size());
}

double ClassificationMetrics::loss() const { return count_ ? loss_sum_ / static_cast<double>(count_) : NAN; }
double ClassificationMetrics::accuracy() const {
  return count_ && !regression_ ? static_cast<double>(correct_) / static_cast<double>(count_) : NAN;
}
double ClassificationMetrics::top_k_accuracy() const {
  return count_ && !regression_ ? static_cast<double>(correct_k_) / static_cast<double>(count_) : NAN;
}

std::map<std::string, double> ClassificationMetrics::state_dict() const {
  std::map<std::string, double> s{{"count", static_cast<double>(count_)},
                                  {"correct", static_cast<double>(correct_)},
                                  {"correct_k", static_cast<double>(correct_k_)},
                                  {"loss_sum", loss_sum_},
                                  {"regression", regression_ ? 1.0 : 0.0}};
  for (size_t i = 0; i < confusion_.size(); ++i)
    if (confusion_[i]) s["confusion." + std::to_string(i)] = static_cast<double>(confusion_[i]);
  return s;
}

void ClassificationMetrics::load_state_dict(const std::map<std::string, double>& state) {
  auto get = [&](const char* key) {
    auto it = state.find(key);
    KILN_CHECK(it != state.end(), ValueError, "ClassificationMetrics: the state lacks '", key, "'");
    return it->second;
  };
  count_ = static_cast<int64_t>(get("count"));
  correct_ = static_cast<int64_t>(get("correct"));
  correct_k_ = static_cast<int64_t>(get("correct_k"));
  loss_sum_ = get("loss_sum");
  regression_ = get("regression") != 0;
  std::fill(confusion_.begin(), confusion_.end(), 0);
  for (const auto& [key, value] : state) {
    if (key.rfind("confusion.", 0) != 0) continue;
    const long long i = std::atoll(key.c_str() + 10);
    KILN_CHECK(i >= 0 && i < static_cast<long long>(confusion_.size()), ValueError, "ClassificationMetrics: '", key,
               "' is outside the ", num_classes_, " x ", num_classes_, " confusion matrix");
    confusion_[static_cast<size_t>(i)] = static_cast<int64_t>(value);
  }
}

}  // namespace kiln::train
