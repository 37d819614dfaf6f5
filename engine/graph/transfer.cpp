#include "engine/graph/transfer.h"

#include <algorithm>

#include "engine/core/error.h"
#include "engine/graph/analysis.h"
#include "engine/graph/op_schema.h"

namespace kiln::graph {

NodeId find_head(const Graph& g) {
  const std::vector<NodeId> outs = g.output_nodes();
  KILN_CHECK(outs.size() == 1, ValueError, "finding the classifier head needs a graph with one Output node, this one has ",
             outs.size());
  const Analysis a = analyze(g);
  const Node& output = g.node(outs[0]);
  const Node* at = &output;
  for (;;) {
    const std::optional<PortRef> src = g.source_of({at->id, 0});
    KILN_CHECK(src, ValueError, "the graph has no Linear layer at its end: the input of '", at->name,
               "' is not connected");
    at = &g.node(src->node);
    if (at->op == "Linear") return at->id;
    const OpSchema& s = OpRegistry::global().get(at->op);
    const auto info = a.nodes.find(at->id);
    const bool parameter_free = info != a.nodes.end() && info->second.parameters == 0;
    KILN_CHECK(at->op != "Input" && parameter_free && s.input_count(at->attrs) >= 1, ValueError,
               "the graph has no Linear layer at its end: walking back from the Output '", output.name, "' stops at '",
               at->name, "' (", at->op, "), which is neither a Linear layer nor a parameter-free op");
  }
}

NodeId replace_head(Graph& g, int64_t out_features) {
  KILN_CHECK(out_features >= 1, ValueError, "the new head needs at least 1 output, got ", out_features);
  const NodeId head = find_head(g);
  g.set_attr(head, "out_features", AttrValue{out_features});
  const std::string prefix = g.node(head).name + ".";
  std::erase_if(g.initial_state, [&](const auto& kv) { return kv.first.rfind(prefix, 0) == 0; });
  return head;
}

void freeze_until(Graph& g, const std::string& node) {
  const Node* last = g.find_by_name(node);
  if (!last) {
    std::string names;
    for (const Node& n : g.nodes()) {
      if (!names.empty()) names += ", ";
      names += n.name;
    }
    throw ValueError("cannot freeze until '" + node + "': the graph has no node of that name (nodes: " + names + ")");
  }
  for (NodeId id : g.topological_order()) {
    g.set_trainable(id, false);
    if (id == last->id) break;
  }
}

void freeze_all_but(Graph& g, NodeId keep) {
  g.node(keep);  // IndexError for an unknown id
  for (const Node& n : std::vector<Node>(g.nodes())) g.set_trainable(n.id, n.id == keep);
}

}  // namespace kiln::graph
