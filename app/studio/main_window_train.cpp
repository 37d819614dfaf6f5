// MainWindow: the Train menu — what blocks training, starting, pausing, stopping.
#include <QAction>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QPushButton>
#include <QThread>

#include "app/studio/main_window.h"
#include "engine/graph/json.h"
#include "widgets/graph/graph_document.h"
#include "widgets/project/runs_view.h"
#include "widgets/training/evaluation_view.h"
#include "widgets/training/live_plots.h"
#include "widgets/training/log_panel.h"
#include "widgets/training/training_panel.h"

namespace kiln::studio {

QStringList MainWindow::trainBlockers() const {
  QStringList reasons;
  for (const std::string& b : training_blockers(document_->graph(), document_->analysis()))
    reasons << QString::fromStdString(b);
  try {
    const DatasetConfig d = datasetConfig();
    if (!QFileInfo(QString::fromStdString(d.dir)).isDir())
      reasons << tr("Fashion-MNIST is not installed in %1 (Debian package dataset-fashion-mnist)")
                     .arg(QString::fromStdString(d.dir));
  } catch (const std::exception& e) {
    reasons << QString::fromUtf8(e.what());
  }
  return reasons;
}

void MainWindow::updateTrainState() {
  const bool running = session_ && session_->isRunning();
  const QStringList reasons = trainBlockers();
  trainAction_->setEnabled(!running && reasons.isEmpty());
  trainAction_->setToolTip(reasons.isEmpty() ? tr("Train the graph (F5)")
                                             : tr("Cannot train yet:\n\u2022 ") + reasons.join("\n\u2022 "));
  trainingPanel_->setStartBlockers(reasons);
  pauseAction_->setEnabled(running);
  stopAction_->setEnabled(running);
}

bool MainWindow::startTraining() {
  if (session_->isRunning()) return false;
  const QStringList reasons = trainBlockers();
  if (!reasons.isEmpty()) {
    showError(tr("Cannot train"), tr("Cannot train yet:\n\u2022 ") + reasons.join("\n\u2022 "));
    return false;
  }
  if (!project_) {
    log_->info(tr("runs are stored in a project file: choose where to save it"));
    if (!save()) return false;
  }
  int64_t version = 0;  // 0: the session stores the graph as a new version (off the UI thread)
  try {
    auto latest = project_->latest_graph();
    if (latest && latest->graph_json == graph::to_json(document_->graph())) version = latest->id;
  } catch (const std::exception& e) {
    showError(tr("Cannot train"), QString::fromStdString(plain_error(e)));
    return false;
  }
  plots_->clear();
  evaluation_->clear();
  // Leave one core to the UI so that it stays responsive.
  session_->setThreads(std::max(1, QThread::idealThreadCount() - 1));
  QString error;
  if (!session_->start(project_->path(), version, document_->graph(), trainingPanel_->config(), datasetConfig(), testImages_,
                       &error)) {
    showError(tr("Cannot train"), error);
    return false;
  }
  document_->setClean();  // the run stores this graph as a version
  trainingPanel_->setState(TrainingPanel::State::Running);
  trainingPanel_->setStatusText(tr("Starting: loading the data set..."));
  if (QDockWidget* d = dock("plots")) d->raise();
  updateTrainState();
  return true;
}

void MainWindow::onTrainingFinished(qint64 run, const QString& status, const QString& message) {
  trainingPanel_->setState(TrainingPanel::State::Idle);
  trainingPanel_->setEnded(status);
  runs_->refresh();
  pauseAction_->setChecked(false);
  trainingPanel_->setStatusText(status == "failed" ? tr("Run %1 failed: %2").arg(run).arg(message)
                                                   : tr("Run %1 %2.").arg(run).arg(status));
  plots_->fitToData();
  updateTrainState();
  if (status == "failed") showError(tr("Training failed"), message);
  else if (status == "finished")
    if (QDockWidget* d = dock("evaluation")) d->raise();
}

}  // namespace kiln::studio
