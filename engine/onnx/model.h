// An ONNX model read into Kiln's own structures (no protobuf types in this header):
// the graph's nodes with their attributes, initializers as kiln::Tensor, inputs and
// outputs with their (possibly symbolic) shapes, and the opsets it imports.
// Reading uses Debian's libonnx protobuf classes (onnx::ModelProto); see model.cpp.
// Field names follow onnx/onnx.proto (ONNX IR version 8, opsets 7 through 21).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/tensor.h"

namespace kiln::onnx {

struct Graph;

// One dimension of a value's shape: a size (dim_value), a symbolic name (dim_param,
// e.g. "N" or "batch_size"), or unknown (value -1 and empty param).
struct Dim {
  int64_t value = -1;
  std::string param;
  bool known() const { return value >= 0; }
};

// A graph input or output (onnx::ValueInfoProto): a tensor or a sequence of tensors.
struct ValueInfo {
  std::string name;
  int32_t elem_type = 0;      // onnx::TensorProto::DataType (1 = FLOAT ...); 0 = not given
  bool is_sequence = false;   // seq(tensor): elem_type and shape describe the elements
  bool is_optional = false;   // optional(tensor) or optional(seq(tensor))
  bool has_shape = false;     // false: rank unknown
  std::vector<Dim> shape;
  std::string type_str() const;  // "FLOAT[N, 3, 224, 224]"
};

// onnx::AttributeProto: exactly one of the value fields is meaningful, per `type`.
struct Attribute {
  enum class Type { Undefined, Float, Int, String, Tensor, Graph, Floats, Ints, Strings, Tensors, Graphs, TypeProto };
  std::string name;
  Type type = Type::Undefined;
  double f = 0;
  int64_t i = 0;
  std::string s;
  kiln::Tensor t;
  std::shared_ptr<const Graph> g;
  std::vector<double> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<kiln::Tensor> tensors;
  std::vector<std::shared_ptr<const Graph>> graphs;
};
const char* attribute_type_name(Attribute::Type t);  // "INT", "FLOATS" ... as in onnx.proto

struct Node {
  std::string op_type;  // "Conv"
  std::string domain;   // "" (= ai.onnx) or "ai.onnx.ml", "com.microsoft" ...
  std::string name;     // may be empty in the file; the importer names it "<op_type>_<index>"
  std::vector<std::string> inputs;   // "" marks an omitted optional input
  std::vector<std::string> outputs;  // "" marks an omitted optional output
  std::map<std::string, Attribute> attributes;
};

struct Graph {
  std::string name;
  std::vector<Node> nodes;                          // in the file's (topological) order
  std::map<std::string, kiln::Tensor> initializers; // by name, on the CPU
  std::vector<ValueInfo> inputs;                    // without those that have an initializer
  std::vector<ValueInfo> outputs;
};

struct Model {
  std::string path;            // the file it came from ("" when parsed from memory)
  int64_t ir_version = 0;
  std::string producer_name, producer_version;
  std::map<std::string, int64_t> opsets;  // domain ("" = ai.onnx) -> version
  Graph graph;
  // The ai.onnx opset the model imports (ValueError when it imports none).
  int64_t opset() const;
  int64_t parameter_count() const;  // elements of all initializers
};

// Reads a .onnx file. Files over 2 GB are read with a raised protobuf limit. Initializers
// stored as external data (onnx.proto's data_location = EXTERNAL) are read from files in the
// model's folder; a location that is absolute or escapes that folder ("../../etc/passwd")
// is refused. Throws IoError (missing, truncated or corrupt file, naming the path) and
// ValueError (a malformed graph: missing names, bad attributes, naming the node).
Model load_model(const std::string& path);
// The same from bytes in memory; external data is looked up in base_dir ("" = refuse).
Model parse_model(const std::string& bytes, const std::string& base_dir, const std::string& what = "<memory>");

}  // namespace kiln::onnx
