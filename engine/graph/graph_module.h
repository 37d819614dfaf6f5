// GraphModule: any valid graph as a trainable nn::Module (torch.fx.GraphModule's role).
// Each node that builds a module becomes a child named after the node, so state_dict
// keys read "conv1.weight"; children are registered in topological order. Works on any
// device through Module::to and trains with train::Trainer like any model.
// A node with trainable == false (graph.h) is frozen: its parameters do not require grad
// (pass trainable_parameters() to the optimizer) and its layers stay in eval mode, so a
// batch norm uses its running statistics even in training (PyTorch's fine-tuning recipe).
//
// Padding masks (DESIGN): a text graph's Input node yields token ids i64 [N, T] (dtype "i64",
// shape [T]); the text datasets pad with id 0 (<pad>, engine/data/text/tokenizer.h) and no token
// has id 0, so the padding mask is a function of the ids: mask = (ids != 0) as f32 [N, T]. The
// GraphModule computes it once per forward from the first such Input (padding_mask_input) and
// passes it to every node whose schema sets takes_padding_mask (SequencePool, RNN, LSTM, GRU,
// MultiheadAttention, TransformerEncoderLayer), as one more argument after its ports. Deriving it from the
// ids rather than taking data::Batch::mask as a second model input keeps a text model a
// one-input nn::Module: train::Trainer (its CUDA-graph capture included), evaluation, `kiln
// predict` and ONNX export feed it like any other model, and the mask can never disagree with
// the ids (TextDataset's Batch::mask equals it, which tests check). A graph without such an
// input (features [N, T, C]) hands an undefined mask: every step is valid.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/graph/analysis.h"
#include "engine/graph/graph.h"
#include "engine/nn/module.h"

namespace kiln::graph {

// The position in g.input_nodes() of the Input whose ids give the padding mask: the first with
// dtype i64 and a one-entry shape ([N, T]); nullopt when there is none.
std::optional<size_t> padding_mask_input(const Graph& g);

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
  // Called after each node other than Input and Output runs, with the node and its outputs (one
  // per port), which it may replace: the later nodes read the replacements (as a forward hook
  // that returns a value in torch.nn.Module.register_forward_hook). engine/explain reads a layer's
  // activations and makes them a leaf this way.
  using OutputHook = std::function<void(const Node& node, std::vector<Tensor>& outputs)>;
  // forward(inputs) with `hook` (which may be empty) called after each node.
  std::vector<Tensor> forward(const std::vector<Tensor>& inputs, const OutputHook& hook);
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
  std::optional<size_t> mask_input_;                // padding_mask_input(graph_)
  bool needs_mask_ = false;                         // a node takes the padding mask
};

}  // namespace kiln::graph
