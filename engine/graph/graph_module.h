// GraphModule: any valid graph as a trainable nn::Module (torch.fx.GraphModule's role).
// Each node that builds a module becomes a child named after the node, so state_dict
// keys read "conv1.weight"; children are registered in topological order. Works on any
// device through Module::to and trains with train::Trainer like any model.
// A node with trainable == false (graph.h) is frozen: its parameters do not require grad
// (pass trainable_parameters() to the optimizer) and its layers stay in eval mode, so a
// batch norm uses its running statistics even in training (PyTorch's fine-tuning recipe).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "engine/graph/analysis.h"
#include "engine/graph/graph.h"
#include "engine/nn/module.h"

namespace kiln::graph {

class GraphModule : public nn::Module {
 public:
  // ValueError "the graph cannot run: <problems, one per line with the node name>" when
  // !analyze(g).ok(). Parameters are drawn from kiln::default_generator() (as each layer),
  // then every one that graph.initial_state holds with the same shape and dtype is copied
  // from there (an edited layer whose shape changed keeps its fresh initialization).
  explicit GraphModule(const Graph& graph);
  // One Input, one Output: x of the Input's type -> the Output's tensor.
  // ValueError when the graph has several inputs or outputs.
  Tensor forward(const Tensor& x) override;
  // inputs in input_nodes() order -> outputs in output_nodes() order. ValueError on a
  // wrong count; ShapeError when an input's per-sample shape is not the Input node's.
  std::vector<Tensor> forward(const std::vector<Tensor>& inputs);
  // The parameters of trainable nodes (requires_grad true), in parameters() order.
  std::vector<Tensor> trainable_parameters() const;
  // Module::train, then eval mode again for the layers of frozen nodes.
  void train(bool on = true) override;
  const Graph& graph() const { return graph_; }
  const Analysis& analysis() const { return analysis_; }
  std::string type_name() const override { return "GraphModule"; }

 private:
  void load_initial_state(const std::string& node, nn::Module& m);
  Graph graph_;
  Analysis analysis_;
  std::vector<NodeId> order_;                       // topological
  std::vector<std::shared_ptr<nn::Module>> modules_;  // per order_ entry (null: stateless)
};

}  // namespace kiln::graph
