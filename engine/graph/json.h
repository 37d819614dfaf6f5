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
//
// In a project (projects/project.h) the tensor bytes live outside the text, in the project's
// blob table: an initial_state entry is then {"blob": KEY, "dtype": ..., "shape": [...]}
// instead of {"data": base64, ...}, where KEY is what BlobStore::put returned. Such a text
// reads back only with the same store; a graph file on disk always holds its data inline.
#pragma once
#include <string>
#include <string_view>

#include "engine/graph/graph.h"

namespace kiln::graph {

inline constexpr int kGraphFormatVersion = 2;  // the newest version read and written

// Where to_json puts tensor bytes and from_json finds them (see above).
class BlobStore {
 public:
  virtual ~BlobStore() = default;
  // Keeps `bytes` and returns its key: a short printable string (a project uses
  // "sha256:<64 hex digits>"), equal for equal bytes, so unchanged weights are stored once.
  virtual std::string put(std::string_view bytes) = 0;
  // The bytes kept under `key`; throws (an Error naming the key and the store) when none are.
  virtual std::string get(const std::string& key) const = 0;
};

// Ends with a newline. With `blobs`, initial_state tensors go to the store (entries {"blob"}).
std::string to_json(const Graph& graph, BlobStore* blobs = nullptr);
// ValueError "graph JSON: <what> (node 'conv1')" for malformed JSON, another format, a
// version newer than kGraphFormatVersion ("made by a newer Kiln"), unknown op or attribute,
// a bad attribute value, duplicate id or name, an edge to a missing node or port, a
// malformed initial_state entry or one that names no node. Missing
// attributes take their defaults; a cycle is accepted (analyze reports it). An entry
// {"blob": KEY} without `blobs` is a ValueError ("kept in a project's blob table"); the
// store's own error when it lacks the key.
Graph from_json(const std::string& text, const BlobStore* blobs = nullptr);

// Reads a graph JSON file (IoError when it cannot be read; from_json's errors naming the path).
Graph load_graph(const std::string& path);
// Writes to_json(graph) atomically (IoError).
void save_graph(const Graph& graph, const std::string& path);

}  // namespace kiln::graph
