#include "engine/graph/input_dims.h"

#include <map>
#include <optional>

#include "engine/graph/analysis.h"
#include "engine/graph/op_schema.h"

namespace kiln::graph {

namespace {

// The dimension of node `id`'s input 0 that attribute rule `r` must equal, when known.
std::optional<int64_t> input_dim(const Graph& g, const Analysis& a, NodeId id, const OpSchema::InputDimAttribute& r) {
  const std::optional<PortRef> from = g.source_of({id, 0});
  if (!from) return std::nullopt;
  const std::optional<TensorType> type = a.type_of(*from);
  if (!type) return std::nullopt;
  const SymShape& shape = type->shape;
  if (shape.size() < 2 || (r.rank && shape.size() != r.rank)) return std::nullopt;
  const int64_t value = r.dim < 0 ? shape.back() : shape[static_cast<size_t>(r.dim)];
  if (value <= 0) return std::nullopt;
  return value;
}

std::optional<int64_t> int_attr(const Node& n, const std::string& name) {
  auto it = n.attrs.find(name);
  if (it == n.attrs.end()) return std::nullopt;
  if (const int64_t* v = std::get_if<int64_t>(&it->second)) return *v;
  return std::nullopt;
}

}  // namespace

std::vector<AttributeUpdate> follow_input_dims(const Graph& before, const Graph& after, NodeId edited_node,
                                               const std::string& edited_attribute) {
  const Analysis old_analysis = analyze(before);
  // The attributes consistent before the edit: the candidates to follow it.
  std::map<std::pair<NodeId, std::string>, bool> candidates;
  for (const Node& n : before.nodes()) {
    const OpSchema* schema = OpRegistry::global().find(n.op);
    if (!schema) continue;
    for (const auto& r : schema->input_dim_attributes) {
      if (n.id == edited_node && r.attribute == edited_attribute) continue;
      const auto dim = input_dim(before, old_analysis, n.id, r);
      const auto value = int_attr(n, r.attribute);
      if (dim && value && *dim == *value) candidates[{n.id, r.attribute}] = true;
    }
  }
  std::map<std::pair<NodeId, std::string>, int64_t> updates;
  Graph g = after;
  for (size_t pass = 0; pass <= g.nodes().size(); ++pass) {
    const Analysis a = analyze(g);
    bool changed = false;
    for (const Node& n : g.nodes()) {
      const OpSchema* schema = OpRegistry::global().find(n.op);
      if (!schema) continue;
      for (const auto& r : schema->input_dim_attributes) {
        if (!candidates.count({n.id, r.attribute})) continue;
        const auto dim = input_dim(g, a, n.id, r);
        const auto value = int_attr(n, r.attribute);
        if (!dim || !value || *dim == *value) continue;
        if (g.check_attr(n.id, r.attribute, AttrValue(*dim))) continue;  // out of the attribute's range
        updates[{n.id, r.attribute}] = *dim;
        g.set_attr(n.id, r.attribute, AttrValue(*dim));
        changed = true;
      }
    }
    if (!changed) break;
  }
  std::vector<AttributeUpdate> out;
  for (const auto& [key, value] : updates) out.push_back({key.first, key.second, value});
  return out;
}

}  // namespace kiln::graph
