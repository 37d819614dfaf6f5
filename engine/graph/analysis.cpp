#include "engine/graph/analysis.h"

#include <algorithm>
#include <functional>

#include "engine/core/error.h"
#include "engine/graph/op_helpers.h"

namespace kiln::graph {

using detail::sat_add;
using detail::sat_mul;

std::optional<TensorType> Analysis::type_of(PortRef p) const {
  auto it = nodes.find(p.node);
  if (it == nodes.end() || p.port < 0 || p.port >= static_cast<int>(it->second.outputs.size())) return std::nullopt;
  return it->second.outputs[static_cast<size_t>(p.port)];
}

std::vector<std::string> Analysis::problems_of(NodeId id) const {
  std::vector<std::string> v;
  for (const Problem& p : problems)
    if (p.node == id) v.push_back(p.message);
  return v;
}

namespace {

// Strongly connected components with more than one node (Tarjan 1972), each sorted by id.
std::vector<std::vector<NodeId>> cycles(const Graph& g) {
  std::map<NodeId, std::vector<NodeId>> succ;
  for (const Edge& e : g.edges()) succ[e.from.node].push_back(e.to.node);
  std::map<NodeId, int> index, low;
  std::vector<NodeId> stack;
  std::map<NodeId, bool> on_stack;
  std::vector<std::vector<NodeId>> out;
  int counter = 0;
  std::function<void(NodeId)> visit = [&](NodeId v) {
    index[v] = low[v] = counter++;
    stack.push_back(v);
    on_stack[v] = true;
    for (NodeId w : succ[v]) {
      if (!index.count(w)) {
        visit(w);
        low[v] = std::min(low[v], low[w]);
      } else if (on_stack[w]) {
        low[v] = std::min(low[v], index[w]);
      }
    }
    if (low[v] == index[v]) {
      std::vector<NodeId> scc;
      NodeId w;
      do {
        w = stack.back();
        stack.pop_back();
        on_stack[w] = false;
        scc.push_back(w);
      } while (w != v);
      if (scc.size() > 1) {
        std::sort(scc.begin(), scc.end());
        out.push_back(scc);
      }
    }
  };
  for (const Node& n : g.nodes())
    if (!index.count(n.id)) visit(n.id);
  return out;
}

// Kahn's order over the nodes not on or after a cycle, smallest id first among the ready.
std::vector<NodeId> acyclic_order(const Graph& g) {
  try {
    return g.topological_order();
  } catch (const ValueError&) {
  }
  std::map<NodeId, int> indegree;
  for (const Node& n : g.nodes()) indegree[n.id] = 0;
  for (const Edge& e : g.edges()) ++indegree[e.to.node];
  std::vector<NodeId> order, ready;
  for (const auto& [id, d] : indegree)
    if (d == 0) ready.push_back(id);
  while (!ready.empty()) {
    auto it = std::min_element(ready.begin(), ready.end());
    NodeId id = *it;
    ready.erase(it);
    order.push_back(id);
    for (const Edge& e : g.edges())
      if (e.from.node == id && --indegree[e.to.node] == 0) ready.push_back(e.to.node);
  }
  return order;
}

}  // namespace

Analysis analyze(const Graph& g) {
  Analysis a;
  const OpRegistry& registry = OpRegistry::global();
  if (g.input_nodes().empty()) a.problems.push_back({-1, "the graph has no Input node"});
  if (g.output_nodes().empty()) a.problems.push_back({-1, "the graph has no Output node"});

  for (const std::vector<NodeId>& cycle : cycles(g)) {
    std::string names;
    for (NodeId id : cycle) names += (names.empty() ? "'" : ", '") + g.node(id).name + "'";
    for (NodeId id : cycle) a.problems.push_back({id, "cycle: this node is on a loop through " + names});
  }

  // Unconnected inputs, for every node (also those after a cycle).
  for (const Node& n : g.nodes()) {
    const OpSchema& s = registry.get(n.op);
    for (int p = 0; p < s.input_count(n.attrs); ++p)
      if (!g.source_of({n.id, p})) a.problems.push_back({n.id, "input '" + s.input_name(p) + "' is not connected"});
  }

  for (NodeId id : acyclic_order(g)) {
    const Node& n = g.node(id);
    const OpSchema& s = registry.get(n.op);
    NodeInfo info;
    bool known = true;
    for (int p = 0; p < s.input_count(n.attrs) && known; ++p) {
      auto src = g.source_of({id, p});
      auto t = src ? a.type_of(*src) : std::nullopt;
      if (t) info.inputs.push_back(*t);
      else known = false;
    }
    if (!known) continue;  // unconnected (reported above) or fed by a node that failed
    try {
      info.outputs = s.infer(info.inputs, n.attrs);
      KILN_CHECK(info.outputs.size() == s.outputs.size(), Error, n.op, ": shape inference gave ", info.outputs.size(),
                 " outputs for ", s.outputs.size(), " ports");
    } catch (const Error& e) {
      a.problems.push_back({id, e.what()});
      continue;
    }
    if (s.parameters) {
      for (const ParamSpec& p : s.parameters(info.inputs, n.attrs)) {
        int64_t count = 1;
        bool overflow = false;
        for (int64_t d : p.shape) overflow = overflow || __builtin_mul_overflow(count, d, &count);
        overflow = overflow || __builtin_add_overflow(info.parameters, count, &info.parameters);
        if (overflow) {
          a.problems.push_back({id, "parameter count overflows int64 (" + p.name + " " + shape_str(p.shape) + ")"});
          info.parameters = detail::kInt64Max;
          break;
        }
      }
    }
    if (s.macs) info.macs = s.macs(info.inputs, info.outputs, n.attrs);
    if (info.parameters == detail::kInt64Max) {
      a.total_parameters = detail::kInt64Max;
    } else if (a.total_parameters != detail::kInt64Max &&
               __builtin_add_overflow(a.total_parameters, info.parameters, &a.total_parameters)) {
      a.problems.push_back({id, "the graph's total parameter count overflows int64 at this node"});
      a.total_parameters = detail::kInt64Max;
    }
    a.total_macs = sat_add(a.total_macs, info.macs);
    a.nodes.emplace(id, std::move(info));
  }
  std::stable_sort(a.problems.begin(), a.problems.end(), [](const Problem& x, const Problem& y) { return x.node < y.node; });
  return a;
}

}  // namespace kiln::graph
