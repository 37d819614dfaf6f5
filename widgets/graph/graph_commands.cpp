#include "widgets/graph/graph_commands.h"

#include <algorithm>

#include "widgets/graph/graph_document.h"

namespace kiln::studio {

// ---- InsertNodesCommand ----
InsertNodesCommand::InsertNodesCommand(GraphDocument* doc, const QString& text,
                                       std::vector<graph::Node> nodes,
                                       std::vector<graph::Edge> edges)
    : doc_(doc), nodes_(std::move(nodes)), edges_(std::move(edges)) {
  setText(text);
}

void InsertNodesCommand::redo() {
  graph::Graph& g = doc_->mutableGraph();
  for (const graph::Node& n : nodes_) g.insert_node(n);
  for (const graph::Edge& e : edges_) g.connect(e.from, e.to);
  doc_->notifyChanged();
}

void InsertNodesCommand::undo() {
  graph::Graph& g = doc_->mutableGraph();
  for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) g.remove_node(it->id);
  doc_->notifyChanged();
}

// ---- RemoveNodesCommand ----
RemoveNodesCommand::RemoveNodesCommand(GraphDocument* doc, const std::vector<graph::NodeId>& ids)
    : doc_(doc) {
  const graph::Graph& g = doc->graph();
  for (graph::NodeId id : ids) {
    if (!g.contains(id)) continue;
    if (std::any_of(nodes_.begin(), nodes_.end(), [&](const graph::Node& n) { return n.id == id; }))
      continue;
    nodes_.push_back(g.node(id));
    for (const graph::Edge& e : g.edges_of(id))
      if (std::find(edges_.begin(), edges_.end(), e) == edges_.end()) edges_.push_back(e);
  }
  setText(nodes_.size() == 1
              ? QObject::tr("Delete %1").arg(toQString(nodes_.front().name))
              : QObject::tr("Delete %n node(s)", nullptr, int(nodes_.size())));
}

void RemoveNodesCommand::redo() {
  graph::Graph& g = doc_->mutableGraph();
  for (const graph::Node& n : nodes_) g.remove_node(n.id);
  doc_->notifyChanged();
}

void RemoveNodesCommand::undo() {
  graph::Graph& g = doc_->mutableGraph();
  for (const graph::Node& n : nodes_) g.insert_node(n);
  for (const graph::Edge& e : edges_) g.connect(e.from, e.to);
  doc_->notifyChanged();
}

// ---- ConnectCommand / DisconnectCommand ----
ConnectCommand::ConnectCommand(GraphDocument* doc, graph::PortRef from, graph::PortRef to,
                               std::optional<graph::PortRef> replaced)
    : doc_(doc), from_(from), to_(to), replaced_(replaced) {
  const graph::Graph& g = doc->graph();
  const QString target = toQString(g.node(to.node).name);
  if (replaced && g.contains(replaced->node))
    setText(QObject::tr("Replace %1 → %3 with %2 → %3")
                .arg(toQString(g.node(replaced->node).name), toQString(g.node(from.node).name), target));
  else
    setText(QObject::tr("Connect %1 → %2").arg(toQString(g.node(from.node).name), target));
}

void ConnectCommand::redo() {
  graph::Graph& g = doc_->mutableGraph();
  if (replaced_) g.disconnect(to_);
  g.connect(from_, to_);
  doc_->notifyChanged();
}

void ConnectCommand::undo() {
  graph::Graph& g = doc_->mutableGraph();
  g.disconnect(to_);
  if (replaced_) g.connect(*replaced_, to_);
  doc_->notifyChanged();
}

DisconnectCommand::DisconnectCommand(GraphDocument* doc, graph::PortRef from, graph::PortRef to)
    : doc_(doc), from_(from), to_(to) {
  const graph::Graph& g = doc->graph();
  setText(QObject::tr("Disconnect %1 → %2")
              .arg(toQString(g.node(from.node).name), toQString(g.node(to.node).name)));
}

void DisconnectCommand::redo() {
  doc_->mutableGraph().disconnect(to_);
  doc_->notifyChanged();
}

void DisconnectCommand::undo() {
  doc_->mutableGraph().connect(from_, to_);
  doc_->notifyChanged();
}

// ---- SetAttributeCommand ----
SetAttributeCommand::SetAttributeCommand(GraphDocument* doc, graph::NodeId node, std::string name,
                                         graph::AttrValue value, QUndoCommand* parent)
    : QUndoCommand(parent), doc_(doc), node_(node), name_(std::move(name)), new_(std::move(value)) {
  const graph::Graph& g = doc->graph();
  const graph::Node& n = g.node(node);
  old_ = n.attrs.at(name_);
  edges_ = g.edges_of(node);
  setText(QObject::tr("Set %1.%2 = %3")
              .arg(toQString(n.name), toQString(name_), toQString(graph::attr_str(new_))));
}

void SetAttributeCommand::redo() {
  doc_->mutableGraph().set_attr(node_, name_, new_);
  doc_->notifyChanged();
}

void SetAttributeCommand::undo() {
  graph::Graph& g = doc_->mutableGraph();
  g.set_attr(node_, name_, old_);
  // A count attribute (num_inputs) going down may have dropped edges: put them back.
  const std::vector<graph::Edge> now = g.edges_of(node_);
  for (const graph::Edge& e : edges_)
    if (std::find(now.begin(), now.end(), e) == now.end()) g.connect(e.from, e.to);
  doc_->notifyChanged();
}

// ---- RenameCommand ----
RenameCommand::RenameCommand(GraphDocument* doc, graph::NodeId node, std::string name)
    : doc_(doc), node_(node), old_(doc->graph().node(node).name), new_(std::move(name)) {
  setText(QObject::tr("Rename %1 to %2").arg(toQString(old_), toQString(new_)));
}

void RenameCommand::redo() {
  doc_->mutableGraph().rename(node_, new_);
  doc_->notifyChanged();
}

void RenameCommand::undo() {
  doc_->mutableGraph().rename(node_, old_);
  doc_->notifyChanged();
}

// ---- MoveCommand ----
MoveCommand::MoveCommand(GraphDocument* doc, const QString& text, Positions positions, int group)
    : doc_(doc), positions_(std::move(positions)), group_(group) {
  setText(text);
}

void MoveCommand::apply(bool forward) {
  graph::Graph& g = doc_->mutableGraph();
  for (const auto& [id, pos] : positions_) {
    const QPointF p = forward ? pos.second : pos.first;
    g.set_position(id, p.x(), p.y());
  }
  doc_->notifyChanged(/*reanalyze=*/false);
}

void MoveCommand::redo() { apply(true); }
void MoveCommand::undo() { apply(false); }

bool MoveCommand::mergeWith(const QUndoCommand* other) {
  const auto* o = dynamic_cast<const MoveCommand*>(other);
  if (!o || o->group_ != group_ || group_ < 0) return false;
  for (const auto& [id, pos] : o->positions_) {
    auto it = positions_.find(id);
    if (it == positions_.end())
      positions_.emplace(id, pos);
    else
      it->second.second = pos.second;
  }
  setObsolete(std::all_of(positions_.begin(), positions_.end(),
                          [](const auto& kv) { return kv.second.first == kv.second.second; }));
  return true;
}

// ---- ReplaceGraphCommand ----
ReplaceGraphCommand::ReplaceGraphCommand(GraphDocument* doc, const QString& text, graph::Graph before,
                                         graph::Graph after)
    : doc_(doc), before_(std::move(before)), after_(std::move(after)) {
  setText(text);
}

void ReplaceGraphCommand::redo() {
  doc_->mutableGraph() = after_;
  doc_->notifyChanged();
}

void ReplaceGraphCommand::undo() {
  doc_->mutableGraph() = before_;
  doc_->notifyChanged();
}

}  // namespace kiln::studio
