// ONNX export as an op schema sees it (OpSchema::onnx_export): the node being exported and an
// emitter that adds ONNX nodes and initializers to the model. engine/onnx/export.cpp implements
// the emitter over libonnx's protobuf classes; the schemas (engine/graph/ops_onnx*.cpp) need no
// protobuf. Operator semantics: onnx.ai Operators.md at the model's opset (17 unless the graph
// was imported at another; export.h).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/graph/types.h"

namespace kiln::graph {

// An ONNX attribute value: INT, FLOAT, STRING, INTS or STRINGS.
using OnnxAttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<std::string>>;
// Attributes in the order they are written.
using OnnxAttrs = std::vector<std::pair<std::string, OnnxAttrValue>>;

// The node being exported. Its output port 0 must be the ONNX value named `name` (export.cpp
// renames it to the value later nodes read); intermediate values and constants are named
// "<name>/<what>" so that two nodes never collide.
struct OnnxExportNode {
  const std::string& name;  // "lstm"
  const std::string& op;    // "LSTM"
  const Attributes& attrs;  // with defaults
  const std::vector<TensorType>& inputs;   // inferred input types, one per input port
  const std::vector<TensorType>& outputs;  // inferred output types
  const std::vector<std::string>& values;  // the ONNX value feeding each input port
};

class OnnxEmitter {
 public:
  virtual ~OnnxEmitter() = default;
  virtual int64_t opset() const = 0;  // the model's ai.onnx opset
  // The ONNX value of the int64 token ids [N, T] the graph's padding mask comes from (id 0 is
  // <pad>; graph::padding_mask_input, graph_module.h), "" when the graph has none (no padding).
  virtual const std::string& padding_mask_ids() const = 0;
  // Adds an ONNX node of the default domain.
  virtual void node(const std::string& op_type, const std::string& name, const std::vector<std::string>& inputs,
                    const std::vector<std::string>& outputs, const OnnxAttrs& attrs = {}) = 0;
  // The state_dict entry "<n.name>.<key>" as an initializer of that name (added once), checked to
  // have `shape`; returns its name. ValueError naming the node when it is missing or differs.
  virtual std::string param(const OnnxExportNode& n, const std::string& key, const SymShape& shape) = 0;
  // The state_dict entry "<n.name>.<key>" itself (for a mapping that rearranges it, as the
  // recurrent layers' gate order); ValueError naming the node when it is missing.
  virtual Tensor state(const OnnxExportNode& n, const std::string& key) const = 0;
  // A constant as the initializer `name`; returns `name`.
  virtual std::string constant(const std::string& name, const Tensor& value) = 0;

  // Conveniences over constant(): an f32 scalar, an i64 vector, an i64 scalar.
  std::string scalar(const std::string& name, float v);
  std::string ints(const std::string& name, const std::vector<int64_t>& v);
  std::string int_scalar(const std::string& name, int64_t v);
};

}  // namespace kiln::graph
