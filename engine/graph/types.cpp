#include "engine/graph/types.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace kiln::graph {

std::string shape_str(const SymShape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += shape[i] == kBatch ? std::string("N") : std::to_string(shape[i]);
  }
  return s + "]";
}

std::string TensorType::str() const { return dtype_name(dtype) + shape_str(shape); }

std::string attr_str(const AttrValue& value) {
  struct Visitor {
    std::string operator()(int64_t v) const { return std::to_string(v); }
    // nlohmann prints the shortest representation that reads back exactly (Grisu2).
    std::string operator()(double v) const {
      if (std::isnan(v)) return "nan";
      if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
      std::string s = nlohmann::json(v).dump();
      if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);  // "2", not "2.0"
      return s;
    }
    std::string operator()(bool v) const { return v ? "true" : "false"; }
    std::string operator()(const std::string& v) const { return v; }
    // A list, -1 printed literally (it means N only inside shapes).
    std::string operator()(const std::vector<int64_t>& v) const {
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i) s.append(i ? ", " : "").append(std::to_string(v[i]));
      return s + "]";
    }
  };
  return std::visit(Visitor{}, value);
}

const char* attr_type_name(AttrType type) {
  switch (type) {
    case AttrType::Int: return "Int";
    case AttrType::Float: return "Float";
    case AttrType::Bool: return "Bool";
    case AttrType::String: return "String";
    case AttrType::Choice: return "Choice";
    case AttrType::Ints: return "Ints";
  }
  return "?";
}

bool holds(AttrType type, const AttrValue& value) {
  switch (type) {
    case AttrType::Int: return std::holds_alternative<int64_t>(value);
    case AttrType::Float: return std::holds_alternative<double>(value);
    case AttrType::Bool: return std::holds_alternative<bool>(value);
    case AttrType::String:
    case AttrType::Choice: return std::holds_alternative<std::string>(value);
    case AttrType::Ints: return std::holds_alternative<std::vector<int64_t>>(value);
  }
  return false;
}

}  // namespace kiln::graph
