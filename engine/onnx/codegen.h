// ONNX model -> readable C++ against the installed engine (find_package(Kiln), Kiln::engine).
// generate_cpp writes into `dir`:
//   <stem>.h / <stem>.cpp   one class per graph (`class <Name>`), a kiln::Tensor member per
//                           initializer and one statement per ONNX node, each value a local
//                           named after the node ("conv1_Conv"), its shape in a comment
//                           ("f32[N, 32, 28, 28]": N the batch, from running the model with
//                           batch 1 and 2 in Kiln's executor)
//   <stem>_weights.safetensors   the initializers under their member names
//   example_inputs.safetensors / example_outputs.safetensors   random inputs (batch 2, seed 0)
//                           and the executor's outputs for them, by graph input/output name
//   main.cpp                runs the class on example_inputs (or the files given) and, on the
//                           examples, exits 1 unless every output matches at rtol 1e-4, atol 1e-5;
//                           other arguments print its usage (exit 2), errors name the file (exit 1)
//   CMakeLists.txt          find_package(Kiln), target_link_libraries(... Kiln::engine)
// With CodegenOptions::predict (a trained run's preprocessing, `kiln codegen --run`), also:
//   images.json | table.json   the run's preprocessing (data::run_images_json / run_table_json)
//   predict.cpp             <stem>_predict PATH: the class on new raw inputs (an image, a folder of
//                           images, or a CSV of the table's columns), read and preprocessed by the
//                           installed engine as `kiln predict` reads them (engine/data/predict_input.h),
//                           one CSV row per input as `kiln predict` writes it (top 1); it reads the
//                           weights and the preprocessing from `dir`, or from $KILN_MODEL_DIR when set
// The ops it translates (to engine/core/ops.h and nn::functional): Conv (2-d), MaxPool,
// AveragePool, GlobalAveragePool, Gemm, MatMul, Add, Sub, Mul, Div, the operator of every unary
// layer (graph OpSchema::unary_layer: Relu, Sigmoid, Tanh, HardSwish), LeakyRelu, Erf, Softmax, LogSoftmax (axis attribute, opset >= 13), BatchNormalization (inference),
// LayerNormalization, Concat, Reshape and Flatten (shape known when generating), Transpose,
// Identity, Dropout, Gather (axis 0 of a constant), Clip (constant bounds), Constant (a member). ValueError listing every other node (op
// type and node name) before anything is written (saying so when they are a run export's preprocessing,
// run_export.h); IoError when `dir` cannot be written.
#pragma once
#include <string>
#include <vector>

#include "engine/data/image_source.h"
#include "engine/data/table_source.h"
#include "engine/onnx/model.h"

namespace kiln::onnx {

// What a trained run's predict program needs: at most one of image and table (neither: no
// predict program). The pointers must outlive the generate_cpp call.
struct CodegenPredict {
  const data::ImageRun* image = nullptr;         // an image run's (or idx_image_run's) preprocessing
  const data::TableConfig* table_config = nullptr;  // with table: how the run's CSV was read
  const data::TabularSchema* table = nullptr;    // a table run's fitted preprocessing
  std::vector<std::string> classes;              // the logits' class names (empty for regression)
  bool regression = false;
};

struct CodegenOptions {
  // "" = from the graph name ("Fashion-MNIST CNN" -> "FashionMnistCnn"); "Model" if empty. Otherwise a C++
  // identifier that is not a keyword (nor kiln, std, main, take, conv_params, pool_params, read, usage) and
  // whose file (<snake_case>.cpp) is not main.cpp or predict.cpp: ValueError.
  // Names from the model reach the generated files only as escaped string literals or comment-safe text.
  std::string class_name;
  // A run's predict program; needs a model with one input and its first output the logits
  // [N, classes] (or [N, 1] for regression): ValueError otherwise.
  CodegenPredict predict;
};

// Returns the paths written.
std::vector<std::string> generate_cpp(const Model& model, const std::string& dir, const CodegenOptions& options = {});

}  // namespace kiln::onnx
