// Graph <-> JSON: versioned, keys sorted, doubles in the shortest form that reads back
// exactly, values that fit in 100 columns on one line (edges, attributes), larger ones one
// member per line with two-space indent; so to_json(from_json(s)) == s for every s that
// to_json wrote, and diffs of saved graphs stay small.
//
//   {"edges": [{"from": {"node": 1, "port": 0}, "to": {"node": 2, "port": 0}}, ...],
//    "format": "kiln-graph", "name": "Fashion-MNIST CNN",
//    "nodes": [{"attrs": {...}, "id": 1, "name": "input", "op": "Input", "x": 0.0, "y": 0.0}, ...],
//    "version": 1}
//
// Version 2 adds "initial_state": the graph's initial parameter and buffer tensors
// (Graph::initial_state, e.g. an imported model's weights), encoded as json_state.h says.
// A graph without them is still written as version 1, so that older Kiln builds keep
// opening every graph they could before; version 1 files read as before (no migration
// needed: the new member is optional). tests/engine/data/graph_v1.json is a file that
// the version 1 writer made.
#pragma once
#include <string>

#include "engine/graph/graph.h"

namespace kiln::graph {

inline constexpr int kGraphFormatVersion = 2;  // the newest version read and written

std::string to_json(const Graph& graph);  // ends with a newline
// ValueError "graph JSON: <what> (node 'conv1')" for malformed JSON, another format, a
// version newer than kGraphFormatVersion ("made by a newer Kiln"), unknown op or attribute,
// a bad attribute value, duplicate id or name, an edge to a missing node or port, a
// malformed initial_state entry or one that names no node. Missing
// attributes take their defaults; a cycle is accepted (analyze reports it).
Graph from_json(const std::string& text);

// Reads a graph JSON file (IoError when it cannot be read; from_json's errors naming the path).
Graph load_graph(const std::string& path);
// Writes to_json(graph) atomically (IoError).
void save_graph(const Graph& graph, const std::string& path);

}  // namespace kiln::graph
