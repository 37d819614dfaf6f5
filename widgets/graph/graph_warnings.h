// Warnings about a graph that is valid but probably not what was meant: they do not block
// training (a PyTorch model could do the same), they are listed in the Problems panel.
#pragma once
#include <vector>

#include "engine/graph/analysis.h"
#include "engine/graph/graph.h"

namespace kiln::studio {

// One Problem per suspicious node, in node order:
//  - a Linear whose input has rank 4 ([N, C, H, W], an image batch): torch.nn.Linear maps the
//    last dimension only (it gives [N, C, H, out_features]); a Linear over [N, T, C]
//    sequences (rank 3) is the usual transformer use and gives no warning.
// Nodes whose types are not inferred (they have problems of their own) give none.
std::vector<graph::Problem> graph_warnings(const graph::Graph& g, const graph::Analysis& a);

inline constexpr const char* kLinearOnImageWarning =
    "Linear is applied to the last dimension only; did you mean Flatten first?";

}  // namespace kiln::studio
