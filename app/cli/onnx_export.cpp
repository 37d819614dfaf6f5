// `kiln export GRAPH.json|MODEL.onnx --out model.onnx [--weights FILE.safetensors]`: writes a
// graph (engine/graph JSON, with its parameters from --weights or freshly initialized) or an
// imported ONNX model as an ONNX model at opset 17 (engine/onnx/export.h), then checks it with
// libonnx's checker and strict shape inference.
// `kiln export --run DIR --out model.onnx [--no-preprocessing]`: a trained run with its
// preprocessing as graph ops in front (onnx_run_export.h).
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/cli/onnx_run_export.h"
#include "engine/core/error.h"
#include "engine/graph/graph_module.h"
#include "engine/graph/json.h"
#include "engine/io/safetensors.h"
#include "engine/onnx/export.h"
#include "engine/onnx/graph_import.h"
#include "engine/onnx/model.h"

namespace kiln::cli {

int onnx_export_command(const std::vector<std::string>& argv) {
  ArgParser parser("export", "Writes a graph (GRAPH.json) or an ONNX model (MODEL.onnx, re-exported through the graph\n"
                             "IR) as ONNX (opset 17) and checks it with libonnx's checker. The batch dimension is\n"
                             "\"N\" unless the model fixes it (Input's batch); other symbolic dims keep their names\n"
                             "(Input's dim_params), and a dim that depends on a graph input's contents is unknown.\n"
                             "With --run DIR it writes a trained run (kiln train --out DIR) with the run's preprocessing\n"
                             "in front as ONNX ops: an image run takes uint8 pixels [N, H, W, C] of any size (resized,\n"
                             "center-cropped, normalized as kiln predict does), a table run one input per\n"
                             "column (numbers float [N, 1], categories string [N, 1]; standardized, one-hot). Outputs:\n"
                             "logits and, for classification, probabilities; the class names are in the metadata\n"
                             "(kiln.classes).");
  parser.flag("out", "FILE.onnx", "", "The ONNX file to write (required).");
  parser.flag("run", "DIR", "", "A trained run to export with its preprocessing (instead of GRAPH.json|MODEL.onnx).");
  parser.toggle("no-preprocessing", "With --run: leave the preprocessing out (the model takes the preprocessed float "
                                    "tensor, as the network does).");
  parser.flag("weights", "FILE.safetensors", "", "Parameters of a GRAPH.json (state_dict keys \"conv1.weight\"); "
                                                 "without it the layers keep their initialization.");
  parser.epilog("example: kiln export projects/templates/fashion_mnist_cnn.json --weights cnn.safetensors --out cnn.onnx\n"
                "         kiln export --run runs/photos --out photos.onnx");
  parser.positional("GRAPH.json|MODEL.onnx");
  Args args = parser.parse(argv);
  const std::string path = args.positional();
  if (args.help()) {
    std::printf("%s", parser.help().c_str());
    return kExitOk;
  }
  if (args.given("run")) {
    if (!path.empty() || args.given("weights")) args.fail("--run DIR exports the run's own model; leave out GRAPH.json and --weights");
    if (!args.given("out")) args.fail("needs --out FILE.onnx");
    std::printf("%s\n", export_run(args.str("run"), args.str("out"), !args.given("no-preprocessing")).c_str());
    return kExitOk;
  }
  if (args.given("no-preprocessing")) args.fail("--no-preprocessing is for --run DIR");
  if (path.empty()) args.fail("needs a graph or model: kiln export GRAPH.json|MODEL.onnx --out FILE.onnx");
  if (!args.given("out")) args.fail("needs --out FILE.onnx");
  const bool is_onnx = path.size() >= 5 && path.substr(path.size() - 5) == ".onnx";
  if (is_onnx && args.given("weights")) args.fail("--weights is for a GRAPH.json; an ONNX model carries its own");
  graph::Graph g;
  nn::StateDict state;
  if (is_onnx) {
    onnx::ImportedGraph ig = onnx::import_graph(onnx::load_model(path));
    g = std::move(ig.graph);
    state = std::move(ig.state_dict);
  } else {
    g = graph::load_graph(path);
    graph::GraphModule gm(g);
    if (args.given("weights")) gm.load_state_dict(io::load_safetensors(args.str("weights")).tensors);
    state = gm.state_dict();
  }
  const std::string out = args.str("out");
  std::string bytes = onnx::export_model(g, state);
  std::ofstream f(out, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  KILN_CHECK(f.good(), IoError, out, ": cannot write");
  std::printf("wrote %s (%zu bytes, %zu nodes in the graph)\n", out.c_str(), bytes.size(), g.nodes().size());
  onnx::Model m = onnx::parse_model(bytes, "", out);
  if (m.opset() > 17) {
    std::printf("checker: skipped (opset %lld; Debian's libonnx 1.12 checks opsets up to 17)\n",
                static_cast<long long>(m.opset()));
    return kExitOk;
  }
  onnx::check_model_bytes(bytes);
  std::printf("checker: ok (opset %lld, full shape inference)\n", static_cast<long long>(m.opset()));
  return kExitOk;
}

}  // namespace kiln::cli
