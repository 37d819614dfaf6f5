// Per-layer profile (issue 20, "Per-layer profile"): the time and memory of each node of a graph
// in a training step on one device, forward and backward separately, and the same step timed
// without profiling, so that a reader can see how much of the step the per-layer figures explain.
//
// Note [Per-layer timing]
// A step is zero_grad (not timed), forward, the loss (StepLoss, engine/graph/step_time.h) and
// backward; no optimizer update, which belongs to no layer. Every timed region is bracketed by
// Backend::synchronize() and read from the host's steady_clock, so the figures are wall time
// including each region's launch and sync gap; no CUDA- or Vulkan-specific code is needed (the
// backends' synchronize() waits for their streams and queues).
//  - forward: the device is synchronized before the forward and after each node (a
//    GraphModule::OutputHook); a node's time runs from the end of the previous node's bookkeeping
//    to that sync.
//  - backward: an autograd::BackwardHookGuard synchronizes before and after each autograd node's
//    work; the node's time goes to the graph node whose forward made that autograd node (found by
//    walking back from the node's outputs' grad_fn to the autograd nodes no earlier graph node
//    claimed). Autograd nodes of no graph node (the loss's) are loss_backward_ms.
// Because every node (and every autograd node) ends in a sync, a GPU cannot overlap one node's
// launches with the previous node's kernels, and the whole step is run as separate kernels: this
// is why the per-layer sum is compared with step_ms, the same step with profiling off but also
// without CUDA-graph capture or fusion (eager, synchronized only at its ends), not with the
// captured, fused step kiln train runs; the CPU runs its kernels synchronously and pays almost
// nothing for the syncs.
// Figures are interquartile means: the profiled steps are ranked by their total time and the
// middle half kept (a step that a busy machine preempted, or a cold cache slowed, is dropped
// whole), and each figure is its mean over the kept steps. Means of the same steps add up: the
// per-layer sum plus the loss and outside_ms is exactly profiled_step_ms, so the rows explain the
// profiled step. (Per-node medians, the statistic before, do not: each node has its own
// right-skewed noise, and their sum came out 10-17% below the median step on a busy 2-core CPU.)
// step_ms is the interquartile mean of the unprofiled steps, so layer_sum_ms / step_ms measures
// what profiling adds (the syncs) plus the noise between the two kinds of step.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/graph/graph.h"

namespace kiln::graph {

struct ProfileOptions {
  int64_t batch = 32;             // samples per step, >= 1
  std::string precision = "f32";  // f32, bf16 or f16 (autocast as kiln train --precision)
  int steps = 10;                 // timed steps, >= 1; figures are interquartile means (see the Note)
  int warmup = 2;                 // untimed steps first (plans, caches, allocator), >= 0
};

struct LayerTime {
  NodeId node = -1;
  std::string name, op;   // the graph node's name and op
  double forward_ms = 0;  // the node's forward, milliseconds (an interquartile mean, see the Note)
  double backward_ms = 0; // its autograd nodes' backward work, ms (likewise)
  bool has_backward = false;    // some backward work was attributed to the node
  bool has_parameters = false;  // the node has parameters that require grad
  uint64_t output_bytes = 0;    // bytes of the node's outputs (numel * dtype size, all ports)
  // Bytes held by tensors after the node's forward minus before it (its outputs plus what it
  // saved for backward, less what it freed), in the last timed step; nullopt when the backend
  // does not track its memory (MemoryStats::tracked).
  std::optional<int64_t> forward_alloc_bytes;
  double total_ms() const { return forward_ms + backward_ms; }
};

struct LayerProfile {
  std::string device;     // as Device::str() writes it
  std::string name;       // DeviceInfo::name
  std::string precision;  // as asked
  int64_t batch = 0;
  int steps = 0;   // timed steps completed (< options.steps when cancelled)
  bool cancelled = false;
  std::vector<LayerTime> layers;  // every node but Input and Output, in topological order
  // All ms, interquartile means (see the Note).
  double loss_forward_ms = 0;     // the loss after the last node
  double loss_backward_ms = 0;    // the backward work of no graph node
  double profiled_step_ms = 0;    // a whole step with profiling on
  double step_ms = 0;             // the same step with profiling off (its own steps' interquartile mean)
  // A profiled step's time outside every timed region (the profiler's bookkeeping, the backward
  // pass's ordering): what no row or loss figure explains. layer_sum_ms + loss_forward_ms +
  // loss_backward_ms + outside_ms == profiled_step_ms (up to rounding).
  double outside_ms = 0;
  // The backend's peak of bytes held by tensors since the process started (MemoryStats::
  // peak_allocated); nullopt when the backend cannot tell.
  std::optional<uint64_t> peak_bytes;

  // Sum over layers of forward_ms + backward_ms, ms.
  double layer_sum_ms() const;
  // A layer's share of the per-layer sum, percent: 100 * layer.total_ms() / layer_sum_ms()
  // (0 when the sum is 0), so the shares add up to 100.
  double share_percent(const LayerTime& layer) const;
};

// Profiles a training step of `graph` on `device` ("cpu", "cuda:0", "vulkan:0") as the Note above
// says, with `options.warmup` untimed then `options.steps` timed steps, a profiled step and an
// unprofiled one alternating so that both see the same machine. Parameters are drawn from
// default_generator(), inputs and labels from Generator(1) (random_inputs, StepLoss) on the CPU.
// `cancelled` (may be empty) is asked before each step; once true, the figures are those of the
// steps completed. Throws ValueError for batch < 1, steps < 1 or warmup < 0, an unknown
// precision or one the device does not run, a graph that cannot run (GraphModule's message
// naming the nodes) or an input with a symbolic dimension besides N; DeviceError (or ValueError
// for a malformed name) for an unknown device; the backend's errors (out of memory) as they come.
LayerProfile profile_layers(const Graph& graph, const std::string& device, const ProfileOptions& options,
                            const std::function<bool()>& cancelled = {});

// The profile as JSON (docs: `kiln bench --graph FILE --profile --json`): {"device", "name",
// "precision", "batch_size", "steps", "interrupted", "step_ms", "profiled_step_ms",
// "layer_sum_ms", "outside_ms", "loss_forward_ms", "loss_backward_ms", "peak_memory_bytes", "layers":
// [{"node", "name", "op", "forward_ms", "backward_ms", "total_ms", "share_percent",
// "has_backward", "has_parameters", "output_bytes", "forward_alloc_bytes"}, ...]}, layers in
// topological order, unknown figures null; indented by 2, sorted keys.
std::string profile_json(const LayerProfile& profile);

// Reads profile_json's document back (a stored profile, projects/project.h ProfileRecord):
// profile_json(profile_from_json(t)) == t for any t profile_json wrote. "device", "precision",
// "batch_size", "steps" and "layers" (each with "name", "op", "forward_ms", "backward_ms") are
// needed; the other figures default to LayerProfile's. Throws ValueError naming the key (and the
// layer's index) for text that is not JSON, a missing key or a value of the wrong type.
LayerProfile profile_from_json(const std::string& json);

}  // namespace kiln::graph
