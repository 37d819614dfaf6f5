// `kiln export --run DIR --out FILE.onnx [--no-preprocessing]`: a trained run as ONNX with its
// preprocessing in front (engine/onnx/run_export.h): the run's graph (graph.json), or the
// reference mlp / cnn it trained (rebuilt as a graph, its state_dict keys prefixed "layer"), with the
// weights of its model.safetensors.
#pragma once
#include <string>

#include "app/cli/run_data.h"
#include "engine/graph/graph.h"

namespace kiln::cli {

// The reference model `name` (engine/train/reference_models.h: "mlp" or "cnn") as a graph whose
// nodes are named after the Sequential's children ("layer1" for the mlp's first Linear, whose
// state_dict key "1.weight" becomes "layer1.weight"); `input` is a sample's shape ([C, H, W], or [F] for the mlp).
// ValueError for another name (the resnet has no graph form yet) or a cnn input not [C, H, W].
graph::Graph reference_model_graph(const std::string& name, const std::vector<int64_t>& input, int64_t classes);

// The run `run_dir`'s network as ONNX bytes (with the preprocessing unless `include` is false) and
// what it was trained on; the errors of export_run below.
struct RunOnnx {
  std::string bytes;
  RunData data;
};
RunOnnx run_onnx(const std::string& run_dir, bool include);

// Writes the run `run_dir` as ONNX to `out` (with the preprocessing unless `include` is false)
// and returns a one-line summary. IoError naming the run's files (model.safetensors, images.json,
// table.json, graph.json) when one is missing or malformed; ValueError for a run that cannot be
// exported (a text run or an int8 run with its preprocessing, a resnet reference model).
std::string export_run(const std::string& run_dir, const std::string& out, bool include);

}  // namespace kiln::cli
