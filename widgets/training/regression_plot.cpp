#include "widgets/training/regression_plot.h"

#include <qcustomplot.h>

#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

namespace kiln::studio {

RegressionPlot::RegressionPlot(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  plot_ = new QCustomPlot(this);
  plot_->setToolTip(tr("Each test row: its actual value (x) and the model's prediction (y); the line is predicted = "
                       "actual, where a perfect model's points lie"));
  plot_->addGraph();  // 0: the diagonal
  plot_->graph(0)->setPen(QPen(QColor(150, 150, 150), 1, Qt::DashLine));
  plot_->addGraph();  // 1: the points
  plot_->graph(1)->setLineStyle(QCPGraph::lsNone);
  plot_->graph(1)->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, QColor(31, 119, 180, 160), 5));
  plot_->setMinimumHeight(160);
  layout->addWidget(plot_);
}

int RegressionPlot::pointCount() const { return plot_->graph(1)->dataCount(); }

void RegressionPlot::clear() {
  plot_->graph(0)->data()->clear();
  plot_->graph(1)->data()->clear();
  metrics_ = {};
  plot_->replot();
}

void RegressionPlot::setPoints(const QVector<double>& actual, const QVector<double>& predicted, const QString& target) {
  clear();
  if (actual.isEmpty() || actual.size() != predicted.size()) return;
  metrics_ = train::regression_metrics(std::vector<double>(actual.begin(), actual.end()),
                                       std::vector<double>(predicted.begin(), predicted.end()));
  // The scatter's data sorted by x, as QCPGraph keeps it (the points' order does not matter here).
  plot_->graph(1)->setData(actual, predicted);
  double lo = actual[0], hi = actual[0];
  for (qsizetype i = 0; i < actual.size(); ++i)
    for (double v : {actual[i], predicted[i]})
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  const double pad = hi > lo ? 0.05 * (hi - lo) : 1;
  plot_->graph(0)->setData({lo - pad, hi + pad}, {lo - pad, hi + pad});
  plot_->xAxis->setRange(lo - pad, hi + pad);
  plot_->yAxis->setRange(lo - pad, hi + pad);
  plot_->xAxis->setLabel(tr("actual %1").arg(target));
  plot_->yAxis->setLabel(tr("predicted %1").arg(target));
  plot_->replot();
}

}  // namespace kiln::studio
