// The graph IR: nodes (op + attributes + position) and edges from output ports to
// input ports. One Graph serves the visual editor, ONNX import/export, code
// generation and saving (DESIGN.md, "The graph IR").
//
// Every edit keeps the graph structurally sound — nodes have known ops and valid
// attributes and unique identifier names, each input port has at most one source, no
// edit closes a cycle — and throws ValueError with the reason otherwise. Whether the
// graph computes anything (shapes fit, every input connected) is analysis.h's question.
#pragma once
#include <compare>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/graph/types.h"

namespace kiln::graph {

struct PortRef {
  NodeId node = -1;
  int port = 0;
  auto operator<=>(const PortRef&) const = default;
};

// From an output port to an input port.
struct Edge {
  PortRef from;
  PortRef to;
  bool operator==(const Edge&) const = default;
};

struct Node {
  NodeId id = -1;
  std::string op;
  std::string name;  // unique in the graph, [A-Za-z_][A-Za-z0-9_]*; names the module's state_dict keys
  Attributes attrs;  // every attribute of the op's schema
  double x = 0, y = 0;  // position on the canvas (scene units)
  // False: the node's parameters are frozen (requires_grad off, left out of the optimizer) and
  // its batch-norm layers use their running statistics in training too (GraphModule); set by
  // transfer learning (transfer.h). Graph JSON writes it only when false.
  bool trainable = true;
  bool operator==(const Node&) const = default;
};

inline constexpr NodeId kMaxNodeId = (NodeId{1} << 53) - 1;  // exact as a JSON (double) number too

class Graph {
 public:
  std::string name;  // "Fashion-MNIST CNN"
  // Initial values of the layers' parameters and buffers, keyed by GraphModule's state_dict
  // names ("conv1.weight", "bn1.running_mean"): an imported model's weights (onnx/graph_import.h).
  // GraphModule starts each entry that fits (same shape and dtype) from it, the
  // rest from the layer's initialization; graph JSON (json.h) saves them, so a project keeps
  // them. CPU tensors. rename() moves a node's entries, add_node() drops stale ones of the new
  // node's name; remove_node() keeps them (an undo re-inserts the node), to_json() writes only
  // entries of nodes that exist.
  std::map<std::string, Tensor> initial_state;

  // Adds a node: missing attrs get their defaults, given ones are validated; an empty name
  // picks "conv2d_1"-style (op in lower snake case + the first free number). Returns its id
  // (one more than the largest id ever used). ValueError on unknown op, bad attribute,
  // invalid or duplicate name.
  NodeId add_node(const std::string& op, const std::string& name = "", Attributes attrs = {});
  // Restores a node with its id (undo of remove_node). ValueError when the id is taken or
  // outside [0, kMaxNodeId], the name is taken or invalid, the op unknown or an attribute bad.
  void insert_node(const Node& node);
  // Removes the node and its edges. IndexError for an unknown id.
  void remove_node(NodeId id);
  std::vector<Edge> edges_of(NodeId id) const;  // edges touching the node, in edges() order

  // Why `from` (an output port) cannot connect to `to` (an input port): nonexistent node or
  // port, self-loop, input already connected, or a cycle it would close. nullopt when OK.
  std::optional<std::string> can_connect(PortRef from, PortRef to) const;
  void connect(PortRef from, PortRef to);  // ValueError(reason) when !can_connect
  void disconnect(PortRef to);             // removes the edge into `to` (no-op if none)

  // Why attribute `name` of the node cannot take `value` (unknown attribute, wrong type, out
  // of range, a count attribute below a connected port, ...); nullopt when it can.
  std::optional<std::string> check_attr(NodeId id, const std::string& name, const AttrValue& value) const;
  void set_attr(NodeId id, const std::string& name, const AttrValue& value);  // ValueError(reason)
  // Why `name` cannot name node `id` (invalid identifier or taken); nullopt when it can.
  std::optional<std::string> check_name(NodeId id, const std::string& name) const;
  void rename(NodeId id, const std::string& name);  // ValueError on invalid/duplicate
  void set_position(NodeId id, double x, double y);
  void set_trainable(NodeId id, bool on);  // Node::trainable; IndexError for an unknown id

  const Node& node(NodeId id) const;  // IndexError for an unknown id
  const Node* find(NodeId id) const;  // nullptr for an unknown id
  const Node* find_by_name(const std::string& name) const;  // nullptr when none
  bool contains(NodeId id) const;
  const std::vector<Node>& nodes() const { return nodes_; }  // ordered by id
  const std::vector<Edge>& edges() const { return edges_; }  // ordered by (to, from)
  std::optional<PortRef> source_of(PortRef to) const;
  std::vector<PortRef> consumers_of(PortRef from) const;  // input ports fed by `from`, ordered
  std::vector<NodeId> input_nodes() const;   // Input ops, by id
  std::vector<NodeId> output_nodes() const;  // Output ops, by id
  // Nodes so that every edge goes forward; among ready nodes the smallest id first, so
  // the order is deterministic. ValueError naming a node on a cycle.
  std::vector<NodeId> topological_order() const;
  NodeId next_id() const { return next_id_; }  // the id add_node gives next

  // Adds an edge checking only that both ports exist and `to` is free, not cycles
  // (from_json uses it so a hand-edited file with a cycle opens and shows the problem).
  void connect_unchecked_cycle(PortRef from, PortRef to);

  bool operator==(const Graph& other) const;  // name, nodes, edges and initial_state (by value)

 private:
  std::optional<std::string> check_ports(PortRef from, PortRef to) const;
  std::string port_label(PortRef p, bool input) const;  // "input 'in' of 'relu_1'"
  Node& mutable_node(NodeId id);
  std::vector<Node> nodes_;
  std::vector<Edge> edges_;
  NodeId next_id_ = 1;
};

// Whether `name` is an identifier ([A-Za-z_][A-Za-z0-9_]*).
bool is_identifier(const std::string& name);

// The node name of a state_dict key ("conv1.weight" -> "conv1"; a key with no dot: itself).
std::string state_key_node(const std::string& key);
// Whether two tensors hold the same dtype, shape and elements (bytewise; NaNs of equal bits match).
bool same_tensor(const Tensor& a, const Tensor& b);

}  // namespace kiln::graph
