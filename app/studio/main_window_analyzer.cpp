// MainWindow: the Network Analyzer (widgets/graph/network_analyzer.h) — Model > Analyze
// Network shows its dock, its totals stay in the status bar, its rows and warnings select
// their node on the canvas, its per-layer profile tints the canvas's nodes (GraphCanvas::
// setNodeHeat). Measuring and profiling are disabled while a run trains (updateTrainState).
// Model > Compare Devices shows the device comparison dock (main_window_layout.cpp), Model >
// Experiments / Sweep… the sweeps' dock (main_window_experiment.cpp).
#include <QAction>
#include <QDockWidget>
#include <QLabel>
#include <QMenuBar>
#include <QStatusBar>

#include "app/studio/main_window.h"
#include "widgets/graph/graph_canvas.h"
#include "widgets/graph/network_analyzer.h"

namespace kiln::studio {

void MainWindow::createModelMenu() {
  QMenu* model = menuBar()->addMenu(tr("&Model"));
  analyzeAction_ = model->addAction(tr("&Analyze Network"), this, [this] {
    QDockWidget* d = dock("analyzer");
    d->show();
    d->raise();
  });
  analyzeAction_->setObjectName("analyzeNetwork");
  analyzeAction_->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_A));
  createPredict(model);
  QAction* compare = model->addAction(tr("&Compare Devices"), this, [this] {
    QDockWidget* d = dock("compare");
    d->show();
    d->raise();
  });
  compare->setObjectName("compareDevices");
  experimentsAction_ = model->addAction(tr("E&xperiments / Sweep…"), this, [this] {
    QDockWidget* d = dock("experiments");
    d->show();
    d->raise();
  });
  experimentsAction_->setObjectName("experiments");
  experimentsAction_->setStatusTip(tr("Hyper-parameter sweeps: trials of settings run as runs of the project"));
}

void MainWindow::connectAnalyzer() {
  connect(analyzer_, &NetworkAnalyzer::nodeActivated, canvas_, &GraphCanvas::selectNode);
  const LayerProfilePanel* profile = analyzer_->profilePanel();
  connect(profile, &LayerProfilePanel::heatChanged, canvas_, [this, profile] { canvas_->setNodeHeat(profile->heat()); });
  analyzerStatus_ = new QLabel(analyzer_->summaryText(), this);
  analyzerStatus_->setObjectName("analyzerStatus");
  statusBar()->addPermanentWidget(analyzerStatus_);
  connect(analyzer_, &NetworkAnalyzer::summaryChanged, analyzerStatus_, &QLabel::setText);
}

QString MainWindow::analyzerStatusText() const { return analyzerStatus_->text(); }

}  // namespace kiln::studio
