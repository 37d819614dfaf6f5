// MainWindow: the results side — which stored run the Plots and Evaluation docks show,
// the Runs view's undoable edits on the window's undo stack, and purging deleted runs
// when the project is closed.
#include <QDockWidget>
#include <QUndoStack>
#include <QVBoxLayout>

#include "app/studio/main_window.h"
#include "app/studio/run_restore.h"
#include "widgets/graph/graph_document.h"
#include "widgets/project/run_commands.h"
#include "widgets/project/runs_model.h"
#include "widgets/project/runs_view.h"
#include "widgets/training/evaluation_compare.h"
#include "widgets/training/evaluation_view.h"
#include "widgets/training/live_plots.h"
#include "widgets/training/log_panel.h"

namespace kiln::studio {

void MainWindow::connectRuns() {
  QUndoStack* stack = document_->undoStack();
  runs_->setUndoStack(stack);
  // Selecting one run shows it; "Open Evaluation" (or Enter / a double-click) also raises
  // the Evaluation dock.
  connect(runs_, &RunsView::currentRunChanged, this, [this](qint64 run) { showRun(run, false); });
  connect(runs_, &RunsView::evaluationRequested, this, [this](qint64 run) { openRunEvaluation(run); });
  connect(runs_, &RunsView::compareRequested, this, [this](qint64 a, qint64 b) { compareEvaluations(a, b); });
  connect(runs_, &RunsView::resumeRequested, this, &MainWindow::resumeRun);
  // A run edit changes the project file at once: when only run commands lie between the
  // clean state and the current one, the graph is still as saved.
  connect(stack, &QUndoStack::indexChanged, this, [this, stack](int index) {
    const int clean = stack->cleanIndex();
    if (clean < 0 || clean == index) return;
    for (int i = std::min(clean, index); i < std::max(clean, index); ++i)
      if (stack->command(i)->id() != kRunCommandId) return;
    stack->setClean();
  });
}

bool MainWindow::openRunEvaluation(int64_t run) {
  if (!showRun(run, true)) return false;
  if (QDockWidget* d = dock("evaluation")) d->raise();
  return true;
}

QWidget* MainWindow::compareEvaluations(int64_t a, int64_t b) {
  if (!project_) return nullptr;
  QString names[2];
  EvaluationResult results[2];
  const int64_t ids[2] = {a, b};
  try {
    for (int i = 0; i < 2; ++i) {
      const std::optional<projects::Evaluation> e = project_->evaluation(ids[i]);
      if (!e) {
        log_->warning(tr("cannot compare: run %1 has no evaluation (it was stopped, failed or not tested)").arg(ids[i]));
        return nullptr;
      }
      results[i] = toEvaluationResult(*e);
      const int row = runs_->model()->rowForRun(ids[i]);
      names[i] = tr("run %1").arg(ids[i]);
      if (row >= 0) names[i] += " " + QString::fromStdString(runs_->model()->recordAt(row).name);
    }
  } catch (const std::exception& e) {
    log_->warning(tr("cannot compare runs %1 and %2: %3").arg(a).arg(b).arg(QString::fromStdString(e.what())));
    return nullptr;
  }
  // A window of its own (not modal): the main window stays usable beside it.
  auto* window = new QWidget(this, Qt::Window);
  window->setAttribute(Qt::WA_DeleteOnClose);
  window->setWindowTitle(tr("Compare evaluations — run %1 and run %2").arg(a).arg(b));
  auto* layout = new QVBoxLayout(window);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* compare = new EvaluationCompare(window);
  compare->setRuns(names[0], results[0], names[1], results[1]);
  layout->addWidget(compare);
  window->resize(availableScreenSize() * 9 / 10);
  window->show();
  return window;
}

bool MainWindow::showRun(int64_t run, bool requested) {
  if (!project_) return false;
  if (session_->isRunning()) {
    // The live run keeps the Plots and Evaluation docks.
    if (requested) log_->info(tr("run %1 can be shown when the training run ends").arg(run));
    return false;
  }
  QString error;
  if (!showStoredRun(*project_, run, plots_, evaluation_, &error)) {
    log_->warning(tr("cannot show run %1: %2").arg(run).arg(error));
    shownRun_ = 0;
    setEvaluationCaption(0, {});
    return false;
  }
  shownRun_ = run;
  const int row = runs_->model()->rowForRun(run);
  setEvaluationCaption(run, row >= 0 ? QString::fromStdString(runs_->model()->recordAt(row).name) : QString());
  return true;
}

void MainWindow::setEvaluationCaption(int64_t run, const QString& name) {
  QDockWidget* d = dock("evaluation");
  if (!d) return;
  if (run == 0) {
    d->setWindowTitle(tr("Evaluation"));
    d->setToolTip({});
    return;
  }
  // The dock's tab stays short: the run number and at most 24 characters of its name.
  const QString shortName = name.size() <= 24 ? name : name.left(23) + QChar(0x2026);
  d->setWindowTitle(tr("Evaluation \u2014 run %1 %2").arg(run).arg(shortName));
  d->setToolTip(tr("Run %1: %2").arg(run).arg(name));
}

void MainWindow::showLatestResults() {
  shownRun_ = 0;
  setEvaluationCaption(0, {});
  if (!project_) return;
  try {
    // The newest run with an evaluation (a stopped or failed last run has none), else the
    // newest; the Runs view has just read them all (one query).
    const RunsModel* runs = runs_->model();
    const int count = runs->rowCount();
    if (count == 0) return;
    int show = count - 1;
    for (int row = count - 1; row >= 0; --row)
      if (runs->hasEvaluationAt(row)) {
        show = row;
        break;
      }
    const projects::RunRecord& run = runs->recordAt(show);
    const int64_t id = run.id;
    if (showRun(id, false))
      log_->info(tr("showing run %1 (%2%3): its curves in Plots, its test results in Evaluation")
                     .arg(id)
                     .arg(QString::fromStdString(projects::to_string(run.status)))
                     .arg(show != count - 1 ? tr(", the newest run with an evaluation") : QString()));
    runs_->selectRuns({id});
  } catch (const std::exception& e) {
    log_->warning(tr("cannot read the project's runs: %1").arg(QString::fromStdString(e.what())));
  }
}

void MainWindow::purgeDeletedRuns() {
  if (!project_) return;
  try {
    const int n = project_->purge_deleted_runs();
    if (n > 0) log_->info(tr("%n deleted run(s) removed from the project for good", nullptr, n));
    project_->purge_unreferenced_blobs();  // weights of autosaves that were never saved
  } catch (const std::exception& e) {
    log_->warning(tr("cannot remove the deleted runs: %1").arg(QString::fromStdString(e.what())));
  }
}

}  // namespace kiln::studio
