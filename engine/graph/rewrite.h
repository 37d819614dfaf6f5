// Graph rewrite framework: passes over the one IR (graph.h) and a runner, in the style of
// onnxruntime's graph transformers (onnxruntime/core/optimizer/graph_transformer.h and
// graph_transformer_mgr.cc: each transformer reports whether it modified the graph, and the
// manager repeats its list until a round changes nothing or a step limit is reached).
//
// A pass rewrites RewriteContext::graph in place, its parameter values included
// (Graph::initial_state, keyed "conv1.weight"), and may attach markers the graph's schemas
// cannot hold: a Fusion says that a producer (Conv2d, Linear) and the activation that alone
// reads it run as one kernel (the int8 lowering, engine/quant, takes them as a post-op).
// Passes are for inference: they read batch-norm running statistics (eval mode).
// Shared by quantization (engine/quant) and CPU inference.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "engine/graph/graph.h"
#include "engine/nn/module.h"

namespace kiln::graph {

// `activation` (a ReLU node) is the only reader of `producer`'s output (a Conv2d or Linear
// node); a lowering that honours the marker computes relu(producer(x)) in one kernel and lets
// the activation node pass its input through.
struct Fusion {
  NodeId producer = -1;
  NodeId activation = -1;
  std::string activation_op;  // "ReLU"
  bool operator==(const Fusion&) const = default;
};

struct RewriteContext {
  Graph graph;
  std::vector<Fusion> fusions;
  std::vector<std::string> log;  // one line per change, and per candidate left alone with the reason
  const Fusion* fusion_of_producer(NodeId producer) const;    // nullptr when none
  const Fusion* fusion_of_activation(NodeId activation) const;  // nullptr when none
};

class GraphPass {
 public:
  virtual ~GraphPass() = default;
  virtual std::string name() const = 0;  // "FoldBatchNorm"
  // Applies the pass once over the whole graph; returns whether ctx changed (the graph or its
  // markers). Throws kiln::Error naming the node when a parameter it needs is malformed.
  virtual bool apply(RewriteContext& ctx) const = 0;
};

class PassRunner {
 public:
  PassRunner& add(std::unique_ptr<GraphPass> pass);
  // Runs the passes in order, and again while a round changed something, at most max_rounds
  // rounds (onnxruntime's GraphTransformerManager steps). The graph must run before
  // (analyze(graph).ok(); ValueError listing the problems otherwise) and still runs after every
  // pass (ValueError naming the pass and the problems otherwise: a bug in that pass).
  RewriteContext run(Graph graph, int max_rounds = 8) const;
  std::vector<std::string> names() const;

 private:
  std::vector<std::unique_ptr<GraphPass>> passes_;
};

// Copies a module's state (GraphModule::state_dict(): "conv1.weight" ...) into
// graph.initial_state as CPU tensors, so that passes see the trained values.
void store_state(Graph& graph, const nn::StateDict& state);

}  // namespace kiln::graph
