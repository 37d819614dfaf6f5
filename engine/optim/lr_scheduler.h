// Learning-rate schedulers (torch.optim.lr_scheduler), as closed forms of the epoch
// (step) count. Constructing one sets the optimizer's lr to the epoch-0 value (as
// torch's constructor does); step() advances the count by one and sets the lr.
// The base lr is the optimizer's lr at construction (torch's 'initial_lr').
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "engine/optim/optimizer.h"

namespace kiln::optim {

class LRScheduler {
 public:
  explicit LRScheduler(Optimizer& optimizer);
  virtual ~LRScheduler() = default;
  void step();
  double get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  double base_lr() const { return base_lr_; }
  // The lr at a given epoch (no side effects).
  virtual double lr_at(int64_t epoch) const = 0;
  // {"last_epoch", "base_lr"} for checkpoints; loading also sets the optimizer's lr.
  std::map<std::string, double> state_dict() const;
  void load_state_dict(const std::map<std::string, double>& state);

 protected:
  void initialize();  // derived constructors call this last: epoch 0, lr = lr_at(0)
  Optimizer& optimizer_;
  double base_lr_;

 private:
  void apply();
  int64_t last_epoch_ = 0;
  double last_lr_ = 0;
};

// base_lr * gamma^floor(epoch / step_size). ValueError for step_size < 1.
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);
  double lr_at(int64_t epoch) const override;
  const int64_t step_size;
  const double gamma;
};

// base_lr * gamma^epoch.
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma);
  double lr_at(int64_t epoch) const override;
  const double gamma;
};

// eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2 (SGDR without restarts,
// torch's _get_closed_form_lr). ValueError for T_max < 1.
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0);
  double lr_at(int64_t epoch) const override;
  const int64_t T_max;
  const double eta_min;
};

// base_lr * (start_factor + (end_factor - start_factor) * min(epoch, total_iters) / total_iters)
// (torch.optim.lr_scheduler.LinearLR). ValueError unless 0 < start_factor <= 1, 0 <= end_factor <= 1.
class LinearLR : public LRScheduler {
 public:
  LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0, int64_t total_iters = 5);
  double lr_at(int64_t epoch) const override;
  const double start_factor, end_factor;
  const int64_t total_iters;
};

// Linear warm-up from start_factor * base_lr to base_lr over warmup_steps steps, then
// constant: LinearLR(optimizer, start_factor, 1.0, warmup_steps).
class LinearWarmup : public LinearLR {
 public:
  LinearWarmup(Optimizer& optimizer, int64_t warmup_steps, double start_factor = 1.0 / 3)
      : LinearLR(optimizer, start_factor, 1.0, warmup_steps) {}
};

// The 1cycle policy (Smith & Topin 2018; torch.optim.lr_scheduler.OneCycleLR) with cosine
// annealing: from max_lr / div_factor up to max_lr over pct_start * total_steps - 1 steps,
// then down to max_lr / div_factor / final_div_factor at step total_steps - 1; with
// three_phase, back to the initial lr at 2 * pct_start * total_steps - 2 before the final
// descent. Ignores the optimizer's lr; does not cycle momentum (torch's
// cycle_momentum=False). step() past total_steps throws ValueError (as torch).
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, double max_lr, int64_t total_steps, double pct_start = 0.3,
             double div_factor = 25.0, double final_div_factor = 1e4, bool three_phase = false);
  double lr_at(int64_t epoch) const override;
  const double max_lr;
  const int64_t total_steps;
  const double pct_start, div_factor, final_div_factor;
  const bool three_phase;
};

}  // namespace kiln::optim
