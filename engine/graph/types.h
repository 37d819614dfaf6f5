// Value types of the graph IR: symbolic shapes, tensor types and node attributes.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "engine/core/dtype.h"

namespace kiln::graph {

using NodeId = int64_t;

// Note [Symbolic dimensions]
// A SymShape entry is a known size >= 0 or a symbolic dimension (< 0):
//   kBatch (-1)        the batch "N", normally the first entry ({kBatch, 1, 28, 28} is
//                      "[N, 1, 28, 28]");
//   kUnknownDim (-2)   "?": a size shape inference cannot express (it depends on a symbolic
//                      dimension in a way no symbol names, e.g. Conv2d over a symbolic height);
//   <= -3              a named dimension of a model input, as ONNX's dim_param ("sequence",
//                      "height"): sym_dim interns each name once per process, so equal names
//                      compare equal. The code is not stable across processes: JSON and ONNX
//                      keep the name (Input's "dim_params", onnx_types' text).
inline constexpr int64_t kBatch = -1;
inline constexpr int64_t kUnknownDim = -2;
using SymShape = std::vector<int64_t>;

// The entry for symbol `name`: "N" -> kBatch, "?" -> kUnknownDim, any other name -> its
// interned code (<= -3; thread-safe). ValueError for "", a name of only digits, a name with
// one of " ,;[]" at either end or any of ",;[]" inside (they would not read back from shape_str).
int64_t sym_dim(const std::string& name);
// "768", "N", "?", "sequence" (the inverse of sym_dim for entries < 0).
std::string dim_str(int64_t dim);
inline bool is_symbolic(int64_t dim) { return dim < 0; }

// "[N, 1, 28, 28]", "[N, sequence, 768]" (dim_str of each entry).
std::string shape_str(const SymShape& shape);

// The type that flows along an edge.
struct TensorType {
  DType dtype = DType::f32;
  SymShape shape;
  std::string str() const;  // "f32[N, 10]"
  bool operator==(const TensorType&) const = default;
};

// The kind of a node attribute (op_schema.h's AttrSpec says which one an attribute has):
// Int -> int64_t, Float -> double, Bool -> bool, String and Choice -> std::string,
// Ints -> std::vector<int64_t>.
enum class AttrType { Int, Float, Bool, String, Choice, Ints };
using AttrValue = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>>;
using Attributes = std::map<std::string, AttrValue>;

// "3", "0.5", "1e-05", "2", "true", "tanh", "[3, 3]" (floats in the shortest form that reads
// back exactly, without a trailing ".0"; "nan", "inf").
std::string attr_str(const AttrValue& value);
// "Int", "Float", ...
const char* attr_type_name(AttrType type);
// Whether `value` holds the alternative `type` stores.
bool holds(AttrType type, const AttrValue& value);

}  // namespace kiln::graph
