// SampleGrid: the Dataset panel's grid of sample images with their class names.
#pragma once
#include <QImage>
#include <QStringList>
#include <QWidget>
#include <vector>

namespace kiln::studio {

// Paints sample images (scaled by an integer factor, nearest neighbour) in a grid,
// each with its class name underneath; a click on one emits sampleClicked with its index, and
// the selected one (setSelected) is framed in the palette's highlight colour.
class SampleGrid : public QWidget {
  Q_OBJECT
 public:
  static constexpr int kScale = 2;  // 28 px -> 56 px
  explicit SampleGrid(QWidget* parent = nullptr);
  void setSamples(std::vector<QImage> images, QStringList labels);
  int count() const { return static_cast<int>(images_.size()); }
  const QImage& image(int i) const { return images_.at(static_cast<size_t>(i)); }
  QString label(int i) const { return labels_.at(i); }
  int columns() const;
  QSize sizeHint() const override;
  bool hasHeightForWidth() const override { return true; }
  int heightForWidth(int width) const override;
  int indexAt(const QPoint& pos) const;  // the sample under pos, -1 for none
  void setSelected(int i);               // -1: none
  int selected() const { return selected_; }

 signals:
  void sampleClicked(int index);

 protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(QMouseEvent* event) override;

 private:
  QSize cellSize() const;
  std::vector<QImage> images_;
  QStringList labels_;
  int selected_ = -1;
};

}  // namespace kiln::studio
