#include "app/cli/run_model.h"

#include <cstdio>

#include "app/cli/train_graph.h"
#include "engine/core/error.h"
#include "engine/graph/graph_module.h"
#include "engine/quant/int8_model.h"
#include "engine/core/qops.h"
#include "engine/train/reference_models.h"

namespace kiln::cli {

std::shared_ptr<nn::Module> load_model(const io::SafetensorsFile& file, const std::string& path, std::string graph_path,
                                       std::string& model_name, Device device, int64_t features, int64_t outputs,
                                       const ImageRun* image) {
  if (quant::Int8Model::is_int8_file(file.metadata)) {  // written by `kiln quantize`
    std::shared_ptr<quant::Int8Model> q = quant::Int8Model::load(path);
    q->to(device);
    model_name = "int8 model (" + std::to_string(q->layers().size()) + " int8 layers)";
    if (!quant::int8_supported(device))
      std::fprintf(stderr, "kiln: note: %s has no int8 kernels; the int8 layers run in float with their dequantized "
                   "weights\n", device.str().c_str());
    return q;
  }
  if (graph_path.empty() && model_name.empty()) graph_path = run_graph_of(path, file.metadata).value_or("");
  std::shared_ptr<nn::Module> model;
  if (!graph_path.empty()) {
    model = std::make_shared<graph::GraphModule>(load_checked_graph(graph_path));
    model_name = "graph " + graph_path;
  } else {
    if (model_name.empty() && (features > 0 || image)) {
      auto it = file.metadata.find("kiln.model");
      model_name = it != file.metadata.end() ? it->second : "mlp";
    }
    if (model_name.empty()) model_name = train::infer_model_name(file.tensors);
    model = image          ? train::make_image_model(model_name, image->channels, image->height, image->width, outputs)
            : features > 0 ? train::make_model(model_name, features, outputs)
                           : train::make_model(model_name);
  }
  model->to(device);
  try {
    model->load_state_dict(file.tensors);
  } catch (const ValueError& e) {
    throw ValueError(path + " does not hold " + model_name + " weights: " + e.what());
  }
  return model;
}

}  // namespace kiln::cli
