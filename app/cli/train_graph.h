// Graphs (engine/graph JSON, Kiln Studio's format) as the model of `kiln train --graph` and
// `kiln eval`: read and checked before any data is, and checked against the data set.
// A run trained from a graph keeps it as <run>/graph.json, named by the metadata key
// "kiln.graph" of its model.safetensors, so that `kiln eval` rebuilds the same GraphModule.
#pragma once
#include <map>
#include <optional>
#include <string>

#include "engine/data/dataset.h"
#include "engine/graph/graph.h"

namespace kiln::cli {

// The file name of the graph in a run directory, and the safetensors metadata key naming it.
inline constexpr const char* kRunGraphFile = "graph.json";
inline constexpr const char* kGraphMetadataKey = "kiln.graph";

// The graph of `path`: IoError when it is missing or a directory, ValueError listing every
// problem (node name and message) when it cannot run, and unless it has one Input and one
// Output node.
graph::Graph load_checked_graph(const std::string& path);
// load_checked_graph's checks of a graph read from `path` (named in the messages).
void check_trainable_graph(const graph::Graph& g, const std::string& path);

// ShapeError naming both shapes when the data set's samples ([N, C, H, W] or a table's [N, F],
// without N) are not the graph's input, or its output is not [N, outputs] (the classes, or 1
// for regression).
void check_graph_fits(const graph::Graph& g, const std::string& dataset, const data::Dataset& data, int64_t outputs);

// The graph file a model.safetensors at `model_path` was trained from (its "kiln.graph"
// metadata, relative to the model's folder); nullopt when it names none. A model whose
// "kiln.model" is "graph-..." but that names no graph (written before runs kept their graph)
// gives ValueError asking for --graph.
std::optional<std::string> run_graph_of(const std::string& model_path, const std::map<std::string, std::string>& metadata);

}  // namespace kiln::cli
