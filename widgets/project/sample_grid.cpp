#include "widgets/project/sample_grid.h"

#include <QFontMetrics>
#include <QMouseEvent>
#include <QPainter>
#include <algorithm>

namespace kiln::studio {

SampleGrid::SampleGrid(QWidget* parent) : QWidget(parent) {
  QSizePolicy policy(QSizePolicy::Preferred, QSizePolicy::Preferred);
  policy.setHeightForWidth(true);
  setSizePolicy(policy);
}

void SampleGrid::setSamples(std::vector<QImage> images, QStringList labels) {
  images_ = std::move(images);
  labels_ = std::move(labels);
  selected_ = -1;
  updateGeometry();
  update();
}

QSize SampleGrid::cellSize() const {
  const QFontMetrics fm(font());
  const int w = std::max(28 * kScale, fm.horizontalAdvance("T-shirt/top")) + 8;
  return {w, 28 * kScale + fm.height() + 8};
}

int SampleGrid::columns() const { return std::max(1, width() / cellSize().width()); }

QSize SampleGrid::sizeHint() const { return {cellSize().width() * 8, heightForWidth(cellSize().width() * 8)}; }

int SampleGrid::heightForWidth(int width) const {
  const int cols = std::max(1, width / cellSize().width());
  const int rows = (count() + cols - 1) / cols;
  return std::max(1, rows) * cellSize().height();
}

void SampleGrid::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const QSize cell = cellSize();
  const int cols = columns();
  const int side = 28 * kScale;
  for (int i = 0; i < count(); ++i) {
    const QRect r((i % cols) * cell.width(), (i / cols) * cell.height(), cell.width(), cell.height());
    const QRect img((r.width() - side) / 2 + r.x(), r.y() + 4, side, side);
    p.drawImage(img, images_[static_cast<size_t>(i)]);  // scaled by drawImage, no smoothing
    if (i == selected_) {
      p.setPen(QPen(palette().color(QPalette::Highlight), 2));
      p.drawRect(img.adjusted(-2, -2, 1, 1));
      p.setPen(palette().color(QPalette::WindowText));
    }
    p.drawText(QRect(r.x(), img.bottom() + 2, r.width(), r.bottom() - img.bottom() - 2),
               Qt::AlignHCenter | Qt::AlignTop, labels_.value(i));
  }
}

}  // namespace kiln::studio

namespace kiln::studio {

int SampleGrid::indexAt(const QPoint& pos) const {
  const QSize cell = cellSize();
  if (pos.x() < 0 || pos.y() < 0) return -1;
  const int col = pos.x() / cell.width(), row = pos.y() / cell.height();
  if (col >= columns()) return -1;
  const int i = row * columns() + col;
  return i < count() ? i : -1;
}

void SampleGrid::setSelected(int i) {
  selected_ = i >= 0 && i < count() ? i : -1;
  update();
}

void SampleGrid::mousePressEvent(QMouseEvent* event) {
  const int i = indexAt(event->position().toPoint());
  if (i >= 0 && event->button() == Qt::LeftButton) emit sampleClicked(i);
  QWidget::mousePressEvent(event);
}

}  // namespace kiln::studio
