// MainWindow: Model > Predict… and files dropped on the window — the chosen run's model applied to
// images or CSV tables with the run's preprocessing (run_predictor.h) on a worker thread, the
// results in a Predictions window (widgets/training/prediction_view.h), with Grad-CAM or saliency
// maps when its explanation method is chosen (the files are then predicted again).
#include <QAction>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFutureWatcher>
#include <QImageReader>
#include <QMenu>
#include <QMimeData>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>

#include "app/studio/main_window.h"
#include "app/studio/run_predictor.h"
#include "app/studio/training_job.h"
#include "engine/core/plural.h"
#include "widgets/graph/graph_canvas.h"
#include "widgets/project/runs_model.h"
#include "widgets/project/runs_view.h"
#include "widgets/training/log_panel.h"
#include "widgets/training/prediction_view.h"

namespace kiln::studio {

namespace {

struct PredictOutcome {
  QString caption, error, valueName;
  QStringList notes;  // "FILE:LINE: column 'c': 'v' was not seen in training" (PredictedInput::note)
  bool regression = false;
  int explain = PredictionView::noExplanation;  // the method the rows were made with
  QVector<PredictionRow> rows;
};

// On the worker thread: the model, the preprocessing and every file (never throws).
PredictOutcome predictOffThread(const std::string& project, int64_t run, const QStringList& files, int explain) {
  PredictOutcome o;
  o.explain = explain;
  try {
    const std::shared_ptr<RunPredictor> p = RunPredictor::load(project, run);
    std::vector<std::string> paths;
    for (const QString& f : files) paths.push_back(f.toStdString());
    const Explain method = explain == PredictionView::gradCam    ? Explain::grad_cam
                           : explain == PredictionView::saliency ? Explain::saliency
                                                                 : Explain::none;
    const std::vector<PredictedInput> predicted = p->predict(paths, 3, method);
    o.regression = p->isRegression();
    o.valueName = QString::fromStdString(p->label());
    int errors = 0;
    for (const PredictedInput& in : predicted) {
      PredictionRow r;
      r.input = QString::fromStdString(in.input);
      r.error = QString::fromStdString(in.error);
      errors += !in.error.empty();
      if (!in.note.empty()) o.notes << QString::fromStdString(in.input + ": " + in.note);
      r.value = in.value;
      for (const auto& [c, prob] : in.top) {
        r.classes << QString::fromStdString(p->classes().at(static_cast<size_t>(c)));
        r.probabilities << prob;
      }
      if (!p->isTable() && in.error.empty()) {  // a picture of the file for the list (display only)
        QImageReader reader(r.input);
        reader.setAutoTransform(true);
        const QSize size = reader.size();
        if (size.isValid())
          reader.setScaledSize(size.scaled(PredictionView::kThumbnailSide, PredictionView::kThumbnailSide, Qt::KeepAspectRatio));
        r.thumbnail = reader.read();
      }
      if (method != Explain::none && !p->isTable() && in.error.empty()) {
        r.explanation = heatOverlay(in.seen, in.heat, static_cast<int>(in.channels), static_cast<int>(in.height),
                                    static_cast<int>(in.width));
        r.explanationNote = !in.explain_error.empty() ? QObject::tr("no map: %1").arg(QString::fromStdString(in.explain_error))
                            : in.explain_layer.empty() ? QObject::tr("saliency of the predicted class")
                                                       : QObject::tr("Grad-CAM of the predicted class at layer '%1'")
                                                             .arg(QString::fromStdString(in.explain_layer));
      }
      o.rows << r;
    }
    o.caption = QObject::tr("Predictions of %1: %2 of %3 input(s) predicted%4")
                    .arg(QString::fromStdString(p->description()))
                    .arg(o.rows.size() - errors)
                    .arg(o.rows.size())
                    .arg(errors ? QObject::tr(", %1 without a prediction").arg(errors) : QString()) +
                (o.notes.isEmpty() ? QString()
                                   : QObject::tr("; %1 with a category not seen in training (encoded as none of "
                                                 "its column's; see the log)")
                                         .arg(QString::fromStdString(count_of(static_cast<long long>(o.notes.size()), "row"))));
  } catch (const std::exception& e) {
    o.error = QString::fromStdString(plain_error(e));
  }
  return o;
}

}  // namespace

void MainWindow::createPredict(QMenu* model) {
  predictAction_ = model->addAction(tr("&Predict…"), this, [this] {
    QStringList files;
    if (pathChooser_) {
      const QString f = pathChooser_(tr("Predict"), tr("Images and tables (*.png *.jpg *.jpeg *.bmp *.tif *.tiff *.webp *.csv *.tsv)"),
                                     PathKind::OpenFile);
      if (!f.isEmpty()) files << f;
    } else {
      files = QFileDialog::getOpenFileNames(
          this, tr("Predict: choose images or a CSV table"), dialogDirectory(),
          tr("Images and tables (*.png *.jpg *.jpeg *.jpe *.bmp *.ppm *.pgm *.tif *.tiff *.webp *.csv *.tsv *.csv.gz);;"
             "All files (*)"));
    }
    if (!files.isEmpty()) predictFiles(files);
  });
  predictAction_->setObjectName("predict");
  predictAction_->setStatusTip(tr("Predict images or CSV rows with the selected (or newest) finished run's model; "
                                  "files can also be dropped on the window"));
  setAcceptDrops(true);
  canvas_->viewport()->installEventFilter(this);
  RunsModel* runs = runs_->model();
  connect(runs, &QAbstractItemModel::modelReset, this, [this] { updatePredictAction(); });
  connect(runs, &QAbstractItemModel::layoutChanged, this, [this] { updatePredictAction(); });
  connect(runs, &QAbstractItemModel::rowsInserted, this, [this] { updatePredictAction(); });
  connect(runs, &QAbstractItemModel::rowsRemoved, this, [this] { updatePredictAction(); });
  connect(runs, &QAbstractItemModel::dataChanged, this, [this] { updatePredictAction(); });
  connect(runs_, &RunsView::currentRunChanged, this, [this] { updatePredictAction(); });
  updatePredictAction();
}

int64_t MainWindow::predictRun() const {
  if (!project_) return 0;
  const RunsModel* runs = runs_->model();
  auto finished = [&](int row) {
    const projects::RunRecord& r = runs->recordAt(row);
    return r.status == projects::RunStatus::finished && !r.deleted;
  };
  const QList<int64_t> selected = runs_->selectedRuns();
  if (selected.size() == 1) {
    const int row = runs->rowForRun(selected.front());
    if (row >= 0 && finished(row)) return selected.front();
  }
  int64_t newest = 0;
  for (int row = 0; row < runs->rowCount(); ++row)
    if (finished(row)) newest = std::max(newest, runs->recordAt(row).id);
  return newest;
}

void MainWindow::updatePredictAction() {
  if (!predictAction_) return;
  const int64_t run = predictRun();
  const bool training = session_ && session_->isRunning();
  predictAction_->setEnabled(run > 0 && !predicting_ && !training);
  predictAction_->setToolTip(training ? tr("Predict is available when the training run ends")
                             : run > 0 ? tr("Predict images or a CSV table with run %1's model").arg(run)
                                       : tr("Predict needs a finished training run in the project"));
}

bool MainWindow::predictFiles(const QStringList& files) {
  if (files.isEmpty()) return false;
  if (predicting_) {
    log_->info(tr("Predict: the previous files are still being predicted"));
    return false;
  }
  // Building the model draws its initial parameters from the global generator, which a
  // training run's model and dropout use: one at a time.
  if (session_->isRunning()) {
    showError(tr("Cannot predict"), tr("Predict is available when the training run ends."));
    return false;
  }
  const int64_t run = predictRun();
  if (run == 0) {
    showError(tr("Cannot predict"), tr("Predict needs a finished training run: train the model first (Train), "
                                       "or open a project that has one."));
    return false;
  }
  if (!predictionView_) {  // a window of its own (not modal), as Compare evaluations
    auto* window = new QWidget(this, Qt::Window);
    window->setObjectName("predictionWindow");
    window->setWindowTitle(tr("Predictions"));
    auto* layout = new QVBoxLayout(window);
    layout->setContentsMargins(0, 0, 0, 0);
    predictionView_ = new PredictionView(window);
    layout->addWidget(predictionView_);
    connect(predictionView_, &PredictionView::explainMethodChanged, this, [this] {
      if (!predicting_ && !predictedFiles_.isEmpty()) predictFiles(predictedFiles_);  // else when they finish
    });
    window->resize(availableScreenSize() * 6 / 10);
  }
  predictionView_->clear();
  predictionView_->setCaption(tr("Predicting %n file(s) with run %1…", nullptr, static_cast<int>(files.size())).arg(run));
  predictionView_->window()->show();
  predictionView_->window()->raise();
  predicting_ = true;
  predictedFiles_ = files;
  updatePredictAction();
  log_->info(tr("Predict: %n file(s) with run %1's model", nullptr, static_cast<int>(files.size())).arg(run));
  auto* watcher = new QFutureWatcher<PredictOutcome>(this);
  connect(watcher, &QFutureWatcher<PredictOutcome>::finished, this, [this, watcher] {
    const PredictOutcome o = watcher->result();
    watcher->deleteLater();
    predicting_ = false;
    updatePredictAction();
    if (!o.error.isEmpty()) {
      predictionView_->setCaption(tr("Cannot predict: %1").arg(o.error));
      showError(tr("Cannot predict"), o.error);
      return;
    }
    predictionView_->setCaption(o.caption);
    predictionView_->setRows(o.rows, o.regression, o.valueName);
    for (const PredictionRow& r : o.rows)
      if (!r.error.isEmpty()) log_->warning(tr("Predict: %1").arg(r.error));
    constexpr int kNotesShown = 5;
    for (int i = 0; i < std::min<int>(kNotesShown, static_cast<int>(o.notes.size())); ++i)
      log_->warning(tr("Predict: %1 (encoded as none of the column's categories)").arg(o.notes[i]));
    if (o.notes.size() > kNotesShown)
      log_->warning(tr("Predict: and %1 more rows with a category not seen in training").arg(o.notes.size() - kNotesShown));
    if (o.explain != predictionView_->explainMethod()->currentIndex()) predictFiles(predictedFiles_);  // changed meanwhile
  });
  watcher->setFuture(
      QtConcurrent::run(predictOffThread, project_->path(), run, files, predictionView_->explainMethod()->currentIndex()));
  return true;
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
  if (e->mimeData()->hasUrls()) e->acceptProposedAction();
  else QMainWindow::dragEnterEvent(e);
}

void MainWindow::dropEvent(QDropEvent* e) {
  QStringList files;
  for (const QUrl& url : e->mimeData()->urls())
    if (url.isLocalFile()) files << url.toLocalFile();
  if (files.isEmpty()) {
    QMainWindow::dropEvent(e);
    return;
  }
  e->acceptProposedAction();
  predictFiles(files);
}

bool MainWindow::eventFilter(QObject* watched, QEvent* event) {
  const QEvent::Type t = event->type();
  if (watched == canvas_->viewport() && (t == QEvent::DragEnter || t == QEvent::DragMove || t == QEvent::Drop)) {
    auto* e = static_cast<QDropEvent*>(event);  // QDragEnterEvent and QDragMoveEvent are QDropEvents
    if (e->mimeData()->hasUrls()) {
      if (t == QEvent::Drop) dropEvent(e);
      else e->acceptProposedAction();
      return true;
    }
  }
  return QMainWindow::eventFilter(watched, event);
}

}  // namespace kiln::studio
