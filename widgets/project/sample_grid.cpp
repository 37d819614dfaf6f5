#include "widgets/project/sample_grid.h"

#include <QFontMetrics>
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
    p.drawText(QRect(r.x(), img.bottom() + 2, r.width(), r.bottom() - img.bottom() - 2),
               Qt::AlignHCenter | Qt::AlignTop, labels_.value(i));
  }
}

}  // namespace kiln::studio
