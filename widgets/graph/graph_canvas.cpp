#include "widgets/graph/graph_canvas.h"

#include "engine/graph/op_schema.h"

#include <QApplication>
#include <QClipboard>
#include <QKeyEvent>
#include <QLabel>
#include <QMimeData>
#include <QScrollBar>
#include <QToolTip>
#include <QUndoStack>
#include <algorithm>
#include <cmath>
#include <set>

namespace kiln::studio {

namespace {
constexpr double kMinZoom = 0.05, kMaxZoom = 4.0;
}

GraphCanvas::GraphCanvas(GraphDocument* document, QWidget* parent)
    : QGraphicsView(parent), doc_(document) {
  setScene(&scene_);
  setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
  setDragMode(RubberBandDrag);
  setTransformationAnchor(AnchorUnderMouse);
  setResizeAnchor(AnchorViewCenter);
  setAcceptDrops(true);
  setFocusPolicy(Qt::StrongFocus);
  setBackgroundBrush(QColor(0x1e, 0x21, 0x26));
  connect(doc_, &GraphDocument::changed, this, &GraphCanvas::sync);
  connect(doc_, &GraphDocument::readOnlyChanged, this, &GraphCanvas::applyReadOnly);
  lockNote_ = new QLabel(viewport());
  lockNote_->setObjectName("canvasLockNote");
  lockNote_->setStyleSheet("QLabel { background: rgba(120, 84, 20, 220); color: white; padding: 6px 10px;"
                           " border-radius: 4px; }");
  lockNote_->move(8, 8);
  lockNote_->hide();
  connect(&scene_, &QGraphicsScene::selectionChanged, this, [this] {
    if (!syncing_) emit selectionChanged(selectedNodes());
  });
  sync();
}

// Read-only document: nodes do not move, the note says why; the input handlers
// (graph_canvas_input.cpp) refuse edits with the same reason.
void GraphCanvas::applyReadOnly() {
  const bool ro = doc_->isReadOnly();
  for (auto& [id, item] : nodes_) item->setFlag(QGraphicsItem::ItemIsMovable, !ro);
  setAcceptDrops(!ro);
  lockNote_->setText(tr("Editing is locked: %1").arg(doc_->readOnlyReason()));
  lockNote_->adjustSize();
  lockNote_->setVisible(ro);
}

bool GraphCanvas::refuseEdit(QPoint globalPos) {
  if (!doc_->isReadOnly()) return false;
  say(tr("Editing is locked: %1").arg(doc_->readOnlyReason()), globalPos);
  return true;
}

GraphCanvas::~GraphCanvas() {
  // The scene dies with this view; its item removal must not reach our listeners (the
  // document may already be gone when a main window deletes its children).
  disconnect(&scene_, nullptr, this, nullptr);
}

// Note [Incremental sync]: after every document change the scene is brought in line
// with the graph by id: edges that vanished or changed source are deleted, node items
// are updated in place (NodeItem::setState repaints only on a difference), new nodes
// and edges get items, and edge curves are recomputed only when an end moved. A
// 200-node graph therefore costs a few map look-ups per node, not a scene rebuild.
void GraphCanvas::sync() {
  syncing_ = true;
  const QList<graph::NodeId> selectedBefore = selectedNodes();
  const graph::Graph& g = doc_->graph();
  const graph::Analysis& a = doc_->analysis();
  for (auto& [id, item] : nodes_) item->edges().clear();

  std::map<graph::PortRef, graph::PortRef> want;  // to -> from
  for (const graph::Edge& e : g.edges()) want.emplace(e.to, e.from);
  for (auto it = edges_.begin(); it != edges_.end();) {
    auto w = want.find(it->first);
    if (w == want.end() || w->second != it->second->edge().from) {
      delete it->second;
      it = edges_.erase(it);
    } else {
      ++it;
    }
  }

  std::set<graph::NodeId> present;
  for (const graph::Node& n : g.nodes()) {
    present.insert(n.id);
    auto found = a.nodes.find(n.id);
    const graph::NodeInfo* info = found == a.nodes.end() ? nullptr : &found->second;
    NodeItem*& item = nodes_[n.id];
    if (!item) {
      item = new NodeItem(n);
      item->setFlag(QGraphicsItem::ItemIsMovable, !doc_->isReadOnly());
      scene_.addItem(item);
    }
    item->setState(n, info, a.problems_of(n.id));
  }
  for (auto it = nodes_.begin(); it != nodes_.end();) {
    if (!present.count(it->first)) {
      delete it->second;
      it = nodes_.erase(it);
    } else {
      ++it;
    }
  }

  for (const auto& [to, from] : want) {
    EdgeItem*& item = edges_[to];
    if (!item) {
      item = new EdgeItem({from, to});
      item->setLabelVisible(labelsShown_);
      scene_.addItem(item);
    }
    NodeItem* a1 = nodes_.at(from.node);
    NodeItem* a2 = nodes_.at(to.node);
    a1->edges().push_back(item);
    a2->edges().push_back(item);
    const std::optional<graph::TensorType> type = a.type_of(from);
    item->setLabel(type ? toQString(type->str()) : QStringLiteral("?"));
    item->attach(a1, a2);
  }
  syncing_ = false;
  updateSceneRect();
  const QList<graph::NodeId> selectedAfter = selectedNodes();
  if (selectedAfter != selectedBefore) emit selectionChanged(selectedAfter);
}

NodeItem* GraphCanvas::nodeItem(graph::NodeId id) const {
  auto it = nodes_.find(id);
  return it == nodes_.end() ? nullptr : it->second;
}

void GraphCanvas::setNodeHeat(const std::map<graph::NodeId, NodeHeat>& heat) {
  for (auto& [id, item] : nodes_) {
    const auto it = heat.find(id);
    item->setHeat(it == heat.end() ? std::nullopt : std::optional<NodeHeat>(it->second));
  }
}

std::optional<NodeHeat> GraphCanvas::nodeHeat(graph::NodeId id) const {
  const NodeItem* item = nodeItem(id);
  return item ? item->heat() : std::nullopt;
}

EdgeItem* GraphCanvas::edgeItem(graph::PortRef to) const {
  auto it = edges_.find(to);
  return it == edges_.end() ? nullptr : it->second;
}

QList<graph::NodeId> GraphCanvas::selectedNodes() const {
  QList<graph::NodeId> ids;
  for (QGraphicsItem* item : scene_.selectedItems())
    if (item->type() == NodeItem::Type) ids.push_back(static_cast<NodeItem*>(item)->id());
  std::sort(ids.begin(), ids.end());
  return ids;
}

void GraphCanvas::selectNode(graph::NodeId id) {
  NodeItem* item = nodeItem(id);
  scene_.clearSelection();
  if (!item) return;
  item->setSelected(true);
  centerOn(item);
}

void GraphCanvas::fitAll() {
  QRectF rect = scene_.itemsBoundingRect();
  if (rect.isEmpty()) {
    resetTransform();
    updateDetail();
    centerOn(0, 0);
    return;
  }
  rect.adjust(-40, -40, 40, 40);
  fitInView(rect, Qt::KeepAspectRatio);
  updateDetail();
  if (zoom() > 1.5) setZoom(1.5);
  if (zoom() < kMinZoom) setZoom(kMinZoom);
  centerOn(rect.center());
}

void GraphCanvas::fitReadable() {
  constexpr double kReadableZoom = 0.8;
  fitAll();
  if (zoom() >= kReadableZoom) return;
  const QRectF rect = scene_.itemsBoundingRect().adjusted(-40, -40, 40, 40);
  setZoom(kReadableZoom);
  const QRectF visible = mapToScene(viewport()->rect()).boundingRect();
  // Keep the start of the graph (top-left of its bounding box) in view.
  const double x = rect.width() > visible.width() ? rect.left() + visible.width() / 2 : rect.center().x();
  const double y = rect.height() > visible.height() ? rect.top() + visible.height() / 2 : rect.center().y();
  centerOn(x, y);
}

void GraphCanvas::setZoom(double factor) {
  factor = std::clamp(factor, kMinZoom, kMaxZoom);
  const double s = factor / zoom();
  scale(s, s);
  updateSceneRect();
  updateDetail();
}

void GraphCanvas::zoomAt(double factor, QPoint viewportPos) {
  const QPointF anchor = mapToScene(viewportPos);
  const ViewportAnchor saved = transformationAnchor();
  setTransformationAnchor(NoAnchor);
  setZoom(factor);
  setTransformationAnchor(saved);
  // Scroll so that the scene point under the cursor is under it again.
  const QPoint moved = mapFromScene(anchor) - viewportPos;
  horizontalScrollBar()->setValue(horizontalScrollBar()->value() + moved.x());
  verticalScrollBar()->setValue(verticalScrollBar()->value() + moved.y());
}

void GraphCanvas::updateSceneRect() {
  // The graph plus one visible area on every side: any point of the graph can be scrolled
  // under any point of the view (zooming around the cursor needs that), the view's centre kept.
  const QPointF centre = mapToScene(viewport()->rect().center());
  const QRectF visible = mapToScene(viewport()->rect()).boundingRect();
  const QRectF items = scene_.itemsBoundingRect();
  setSceneRect(items.adjusted(-visible.width(), -visible.height(), visible.width(), visible.height()));
  centerOn(centre);
}

namespace {
// A name as search compares it: lower case, every run of characters other than letters and
// digits one '_', none at the ends. Imported names are identifiers ("layer3_0_conv2_Conv"
// from the ONNX node "/layer3/layer3.0/conv2/Conv"), so "layer3.0.conv2", as PyTorch and
// Netron write it, finds them.
QString searchKey(const QString& s) {
  QString out;
  for (const QChar c : s) {
    if (c.isLetterOrNumber()) out += c.toLower();
    else if (!out.isEmpty() && !out.endsWith('_')) out += '_';
  }
  while (out.endsWith('_')) out.chop(1);
  return out;
}
}  // namespace

GraphCanvas::NodeMatch GraphCanvas::findNode(const QString& text) {
  const QString wanted = text.trimmed();
  const QString key = searchKey(wanted);
  if (key.isEmpty()) return {};
  // An exact name first (any case and separator), then the first name that contains the text, by id.
  graph::NodeId found = -1;
  int matches = 0;
  for (const graph::Node& n : doc_->graph().nodes()) {
    const QString name = searchKey(toQString(n.name));
    if (name == key) {
      found = n.id;
      matches = 1;
      break;
    }
    if (name.contains(key) && matches++ == 0) found = n.id;
  }
  if (found < 0) {
    emit message(tr("No node's name contains \"%1\"").arg(wanted));
    return {};
  }
  selectNode(found);
  if (matches > 1) emit message(tr("%1 nodes match \"%2\"; showing %3").arg(matches).arg(wanted, toQString(doc_->graph().node(found).name)));
  return {found, matches};
}

void GraphCanvas::updateDetail() {
  const bool labels = zoom() >= kLabelMinZoom;
  if (labels == labelsShown_) return;
  labelsShown_ = labels;
  for (auto& [to, edge] : edges_) edge->setLabelVisible(labels);
}

void GraphCanvas::zoomIn() { setZoom(zoom() * 1.25); }
void GraphCanvas::zoomOut() { setZoom(zoom() / 1.25); }

QPointF GraphCanvas::freeSpotNear(QPointF centre) const {
  QPointF p = centre;
  for (int i = 0; i < 50; ++i) {
    const QRectF box(p.x() - kNodeWidth / 2, p.y() - kNodeHeight / 2, kNodeWidth, kNodeHeight);
    bool taken = false;
    for (const auto& [id, item] : nodes_) taken = taken || item->sceneBoundingRect().intersects(box);
    if (!taken) return p;
    p += QPointF(28, 28);
  }
  return p;
}

graph::NodeId GraphCanvas::addLayer(const QString& op) {
  if (refuseEdit()) return -1;
  const graph::OpSchema* schema = graph::OpRegistry::global().find(toStd(op));
  if (!schema) {
    QString reason;
    doc_->addNode(op, QPointF(), &reason);  // refused: gives the registry's message
    say(reason);
    return -1;
  }
  // Note [Append after the selection]: with one node selected whose first output feeds
  // nothing yet, the new layer goes below it and is connected to it, so double-clicking
  // Input, Conv2d, ReLU ... in the palette builds a chain. One undo step.
  const QList<graph::NodeId> selected = selectedNodes();
  const graph::Graph& g = doc_->graph();
  std::optional<graph::NodeId> after;
  if (selected.size() == 1 && schema->input_count(schema->with_defaults({})) > 0) {
    const NodeItem* prev = nodeItem(selected.front());
    if (prev && prev->outputCount() > 0 && g.consumers_of({prev->id(), 0}).empty()) after = prev->id();
  }
  graph::NodeId id = -1;
  if (after) {
    const NodeItem* prev = nodeItem(*after);
    doc_->undoStack()->beginMacro(tr("Add %1 after %2").arg(op, toQString(g.node(*after).name)));
    id = doc_->addNode(op, freeSpotNear(prev->pos() + QPointF(0, kNodeHeight + 56)));
    if (doc_->connectPorts({*after, 0}, {id, 0})) fitToInput(id);
    doc_->undoStack()->endMacro();
  } else {
    id = doc_->addNode(op, freeSpotNear(mapToScene(viewport()->rect().center())));
  }
  scene_.clearSelection();
  if (NodeItem* item = nodeItem(id)) {
    item->setSelected(true);
    ensureVisible(item, 40, 40);
  }
  return id;
}

// Sets the attributes that must equal a dimension of the input (OpSchema::
// input_dim_attributes) from the inferred input when a layer is appended, so a chain
// built from the palette is valid as it grows.
void GraphCanvas::fitToInput(graph::NodeId id) {
  const graph::Graph& g = doc_->graph();
  const std::optional<graph::PortRef> from = g.source_of({id, 0});
  if (!from) return;
  const std::optional<graph::TensorType> type = doc_->analysis().type_of(*from);
  if (!type) return;
  const graph::SymShape& shape = type->shape;
  const graph::OpSchema& schema = graph::OpRegistry::global().get(g.node(id).op);
  for (const auto& r : schema.input_dim_attributes) {
    if (shape.size() < 2 || (r.rank && shape.size() != r.rank)) continue;
    const int64_t value = r.dim < 0 ? shape.back() : shape[size_t(r.dim)];
    if (value > 0) doc_->setAttribute(id, QString::fromStdString(r.attribute), value);
  }
}

void GraphCanvas::say(const QString& text, QPoint globalPos) {
  emit message(text);
  if (!globalPos.isNull()) QToolTip::showText(globalPos, text, this);
}

std::optional<std::pair<NodeItem*, PortHit>> GraphCanvas::portUnder(QPointF scenePos) const {
  const QRectF area(scenePos - QPointF(10, 10), QSizeF(20, 20));
  for (QGraphicsItem* item : scene_.items(area)) {
    if (item->type() != NodeItem::Type) continue;
    auto* node = static_cast<NodeItem*>(item);
    if (auto hit = node->portAt(scenePos)) return std::make_pair(node, *hit);
  }
  return std::nullopt;
}
}  // namespace kiln::studio
