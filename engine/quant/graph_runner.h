// Runs a one-input, one-output graph with a hook per node: the int8 model (int8_model.h) and the
// calibrator replace or watch chosen nodes, every other node runs as in GraphModule (its schema's
// module, started from graph.initial_state). The modules start in eval mode; a module that
// registers them (QatModel, qat.h) may switch them to training. No autograd unless asked.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "engine/graph/analysis.h"
#include "engine/graph/graph.h"
#include "engine/nn/module.h"

namespace kiln::quant {

class GraphRunner {
 public:
  // Returns the node's output when the hook computes it, nullopt to run the node's schema.
  using Hook = std::function<std::optional<Tensor>(const graph::Node&, const std::vector<Tensor>& inputs)>;
  // ValueError listing the problems when the graph cannot run, or when it has not exactly one
  // Input and one Output, or a node with several outputs.
  explicit GraphRunner(const graph::Graph& g);
  // x of the Input's type -> the Output's tensor. ShapeError when x's per-sample shape is not
  // the Input's.
  // grad: record autograd (quantization-aware training); false runs under NoGradGuard.
  Tensor run(const Tensor& x, const Hook& hook, bool grad = false) const;
  // Moves the float modules to `device`.
  void to(const Device& device);
  std::shared_ptr<nn::Module> module(graph::NodeId id) const;  // null for a stateless node
  const graph::Graph& graph() const { return graph_; }
  const graph::Analysis& analysis() const { return analysis_; }

 private:
  graph::Graph graph_;
  graph::Analysis analysis_;
  std::vector<graph::NodeId> order_;
  std::vector<std::shared_ptr<nn::Module>> modules_;  // per order_ entry
};

}  // namespace kiln::quant
