// Timing training steps on a device: the measurement `kiln bench` and the network analyzer
// (engine/graph/step_time.h) share, so that both report the same kind of figure.
#pragma once
#include <functional>

#include "engine/core/device.h"
#include "engine/core/tensor.h"
#include "engine/optim/optimizer.h"

namespace kiln::train {

struct TimedSteps {
  double ms = 0;  // mean wall milliseconds per completed call; 0 when none completed
  int done = 0;   // calls completed (< the calls asked for when stop() turned true)
};

// Calls `step` up to `steps` times, checking stop() (may be empty) before each call, with
// the device synchronized before the clock starts and before it is read, so that queued
// work is counted (steady_clock).
TimedSteps time_steps(const Device& device, int steps, const std::function<void()>& step,
                      const std::function<bool()>& stop = {});

// One optimization step as the Trainer takes it: zero_grad, loss(), reading the loss (one
// device round trip, as the Trainer's NaN check), backward, optimizer.step(). Returns the
// loss value.
double train_step(optim::Optimizer& optimizer, const std::function<Tensor()>& loss);

}  // namespace kiln::train
