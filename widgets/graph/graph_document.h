// GraphDocument: the graph being edited, its undo stack and its analysis.
// Views (canvas, property editor, problems panel) observe it through changed();
// every edit goes through one QUndoCommand (graph_commands.h) so undo restores
// the exact previous state (same node ids, names, attributes, positions, edges).
#pragma once
#include <QList>
#include <QMap>
#include <QObject>
#include <QPointF>
#include <QString>
#include <QUndoStack>

#include "engine/graph/analysis.h"
#include "engine/core/error.h"
#include "engine/graph/graph.h"

namespace kiln::studio {

class GraphDocument : public QObject {
  Q_OBJECT
 public:
  explicit GraphDocument(QObject* parent = nullptr);

  const graph::Graph& graph() const { return graph_; }
  // Shapes, parameter counts and problems of graph(); recomputed after every change.
  const graph::Analysis& analysis() const { return analysis_; }
  QUndoStack* undoStack() { return &stack_; }

  // Replaces the graph, clears the undo history and marks the document clean.
  void setGraph(const graph::Graph&);
  bool isModified() const { return !stack_.isClean(); }
  void setClean() { stack_.setClean(); }

  // Read-only (while a training run uses the graph): every edit below is refused with
  // `reason` ("the graph cannot be edited while ..."); views disable their editing.
  // setGraph() still replaces the graph.
  void setReadOnly(bool on, const QString& reason = {});
  bool isReadOnly() const { return readOnly_; }
  QString readOnlyReason() const { return readOnlyReason_; }

  // ---- edits: each one undoable command ----
  // Adds a node of `op` (defaults for every attribute, an automatic name) with its
  // top-left corner at `pos` (scene units). Returns its id; -1 and a message when the op
  // is unknown (`reason`, when given, receives it).
  graph::NodeId addNode(const QString& op, QPointF pos, QString* reason = nullptr);
  // Removes the nodes and every edge touching them. Unknown ids are ignored.
  void removeNodes(const QList<graph::NodeId>&);
  // Connects an output port to an input port. When `to` is already fed by another
  // output, that edge is replaced. Returns false and the reason from
  // Graph::can_connect (self-loop, cycle, no such port ...) when refused.
  bool connectPorts(graph::PortRef from, graph::PortRef to, QString* reason = nullptr);
  // Whether connectPorts would accept the edge (no command; `reason` as there).
  bool canConnect(graph::PortRef from, graph::PortRef to, QString* reason = nullptr) const;
  // Removes the edge into input port `to` (no command when there is none).
  void disconnectPort(graph::PortRef to);
  // Sets one attribute; false and Graph::check_attr's reason when the value is rejected.
  // When the change alters the shape a node downstream receives, that node's
  // input-dimension attributes (in_channels, in_features, num_features; OpSchema::
  // input_dim_attributes) that matched their input before follow it in the same undo
  // step (graph::follow_input_dims); output sizes are never changed.
  bool setAttribute(graph::NodeId, const QString& name, const graph::AttrValue&,
                    QString* reason = nullptr);
  // Renames a node; false and the reason when the name is invalid or taken.
  bool renameNode(graph::NodeId, const QString& name, QString* reason = nullptr);
  // Moves nodes (top-left corners, scene units). Consecutive calls for the same nodes
  // merge into one undo step until finishMove() (the canvas calls it on mouse release).
  void moveNodes(const QMap<graph::NodeId, QPointF>& newPositions);
  void finishMove() { ++moveGroup_; }
  // Layered layout of the whole graph (graph::auto_layout with canvasLayoutOptions()),
  // one undo step. False (and no step) when every node is already where the layout puts
  // it, as right after File > Import ONNX, which lays the model out the same way.
  bool autoLayout();

  // ---- transfer learning (engine/graph/transfer.h), each one undo step ----
  // Sets Node::trainable of the nodes (false: frozen, left out of the optimizer, batch
  // norms in eval mode; GraphModule). Unknown ids and unchanged nodes are ignored.
  void setTrainable(const QList<graph::NodeId>&, bool on);
  // Freezes `node` and every node it depends on (its ancestors through edges).
  void freezeUpTo(graph::NodeId node);
  // Makes every node trainable again.
  void unfreezeAll();
  // The classifier head (graph::find_head: the last Linear before the Output) gets
  // `outFeatures` outputs and loses its initial weights (graph::replace_head). Returns
  // its id; -1 and the engine's message naming the node where the search stopped (in
  // `reason`) when there is no such Linear or outFeatures < 1.
  graph::NodeId replaceHead(int64_t outFeatures, QString* reason = nullptr);
  // The parameters of frozen nodes (analysis().nodes[..].parameters summed).
  int64_t frozenParameters() const;

  // A JSON fragment (graph JSON of the nodes and the edges among them).
  QString copy(const QList<graph::NodeId>&) const;
  // Inserts a fragment made by copy(): new ids; the original names where free, fresh
  // ones otherwise; positions shifted by `offset`. Returns the new ids (empty and
  // `reason` set when the text is not a graph fragment).
  QList<graph::NodeId> paste(const QString& json, QPointF offset, QString* reason = nullptr);

  // ---- for the undo commands ----
  graph::Graph& mutableGraph() { return graph_; }
  // Recomputes the analysis (when `reanalyze`) and emits changed().
  void notifyChanged(bool reanalyze = true);
  int moveGroup() const { return moveGroup_; }

 signals:
  void changed();  // graph or analysis changed
  void readOnlyChanged(bool readOnly);

 private:
  graph::Graph graph_;
  graph::Analysis analysis_;
  QUndoStack stack_;
  int moveGroup_ = 0;
  bool readOnly_ = false;
  QString readOnlyReason_;
  bool refuseEdit(QString* reason) const;  // true (and the reason) when read-only
};

QString toQString(const std::string&);
std::string toStd(const QString&);

}  // namespace kiln::studio
