// A training step recorded once and replayed (CUDA graphs through Backend::begin_capture),
// so that a small model's step costs one launch instead of hundreds.
//
//   CapturedStep graph(device);            // KILN_CUDA_GRAPH=0 or enabled=false: always eager
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
// its inputs from tensors whose storage stays, not read anything back (no item(), no loss
// scaling with skipped steps) and not change host-side settings the kernels take as
// arguments (the learning rate of a scheduler: the recording keeps the value it saw;
// Adam's step count is counted on the device). Where recording is impossible (a backend
// without it, or the step waits for the device or uploads host data) run() stays eager
// and note() says why; the failed attempt is repeated eagerly, so no step is lost.
#pragma once
#include <functional>
#include <string>

#include "engine/core/device.h"

namespace kiln::train {

class CapturedStep {
 public:
  explicit CapturedStep(Device device, int warmup = 3, bool enabled = true);
  void run(const std::function<void()>& step);
  bool replaying() const { return graph_ > 0; }
  // Why the step runs eagerly ("" while replaying or still warming up).
  const std::string& note() const { return note_; }

 private:
  Device device_;
  int warmup_;
  bool enabled_;
  int calls_ = 0;
  int64_t graph_ = 0;
  std::string note_;
};

}  // namespace kiln::train
