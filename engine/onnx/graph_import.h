// ONNX model -> graph::Graph (engine/graph), the one graph type of the workbench.
//
// Every ONNX op Kiln runs is an op schema "onnx.<OpType>" (category "ONNX") in the
// OpRegistry, registered by register_onnx_schemas(). An imported node keeps its ONNX form:
//   num_inputs        connected input ports (the ONNX inputs that are given)
//   onnx_input_slots  the ONNX input index of each port (optional inputs may be omitted)
//   onnx_outputs      number of ONNX outputs
//   onnx_attributes   the node's ONNX attributes as JSON ({"perm": {"ints": [0, 2, 1]}, ...})
//   opset             the ai.onnx opset the model imports
//   onnx_types        the input and output types seen at import ("f32[N, 64];i64[2] -> f32[N, 10]")
//   onnx_names        the node's name and its input and output value names in the model
//                     (JSON {"node": "/conv1/Conv", "inputs": ["x", "w"], "outputs": ["y"]}),
//                     which export (export.h) writes again
// Shape inference of these nodes returns the output types recorded at import, after checking
// that the inputs still have the recorded types (a symbolic dimension, N, "sequence" or "?",
// matches anything), with each recorded symbol replaced by the dim the inputs now have in its
// place. Kiln's shapes come from running the model twice at import with every symbolic
// dimension at two sizes of its own (graph_import_symbols.h, Note [Symbols at import]): a
// dim that follows one is that symbol ("f32[N, sequence, 768]"), one that follows none "?".
// Native nodes (from opset 13 on; below 17 only when every node maps): each ONNX node that an
// op schema claims (OpSchema::onnx_import, engine/graph/ops_onnx.cpp) becomes that native op,
// its initializers the node's entries of Graph::initial_state ("<node>.weight"); Identity
// nodes are removed; the rest stay onnx.<Op> as below (graph_import_native.h, Note [Native
// import]).
// Initializers and Constant nodes that onnx.<Op> nodes or graph outputs read become "onnx.Initializer" nodes (attributes shape, dtype,
// trainable, onnx_name: the value's name in the model) whose module holds the tensor as parameter "value" (a buffer when not
// trainable): GraphModule's state_dict key "<node>.value"; Graph::initial_state (and
// ImportedGraph::state_dict) holds the model's values under those keys.
// A value whose dims may depend on the contents of a graph input (Unsqueeze's axes, Reshape's
// shape, Resize's sizes ... fed by a graph input: graph_import_values.h, Note [Values at
// import]) has "?" dims, or the model's declared dims where it is a graph output that declares
// them: the example run's ones give its dims for ones only.
// Graph inputs become Input nodes (the first dimension is the batch: N where the model's
// dimension is symbolic, else the model's size as Input's "batch"; every later dim_param is
// -1 in "shape" and named in "dim_params": input_ids [batch, sequence] is shape [-1],
// dim_params "sequence"), outputs Output nodes.
#pragma once
#include <string>
#include <vector>

#include "engine/graph/graph.h"
#include "engine/graph/op_schema.h"
#include "engine/nn/module.h"
#include "engine/onnx/executor.h"

namespace kiln::onnx {

// Adds the "onnx.*" schemas (every op of onnx_ops(), and onnx.Initializer) to `registry`;
// does nothing for names already there, so calling it twice is fine.
void register_onnx_schemas(graph::OpRegistry& registry = graph::OpRegistry::global());

// The types of an onnx_types side ("f32[N, 3];i64[2]", "" = none). ValueError when malformed.
std::vector<graph::TensorType> parse_recorded_types(const std::string& types);

struct ImportedGraph {
  graph::Graph graph;        // its initial_state holds the model's weights
  nn::StateDict state_dict;  // graph.initial_state as a StateDict (for GraphModule::load_state_dict, export)
  // Nodes kept as onnx.<Op> although a native op claims their type, and initializers copied
  // into several native nodes, each naming the node (graph_import_native.h).
  std::vector<std::string> warnings;
};

// Maps the model's nodes to graph nodes, after folding its shape-only subgraphs
// (fold_shape_subgraphs: they become onnx.Initializer nodes) (names made identifiers: "/conv1/Conv" -> "conv1_Conv").
// Throws UnsupportedError listing every op Kiln cannot run, ValueError for graph inputs whose
// dtype the Input op cannot take (f32, i64), for a graph input dim with neither a dim_value
// >= 0 nor a dim_param name (or a name with , ; [ ]: naming the input and dim), for sequence inputs,
// and what running the model once on example inputs throws (naming the node); where the
// run fails and a node reads a graph input's contents as a shape, axes, counts or indexes,
// ValueError names that node and input ("node 'r' (Reshape): its shape is the graph input
// 'shape'; ...": make it an initializer). Ops Kiln's executor runs that have no graph IR op
// (control flow, sequence and string ops) are a ValueError saying which kind the op is.
ImportedGraph import_graph(const Model& model);

}  // namespace kiln::onnx
