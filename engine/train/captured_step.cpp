#include "engine/train/captured_step.h"

#include <cstdlib>
#include <cstring>
#include <exception>

#include "engine/core/random.h"
#include "engine/core/registry.h"

namespace kiln::train {

// Note [Replays follow the optimizer]
// A recorded adam_step reads lr and step = (step at recording) + step_offset from the
// graph's device buffer, which Backend::replay writes before each launch. The recorded
// step() already counted its own step on the host, so its first launch (run() right after
// recording) passes offset 0 and counts nothing more; every later launch passes
// offset = count_now + 1 - count_recorded (eager steps in between included) and then adds
// one to the count of each parameter the recorded step() updated.

CapturedStep::CapturedStep(Device device, optim::Optimizer& optimizer, int warmup, bool enabled)
    : device_(device), optimizer_(optimizer), warmup_(warmup < 1 ? 1 : warmup), enabled_(enabled) {
  const char* env = std::getenv("KILN_CUDA_GRAPH");
  if (env && std::strcmp(env, "0") == 0) enabled_ = false, note_ = "recording turned off (KILN_CUDA_GRAPH=0)";
  else if (!enabled_) note_ = "recording turned off";
}

CapturedStep::~CapturedStep() {
  try {
    if (graph_ > 0) backend_for(device_)->release_graph(graph_);
  } catch (const std::exception&) {  // the device is gone: nothing left to free
  }
}

void CapturedStep::give_up(std::string why) {
  enabled_ = false;
  note_ = std::move(why);
}

void CapturedStep::run(const std::function<void()>& step) {
  if (graph_ > 0) {
    if (optimizer_.lr() == recorded_lr_ || optimizer_.replay_mode() == optim::Optimizer::ReplayMode::follows_lr)
      return replay();
    // The recording keeps the lr it saw: record again, or stay eager when the lr moves every step.
    backend_for(device_)->release_graph(graph_);
    graph_ = 0;
    if (replays_ < kMinReplays) {
      give_up("the learning rate changes every step (a per-batch schedule) and this optimizer's recorded "
              "update keeps the rate it was recorded with (only Adam/AdamW's fused step follows it)");
      return step();
    }
    return record(step);
  }
  if (!enabled_ || calls_++ < warmup_) return step();
  if (optimizer_.replay_mode() == optim::Optimizer::ReplayMode::not_replayable) {
    give_up("the optimizer computes step-dependent constants on the host (Adam with amsgrad, or "
            "without the device's fused adam_step), which a recording would keep");
    return step();
  }
  record(step);
}

void CapturedStep::record(const std::function<void()>& step) {
  Backend* be = backend_for(device_);
  std::string why;
  if (!be->begin_capture(why)) {
    give_up(why);
    return step();
  }
  const std::vector<int64_t> before = optimizer_.step_counts();
  const double lr = optimizer_.lr();
  recording_ = true;
  try {
    step();
    graph_ = be->end_capture();
  } catch (const std::exception& e) {
    recording_ = false;
    be->abort_capture();
    optimizer_.set_step_counts(before);  // the recorded step never ran
    give_up(std::string("the step could not be recorded: ") + e.what());
    return step();
  }
  recording_ = false;
  ++recordings_;
  recorded_lr_ = lr;
  recorded_steps_ = optimizer_.step_counts();
  stepped_.assign(before.size(), false);
  for (size_t i = 0; i < before.size(); ++i) stepped_[i] = recorded_steps_[i] != before[i];
  replays_ = 0;
  note_.clear();
  be->replay(graph_, {lr, 0, random_key()});  // the recorded step itself, counted by step() already
  ++replays_;
}

void CapturedStep::replay() {
  std::vector<int64_t> counts = optimizer_.step_counts();
  Backend::ReplayArgs args;
  args.lr = optimizer_.lr();
  args.rng_key = random_key();  // the recorded dropout draws' key (Backend::bernoulli)
  for (size_t i = 0; i < counts.size(); ++i)
    if (stepped_[i]) {
      args.step_offset = counts[i] + 1 - recorded_steps_[i];
      break;
    }
  backend_for(device_)->replay(graph_, args);
  ++replays_;
  for (size_t i = 0; i < counts.size(); ++i)
    if (stepped_[i]) ++counts[i];
  optimizer_.set_step_counts(std::move(counts));
}

}  // namespace kiln::train
