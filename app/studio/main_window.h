// MainWindow: Kiln Studio's window — the graph canvas in the middle; docks for the
// layer palette, properties, problems, history (QUndoView), dataset, training, plots,
// evaluation, runs and log. Forms sit in scroll areas and every dock's minimum is
// kDockMinimum, so the window fits 1280x720 with all bottom tabs on screen. The default
// arrangement depends on the screen (applyDefaultLayout); the user's arrangement is saved
// per user and per screen size with QSettings (saveState / restoreState) when the window
// closes, and View > Reset Layout goes back to the default.
// File: New from template / Open / Save (a new graph version + settings) / Save As /
// recent files; every 60 s the edited graph goes to the project's autosave slot, and
// opening a project offers to restore a newer autosave. Train / Pause / Stop drive a
// TrainingSession; Train is enabled only for a valid graph that fits the dataset.
#pragma once
#include <QMainWindow>
#include <QStringList>
#include <QTimer>
#include <functional>
#include <memory>
#include <optional>

#include "app/studio/training_session.h"
#include "engine/graph/layer_profile.h"
#include "engine/nn/module.h"
#include "projects/project.h"

class QAction;
class QDockWidget;
class QLabel;
class QLineEdit;
class QMenu;
class QScrollArea;
class QUndoView;
class QDragEnterEvent;
class QDropEvent;

namespace kiln::studio {

class GraphDocument;
class GraphCanvas;
class LayerPalette;
class PropertyEditor;
class ProblemsPanel;
class TrainingPanel;
class LivePlots;
class EvaluationView;
class LogPanel;
class DatasetPanel;
class RunsView;
class NetworkAnalyzer;
class PredictionView;
class RunPredictor;
class ExperimentView;

// A dock's content in a scroll area: the dock can be made smaller than its form (a laptop
// screen); the form then scrolls instead of squashing its rows or growing the window.
QScrollArea* scrollableDockContent(QWidget* content, QWidget* parent);

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  static constexpr int kAutosaveIntervalMs = 60000;
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;
  static void applyStyle();  // Fusion with a dark palette (call before the first window)

  // ---- file actions (return false and show the reason when they fail) ----
  void newFromTemplate(const QString& name);  // unsaved document; Save asks for a file
  // File > New (Ctrl+N): an unsaved graph with only an Input ([1,28,28], f32: one
  // Fashion-MNIST image) and an Output node, to be filled from the Layers palette.
  void newEmpty();
  bool newProjectFile(const QString& path, const QString& templateName);  // creates and opens
  bool openProject(const QString& path);
  bool save();
  void autosave();  // the edited graph into the project's autosave slot (every 60 s; nothing when unchanged)
  bool saveAs(const QString& path);

  // ---- training ----
  QStringList trainBlockers() const;  // why Train is disabled (empty: enabled)
  bool startTraining();               // as the Train action; false with the reason in the log/dialog
  // Runs > Resume Run: continues a stopped, interrupted or failed run of the project from its newest
  // checkpoint (TrainingSession::resume); false with the reason in the log/dialog.
  bool resumeRun(qint64 run);
  void setSilent(bool on) { silent_ = on; }  // tests: errors to the log only, no message boxes
  void setTrainingPaused(bool on);  // as Train > Pause: the session, the action and the panel
  // Asks a yes/no question (true: yes); a QMessageBox unless a test sets its own. Used for
  // "Stop it and quit?" on closing while training runs: the run is paused while it is asked
  // (resumed on No unless it was paused before, stopped on Yes). Silent windows without an
  // asker quit without asking.
  using QuestionAsker = std::function<bool(const QString& title, const QString& text)>;
  void setQuestionAsker(QuestionAsker asker) { questionAsker_ = std::move(asker); }
  void setTestImages(int64_t n) { testImages_ = n; }

  // ---- for tests and the screenshot demo ----
  GraphDocument* document() const { return document_; }
  GraphCanvas* canvas() const { return canvas_; }
  TrainingPanel* trainingPanel() const { return trainingPanel_; }
  LivePlots* plots() const { return plots_; }
  EvaluationView* evaluationView() const { return evaluation_; }
  LogPanel* logPanel() const { return log_; }
  RunsView* runsView() const { return runs_; }
  NetworkAnalyzer* networkAnalyzer() const { return analyzer_; }  // the Network Analyzer dock
  QAction* analyzeAction() const { return analyzeAction_; }        // Model > Analyze Network
  QString analyzerStatusText() const;                              // the status bar's totals
  TrainingSession* session() const { return session_; }
  projects::Project* project() { return project_ ? &*project_ : nullptr; }
  QAction* trainAction() const { return trainAction_; }
  QAction* undoAction() const { return undoAction_; }
  QAction* findAction() const { return findAction_; }  // Edit > Find Node (Ctrl+F)
  QLineEdit* findField() const { return findEdit_; }    // the toolbar's node search  // Edit > Undo (Ctrl+Z): the graph's undo stack
  QString lastError() const { return lastError_; }
  DatasetSettings datasetSettings() const;
  void setDatasetSettings(const DatasetSettings&);
  QDockWidget* dock(const QString& objectName) const;
  // Screens (available area) less than kCompactHeight px tall get the compact arrangement:
  // Properties and Training as tabs in the right column above Problems; the bottom tabs
  // (Plots, Evaluation, Runs, Log) take 40% of the height. Taller ones: Properties,
  // Training and Problems one above the other, the bottom tabs 45%. The left column: Layers,
  // Dataset, History.
  static constexpr int kCompactHeight = 1000;
  static constexpr int kCompactProblemsHeight = 90;   // px of the Problems dock in the compact arrangement
  static constexpr QSize kDockMinimum{120, 80};
  static constexpr int kLayoutVersion = 3;  // saveState version; older saved states are ignored
  static bool isCompactScreen(const QSize& available);
  void applyDefaultLayout(const QSize& available);
  void resetLayout();  // the default arrangement for this screen, every dock shown
  void selectAllRuns();  // in the runs view (their curves overlaid)

  // ---- results (main_window_runs.cpp) ----
  // Shows a stored run's curves in Plots and its evaluation in Evaluation (whose dock
  // title names the run) and raises Evaluation, as the Runs view's "Open Evaluation";
  // selecting one run in the Runs view shows it too. False (with the reason in the log)
  // while a training run is live or when the run cannot be read. Opening a project shows
  // the newest run that has an evaluation (else the newest run).
  bool openRunEvaluation(int64_t run);
  // Runs view > "Compare evaluations": a window with runs a and b's evaluations side by side
  // (EvaluationCompare; a is shown as A). nullptr, with the reason in the log, when either
  // has no evaluation or the project cannot be read.
  QWidget* compareEvaluations(int64_t a, int64_t b);
  int64_t shownRun() const { return shownRun_; }  // the stored run shown (0: none, or the live run)
  // Deleted runs (Runs view, undoable while the project is open) are removed from the
  // file for good when the window closes the project: another project or a new document
  // is opened, or the window is destroyed.

  // ---- sweeps (main_window_experiment.cpp): Model > Experiments / Sweep… shows the Experiments
  // dock (ExperimentView). A sweep starts from the edited graph (stored as a project version when
  // it is not the latest) and the Training and Dataset panels' settings, and is refused, as Train
  // is, while the graph or the dataset has problems or a run trains; while it runs, Train,
  // Resume Run and closing or replacing the project are refused (closing the window asks).
  ExperimentView* experimentView() const { return experiment_; }
  QAction* experimentsAction() const { return experimentsAction_; }
  bool sweepRunning() const;
  // Apply Best: the best finished trial of `sweep` (sweep_report) applied to the sweep's own
  // training settings (the device kept as the Training panel has it): the Training panel shows
  // them and they are stored as the project's "training" setting; its NODE.ATTRIBUTE values are
  // set on the edited graph as one undoable edit. False, with the reason shown, when the sweep
  // has no finished trial, a run trains (the graph is locked) or a node it names is gone.
  bool applyBestTrial(int64_t sweep);

  // ---- ONNX (main_window_onnx.cpp): File > Import ONNX..., Export ONNX..., Export C++... ----
  // Import opens the model as an unsaved graph (engine/onnx graph import, laid out, shapes on
  // the edges); unsupported ops, corrupt files and import errors go to the log, the document
  // stays as it was. Exports refuse a graph with problems (listed), write opset 17 ONNX checked
  // by libonnx, or C++ source (engine/onnx/codegen.h) into a folder, and are recorded in the
  // open project (Project::add_export). Weights: the last checkpoint of the project's newest
  // run whose parameters have the graph's names and shapes (a trained model); else those of
  // the imported model for its initializers and the layers' initialization for the rest.
  // The File menu's exports refuse a graph with problems before any file dialog opens;
  // Export C++ creates the folder (and its parents) when missing.
  enum class PathKind { OpenFile, SaveFile, Directory };
  // Asks for a path ("" = cancelled); QFileDialog unless a test sets its own.
  using PathChooser = std::function<QString(const QString& title, const QString& filter, PathKind kind)>;
  void setPathChooser(PathChooser chooser) { pathChooser_ = std::move(chooser); }
  // Where file dialogs start: the open project's folder, else the imported model's, else
  // the home folder.
  QString dialogDirectory() const;
  // The name exports and Save suggest: the project file's base name ("my_cnn" for
  // my_cnn.kiln), else the imported model's ("resnet18"), else the document's ("Untitled").
  // ONNX and C++ exports name their graph after it, so the generated C++ files are
  // my_cnn.h / my_cnn.cpp (class MyCnn; engine/onnx/codegen.h).
  QString exportName() const;
  bool importOnnx(const QString& path);
  // Edit > Replace Classifier Head…: the last Linear before the Output gets `classes`
  // outputs and fresh weights (GraphDocument::replaceHead, undoable); classes 0 asks for
  // the number, the data set's class count (kFashionMnistClasses) suggested. False and the
  // error (naming the node where the search stopped) shown when there is no such Linear.
  bool replaceClassifierHead(int64_t classes = 0);
  bool exportOnnx(const QString& path);
  bool exportCpp(const QString& dir);
  QAction* importOnnxAction() const { return importOnnxAction_; }
  QAction* exportOnnxAction() const { return exportOnnxAction_; }
  QAction* exportCppAction() const { return exportCppAction_; }
  // Checked (the default): Export ONNX of a trained run's weights puts the run's preprocessing in
  // front of the network (engine/onnx/run_export.h).
  QAction* exportPreprocessingAction() const { return exportPreprocessingAction_; }

  // Model > Predict… (main_window_predict.cpp), enabled while the project has a finished run:
  // files chosen in a dialog or dropped on the window (images, or CSV tables) are predicted by
  // the chosen run's model with the run's preprocessing (run_predictor.h) on a worker thread, and
  // shown in a Predictions window, one row per image or table row (a file that cannot be used:
  // one row with the reason). The chosen run: the one selected in the Runs view when it is
  // finished, else the newest finished run. False, with the reason in the log (and a dialog
  // unless silent), when there is no finished run, a run is training, or no file is given; true
  // once the work has started.
  bool predictFiles(const QStringList& files);
  int64_t predictRun() const;  // the run predictFiles would use (0: none)
  QAction* predictAction() const { return predictAction_; }
  PredictionView* predictionView() const { return predictionView_; }  // null before the first Predict
  bool isPredicting() const { return predicting_; }

 protected:
  void closeEvent(QCloseEvent*) override;
  void dragEnterEvent(QDragEnterEvent*) override;  // files: Predict
  void dropEvent(QDropEvent*) override;
  // Files dragged over the canvas (whose viewport takes drops of the palette's layers): Predict.
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  QSize defaultWindowSize() const;  // a compact screen's available geometry, else 90% of it, at most 1600x1000
  void createDocks();
  static constexpr int kMaxCommandTextWidth = 280;  // px of an undo command's text in the Edit menu
  static QString boundedCommandText(const QString& text);  // elided in the middle
  QSize availableScreenSize() const;
  QString layoutSettingsKey() const;  // "window/<W>x<H>/" of the available screen area
  void storeLayout();
  void restoreLayout();
  void prepareRunViews();     // plots and evaluation cleared for a live run, its threads set
  void enterTrainingState();  // the document read-only and the actions of a running run
  void createModelMenu();     // Model > Analyze Network (main_window_analyzer.cpp)
  void createExperimentDock();  // main_window_experiment.cpp
  // The graph `target` (the document's with some attributes changed) set on the document
  // attribute by attribute, as the property editor would, in one undo step named `text`.
  void setChangedAttributes(const graph::Graph& target, const QString& text);
  void createPredict(QMenu* model);  // Model > Predict… (main_window_predict.cpp)
  void updatePredictAction();
  void connectAnalyzer();     // its node links and status-bar totals (main_window_analyzer.cpp)
  // The open project's per-layer profiles listed in the analyzer's profile panel (none without a
  // project); a stored profile that cannot be read is left out with a status-bar message.
  void showStoredProfiles();
  void storeProfile(const graph::LayerProfile& profile);  // in the open project (schema 12)
  void createProjectDocks();   // dataset and runs (main_window_file.cpp)
  void connectFileActions();
  void createActions();
  void createMenus();
  void createFind(QMenu* edit);
  void createTransferActions(QMenu* edit);  // main_window_transfer.cpp
  void updateTitle();
  void updateTrainState();
  // What blocks training, with the node each reason is about (-1: none): training_problems()
  // and a missing data set; blockerTexts gives the sentences (analysis problems prefixed
  // with their node's name).
  std::vector<graph::Problem> trainProblems() const;
  // After the user chose another dataset and it was read: the graph's Input shape and class
  // scores follow it (one undo step; the log names each change).
  void fitGraphToDataset();
  bool fitPending_ = false;
  QStringList blockerTexts(const std::vector<graph::Problem>& problems) const;
  void updateRecentMenu();
  void addRecent(const QString& path);
  bool maybeSave();  // true when it is fine to discard the document
  void loadProjectIntoUi();
  void useProjectIndexStore();  // the Dataset panel keeps image folder indexes in project_ (none without)
  void connectRuns();
  bool showRun(int64_t run, bool requested);
  void showLatestResults();
  void setEvaluationCaption(int64_t run, const QString& name);
  void purgeDeletedRuns();
  void storeSettings();
  void showError(const QString& title, const QString& text);
  void onTrainingFinished(qint64 run, const QString& status, const QString& message);
  void createOnnxActions(QMenu* file);  // main_window_onnx.cpp
  QString choosePath(const QString& title, const QString& filter, PathKind kind);
  bool refuseExport(const QString& title);  // true (and the problems shown) when the graph has problems
  // The weights to export and where they come from (`source`, for the log); ValueError when
  // imported weights are missing.
  // *run: the run whose weights they are (0: none).
  nn::StateDict exportState(const graph::Graph& g, QString* source, int64_t* run = nullptr) const;
#ifdef KILN_HAVE_ONNX
  // Run `run`'s predictor for an export with its preprocessing; null when the menu's "Export with
  // the Run's Preprocessing" is off, there is no run (run <= 0), or, with a warning in the log,
  // the run has none that exports (a text run) or it cannot be rebuilt (its dataset is gone).
  std::shared_ptr<RunPredictor> exportPredictor(int64_t run) const;
  // `bytes` (an exported model) with run `run`'s preprocessing in front (exportPredictor gives it),
  // `source` extended to say so; unchanged without one.
  std::string withRunPreprocessing(const std::string& bytes, int64_t run, QString* source) const;
#endif

  GraphDocument* document_;
  GraphCanvas* canvas_;
  LayerPalette* palette_;
  PropertyEditor* properties_;
  ProblemsPanel* problems_;
  QUndoView* history_;
  TrainingPanel* trainingPanel_;
  LivePlots* plots_;
  EvaluationView* evaluation_;
  LogPanel* log_;
  DatasetPanel* dataset_ = nullptr;
  RunsView* runs_ = nullptr;
  NetworkAnalyzer* analyzer_ = nullptr;
  ExperimentView* experiment_ = nullptr;
  QAction* experimentsAction_ = nullptr;
  QLabel* analyzerStatus_ = nullptr;  // permanent in the status bar: the analyzer's totals
  QAction* analyzeAction_ = nullptr;
  int64_t shownRun_ = 0;
  TrainingSession* session_;
  std::optional<projects::Project> project_;
  QString documentName_;
  QTimer autosaveTimer_;
  bool silent_ = false;
  int64_t testImages_ = 10000;
  QString lastError_;

  QAction *newAction_, *openAction_, *saveAction_, *saveAsAction_, *quitAction_;
  QAction *undoAction_, *redoAction_, *copyAction_, *pasteAction_, *deleteAction_, *selectAllAction_, *layoutAction_;
  QAction *undoToolAction_, *redoToolAction_;
  QAction* findAction_ = nullptr;
  QAction* predictAction_ = nullptr;
  PredictionView* predictionView_ = nullptr;  // in its own window, made by the first Predict
  bool predicting_ = false;
  QStringList predictedFiles_;  // the files of the last Predict, predicted again when the explanation changes
  QLineEdit* findEdit_ = nullptr;  // the toolbar's: fixed text "Undo" / "Redo"
  QAction *trainAction_, *pauseAction_, *stopAction_, *fitAction_, *resetLayoutAction_;
  QMenu *recentMenu_, *viewMenu_, *templateMenu_;
  PathChooser pathChooser_;
  QuestionAsker questionAsker_;
  QString importedFrom_;  // the .onnx file of the imported document ("" for others)
  nn::StateDict importedState_;  // the last imported model's initializers ("<node>.value")
  QAction *importOnnxAction_ = nullptr, *exportOnnxAction_ = nullptr, *exportCppAction_ = nullptr;
  QAction* exportPreprocessingAction_ = nullptr;
};

}  // namespace kiln::studio
