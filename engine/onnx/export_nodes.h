// Internal to engine/onnx export (export.cpp): the mapping of one graph node to ONNX nodes.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/graph/analysis.h"
#include "engine/graph/graph.h"

namespace onnx {
class GraphProto;
class NodeProto;
}  // namespace onnx

namespace kiln::onnx::detail {

struct ExportContext {
  ::onnx::GraphProto* graph;
  const std::map<std::string, Tensor>& params;  // the state_dict by key
  int64_t opset;
  std::map<std::string, int> used;              // initializer names already added
  // The ONNX value of the token ids the padding mask comes from (graph::padding_mask_input,
  // graph_module.h), "" when the graph has none: SequencePool's export recomputes the mask from it.
  std::string padding_mask_ids = {};
};

// The ONNX value of a node's output port: the node name, "<name>:<port>" for later ports;
// "<name>.value" (the initializer) for onnx.Initializer nodes.
std::string value_name(const graph::Node& n, int port);
::onnx::NodeProto* add_node(ExportContext& ctx, const std::string& op, const std::string& name,
                            const std::vector<std::string>& inputs, const std::vector<std::string>& outputs);
// The state_dict entry `key` of node `node` (op `op`) as an initializer named `onnx_name` ("" =
// `key`), added once, checked against `type`; ValueError naming the node when missing or different.
void add_initializer(ExportContext& ctx, const std::string& node, const std::string& op, const std::string& key,
                     const graph::TensorType& type, const std::string& onnx_name = "");
// An imported node as its ONNX node `node_name` with these input and output values.
void export_imported(ExportContext& ctx, const graph::Node& n, const std::vector<std::string>& inputs,
                     const std::vector<std::string>& outputs, const std::string& node_name);
// A native node through its schema's onnx_export (engine/graph/onnx_export.h); ValueError
// "export: node 'X': op 'Y' has no ONNX mapping yet" when the schema has none.
void export_native(ExportContext& ctx, const graph::Node& n, const graph::NodeInfo& info,
                   const std::vector<std::string>& inputs);

}  // namespace kiln::onnx::detail
