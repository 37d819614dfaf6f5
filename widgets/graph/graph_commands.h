// The undo commands of GraphDocument. Each stores exactly what it needs to restore
// the previous state: removed nodes are re-inserted with their ids (Graph::insert_node)
// and their edges reconnected, attribute changes keep the old value and the node's
// edges (a smaller count attribute may drop ports), moves keep old positions.
#pragma once
#include <QPointF>
#include <QUndoCommand>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "engine/graph/graph.h"

namespace kiln::studio {

class GraphDocument;

// Inserts nodes (with fixed ids) and the edges among/into them; undo removes them.
class InsertNodesCommand : public QUndoCommand {
 public:
  InsertNodesCommand(GraphDocument*, const QString& text, std::vector<graph::Node> nodes,
                     std::vector<graph::Edge> edges);
  void redo() override;
  void undo() override;

 private:
  GraphDocument* doc_;
  std::vector<graph::Node> nodes_;
  std::vector<graph::Edge> edges_;
};

// Removes nodes and every edge touching them; undo re-inserts both.
class RemoveNodesCommand : public QUndoCommand {
 public:
  RemoveNodesCommand(GraphDocument*, const std::vector<graph::NodeId>& ids);
  void redo() override;
  void undo() override;

 private:
  GraphDocument* doc_;
  std::vector<graph::Node> nodes_;
  std::vector<graph::Edge> edges_;
};

// Connects from -> to, replacing the edge `replaced -> to` when there was one.
// Text: "Connect a → b", or "Replace old → b with a → b" when an edge is replaced.
class ConnectCommand : public QUndoCommand {
 public:
  ConnectCommand(GraphDocument*, graph::PortRef from, graph::PortRef to,
                 std::optional<graph::PortRef> replaced);
  void redo() override;
  void undo() override;

 private:
  GraphDocument* doc_;
  graph::PortRef from_, to_;
  std::optional<graph::PortRef> replaced_;
};

class DisconnectCommand : public QUndoCommand {
 public:
  DisconnectCommand(GraphDocument*, graph::PortRef from, graph::PortRef to);
  void redo() override;
  void undo() override;

 private:
  GraphDocument* doc_;
  graph::PortRef from_, to_;
};

class SetAttributeCommand : public QUndoCommand {
 public:
  SetAttributeCommand(GraphDocument*, graph::NodeId, std::string name, graph::AttrValue value,
                      QUndoCommand* parent = nullptr);
  void redo() override;
  void undo() override;

 private:
  GraphDocument* doc_;
  graph::NodeId node_;
  std::string name_;
  graph::AttrValue old_, new_;
  std::vector<graph::Edge> edges_;  // the node's edges before the change
};

class RenameCommand : public QUndoCommand {
 public:
  RenameCommand(GraphDocument*, graph::NodeId, std::string name);
  void redo() override;
  void undo() override;

 private:
  GraphDocument* doc_;
  graph::NodeId node_;
  std::string old_, new_;
};

// Sets node positions. Commands of the same move group (one mouse drag) merge;
// group -1 never merges (auto layout).
class MoveCommand : public QUndoCommand {
 public:
  using Positions = std::map<graph::NodeId, std::pair<QPointF, QPointF>>;  // id -> (old, new)
  MoveCommand(GraphDocument*, const QString& text, Positions, int group);
  void redo() override;
  void undo() override;
  int id() const override { return group_ < 0 ? -1 : 1; }
  bool mergeWith(const QUndoCommand* other) override;

 private:
  void apply(bool forward);
  GraphDocument* doc_;
  Positions positions_;
  int group_;
};

// Replaces the whole graph by `after` (nodes, edges, attributes, Node::trainable and
// initial_state); undo puts `before` back. For edits that touch many nodes at once
// (freezing, a new classifier head), where a snapshot is the exact previous state.
class ReplaceGraphCommand : public QUndoCommand {
 public:
  ReplaceGraphCommand(GraphDocument*, const QString& text, graph::Graph before, graph::Graph after);
  void redo() override;
  void undo() override;

 private:
  GraphDocument* doc_;
  graph::Graph before_, after_;
};

}  // namespace kiln::studio
