// EvaluationView: how a trained model does on the test images — accuracy, the
// confusion matrix as a heat map (rows: true class, columns: predicted; cell colour
// is the row's fraction), and a grid of misclassified images with both labels.
#pragma once
#include <QImage>
#include <QStringList>
#include <QVector>
#include <QWidget>
#include <cstdint>
#include <vector>

class QLabel;
class QListWidget;
class QTableWidget;

namespace kiln::studio {

struct EvaluationResult {
  int64_t count = 0;      // images evaluated
  double loss = 0;        // mean loss per image
  double accuracy = 0;    // top-1, fraction in [0, 1]
  QStringList classNames; // by label; size C
  std::vector<int64_t> confusion;  // [true * C + predicted] image counts, size C * C
  struct Sample {
    QImage image;  // the input image (grey, 28 x 28 for Fashion-MNIST)
    int truth = 0, predicted = 0;
  };
  QVector<Sample> misclassified;  // the first few, in test-set order
};

class EvaluationView : public QWidget {
  Q_OBJECT
 public:
  explicit EvaluationView(QWidget* parent = nullptr);
  // Throws nothing; a result whose confusion size is not C * C shows an error line instead.
  void setResult(const EvaluationResult&);
  void clear();
  QString summaryText() const;
  QTableWidget* confusionTable() const { return confusion_; }
  QListWidget* misclassifiedList() const { return misclassified_; }

 private:
  QLabel* summary_;
  QTableWidget* confusion_;
  QListWidget* misclassified_;
};

}  // namespace kiln::studio
