#include "widgets/training/parallel_coordinates.h"

#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <qcustomplot.h>

namespace kiln::studio {

namespace {

// A perceptually ordered map from dark violet to yellow (after matplotlib's viridis, which
// QCustomPlot 2.1 lacks), readable on the dark theme.
QCPColorGradient objectiveGradient() {
  QCPColorGradient g;
  g.clearColorStops();
  g.setColorStopAt(0.0, QColor(68, 1, 84));
  g.setColorStopAt(0.25, QColor(59, 82, 139));
  g.setColorStopAt(0.5, QColor(33, 145, 140));
  g.setColorStopAt(0.75, QColor(94, 201, 98));
  g.setColorStopAt(1.0, QColor(253, 231, 37));
  return g;
}

QString number(double v) { return QString::number(v, 'g', 3); }

// The labels an axis carries: (position, text).
std::vector<std::pair<double, QString>> axisLabels(const ParallelAxis& a) {
  std::vector<std::pair<double, QString>> out;
  switch (a.scale) {
    case ParallelAxis::Scale::Categories:
      for (int i = 0; i < a.categories.size(); ++i) out.emplace_back(ParallelCoordinatesPlot::position(a, i), a.categories[i]);
      break;
    case ParallelAxis::Scale::Log:
      if (a.lo > 0 && a.hi > a.lo) {
        out.emplace_back(0, number(a.lo));
        out.emplace_back(0.5, number(std::sqrt(a.lo * a.hi)));
        out.emplace_back(1, number(a.hi));
      } else {
        out.emplace_back(0.5, number(a.lo));
      }
      break;
    case ParallelAxis::Scale::Linear:
      if (a.hi > a.lo) {
        out.emplace_back(0, number(a.lo));
        out.emplace_back(0.5, number((a.lo + a.hi) / 2));
        out.emplace_back(1, number(a.hi));
      } else {
        out.emplace_back(0.5, number(a.lo));
      }
      break;
  }
  return out;
}

}  // namespace

ParallelCoordinatesPlot::ParallelCoordinatesPlot(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  plot_ = new QCustomPlot(this);
  plot_->setObjectName("parallelPlot");
  plot_->setMinimumHeight(160);
  plot_->yAxis->setVisible(false);
  plot_->yAxis->setRange(-0.08, 1.08);
  plot_->xAxis->grid()->setVisible(false);
  plot_->xAxis->setBasePen(Qt::NoPen);
  plot_->xAxis->setTickPen(Qt::NoPen);
  plot_->xAxis->setSubTickPen(Qt::NoPen);
  scale_ = new QCPColorScale(plot_);
  scale_->setGradient(objectiveGradient());
  scale_->setBarWidth(10);
  plot_->plotLayout()->addElement(0, 1, scale_);
  scale_->setVisible(false);
  layout->addWidget(plot_);
}

double ParallelCoordinatesPlot::position(const ParallelAxis& a, double v) {
  if (std::isnan(v)) return NAN;
  switch (a.scale) {
    case ParallelAxis::Scale::Categories: {
      const int n = int(a.categories.size());
      if (v < 0 || v >= n) return NAN;
      return n == 1 ? 0.5 : v / (n - 1);
    }
    case ParallelAxis::Scale::Log:
      if (!(v > 0) || !(a.lo > 0) || !(a.hi > a.lo)) return v > 0 ? 0.5 : NAN;
      return (std::log10(v) - std::log10(a.lo)) / (std::log10(a.hi) - std::log10(a.lo));
    case ParallelAxis::Scale::Linear:
      return a.hi > a.lo ? (v - a.lo) / (a.hi - a.lo) : 0.5;
  }
  return NAN;
}

void ParallelCoordinatesPlot::clear() { setData({}, {}, {}); }

void ParallelCoordinatesPlot::setData(const std::vector<ParallelAxis>& axes, const std::vector<ParallelLine>& lines,
                                      const QString& colourName) {
  plot_->clearGraphs();
  plot_->clearItems();
  double lo = NAN, hi = NAN;
  for (const ParallelLine& l : lines) {
    if (l.greyed || std::isnan(l.colour)) continue;
    lo = std::isnan(lo) ? l.colour : std::min(lo, l.colour);
    hi = std::isnan(hi) ? l.colour : std::max(hi, l.colour);
  }
  const bool coloured = !std::isnan(lo);
  if (coloured && !(hi > lo)) {
    lo -= 0.5;
    hi += 0.5;
  }
  QCPColorGradient gradient = objectiveGradient();  // color() is not const (it caches the map)
  QVector<double> xs;
  for (size_t i = 0; i < axes.size(); ++i) xs << double(i);
  // Greyed lines first: the coloured ones are drawn over them.
  for (int pass = 0; pass < 2; ++pass) {
    for (const ParallelLine& l : lines) {
      const bool grey = l.greyed || std::isnan(l.colour);
      if (grey != (pass == 0)) continue;
      QVector<double> ys;
      for (size_t i = 0; i < axes.size(); ++i) ys << position(axes[i], i < l.values.size() ? l.values[i] : NAN);
      QCPGraph* g = plot_->addGraph();
      g->setData(xs, ys, true);
      g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 4));
      QPen pen(grey ? QColor(140, 140, 140, 140) : QColor(gradient.color(l.colour, QCPRange(lo, hi))));
      pen.setWidthF(grey ? 1.0 : 1.8);
      if (grey) pen.setStyle(Qt::DashLine);
      g->setPen(pen);
    }
  }
  QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
  for (size_t i = 0; i < axes.size(); ++i) {
    ticker->addTick(double(i), axes[i].name);
    auto* line = new QCPItemLine(plot_);
    line->start->setCoords(double(i), 0);
    line->end->setCoords(double(i), 1);
    line->setPen(QPen(QColor(90, 90, 90), 1));  // QCustomPlot's white background, as the other plots
    for (const auto& [y, text] : axisLabels(axes[i])) {
      auto* label = new QCPItemText(plot_);
      label->setPositionAlignment(Qt::AlignLeft | Qt::AlignVCenter);
      label->position->setCoords(double(i), y);
      label->setPadding(QMargins(4, 0, 0, 0));
      label->setText(text);
      label->setColor(Qt::black);
      label->setClipToAxisRect(false);
    }
  }
  plot_->xAxis->setTicker(ticker);
  plot_->xAxis->setRange(-0.25, std::max<double>(1, double(axes.size()) - 0.5));
  scale_->setVisible(coloured);
  if (coloured) {
    scale_->setDataRange(QCPRange(lo, hi));
    scale_->axis()->setLabel(colourName);
  }
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace kiln::studio
