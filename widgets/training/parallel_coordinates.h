// ParallelCoordinatesPlot: a parallel-coordinates plot (Inselberg 1985; the view TensorBoard's
// HParams and Optuna's plot_parallel_coordinate give a sweep) on QCustomPlot: one vertical axis
// per dimension (linear, log or categories, each drawn from its bottom to its top), one polyline
// per item crossing the axes at its values, coloured by a separate figure (a sweep's objective)
// through a colour scale; greyed items (pruned or failed trials) drawn dashed and grey beneath.
// Values are placed in [0, 1] per axis (log10 for a log axis, evenly spaced categories), so the
// plot's y axis is hidden and each axis carries its own labels.
#pragma once
#include <QStringList>
#include <QWidget>
#include <vector>

class QCustomPlot;
class QCPColorScale;

namespace kiln::studio {

struct ParallelAxis {
  enum class Scale { Linear, Log, Categories };
  QString name;
  Scale scale = Scale::Linear;
  double lo = 0, hi = 1;   // Linear and Log: the range shown (Log: lo > 0); lo == hi centres the values
  QStringList categories;  // Categories: bottom to top
};

struct ParallelLine {
  std::vector<double> values;  // one per axis: a number, or the category's index; NaN: no value (a gap)
  double colour = 0;           // the colour scale's figure (NaN: greyed)
  bool greyed = false;         // drawn grey and dashed, beneath the others
};

class ParallelCoordinatesPlot : public QWidget {
  Q_OBJECT
 public:
  explicit ParallelCoordinatesPlot(QWidget* parent = nullptr);
  // Replaces what is shown (a queued replot). `colourName` labels the colour scale; its range
  // is the non-greyed lines' colour figures (a single value: that value +- 0.5).
  void setData(const std::vector<ParallelAxis>& axes, const std::vector<ParallelLine>& lines, const QString& colourName);
  void clear();
  QCustomPlot* plot() const { return plot_; }
  // The y position in [0, 1] of `value` on `axis` (NaN for NaN or a category out of range).
  static double position(const ParallelAxis& axis, double value);

 private:
  QCustomPlot* plot_;
  QCPColorScale* scale_;
};

}  // namespace kiln::studio
