// A training step recorded once and replayed (CUDA graphs through Backend::begin_capture),
// so that a small model's step costs one launch instead of hundreds.
//
//   CapturedStep graph(device, opt);       // KILN_CUDA_GRAPH=0 or enabled=false: always eager
//   for (...) {
//     x_static.copy_(batch_x); y_static.copy_(batch_y);   // same storage every step
//     graph.run([&] { opt.zero_grad(); loss = F::cross_entropy(model(x_static), y_static);
//                     loss.backward(); opt.step(); });
//     loss.item<float>();                   // the tensor made while recording, rewritten by each replay
//   }
//
// run() calls the step eagerly `warmup` times (plans, algorithm searches, optimizer state
// and gradients get made), then records one call and replays the recording from then on
// (the recorded call itself runs as the first replay). The step must keep its shapes, read
// its inputs from tensors whose storage stays, and not read anything back while recording()
// (no item(), no loss scaling with skipped steps).
//
// The optimizer the step calls is followed (Note [Replays follow the optimizer]): each
// replay passes its current lr and step count to the device (Backend::ReplayArgs) and then
// advances its per-parameter step counts (Optimizer::set_step_counts), so state_dict() and
// checkpoints count replayed steps, and an eager step between replays (another shape: the
// last partial batch) is counted on both sides. An optimizer whose recorded update keeps its
// lr (Optimizer::ReplayMode::fixed_lr: SGD, RMSprop) is recorded again when the lr changed,
// unless the previous recording was replayed fewer than kMinReplays times (a per-batch
// schedule such as OneCycleLR): then it stays eager. Where recording is impossible (a backend
// without it, an optimizer that is not_replayable, a step that waits for the device or
// uploads host data, e.g. dropout's mask) run() stays eager and note() says why; the failed
// attempt is repeated eagerly (step counts restored), so no step is lost.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "engine/core/device.h"
#include "engine/optim/optimizer.h"

namespace kiln::train {

class CapturedStep {
 public:
  // A recording replayed fewer times than this before a fixed_lr optimizer's lr changed
  // means the lr changes (nearly) every step: recording is given up.
  static constexpr int kMinReplays = 4;

  // optimizer: the one the step calls; it must outlive this object. warmup < 1 counts as 1.
  CapturedStep(Device device, optim::Optimizer& optimizer, int warmup = 3, bool enabled = true);
  ~CapturedStep();
  CapturedStep(const CapturedStep&) = delete;
  CapturedStep& operator=(const CapturedStep&) = delete;

  void run(const std::function<void()>& step);
  bool replaying() const { return graph_ > 0; }
  // True once run() stays eager for good (recording off, impossible, or given up).
  bool eager_for_good() const { return !enabled_ && graph_ == 0; }
  // True while run() records the step: the step must then not read the device.
  bool recording() const { return recording_; }
  // Why the step runs eagerly ("" while replaying or still warming up).
  const std::string& note() const { return note_; }
  int recordings() const { return recordings_; }  // successful recordings so far

 private:
  void record(const std::function<void()>& step);
  void replay();
  void give_up(std::string why);

  Device device_;
  optim::Optimizer& optimizer_;
  int warmup_;
  bool enabled_;
  bool recording_ = false;
  int calls_ = 0;
  int recordings_ = 0;
  int64_t graph_ = 0;
  int64_t replays_ = 0;            // launches of the current recording
  double recorded_lr_ = 0;
  std::vector<int64_t> recorded_steps_;  // the optimizer's step counts right after the recorded step()
  std::vector<bool> stepped_;            // parameters the recorded step() updated
  std::string note_;
};

}  // namespace kiln::train
