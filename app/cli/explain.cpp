// `kiln explain`: why the model predicted what it did for one image: a Grad-CAM or saliency map
// computed by the engine's autograd (engine/explain/explain.h), written over the image as a PNG.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/cli/device_list.h"
#include "app/cli/heat_map.h"
#include "app/cli/predict_input.h"
#include "app/cli/run_data.h"
#include "app/cli/run_model.h"
#include "app/cli/train_graph.h"
#include "engine/core/error.h"
#include "engine/core/registry.h"
#include "engine/explain/explain.h"
#include "engine/graph/graph_module.h"
#include "engine/io/safetensors.h"
#ifdef KILN_HAVE_ONNX
#include "engine/onnx/graph_import.h"
#include "engine/onnx/model.h"
#endif

namespace kiln::cli {

namespace {

namespace fs = std::filesystem;

ArgParser explain_parser() {
  ArgParser p("explain",
              "Shows which pixels made an image model predict its class: a Grad-CAM heat map (Selvaraju et al.\n"
              "2017) or a saliency map (Simonyan et al. 2014), computed by the engine's autograd, written over\n"
              "the image as the model saw it. Prints the predicted class and the layer used.");
  p.flag("run", "DIR", "", "a `kiln train` run of an image model (its model.safetensors and run files)")
      .flag("graph", "FILE", "", "or a graph JSON with its weights (initial_state), e.g. saved by Kiln Studio")
#ifdef KILN_HAVE_ONNX
      .flag("onnx", "FILE", "", "or an ONNX model, imported as native graph nodes (kiln import)")
#endif
      .flag("image", "FILE", "", "the image (PNG, JPEG, ... : whatever OpenCV decodes)")
      .flag("class", "K", "", "the class to explain (0-based; default: the predicted class)")
      .flag("layer", "NAME", "", "Grad-CAM's layer (a node of the graph, or a child of a built-in model\n"
                                 "such as 3); default: the last convolution whose output is spatial")
      .flag("method", "M", "gradcam", "gradcam or saliency (any model, no convolution needed)", {"gradcam", "saliency"})
      .flag("normalize", "N", "none", "--graph/--onnx: the image's normalization after scaling to [0, 1]: none or\n"
                                      "imagenet (torchvision's mean and std, RGB models); a run's own is used for --run",
            {"none", "imagenet"})
      .flag("out", "FILE", "", "the picture to write (PNG; the heat map over the image)")
      .flag("device", "D", "auto", "device (cpu, cuda:0, vulkan:0 ...; auto = the best, or KILN_DEVICE)");
  p.epilog("With --graph or --onnx the image is read as the graph's Input takes it: its channels (1 or 3) and\n"
           "size (resized to cover it, then center-cropped), scaled to [0, 1]. With --run, as the run's test images.\n"
           "Mistakes in what is asked (no convolution for Grad-CAM, an unknown layer, a class out of range,\n"
           "an image that cannot be read) are reported with exit status 2.\n\n"
           "example: kiln explain --run runs/photos --image cat.png --out cat_heat.png\n"
           "         kiln explain --graph model.json --image x.png --method saliency --class 3 --out x_saliency.png");
  return p;
}

// The model to explain, how its images are read, and its class names ("" where unknown).
struct Explained {
  std::shared_ptr<nn::Module> model;
  ImageRun image;
  std::vector<std::string> names;
  std::string source;  // what was loaded, for messages
};

Explained from_run(const Args& args, Device device) {
  const fs::path run(args.str("run"));
  std::error_code ec;
  KILN_CHECK(fs::is_directory(run, ec), IoError, run.string(), ": no such run directory");
  const fs::path model_path = run / "model.safetensors";
  KILN_CHECK(fs::is_regular_file(model_path, ec), IoError, run.string(),
             " holds no model.safetensors (not a finished `kiln train --out DIR` run)");
  const io::SafetensorsFile file = io::load_safetensors(model_path.string());
  const RunData d = run_data(file, run);
  if (d.table || d.text || !d.image)
    args.fail(run.string() + " was trained on " + (d.table ? "a table" : "text") +
              "; kiln explain explains image models");
  const bool idx = d.image->config.kind.empty();
  Explained e;
  std::string model_name;
  e.model = load_model(file, model_path.string(), "", model_name, device, d.class_subset ? 28 * 28 : 0,
                       !idx || d.class_subset ? static_cast<int64_t>(d.names.size()) : 0, idx ? nullptr : &*d.image);
  e.image = *d.image;
  e.names = d.names;
  e.source = model_path.string() + " (" + model_name + ")";
  return e;
}

Explained from_graph(const Args& args, graph::Graph g, const std::string& path, Device device) {
  Explained e;
  auto m = std::make_shared<graph::GraphModule>(g);
  m->to(device);
  const graph::SymShape& in = m->analysis().nodes.at(g.input_nodes().at(0)).outputs.at(0).shape;
  const bool image = in.size() == 4 && (in[1] == 1 || in[1] == 3) && in[2] > 0 && in[3] > 0;
  if (!image)
    args.fail(path + ": the input '" + g.node(g.input_nodes().at(0)).name + "' is " + graph::shape_str(in) +
              ", not an image [N, 1 or 3, H, W] of a fixed size; kiln explain explains image models");
  e.image.channels = static_cast<int>(in[1]);
  e.image.height = in[2];
  e.image.width = in[3];
  if (args.str("normalize") == "imagenet") {
    if (e.image.channels != 3) args.fail("--normalize imagenet needs an RGB model; " + path + " takes 1 channel");
    e.image.mean = {0.485, 0.456, 0.406};  // torchvision's ImageNet statistics
    e.image.stddev = {0.229, 0.224, 0.225};
  }
  e.model = m;
  e.source = path;
  return e;
}

std::string class_str(int64_t k, const std::vector<std::string>& names) {
  std::string s = std::to_string(k);
  if (k >= 0 && k < static_cast<int64_t>(names.size())) s += " '" + names[static_cast<size_t>(k)] + "'";
  return s;
}

}  // namespace

int explain_command(const std::vector<std::string>& argv) {
  ArgParser parser = explain_parser();
  Args args = parser.parse(argv);
  if (args.help()) {
    std::fputs(parser.help().c_str(), stdout);
    return kExitOk;
  }
  const int sources = args.given("run") + args.given("graph") + args.given("onnx");
  if (sources != 1) args.fail("give one of --run DIR, --graph FILE or --onnx FILE (see kiln explain --help)");
  if (!args.given("image")) args.fail("--image FILE is required (see kiln explain --help)");
  if (!args.given("out")) args.fail("--out FILE is required (the heat map picture)");
  const int64_t cls = args.given("class") ? args.integer("class", 0) : -1;
  const std::string method = args.str("method");
  if (method == "saliency" && args.given("layer")) args.fail("--layer is Grad-CAM's; saliency maps have no layer");
  const Device device = device_flag(args);

  Explained x;
  if (args.given("run")) {
    x = from_run(args, device);
  } else if (args.given("graph")) {
    x = from_graph(args, load_checked_graph(args.str("graph")), args.str("graph"), device);
  } else {
#ifdef KILN_HAVE_ONNX
    const std::string path = args.str("onnx");
    onnx::ImportedGraph ig = onnx::import_graph(onnx::load_model(path));
    for (const std::string& w : ig.warnings) std::fprintf(stderr, "kiln: %s: %s\n", path.c_str(), w.c_str());
    check_trainable_graph(ig.graph, path);
    x = from_graph(args, std::move(ig.graph), path, device);
#endif
  }

  const ImageRun& ir = x.image;
  std::vector<float> buf(static_cast<size_t>(ir.channels * ir.height * ir.width));
  try {
    read_image_input(args.str("image"), ir, buf.data());
  } catch (const IoError& e) {
    args.fail(std::string("cannot read the image: ") + e.what());
  }
  const Tensor image = Tensor::from_vector(buf, {ir.channels, ir.height, ir.width});

  explain::Explanation e;
  try {
    e = method == "gradcam" ? explain::grad_cam(*x.model, image, cls, args.str("layer"))
                            : explain::saliency(*x.model, image, cls);
  } catch (const ValueError& err) {  // what was asked does not fit the model (explain.h lists them)
    args.fail(err.what());
  }
  write_heat_overlay(image, e.map, args.str("out"));

  // The predicted class with its probability (softmax of the logits).
  const float top = *std::max_element(e.logits.begin(), e.logits.end());
  double total = 0;
  for (float v : e.logits) total += std::exp(static_cast<double>(v - top));
  std::printf("model: %s\n", x.source.c_str());
  std::printf("predicted: class %s, probability %.4f\n", class_str(e.predicted, x.names).c_str(), 1.0 / total);
  std::printf("explained: class %s, logit %.4g\n", class_str(e.target_class, x.names).c_str(),
              static_cast<double>(e.logits[static_cast<size_t>(e.target_class)]));
  if (method == "gradcam")
    std::printf("layer: %s (%s, output %s)\n", e.layer.c_str(), e.layer_type.c_str(), shape_str(e.layer_shape).c_str());
  else
    std::printf("layer: none (saliency: the gradient with respect to the input pixels)\n");
  std::printf("wrote %s (%s over the image, %lld x %lld)\n", args.str("out").c_str(),
              method == "gradcam" ? "Grad-CAM" : "saliency map", static_cast<long long>(ir.width),
              static_cast<long long>(ir.height));
  return kExitOk;
}

}  // namespace kiln::cli
