// The graph rewrite passes (rewrite.h) that prepare a trained graph for inference and for
// int8 lowering (engine/quant):
//   FoldBatchNorm    BatchNorm2d after Conv2d, BatchNorm1d after Linear ([N, C] only), folded
//                    into the layer's weight and bias with the running statistics;
//   FuseActivation   Conv2d + ReLU and Linear + ReLU marked as one kernel (Fusion markers).
// Both leave a candidate alone (with a line in RewriteContext::log saying why) when the layer's
// output has any other reader, so the rewritten graph computes the same function.
#pragma once
#include "engine/graph/rewrite.h"

namespace kiln::graph {

// Folding (torch.nn.utils.fusion.fuse_conv_bn_weights / fuse_linear_bn_weights):
//   s = gamma / sqrt(running_var + eps)             per output channel c
//   W'[c, ...] = W[c, ...] * s[c]
//   b'[c] = (b[c] - running_mean[c]) * s[c] + beta[c]    (b = 0 when the layer has no bias)
// gamma = 1, beta = 0 without affine. The layer gets bias = true, the BatchNorm node is removed
// and its readers read the layer. Needs the layer's weight in graph.initial_state (a node without
// it is left alone and logged); missing batch-norm entries are its initialization (ones, zeros,
// mean 0, var 1, as GraphModule would build it). A BatchNorm with track_running_stats = false
// normalizes by batch statistics even in eval mode and is not folded. Computes in f64 and
// stores the layer's dtype. ShapeError naming the node when an entry's shape is wrong.
class FoldBatchNorm : public GraphPass {
 public:
  std::string name() const override { return "FoldBatchNorm"; }
  bool apply(RewriteContext& ctx) const override;
};

// Marks Conv2d -> ReLU and Linear -> ReLU where the ReLU is the only reader of the layer's
// output (Fusion{layer, relu, "ReLU"}); the graph itself is unchanged.
class FuseActivation : public GraphPass {
 public:
  std::string name() const override { return "FuseActivation"; }
  bool apply(RewriteContext& ctx) const override;
};

// FoldBatchNorm then FuseActivation.
PassRunner inference_passes();

}  // namespace kiln::graph
