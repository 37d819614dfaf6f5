// Transfer learning on a graph (an imported model, a trained run's graph): a new classifier
// head and frozen layers, as torchvision's fine-tuning tutorial does by hand
// (model.fc = nn.Linear(..., n); p.requires_grad = False for the rest).
#pragma once
#include <cstdint>
#include <string>

#include "engine/graph/graph.h"

namespace kiln::graph {

// The head: the last Linear on the path that feeds the (single) Output node, walking back
// through first inputs over parameter-free nodes (Softmax, Dropout, Flatten, ...).
// ValueError naming the node where the walk stops (a layer with parameters other than
// Linear, an Input, an unconnected port) or when the graph has not exactly one Output.
NodeId find_head(const Graph& g);

// Gives the head (find_head) `out_features` outputs and drops its initial_state entries, so
// GraphModule initializes it afresh (nn.Linear's default initialization). Returns its id.
// ValueError as find_head, or when out_features < 1.
NodeId replace_head(Graph& g, int64_t out_features);

// Freezes (Node::trainable = false) every node up to and including `node` in topological
// order; later nodes stay as they are. ValueError naming `node` when no node has that name.
void freeze_until(Graph& g, const std::string& node);

// Freezes every node but `keep` (the head).
void freeze_all_but(Graph& g, NodeId keep);

}  // namespace kiln::graph
