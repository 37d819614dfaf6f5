#include "app/studio/main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QGraphicsItem>
#include <QGraphicsScene>
#include <QCompleter>
#include <QLineEdit>
#include <QMenuBar>
#include <QStringListModel>
#include <QMessageBox>
#include <QProxyStyle>
#include <QPushButton>
#include <QScreen>
#include <QStatusBar>
#include <QStyleFactory>
#include <QToolBar>
#include <QUndoStack>
#include <utility>

#include "app/studio/experiment_view.h"
#include "app/studio/templates.h"
#include "app/studio/training_job.h"
#include "engine/graph/json.h"
#include "widgets/graph/graph_canvas.h"
#include "widgets/graph/graph_document.h"
#include "widgets/graph/layer_palette.h"
#include "widgets/graph/problems_panel.h"
#include "widgets/graph/property_editor.h"
#include "widgets/project/runs_view.h"
#include "widgets/training/evaluation_view.h"
#include "widgets/training/live_plots.h"
#include "widgets/training/log_panel.h"
#include "widgets/training/training_panel.h"

namespace kiln::studio {

namespace {
// Fusion with no etched disabled text. Etching draws a disabled menu item's text twice: in the
// palette's Light colour one pixel down and right, then in the disabled text colour — a relief
// meant for light palettes. On the Studio's dark palette the light copy read as a second, offset
// text (File > Open Recent with no recent files); the disabled colour alone is legible.
class StudioStyle : public QProxyStyle {
 public:
  using QProxyStyle::QProxyStyle;
  int styleHint(StyleHint hint, const QStyleOption* option, const QWidget* widget, QStyleHintReturn* ret) const override {
    if (hint == SH_EtchDisabledText) return 0;
    return QProxyStyle::styleHint(hint, option, widget, ret);
  }
};
}  // namespace

void MainWindow::applyStyle() {
  QApplication::setStyle(new StudioStyle(QStyleFactory::create("Fusion")));
  QPalette p;
  const QColor window(45, 47, 51), base(32, 34, 37), text(222, 224, 228), button(55, 58, 63), highlight(64, 128, 214);
  p.setColor(QPalette::Window, window);
  p.setColor(QPalette::WindowText, text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, window);
  p.setColor(QPalette::ToolTipBase, QColor(60, 63, 68));
  p.setColor(QPalette::ToolTipText, text);
  p.setColor(QPalette::PlaceholderText, QColor(140, 143, 148));
  p.setColor(QPalette::Text, text);
  p.setColor(QPalette::Button, button);
  p.setColor(QPalette::ButtonText, text);
  p.setColor(QPalette::BrightText, Qt::red);
  p.setColor(QPalette::Link, highlight.lighter(130));
  p.setColor(QPalette::Highlight, highlight);
  p.setColor(QPalette::HighlightedText, Qt::white);
  for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
    p.setColor(QPalette::Disabled, role, QColor(120, 122, 126));
  QApplication::setPalette(p);
}

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  initResources();
  setWindowIcon(QIcon(":/icons/kiln.svg"));
  setObjectName("KilnStudioMainWindow");
  document_ = new GraphDocument(this);
  canvas_ = new GraphCanvas(document_, this);
  setCentralWidget(canvas_);
  session_ = new TrainingSession(this);
  createDocks();
  createActions();
  createMenus();
  setDockNestingEnabled(true);
  applyDefaultLayout(availableScreenSize());
  resize(defaultWindowSize());  // after the docks: arranging them in a hidden window may widen it
  restoreLayout();

  connect(document_, &GraphDocument::changed, this, &MainWindow::updateTrainState);
  connect(document_->undoStack(), &QUndoStack::cleanChanged, this, [this](bool clean) { setWindowModified(!clean); });
  connect(canvas_, &GraphCanvas::selectionChanged, properties_, &PropertyEditor::setSelection);
  connect(canvas_, &GraphCanvas::message, this, [this](const QString& m) { statusBar()->showMessage(m, 6000); });
  connect(palette_, &LayerPalette::layerActivated, canvas_, &GraphCanvas::addLayer);
  connect(problems_, &ProblemsPanel::nodeActivated, canvas_, &GraphCanvas::selectNode);
  connectAnalyzer();  // main_window_analyzer.cpp

  connect(trainingPanel_, &TrainingPanel::startRequested, this, &MainWindow::startTraining);
  connect(trainingPanel_, &TrainingPanel::configChanged, this, &MainWindow::updateTrainState);  // the batch size
  connect(trainingPanel_, &TrainingPanel::pauseRequested, this, &MainWindow::setTrainingPaused);
  connect(trainingPanel_, &TrainingPanel::stopRequested, stopAction_, &QAction::trigger);
  connect(session_, &TrainingSession::stepsAdded, plots_, &LivePlots::addSteps);
  connect(session_, &TrainingSession::epochEnded, plots_, &LivePlots::addEpoch);
  connect(session_, &TrainingSession::progressChanged, this, [this](const TrainingSession::Progress& p) {
    const auto phase = p.phase == RunProgress::Phase::Validating ? TrainingPanel::Phase::Validating
                       : p.phase == RunProgress::Phase::Testing  ? TrainingPanel::Phase::Testing
                                                                 : TrainingPanel::Phase::Training;
    trainingPanel_->setProgress(p.step, p.totalSteps, p.epoch, p.epochs, p.imagesPerSecond, p.etaSeconds, phase,
                                p.phaseFraction);
  });
  connect(session_, &TrainingSession::logMessage, log_, &LogPanel::info);
  connect(session_, &TrainingSession::errorMessage, this, [this](const QString& m) {
    log_->error(m);
    lastError_ = m;
  });
  connect(session_, &TrainingSession::evaluated, evaluation_, &EvaluationView::setResult);
  connect(session_, &TrainingSession::finished, this, &MainWindow::onTrainingFinished);
  connect(session_, &TrainingSession::started, this, [this](qint64 run, const QString& device) {
    log_->info(tr("run %1 started on %2").arg(run).arg(device));
    runs_->refresh();
  });

  autosaveTimer_.setInterval(kAutosaveIntervalMs);
  connect(&autosaveTimer_, &QTimer::timeout, this, &MainWindow::autosave);
  autosaveTimer_.start();
  statusBar()->showMessage(tr("Drag layers from the Layers panel onto the canvas; connect ports by dragging; then press Train."));
  updateTitle();
  updateTrainState();
}

QSize MainWindow::defaultWindowSize() const {
  // A compact screen's whole available area (without task bars): at 90% of 1366x768 the
  // Training form showed two fields. Larger screens: 90% of it, at most 1600x1000.
  const QSize cap(1600, 1000);
  const QScreen* s = screen() ? screen() : QGuiApplication::primaryScreen();
  if (!s) return cap;
  const QSize avail = s->availableGeometry().size();
  if (isCompactScreen(avail)) return avail;
  return QSize(avail.width() * 9 / 10, avail.height() * 9 / 10).boundedTo(cap);
}

void MainWindow::newEmpty() {
  if (session_->isRunning()) return showError(tr("Training is running"), tr("Stop the training run first."));
  if (sweepRunning()) return showError(tr("A sweep is running"), tr("Stop the sweep first (Experiments)."));
  if (!maybeSave()) return;
  try {
    graph::Graph g = graph::from_json(R"({"format": "kiln-graph", "version": 1, "name": "Untitled", "edges": [],
      "nodes": [
        {"attrs": {"dtype": "f32", "shape": [1, 28, 28]}, "id": 1, "name": "image", "op": "Input", "x": 0.0, "y": 0.0},
        {"attrs": {}, "id": 2, "name": "logits", "op": "Output", "x": 0.0, "y": 480.0}]})");
    purgeDeletedRuns();
    project_.reset();
    document_->setGraph(g);
    documentName_ = tr("Untitled");
    setDatasetSettings(DatasetSettings{});
    trainingPanel_->setConfig(TrainingConfig{});
    loadProjectIntoUi();
    canvas_->fitAll();
    log_->info(tr("new empty graph (Input [1,28,28] and Output); add layers from the Layers panel and connect them"));
  } catch (const std::exception& e) {
    showError(tr("New"), QString::fromStdString(plain_error(e)));
  }
}

MainWindow::~MainWindow() {
  // The session ends a running run (cancel, wait, end_run) while the project is still open.
  QObject::disconnect(session_, nullptr, nullptr, nullptr);
  delete session_;
  experiment_->shutdown();  // a running sweep's trials end (stopped) while the project is open
  purgeDeletedRuns();
}

QString MainWindow::boundedCommandText(const QString& text) {
  return QFontMetrics(QApplication::font("QMenu")).elidedText(text, Qt::ElideMiddle, kMaxCommandTextWidth);
}

void MainWindow::createActions() {
  newAction_ = new QAction(QIcon::fromTheme("document-new"), tr("&New"), this);
  newAction_->setShortcut(QKeySequence::New);
  newAction_->setStatusTip(tr("An empty graph: an Input and an Output node; add layers from the Layers panel"));
  connect(newAction_, &QAction::triggered, this, &MainWindow::newEmpty);
  openAction_ = new QAction(QIcon::fromTheme("document-open"), tr("&Open..."), this);
  openAction_->setShortcut(QKeySequence::Open);
  saveAction_ = new QAction(QIcon::fromTheme("document-save"), tr("&Save"), this);
  saveAction_->setShortcut(QKeySequence::Save);
  saveAsAction_ = new QAction(tr("Save &As..."), this);
  saveAsAction_->setShortcut(QKeySequence::SaveAs);
  quitAction_ = new QAction(tr("&Quit"), this);
  quitAction_->setShortcut(QKeySequence::Quit);
  connect(quitAction_, &QAction::triggered, this, &QWidget::close);

  QUndoStack* stack = document_->undoStack();
  undoAction_ = stack->createUndoAction(this, tr("&Undo"));
  undoAction_->setShortcut(QKeySequence::Undo);
  redoAction_ = stack->createRedoAction(this, tr("&Redo"));
  redoAction_->setShortcut(QKeySequence::Redo);
  // The menu entries name the command ("Undo Rename conv1 to …"), shortened to
  // kMaxCommandTextWidth px so that a long node name cannot stretch the Edit menu. These
  // connections come after QUndoStack's own, so their text wins.
  connect(stack, &QUndoStack::undoTextChanged, undoAction_, [a = undoAction_](const QString& t) {
    a->setText(t.isEmpty() ? tr("&Undo") : tr("&Undo %1").arg(boundedCommandText(t)));
  });
  connect(stack, &QUndoStack::redoTextChanged, redoAction_, [a = redoAction_](const QString& t) {
    a->setText(t.isEmpty() ? tr("&Redo") : tr("&Redo %1").arg(boundedCommandText(t)));
  });
  // The toolbar's buttons keep a fixed text and icon (the command is in their tooltip), so
  // that an edit never shifts the toolbar; they follow the menu actions' enabled state.
  undoToolAction_ = new QAction(QIcon::fromTheme("edit-undo", style()->standardIcon(QStyle::SP_ArrowBack)), tr("Undo"), this);
  redoToolAction_ = new QAction(QIcon::fromTheme("edit-redo", style()->standardIcon(QStyle::SP_ArrowForward)), tr("Redo"), this);
  for (auto [tool, menu] : {std::pair{undoToolAction_, undoAction_}, std::pair{redoToolAction_, redoAction_}}) {
    connect(tool, &QAction::triggered, menu, &QAction::trigger);
    auto sync = [tool, menu] {
      tool->setEnabled(menu->isEnabled());
      tool->setToolTip(QString(menu->text()).remove('&') + " (" + menu->shortcut().toString(QKeySequence::NativeText) + ")");
    };
    connect(menu, &QAction::changed, tool, sync);
    sync();
  }
  copyAction_ = new QAction(tr("&Copy"), this);
  copyAction_->setShortcut(QKeySequence::Copy);
  connect(copyAction_, &QAction::triggered, canvas_, &GraphCanvas::copySelection);
  pasteAction_ = new QAction(tr("&Paste"), this);
  pasteAction_->setShortcut(QKeySequence::Paste);
  connect(pasteAction_, &QAction::triggered, canvas_, &GraphCanvas::pasteClipboard);
  deleteAction_ = new QAction(tr("&Delete"), this);
  deleteAction_->setShortcut(QKeySequence::Delete);
  connect(deleteAction_, &QAction::triggered, canvas_, &GraphCanvas::deleteSelection);
  selectAllAction_ = new QAction(tr("Select &All"), this);
  selectAllAction_->setShortcut(QKeySequence::SelectAll);
  connect(selectAllAction_, &QAction::triggered, this, [this] {
    for (QGraphicsItem* item : canvas_->scene()->items())
      if (item->flags() & QGraphicsItem::ItemIsSelectable) item->setSelected(true);
  });
  layoutAction_ = new QAction(tr("Auto &Layout"), this);
  layoutAction_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_L));
  connect(layoutAction_, &QAction::triggered, this, [this] {
    if (!document_->autoLayout() && !document_->isReadOnly())
      statusBar()->showMessage(tr("Auto Layout: the graph is already laid out (layers top to bottom)"), 6000);
    canvas_->fitAll();
  });
  for (QAction* a : {copyAction_, pasteAction_, deleteAction_, selectAllAction_})
    a->setShortcutContext(Qt::WidgetWithChildrenShortcut), canvas_->addAction(a);

  fitAction_ = new QAction(tr("&Fit Graph in View"), this);
  fitAction_->setShortcut(QKeySequence(Qt::Key_F));
  fitAction_->setShortcutContext(Qt::WidgetWithChildrenShortcut);
  canvas_->addAction(fitAction_);
  connect(fitAction_, &QAction::triggered, canvas_, &GraphCanvas::fitAll);
  resetLayoutAction_ = new QAction(tr("&Reset Layout"), this);
  connect(resetLayoutAction_, &QAction::triggered, this, &MainWindow::resetLayout);

  trainAction_ = new QAction(style()->standardIcon(QStyle::SP_MediaPlay), tr("&Train"), this);
  trainAction_->setShortcut(QKeySequence(Qt::Key_F5));
  connect(trainAction_, &QAction::triggered, this, &MainWindow::startTraining);
  pauseAction_ = new QAction(style()->standardIcon(QStyle::SP_MediaPause), tr("&Pause"), this);
  pauseAction_->setCheckable(true);
  connect(pauseAction_, &QAction::triggered, this, &MainWindow::setTrainingPaused);
  stopAction_ = new QAction(style()->standardIcon(QStyle::SP_MediaStop), tr("&Stop"), this);
  stopAction_->setShortcut(QKeySequence(Qt::SHIFT | Qt::Key_F5));
  connect(stopAction_, &QAction::triggered, this, [this] {
    session_->stop();
    trainingPanel_->setState(TrainingPanel::State::Stopping);
    updateTrainState();
  });
  connectFileActions();
}

void MainWindow::createMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(newAction_);
  templateMenu_ = file->addMenu(tr("&New from Template"));
  for (const QString& name : templateNames()) {
    QAction* a = templateMenu_->addAction(templateTitle(name));
    connect(a, &QAction::triggered, this, [this, name] { newFromTemplate(name); });
  }
  file->addAction(openAction_);
  recentMenu_ = file->addMenu(tr("Open &Recent"));
  file->addSeparator();
  createOnnxActions(file);
  file->addAction(saveAction_);
  file->addAction(saveAsAction_);
  file->addSeparator();
  file->addAction(quitAction_);
  updateRecentMenu();

  QMenu* edit = menuBar()->addMenu(tr("&Edit"));
  for (QAction* a : {undoAction_, redoAction_}) edit->addAction(a);
  edit->addSeparator();
  for (QAction* a : {copyAction_, pasteAction_, deleteAction_, selectAllAction_}) edit->addAction(a);
  edit->addSeparator();
  edit->addAction(layoutAction_);
  createFind(edit);
  createTransferActions(edit);

  viewMenu_ = menuBar()->addMenu(tr("&View"));
  viewMenu_->addAction(fitAction_);
  viewMenu_->addSeparator();
  for (QDockWidget* d : findChildren<QDockWidget*>()) viewMenu_->addAction(d->toggleViewAction());
  viewMenu_->addSeparator();
  viewMenu_->addAction(resetLayoutAction_);

  createModelMenu();  // main_window_analyzer.cpp

  QMenu* trainMenu = menuBar()->addMenu(tr("&Train"));
  for (QAction* a : {trainAction_, pauseAction_, stopAction_}) trainMenu->addAction(a);

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&Getting Started"), this, [this] {
    QMessageBox::information(this, tr("Getting started"),
                             tr("1. Drag layers from the Layers panel onto the canvas (or double-click one).\n"
                                "2. Connect an output port (bottom edge of a node) to an input port (top edge of the next node) by dragging.\n"
                                "3. Start with an Input node and end with an Output node; the Problems panel lists "
                                "what is missing and every edge shows its shape.\n"
                                "4. Choose the settings in the Training panel and press Train: the curves appear in Plots,\n"
                                "   the test results in Evaluation, every run is kept in Runs.\n"
                                "Ctrl+wheel zooms the canvas; F fits the graph in the view."));
  });
  help->addAction(tr("&About Kiln Studio"), this, [this] {
    QMessageBox::about(this, tr("About Kiln Studio"),
                       tr("<b>Kiln Studio</b> %1<br>A workbench for neural networks on the Kiln engine.<br>"
                          "License: GPL-3.0-or-later.")
                           .arg(QCoreApplication::applicationVersion()));
  });

  QToolBar* bar = addToolBar(tr("Main"));
  bar->setObjectName("toolbar-main");
  bar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  for (QAction* a : {newAction_, openAction_, saveAction_}) bar->addAction(a);
  bar->addSeparator();
  for (QAction* a : {undoToolAction_, redoToolAction_, layoutAction_, fitAction_}) bar->addAction(a);
  bar->addSeparator();
  for (QAction* a : {trainAction_, pauseAction_, stopAction_}) bar->addAction(a);
  bar->addSeparator();
  bar->addWidget(findEdit_);
}

void MainWindow::createFind(QMenu* edit) {
  // Edit > Find Node (Ctrl+F): the toolbar's search field, its completer listing the names.
  findEdit_ = new QLineEdit(this);
  findEdit_->setObjectName("findNode");
  findEdit_->setPlaceholderText(tr("Find node (Ctrl+F)"));
  findEdit_->setClearButtonEnabled(true);
  findEdit_->setMaximumWidth(220);
  findEdit_->setToolTip(tr("Type a node's name (or part of it) and press Enter: the node is selected and centred"));
  auto* names = new QStringListModel(this);
  auto* completer = new QCompleter(names, findEdit_);
  completer->setCaseSensitivity(Qt::CaseInsensitive);
  completer->setFilterMode(Qt::MatchContains);
  findEdit_->setCompleter(completer);
  connect(document_, &GraphDocument::changed, names, [this, names] {
    QStringList list;
    for (const graph::Node& n : document_->graph().nodes()) list << toQString(n.name);
    if (list != names->stringList()) names->setStringList(list);
  });
  connect(findEdit_, &QLineEdit::returnPressed, this, [this] {
    if (canvas_->findNode(findEdit_->text()).node >= 0) canvas_->setFocus();
  });
  connect(completer, qOverload<const QString&>(&QCompleter::activated), this,
          [this](const QString& name) { canvas_->findNode(name); });
  findAction_ = new QAction(tr("&Find Node..."), this);
  findAction_->setShortcut(QKeySequence::Find);
  connect(findAction_, &QAction::triggered, this, [this] {
    findEdit_->setFocus(Qt::ShortcutFocusReason);
    findEdit_->selectAll();
  });
  edit->addSeparator();
  edit->addAction(findAction_);
}

void MainWindow::setTrainingPaused(bool on) {
  if (!session_->isRunning()) return;
  session_->setPaused(on);
  pauseAction_->setChecked(on);
  trainingPanel_->pauseButton()->setChecked(on);
  trainingPanel_->setState(on ? TrainingPanel::State::Paused : TrainingPanel::State::Running);
}

void MainWindow::showError(const QString& title, const QString& text) {
  lastError_ = text;
  log_->error(text);
  if (!silent_) QMessageBox::warning(this, title, text);
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (session_->isRunning()) {
    // Nothing trains while the question is open: the run is paused until the answer.
    const bool wasPaused = session_->isPaused();
    setTrainingPaused(true);
    const QString title = tr("Training is running"), text = tr("A training run is in progress. Stop it and quit?");
    const bool quit = questionAsker_ ? questionAsker_(title, text)
                      : silent_      ? true
                                     : QMessageBox::question(this, title, text) == QMessageBox::Yes;
    if (!quit) {
      if (!wasPaused) setTrainingPaused(false);
      event->ignore();
      return;
    }
    session_->stop();
  }
  if (sweepRunning()) {
    const QString title = tr("A sweep is running"), text = tr("A sweep is running its trials. Stop it and quit?");
    const bool quit = questionAsker_ ? questionAsker_(title, text)
                      : silent_      ? true
                                     : QMessageBox::question(this, title, text) == QMessageBox::Yes;
    if (!quit) {
      event->ignore();
      return;
    }
    experiment_->stop();  // the trials end after their batch; the window's destructor waits for them
  }
  if (!maybeSave()) {
    event->ignore();
    return;
  }
  storeLayout();
  event->accept();
}

}  // namespace kiln::studio
