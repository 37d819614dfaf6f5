// The network analyzer's quick measurement: a few training steps of a graph at a batch size
// on one device, timed as `kiln bench` times its models (engine/train/step_timing.h).
#pragma once
#include <functional>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/device.h"
#include "engine/core/random.h"
#include "engine/core/tensor.h"
#include "engine/graph/analysis.h"
#include "engine/graph/graph.h"

namespace kiln::graph {

struct StepTimeOptions {
  int64_t batch = 32;              // samples per step, >= 1
  int steps = 5;                   // timed steps, >= 1
  int warmup = 2;                  // untimed steps first (plans, caches, optimizer state), >= 0
  std::string optimizer = "adam";  // optim::make_optimizer's name, its default settings
};

struct StepTime {
  Device device;
  double ms_per_step = 0;        // mean over the timed steps completed; 0 when none was
  double images_per_second = 0;  // batch * 1000 / ms_per_step; 0 when none was
  int steps = 0;                 // timed steps completed
  bool cancelled = false;        // cancelled() turned true before every step was taken
  uint64_t peak_bytes = 0;       // the backend's peak of bytes held by tensors so far
  bool peak_known = false;       // the backend tracks its memory (MemoryStats::tracked)
};

// Random inputs of the graph's Input types (a: analyze(g)) at `batch`, drawn on the CPU from
// `gen` and moved to `device` (so every device gets the same values for one seed): floating
// uniform [0, 1); integer ids uniform in [1, n) with n the smallest Embedding's num_embeddings,
// else 2, so that none is the padding id 0. ValueError when an input has a symbolic dimension
// besides N.
std::vector<Tensor> random_inputs(const Graph& g, const Analysis& a, int64_t batch, const Device& device,
                                  Generator& gen);

// The loss a measured step trains with, one term per Output summed: cross-entropy against
// random labels (drawn on the CPU from `gen`, moved to `device`) for an output [N, K] with
// K >= 2 (a classifier, as kiln train), else the mean squared error against zeros.
class StepLoss {
 public:
  StepLoss(const Graph& g, const Analysis& a, int64_t batch, const Device& device, Generator& gen);
  // outputs in g.output_nodes() order -> a scalar. ValueError on a wrong count.
  Tensor operator()(const std::vector<Tensor>& outputs);

 private:
  Device device_;
  std::vector<bool> classify_;
  std::vector<Tensor> targets_;  // undefined: zeros, made at the first call
};

// Builds the graph's GraphModule on `device` (parameters from default_generator()), feeds it
// random_inputs at options.batch and times options.steps training steps (train::train_step
// on StepLoss) after options.warmup. `cancelled` (may be empty) is asked before every step, so a cancel
// waits for at most one step (e.g. an std::atomic<bool> another thread sets). Throws ValueError when the graph cannot run (GraphModule's
// message naming the nodes), when an input has a symbolic dimension besides N (no size to
// draw), for batch < 1 or steps < 1; DeviceError for an unknown device; the backend's errors
// (out of memory) as they come.
StepTime measure_step_time(const Graph& graph, const Device& device, const StepTimeOptions& options,
                           const std::function<bool()>& cancelled = {});

}  // namespace kiln::graph
