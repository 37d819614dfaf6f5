// LivePlots: the training curves of one run, drawn with QCustomPlot.
//   - loss per optimizer step, raw and smoothed (exponential moving average with
//     TensorBoard's debiasing: s_t = a s_{t-1} + (1 - a) x_t, shown as s_t / (1 - a^t));
//   - train / validation loss (left axis) and accuracy in % (right axis) per epoch;
//   - learning rate per step.
// Points are appended as they arrive; the widget replots with rpQueuedReplot at most
// kMaxReplotsPerSecond times a second, so any rate of additions keeps the UI responsive.
// Every plot zooms and pans with the mouse (wheel, drag); double-click rescales to fit.
// The step curves are drawn from min/max levels of detail (decimated_series.h), so a
// replot of 1,000,000 steps draws a few thousand points (bench_plot).
#pragma once
#include <QElapsedTimer>
#include <QTimer>
#include <QWidget>

#include "widgets/training/decimated_series.h"

class QCustomPlot;
class QCPGraph;
class QCPRange;

namespace kiln::studio {

class LivePlots : public QWidget {
  Q_OBJECT
 public:
  static constexpr int kMaxReplotsPerSecond = 30;
  explicit LivePlots(QWidget* parent = nullptr);

  void clear();
  // step: global optimizer step (1-based, increasing); loss: the batch's mean loss; lr: per step.
  void addStep(double step, double loss, double lr);
  void addSteps(const QVector<double>& steps, const QVector<double>& losses, const QVector<double>& lrs);
  // epoch: 1-based; accuracies are fractions in [0, 1]; NaN values (no validation set) are skipped.
  void addEpoch(int epoch, double trainLoss, double trainAccuracy, double valLoss, double valAccuracy);
  // Smoothing factor a in [0, 1) of the EMA (TensorBoard's default 0.6 is mild; 0.9 here).
  void setSmoothing(double a);

  int stepCount() const;    // points of the raw loss curve
  int epochCount() const;   // points of the train loss per epoch
  int replotCount() const { return replots_; }  // replots requested so far (for tests)
  QCustomPlot* stepPlot() const { return stepPlot_; }
  QCustomPlot* epochPlot() const { return epochPlot_; }
  QCustomPlot* lrPlot() const { return lrPlot_; }
  void fitToData();  // rescale every plot to its data again (queued replot)
  void replotNow();  // immediate replot of every plot with rescaled axes (bench, screenshots)
  // The value-axis range that shows `values` (min..max of a series) with every point strictly
  // inside: fromZero (lr, epoch loss, values >= 0) gives [0, max * 1.1]; otherwise 5% of the
  // span on each side. A constant series gets 10% of its value (0.5 when it is 0).
  static QCPRange paddedRange(const QCPRange& values, bool fromZero);

 private:
  void scheduleReplot();
  void doReplot();
  QCustomPlot* makePlot(const QString& title, const QString& xLabel, const QString& yLabel);
  void chooseDetail();  // the level of detail of each step curve for the current view

  QCustomPlot *stepPlot_, *epochPlot_, *lrPlot_;
  QCPGraph *rawLoss_, *smoothLoss_, *trainLoss_, *valLoss_, *trainAcc_, *valAcc_, *lr_;
  DecimatedSeries rawData_, smoothData_, lrData_;
  double smoothing_ = 0.9, ema_ = 0;
  int64_t emaCount_ = 0;
  bool follow_ = true;  // rescale to the data until the user zooms or pans
  int replots_ = 0;
  QTimer replotTimer_;
  QElapsedTimer sinceReplot_;
};

}  // namespace kiln::studio
