#include "engine/graph/types.h"

#include <cmath>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "engine/core/error.h"

namespace kiln::graph {

namespace {

// The interned names of Note [Symbolic dimensions]: names[i] has code -3 - i.
struct SymbolTable {
  std::mutex mutex;
  std::vector<std::string> names;
  std::map<std::string, int64_t> codes;
};
SymbolTable& symbols() {
  static SymbolTable table;
  return table;
}

}  // namespace

int64_t sym_dim(const std::string& name) {
  if (name == "N") return kBatch;
  if (name == "?") return kUnknownDim;
  KILN_CHECK(!name.empty(), ValueError, "a symbolic dimension needs a name");
  KILN_CHECK(name.find_first_not_of("0123456789") != std::string::npos, ValueError, "symbolic dimension '", name,
             "' is a number; a name needs a letter");
  KILN_CHECK(name.find_first_of(",;[]") == std::string::npos && name.front() != ' ' && name.back() != ' ',
             ValueError, "symbolic dimension '", name, "' may not contain , ; [ ] or start or end with a space");
  SymbolTable& t = symbols();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto it = t.codes.find(name);
  if (it != t.codes.end()) return it->second;
  const int64_t code = -3 - static_cast<int64_t>(t.names.size());
  t.names.push_back(name);
  t.codes.emplace(name, code);
  return code;
}

std::string dim_str(int64_t dim) {
  if (dim >= 0) return std::to_string(dim);
  if (dim == kBatch) return "N";
  if (dim == kUnknownDim) return "?";
  SymbolTable& t = symbols();
  std::lock_guard<std::mutex> lock(t.mutex);
  const auto i = static_cast<uint64_t>(-(dim + 3));  // no overflow down to INT64_MIN
  return i < t.names.size() ? t.names[i] : "?";
}

std::string shape_str(const SymShape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += dim_str(shape[i]);
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
