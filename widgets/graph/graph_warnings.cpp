#include "widgets/graph/graph_warnings.h"

namespace kiln::studio {

std::vector<graph::Problem> graph_warnings(const graph::Graph& g, const graph::Analysis& a) {
  std::vector<graph::Problem> out;
  for (const graph::Node& n : g.nodes()) {
    if (n.op != "Linear") continue;
    auto info = a.nodes.find(n.id);
    if (info == a.nodes.end() || info->second.inputs.empty()) continue;
    if (info->second.inputs[0].shape.size() == 4) out.push_back({n.id, kLinearOnImageWarning});
  }
  return out;
}

}  // namespace kiln::studio
