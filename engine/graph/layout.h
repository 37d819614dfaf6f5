// Automatic layered layout (Sugiyama, Tamassia & Toda 1981): longest-path layering,
// barycentre crossing reduction with long edges split by dummy nodes, then coordinates
// that pull each node toward its neighbours. Deterministic: the same graph always gets
// the same positions.
#pragma once
#include "engine/graph/graph.h"

namespace kiln::graph {

struct LayoutOptions {
  bool top_down = true;          // layers run down the page (false: left to right)
  double layer_spacing = 120;    // scene units between consecutive layers
  double node_spacing = 200;     // scene units between neighbours within a layer
};

// Sets every node's x, y (whole numbers): layer k at k * layer_spacing along the layer
// axis; across it, nodes at least node_spacing apart, placed as near the mean of their
// neighbours as the order allows, the smallest coordinate 0. Cycles are broken (for
// layout only) at the edges a depth-first search finds going back.
void auto_layout(Graph& graph, const LayoutOptions& options = {});

}  // namespace kiln::graph
