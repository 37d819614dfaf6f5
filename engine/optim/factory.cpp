#include "engine/optim/factory.h"

#include <algorithm>

#include "engine/core/error.h"
#include "engine/optim/adam.h"
#include "engine/optim/rmsprop.h"
#include "engine/optim/sgd.h"

namespace kiln::optim {

namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

const std::vector<std::string>& optimizer_names() {
  static const std::vector<std::string> names{"sgd", "adam", "adamw", "rmsprop"};
  return names;
}

const std::vector<std::string>& scheduler_names() {
  static const std::vector<std::string> names{"none", "step", "cosine", "onecycle"};
  return names;
}

std::shared_ptr<Optimizer> make_optimizer(const OptimizerConfig& c, std::vector<Tensor> params) {
  if (c.name == "sgd")
    return std::make_shared<SGD>(std::move(params),
                                 SGDOptions{.lr = c.lr, .momentum = c.momentum, .weight_decay = c.weight_decay});
  if (c.name == "adam")
    return std::make_shared<Adam>(std::move(params), AdamOptions{.lr = c.lr, .weight_decay = c.weight_decay});
  if (c.name == "adamw")
    return std::make_shared<AdamW>(std::move(params), AdamWOptions{.lr = c.lr, .weight_decay = c.weight_decay});
  if (c.name == "rmsprop")
    return std::make_shared<RMSprop>(std::move(params),
                                     RMSpropOptions{.lr = c.lr, .weight_decay = c.weight_decay, .momentum = c.momentum});
  throw ValueError("unknown optimizer '" + c.name + "'; known: " + joined(optimizer_names()));
}

int64_t default_step_size(int64_t epochs) { return std::max<int64_t>(1, epochs / 3); }

Scheduler make_scheduler(const SchedulerConfig& c, Optimizer& optimizer) {
  const auto& names = scheduler_names();
  KILN_CHECK(std::find(names.begin(), names.end(), c.name) != names.end(), ValueError, "unknown scheduler '", c.name,
             "'; known: ", joined(names));
  if (c.name == "none") return {};
  KILN_CHECK(c.epochs >= 1, ValueError, "scheduler ", c.name, ": epochs must be at least 1, got ", c.epochs);
  if (c.name == "step")
    return {std::make_shared<StepLR>(optimizer, c.step_size != 0 ? c.step_size : default_step_size(c.epochs), c.gamma)};
  if (c.name == "cosine") return {std::make_shared<CosineAnnealingLR>(optimizer, c.epochs)};
  KILN_CHECK(c.steps_per_epoch >= 1, ValueError, "scheduler onecycle: steps_per_epoch must be at least 1, got ",
             c.steps_per_epoch);
  return {std::make_shared<OneCycleLR>(optimizer, optimizer.lr(), c.epochs * c.steps_per_epoch), true};
}

}  // namespace kiln::optim
