#include "app/cli/train_balance.h"

#include "engine/core/error.h"
#include "engine/data/class_balance.h"

namespace kiln::cli {

ClassBalance class_balance(const TrainConfig& c, std::unique_ptr<data::DataLoader>& train, int64_t classes,
                           bool regression, const std::string& what, Device device) {
  ClassBalance b;
  b.summary["class_weights"] = c.class_weights;
  b.summary["sampler"] = c.sampler;
  const bool weighted_sampler = c.sampler == "weighted";
  if (c.class_weights == "none" && !weighted_sampler) return b;
  KILN_CHECK(!regression, ValueError, "--class-weights and --sampler weighted balance classes; ", what,
             " is a regression (its label is a number, not a class)");
  const std::vector<int64_t> labels = data::sample_labels(train->dataset());
  const std::vector<int64_t> counts = data::class_counts(labels, classes);
  b.summary["train_class_counts"] = counts;
  b.loss_weights = data::class_weights(c.class_weights, counts, "--class-weights");
  if (!b.loss_weights.empty()) {
    b.summary["class_weights"] = b.loss_weights;
    b.weight = Tensor::from_vector(std::vector<float>(b.loss_weights.begin(), b.loss_weights.end()), {classes})
                   .to(device);
  }
  if (weighted_sampler) {
    data::DataLoader::Options o = train->options();
    o.sample_weights = data::inverse_frequency_sample_weights(labels, classes);
    train = std::make_unique<data::DataLoader>(train->dataset_ptr(), o);
  }
  return b;
}

}  // namespace kiln::cli
