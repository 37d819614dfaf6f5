// LivePlots: the training curves of one run, drawn with QCustomPlot.
//   - loss per optimizer step, raw (faint) and smoothed (smooth(): TensorBoard's debiased
//     exponential moving average, weight set with the Smoothing slider, 0 to 0.999);
//   - train / validation loss (left axis) and accuracy in % (right axis) per epoch;
//   - learning rate per step.
// The step curves' x axis is the step, the wall time since the run started (StepMetric's
// time_s) or the epoch (step / steps per epoch, so that epoch e ends at x = e as on the
// epoch plot), as TensorBoard's "Horizontal axis: Step / Relative / Wall". The legends
// stand above the plots, never over the data, and can be hidden.
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

class QCheckBox;
class QComboBox;
class QCustomPlot;
class QCPGraph;
class QCPRange;
class QLabel;
class QSlider;

namespace kiln::studio {

class LivePlots : public QWidget {
  Q_OBJECT
 public:
  static constexpr int kMaxReplotsPerSecond = 30;
  explicit LivePlots(QWidget* parent = nullptr);

  enum class XAxis { Step, WallTime, Epoch };
  static constexpr int kSmoothingSteps = 1000;  // the slider's resolution: weights 0, 0.001, ..., 0.999

  void clear();
  // step: global optimizer step (1-based, increasing); loss: the batch's mean loss; lr: per step.
  void addStep(double step, double loss, double lr);
  // times: seconds since the run started (StepMetric::time_s), epochs: the 1-based epoch of
  // each step; either may be empty (unknown: NaN), then the wall-time or the epoch axis has
  // no points for these steps. The shortest of steps, losses and lrs sets the count.
  void addSteps(const QVector<double>& steps, const QVector<double>& losses, const QVector<double>& lrs,
                const QVector<double>& times = {}, const QVector<double>& epochs = {});
  // epoch: 1-based; accuracies are fractions in [0, 1]; NaN values (no validation set) are skipped.
  void addEpoch(int epoch, double trainLoss, double trainAccuracy, double valLoss, double valAccuracy);
  // Smoothing weight w, clamped to [0, 0.999] (TensorBoard's slider range; its default is 0.6,
  // 0.9 here); re-smooths the whole curve and moves the slider.
  void setSmoothing(double w);
  double smoothing() const { return smoothing_; }
  // TensorBoard's scalar smoothing (tensorboard/components/vz_line_chart2/line-chart.ts,
  // resmoothDataset): last = last * w + (1 - w) * x over the finite values, each shown as
  // last / (1 - w^n) with n the finite values so far (debiased: the curve starts at the first
  // value instead of 0); a non-finite value is kept as it is and not accumulated.
  static QVector<double> smooth(const QVector<double>& values, double w);
  void setXAxis(XAxis);
  XAxis xAxis() const { return xAxis_; }
  // Shows or hides the legends of the step and epoch plots (also the Legend check box).
  void setLegendVisible(bool);
  bool legendVisible() const { return legendVisible_; }
  QSlider* smoothingSlider() const { return smoothingSlider_; }
  QComboBox* xAxisBox() const { return xAxisBox_; }

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
  QWidget* makeControls();
  double key(qsizetype i) const;  // x of step i on the chosen axis (NaN: not shown)
  void appendToSeries(qsizetype from);  // steps [from, end) into the curves, smoothing as it goes
  void rebuildSeries();                 // every curve again (new smoothing, axis or epoch length)
  void updateAxisChoices();

  QCustomPlot *stepPlot_, *epochPlot_, *lrPlot_;
  QCPGraph *rawLoss_, *smoothLoss_, *trainLoss_, *valLoss_, *trainAcc_, *valAcc_, *lr_;
  QSlider* smoothingSlider_;
  QLabel* smoothingLabel_;
  QComboBox* xAxisBox_;
  QCheckBox* legendBox_;
  DecimatedSeries rawData_, smoothData_, lrData_;
  QVector<double> steps_, losses_, lrs_, times_, epochs_;  // every step as added
  double stepsPerEpoch_ = 0;  // the last step of epoch 1 once epoch 2 began, else the largest so far
  XAxis xAxis_ = XAxis::Step;
  bool legendVisible_ = true;
  double smoothing_ = 0.9, ema_ = 0;
  int64_t emaCount_ = 0;
  bool follow_ = true;  // rescale to the data until the user zooms or pans
  int replots_ = 0;
  QTimer replotTimer_;
  QElapsedTimer sinceReplot_;
};

}  // namespace kiln::studio
