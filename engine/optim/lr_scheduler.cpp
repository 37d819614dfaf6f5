#include "engine/optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/core/error.h"

namespace kiln::optim {

// ---------------------------------------------------------------- base

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer), base_lr_(optimizer.lr()) {}

void LRScheduler::initialize() {
  last_epoch_ = 0;
  apply();
}

void LRScheduler::apply() {
  last_lr_ = lr_at(last_epoch_);
  optimizer_.set_lr(last_lr_);
}

void LRScheduler::step() {
  ++last_epoch_;
  apply();
}

std::map<std::string, double> LRScheduler::state_dict() const {
  return {{"last_epoch", static_cast<double>(last_epoch_)}, {"base_lr", base_lr_}};
}

void LRScheduler::load_state_dict(const std::map<std::string, double>& state) {
  auto epoch = state.find("last_epoch");
  KILN_CHECK(epoch != state.end(), ValueError, "LRScheduler load_state_dict: missing key last_epoch");
  if (auto it = state.find("base_lr"); it != state.end()) base_lr_ = it->second;
  last_epoch_ = static_cast<int64_t>(epoch->second);
  apply();
}

// ---------------------------------------------------------------- schedules

StepLR::StepLR(Optimizer& optimizer, int64_t step_size_, double gamma_)
    : LRScheduler(optimizer), step_size(step_size_), gamma(gamma_) {
  KILN_CHECK(step_size >= 1, ValueError, "StepLR: step_size must be at least 1, got ", step_size);
  initialize();
}

double StepLR::lr_at(int64_t epoch) const {
  return base_lr_ * std::pow(gamma, static_cast<double>(epoch / step_size));
}

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma_) : LRScheduler(optimizer), gamma(gamma_) {
  initialize();
}

double ExponentialLR::lr_at(int64_t epoch) const { return base_lr_ * std::pow(gamma, static_cast<double>(epoch)); }

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max_, double eta_min_)
    : LRScheduler(optimizer), T_max(T_max_), eta_min(eta_min_) {
  KILN_CHECK(T_max >= 1, ValueError, "CosineAnnealingLR: T_max must be at least 1, got ", T_max);
  initialize();
}

double CosineAnnealingLR::lr_at(int64_t epoch) const {
  double c = std::cos(M_PI * static_cast<double>(epoch) / static_cast<double>(T_max));
  return eta_min + (base_lr_ - eta_min) * (1 + c) / 2;
}

LinearLR::LinearLR(Optimizer& optimizer, double start, double end, int64_t total)
    : LRScheduler(optimizer), start_factor(start), end_factor(end), total_iters(total) {
  KILN_CHECK(start > 0 && start <= 1, ValueError,
             "LinearLR: starting multiplicative factor expected to be greater than 0 and less or equal to 1, got ",
             start);
  KILN_CHECK(end >= 0 && end <= 1, ValueError,
             "LinearLR: ending multiplicative factor expected to be between 0 and 1, got ", end);
  KILN_CHECK(total >= 0, ValueError, "LinearLR: total_iters must be non-negative, got ", total);
  initialize();
}

double LinearLR::lr_at(int64_t epoch) const {
  if (total_iters == 0) return base_lr_ * end_factor;
  double frac = static_cast<double>(std::min(epoch, total_iters)) / static_cast<double>(total_iters);
  return base_lr_ * (start_factor + (end_factor - start_factor) * frac);
}

OneCycleLR::OneCycleLR(Optimizer& optimizer, double max_lr_, int64_t total, double pct, double div, double final_div,
                       bool three)
    : LRScheduler(optimizer),
      max_lr(max_lr_),
      total_steps(total),
      pct_start(pct),
      div_factor(div),
      final_div_factor(final_div),
      three_phase(three) {
  KILN_CHECK(total_steps > 0, ValueError, "OneCycleLR: expected a positive total_steps, got ", total_steps);
  KILN_CHECK(pct_start >= 0 && pct_start <= 1, ValueError, "OneCycleLR: expected pct_start between 0 and 1, got ",
             pct_start);
  initialize();
}

double OneCycleLR::lr_at(int64_t epoch) const {
  KILN_CHECK(epoch <= total_steps, ValueError, "OneCycleLR: tried to step ", epoch,
             " times; the specified number of total steps is ", total_steps);
  double initial = max_lr / div_factor, min_lr = initial / final_div_factor;
  double total = static_cast<double>(total_steps);
  struct Phase {
    double end_step, start_lr, end_lr;
  };
  std::vector<Phase> phases;
  if (three_phase) {
    phases = {{pct_start * total - 1, initial, max_lr},
              {2 * pct_start * total - 2, max_lr, initial},
              {total - 1, initial, min_lr}};
  } else {
    phases = {{pct_start * total - 1, initial, max_lr}, {total - 1, max_lr, min_lr}};
  }
  // torch's get_lr: the first phase whose end_step is not passed, cosine annealing.
  double step = static_cast<double>(epoch), start_step = 0;
  for (size_t i = 0; i < phases.size(); ++i) {
    const Phase& ph = phases[i];
    if (step <= ph.end_step || i + 1 == phases.size()) {
      double pct = (step - start_step) / (ph.end_step - start_step);
      return ph.end_lr + (ph.start_lr - ph.end_lr) / 2.0 * (std::cos(M_PI * pct) + 1);
    }
    start_step = ph.end_step;
  }
  return min_lr;
}

}  // namespace kiln::optim
