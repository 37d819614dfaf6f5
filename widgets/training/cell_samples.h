// CellSamples: the test samples of one confusion-matrix cell (true class t predicted as
// p), as the EvaluationView lists them when a cell is clicked: test-split index, true and
// predicted class and the softmax probability of the prediction, sorted by probability,
// highest first (ties: lower index first), each with its image when the test images can
// be read (Fashion-MNIST's test split in EvaluationResult::imageDir). An evaluation stored
// before the predictions were (projects schema < 4) lists the cell's stored misclassified
// images instead and says so.
#pragma once
#include <QImage>
#include <QString>
#include <QWidget>
#include <cstdint>

class QLabel;
class QTableWidget;

namespace kiln::studio {

struct EvaluationResult;

// Test image `index` (grey, 28 x 28) of the Fashion-MNIST test split in `dir`; a null image
// when the files cannot be read or the index is out of range. The split is read once per
// directory and kept (8 MB).
QImage fashion_mnist_test_image(const QString& dir, int64_t index);

class CellSamples : public QWidget {
  Q_OBJECT
 public:
  static constexpr int kThumbnail = 28;  // icon size of the image column, pixels
  explicit CellSamples(QWidget* parent = nullptr);
  // Lists the samples of cell (truth, predicted) of `r`; out-of-range classes list nothing.
  void showCell(const EvaluationResult& r, int truth, int predicted);
  void clear();
  QTableWidget* table() const { return table_; }  // columns: index, true, predicted, probability (, text)
  QString message() const;                         // the line above the table

 private:
  QLabel* message_;
  QTableWidget* table_;
};

}  // namespace kiln::studio
