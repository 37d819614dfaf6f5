// Runs an ONNX model eagerly, node by node, with kiln::Tensor ops on one device.
// Shapes may change from run to run (dynamic dimensions are resolved when the inputs
// arrive). Ops of the ai.onnx domain are implemented in ops_*.cpp (see op_context.h).
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/core/error.h"
#include "engine/onnx/model.h"
#include "engine/onnx/op_context.h"

namespace kiln::onnx {

// A node Kiln cannot run, with why (unknown op type, unsupported domain).
struct UnsupportedOp {
  std::string op_type, node, domain;
  int64_t opset = 0;
  std::string str() const;  // "TfIdfVectorizer (node 'tfidf', opset 17)"
};
// Every unsupported node of the model, subgraphs included, in graph order.
std::vector<UnsupportedOp> find_unsupported(const Model& model);

// Thrown by Session when the model holds ops Kiln cannot run; what() lists them all.
struct UnsupportedError : ValueError {
  std::vector<UnsupportedOp> ops;
  UnsupportedError(const std::string& what, std::vector<UnsupportedOp> o) : ValueError(what), ops(std::move(o)) {}
};

class Session {
 public:
  // Checks the model before anything runs: every op supported (UnsupportedError listing all
  // of them), every node input produced by a graph input, an initializer or an earlier node
  // (ValueError naming the node and the missing value, e.g. a missing initializer). Moves the
  // initializers to `device`.
  explicit Session(Model model, Device device = {});

  // Feeds the graph inputs by name and returns the graph outputs in the model's order.
  // ValueError when a name is not a graph input or an input is missing; errors of an op
  // name the node ("node 'conv1' (Conv): ...").
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs) const;
  // The same, calling `observer` after each node of the main graph with its inputs
  // (undefined for omitted ones) and outputs (graph_import.cpp records types this way).
  using NodeObserver = std::function<void(const Node&, const std::vector<Tensor>&, const std::vector<Tensor>&)>;
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs, const NodeObserver& observer) const;
  // Inputs and outputs that may be sequences (ONNX seq(tensor)); run() refuses sequence outputs.
  std::vector<Value> run_values(const std::map<std::string, Value>& inputs, const NodeObserver& observer = {}) const;

  const Model& model() const { return model_; }
  std::vector<std::string> input_names() const;
  std::vector<std::string> output_names() const;

 private:
  Model model_;
  Device device_;
};

}  // namespace kiln::onnx
