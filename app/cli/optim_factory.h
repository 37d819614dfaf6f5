// The optimizer and learning-rate scheduler `kiln train` builds from its flags.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "app/cli/train_config.h"
#include "engine/optim/lr_scheduler.h"
#include "engine/optim/optimizer.h"

namespace kiln::cli {

// sgd: SGD(lr, momentum, weight_decay); adam: Adam(lr, weight_decay); adamw: AdamW(lr,
// weight_decay); the other hyper-parameters are torch.optim's defaults.
std::shared_ptr<optim::Optimizer> make_optimizer(const TrainConfig& config, std::vector<Tensor> params);

// none: null; step: StepLR(step_size, gamma) per epoch; cosine: CosineAnnealingLR(T_max =
// epochs) per epoch; onecycle: OneCycleLR(max_lr = lr, total_steps = epochs *
// batches_per_epoch) per batch (per_batch is set to true).
std::shared_ptr<optim::LRScheduler> make_scheduler(const TrainConfig& config, optim::Optimizer& optimizer,
                                                   int64_t batches_per_epoch, bool& per_batch);

}  // namespace kiln::cli
