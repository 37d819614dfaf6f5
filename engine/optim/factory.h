// The optimizer and learning-rate scheduler of a training run, by name: the one factory that
// `kiln train` (app/cli) and Kiln Studio (app/studio) both build theirs with, so that a name
// means the same in both. Names are torch.optim's class names in lower case.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/optim/lr_scheduler.h"
#include "engine/optim/optimizer.h"

namespace kiln::optim {

// Fields a name does not use are ignored (momentum for adam, ...); everything else is
// torch.optim's default (betas (0.9, 0.999), eps 1e-8, RMSprop's alpha 0.99, no nesterov).
struct OptimizerConfig {
  std::string name = "adam";  // one of optimizer_names()
  double lr = 1e-3;           // Adam's default (torch.optim.Adam; Kingma & Ba 2015)
  double momentum = 0.9;      // sgd and rmsprop (torch.optim's default is 0; Kiln trains with 0.9)
  double weight_decay = 0;    // L2 added to the gradient (sgd, adam, rmsprop); decoupled for adamw
                              // (0, not torch.optim.AdamW's 1e-2, so that switching name keeps it)
};

// "sgd", "adam", "adamw", "rmsprop": SGD, Adam, AdamW, RMSprop (engine/optim/*.h).
const std::vector<std::string>& optimizer_names();

// The optimizer `config.name` names over `params`. ValueError "unknown optimizer 'lion';
// known: sgd, adam, adamw, rmsprop" for another name; the optimizers' own ValueErrors for
// out-of-range values (negative lr, momentum, weight_decay).
std::shared_ptr<Optimizer> make_optimizer(const OptimizerConfig& config, std::vector<Tensor> params);

struct SchedulerConfig {
  std::string name = "none";    // one of scheduler_names()
  int64_t epochs = 1;           // of the run: cosine's T_max, and onecycle's total steps with
  int64_t steps_per_epoch = 1;  // the batches per epoch (onecycle only)
  int64_t step_size = 0;        // step: epochs between decays; 0: default_step_size(epochs)
  double gamma = 0.1;           // step: decay factor (torch.optim.lr_scheduler.StepLR's default)
};

// "none", "step", "cosine", "onecycle".
const std::vector<std::string>& scheduler_names();

// StepLR's step size when none is given: a decay after each third of the run, max(1, epochs / 3).
int64_t default_step_size(int64_t epochs);

struct Scheduler {
  std::shared_ptr<LRScheduler> scheduler;  // null for "none"
  bool per_batch = false;  // step() after every batch (onecycle), else after every epoch
};

// none: no scheduler; step: StepLR(step_size, gamma) per epoch; cosine: CosineAnnealingLR(
// T_max = epochs) per epoch; onecycle: OneCycleLR(max_lr = the optimizer's lr now,
// total_steps = epochs * steps_per_epoch) per batch, torch's other defaults. Constructing
// one sets the optimizer's lr to the schedule's first value (lr_scheduler.h).
// ValueError "unknown scheduler 'x'; known: none, step, cosine, onecycle" for another name,
// for epochs < 1 (but none) and steps_per_epoch < 1 (onecycle).
Scheduler make_scheduler(const SchedulerConfig& config, Optimizer& optimizer);

}  // namespace kiln::optim
