#include "engine/onnx/export.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include <fstream>
#include <map>

#include "engine/core/error.h"
#include "engine/graph/analysis.h"
#include "engine/onnx/export_nodes.h"
#include "engine/onnx/graph_import.h"
#include "engine/onnx/tensor_proto.h"

namespace kiln::onnx {

using graph::kBatch;

namespace {

void set_value_info(::onnx::ValueInfoProto* v, const std::string& name, const graph::TensorType& t) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx_type_of(t.dtype));
  auto* shape = tt->mutable_shape();
  for (int64_t d : t.shape) {
    auto* dim = shape->add_dim();
    if (d == kBatch) dim->set_dim_param("N");
    else dim->set_dim_value(d);
  }
}

// The batch size imported nodes fed by `input` recorded for it (the original model fixed it),
// or kBatch when none did. onnx_types reads "f32[2, 3];i64[2] -> f32[2, 10]".
int64_t recorded_batch(const graph::Graph& g, graph::NodeId input) {
  for (const graph::PortRef& to : g.consumers_of({input, 0})) {
    const graph::Node& n = g.node(to.node);
    if (n.op.rfind("onnx.", 0) != 0 || n.op == "onnx.Initializer") continue;
    std::string types = graph::attr_string(n.attrs, "onnx_types");
    types = types.substr(0, types.find(" -> "));
    size_t start = 0;
    for (int p = 0; p < to.port && start != std::string::npos; ++p) start = types.find(';', start) + 1;
    size_t lb = types.find('[', start);
    if (start == std::string::npos || lb == std::string::npos) continue;
    std::string first = types.substr(lb + 1, types.find_first_of(",]", lb) - lb - 1);
    if (!first.empty() && first != "N") return std::stoll(first);
  }
  return kBatch;
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
  for (graph::NodeId id : g.topological_order()) {
    const graph::Node& n = g.node(id);
    const graph::NodeInfo& info = an.nodes.at(id);
    std::vector<std::string> inputs;
    const graph::OpSchema& schema = graph::OpRegistry::global().get(n.op);
    for (int p = 0; p < schema.input_count(n.attrs); ++p) {
      std::optional<graph::PortRef> src = g.source_of({id, p});
      inputs.push_back(src ? detail::value_name(g.node(src->node), src->port) : std::string());
    }
    if (n.op == "Input") {
      graph::TensorType t = info.outputs.at(0);
      if (!t.shape.empty()) t.shape[0] = recorded_batch(g, id);
      set_value_info(gp->add_input(), n.name, t);
      continue;
    }
    if (n.op == "Output") {
      detail::add_node(ctx, "Identity", n.name, {inputs.at(0)}, {n.name});
      set_value_info(gp->add_output(), n.name, info.inputs.at(0));
      continue;
    }
    if (n.op == "onnx.Initializer") {
      detail::add_initializer(ctx, n, n.name + ".value", info.outputs.at(0));
      continue;
    }
    if (n.op.rfind("onnx.", 0) == 0) detail::export_imported(ctx, n, inputs);
    else detail::export_studio(ctx, n, info, inputs);
  }
  if (opset < options.opset && options.opset <= 17) {
    // Up to the requested opset where libonnx can; it throws when an op has no adapter
    // (then the model stays valid at its imported opset).
    try {
      ::onnx::ModelProto converted =
          ::onnx::version_conversion::ConvertVersion(model, static_cast<int>(options.opset));
      ::onnx::checker::check_model(converted);
      model = std::move(converted);
    } catch (const std::exception&) {
    }
  }
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
