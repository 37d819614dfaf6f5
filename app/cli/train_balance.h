// `kiln train --class-weights none|balanced|W0,W1,... --sampler random|weighted`: imbalanced
// classes (engine/data/class_balance.h), either by weighting the loss per class or by drawing the
// training samples of rare classes more often.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "app/cli/train_config.h"
#include "engine/core/tensor.h"
#include "engine/data/dataloader.h"

namespace kiln::cli {

struct ClassBalance {
  std::vector<double> loss_weights;  // per class (empty: the unweighted loss)
  Tensor weight;                     // loss_weights as f32 [classes] on the training device (or undefined)
  nlohmann::ordered_json summary;    // class_weights, sampler, train_class_counts for summary.json
};

// Reads the training split's labels when --class-weights or --sampler weighted need them, and
// with --sampler weighted replaces `train` by a loader that draws with weights 1 / count of the
// sample's class (seeded from --seed and the epoch, so --resume draws the same). `classes`: the
// model's outputs. ValueError for a regression task (the task named by `what`), and
// class_balance.h's (naming --class-weights) for a bad weight list or a class without samples.
ClassBalance class_balance(const TrainConfig& config, std::unique_ptr<data::DataLoader>& train, int64_t classes,
                           bool regression, const std::string& what, Device device);

}  // namespace kiln::cli
