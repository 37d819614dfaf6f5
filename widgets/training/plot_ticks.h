// Y-axis tick counts that follow a plot's height, shared by the training plots (live_plots)
// and the Runs view's overlays: as many ticks as fit with a label's height and a half between
// them (2 to 4). Four ticks in a 40 px axis drew "0.5 1 1.5 2" over each other on a laptop.
#pragma once
#include <qcustomplot.h>

#include <QFontMetrics>
#include <algorithm>

namespace kiln::studio {

// Connects `plot`'s beforeReplot to set the tick count of yAxis and yAxis2 from the axis
// rect's height (the previous layout's; stable once shown).
inline void fitTickCountToHeight(QCustomPlot* plot) {
  QObject::connect(plot, &QCustomPlot::beforeReplot, plot, [plot] {
    const int line = QFontMetrics(plot->yAxis->tickLabelFont()).height();
    const int ticks = std::clamp(plot->axisRect()->height() / (line * 5 / 2), 2, 4);
    for (QCPAxis* axis : {plot->yAxis, plot->yAxis2}) axis->ticker()->setTickCount(ticks);
  });
}

}  // namespace kiln::studio
