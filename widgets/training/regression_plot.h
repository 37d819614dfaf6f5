// RegressionPlot: the evaluation of a regression run: each test row's predicted value against
// its actual value as a scatter (QCustomPlot), with the diagonal predicted = actual that a
// perfect model's points lie on, and the MAE, RMSE and R² of the points
// (engine/train/regression_metrics.h).
#pragma once
#include <QVector>
#include <QWidget>

#include "engine/train/regression_metrics.h"

class QCustomPlot;

namespace kiln::studio {

class RegressionPlot : public QWidget {
  Q_OBJECT
 public:
  explicit RegressionPlot(QWidget* parent = nullptr);
  // Plots the points (same length, at least one; else clears) of the label column `target`.
  void setPoints(const QVector<double>& actual, const QVector<double>& predicted, const QString& target);
  void clear();
  QCustomPlot* plot() const { return plot_; }
  int pointCount() const;                       // the scatter's points
  const train::RegressionMetrics& metrics() const { return metrics_; }  // of the points shown

 private:
  QCustomPlot* plot_ = nullptr;
  train::RegressionMetrics metrics_;
};

}  // namespace kiln::studio
