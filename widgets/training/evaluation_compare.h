// EvaluationCompare: two runs' test evaluations side by side (Runs view > "Compare
// evaluations"): a summary of both accuracies and their difference, a table of the per-class
// precision, recall and F1 of each run (classification_report.h, scikit-learn's
// definitions) with the difference B - A, and both EvaluationViews (confusion matrix, cell
// samples) next to each other. A is the older run, B the newer. Regression runs: each run's MAE,
// RMSE and R² (engine/train/regression_metrics.h) and their differences, no per-class table.
#pragma once
#include <QWidget>

#include "widgets/training/evaluation_view.h"

class QLabel;
class QTableWidget;

namespace kiln::studio {

class EvaluationCompare : public QWidget {
  Q_OBJECT
 public:
  // Columns of deltaTable(): per metric the value of A, of B and B - A.
  enum Column { PrecisionA, PrecisionB, PrecisionDelta, RecallA, RecallB, RecallDelta, F1A, F1B, F1Delta, kColumns };
  static constexpr double kShownChange = 0.005;  // |B - A| under this is drawn neutral (rounds to 0.00)

  explicit EvaluationCompare(QWidget* parent = nullptr);
  // Shows run A (`nameA`) and run B. When their classes differ (another class filter) the
  // views are shown but the delta table is empty and the summary says why. Two regression runs:
  // the summary gives both runs' MAE, RMSE and R² and B − A; the delta table is empty and hidden.
  void setRuns(const QString& nameA, const EvaluationResult& a, const QString& nameB, const EvaluationResult& b);

  QString summaryText() const;
  // Rows: the classes, then "macro avg" and "weighted avg"; cells hold the number as
  // Qt::UserRole (double).
  QTableWidget* deltaTable() const { return deltas_; }
  EvaluationView* viewA() const { return a_; }
  EvaluationView* viewB() const { return b_; }

 private:
  QLabel* summary_;
  QTableWidget* deltas_;
  EvaluationView *a_, *b_;
};

}  // namespace kiln::studio
