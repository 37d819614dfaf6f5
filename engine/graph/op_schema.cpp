#include "engine/graph/op_schema.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "engine/core/error.h"
#include "engine/graph/op_helpers.h"

namespace kiln::graph {

std::optional<std::string> OpSchema::UnaryLayer::onnx_mismatch(
    const std::function<double(const std::string&, double)>& get) const {
  for (const OnnxFloat& f : onnx_floats) {
    const double v = get(f.name, f.onnx_default);
    if (!(std::fabs(v - f.value) <= 1e-6 * std::max(1.0, std::fabs(f.value))))
      return f.name + " is " + std::to_string(v) + ", not " + std::to_string(f.value);
  }
  return std::nullopt;
}

int OpSchema::input_count(const Attributes& attrs) const {
  if (count_attribute.empty()) return static_cast<int>(inputs.size());
  auto it = attrs.find(count_attribute);
  if (it != attrs.end() && std::holds_alternative<int64_t>(it->second)) return static_cast<int>(std::get<int64_t>(it->second));
  const AttrSpec* spec = attribute(count_attribute);
  return spec ? static_cast<int>(std::get<int64_t>(spec->default_value)) : 0;
}

std::string OpSchema::input_name(int port) const {
  if (!count_attribute.empty()) return (inputs.empty() ? std::string("in") : inputs[0].name) + std::to_string(port);
  if (port >= 0 && port < static_cast<int>(inputs.size())) return inputs[static_cast<size_t>(port)].name;
  return "in" + std::to_string(port);
}

std::string OpSchema::output_name(int port) const {
  if (port >= 0 && port < static_cast<int>(outputs.size())) return outputs[static_cast<size_t>(port)].name;
  return "out" + std::to_string(port);
}

const AttrSpec* OpSchema::attribute(const std::string& attr_name) const {
  for (const AttrSpec& a : attributes)
    if (a.name == attr_name) return &a;
  return nullptr;
}

Attributes OpSchema::with_defaults(Attributes attrs) const {
  for (const AttrSpec& a : attributes) attrs.try_emplace(a.name, a.default_value);
  return attrs;
}

namespace {

std::string range_str(const AttrSpec& a) {
  auto num = [&](double v) {
    return a.type == AttrType::Float ? attr_str(v) : std::to_string(static_cast<int64_t>(v));
  };
  std::string s = "[";  // appended piecewise: GCC 12 warns falsely (-Wrestrict) on "[" + std::string
  s.append(a.min ? num(*a.min) : "-inf").append(", ").append(a.max ? num(*a.max) : "inf").append("]");
  return s;
}

bool in_range(const AttrSpec& a, double v) { return (!a.min || v >= *a.min) && (!a.max || v <= *a.max); }

}  // namespace

std::optional<std::string> OpSchema::check_attr(const std::string& attr_name, const AttrValue& value) const {
  const AttrSpec* a = attribute(attr_name);
  if (!a) {
    std::string known;
    for (const AttrSpec& s : attributes) known += (known.empty() ? "" : ", ") + s.name;
    return "unknown attribute '" + attr_name + "' of " + name + "; known: " + (known.empty() ? "(none)" : known);
  }
  if (!holds(a->type, value))
    return attr_name + " expects a value of type " + attr_type_name(a->type) + ", got " + attr_str(value);
  switch (a->type) {
    case AttrType::Int:
      if (!in_range(*a, static_cast<double>(std::get<int64_t>(value))))
        return attr_name + " must be in " + range_str(*a) + ", got " + attr_str(value);
      break;
    case AttrType::Float: {
      double v = std::get<double>(value);
      if (!std::isfinite(v)) return attr_name + " must be a finite number, got " + attr_str(value);
      if (!in_range(*a, v)) return attr_name + " must be in " + range_str(*a) + ", got " + attr_str(value);
      break;
    }
    case AttrType::Choice: {
      const std::string& v = std::get<std::string>(value);
      if (std::find(a->choices.begin(), a->choices.end(), v) == a->choices.end()) {
        std::string c;
        for (const std::string& s : a->choices) c += (c.empty() ? "'" : ", '") + s + "'";
        return attr_name + " must be one of " + c + ", got '" + v + "'";
      }
      break;
    }
    case AttrType::Ints: {
      const auto& v = std::get<std::vector<int64_t>>(value);
      const auto n = static_cast<int>(v.size());
      if (n < a->min_items || (a->max_items >= 0 && n > a->max_items)) {
        std::string want = a->min_items == a->max_items ? std::to_string(a->min_items)
                           : a->max_items < 0           ? "at least " + std::to_string(a->min_items)
                                                        : std::to_string(a->min_items) + " to " + std::to_string(a->max_items);
        return attr_name + " expects " + want + " integers, got " + std::to_string(n) + " (" + attr_str(value) + ")";
      }
      for (int64_t e : v)
        if (!in_range(*a, static_cast<double>(e)))
          return attr_name + " elements must be in " + range_str(*a) + ", got " + attr_str(value);
      break;
    }
    case AttrType::Bool:
    case AttrType::String: break;
  }
  return std::nullopt;
}

std::optional<std::string> OpSchema::check_attrs(const Attributes& attrs) const {
  for (const auto& [k, v] : attrs)
    if (auto why = check_attr(k, v)) return why;
  for (const AttrSpec& a : attributes)
    if (!attrs.count(a.name)) return "attribute '" + a.name + "' of " + name + " is missing";
  if (check) return check(attrs);
  return std::nullopt;
}

void OpRegistry::add(OpSchema schema) {
  KILN_CHECK(!find(schema.name), ValueError, "op '", schema.name, "' is already registered");
  KILN_CHECK(static_cast<bool>(schema.infer) && static_cast<bool>(schema.forward), ValueError, "op '", schema.name,
             "' needs infer and forward");
  for (const AttrSpec& a : schema.attributes)
    KILN_CHECK(!schema.check_attr(a.name, a.default_value), ValueError, "op '", schema.name, "': default of '", a.name,
               "' is invalid: ", *schema.check_attr(a.name, a.default_value));
  ops_.push_back(std::make_unique<OpSchema>(std::move(schema)));
}

const OpSchema* OpRegistry::find(const std::string& name) const {
  for (const auto& op : ops_)
    if (op->name == name) return op.get();
  return nullptr;
}

const OpSchema& OpRegistry::get(const std::string& name) const {
  if (const OpSchema* op = find(name)) return *op;
  std::string known;
  for (const OpSchema* op : all()) known += (known.empty() ? "" : ", ") + op->name;
  throw ValueError("unknown op '" + name + "'; known: " + known);
}

std::vector<const OpSchema*> OpRegistry::all() const {
  std::vector<const OpSchema*> v;
  for (const auto& op : ops_) v.push_back(op.get());
  std::sort(v.begin(), v.end(), [](const OpSchema* a, const OpSchema* b) {
    return std::tie(a->category, a->name) < std::tie(b->category, b->name);
  });
  return v;
}

const OpSchema* OpRegistry::onnx_claimant(const std::string& op_type) const {
  for (const auto& s : ops_)
    for (const std::string& t : s->onnx_import.op_types)
      if (t == op_type) return s.get();
  return nullptr;
}

OpSchema* OpRegistry::mutable_find(const std::string& name) {
  for (auto& s : ops_)
    if (s->name == name) return s.get();
  return nullptr;
}

OpRegistry& OpRegistry::global() {
  static OpRegistry* registry = [] {
    auto* r = new OpRegistry;  // never destroyed: schemas outlive static destructors of users
    detail::register_io_tensor_ops(*r);
    detail::register_layer_ops(*r);
    detail::register_norm_pool_ops(*r);
    detail::register_activation_ops(*r);
    detail::register_sequence_ops(*r);
    detail::register_recurrent_attention_ops(*r);
    detail::register_onnx_rules(*r);
    return r;
  }();
  return *registry;
}

namespace {
template <class T>
const T& get_attr(const Attributes& attrs, const std::string& name, const char* type) {
  auto it = attrs.find(name);
  KILN_CHECK(it != attrs.end(), ValueError, "attribute '", name, "' is missing");
  const T* v = std::get_if<T>(&it->second);
  KILN_CHECK(v, ValueError, "attribute '", name, "' is not of type ", type);
  return *v;
}
}  // namespace

int64_t attr_int(const Attributes& a, const std::string& n) { return get_attr<int64_t>(a, n, "Int"); }
double attr_float(const Attributes& a, const std::string& n) { return get_attr<double>(a, n, "Float"); }
bool attr_bool(const Attributes& a, const std::string& n) { return get_attr<bool>(a, n, "Bool"); }
const std::string& attr_string(const Attributes& a, const std::string& n) { return get_attr<std::string>(a, n, "String"); }
const std::vector<int64_t>& attr_ints(const Attributes& a, const std::string& n) {
  return get_attr<std::vector<int64_t>>(a, n, "Ints");
}

}  // namespace kiln::graph
