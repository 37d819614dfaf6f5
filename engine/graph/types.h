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

// The symbolic batch dimension "N": a SymShape holds it as its first entry
// ({kBatch, 1, 28, 28} is "[N, 1, 28, 28]"); every other entry is a known size >= 0.
inline constexpr int64_t kBatch = -1;
using SymShape = std::vector<int64_t>;

// "[N, 1, 28, 28]" (kBatch prints as N).
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
