// Scene items of the graph canvas. They mirror the document (the canvas syncs them
// by node id after every change); they never edit the graph themselves.
//
// Geometry (scene units): a node is a kNodeWidth x kNodeHeight box centred on the
// node's (x, y) (wider when it has many ports: kPortSpacing apart at least); layers run down the page, so input ports sit on the top edge and
// output ports on the bottom edge, spread evenly.
#pragma once
#include <QColor>
#include <QGraphicsItem>
#include <QGraphicsPathItem>
#include <QGraphicsSimpleTextItem>
#include <QFontMetricsF>
#include <QList>
#include <QStringList>
#include <optional>

#include "engine/graph/analysis.h"
#include "engine/graph/layout.h"
#include "engine/graph/op_schema.h"

namespace kiln::studio {

class EdgeItem;

inline constexpr double kNodeWidth = 168;
inline constexpr double kNodeHeight = 64;
inline constexpr double kPortRadius = 5;
inline constexpr double kPortSpacing = 20;
inline constexpr double kLabelMinZoom = 0.4;  // edge labels are hidden below this zoom

// The width of a node's box (scene units): kNodeWidth, or kPortSpacing per port more for
// nodes with many ports (Concat of 9 inputs).
double nodeWidth(const graph::Node&);
// graph::auto_layout's options for the canvas: top-down, node boxes as wide as nodeWidth.
graph::LayoutOptions canvasLayoutOptions();
// `text` elided in the middle ("layer4.1.co…bn2") to fit `width` pixels of `metrics`.
QString elideMiddle(const QString& text, const QFontMetricsF& metrics, double width);

// A per-node annotation over the canvas (the Network Analyzer's per-layer profile): `heat` in
// [0, 1] tints the node's body from its usual grey (0) to orange (1) and fills `badge` ("2.31 ms",
// drawn at the header's right end) from light to dark orange (heatColor); `tip` is a line added
// to the node's tooltip.
struct NodeHeat {
  double heat = 0;
  QString badge;
  QString tip;
  bool operator==(const NodeHeat&) const = default;
};
// The heat scale, light orange (0) to dark orange (1); `heat` is clamped to [0, 1].
QColor heatColor(double heat);

struct PortHit {
  bool output = false;
  int port = 0;
};

class NodeItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 1 };
  explicit NodeItem(const graph::Node& node);
  int type() const override { return Type; }

  graph::NodeId id() const { return node_.id; }
  const graph::Node& node() const { return node_; }
  // Updates what the item shows; repaints only when something differs.
  void setState(const graph::Node& node, const graph::NodeInfo* info,
                const std::vector<std::string>& problems);
  bool hasProblems() const { return !problems_.isEmpty(); }
  int inputCount() const { return inputs_; }
  int outputCount() const { return outputs_; }
  double width() const;  // kNodeWidth, or more for many ports
  // Port centres in scene coordinates.
  QPointF inputPos(int port) const;
  QPointF outputPos(int port) const;
  // The port within `tolerance` of a scene point, if any.
  std::optional<PortHit> portAt(QPointF scenePos, double tolerance = 9) const;
  // The short badge text: "1.2K params · 50.2K MACs"; "frozen 1.2K params · ..." when frozen.
  QString badgeText() const;
  // A frozen node (Node::trainable false) with parameters: drawn muted with a lock.
  bool frozen() const;
  QList<EdgeItem*>& edges() { return edges_; }
  // The profile's annotation (none: drawn as usual); repaints only when it differs.
  void setHeat(const std::optional<NodeHeat>& heat);
  const std::optional<NodeHeat>& heat() const { return heat_; }

  QRectF boundingRect() const override;
  void paint(QPainter*, const QStyleOptionGraphicsItem*, QWidget*) override;

 protected:
  QVariant itemChange(GraphicsItemChange change, const QVariant& value) override;

 private:
  QPointF portOffset(bool output, int port) const;
  graph::Node node_;
  const graph::OpSchema* schema_ = nullptr;
  int inputs_ = 0, outputs_ = 0;
  std::optional<graph::NodeInfo> info_;
  QStringList problems_;
  QList<EdgeItem*> edges_;
  std::optional<NodeHeat> heat_;
  QString tip_;  // the tooltip without the heat's line
};

class EdgeItem : public QGraphicsPathItem {
 public:
  enum { Type = UserType + 2 };
  explicit EdgeItem(const graph::Edge& edge);
  int type() const override { return Type; }
  const graph::Edge& edge() const { return edge_; }
  void setEdge(const graph::Edge& e) { edge_ = e; }
  // "f32[N, 10]", or "?" when the source's type is unknown.
  void setLabel(const QString& text);
  QString label() const { return label_->text(); }
  void setLabelVisible(bool visible);  // hidden when zoomed far out
  // The nodes it joins (set by the canvas whenever the edge set changes).
  void attach(NodeItem* from, NodeItem* to);
  // Recomputes the curve from the current port positions. An edge that would cross other
  // nodes (a skip connection beside a chain) runs down a lane just beside them.
  void updatePath();
  QPainterPath shape() const override;
  void paint(QPainter*, const QStyleOptionGraphicsItem*, QWidget*) override;

 private:
  // The x of a free lane for an edge from p1 down to p2 that would cross nodes; none when
  // the direct curve is clear (or the edge does not go down past a layer).
  std::optional<double> laneBeside(QPointF p1, QPointF p2) const;
  graph::Edge edge_;
  QGraphicsSimpleTextItem* label_;
  NodeItem* from_ = nullptr;
  NodeItem* to_ = nullptr;
  QPointF p1_, p2_;
};

// Compact counts for badges: 950, 12.5K, 3.4M, 1.2G.
QString shortCount(int64_t n);

}  // namespace kiln::studio
