// Optimizer: the base of SGD, Adam, AdamW and RMSprop (torch.optim.Optimizer with
// one parameter group).
//
// An optimizer holds handles to the parameters it updates; step() reads each
// parameter's .grad() (parameters without a gradient are skipped, as torch) and
// writes the update into the parameter's own storage under NoGradGuard, so the
// module that owns the parameter sees it. Per-parameter state (momentum buffers,
// moment estimates) is created lazily on the parameter's device at its first step.
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/tensor.h"

namespace kiln::optim {

// What a checkpoint stores of an optimizer (engine/io writes it).
//  tensors: "state.<i>.<name>" for parameter i, e.g. "state.0.exp_avg".
//  scalars: "lr" and the other hyper-parameters by torch's names ("momentum",
//           "weight_decay", "beta1", ...), and "state.<i>.step" step counts.
struct OptimizerState {
  std::vector<std::pair<std::string, Tensor>> tensors;
  std::map<std::string, double> scalars;
};

class Optimizer {
 public:
  // ValueError when params is empty or lr < 0.
  Optimizer(std::vector<Tensor> params, double lr);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter that has a gradient.
  virtual void step() = 0;
  // Drops the parameters' gradients (torch's zero_grad(set_to_none=True)).
  void zero_grad();

  double lr() const { return lr_; }
  void set_lr(double lr);  // ValueError when negative
  const std::vector<Tensor>& params() const { return params_; }

  // Per-parameter step counts (0 before a parameter's first step), as state_dict's
  // "state.<i>.step". set_step_counts() replaces them, e.g. to count the steps that a
  // recorded step() made when replayed on the device (engine/train/captured_step.h) or to
  // undo the count of a recording that failed. ValueError when the size differs from
  // params().size() or a count is negative.
  const std::vector<int64_t>& step_counts() const { return steps_; }
  void set_step_counts(std::vector<int64_t> counts);

  // What a step() recorded by Backend::begin_capture does when replayed (Backend::replay):
  //  follows_lr:  every update is one fused adam_step, which takes lr and step count from
  //               the replay's ReplayArgs, so a scheduler and the bias corrections are followed
  //  fixed_lr:    the recording keeps the lr it saw; the update does not depend on the step
  //               count (SGD, RMSprop): replayable while the lr stays (the default)
  //  not_replayable: the recording would keep host-computed step-dependent constants
  //               (Adam's bias corrections without the fused kernel, e.g. amsgrad)
  // Valid after a step(); the answer may depend on the device (which ops it fuses).
  enum class ReplayMode { follows_lr, fixed_lr, not_replayable };
  virtual ReplayMode replay_mode() const { return ReplayMode::fixed_lr; }

  OptimizerState state_dict() const;
  // Restores state saved by the same kind of optimizer over the same parameters.
  // ValueError when a tensor's shape differs from its parameter's or a parameter index
  // is out of range; hyper-parameters missing from `state` keep their current values.
  void load_state_dict(const OptimizerState& state);

 protected:
  // Per-parameter state tensors, created by the subclass (zeros of the param's shape).
  Tensor& state(size_t i, const std::string& name);
  bool has_state(size_t i, const std::string& name) const;
  // Increments and returns parameter i's step count (1 at its first step).
  int64_t next_step(size_t i) { return ++steps_[i]; }
  // Hyper-parameters other than lr, by name, for state_dict / load_state_dict.
  virtual std::map<std::string, double> hyperparameters() const { return {}; }
  virtual void set_hyperparameters(const std::map<std::string, double>& h) {}

  std::vector<Tensor> params_;
  double lr_;

 private:
  std::vector<std::map<std::string, Tensor>> state_;
  std::vector<int64_t> steps_;
};

}  // namespace kiln::optim
