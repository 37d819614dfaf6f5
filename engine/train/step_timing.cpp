#include "engine/train/step_timing.h"

#include <chrono>

#include "engine/core/registry.h"

namespace kiln::train {

TimedSteps time_steps(const Device& device, int steps, const std::function<void()>& step,
                      const std::function<bool()>& stop) {
  using Clock = std::chrono::steady_clock;
  Backend* b = backend_for(device);
  b->synchronize();
  const auto t0 = Clock::now();
  TimedSteps r;
  for (; r.done < steps && !(stop && stop()); ++r.done) step();
  b->synchronize();
  if (r.done > 0) r.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / r.done;
  return r;
}

double train_step(optim::Optimizer& optimizer, const std::function<Tensor()>& loss) {
  optimizer.zero_grad();
  Tensor l = loss();
  const double value = l.item<double>();
  l.backward();
  optimizer.step();
  return value;
}

}  // namespace kiln::train
