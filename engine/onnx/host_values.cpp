#include "engine/onnx/host_values.h"

namespace kiln::onnx {

namespace {

// Ops cheap enough on a handful of integers (or floats derived from them) to run on the host.
// Not Expand, Tile, ConstantOfShape: their outputs grow with the values they read.
const std::set<std::string>& host_ops() {
  static const std::set<std::string> ops{
      "Abs",       "Add",        "And",       "Cast",     "Ceil",      "Concat",     "Div",   "Equal",
      "Floor",     "Gather",     "Greater",   "GreaterOrEqual",        "Identity",   "Less",  "LessOrEqual",
      "Max",       "Min",        "Mod",       "Mul",      "Neg",       "Not",        "Or",    "Range",
      "ReduceMax", "ReduceMin",  "ReduceProd", "ReduceSum", "Reshape", "Sign",       "Slice", "Sqrt",
      "Squeeze",   "Sub",        "Unsqueeze", "Where"};
  return ops;
}

bool small_integral(const Tensor& t) {
  return t.defined() && (is_integral(t.dtype()) || t.dtype() == DType::bool_) && t.numel() <= HostPlan::kMaxElements;
}

// A Constant node whose value is a small integer tensor.
bool host_constant_node(const Node& n) {
  if (!n.domain.empty() || n.op_type != "Constant") return false;
  for (const auto& [name, a] : n.attributes) {
    if (name == "value_int") return true;
    if (name == "value_ints") return static_cast<int64_t>(a.ints.size()) <= HostPlan::kMaxElements;
    if (name == "value") return small_integral(a.t);
  }
  return false;
}

}  // namespace

HostPlan plan_host_values(const Graph& g) {
  HostPlan plan;
  std::set<std::string> small_initializers;
  for (const auto& [name, t] : g.initializers)
    if (small_integral(t)) small_initializers.insert(name);
  plan.nodes.assign(g.nodes.size(), false);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    bool host = false;
    if (n.domain.empty() && (n.op_type == "Shape" || n.op_type == "Size")) {
      host = true;
    } else if (host_constant_node(n)) {
      host = true;
    } else if (n.domain.empty() && host_ops().count(n.op_type) && !n.inputs.empty()) {
      bool all = true, any_value = false;
      for (const std::string& in : n.inputs) {
        if (in.empty()) continue;
        const bool value = plan.values.count(in) > 0;
        any_value |= value;
        all &= value || small_initializers.count(in) > 0;
      }
      host = all && any_value;
    }
    if (!host) continue;
    plan.nodes[k] = true;
    for (const std::string& out : n.outputs)
      if (!out.empty()) plan.values.insert(out);
  }
  plan.constants = small_initializers;  // every small integer initializer: read as shapes without a wait
  return plan;
}

}  // namespace kiln::onnx
