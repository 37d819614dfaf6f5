// The trained model of a `kiln train` run, rebuilt from its model.safetensors and the run files
// next to it (graph.json, table.json, images.json; run_files.h): shared by `kiln eval` and
// `kiln predict`.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "app/cli/image_data.h"
#include "engine/core/device.h"
#include "engine/io/safetensors.h"
#include "engine/nn/module.h"

namespace kiln::cli {

// The model with the weights of `file` (read from `path`), on `device`: the graph of `graph_path`
// (or the one the run kept, train_graph.h), else the reference model `model_name` (or the one the
// file's metadata or keys name) built for `features` inputs and `outputs` outputs (0, 0:
// Fashion-MNIST's), or for `image` (a run's images.json) when given. model_name becomes what was
// loaded ("graph FILE" for a graph). ValueError naming path when the weights are not that model's.
std::shared_ptr<nn::Module> load_model(const io::SafetensorsFile& file, const std::string& path,
                                       std::string graph_path, std::string& model_name, Device device,
                                       int64_t features, int64_t outputs, const ImageRun* image = nullptr);

}  // namespace kiln::cli
