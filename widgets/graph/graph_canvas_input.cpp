// GraphCanvas: mouse, keyboard, wheel, clipboard and drag-and-drop handling.
#include <QApplication>
#include <QClipboard>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QContextMenuEvent>
#include <QHelpEvent>
#include <QKeyEvent>
#include <QMenu>
#include <QToolTip>
#include <QMimeData>
#include <QMouseEvent>
#include <QScrollBar>
#include <QUndoStack>
#include <QWheelEvent>
#include <cmath>

#include "engine/graph/op_schema.h"
#include "widgets/graph/graph_canvas.h"

namespace kiln::studio {

void GraphCanvas::mousePressEvent(QMouseEvent* e) {
  if (e->button() == Qt::MiddleButton || (e->button() == Qt::LeftButton && spaceHeld_)) {
    panning_ = true;
    panStart_ = e->pos();
    viewport()->setCursor(Qt::ClosedHandCursor);
    e->accept();
    return;
  }
  if (e->button() == Qt::LeftButton) {
    const QPointF sp = mapToScene(e->pos());
    if (auto hit = portUnder(sp); hit && !refuseEdit(e->globalPosition().toPoint())) {
      const auto [item, port] = *hit;
      portDrag_ = PortDrag{{item->id(), port.port}, port.output};
      dragLine_ = new QGraphicsPathItem;
      dragLine_->setPen(QPen(QColor(0x4f, 0xa3, 0xff), 2, Qt::DashLine));
      dragLine_->setZValue(5);
      scene_.addItem(dragLine_);
      e->accept();
      return;
    }
    QGraphicsItem* under = itemAt(e->pos());
    movingNodes_ = under && under->type() == NodeItem::Type;
  }
  QGraphicsView::mousePressEvent(e);
}

void GraphCanvas::mouseMoveEvent(QMouseEvent* e) {
  if (panning_) {
    const QPoint delta = e->pos() - panStart_;
    panStart_ = e->pos();
    horizontalScrollBar()->setValue(horizontalScrollBar()->value() - delta.x());
    verticalScrollBar()->setValue(verticalScrollBar()->value() - delta.y());
    e->accept();
    return;
  }
  if (portDrag_) {
    NodeItem* item = nodeItem(portDrag_->port.node);
    if (item && dragLine_) {
      const QPointF p1 = portDrag_->fromOutput ? item->outputPos(portDrag_->port.port)
                                               : item->inputPos(portDrag_->port.port);
      QPainterPath path(p1);
      path.lineTo(mapToScene(e->pos()));
      dragLine_->setPath(path);
    }
    e->accept();
    return;
  }
  QGraphicsView::mouseMoveEvent(e);
  if (movingNodes_ && (e->buttons() & Qt::LeftButton)) {
    // Live update; GraphDocument merges the moves of one drag into one undo step.
    QMap<graph::NodeId, QPointF> moved;
    for (QGraphicsItem* item : scene_.selectedItems()) {
      if (item->type() != NodeItem::Type) continue;
      auto* node = static_cast<NodeItem*>(item);
      if (node->pos() != QPointF(node->node().x, node->node().y)) moved.insert(node->id(), node->pos());
    }
    if (!moved.isEmpty()) doc_->moveNodes(moved);
  }
}

void GraphCanvas::mouseReleaseEvent(QMouseEvent* e) {
  if (panning_ && (e->button() == Qt::MiddleButton || e->button() == Qt::LeftButton)) {
    panning_ = false;
    viewport()->setCursor(spaceHeld_ ? Qt::OpenHandCursor : Qt::ArrowCursor);
    e->accept();
    return;
  }
  if (portDrag_ && e->button() == Qt::LeftButton) {
    finishPortDrag(mapToScene(e->pos()), e->globalPosition().toPoint());
    e->accept();
    return;
  }
  QGraphicsView::mouseReleaseEvent(e);
  if (movingNodes_ && e->button() == Qt::LeftButton) {
    movingNodes_ = false;
    doc_->finishMove();
  }
}

void GraphCanvas::finishPortDrag(QPointF scenePos, QPoint globalPos) {
  delete dragLine_;
  dragLine_ = nullptr;
  const PortDrag drag = *portDrag_;
  portDrag_.reset();
  const graph::Graph& g = doc_->graph();
  if (!g.contains(drag.port.node)) return;
  const auto hit = portUnder(scenePos);
  if (!hit) {
    if (!drag.fromOutput && g.source_of(drag.port)) {
      doc_->disconnectPort(drag.port);
      say(tr("Disconnected %1").arg(toQString(g.node(drag.port.node).name)));
    } else {
      say(drag.fromOutput ? tr("Drop on an input port to connect")
                          : tr("Drop on an output port to connect"));
    }
    return;
  }
  const auto [item, port] = *hit;
  if (port.output == drag.fromOutput) {
    say(tr("Cannot connect: an output port connects to an input port"), globalPos);
    return;
  }
  const graph::PortRef other{item->id(), port.port};
  const graph::PortRef from = drag.fromOutput ? drag.port : other;
  const graph::PortRef to = drag.fromOutput ? other : drag.port;
  QString reason;
  const QString fromName = toQString(g.node(from.node).name);
  const QString toName = toQString(g.node(to.node).name);
  // Connecting into a fed input replaces its edge: name the one that goes.
  const std::optional<graph::PortRef> replaced = g.source_of(to);
  const QString oldName = replaced ? toQString(g.node(replaced->node).name) : QString();
  const QString text = replaced ? tr("Replace %1 → %3 with %2 → %3").arg(oldName, fromName, toName)
                                : tr("Connect %1 → %2").arg(fromName, toName);
  if (!doc_->canConnect(from, to, &reason)) {
    say(tr("Cannot connect: %1").arg(reason), globalPos);
    return;
  }
  doc_->undoStack()->beginMacro(text);
  doc_->connectPorts(from, to);
  // A layer whose channel / feature count does not match its new input takes it from
  // the input (same undo step), as when appended from the palette.
  if (to.port == 0 && !doc_->analysis().problems_of(to.node).empty()) fitToInput(to.node);
  doc_->undoStack()->endMacro();
  say(replaced ? tr("Replaced %1 → %3 with %2 → %3").arg(oldName, fromName, toName)
               : tr("Connected %1 → %2").arg(fromName, toName));
}

void GraphCanvas::deleteSelection() {
  if (refuseEdit()) return;
  const QList<graph::NodeId> nodes = selectedNodes();
  std::vector<graph::PortRef> inputs;  // edges to remove, by the input they feed
  for (QGraphicsItem* item : scene_.selectedItems()) {
    if (item->type() != EdgeItem::Type) continue;
    const graph::Edge& e = static_cast<EdgeItem*>(item)->edge();
    if (!nodes.contains(e.from.node) && !nodes.contains(e.to.node)) inputs.push_back(e.to);
  }
  if (nodes.isEmpty() && inputs.empty()) return;
  const bool macro = inputs.size() + (nodes.isEmpty() ? 0 : 1) > 1;
  if (macro) doc_->undoStack()->beginMacro(tr("Delete selection"));
  doc_->removeNodes(nodes);
  for (const graph::PortRef& to : inputs) doc_->disconnectPort(to);
  if (macro) doc_->undoStack()->endMacro();
}

void GraphCanvas::copySelection() {
  const QList<graph::NodeId> nodes = selectedNodes();
  if (nodes.isEmpty()) return;
  const QString json = doc_->copy(nodes);
  auto* mime = new QMimeData;
  mime->setData(kGraphMimeType, json.toUtf8());
  mime->setText(json);
  QApplication::clipboard()->setMimeData(mime);
  pasteCount_ = 0;
  say(tr("Copied %n node(s)", nullptr, int(nodes.size())));
}

void GraphCanvas::pasteClipboard() {
  if (refuseEdit()) return;
  const QMimeData* mime = QApplication::clipboard()->mimeData();
  if (!mime) return;
  const QString json = mime->hasFormat(kGraphMimeType) ? QString::fromUtf8(mime->data(kGraphMimeType))
                                                       : mime->text();
  if (json.trimmed().isEmpty()) return;
  ++pasteCount_;
  QString reason;
  const QList<graph::NodeId> ids = doc_->paste(json, QPointF(40, 40) * pasteCount_, &reason);
  if (ids.isEmpty()) {
    if (!reason.isEmpty()) say(reason);
    return;
  }
  scene_.clearSelection();
  for (graph::NodeId id : ids)
    if (NodeItem* item = nodeItem(id)) item->setSelected(true);
  say(tr("Pasted %n node(s)", nullptr, int(ids.size())));
}

void GraphCanvas::keyPressEvent(QKeyEvent* e) {
  const bool shiftCtrlZ = e->key() == Qt::Key_Z &&
                          e->modifiers() == (Qt::ControlModifier | Qt::ShiftModifier);
  if (e->matches(QKeySequence::Delete) || e->key() == Qt::Key_Delete || e->key() == Qt::Key_Backspace) {
    deleteSelection();
  } else if (e->matches(QKeySequence::Copy)) {
    copySelection();
  } else if (e->matches(QKeySequence::Paste)) {
    pasteClipboard();
  } else if (e->matches(QKeySequence::Undo) && !shiftCtrlZ) {
    if (!refuseEdit()) doc_->undoStack()->undo();
  } else if (e->matches(QKeySequence::Redo) || shiftCtrlZ) {
    if (!refuseEdit()) doc_->undoStack()->redo();
  } else if (e->matches(QKeySequence::SelectAll)) {
    for (auto& [id, item] : nodes_) item->setSelected(true);
  } else if ((e->key() == Qt::Key_Left || e->key() == Qt::Key_Right || e->key() == Qt::Key_Up ||
              e->key() == Qt::Key_Down) && !selectedNodes().isEmpty() && !refuseEdit()) {
    // Nudge the selection; holding the key (auto-repeat) stays one undo step.
    const double step = e->modifiers() & Qt::ShiftModifier ? 50 : 10;
    const QPointF delta = e->key() == Qt::Key_Left ? QPointF(-step, 0) : e->key() == Qt::Key_Right ? QPointF(step, 0)
                        : e->key() == Qt::Key_Up   ? QPointF(0, -step) : QPointF(0, step);
    QMap<graph::NodeId, QPointF> moved;
    for (graph::NodeId id : selectedNodes()) {
      const graph::Node& n = doc_->graph().node(id);
      moved.insert(id, QPointF(n.x, n.y) + delta);
    }
    doc_->moveNodes(moved);
  } else if (e->key() == Qt::Key_Plus || e->key() == Qt::Key_Equal) {
    zoomIn();
  } else if (e->key() == Qt::Key_Minus) {
    zoomOut();
  } else if (e->key() == Qt::Key_Space && !e->isAutoRepeat()) {
    spaceHeld_ = true;
    setDragMode(NoDrag);
    viewport()->setCursor(Qt::OpenHandCursor);
  } else {
    QGraphicsView::keyPressEvent(e);
    return;
  }
  e->accept();
}

void GraphCanvas::keyReleaseEvent(QKeyEvent* e) {
  const int k = e->key();
  if ((k == Qt::Key_Left || k == Qt::Key_Right || k == Qt::Key_Up || k == Qt::Key_Down) && !e->isAutoRepeat())
    doc_->finishMove();  // the next nudge is a new undo step
  if (e->key() == Qt::Key_Space && !e->isAutoRepeat()) {
    spaceHeld_ = false;
    setDragMode(RubberBandDrag);
    viewport()->setCursor(Qt::ArrowCursor);
    e->accept();
    return;
  }
  QGraphicsView::keyReleaseEvent(e);
}

void GraphCanvas::wheelEvent(QWheelEvent* e) {
  if (e->modifiers() & Qt::ControlModifier) {
    zoomAt(zoom() * std::pow(1.0015, e->angleDelta().y()), e->position().toPoint());
    e->accept();
    return;
  }
  QGraphicsView::wheelEvent(e);
}

void GraphCanvas::dragEnterEvent(QDragEnterEvent* e) {
  if (e->mimeData()->hasFormat(kOpMimeType) && !doc_->isReadOnly()) {
    e->setDropAction(Qt::CopyAction);
    e->accept();
  } else {
    QGraphicsView::dragEnterEvent(e);
  }
}

void GraphCanvas::dragMoveEvent(QDragMoveEvent* e) {
  if (e->mimeData()->hasFormat(kOpMimeType) && !doc_->isReadOnly()) {
    e->setDropAction(Qt::CopyAction);
    e->accept();
  } else {
    QGraphicsView::dragMoveEvent(e);
  }
}

void GraphCanvas::dropEvent(QDropEvent* e) {
  if (!e->mimeData()->hasFormat(kOpMimeType)) {
    QGraphicsView::dropEvent(e);
    return;
  }
  if (refuseEdit()) return;
  const QString op = QString::fromUtf8(e->mimeData()->data(kOpMimeType));
  QString reason;
  const graph::NodeId id = doc_->addNode(op, mapToScene(e->position().toPoint()), &reason);
  if (id < 0) {
    say(reason);
    return;
  }
  e->setDropAction(Qt::CopyAction);
  e->accept();
  scene_.clearSelection();
  if (NodeItem* item = nodeItem(id)) item->setSelected(true);
  setFocus();
}

}  // namespace kiln::studio

namespace kiln::studio {

QString GraphCanvas::portToolTip(graph::NodeId id, PortHit port) const {
  const graph::Graph& g = doc_->graph();
  if (!g.contains(id)) return {};
  const graph::Node& n = g.node(id);
  const graph::OpSchema& schema = graph::OpRegistry::global().get(n.op);
  const QString name = toQString(port.output ? schema.output_name(port.port) : schema.input_name(port.port));
  QString type = tr("type unknown");
  auto info = doc_->analysis().nodes.find(id);
  if (info != doc_->analysis().nodes.end()) {
    const auto& types = port.output ? info->second.outputs : info->second.inputs;
    if (size_t(port.port) < types.size()) type = toQString(types[size_t(port.port)].str());
  } else if (!port.output) {
    if (auto from = g.source_of({id, port.port}))
      if (auto t = doc_->analysis().type_of(*from)) type = toQString(t->str());
  }
  return tr("%1 (%2) of %3: %4")
      .arg(name, port.output ? tr("output") : tr("input"), toQString(n.name), type);
}

bool GraphCanvas::viewportEvent(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(e);
    if (auto hit = portUnder(mapToScene(help->pos()))) {
      QToolTip::showText(help->globalPos(), portToolTip(hit->first->id(), hit->second), viewport());
      return true;
    }
  }
  return QGraphicsView::viewportEvent(e);
}

void GraphCanvas::contextMenuEvent(QContextMenuEvent* e) {
  QGraphicsItem* under = itemAt(e->pos());
  if (under && !under->isSelected() && (under->type() == NodeItem::Type || under->type() == EdgeItem::Type)) {
    scene_.clearSelection();
    under->setSelected(true);
  }
  const bool selection = !scene_.selectedItems().isEmpty(), editable = !doc_->isReadOnly();
  QMenu menu(this);
  menu.addAction(tr("Delete"), this, &GraphCanvas::deleteSelection)->setEnabled(selection && editable);
  menu.addAction(tr("Copy"), this, &GraphCanvas::copySelection)->setEnabled(!selectedNodes().isEmpty());
  menu.addAction(tr("Paste"), this, &GraphCanvas::pasteClipboard)->setEnabled(editable);
  menu.addSeparator();
  menu.addAction(tr("Auto layout"), this, [this] {
    if (!doc_->autoLayout()) emit message(tr("Auto layout: the graph is already laid out"));
    fitAll();
  })->setEnabled(editable);
  menu.addAction(tr("Fit all"), this, &GraphCanvas::fitAll);
  // Transfer learning (engine/graph/transfer.h): frozen layers and a new head.
  menu.addSeparator();
  const QList<graph::NodeId> nodes = selectedNodes();
  menu.addAction(tr("Freeze up to here"), this, [this, nodes] { doc_->freezeUpTo(nodes.front()); })
      ->setEnabled(editable && nodes.size() == 1);
  menu.addAction(tr("Unfreeze all"), doc_, &GraphDocument::unfreezeAll)->setEnabled(editable);
  menu.addAction(tr("Replace classifier head…"), this, &GraphCanvas::replaceHeadRequested)->setEnabled(editable);
  menu.exec(e->globalPos());
}

}  // namespace kiln::studio
