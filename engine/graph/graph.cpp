#include "engine/graph/graph.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <queue>

#include "engine/core/error.h"
#include "engine/graph/op_schema.h"

namespace kiln::graph {

bool is_identifier(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

namespace {

// "Conv2d" -> "conv2d", "BatchNorm2d" -> "batch_norm2d", "ReLU" -> "relu", "LeakyReLU" -> "leaky_relu".
std::string snake_case(std::string op) {
  const std::pair<const char*, const char*> words[] = {{"ReLU", "Relu"}, {"SiLU", "Silu"}, {"GELU", "Gelu"}};
  for (auto [acronym, word] : words)  // one word each
    if (auto p = op.find(acronym); p != std::string::npos) op.replace(p, 4, word);
  std::string s;
  for (size_t i = 0; i < op.size(); ++i) {
    char c = op[i];
    bool upper = c >= 'A' && c <= 'Z';
    if (upper && i > 0 && !(op[i - 1] >= 'A' && op[i - 1] <= 'Z') && !(op[i - 1] >= '0' && op[i - 1] <= '9')) s += '_';
    s += upper ? static_cast<char>(c - 'A' + 'a') : c;
  }
  return s;
}

bool edge_less(const Edge& a, const Edge& b) { return std::tie(a.to, a.from) < std::tie(b.to, b.from); }

}  // namespace

const Node* Graph::find(NodeId id) const {
  auto it = std::lower_bound(nodes_.begin(), nodes_.end(), id, [](const Node& n, NodeId v) { return n.id < v; });
  return it != nodes_.end() && it->id == id ? &*it : nullptr;
}

const Node* Graph::find_by_name(const std::string& n) const {
  for (const Node& node : nodes_)
    if (node.name == n) return &node;
  return nullptr;
}

bool Graph::contains(NodeId id) const { return find(id) != nullptr; }

const Node& Graph::node(NodeId id) const {
  const Node* n = find(id);
  KILN_CHECK(n, IndexError, "graph has no node with id ", id);
  return *n;
}

Node& Graph::mutable_node(NodeId id) { return const_cast<Node&>(node(id)); }

std::optional<std::string> Graph::check_name(NodeId id, const std::string& n) const {
  if (!is_identifier(n))
    return "name '" + n + "' is not an identifier (letters, digits and _, not starting with a digit)";
  const Node* other = find_by_name(n);
  if (other && other->id != id) return "name '" + n + "' is already taken by another node";
  return std::nullopt;
}

NodeId Graph::add_node(const std::string& op, const std::string& node_name, Attributes attrs) {
  const OpSchema& schema = OpRegistry::global().get(op);
  Node n;
  n.id = next_id_;
  n.op = op;
  n.attrs = schema.with_defaults(std::move(attrs));
  if (auto why = schema.check_attrs(n.attrs)) throw ValueError(op + ": " + *why);
  if (node_name.empty()) {
    const std::string base = snake_case(op);
    for (int i = 1;; ++i) {
      n.name = base + "_" + std::to_string(i);
      if (!find_by_name(n.name)) break;
    }
  } else {
    if (auto why = check_name(n.id, node_name)) throw ValueError(*why);
    n.name = node_name;
  }
  std::erase_if(initial_state, [&](const auto& e) { return state_key_node(e.first) == n.name; });  // a new layer
  nodes_.push_back(std::move(n));
  return next_id_++;
}

void Graph::insert_node(const Node& n) {
  KILN_CHECK(n.id >= 0 && n.id <= kMaxNodeId, ValueError, "node id must be in [0, ", kMaxNodeId, "], got ", n.id);
  KILN_CHECK(!contains(n.id), ValueError, "node id ", n.id, " is already taken");
  const OpSchema& schema = OpRegistry::global().get(n.op);
  if (auto why = schema.check_attrs(n.attrs)) throw ValueError(n.op + " '" + n.name + "': " + *why);
  if (auto why = check_name(n.id, n.name)) throw ValueError(*why);
  auto it = std::lower_bound(nodes_.begin(), nodes_.end(), n.id, [](const Node& a, NodeId v) { return a.id < v; });
  nodes_.insert(it, n);
  next_id_ = std::max(next_id_, n.id + 1);
}

void Graph::remove_node(NodeId id) {
  const Node& n = node(id);
  std::erase_if(edges_, [id](const Edge& e) { return e.from.node == id || e.to.node == id; });
  nodes_.erase(nodes_.begin() + (&n - nodes_.data()));
}

std::vector<Edge> Graph::edges_of(NodeId id) const {
  std::vector<Edge> v;
  for (const Edge& e : edges_)
    if (e.from.node == id || e.to.node == id) v.push_back(e);
  return v;
}

std::string Graph::port_label(PortRef p, bool input) const {
  const Node& n = node(p.node);
  const OpSchema& s = OpRegistry::global().get(n.op);
  return std::string(input ? "input '" : "output '") + (input ? s.input_name(p.port) : s.output_name(p.port)) + "' of '" +
         n.name + "'";
}

std::optional<std::string> Graph::check_ports(PortRef from, PortRef to) const {
  const Node* a = find(from.node);
  const Node* b = find(to.node);
  if (!a) return "no node with id " + std::to_string(from.node);
  if (!b) return "no node with id " + std::to_string(to.node);
  const OpSchema& sa = OpRegistry::global().get(a->op);
  const OpSchema& sb = OpRegistry::global().get(b->op);
  if (from.port < 0 || from.port >= static_cast<int>(sa.outputs.size()))
    return a->op + " '" + a->name + "' has no output port " + std::to_string(from.port) +
           (sa.outputs.empty() ? " (it has no outputs)" : "");
  if (to.port < 0 || to.port >= sb.input_count(b->attrs))
    return b->op + " '" + b->name + "' has no input port " + std::to_string(to.port) +
           (sb.input_count(b->attrs) == 0 ? " (it has no inputs)" : "");
  if (auto src = source_of(to))
    return port_label(to, true) + " is already connected (from '" + node(src->node).name + "')";
  return std::nullopt;
}

std::optional<std::string> Graph::can_connect(PortRef from, PortRef to) const {
  if (from.node == to.node && contains(from.node)) return "'" + node(from.node).name + "' cannot connect to itself";
  if (auto why = check_ports(from, to)) return why;
  // A cycle closes when `from` is reachable from `to` along existing edges.
  std::vector<NodeId> stack{to.node};
  std::vector<NodeId> seen;
  while (!stack.empty()) {
    NodeId n = stack.back();
    stack.pop_back();
    if (n == from.node)
      return "connecting '" + node(from.node).name + "' to '" + node(to.node).name + "' would close a cycle ('" +
             node(to.node).name + "' already feeds '" + node(from.node).name + "')";
    if (std::find(seen.begin(), seen.end(), n) != seen.end()) continue;
    seen.push_back(n);
    for (const Edge& e : edges_)
      if (e.from.node == n) stack.push_back(e.to.node);
  }
  return std::nullopt;
}

void Graph::connect(PortRef from, PortRef to) {
  if (auto why = can_connect(from, to)) throw ValueError(*why);
  Edge e{from, to};
  edges_.insert(std::upper_bound(edges_.begin(), edges_.end(), e, edge_less), e);
}

void Graph::connect_unchecked_cycle(PortRef from, PortRef to) {
  if (auto why = check_ports(from, to)) throw ValueError(*why);
  Edge e{from, to};
  edges_.insert(std::upper_bound(edges_.begin(), edges_.end(), e, edge_less), e);
}

void Graph::disconnect(PortRef to) {
  std::erase_if(edges_, [&](const Edge& e) { return e.to == to; });
}

std::optional<std::string> Graph::check_attr(NodeId id, const std::string& attr, const AttrValue& value) const {
  const Node* n = find(id);
  if (!n) return "no node with id " + std::to_string(id);
  const OpSchema& s = OpRegistry::global().get(n->op);
  if (auto why = s.check_attr(attr, value)) return why;
  Attributes next = n->attrs;
  next[attr] = value;
  if (s.check)
    if (auto why = s.check(next)) return why;
  if (attr == s.count_attribute) {
    const int count = s.input_count(next);
    for (const Edge& e : edges_)
      if (e.to.node == id && e.to.port >= count)
        return port_label(e.to, true) + " is connected; disconnect it before reducing " + attr + " to " +
               std::to_string(count);
  }
  return std::nullopt;
}

void Graph::set_attr(NodeId id, const std::string& attr, const AttrValue& value) {
  if (auto why = check_attr(id, attr, value)) throw ValueError(*why);
  mutable_node(id).attrs[attr] = value;
}

void Graph::rename(NodeId id, const std::string& n) {
  const std::string old = node(id).name;  // IndexError first
  if (auto why = check_name(id, n)) throw ValueError(*why);
  mutable_node(id).name = n;
  if (old == n) return;
  std::map<std::string, Tensor> moved;
  for (auto it = initial_state.begin(); it != initial_state.end();) {
    if (state_key_node(it->first) == old) {
      moved[n + it->first.substr(old.size())] = it->second;
      it = initial_state.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& [key, t] : moved) initial_state[key] = std::move(t);
}

void Graph::set_trainable(NodeId id, bool on) { mutable_node(id).trainable = on; }

void Graph::set_position(NodeId id, double x, double y) {
  KILN_CHECK(std::isfinite(x) && std::isfinite(y), ValueError, "position of '", node(id).name, "' must be finite, got (",
             x, ", ", y, ")");
  Node& n = mutable_node(id);
  n.x = x;
  n.y = y;
}

std::optional<PortRef> Graph::source_of(PortRef to) const {
  auto it = std::lower_bound(edges_.begin(), edges_.end(), to, [](const Edge& e, PortRef p) { return e.to < p; });
  if (it != edges_.end() && it->to == to) return it->from;
  return std::nullopt;
}

std::vector<PortRef> Graph::consumers_of(PortRef from) const {
  std::vector<PortRef> v;
  for (const Edge& e : edges_)
    if (e.from == from) v.push_back(e.to);
  return v;
}

std::vector<NodeId> Graph::input_nodes() const {
  std::vector<NodeId> v;
  for (const Node& n : nodes_)
    if (n.op == "Input") v.push_back(n.id);
  return v;
}

std::vector<NodeId> Graph::output_nodes() const {
  std::vector<NodeId> v;
  for (const Node& n : nodes_)
    if (n.op == "Output") v.push_back(n.id);
  return v;
}

std::vector<NodeId> Graph::topological_order() const {
  std::map<NodeId, int> indegree;
  for (const Node& n : nodes_) indegree[n.id] = 0;
  for (const Edge& e : edges_) ++indegree[e.to.node];
  std::priority_queue<NodeId, std::vector<NodeId>, std::greater<>> ready;
  for (const auto& [id, d] : indegree)
    if (d == 0) ready.push(id);
  std::vector<NodeId> order;
  while (!ready.empty()) {
    NodeId id = ready.top();
    ready.pop();
    order.push_back(id);
    for (const Edge& e : edges_)
      if (e.from.node == id && --indegree[e.to.node] == 0) ready.push(e.to.node);
  }
  if (order.size() != nodes_.size()) {
    // Every node left has an unprocessed predecessor: walking back through them must
    // come round to a node twice, and that node is on a cycle.
    NodeId n = -1;
    for (const auto& [id, d] : indegree)
      if (d > 0) n = id;
    std::vector<NodeId> walked;
    while (std::find(walked.begin(), walked.end(), n) == walked.end()) {
      walked.push_back(n);
      for (const Edge& e : edges_)
        if (e.to.node == n && indegree[e.from.node] > 0) {
          n = e.from.node;
          break;
        }
    }
    throw ValueError("the graph has a cycle through '" + node(n).name + "'");
  }
  return order;
}

bool Graph::operator==(const Graph& other) const {
  if (name != other.name || nodes_ != other.nodes_ || edges_ != other.edges_) return false;
  if (initial_state.size() != other.initial_state.size()) return false;
  for (const auto& [key, t] : initial_state) {
    auto it = other.initial_state.find(key);
    if (it == other.initial_state.end() || !same_tensor(t, it->second)) return false;
  }
  return true;
}

std::string state_key_node(const std::string& key) { return key.substr(0, key.find('.')); }

bool same_tensor(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const Tensor x = a.to(Device()).contiguous(), y = b.to(Device()).contiguous();
  const size_t bytes = static_cast<size_t>(x.numel()) * dtype_size(x.dtype());
  const auto* px = static_cast<const char*>(x.impl()->storage->data()) + x.offset() * dtype_size(x.dtype());
  const auto* py = static_cast<const char*>(y.impl()->storage->data()) + y.offset() * dtype_size(y.dtype());
  return bytes == 0 || std::memcmp(px, py, bytes) == 0;
}

}  // namespace kiln::graph
