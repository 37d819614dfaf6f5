// Captured inference runs (SessionOptions::cuda_graph): a session on a device that can record
// its work (CUDA graphs, Backend::begin_capture) runs each set of input shapes plainly once,
// records the second run and replays the recording from then on, so a batch-1 model costs one
// launch instead of one per kernel. Internal to engine/onnx (executor.cpp).
//
// What makes a run replayable: its inputs are copied into tensors that stay (the recording
// reads them), host values reach the device through the first run's copies (HostCopies in
// op_context.h, checked to be the same bytes), and nothing reads the device while recording:
// a node that would (data-dependent shapes, a CPU fallback, a host op) makes the recording
// fail; that shape key then stays eager for good, with the reason in note().
#pragma once
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "engine/core/device.h"
#include "engine/onnx/op_context.h"

namespace kiln::onnx::detail {

class CapturedRuns {
 public:
  static constexpr size_t kMaxShapes = 8;  // input shape sets recorded per session; more run eagerly
  CapturedRuns(Device device, bool enabled);
  ~CapturedRuns();  // releases the recorded graphs
  CapturedRuns(const CapturedRuns&) = delete;
  CapturedRuns& operator=(const CapturedRuns&) = delete;

  // A plain run of the graph on inputs already on the device, reading host values through
  // `copies` when it is not null.
  using RunFn = std::function<std::vector<Value>(const std::map<std::string, Value>& inputs, HostCopies* copies)>;
  // The outputs for `inputs` (on the device), from a replay when this shape set was recorded;
  // else from `run`. Outputs are the caller's own (not rewritten by later runs).
  std::vector<Value> run(const std::map<std::string, Value>& inputs, const RunFn& run);
  // "replaying 1 input shape set", or why runs stay eager.
  std::string note() const;

 private:
  struct Entry {
    int runs = 0;
    int64_t graph = 0;                      // Backend graph id, 0 before recording
    std::map<std::string, Tensor> inputs;   // what the recording reads
    std::vector<Value> outputs;             // what each replay rewrites
    HostCopies copies;
    std::string failed;                     // why this shape set stays eager
  };
  Device device_;
  bool enabled_;
  std::string off_reason_;
  mutable std::mutex mutex_;
  std::map<std::string, Entry> entries_;
};

}  // namespace kiln::onnx::detail
