#include "engine/onnx/executor_fallback.h"

#include <algorithm>

#include "engine/core/registry.h"

namespace kiln::onnx {

std::string FallbackStats::str() const {
  std::vector<std::pair<int64_t, std::string>> by_count;
  for (const auto& [op, k] : op_types) by_count.emplace_back(-k, op);
  std::sort(by_count.begin(), by_count.end());
  std::string s = std::to_string(nodes) + (nodes == 1 ? " node (" : " nodes (");
  for (size_t i = 0; i < by_count.size(); ++i)
    s += (i ? ", " : "") + std::to_string(-by_count[i].first) + " " + by_count[i].second;
  return s + ")";
}

void FallbackStats::merge(const FallbackStats& other) {
  nodes += other.nodes;
  for (const auto& [op, k] : other.op_types) op_types[op] += k;
  for (const auto& [op, why] : other.reasons) reasons.emplace(op, why);
}

namespace detail {

void FallbackLog::record(const Node& n, const std::string& why) {
  std::lock_guard<std::mutex> lock(mutex);
  if (!counted.insert(&n).second) return;
  ++stats.nodes;
  ++stats.op_types[op_key(n)];
  stats.reasons.emplace(op_key(n), why);
}

bool FallbackLog::counts(const Node& n) {
  std::lock_guard<std::mutex> lock(mutex);
  return counted.count(&n) > 0;
}

bool has_subgraph(const Node& n) {
  for (const auto& [name, a] : n.attributes)
    if (a.g || !a.graphs.empty()) return true;
  return false;
}

Backend* fallback_backend(Device device, const SessionOptions& options) {
  return options.cpu_fallback && device.type != DeviceType::cpu ? backend_for(device) : nullptr;
}

Tensor place(const Tensor& t, Device device, const Backend* fallback) {
  if (fallback && !fallback->supports(OpId::copy, t.dtype())) return t;
  return t.to(device);
}

std::vector<Value> values_on(const std::vector<Value>& in, Device device, const Backend* fallback) {
  std::vector<Value> out;
  out.reserve(in.size());
  for (const Value& v : in) {
    Value c = v;
    if (v.tensor.defined()) c.tensor = place(v.tensor, device, fallback);
    if (v.is_sequence()) {
      std::vector<Tensor> items;
      for (const Tensor& t : *v.sequence) items.push_back(place(t, device, fallback));
      c.sequence = std::make_shared<const std::vector<Tensor>>(std::move(items));
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::string device_lacks(const std::vector<Value>& in, Device device, const Backend& backend) {
  auto check = [&](const Tensor& t) -> std::string {
    if (!t.defined() || t.device() == device) return "";
    if (!backend.supports(OpId::copy, t.dtype()))
      return device.str() + " cannot hold " + dtype_name(t.dtype()) + " (Backend::supports(copy, " + dtype_name(t.dtype()) + ") is false)";
    if (t.device().type == DeviceType::cpu) return "";  // a host value: OpContext::input copies it over
    return "an input is on " + t.device().str();
  };
  for (const Value& v : in) {
    std::string why = check(v.tensor);
    for (size_t k = 0; why.empty() && v.is_sequence() && k < v.sequence->size(); ++k) why = check((*v.sequence)[k]);
    if (!why.empty()) return why;
  }
  return "";
}

}  // namespace detail
}  // namespace kiln::onnx
