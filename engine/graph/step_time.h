// The network analyzer's quick measurement: a few training steps of a graph at a batch size
// on one device, timed as `kiln bench` times its models (engine/train/step_timing.h).
#pragma once
#include <functional>
#include <cstdint>
#include <string>

#include "engine/core/device.h"
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

// Builds the graph's GraphModule on `device` (parameters from default_generator()), feeds it
// random inputs of each Input's type at options.batch (floating: uniform [0, 1); integer:
// ids uniform in [1, n) with n the smallest Embedding's num_embeddings, else 2, so that none is
// the padding id 0) and times options.steps training steps (train::train_step) after
// options.warmup. The loss: cross-entropy against random labels for an output [N, K] with
// K >= 2 (a classifier, as kiln train), else the mean squared error against zeros; summed
// over several outputs. `cancelled` (may be empty) is asked before every step, so a cancel
// waits for at most one step (e.g. an std::atomic<bool> another thread sets). Throws ValueError when the graph cannot run (GraphModule's
// message naming the nodes), when an input has a symbolic dimension besides N (no size to
// draw), for batch < 1 or steps < 1; DeviceError for an unknown device; the backend's errors
// (out of memory) as they come.
StepTime measure_step_time(const Graph& graph, const Device& device, const StepTimeOptions& options,
                           const std::function<bool()>& cancelled = {});

}  // namespace kiln::graph
