#include "widgets/graph/graph_items.h"

#include <QGraphicsScene>
#include <QPainter>
#include <QStyleOptionGraphicsItem>
#include <algorithm>
#include <cmath>

#include "widgets/graph/graph_document.h"

namespace kiln::studio {

namespace {
constexpr double kHeader = 20;
constexpr double kTextDetail = 0.3;  // below this scale nodes are drawn without text

QColor categoryColor(const std::string& category) {
  if (category == "Input/Output") return QColor(0x3f, 0x7f, 0x5f);
  if (category == "Layers") return QColor(0x3b, 0x63, 0x9b);
  if (category == "Activations") return QColor(0x8a, 0x5a, 0x2b);
  if (category == "Normalization") return QColor(0x6a, 0x4c, 0x93);
  if (category == "Pooling") return QColor(0x2f, 0x7d, 0x86);
  if (category == "Regularization") return QColor(0x80, 0x70, 0x30);
  return QColor(0x5a, 0x5f, 0x6a);  // Tensor and anything new
}
}  // namespace

QString shortCount(int64_t n) {
  const double v = double(n);
  if (n < 1000) return QString::number(n);
  if (n < 1000000) return QString::number(v / 1e3, 'f', v < 1e4 ? 1 : 0) + "K";
  if (n < 1000000000) return QString::number(v / 1e6, 'f', v < 1e7 ? 1 : 0) + "M";
  return QString::number(v / 1e9, 'f', 1) + "G";
}

// ---- NodeItem ----
NodeItem::NodeItem(const graph::Node& node) {
  setFlags(ItemIsSelectable | ItemIsMovable | ItemSendsGeometryChanges);
  setCacheMode(DeviceCoordinateCache);
  setZValue(1);
  setState(node, nullptr, {});
}

void NodeItem::setState(const graph::Node& node, const graph::NodeInfo* info,
                        const std::vector<std::string>& problems) {
  QStringList list;
  for (const std::string& p : problems) list << toQString(p);
  const bool sameInfo =
      (info == nullptr) == !info_.has_value() &&
      (!info || (info->parameters == info_->parameters && info->macs == info_->macs &&
                 info->inputs == info_->inputs && info->outputs == info_->outputs));
  const bool samePorts = schema_ && node.attrs == node_.attrs && node.op == node_.op;
  if (node == node_ && sameInfo && list == problems_ && schema_) return;
  const bool geometryChanges = !samePorts;
  if (geometryChanges) prepareGeometryChange();
  node_ = node;
  schema_ = graph::OpRegistry::global().find(node.op);
  inputs_ = schema_ ? schema_->input_count(node.attrs) : 0;
  outputs_ = schema_ ? int(schema_->outputs.size()) : 0;
  info_ = info ? std::optional<graph::NodeInfo>(*info) : std::nullopt;
  problems_ = list;
  setPos(node.x, node.y);
  QString tip = QStringLiteral("<b>%1</b> (%2)").arg(toQString(node.name), toQString(node.op));
  if (!problems_.isEmpty()) {
    tip += "<br><span style='color:#e05252'>" + problems_.join("<br>").toHtmlEscaped() + "</span>";
  } else if (info_) {
    for (size_t i = 0; i < info_->outputs.size(); ++i)
      tip += "<br>out: " + toQString(info_->outputs[i].str());
    tip += "<br>" + badgeText();
  }
  tip_ = tip;
  setToolTip(heat_ ? tip_ + "<br>" + heat_->tip.toHtmlEscaped() : tip_);
  update();
}

void NodeItem::setHeat(const std::optional<NodeHeat>& heat) {
  if (heat == heat_) return;
  heat_ = heat;
  setToolTip(heat_ ? tip_ + "<br>" + heat_->tip.toHtmlEscaped() : tip_);
  update();
}

QColor heatColor(double heat) {
  const double h = std::clamp(heat, 0.0, 1.0);
  const QColor light(0xff, 0xd8, 0xa0), dark(0xc4, 0x4c, 0x00);
  auto mix = [h](int a, int b) { return int(std::lround(a + (b - a) * h)); };
  return QColor(mix(light.red(), dark.red()), mix(light.green(), dark.green()), mix(light.blue(), dark.blue()));
}

QString NodeItem::badgeText() const {
  if (!info_) return QStringLiteral("? params · ? MACs");
  const QString text = QStringLiteral("%1 params · %2 MACs").arg(shortCount(info_->parameters), shortCount(info_->macs));
  return frozen() ? QObject::tr("frozen %1").arg(text) : text;
}

bool NodeItem::frozen() const { return !node_.trainable && info_ && info_->parameters > 0; }

QPointF NodeItem::portOffset(bool output, int port) const {
  const int count = output ? outputs_ : inputs_;
  const double w = width();
  const double step = w / (count + 1);
  return {-w / 2 + step * (port + 1), output ? kNodeHeight / 2 : -kNodeHeight / 2};
}

double NodeItem::width() const {
  return std::max(kNodeWidth, kPortSpacing * (std::max(inputs_, outputs_) + 1));
}

double nodeWidth(const graph::Node& node) {
  const graph::OpSchema* schema = graph::OpRegistry::global().find(node.op);
  if (!schema) return kNodeWidth;
  const int ports = std::max(schema->input_count(node.attrs), int(schema->outputs.size()));
  return std::max(kNodeWidth, kPortSpacing * (ports + 1));
}

graph::LayoutOptions canvasLayoutOptions() {
  graph::LayoutOptions o;
  o.top_down = true;
  o.node_size = nodeWidth;
  return o;
}

QString elideMiddle(const QString& text, const QFontMetricsF& metrics, double width) {
  return metrics.elidedText(text, Qt::ElideMiddle, width);
}

QPointF NodeItem::inputPos(int port) const { return mapToScene(portOffset(false, port)); }
QPointF NodeItem::outputPos(int port) const { return mapToScene(portOffset(true, port)); }

std::optional<PortHit> NodeItem::portAt(QPointF scenePos, double tolerance) const {
  const QPointF local = mapFromScene(scenePos);
  std::optional<PortHit> best;
  double bestDist = tolerance;
  for (int output = 0; output < 2; ++output) {
    const int count = output ? outputs_ : inputs_;
    for (int i = 0; i < count; ++i) {
      const double d = QLineF(local, portOffset(output != 0, i)).length();
      if (d <= bestDist) {
        bestDist = d;
        best = PortHit{output != 0, i};
      }
    }
  }
  return best;
}

QRectF NodeItem::boundingRect() const {
  const double m = kPortRadius + 2;
  const double w = width();
  return QRectF(-w / 2 - m, -kNodeHeight / 2 - m, w + 2 * m, kNodeHeight + 2 * m);
}

void NodeItem::paint(QPainter* p, const QStyleOptionGraphicsItem* option, QWidget*) {
  const QRectF r(-width() / 2, -kNodeHeight / 2, width(), kNodeHeight);
  const bool error = !problems_.isEmpty();
  p->setRenderHint(QPainter::Antialiasing);
  QColor border = error ? QColor(0xe0, 0x52, 0x52) : QColor(0x70, 0x76, 0x80);
  if (isSelected()) border = QColor(0x4f, 0xa3, 0xff);
  p->setPen(QPen(border, isSelected() || error ? 2.5 : 1.2));
  const bool muted = frozen() && !error;
  QColor body = error ? QColor(0x4a, 0x28, 0x2a) : muted ? QColor(0x22, 0x24, 0x28) : QColor(0x2b, 0x2f, 0x36);
  if (heat_ && !error) {  // from a faint to a strong orange wash; the light text stays readable
    const double a = 0.12 + 0.63 * std::clamp(heat_->heat, 0.0, 1.0);
    const QColor o(0xd8, 0x6a, 0x10);
    body = QColor::fromRgbF(float(body.redF() + (o.redF() - body.redF()) * a),
                            float(body.greenF() + (o.greenF() - body.greenF()) * a),
                            float(body.blueF() + (o.blueF() - body.blueF()) * a));
  }
  p->setBrush(body);
  if (muted && !isSelected()) p->setPen(QPen(border, 1.2, Qt::DashLine));
  p->drawRoundedRect(r, 6, 6);
  // Header band with the op name.
  QPainterPath header;
  header.addRoundedRect(QRectF(r.left(), r.top(), r.width(), kHeader + 6), 6, 6);
  QPainterPath cut;
  cut.addRect(QRectF(r.left(), r.top() + kHeader, r.width(), 6));
  p->setPen(Qt::NoPen);
  QColor band = error ? QColor(0xb0, 0x3a, 0x3a) : categoryColor(schema_ ? schema_->category : "");
  if (muted) band = QColor::fromHsv(band.hsvHue(), band.hsvSaturation() / 3, band.value() * 3 / 4);
  p->setBrush(band);
  p->drawPath(header.subtracted(cut));
  if (muted) {  // a padlock at the header's right end: shackle arc over a body
    const QPointF c(r.right() - 14, r.top() + kHeader / 2 + 2);
    p->setBrush(QColor(0xe6, 0xe6, 0xe6));
    p->drawRoundedRect(QRectF(c.x() - 5, c.y() - 2, 10, 8), 1.5, 1.5);
    p->setPen(QPen(QColor(0xe6, 0xe6, 0xe6), 1.6));
    p->setBrush(Qt::NoBrush);
    p->drawArc(QRectF(c.x() - 3.5, c.y() - 8, 7, 10), 0, 180 * 16);
    p->setPen(Qt::NoPen);
  }
  // Zoomed far out the text is unreadable: the box and its colours are enough.
  if (option->levelOfDetailFromTransform(p->worldTransform()) < kTextDetail) return;
  QFont font = p->font();
  font.setPointSizeF(9);
  font.setBold(true);
  p->setFont(font);
  p->setPen(Qt::white);
  double opWidth = r.width() - (muted ? 32 : 16);
  if (heat_ && !heat_->badge.isEmpty()) {  // the badge at the header's right end (left of a padlock)
    QFont small = font;
    small.setPointSizeF(7.5);
    const double w = QFontMetricsF(small).horizontalAdvance(heat_->badge) + 10;
    const QRectF badge(r.right() - (muted ? 28 : 6) - w, r.top() + 3, w, kHeader - 6);
    p->setPen(Qt::NoPen);
    const QColor fill = heatColor(heat_->heat);
    p->setBrush(fill);
    p->drawRoundedRect(badge, 4, 4);
    p->setFont(small);
    p->setPen(fill.lightnessF() > 0.55 ? QColor(0x20, 0x20, 0x20) : Qt::white);
    p->drawText(badge, Qt::AlignCenter, heat_->badge);
    p->setFont(font);
    p->setPen(Qt::white);
    opWidth -= w + 4;
  }
  p->drawText(QRectF(r.left() + 8, r.top(), opWidth, kHeader), Qt::AlignVCenter | Qt::AlignLeft,
              elideMiddle(toQString(node_.op), QFontMetricsF(font), opWidth));
  font.setBold(false);
  p->setFont(font);
  p->setPen(QColor(0xe6, 0xe6, 0xe6));
  p->drawText(QRectF(r.left() + 8, r.top() + kHeader + 2, r.width() - 16, 18), Qt::AlignVCenter | Qt::AlignLeft,
              elideMiddle(toQString(node_.name), QFontMetricsF(font), r.width() - 16));
  font.setPointSizeF(7.5);
  p->setFont(font);
  p->setPen(QColor(0xa8, 0xb0, 0xbc));
  p->drawText(QRectF(r.left() + 8, r.top() + kHeader + 20, r.width() - 16, 16),
              Qt::AlignVCenter | Qt::AlignLeft, error ? QObject::tr("⚠ %1").arg(problems_.first()) : badgeText());
  // Ports: inputs on the top edge, outputs on the bottom edge.
  p->setPen(QPen(QColor(0x20, 0x20, 0x20), 1));
  for (int output = 0; output < 2; ++output) {
    const int count = output ? outputs_ : inputs_;
    p->setBrush(output ? QColor(0xff, 0xd4, 0x79) : QColor(0x9e, 0xcb, 0xff));
    for (int i = 0; i < count; ++i)
      p->drawEllipse(portOffset(output != 0, i), kPortRadius, kPortRadius);
  }
  if (inputs_ > 1) {  // name counted ports: in0, in1 ...
    p->setPen(QColor(0xa8, 0xb0, 0xbc));
    for (int i = 0; i < inputs_; ++i) {
      const QPointF c = portOffset(false, i);
      p->drawText(QRectF(c.x() + 6, c.y() - 1, 30, 10), Qt::AlignLeft | Qt::AlignTop,
                  toQString(schema_->input_name(i)));
    }
  }
}

QVariant NodeItem::itemChange(GraphicsItemChange change, const QVariant& value) {
  if (change == ItemPositionHasChanged)
    for (EdgeItem* e : edges_) e->updatePath();
  return QGraphicsItem::itemChange(change, value);
}

// ---- EdgeItem ----
EdgeItem::EdgeItem(const graph::Edge& edge) : edge_(edge), label_(new QGraphicsSimpleTextItem(this)) {
  setFlags(ItemIsSelectable);
  setZValue(0);
  QFont font = label_->font();
  font.setPointSizeF(7.5);
  label_->setFont(font);
  label_->setBrush(QColor(0xb8, 0xc4, 0xd0));
}

void EdgeItem::setLabelVisible(bool visible) { label_->setVisible(visible); }

void EdgeItem::setLabel(const QString& text) {
  if (label_->text() == text) return;
  label_->setText(text);
  setToolTip(text);
  updatePath();
}

void EdgeItem::attach(NodeItem* from, NodeItem* to) {
  from_ = from;
  to_ = to;
  setPath(QPainterPath());  // other nodes may have moved into or out of its lane
  updatePath();
}

void EdgeItem::updatePath() {
  if (!from_ || !to_) return;
  const QPointF p1 = from_->outputPos(edge_.from.port);
  const QPointF p2 = to_->inputPos(edge_.to.port);
  if (p1 == p1_ && p2 == p2_ && !path().isEmpty()) return;
  p1_ = p1;
  p2_ = p2;
  QPainterPath path(p1);
  const std::optional<double> lane = laneBeside(p1, p2);
  if (lane) {
    // Out of the source port, down the lane beside the nodes in between, into the target.
    const double turn = kNodeHeight * 0.75;
    const QPointF a(*lane, p1.y() + turn), b(*lane, p2.y() - turn);
    path.cubicTo(p1 + QPointF(0, turn / 2), QPointF(*lane, p1.y() + turn / 2), a);
    path.lineTo(b);
    path.cubicTo(QPointF(*lane, p2.y() - turn / 2), p2 - QPointF(0, turn / 2), p2);
  } else {
    const double bend = std::max(40.0, std::abs(p2.y() - p1.y()) / 2);
    path.cubicTo(p1 + QPointF(0, bend), p2 - QPointF(0, bend), p2);
  }
  setPath(path);
  const QPointF mid = path.pointAtPercent(0.5);
  const QRectF text = label_->boundingRect();
  label_->setPos(mid.x() + 6, mid.y() - text.height() / 2);
}

std::optional<double> EdgeItem::laneBeside(QPointF p1, QPointF p2) const {
  if (!scene() || p2.y() - p1.y() < 2 * kNodeHeight) return std::nullopt;
  // The nodes in the band between the ports that a column from `x0` to `x1` would touch.
  auto blockers = [&](double x0, double x1) {
    QList<const NodeItem*> out;
    const QRectF band(QPointF(std::min(x0, x1) - 4, p1.y() + 8), QPointF(std::max(x0, x1) + 4, p2.y() - 8));
    for (QGraphicsItem* item : scene()->items(band, Qt::IntersectsItemBoundingRect))
      if (item->type() == NodeItem::Type && item != from_ && item != to_) out << static_cast<const NodeItem*>(item);
    return out;
  };
  QList<const NodeItem*> hit = blockers(p1.x(), p2.x());
  if (hit.isEmpty()) return std::nullopt;
  // Step right past whatever is in the way (a few times: a lane may meet a neighbour).
  double lane = std::max(p1.x(), p2.x());
  for (int tries = 0; tries < 8 && !hit.isEmpty(); ++tries) {
    for (const NodeItem* n : hit) lane = std::max(lane, n->sceneBoundingRect().right() + 18);
    hit = blockers(lane, lane);
  }
  return lane;
}

QPainterPath EdgeItem::shape() const {
  QPainterPathStroker stroker;
  stroker.setWidth(10);
  return stroker.createStroke(path());
}

void EdgeItem::paint(QPainter* p, const QStyleOptionGraphicsItem*, QWidget*) {
  p->setRenderHint(QPainter::Antialiasing);
  p->setPen(QPen(isSelected() ? QColor(0x4f, 0xa3, 0xff) : QColor(0x9a, 0xa4, 0xb0), isSelected() ? 2.5 : 1.6));
  p->setBrush(Qt::NoBrush);
  p->drawPath(path());
}

}  // namespace kiln::studio
