#include "engine/onnx/export_names.h"

#include <nlohmann/json.hpp>

#include <vector>

#include "engine/graph/op_schema.h"
#include "engine/onnx/export_nodes.h"

namespace kiln::onnx::detail {

using json = nlohmann::json;

namespace {

bool imported(const graph::Node& n) { return n.op.rfind("onnx.", 0) == 0 && n.op != "onnx.Initializer"; }

// The onnx_names attribute of an imported node ({"node", "inputs", "outputs"}), or null
// (a Studio node, or a graph imported before names were recorded, or unreadable JSON).
json recorded(const graph::Node& n) {
  if (!imported(n)) return nullptr;
  auto it = n.attrs.find("onnx_names");
  if (it == n.attrs.end() || !std::holds_alternative<std::string>(it->second)) return nullptr;
  json j = json::parse(std::get<std::string>(it->second), nullptr, false);
  return j.is_object() ? j : json(nullptr);
}

std::string string_at(const json& j, const char* key, size_t i) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_array() || i >= j[key].size() || !j[key][i].is_string()) return "";
  return j[key][i].get<std::string>();
}

// The name an imported consumer of `from` recorded for that input ("" when none did).
std::string recorded_input(const graph::Graph& g, graph::PortRef from) {
  for (const graph::PortRef& to : g.consumers_of(from)) {
    const graph::Node& c = g.node(to.node);
    json r = recorded(c);
    if (r.is_null()) continue;
    const std::vector<int64_t>& slots = graph::attr_ints(c.attrs, "onnx_input_slots");
    if (static_cast<size_t>(to.port) >= slots.size()) continue;
    std::string name = string_at(r, "inputs", static_cast<size_t>(slots[static_cast<size_t>(to.port)]));
    if (!name.empty()) return name;
  }
  return "";
}

class Claims {
 public:
  // `want` when it is free, else `fallback` (suffixed "_1", "_2", ... while taken).
  std::string claim(const std::string& want, const std::string& fallback) {
    std::string s = !want.empty() && !taken_.count(want) ? want : fallback;
    for (int i = 1; taken_.count(s); ++i) s = fallback + "_" + std::to_string(i);
    taken_.insert(s);
    return s;
  }
  void release(const std::string& name) { taken_.erase(name); }

 private:
  std::set<std::string> taken_;
};

}  // namespace

ExportNames assign_names(const graph::Graph& g) {
  ExportNames out;
  Claims values, nodes;
  std::set<graph::PortRef> from_model;  // values named as the imported model named them
  for (graph::NodeId id : g.topological_order()) {
    const graph::Node& n = g.node(id);
    if (n.op == "Output") continue;
    if (n.op == "Input" || n.op == "onnx.Initializer") {
      auto own = n.attrs.find("onnx_name");  // onnx.Initializer's own record
      std::string want = own != n.attrs.end() && std::holds_alternative<std::string>(own->second)
                             ? std::get<std::string>(own->second)
                             : std::string();
      if (want.empty()) want = recorded_input(g, {id, 0});
      out.values[{id, 0}] = values.claim(want, value_name(n, 0));
      if (!want.empty() && out.values[{id, 0}] == want) from_model.insert({id, 0});
      continue;
    }
    if (!imported(n)) {
      const graph::OpSchema& s = graph::OpRegistry::global().get(n.op);
      for (size_t p = 0; p < s.outputs.size(); ++p)
        out.values[{id, static_cast<int>(p)}] = values.claim("", value_name(n, static_cast<int>(p)));
      continue;
    }
    json r = recorded(n);
    std::string node_name = r.is_object() && r.contains("node") && r["node"].is_string() ? r["node"].get<std::string>() : "";
    out.nodes[id] = nodes.claim(node_name, n.name);
    for (int64_t i = 0; i < graph::attr_int(n.attrs, "onnx_outputs"); ++i) {
      graph::PortRef port{id, static_cast<int>(i)};
      std::string want = string_at(r, "outputs", static_cast<size_t>(i));
      if (want.empty() && !r.is_null() && g.consumers_of(port).empty()) {
        out.values[port] = "";  // an optional output the model omits
        continue;
      }
      out.values[port] = values.claim(want, value_name(n, port.port));
      if (!want.empty() && out.values[port] == want) from_model.insert(port);
    }
  }
  std::set<graph::PortRef> received;
  for (graph::NodeId id : g.output_nodes()) {
    const graph::Node& o = g.node(id);
    std::optional<graph::PortRef> src = g.source_of({id, 0});
    if (!src) continue;
    const graph::Node& s = g.node(src->node);
    if (s.op == "Input" || received.count(*src) || out.values[*src].empty()) {
      out.identity_outputs.insert(id);
      out.outputs[id] = values.claim(o.name, o.name);
      continue;
    }
    received.insert(*src);
    if (!from_model.count(*src)) {  // a Studio value (or one imported without names) takes the Output's name
      std::string old = out.values[*src];
      values.release(old);
      out.values[*src] = values.claim(o.name, old);
    }
    out.outputs[id] = out.values[*src];
  }
  return out;
}

}  // namespace kiln::onnx::detail
