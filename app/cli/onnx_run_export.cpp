#include "app/cli/onnx_run_export.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "app/cli/run_data.h"
#include "app/cli/train_graph.h"
#include "engine/core/error.h"
#include "engine/graph/graph_module.h"
#include "engine/io/safetensors.h"
#include "engine/onnx/export.h"
#include "engine/onnx/run_export.h"
#include "engine/quant/int8_model.h"

namespace kiln::cli {

namespace fs = std::filesystem;

graph::Graph reference_model_graph(const std::string& name, const std::vector<int64_t>& input, int64_t classes) {
  KILN_CHECK(name == "mlp" || (name == "cnn" && input.size() == 3), ValueError, "the reference model '", name,
             "' has no graph form to export (the mlp and the cnn do); train from a graph (kiln train --graph) to "
             "export it");
  graph::Graph g;
  g.name = name;
  graph::NodeId prev = g.add_node("Input", "input", {{"shape", input}, {"dtype", std::string("f32")},
                                                     {"dim_params", std::string()}});
  int child = 0;  // the Sequential's child index names the node
  auto chain = [&](const std::string& op, const graph::Attributes& attrs) {
    const graph::NodeId n = g.add_node(op, "layer" + std::to_string(child++), attrs);
    g.connect({prev, 0}, {n, 0});
    prev = n;
  };
  auto linear = [&](int64_t in, int64_t out) { chain("Linear", {{"in_features", in}, {"out_features", out}}); };
  if (name == "mlp") {
    int64_t features = 1;
    for (int64_t d : input) features *= d;
    chain("Flatten", {});
    linear(features, 256), chain("ReLU", {}), linear(256, 128), chain("ReLU", {}), linear(128, classes);
  } else {
    auto conv = [&](int64_t in, int64_t out) {
      chain("Conv2d", {{"in_channels", in}, {"out_channels", out}, {"kernel_size", std::vector<int64_t>{3, 3}},
                       {"padding", std::vector<int64_t>{1, 1}}});
    };
    auto pool = [&] { chain("MaxPool2d", {{"kernel_size", std::vector<int64_t>{2, 2}}}); };
    conv(input[0], 32), chain("ReLU", {}), pool(), conv(32, 64), chain("ReLU", {}), pool(), chain("Flatten", {});
    linear(64 * (input[1] / 4) * (input[2] / 4), 128), chain("ReLU", {}), linear(128, classes);
  }
  const graph::NodeId out = g.add_node("Output", "logits", {});
  g.connect({prev, 0}, {out, 0});
  return g;
}

RunOnnx run_onnx(const std::string& run_dir, bool include) {
  const fs::path run(run_dir), model_path = run / "model.safetensors";
  std::error_code ec;
  KILN_CHECK(fs::is_directory(run, ec), IoError, run_dir, ": no such run directory");
  KILN_CHECK(fs::is_regular_file(model_path, ec), IoError, run_dir, " holds no model.safetensors (not a finished "
             "kiln train run)");
  const io::SafetensorsFile file = io::load_safetensors(model_path.string());
  KILN_CHECK(!quant::Int8Model::is_int8_file(file.metadata), ValueError, model_path.string(), " is an int8 model: "
             "kiln quantize wrote its ONNX form (QDQ) beside it as model.onnx");
  const RunData d = run_data(file, run);
  KILN_CHECK(!(d.text && include), ValueError, run_dir, " is a text run: its tokenizer has no ONNX form yet; export "
             "it with --no-preprocessing (the model then takes token ids)");
  const int64_t outputs = d.regression ? 1 : static_cast<int64_t>(d.names.size());
  graph::Graph g;
  nn::StateDict weights = file.tensors;
  if (std::optional<std::string> graph_path = run_graph_of(model_path.string(), file.metadata)) {
    g = load_checked_graph(*graph_path);
  } else {
    auto it = file.metadata.find("kiln.model");
    const std::string name = it != file.metadata.end() ? it->second : "mlp";
    KILN_CHECK(d.table || d.image, ValueError, run_dir, ": a run of the reference model '", name, "' without its "
               "inputs' description");
    const std::vector<int64_t> input =
        d.table ? std::vector<int64_t>{d.table->second.num_features()}
                : std::vector<int64_t>{d.image->channels, d.image->height, d.image->width};
    g = reference_model_graph(name, input, outputs);
    weights.clear();  // "1.weight" -> "layer1.weight"
    for (const auto& [key, t] : file.tensors) weights.emplace_back("layer" + key, t);
  }
  graph::GraphModule gm(g);
  try {
    gm.load_state_dict(weights);
  } catch (const ValueError& e) {
    throw ValueError(model_path.string() + " does not hold the weights of the graph exported: " + e.what());
  }
  onnx::RunPreprocessing p;
  if (d.image) p.image = &*d.image;
  if (d.table) p.table = &d.table->second;
  p.classes = d.names;
  p.regression = d.regression;
  p.include = include;
  return {onnx::with_preprocessing(onnx::export_model(g, gm.state_dict()), p), d};
}

std::string export_run(const std::string& run_dir, const std::string& out, bool include) {
  const RunOnnx r = run_onnx(run_dir, include);
  const std::string& bytes = r.bytes;
  const RunData& d = r.data;
  onnx::check_model_bytes(bytes);  // libonnx's checker and strict shape inference, before anything is written
  std::error_code ec;
  if (const fs::path parent = fs::path(out).parent_path(); !parent.empty()) {
    fs::create_directories(parent, ec);
    KILN_CHECK(!ec, IoError, out, ": cannot create its folder ", parent.string(), " (", ec.message(), ")");
  }
  std::ofstream f(out, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  KILN_CHECK(f.good(), IoError, out, ": cannot write (", std::strerror(errno), ")");
  const std::string what = !include ? "without preprocessing (inputs as the network takes them)"
                           : d.image ? "with the image preprocessing (input: uint8 pixels [N, H, W, " +
                                           std::to_string(d.image->channels) + "])"
                           : d.table ? "with the table preprocessing (one input per column)"
                                     : "";
  return "wrote " + out + " (" + std::to_string(bytes.size()) + " bytes) " + what + "\nchecker: ok";
}

}  // namespace kiln::cli
