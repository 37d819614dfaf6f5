// LivePlots' controls (live_plots.h): the smoothing slider, the x-axis choice and the
// legend toggle, and the smoothing itself.
#include <qcustomplot.h>

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSlider>
#include <QStandardItemModel>
#include <cmath>

#include "widgets/training/live_plots.h"

namespace kiln::studio {

void LivePlots::setSmoothing(double w) {
  w = std::clamp(w, 0.0, 0.999);
  if (w == smoothing_) return;
  smoothing_ = w;
  const QSignalBlocker block(smoothingSlider_);
  smoothingSlider_->setValue(static_cast<int>(std::lround(w * kSmoothingSteps)));
  smoothingLabel_->setText(QString::number(w, 'f', 3));
  rebuildSeries();
}

QVector<double> LivePlots::smooth(const QVector<double>& values, double w) {
  QVector<double> out(values.size());
  double last = 0;
  int64_t n = 0;
  for (qsizetype i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      out[i] = values[i];
      continue;
    }
    last = last * w + (1 - w) * values[i];
    ++n;
    out[i] = last / (1 - std::pow(w, static_cast<double>(n)));
  }
  return out;
}

QWidget* LivePlots::makeControls() {
  auto* bar = new QWidget(this);
  auto* row = new QHBoxLayout(bar);
  row->setContentsMargins(2, 0, 2, 0);
  row->addWidget(new QLabel(tr("Smoothing"), bar));
  smoothingSlider_ = new QSlider(Qt::Horizontal, bar);
  smoothingSlider_->setRange(0, kSmoothingSteps - 1);
  smoothingSlider_->setValue(static_cast<int>(std::lround(smoothing_ * kSmoothingSteps)));
  smoothingSlider_->setMaximumWidth(200);
  smoothingSlider_->setToolTip(tr("Weight of TensorBoard's debiased exponential moving average of the step loss "
                                  "(0: the raw curve, 0.999: the smoothest); the raw curve stays faint behind"));
  row->addWidget(smoothingSlider_);
  smoothingLabel_ = new QLabel(QString::number(smoothing_, 'f', 3), bar);
  smoothingLabel_->setMinimumWidth(smoothingLabel_->fontMetrics().horizontalAdvance("0.0000"));
  row->addWidget(smoothingLabel_);
  row->addSpacing(12);
  row->addWidget(new QLabel(tr("X axis"), bar));
  xAxisBox_ = new QComboBox(bar);
  xAxisBox_->addItem(tr("Step"), static_cast<int>(XAxis::Step));
  xAxisBox_->addItem(tr("Wall time"), static_cast<int>(XAxis::WallTime));
  xAxisBox_->addItem(tr("Epoch"), static_cast<int>(XAxis::Epoch));
  xAxisBox_->setToolTip(tr("The x axis of the step loss and the learning rate: the optimizer step, the seconds "
                           "since the run started, or the epoch"));
  row->addWidget(xAxisBox_);
  row->addSpacing(12);
  legendBox_ = new QCheckBox(tr("Legend"), bar);
  legendBox_->setChecked(true);
  row->addWidget(legendBox_);
  row->addStretch(1);
  connect(smoothingSlider_, &QSlider::valueChanged, this,
          [this](int v) { setSmoothing(static_cast<double>(v) / kSmoothingSteps); });
  connect(xAxisBox_, &QComboBox::currentIndexChanged, this,
          [this] { setXAxis(static_cast<XAxis>(xAxisBox_->currentData().toInt())); });
  connect(legendBox_, &QCheckBox::toggled, this, &LivePlots::setLegendVisible);
  return bar;
}

void LivePlots::updateAxisChoices() {
  // Wall time and epoch are offered once the steps carry them (stored runs and the Studio's own do).
  auto* model = qobject_cast<QStandardItemModel*>(xAxisBox_->model());
  const bool times = !times_.isEmpty() && std::isfinite(times_.back());
  model->item(1)->setEnabled(times || xAxis_ == XAxis::WallTime);
  model->item(2)->setEnabled(stepsPerEpoch_ > 0 || xAxis_ == XAxis::Epoch);
}

void LivePlots::setXAxis(XAxis axis) {
  {
    const QSignalBlocker block(xAxisBox_);
    xAxisBox_->setCurrentIndex(xAxisBox_->findData(static_cast<int>(axis)));
  }
  if (axis == xAxis_) return;
  xAxis_ = axis;
  const QString label = axis == XAxis::Step ? tr("step") : axis == XAxis::WallTime ? tr("wall time (s)") : tr("epoch");
  stepPlot_->xAxis->setLabel(label);
  lrPlot_->xAxis->setLabel(label);
  follow_ = true;
  rebuildSeries();
}

void LivePlots::setLegendVisible(bool on) {
  legendBox_->setChecked(on);
  if (on == legendVisible_) return;
  legendVisible_ = on;
  for (QCustomPlot* p : {stepPlot_, epochPlot_}) {
    // Taken out of the layout, not only hidden, so that its row gives its height to the axes.
    if (on) {
      p->plotLayout()->insertRow(1);
      p->plotLayout()->addElement(1, 0, p->legend);
      p->plotLayout()->setRowStretchFactor(1, 0.001);
    } else {
      p->plotLayout()->take(p->legend);
      p->plotLayout()->simplify();
    }
    p->legend->setVisible(on);
    p->replot(QCustomPlot::rpQueuedReplot);
  }
}

}  // namespace kiln::studio
