// Automatic layered layout (Sugiyama, Tamassia & Toda 1981): longest-path layering,
// barycentre crossing reduction with long edges split by dummy nodes, then coordinates
// that keep the main chain of the network in one straight line (Brandes & Koepf 2001's
// vertical alignment, simplified) with branches and skip connections beside it.
// Deterministic: the same graph always gets the same positions.
#pragma once
#include <functional>

#include "engine/graph/graph.h"

namespace kiln::graph {

struct LayoutOptions {
  bool top_down = true;          // layers run down the page (false: left to right)
  double layer_spacing = 120;    // scene units between consecutive layers
  double node_spacing = 200;     // scene units between neighbours within a layer
  // The size of a node across the layers (its width when top_down), scene units; empty:
  // every node fits in node_spacing. Wider nodes get more room: centres at least
  // (size_a + size_b) / 2 + 32 apart.
  std::function<double(const Node&)> node_size;
};

// Sets every node's x, y (whole numbers): layer k at k * layer_spacing along the layer
// axis, k the longest path from a node without inputs. Across it, nodes at least
// node_spacing apart (more for wide nodes, see node_size); the lanes of edges that span
// several layers node_spacing / 4 apart and node_spacing * 5 / 8 from a node's centre.
// Each node's main successor (the one with the longest path to a node without outputs,
// ties broken by more nodes on that path, then by order) continues its chain on the same
// coordinate where the order allows: a residual block's convolutions stay in line and its
// skip edge runs in a lane beside them. The others sit at the mean of their neighbours.
// The smallest coordinate is 0. Cycles are broken (for layout only) at the edges a
// depth-first search finds going back.
void auto_layout(Graph& graph, const LayoutOptions& options = {});

}  // namespace kiln::graph
