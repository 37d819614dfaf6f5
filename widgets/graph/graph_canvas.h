// GraphCanvas: the visual editor of a GraphDocument on QGraphicsView.
//   - drop a layer from the palette (mime "application/x-kiln-op") or call addLayer();
//   - drag from an output port to an input port to connect (or from an input port to an
//     output port); a refused connection reports Graph::can_connect's reason through
//     message() and a tooltip; dragging a connected input port off into empty space
//     disconnects it;
//   - rubber-band / Ctrl-click selection, drag to move (one undo step per drag), arrow
//     keys nudge the selection by 10 (Shift: 50) scene units,
//     Delete removes the selected nodes and edges, Ctrl+C / Ctrl+V copy and paste,
//     Ctrl+Z / Ctrl+Shift+Z undo and redo on the document's stack (when no window
//     action has taken the shortcut);
//   - Ctrl+wheel zooms around the cursor, +/- around the centre (5% .. 400%), middle-button
//     or Space+drag pans, fitAll(); findNode() selects and centres a node by (part of) its
//     name, in any case, '.', '/' and '_' alike ("layer3.0.conv2" finds layer3_0_conv2_Conv);
//   - a context menu (delete, copy, paste, auto layout, fit) and port tooltips;
//   - per-node annotations (setNodeHeat: the Network Analyzer's per-layer profile) tint nodes
//     and give them a badge until the caller clears them;
//   - while the document is read-only (GraphDocument::setReadOnly, e.g. during training)
//     nothing is edited: a note over the canvas says why; select, copy, zoom and pan work.
// Items are synced to the graph by node id after every change (no rebuild).
#pragma once
#include <QGraphicsView>
#include <QList>
#include <map>
#include <optional>

#include "widgets/graph/graph_document.h"
#include "widgets/graph/graph_items.h"

class QLabel;

namespace kiln::studio {

inline constexpr const char* kOpMimeType = "application/x-kiln-op";
inline constexpr const char* kGraphMimeType = "application/x-kiln-graph";

class GraphCanvas : public QGraphicsView {
  Q_OBJECT
 public:
  explicit GraphCanvas(GraphDocument* document, QWidget* parent = nullptr);
  ~GraphCanvas() override;

  GraphDocument* document() const { return doc_; }
  void fitAll();
  // Like fitAll(), but never below 80% zoom (where node text stays readable): a graph
  // too tall or wide to fit is shown from its Input end, the rest a scroll away. Used
  // when a graph is opened.
  void fitReadable();
  void selectNode(graph::NodeId id);  // selects only it and centres the view on it
  // Selects and centres the node named `text` (any case), else the first (by id) whose name
  // contains it; message() says when nothing or several match. Returns the node (-1: none)
  // and how many names matched.
  struct NodeMatch {
    graph::NodeId node = -1;
    int matches = 0;
  };
  NodeMatch findNode(const QString& text);
  // Zooms to `factor` keeping the scene point under `viewportPos` where it is (Ctrl+wheel).
  void zoomAt(double factor, QPoint viewportPos);
  QList<graph::NodeId> selectedNodes() const;
  NodeItem* nodeItem(graph::NodeId id) const;              // nullptr when none
  EdgeItem* edgeItem(graph::PortRef to) const;             // the edge into `to`, nullptr when none
  double zoom() const { return transform().m11(); }        // 1 = 100%
  // "in0 (input) of add_1: f32[N, 16, 28, 28]": the tooltip of a port.
  QString portToolTip(graph::NodeId node, PortHit port) const;
  // Annotates each node in `heat` (NodeHeat: tint, badge, tooltip line) and clears every other
  // node's; an empty map clears all. The caller clears them when they no longer describe the
  // graph (the analyzer's profile does on an edit); nodes added later have none.
  void setNodeHeat(const std::map<graph::NodeId, NodeHeat>& heat);
  std::optional<NodeHeat> nodeHeat(graph::NodeId id) const;  // none when not annotated or no such node
  // The note shown over the canvas while the document is read-only (hidden otherwise).
  QLabel* lockNote() const { return lockNote_; }

 public slots:
  // Adds a node of `op` and selects it: below the selected node and connected to it when
  // exactly one is selected and its first output is free (one undo step; in_channels,
  // in_features, num_features are set from the input's shape), otherwise at
  // the centre of the visible area; shifted so it does not land on an existing node.
  // Returns its id, -1 (and message()) if the op is unknown.
  graph::NodeId addLayer(const QString& op);
  void zoomIn();
  void zoomOut();
  void copySelection();
  void pasteClipboard();
  void deleteSelection();

 signals:
  void selectionChanged(QList<kiln::graph::NodeId> nodes);
  void message(QString text);  // status-bar text: refused connections and the like
  // The context menu's "Replace classifier head…" (the window asks for the class count).
  void replaceHeadRequested();

 protected:
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void keyPressEvent(QKeyEvent*) override;
  void keyReleaseEvent(QKeyEvent*) override;
  void wheelEvent(QWheelEvent*) override;
  void dragEnterEvent(QDragEnterEvent*) override;
  void dragMoveEvent(QDragMoveEvent*) override;
  void dropEvent(QDropEvent*) override;
  void contextMenuEvent(QContextMenuEvent*) override;
  bool viewportEvent(QEvent*) override;  // port tooltips

 private:
  struct PortDrag {
    graph::PortRef port;
    bool fromOutput = true;
  };
  void sync();
  void setZoom(double factor);
  void updateSceneRect();  // the graph's bounding box plus one visible area on each side
  void updateDetail();  // edge labels only where readable
  std::optional<std::pair<NodeItem*, PortHit>> portUnder(QPointF scenePos) const;
  void finishPortDrag(QPointF scenePos, QPoint globalPos);
  void say(const QString& text, QPoint globalPos = {});
  void fitToInput(graph::NodeId id);
  void applyReadOnly();
  bool refuseEdit(QPoint globalPos = {});  // true (and says why) when the document is read-only
  QPointF freeSpotNear(QPointF centre) const;

  GraphDocument* doc_;
  QGraphicsScene scene_;
  std::map<graph::NodeId, NodeItem*> nodes_;
  std::map<graph::PortRef, EdgeItem*> edges_;  // keyed by the input port each edge feeds
  std::optional<PortDrag> portDrag_;
  QGraphicsPathItem* dragLine_ = nullptr;
  bool movingNodes_ = false;
  bool panning_ = false;
  bool spaceHeld_ = false;
  QPoint panStart_;
  int pasteCount_ = 0;
  bool syncing_ = false;
  bool labelsShown_ = true;
  QLabel* lockNote_ = nullptr;
};

}  // namespace kiln::studio
