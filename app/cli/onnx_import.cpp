// `kiln import model.onnx`: reads an ONNX model and prints a summary — opsets, inputs
// and outputs with their (symbolic) shapes, op types with counts, the parameter count
// and every op Kiln cannot run (op type, node name, opset); then the model as a graph
// (engine/graph) with its output types and parameter count, and how many of its nodes are
// native ops ("native nodes: N of M", M the nodes after folding but Input and Output; the
// import's warnings name each node kept as onnx.<Op>).
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "engine/core/error.h"
#include "engine/graph/analysis.h"
#include "engine/onnx/executor.h"
#include "engine/onnx/fold.h"
#include "engine/onnx/graph_import.h"
#include "engine/onnx/model.h"

namespace kiln::cli {

int onnx_import_command(const std::vector<std::string>& argv) {
  ArgParser parser("import", "Reads an ONNX model and prints its inputs, outputs, ops,\n"
                             "parameter count and the ops Kiln does not support.");
  parser.epilog("example: kiln import resnet18.onnx");
  parser.positional("MODEL.onnx");
  Args args = parser.parse(argv);
  const std::string path = args.positional();
  if (args.help()) {
    std::printf("%s", parser.help().c_str());
    return kExitOk;
  }
  if (path.empty()) args.fail("needs a model: kiln import MODEL.onnx");
  onnx::Model m = onnx::load_model(path);
  std::printf("model: %s\n", path.c_str());
  if (!m.producer_name.empty()) std::printf("producer: %s %s\n", m.producer_name.c_str(), m.producer_version.c_str());
  std::printf("ir_version: %lld\nopsets:", static_cast<long long>(m.ir_version));
  for (const auto& [domain, v] : m.opsets) std::printf(" %s=%lld", domain.empty() ? "ai.onnx" : domain.c_str(), static_cast<long long>(v));
  std::printf("\ninputs:\n");
  for (const auto& v : m.graph.inputs) std::printf("  %s: %s\n", v.name.c_str(), v.type_str().c_str());
  std::printf("outputs:\n");
  for (const auto& v : m.graph.outputs) std::printf("  %s: %s\n", v.name.c_str(), v.type_str().c_str());
  std::map<std::string, int> ops;
  for (const auto& n : m.graph.nodes) ops[n.domain.empty() ? n.op_type : n.domain + "." + n.op_type]++;
  std::printf("nodes: %zu\nops:", m.graph.nodes.size());
  for (const auto& [op, count] : ops) std::printf(" %s x%d", op.c_str(), count);
  std::printf("\nparameters: %lld in %zu initializers\n", static_cast<long long>(m.parameter_count()),
              m.graph.initializers.size());
  std::vector<onnx::UnsupportedOp> bad = onnx::find_unsupported(m);
  std::printf("unsupported ops: %zu\n", bad.size());
  for (const auto& u : bad) std::printf("  %s\n", u.str().c_str());
  if (!bad.empty()) return kExitError;
  {
    onnx::Model folded = m;
    onnx::FoldReport fr = onnx::fold_shape_subgraphs(folded);
    std::printf("shape-only subgraphs: %zu values folded, %zu of %zu nodes removed\n", fr.folded_values,
                fr.removed_nodes, m.graph.nodes.size());
  }
  // The graph IR view: what the Studio shows (types on edges, N = the batch).
  onnx::ImportedGraph ig;
  try {
    ig = onnx::import_graph(m);
  } catch (const Error& e) {
    std::printf("graph: cannot map the model to the graph IR: %s\n", e.what());
    return kExitError;
  }
  graph::Analysis an = graph::analyze(ig.graph);
  size_t native = 0, counted = 0;
  for (const graph::Node& n : ig.graph.nodes()) {
    if (n.op == "Input" || n.op == "Output") continue;
    ++counted;
    if (n.op.rfind("onnx.", 0) != 0) ++native;
  }
  std::printf("native nodes: %zu of %zu\n", native, counted);
  for (const std::string& w : ig.warnings) std::printf("  warning: %s\n", w.c_str());
  std::printf("graph: %zu nodes, %zu edges, %lld trainable parameters, %lld multiply-adds per sample\n",
              ig.graph.nodes().size(), ig.graph.edges().size(), static_cast<long long>(an.total_parameters),
              static_cast<long long>(an.total_macs));
  for (graph::NodeId id : ig.graph.output_nodes()) {
    const graph::Node& n = ig.graph.node(id);
    if (auto src = ig.graph.source_of({id, 0}))
      if (auto t = an.type_of(*src)) std::printf("  output %s: %s\n", n.name.c_str(), t->str().c_str());
  }
  for (const auto& p : an.problems) std::printf("  problem: %s\n", p.message.c_str());
  return an.ok() ? kExitOk : kExitError;
}

}  // namespace kiln::cli
