// Shape inference and validation of a whole graph: the type of every edge (with the
// symbolic batch dimension), parameter counts and multiply-adds per node, and the
// problems that keep the graph from running, each attached to a node id.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/graph/graph.h"

namespace kiln::graph {

struct Problem {
  NodeId node = -1;  // -1: graph-level ("the graph has no Output node")
  std::string message;
  bool operator==(const Problem&) const = default;
};

struct NodeInfo {
  std::vector<TensorType> inputs, outputs;
  int64_t parameters = 0;  // elements of all its parameters
  int64_t macs = 0;        // multiply-adds per sample (saturates at INT64_MAX)
};

struct Analysis {
  std::map<NodeId, NodeInfo> nodes;  // every node whose inputs could be inferred
  // Unconnected input, shape/dtype mismatch naming both shapes, cycle (on each node of it),
  // no Input / no Output (graph-level), parameter count overflowing int64. Problems are
  // not repeated downstream: a node fed by a failed node is simply absent from `nodes`.
  std::vector<Problem> problems;
  int64_t total_parameters = 0;  // saturates at INT64_MAX (with an overflow problem)
  int64_t total_macs = 0;        // per sample, saturates at INT64_MAX
  bool ok() const { return problems.empty(); }
  std::optional<TensorType> type_of(PortRef output_port) const;  // for edge labels
  std::vector<std::string> problems_of(NodeId id) const;
};

// Never throws for a structurally sound graph (every Graph is one).
Analysis analyze(const Graph& graph);

}  // namespace kiln::graph
