#include "app/cli/optim_factory.h"

#include "engine/core/error.h"
#include "engine/optim/adam.h"
#include "engine/optim/sgd.h"

namespace kiln::cli {

std::shared_ptr<optim::Optimizer> make_optimizer(const TrainConfig& c, std::vector<Tensor> params) {
  if (c.optimizer == "sgd")
    return std::make_shared<optim::SGD>(std::move(params),
                                        optim::SGDOptions{.lr = c.lr, .momentum = c.momentum, .weight_decay = c.weight_decay});
  if (c.optimizer == "adam")
    return std::make_shared<optim::Adam>(std::move(params), optim::AdamOptions{.lr = c.lr, .weight_decay = c.weight_decay});
  if (c.optimizer == "adamw")
    return std::make_shared<optim::AdamW>(std::move(params),
                                          optim::AdamWOptions{.lr = c.lr, .weight_decay = c.weight_decay});
  throw ValueError("unknown optimizer '" + c.optimizer + "'; known: sgd, adam, adamw");
}

std::shared_ptr<optim::LRScheduler> make_scheduler(const TrainConfig& c, optim::Optimizer& optimizer,
                                                   int64_t batches_per_epoch, bool& per_batch) {
  per_batch = false;
  if (c.scheduler == "none") return nullptr;
  if (c.scheduler == "step") return std::make_shared<optim::StepLR>(optimizer, c.step_size, c.gamma);
  if (c.scheduler == "cosine") return std::make_shared<optim::CosineAnnealingLR>(optimizer, c.epochs);
  if (c.scheduler == "onecycle") {
    per_batch = true;
    return std::make_shared<optim::OneCycleLR>(optimizer, c.lr, c.epochs * batches_per_epoch);
  }
  throw ValueError("unknown scheduler '" + c.scheduler + "'; known: none, step, cosine, onecycle");
}

}  // namespace kiln::cli
