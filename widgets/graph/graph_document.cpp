#include "widgets/graph/graph_document.h"

#include <QStringList>
#include <set>

#include "engine/graph/input_dims.h"
#include "engine/graph/json.h"
#include "engine/graph/layout.h"
#include "engine/graph/op_schema.h"
#include "widgets/graph/graph_commands.h"
#include "widgets/graph/graph_items.h"

namespace kiln::studio {

QString toQString(const std::string& s) { return QString::fromStdString(s); }
std::string toStd(const QString& s) { return s.toStdString(); }

namespace {
void setReason(QString* reason, const QString& text) {
  if (reason) *reason = text;
}
}  // namespace

GraphDocument::GraphDocument(QObject* parent) : QObject(parent) {
  analysis_ = graph::analyze(graph_);
}

void GraphDocument::setGraph(const graph::Graph& g) {
  stack_.clear();
  graph_ = g;
  stack_.setClean();
  notifyChanged();
}

void GraphDocument::setReadOnly(bool on, const QString& reason) {
  readOnlyReason_ = on ? (reason.isEmpty() ? tr("the graph is read-only") : reason) : QString();
  if (on == readOnly_) return;
  readOnly_ = on;
  emit readOnlyChanged(on);
}

bool GraphDocument::refuseEdit(QString* reason) const {
  if (!readOnly_) return false;
  setReason(reason, readOnlyReason_);
  return true;
}

void GraphDocument::notifyChanged(bool reanalyze) {
  if (reanalyze) analysis_ = graph::analyze(graph_);
  emit changed();
}

graph::NodeId GraphDocument::addNode(const QString& op, QPointF pos, QString* reason) {
  if (refuseEdit(reason)) return -1;
  graph::Node node;
  try {
    // Let the graph pick the id and the name, then hand the node to the command.
    const graph::NodeId id = graph_.add_node(toStd(op));
    graph_.set_position(id, pos.x(), pos.y());
    node = graph_.node(id);
    graph_.remove_node(id);
  } catch (const Error& e) {
    setReason(reason, toQString(e.what()));
    return -1;
  }
  stack_.push(new InsertNodesCommand(this, tr("Add %1").arg(op), {node}, {}));
  return node.id;
}

void GraphDocument::removeNodes(const QList<graph::NodeId>& ids) {
  if (refuseEdit(nullptr)) return;
  std::vector<graph::NodeId> present;
  for (graph::NodeId id : ids)
    if (graph_.contains(id)) present.push_back(id);
  if (present.empty()) return;
  stack_.push(new RemoveNodesCommand(this, present));
}

bool GraphDocument::canConnect(graph::PortRef from, graph::PortRef to, QString* reason) const {
  std::optional<graph::PortRef> replaced;
  if (graph_.contains(to.node)) replaced = graph_.source_of(to);
  if (replaced && *replaced == from) {
    setReason(reason, tr("%1 is already connected to %2")
                          .arg(toQString(graph_.node(from.node).name), toQString(graph_.node(to.node).name)));
    return false;
  }
  std::optional<std::string> why;
  if (replaced) {
    // Replacing an edge: check the new one against the graph without the old one.
    graph::Graph trial = graph_;
    trial.disconnect(to);
    why = trial.can_connect(from, to);
  } else {
    why = graph_.can_connect(from, to);
  }
  if (why) setReason(reason, toQString(*why));
  return !why;
}

bool GraphDocument::connectPorts(graph::PortRef from, graph::PortRef to, QString* reason) {
  if (refuseEdit(reason)) return false;
  if (!canConnect(from, to, reason)) return false;
  std::optional<graph::PortRef> replaced = graph_.source_of(to);
  stack_.push(new ConnectCommand(this, from, to, replaced));
  return true;
}

void GraphDocument::disconnectPort(graph::PortRef to) {
  if (refuseEdit(nullptr)) return;
  if (!graph_.contains(to.node)) return;
  const std::optional<graph::PortRef> from = graph_.source_of(to);
  if (from) stack_.push(new DisconnectCommand(this, *from, to));
}

bool GraphDocument::setAttribute(graph::NodeId id, const QString& name,
                                 const graph::AttrValue& value, QString* reason) {
  if (refuseEdit(reason)) return false;
  if (!graph_.contains(id)) {
    setReason(reason, tr("no node with id %1").arg(id));
    return false;
  }
  const std::string key = toStd(name);
  if (auto why = graph_.check_attr(id, key, value)) {
    setReason(reason, toQString(*why));
    return false;
  }
  const graph::Node& n = graph_.node(id);
  auto it = n.attrs.find(key);
  if (it != n.attrs.end() && it->second == value) return true;  // nothing to do
  // Input-dimension attributes downstream follow the new shapes in the same undo step.
  graph::Graph after = graph_;
  after.set_attr(id, key, value);
  const std::vector<graph::AttributeUpdate> follow = graph::follow_input_dims(graph_, after, id, key);
  if (follow.empty()) {
    stack_.push(new SetAttributeCommand(this, id, key, value));
    return true;
  }
  auto* parent = new QUndoCommand;
  auto* first = new SetAttributeCommand(this, id, key, value, parent);
  QStringList names;
  for (const graph::AttributeUpdate& u : follow) {
    new SetAttributeCommand(this, u.node, u.attribute, graph::AttrValue(u.value), parent);
    names << QString("%1.%2 = %3").arg(toQString(graph_.node(u.node).name), toQString(u.attribute)).arg(u.value);
  }
  parent->setText(tr("%1 (and %2)").arg(first->text(), names.join(", ")));
  stack_.push(parent);
  return true;
}

bool GraphDocument::renameNode(graph::NodeId id, const QString& name, QString* reason) {
  if (refuseEdit(reason)) return false;
  if (!graph_.contains(id)) {
    setReason(reason, tr("no node with id %1").arg(id));
    return false;
  }
  if (graph_.node(id).name == toStd(name)) return true;
  if (auto why = graph_.check_name(id, toStd(name))) {
    setReason(reason, toQString(*why));
    return false;
  }
  stack_.push(new RenameCommand(this, id, toStd(name)));
  return true;
}

void GraphDocument::moveNodes(const QMap<graph::NodeId, QPointF>& newPositions) {
  if (refuseEdit(nullptr)) return;
  MoveCommand::Positions positions;
  for (auto it = newPositions.begin(); it != newPositions.end(); ++it) {
    if (!graph_.contains(it.key())) continue;
    const graph::Node& n = graph_.node(it.key());
    const QPointF old(n.x, n.y);
    if (old != it.value()) positions.emplace(it.key(), std::make_pair(old, it.value()));
  }
  if (positions.empty()) return;
  const QString text = positions.size() == 1
                           ? tr("Move %1").arg(toQString(graph_.node(positions.begin()->first).name))
                           : tr("Move %n node(s)", nullptr, int(positions.size()));
  stack_.push(new MoveCommand(this, text, std::move(positions), moveGroup_));
}

bool GraphDocument::autoLayout() {
  if (refuseEdit(nullptr)) return false;
  graph::Graph laid = graph_;
  graph::auto_layout(laid, canvasLayoutOptions());
  MoveCommand::Positions positions;
  for (const graph::Node& n : laid.nodes()) {
    const graph::Node& old = graph_.node(n.id);
    if (old.x != n.x || old.y != n.y)
      positions.emplace(n.id, std::make_pair(QPointF(old.x, old.y), QPointF(n.x, n.y)));
  }
  if (positions.empty()) return false;
  stack_.push(new MoveCommand(this, tr("Auto layout"), std::move(positions), -1));
  return true;
}

QString GraphDocument::copy(const QList<graph::NodeId>& ids) const {
  graph::Graph fragment;
  fragment.name = graph_.name;
  std::set<graph::NodeId> chosen;
  for (graph::NodeId id : ids)
    if (graph_.contains(id) && chosen.insert(id).second) fragment.insert_node(graph_.node(id));
  for (const graph::Edge& e : graph_.edges())
    if (chosen.count(e.from.node) && chosen.count(e.to.node)) fragment.connect(e.from, e.to);
  return toQString(graph::to_json(fragment));
}

QList<graph::NodeId> GraphDocument::paste(const QString& json, QPointF offset, QString* reason) {
  if (refuseEdit(reason)) return {};
  graph::Graph fragment;
  try {
    fragment = graph::from_json(toStd(json));
  } catch (const Error& e) {
    setReason(reason, toQString(e.what()));
    return {};
  }
  if (fragment.nodes().empty()) return {};
  // Add the nodes to learn their new ids and names, record them, and take them out
  // again: the command re-inserts exactly these nodes on every redo.
  std::map<graph::NodeId, graph::NodeId> newId;
  std::vector<graph::Node> nodes;
  std::vector<graph::Edge> edges;
  try {
    for (const graph::Node& n : fragment.nodes()) {
      bool taken = false;
      for (const graph::Node& m : graph_.nodes()) taken = taken || m.name == n.name;
      const graph::NodeId id = graph_.add_node(n.op, taken ? "" : n.name, n.attrs);
      graph_.set_position(id, n.x + offset.x(), n.y + offset.y());
      newId[n.id] = id;
      nodes.push_back(graph_.node(id));
    }
    for (const graph::Edge& e : fragment.edges())
      edges.push_back({{newId.at(e.from.node), e.from.port}, {newId.at(e.to.node), e.to.port}});
  } catch (const Error& e) {
    setReason(reason, tr("cannot paste: %1").arg(toQString(e.what())));
    nodes.clear();
  }
  for (const auto& [from, to] : newId) graph_.remove_node(to);
  if (nodes.empty()) return {};
  QList<graph::NodeId> ids;
  for (const graph::Node& n : nodes) ids.push_back(n.id);
  // The label first: reading nodes.size() in the call that moves nodes out is unsequenced.
  const QString label = tr("Paste %n node(s)", nullptr, int(nodes.size()));
  stack_.push(new InsertNodesCommand(this, label, std::move(nodes), std::move(edges)));
  return ids;
}

}  // namespace kiln::studio
