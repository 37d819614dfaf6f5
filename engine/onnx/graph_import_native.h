// Internal to graph_import.cpp: the loop that turns the ONNX nodes into graph nodes, native
// ones (OpSchema::onnx_import, engine/graph/ops_onnx.cpp) where a schema claims the node and
// the mapping holds, onnx.<Op> ones otherwise. Note [Native import]:
// - ONNX Identity nodes are removed (their readers read the Identity's input: for an Identity
//   of a constant, as PyTorch writes for tied weights, that constant), but for one whose output
//   is a graph output (a native Identity keeps the model's node).
// - Constants (initializers, folded values, Constant nodes) a native node consumes become its
//   state_dict entries in Graph::initial_state ("<node>.weight"); an onnx.Initializer node is
//   made only for a constant an onnx.<Op> node (or a graph output) reads.
// - An initializer that several native nodes consume is copied into each (a warning names
//   them: training lets the copies diverge).
// - Chains fuse into one native node: x * Sigmoid(x) -> SiLU, MatMul + bias Add -> Linear, and
//   GELU's Erf form (x / sqrt 2, Erf, + 1, * x, * 0.5, as torch.onnx and Kiln's own export write
//   F.gelu) -> GELU, named after the chain's last node; a chain whose fused node does not fit
//   is added node by node.
// - Fallbacks are warnings naming the node: "node '/conv1/Conv' (Conv) stays onnx.Conv: its
//   weight (input 1) is computed at run time, not an initializer".
#pragma once
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/graph/graph.h"
#include "engine/onnx/model.h"

namespace kiln::onnx::detail {

struct NativeImportContext {
  const Graph& g;                                 // the (folded) ONNX graph
  int64_t opset = 0;
  const std::map<std::string, graph::TensorType>& types;  // of every value (the import's runs)
  const std::map<std::string, Tensor>& constants;         // initializers and Constant outputs
  const std::set<std::string>& trainable;                 // the names of initializers (not Constant nodes)
  graph::Graph& out;
  std::map<std::string, graph::PortRef>& producer;  // value name -> graph port (Inputs given)
  std::set<std::string>& taken;                     // node names used
  std::vector<std::string>& warnings;
  // Makes a graph identifier of an ONNX name, unique in `taken` (graph_import.cpp).
  std::function<std::string(const std::string&)> identifier;
  // Adds onnx.<Op> node `n` (its inputs already in `producer`).
  std::function<void(const Node&)> add_onnx_node;
};

// Adds every node of ctx.g (native where `native`, else all onnx.<Op>) and the Output nodes.
void add_graph_nodes(NativeImportContext& ctx, bool native);

}  // namespace kiln::onnx::detail
