// EvaluationView: how a trained model does on the test images — accuracy, the
// confusion matrix as a heat map (rows: true label, columns: predicted label; shown as
// counts or normalized by row = recall or by column = precision, sklearn's
// confusion_matrix `normalize`), the per-class precision, recall, F1 and support with
// their macro and weighted averages (classification_report.h), the samples of a clicked
// cell (cell_samples.h) and a grid of misclassified images with both labels; for a
// regression run the predicted-vs-actual scatter with MAE, RMSE and R² (regression_plot.h).
#pragma once
#include <QImage>
#include <QStringList>
#include <QVector>
#include <QWidget>
#include <cstdint>
#include <vector>

#include "widgets/training/classification_report.h"

class QSplitter;
class QComboBox;
class QLabel;
class QListWidget;
class QTabWidget;
class QTableWidget;

namespace kiln::studio {

class CellSamples;
class RegressionPlot;

struct EvaluationResult {
  int64_t count = 0;      // images evaluated
  double loss = 0;        // mean loss per image
  double accuracy = 0;    // top-1, fraction in [0, 1]
  QStringList classNames; // by label; size C
  std::vector<int64_t> confusion;  // [true * C + predicted] image counts, size C * C
  struct Sample {
    QImage image;  // the input image (grey, 28 x 28 for Fashion-MNIST)
    int truth = 0, predicted = 0;
    int64_t index = -1;  // in the test split (-1: unknown)
  };
  QVector<Sample> misclassified;  // the first few, in test-set order
  // Every evaluated sample in test-split order (projects::Evaluation::predictions); empty
  // for evaluations stored before predictions were (then a clicked cell lists only the
  // stored misclassified samples).
  struct Prediction {
    int64_t index = 0;        // in the test split
    int truth = 0, predicted = 0;
    float probability = 0;    // softmax probability of `predicted` in [0, 1]; NaN: unknown
  };
  QVector<Prediction> predictions;
  QString imageDir;  // Fashion-MNIST directory to show the test images from ("": no images)
  QStringList imageFiles;  // or the image file of each test sample, by index (an image-folder dataset)
  // A text dataset's test samples, by index (else empty): where each is from (file or FILE:LINE),
  // its text on one line (shortened) and the tokens the model saw. Misclassified texts are
  // listed with them instead of images.
  QStringList texts, textOrigins, textTokens;
  // A regression run (projects::Evaluation::regression; else empty): the label column's name
  // and each test row's actual and predicted value. The view then shows the predicted-vs-actual
  // scatter with MAE, RMSE and R² instead of the confusion matrix (classNames is empty).
  QString target;
  QVector<double> actual, predicted;
  bool isRegression() const { return !actual.isEmpty(); }
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
  // Rows: the classes, then "macro avg" and "weighted avg"; columns: precision, recall,
  // F1-score, support (scikit-learn's classification_report layout).
  QTableWidget* reportTable() const { return report_; }
  CellSamples* cellSamples() const { return cellSamples_; }
  RegressionPlot* regressionPlot() const { return regression_; }  // shown for a regression result
  QComboBox* normalizationBox() const { return normalization_; }
  QLabel* trueAxisTitle() const { return trueTitle_; }
  QLabel* predictedAxisTitle() const { return predictedTitle_; }
  void setNormalization(Normalization);
  Normalization normalization() const;
  // Lists cell (truth, predicted)'s samples and shows them (what clicking the cell does),
  // showing the details again when they were hidden.
  void showCell(int truth, int predicted);
  // The tabs beside the matrix (per class, cell samples, misclassified): hidden, the matrix
  // takes the whole width (EvaluationCompare, whose table has the per-class figures);
  // the splitter handle or a clicked cell brings them back.
  void setDetailsShown(bool shown);
  bool detailsShown() const;

 private:
  void fillConfusion();
  void fillReport();

  EvaluationResult result_;
  QLabel *summary_, *trueTitle_, *predictedTitle_;
  QComboBox* normalization_;
  QLabel* showLabel_;
  RegressionPlot* regression_;
  QTableWidget *confusion_, *report_;
  QTabWidget* tabs_;
  QSplitter* split_;
  CellSamples* cellSamples_;
  QListWidget* misclassified_;
};

}  // namespace kiln::studio
