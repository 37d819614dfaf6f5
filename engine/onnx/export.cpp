#include "engine/onnx/export.h"

#include "engine/graph/graph_module.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <fstream>
#include <map>
#include <set>

#include "engine/core/error.h"
#include "engine/graph/analysis.h"
#include "engine/onnx/export_convert.h"
#include "engine/onnx/export_names.h"
#include "engine/onnx/export_nodes.h"
#include "engine/onnx/graph_import.h"
#include "engine/onnx/tensor_proto.h"

namespace kiln::onnx {

using graph::kBatch;

namespace {

// The batch size imported nodes fed by `input` recorded for it (the original model fixed it),
// or kBatch when none did. onnx_types reads "f32[2, 3];i64[2] -> f32[2, 10]".
int64_t recorded_batch(const graph::Graph& g, graph::NodeId input) {
  for (const graph::PortRef& to : g.consumers_of({input, 0})) {
    const graph::Node& n = g.node(to.node);
    if (n.op.rfind("onnx.", 0) != 0 || n.op == "onnx.Initializer") continue;
    std::string types = graph::attr_string(n.attrs, "onnx_types");
    const std::vector<graph::TensorType> in = parse_recorded_types(types.substr(0, types.find(" -> ")));
    const auto port = static_cast<size_t>(to.port);
    if (port < in.size() && !in[port].shape.empty() && !graph::is_symbolic(in[port].shape[0])) return in[port].shape[0];
  }
  return kBatch;
}

// Renames value `from` to `to` in the nodes from index `first` on (a Studio node's output,
// named after the node by export_native, that an Output names: export_names.h).
void rename_value(::onnx::GraphProto* gp, int first, const std::string& from, const std::string& to) {
  if (from == to) return;
  for (int i = first; i < gp->node_size(); ++i) {
    ::onnx::NodeProto* node = gp->mutable_node(i);
    for (std::string& v : *node->mutable_input())
      if (v == from) v = to;
    for (std::string& v : *node->mutable_output())
      if (v == from) v = to;
  }
}

// The imported graph's opset (all onnx.* nodes agree), or 0 when there is none.
int64_t imported_opset(const graph::Graph& g) {
  int64_t opset = 0;
  std::string first;
  for (const graph::Node& n : g.nodes()) {
    if (n.op.rfind("onnx.", 0) != 0 || n.op == "onnx.Initializer") continue;
    int64_t o = graph::attr_int(n.attrs, "opset");
    KILN_CHECK(opset == 0 || o == opset, ValueError, "export: node '", n.name, "' was imported at opset ", o,
               " but node '", first, "' at opset ", opset, "; one model has one opset");
    if (opset == 0) first = n.name;
    opset = o;
  }
  return opset;
}

}  // namespace

std::string export_model(const graph::Graph& g, const nn::StateDict& state, const ExportOptions& options) {
  register_onnx_schemas();
  graph::Analysis an = graph::analyze(g);
  if (!an.ok()) {
    std::string msg = "export: the graph cannot be exported:";
    for (const graph::Problem& p : an.problems)
      msg += "\n  " + (g.contains(p.node) ? "node '" + g.node(p.node).name + "': " : std::string()) + p.message;
    throw ValueError(msg);
  }
  ::onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name(options.producer_name);
  model.set_producer_version("0.1");
  int64_t imported = imported_opset(g);
  int64_t opset = imported ? imported : options.opset;
  if (imported && imported < 17)
    for (const graph::Node& n : g.nodes())
      KILN_CHECK(n.op.rfind("onnx.", 0) == 0 || n.op == "Input" || n.op == "Output", ValueError, "export: node '",
                 n.name, "' (", n.op, ") maps to opset 17 ops, but the graph's imported nodes are at opset ", imported,
                 "; convert the model to opset 17 before adding layers");
  auto* op = model.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  ::onnx::GraphProto* gp = model.mutable_graph();
  gp->set_name(!options.graph_name.empty() ? options.graph_name : (g.name.empty() ? "kiln_graph" : g.name));

  std::map<std::string, Tensor> params(state.begin(), state.end());
  detail::ExportContext ctx{gp, params, opset, {}};
  const detail::ExportNames names = detail::assign_names(g);
  if (const std::optional<size_t> k = graph::padding_mask_input(g))
    ctx.padding_mask_ids = names.values.at({g.input_nodes().at(*k), 0});
  for (graph::NodeId id : g.topological_order()) {
    const graph::Node& n = g.node(id);
    const graph::NodeInfo& info = an.nodes.at(id);
    std::vector<std::string> inputs;
    const graph::OpSchema& schema = graph::OpRegistry::global().get(n.op);
    for (int p = 0; p < schema.input_count(n.attrs); ++p) {
      std::optional<graph::PortRef> src = g.source_of({id, p});
      inputs.push_back(src ? names.values.at(*src) : std::string());
    }
    if (n.op == "Input") {
      graph::TensorType t = info.outputs.at(0);
      if (!t.shape.empty() && t.shape[0] == kBatch) t.shape[0] = recorded_batch(g, id);
      detail::set_value_info(gp->add_input(), names.values.at({id, 0}), t);
    } else if (n.op == "Output") {
      if (names.identity_outputs.count(id)) detail::add_node(ctx, "Identity", n.name, {inputs.at(0)}, {names.outputs.at(id)});
    } else if (n.op == "onnx.Initializer") {
      detail::add_initializer(ctx, n.name, n.op, n.name + ".value", info.outputs.at(0), names.values.at({id, 0}));
    } else if (n.op.rfind("onnx.", 0) == 0) {
      std::vector<std::string> outputs;
      for (int64_t i = 0; i < graph::attr_int(n.attrs, "onnx_outputs"); ++i)
        outputs.push_back(names.values.at({id, static_cast<int>(i)}));
      detail::export_imported(ctx, n, inputs, outputs, names.nodes.at(id));
    } else {
      int first = gp->node_size();
      detail::export_native(ctx, n, info, inputs);
      rename_value(gp, first, n.name, names.values.at({id, 0}));
    }
  }
  for (graph::NodeId id : g.output_nodes())  // in id order, as GraphModule returns them
    detail::set_value_info(gp->add_output(), names.outputs.at(id), an.nodes.at(id).inputs.at(0));
  if (opset < options.opset && options.opset <= 17) detail::convert_opset(model, g, names, options.opset);
  std::string bytes;
  KILN_CHECK(model.SerializeToString(&bytes), ValueError, "export: the model does not serialize (over 2 GB?)");
  return bytes;
}

void save_exported(const graph::Graph& g, const nn::StateDict& state, const std::string& path,
                   const ExportOptions& options) {
  std::string bytes = export_model(g, state, options);
  std::ofstream f(path, std::ios::binary);
  KILN_CHECK(f.good(), IoError, path, ": cannot open for writing");
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  KILN_CHECK(f.good(), IoError, path, ": write failed");
}

void check_model_bytes(const std::string& bytes) {
  ::onnx::ModelProto model;
  KILN_CHECK(model.ParseFromString(bytes), ValueError, "check: not a serialized ONNX ModelProto");
  try {
    ::onnx::checker::check_model(model);
    ::onnx::ShapeInferenceOptions opts(true, 1, false);
    ::onnx::shape_inference::InferShapes(model, ::onnx::OpSchemaRegistry::Instance(), opts);
  } catch (const std::exception& e) {
    throw ValueError(std::string("ONNX checker: ") + e.what());
  }
}

}  // namespace kiln::onnx
