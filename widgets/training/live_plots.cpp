#include "widgets/training/live_plots.h"

#include <qcustomplot.h>

#include <QGridLayout>

#include "widgets/training/plot_ticks.h"
#include <algorithm>
#include <cmath>

namespace kiln::studio {

namespace {
const QColor kRaw(150, 180, 225, 110), kSmooth(40, 110, 220), kTrain(40, 110, 220), kVal(230, 120, 30),
    kLr(60, 160, 90);

QPen pen(const QColor& c, double width = 1.6, Qt::PenStyle style = Qt::SolidLine) {
  QPen p(c, width, style);
  return p;
}
}  // namespace

LivePlots::LivePlots(QWidget* parent) : QWidget(parent) {
  // Side by side: the dock usually sits below the canvas, wide and low.
  auto* layout = new QGridLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->setSpacing(4);
  stepPlot_ = makePlot(tr("Training loss per step"), tr("step"), tr("loss"));
  epochPlot_ = makePlot(tr("Loss and accuracy per epoch"), tr("epoch"), tr("loss"));
  lrPlot_ = makePlot(tr("Learning rate"), tr("step"), tr("lr"));
  layout->addWidget(makeControls(), 0, 0, 1, 3);
  layout->addWidget(stepPlot_, 1, 0);
  layout->addWidget(epochPlot_, 1, 1);
  layout->addWidget(lrPlot_, 1, 2);
  layout->setRowStretch(1, 1);
  layout->setColumnStretch(0, 5);
  layout->setColumnStretch(1, 4);
  layout->setColumnStretch(2, 3);
  QSharedPointer<QCPAxisTickerFixed> epochTicks(new QCPAxisTickerFixed);
  epochTicks->setTickStep(1);
  epochTicks->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);  // whole epochs
  epochPlot_->xAxis->setTicker(epochTicks);
  lrPlot_->yAxis->setNumberFormat("g");

  rawLoss_ = stepPlot_->addGraph();
  rawLoss_->setName(tr("loss (raw)"));
  rawLoss_->setPen(pen(kRaw, 1));
  rawLoss_->setAdaptiveSampling(true);
  // A noisy curve of many points becomes one vertical stroke per pixel column: drawn
  // opaque and without antialiasing it costs a few ms even at 1,000,000 points.
  rawLoss_->setAntialiased(false);
  smoothLoss_ = stepPlot_->addGraph();
  smoothLoss_->setName(tr("loss (smoothed)"));
  smoothLoss_->setPen(pen(kSmooth, 2));
  smoothLoss_->setAdaptiveSampling(true);

  epochPlot_->yAxis2->setVisible(true);
  epochPlot_->yAxis2->setLabel(tr("accuracy (%)"));
  epochPlot_->yAxis2->setRange(0, 100);
  auto addEpochGraph = [&](const QString& name, const QColor& c, Qt::PenStyle style, QCPAxis* y) {
    QCPGraph* g = epochPlot_->addGraph(epochPlot_->xAxis, y);
    g->setName(name);
    g->setPen(pen(c, 2, style));
    g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 5));
    return g;
  };
  trainLoss_ = addEpochGraph(tr("train loss"), kTrain, Qt::SolidLine, epochPlot_->yAxis);
  valLoss_ = addEpochGraph(tr("validation loss"), kVal, Qt::SolidLine, epochPlot_->yAxis);
  trainAcc_ = addEpochGraph(tr("train accuracy"), kTrain, Qt::DashLine, epochPlot_->yAxis2);
  valAcc_ = addEpochGraph(tr("validation accuracy"), kVal, Qt::DashLine, epochPlot_->yAxis2);

  lr_ = lrPlot_->addGraph();
  lr_->setName(tr("learning rate"));
  lr_->setPen(pen(kLr, 2));
  lr_->setAdaptiveSampling(true);
  lrPlot_->legend->setVisible(false);
  lrPlot_->plotLayout()->take(lrPlot_->legend);  // one curve: its title says it
  lrPlot_->plotLayout()->simplify();

  for (QCustomPlot* p : {stepPlot_, epochPlot_, lrPlot_}) {
    // The user zooming or panning stops the automatic rescale; double-click resumes it.
    connect(p, &QCustomPlot::mousePress, this, [this] { follow_ = false; });
    connect(p, &QCustomPlot::mouseWheel, this, [this] { follow_ = false; });
    connect(p, &QCustomPlot::mouseDoubleClick, this, [this] {
      follow_ = true;
      doReplot();
    });
  }
  rawLoss_->setData(rawData_.raw());
  smoothLoss_->setData(smoothData_.raw());
  lr_->setData(lrData_.raw());
  for (QCustomPlot* p : {stepPlot_, lrPlot_})
    connect(p->xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, [this] { chooseDetail(); });
  replotTimer_.setSingleShot(true);
  connect(&replotTimer_, &QTimer::timeout, this, &LivePlots::doReplot);
  sinceReplot_.start();
}

QCustomPlot* LivePlots::makePlot(const QString& title, const QString& xLabel, const QString& yLabel) {
  auto* p = new QCustomPlot(this);
  p->setMinimumHeight(150);
  p->setMinimumWidth(220);
  for (QCPAxis* axis : {p->xAxis, p->yAxis, p->yAxis2}) axis->ticker()->setTickCount(4);
  fitTickCountToHeight(p);
  p->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  p->setNoAntialiasingOnDrag(true);
  p->setPlottingHints(QCP::phFastPolylines | QCP::phCacheLabels);
  p->plotLayout()->insertRow(0);
  auto* t = new QCPTextElement(p, title, QFont(font().family(), font().pointSize(), QFont::Bold));
  p->plotLayout()->addElement(0, 0, t);
  p->xAxis->setLabel(xLabel);
  p->yAxis->setLabel(yLabel);
  // The legend in a row of its own between the title and the axes: at any size it never
  // covers a curve (inside the axis rect it hid the newest steps at 1280 x 720).
  p->legend->setVisible(true);
  p->legend->setFont(QFont(font().family(), std::max(7, font().pointSize() - 1)));
  p->legend->setBrush(Qt::NoBrush);
  p->legend->setBorderPen(Qt::NoPen);
  p->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  p->legend->setWrap(2);
  p->legend->setMargins(QMargins(2, 0, 2, 0));
  p->axisRect()->insetLayout()->take(p->legend);
  p->plotLayout()->insertRow(1);
  p->plotLayout()->addElement(1, 0, p->legend);
  p->plotLayout()->setRowStretchFactor(1, 0.001);
  p->setToolTip(tr("Wheel: zoom · drag: pan · double-click: fit to the data"));
  return p;
}

void LivePlots::clear() {
  for (DecimatedSeries* d : {&rawData_, &smoothData_, &lrData_}) d->clear();
  for (QCPGraph* g : {trainLoss_, valLoss_, trainAcc_, valAcc_}) g->data()->clear();
  rawLoss_->setData(rawData_.raw());
  smoothLoss_->setData(smoothData_.raw());
  lr_->setData(lrData_.raw());
  for (QVector<double>* v : {&steps_, &losses_, &lrs_, &times_, &epochs_}) v->clear();
  stepsPerEpoch_ = 0;
  ema_ = 0;
  emaCount_ = 0;
  follow_ = true;
  updateAxisChoices();
  doReplot();
}

void LivePlots::addStep(double step, double loss, double lr) {
  addSteps({step}, {loss}, {lr});
}

void LivePlots::addSteps(const QVector<double>& steps, const QVector<double>& losses, const QVector<double>& lrs,
                         const QVector<double>& times, const QVector<double>& epochs) {
  const qsizetype n = std::min({steps.size(), losses.size(), lrs.size()});
  if (n == 0) return;
  const qsizetype from = steps_.size();
  const double oldStepsPerEpoch = stepsPerEpoch_;
  for (qsizetype i = 0; i < n; ++i) {
    steps_ << steps[i];
    losses_ << losses[i];
    lrs_ << lrs[i];
    times_ << (i < times.size() ? times[i] : NAN);
    const double epoch = i < epochs.size() ? epochs[i] : NAN;
    epochs_ << epoch;
    // Epoch 1 ends at its last step; until epoch 2 begins, that is the largest step so far.
    if (epoch == 1) stepsPerEpoch_ = std::max(stepsPerEpoch_, steps[i]);
  }
  if (xAxis_ == XAxis::Epoch && stepsPerEpoch_ != oldStepsPerEpoch) {
    rebuildSeries();  // the epoch positions of the earlier steps moved
  } else {
    appendToSeries(from);
    scheduleReplot();
  }
  updateAxisChoices();
}

double LivePlots::key(qsizetype i) const {
  switch (xAxis_) {
    case XAxis::Step: return steps_[i];
    case XAxis::WallTime: return times_[i];
    case XAxis::Epoch: return stepsPerEpoch_ > 0 && std::isfinite(epochs_[i]) ? steps_[i] / stepsPerEpoch_ : NAN;
  }
  return NAN;
}

void LivePlots::appendToSeries(qsizetype from) {
  QVector<double> keys, raw, smooth, lr;
  const qsizetype n = steps_.size() - from;
  keys.reserve(n), raw.reserve(n), smooth.reserve(n), lr.reserve(n);
  for (qsizetype i = from; i < steps_.size(); ++i) {
    // The same smoothing as smooth(), continued from the points already drawn.
    double s = losses_[i];
    if (std::isfinite(s)) {
      ema_ = ema_ * smoothing_ + (1 - smoothing_) * s;
      ++emaCount_;
      s = ema_ / (1 - std::pow(smoothing_, static_cast<double>(emaCount_)));
    }
    const double k = key(i);
    if (!std::isfinite(k)) continue;
    keys << k, raw << losses_[i], smooth << s, lr << lrs_[i];
  }
  rawData_.append(keys.constData(), raw.constData(), keys.size());
  smoothData_.append(keys.constData(), smooth.constData(), keys.size());
  lrData_.append(keys.constData(), lr.constData(), keys.size());
}

void LivePlots::rebuildSeries() {
  for (DecimatedSeries* d : {&rawData_, &smoothData_, &lrData_}) d->clear();
  ema_ = 0;
  emaCount_ = 0;
  appendToSeries(0);
  rawLoss_->setData(rawData_.raw());
  smoothLoss_->setData(smoothData_.raw());
  lr_->setData(lrData_.raw());
  scheduleReplot();
}

void LivePlots::addEpoch(int epoch, double trainLoss, double trainAccuracy, double valLoss, double valAccuracy) {
  auto add = [epoch](QCPGraph* g, double v) {
    if (std::isfinite(v)) g->addData(epoch, v);
  };
  add(trainLoss_, trainLoss);
  add(valLoss_, valLoss);
  add(trainAcc_, 100 * trainAccuracy);
  add(valAcc_, 100 * valAccuracy);
  scheduleReplot();
}

int LivePlots::stepCount() const { return static_cast<int>(rawData_.size()); }

void LivePlots::chooseDetail() {
  auto pick = [](QCPGraph* g, const DecimatedSeries& d) {
    const QCPRange r = g->keyAxis()->range();
    auto data = d.forView(r.lower, r.upper, g->keyAxis()->axisRect()->width());
    if (g->data() != data) g->setData(data);
  };
  pick(rawLoss_, rawData_);
  pick(smoothLoss_, smoothData_);
  pick(lr_, lrData_);
}
int LivePlots::epochCount() const { return trainLoss_->dataCount(); }

void LivePlots::scheduleReplot() {
  if (replotTimer_.isActive()) return;  // one replot is already due: coalesce
  const int interval = 1000 / kMaxReplotsPerSecond;
  const int wait = std::max<qint64>(0, interval - sinceReplot_.elapsed());
  replotTimer_.start(wait);
}

QCPRange LivePlots::paddedRange(const QCPRange& values, bool fromZero) {
  // Every value strictly inside the axis, also a constant series (lr 0.001 -> [0, 0.0011]).
  const double top = std::max(std::abs(values.lower), std::abs(values.upper));
  if (fromZero && values.lower >= 0) return QCPRange(0, top > 0 ? values.upper * 1.1 : 1.0);
  const double pad = values.size() > 0 ? values.size() * 0.05 : (top > 0 ? top * 0.1 : 0.5);
  return QCPRange(values.lower - pad, values.upper + pad);
}

void LivePlots::doReplot() {
  if (follow_) {
    // Rescale to the raw data (the levels of detail hold the same extremes).
    for (auto [g, d] : {std::pair{rawLoss_, &rawData_}, std::pair{lr_, &lrData_}}) {
      bool found = false;
      const QCPRange keys = d->raw()->keyRange(found);
      if (!found) continue;
      g->keyAxis()->setRange(keys.size() > 0 ? keys : QCPRange(keys.lower - 0.5, keys.upper + 0.5));
      const QCPRange values = d->raw()->valueRange(found);
      if (found) g->valueAxis()->setRange(paddedRange(values, /*fromZero=*/g == lr_));
    }
    if (!trainLoss_->data()->isEmpty()) {
      bool found = false;
      QCPRange keys = trainLoss_->data()->keyRange(found);
      epochPlot_->xAxis->setRange(std::min(keys.lower, 1.0) - 0.2, std::max(keys.upper, 2.0) + 0.2);
      trainLoss_->rescaleValueAxis(false, true);
      valLoss_->rescaleValueAxis(true, true);
      QCPRange y = epochPlot_->yAxis->range();
      epochPlot_->yAxis->setRange(paddedRange(QCPRange(0, y.upper), /*fromZero=*/true));
    }
    epochPlot_->yAxis2->setRange(0, 100);
  }
  chooseDetail();
  for (QCustomPlot* p : {stepPlot_, epochPlot_, lrPlot_}) p->replot(QCustomPlot::rpQueuedReplot);
  ++replots_;
  sinceReplot_.restart();
}

void LivePlots::fitToData() {
  follow_ = true;
  doReplot();
}

void LivePlots::replotNow() {
  follow_ = true;
  doReplot();
  for (QCustomPlot* p : {stepPlot_, epochPlot_, lrPlot_}) p->replot(QCustomPlot::rpImmediateRefresh);
}

}  // namespace kiln::studio
