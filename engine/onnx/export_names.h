// Internal to engine/onnx export (export.cpp): the ONNX names of a graph's values and nodes.
//
// An imported model keeps its own names: each value is named as the model named it (the
// onnx_names attribute of imported nodes, graph_import.h: a node's own outputs, and for graph
// inputs and initializers the name a consuming imported node recorded), each imported node
// its model's node name, and a graph output the value its Output node receives, so no
// Identity node is added. Studio nodes are named after the graph node ("fc1"), and a value
// that feeds an Output node takes that Output's name ("logits"). An Output needs an Identity
// node (named like the Output) only when it receives a graph input directly, or a value that
// an earlier Output (by id) already receives (an initializer may be a graph output itself). Names stay unique:
// a recorded name already given to another value falls back to the generated one
// ("<node>", "<node>:<port>", "<node>.value"), suffixed "_1", "_2", ... when that is taken too.
#pragma once
#include <map>
#include <set>
#include <string>

#include "engine/graph/graph.h"

namespace kiln::onnx::detail {

struct ExportNames {
  std::map<graph::PortRef, std::string> values;  // every output port's value ("" for an unused omitted output)
  std::map<graph::NodeId, std::string> nodes;    // ONNX node name of each imported node
  std::map<graph::NodeId, std::string> outputs;  // Output node -> the graph output's value name
  std::set<graph::NodeId> identity_outputs;      // Output nodes written as an Identity node
};

// Names for every node of `g` (which analyzes cleanly: each Output is connected).
ExportNames assign_names(const graph::Graph& g);

}  // namespace kiln::onnx::detail
