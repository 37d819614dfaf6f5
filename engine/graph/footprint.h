// The network analyzer's estimates before training (MATLAB's analyzeNetwork, and beyond it):
// activation memory per node for a chosen batch size and dtype, the memory a training step
// needs, and warnings about a network's shape, each attached to a node id.
//
// Note [Training memory estimate]
// For batch B, floating dtype D (bytes d) and an optimizer keeping k state tensors per
// parameter, with P all parameter elements and T those of trainable nodes:
//   activations     = sum over nodes of their outputs' elements at batch B times the element
//                     size (d for floating outputs, the output's own size for integer ones,
//                     e.g. i64 token ids); the Input's batch is one of them. All of them are
//                     counted as kept for backward (reverse-mode autodiff keeps each op's
//                     inputs; the Output node passes its input on and adds nothing).
//   parameters      = P * d
//   gradients       = T * d                  (one .grad per trainable parameter)
//   optimizer state = k * T * d              (Adam/AdamW: exp_avg and exp_avg_sq, k = 2;
//                                             SGD: momentum_buffer, k = 1 with momentum > 0,
//                                             else 0; RMSprop: square_avg, plus
//                                             momentum_buffer with momentum > 0)
//   training        = activations + parameters + gradients + optimizer state
// This is the accounting of ZeRO (Rajbhandari et al. 2020, section 3.1: parameters,
// gradients and optimizer states, plus "residual states", the activations). It errs high
// where an op's output is a view of its input (Flatten, Reshape share storage) and low by
// an op's temporary workspace (im2col buffers, cuDNN workspaces) and allocator caching.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/core/backend.h"
#include "engine/core/dtype.h"
#include "engine/graph/analysis.h"
#include "engine/graph/graph.h"

namespace kiln::graph {

struct MemoryOptions {
  int64_t batch = 1;               // samples per step, >= 1
  DType dtype = DType::f32;        // of parameters and floating activations
  std::string optimizer = "adam";  // optim::optimizer_names(): sgd, adam, adamw, rmsprop
  double momentum = 0.9;           // sgd and rmsprop (optim::OptimizerConfig's default)
};

// State tensors the optimizer keeps per parameter (Note [Training memory estimate]).
// ValueError "unknown optimizer 'lion'; known: sgd, adam, adamw, rmsprop".
int optimizer_state_slots(const std::string& optimizer, double momentum);

// All in bytes, saturating at INT64_MAX.
struct MemoryEstimate {
  // Every node of the analysis whose outputs have a known size: the bytes of its outputs
  // at the batch size. A node whose output has a symbolic dimension besides N ("sequence",
  // "?") is absent and listed in `unknown`; it counts 0 in the totals.
  std::map<NodeId, int64_t> activation_bytes;
  std::vector<NodeId> unknown;
  int64_t activations = 0, parameters = 0, gradients = 0, optimizer_state = 0;
  int64_t training = 0;  // the sum of the four
};

// Note [Training memory estimate]. ValueError for batch < 1, a non-floating dtype or an
// unknown optimizer. Nodes that `analysis` lacks (they cannot run) count nothing.
MemoryEstimate estimate_memory(const Graph& graph, const Analysis& analysis, const MemoryOptions& options);

struct Warning {
  NodeId node = -1;
  std::string kind;     // "dominant_macs", "large_linear_after_flatten", "memory"
  std::string message;  // plain words, naming the node and the figures
  bool operator==(const Warning&) const = default;
};

// Where the warnings fire; the defaults are Kiln's choice (no standard exists).
struct WarningThresholds {
  double macs_share = 0.5;  // a node doing more than this share of the multiply-adds
  // A Linear fed by a Flatten with more parameters than linear_parameters, or with more
  // than linear_share of the model's parameters once the model has at least
  // linear_share_min_parameters (a small classifier's first Linear is naturally its bulk).
  int64_t linear_parameters = 10'000'000;
  double linear_share = 0.8;
  int64_t linear_share_min_parameters = 1'000'000;
};

// The warnings, in this order:
//   dominant_macs: each node doing more than thresholds.macs_share of the total multiply-
//     adds, when at least two nodes do any (one layer alone is not "dominating");
//   large_linear_after_flatten: each Linear whose input comes from a Flatten and that is
//     too large (WarningThresholds);
//   memory: for each device whose memory_bytes (the backend's query; system RAM for the
//     CPU) is known (> 0) and below memory.training, attached to the node with the largest
//     activation (-1 when none is known).
std::vector<Warning> network_warnings(const Graph& graph, const Analysis& analysis, const MemoryEstimate& memory,
                                      int64_t batch, const std::vector<DeviceInfo>& devices,
                                      const WarningThresholds& thresholds = {});

// "1.5 GiB", "320 B", "12.0 MiB" (binary units, one decimal above bytes).
std::string bytes_str(int64_t bytes);
// "12,345,678" (thousands separated by commas).
std::string count_str(int64_t n);
// Multiply-adds in decimal units: "864", "225.8 k", "4.24 M", "1.05 G".
std::string macs_str(int64_t macs);

}  // namespace kiln::graph
