// Kiln Studio under bad input (issue 15, "Bad input"): the window resized to its minimum
// and back while a run trains loses no control (Train / Pause / Stop, the progress bar, the
// four bottom tabs stay on screen and usable) and the run finishes; a 10,000-character text
// (or the largest number) typed into every editable field of the docks (Properties with a
// node selected, Training, Dataset, Layers search, the toolbar's Find) neither crashes nor
// widens the window nor pushes actions off the toolbar, and what the graph cannot take is
// refused with a visible message or blocks Train with its reason.
#include <QAbstractSpinBox>
#include <QAction>
#include <QClipboard>
#include <QComboBox>
#include <QDockWidget>
#include <QGuiApplication>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QTabBar>
#include <QToolBar>
#include <QToolButton>
#include <QUndoStack>
#include <QtTest>

#include "app/studio/main_window.h"
#include "widgets/project/dataset_panel.h"
#include "engine/graph/json.h"
#include "projects/project.h"
#include "studio_test_util.h"
#include "widgets/graph/graph_canvas.h"
#include "widgets/graph/graph_document.h"
#include "widgets/graph/property_editor.h"
#include "widgets/training/training_panel.h"

using namespace kiln::studio;

namespace {

QRect inWindow(const QWidget* w, const QWidget* win) { return QRect(w->mapTo(win, QPoint(0, 0)), w->size()); }

// On screen: shown, not zero-sized, inside the window and not entirely covered or scrolled away.
QString notShown(const QWidget* w, const QWidget* win, const QString& what) {
  if (!w) return what + " does not exist";
  if (!w->isVisible()) return what + " is hidden";
  if (w->width() < 4 || w->height() < 4) return what + QString(" is %1x%2").arg(w->width()).arg(w->height());
  const QRect r = inWindow(w, win);
  if (!win->rect().contains(r))
    return what + QString(" at %1,%2 %3x%4 leaves the %5x%6 window")
                      .arg(r.x()).arg(r.y()).arg(r.width()).arg(r.height()).arg(win->width()).arg(win->height());
  if (w->visibleRegion().isEmpty()) return what + " is covered";
  return {};
}

QToolBar* mainToolBar(const QWidget& w) { return w.findChild<QToolBar*>("toolbar-main"); }

QToolButton* toolButton(const QWidget& w, const QString& text) {
  for (QToolButton* b : mainToolBar(w)->findChildren<QToolButton*>())
    if (b->defaultAction() && b->defaultAction()->text().remove('&') == text) return b;
  return nullptr;
}

// A toolbar action is reachable: its button is on screen, or (narrow window) the toolbar's
// overflow button is, which lists it.
QString unreachable(const QWidget& w, const QString& text) {
  QToolButton* b = toolButton(w, text);
  if (!b) return text + " is not on the toolbar";
  if (notShown(b, &w, text).isEmpty()) return {};
  QToolButton* more = mainToolBar(w)->findChild<QToolButton*>("qt_toolbar_ext_button");
  if (more && notShown(more, &w, "overflow").isEmpty()) return {};
  return notShown(b, &w, text);
}

// The four bottom tabs are on screen, and choosing each shows its dock on screen.
QString bottomTabsProblem(MainWindow& w) {
  const QList<std::pair<QString, QString>> tabs = {{"Plots", "plots"}, {"Evaluation", "evaluation"}, {"Log", "log"}, {"Runs", "runs"}};
  QTabBar* bar = nullptr;
  for (QTabBar* b : w.findChildren<QTabBar*>())
    for (int i = 0; i < b->count(); ++i)
      if (b->isVisible() && b->tabText(i) == "Plots") bar = b;
  if (!bar) return "no visible tab bar with Plots";
  const int current = bar->currentIndex();
  QString problem;
  for (const auto& [title, name] : tabs) {
    int index = -1;
    for (int i = 0; i < bar->count(); ++i)
      if (bar->tabText(i).startsWith(title)) index = i;  // "Evaluation — run 4 ..."
    if (index < 0) return title + " is not a bottom tab";
    const QRect tab(bar->mapTo(&w, bar->tabRect(index).topLeft()), bar->tabRect(index).size());
    if (!w.rect().contains(tab) || tab.width() < 8) return title + " tab is off-screen or squashed";
    QTest::mouseClick(bar, Qt::LeftButton, {}, bar->tabRect(index).center());
    (void)QTest::qWaitFor([&] { return notShown(w.dock(name), &w, title).isEmpty(); }, 1000);
    if (problem.isEmpty()) problem = notShown(w.dock(name), &w, title + " dock");
  }
  bar->setCurrentIndex(current);
  QCoreApplication::processEvents();
  return problem;
}

// The window's controls for a run are on screen: the toolbar's Train / Pause / Stop, the
// Training panel's buttons and progress bar, and the bottom tabs.
QString runControlsProblem(MainWindow& w) {
  for (const QString text : {"Train", "Pause", "Stop"})
    if (QString why = unreachable(w, text); !why.isEmpty()) return why;
  TrainingPanel* panel = w.trainingPanel();
  const std::pair<const QWidget*, QString> controls[] = {{panel->startButton(), "Train button"},
                                                          {panel->pauseButton(), "Pause button"},
                                                          {panel->stopButton(), "Stop button"},
                                                          {panel->findChild<QProgressBar*>(), "progress bar"}};
  for (const auto& [b, what] : controls)
    if (QString why = notShown(b, &w, what); !why.isEmpty()) return why;
  return bottomTabsProblem(w);
}

kiln::graph::NodeId nodeNamed(const kiln::graph::Graph& g, const std::string& name) {
  for (const auto& n : g.nodes())
    if (n.name == name) return n.id;
  return -1;
}

// The enabled editable fields of the docks and the toolbar (a spin box's or combo box's own line
// edit counts as that box), in a stable order.
// Whether `f` sits in a part of the Dataset panel hidden for the chosen source.
bool hiddenInDatasetPanel(QWidget* f) {
  bool hidden = false;
  for (QWidget* p = f; p; p = p->parentWidget()) {
    if (qobject_cast<kiln::studio::DatasetPanel*>(p)) return hidden;
    hidden = hidden || p->isHidden();
  }
  return false;
}

QList<QWidget*> editableFields(const MainWindow& w) {
  QList<QWidget*> out;
  for (QWidget* f : w.findChildren<QWidget*>()) {
    if (!f->isEnabled()) continue;  // e.g. Momentum with Adam
    if (hiddenInDatasetPanel(f)) continue;  // the Dataset panel's path and CSV options with Fashion-MNIST chosen
    if (auto* e = qobject_cast<QLineEdit*>(f)) {
      if (qobject_cast<QAbstractSpinBox*>(e->parentWidget())) continue;
      if (auto* c = qobject_cast<QComboBox*>(e->parentWidget()); c && c->isEditable()) continue;
      if (!e->isReadOnly()) out << f;
    } else if (auto* t = qobject_cast<QPlainTextEdit*>(f); t && !t->isReadOnly()) {
      out << f;
    } else if (auto* s = qobject_cast<QAbstractSpinBox*>(f); s && !s->isReadOnly()) {
      out << f;
    } else if (auto* c = qobject_cast<QComboBox*>(f); c && c->isEditable()) {
      out << f;
    }
  }
  return out;
}

QString describe(const QWidget* f) {
  QString name = f->metaObject()->className();
  for (const QLabel* l : f->window()->findChildren<QLabel*>())
    if (l->buddy() == f) name += " '" + l->text() + "'";
  if (!f->objectName().isEmpty()) name += " '" + f->objectName() + "'";
  for (const QWidget* p = f; p; p = p->parentWidget())
    if (auto* d = qobject_cast<const QDockWidget*>(p)) return name + " in " + d->windowTitle();
  return name;
}

// Shows the dock that holds `f` (docks share tabs at 1280x720).
void raiseDockOf(QWidget* f) {
  for (QWidget* p = f; p; p = p->parentWidget())
    if (auto* d = qobject_cast<QDockWidget*>(p)) d->raise();
  QCoreApplication::processEvents();
}

// Pastes `text` over the field's contents (as a user's Ctrl+V: the validator applies) and
// commits it with Enter and a focus change.
void pasteAndCommit(QWidget* field, QWidget* elsewhere, const QString& text) {
  raiseDockOf(field);
  field->setFocus(Qt::TabFocusReason);
  QCoreApplication::processEvents();
  QGuiApplication::clipboard()->setText(text);
  QTest::keySequence(field->focusProxy() ? field->focusProxy() : field, QKeySequence::SelectAll);
  QTest::keySequence(field->focusProxy() ? field->focusProxy() : field, QKeySequence::Paste);
  QTest::keyClick(field, Qt::Key_Return);
  elsewhere->setFocus(Qt::TabFocusReason);
  QCoreApplication::processEvents();
}

}  // namespace

class TestStudioBadInput : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("KilnTest");
    QCoreApplication::setApplicationName("test_studio_bad_input");
    QSettings().clear();
  }
  void cleanup() { QSettings().clear(); }

  // Resized to its minimum and to 1280x720, back and forth, while it trains.
  void resizeToTheMinimumWhileTraining() {
    KILN_QSKIP_UNLESS_DEP(test::haveFashionMnist(), "dataset-fashion-mnist", "no Fashion-MNIST in /usr/share/datasets/fashion-mnist");
    QTemporaryDir dir;
    MainWindow w;
    w.setSilent(true);
    w.applyDefaultLayout(QSize(1280, 720));
    w.resize(1280, 720);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.newProjectFile(dir.filePath("resize.kiln"), "fashion_mnist_mlp"));
    test::quickSettings(w, 1024);
    QVERIFY2(w.startTraining(), qPrintable(w.lastError()));
    int whileRunning = 0, pausedAtMinimum = 0;
    QSize minimum;
    for (int cycle = 0; cycle < 400 && w.session()->isRunning(); ++cycle) {
      w.resize(1, 1);  // clamped to the window's minimum size
      QCoreApplication::processEvents();
      minimum = w.size();
      QVERIFY2(minimum.width() <= 1280 && minimum.height() <= 720,
               qPrintable(QString("minimum %1x%2").arg(minimum.width()).arg(minimum.height())));
      if (!w.session()->isRunning()) break;
      const QString problem = runControlsProblem(w);
      QVERIFY2(problem.isEmpty(), qPrintable(QString("at %1x%2: ").arg(minimum.width()).arg(minimum.height()) + problem));
      ++whileRunning;
      if (cycle == 1) {  // the panel's Pause and Resume are usable at the minimum size
        QPushButton* pause = w.trainingPanel()->pauseButton();
        QTest::mouseClick(pause, Qt::LeftButton);
        QVERIFY(w.session()->isPaused());
        QTest::qWait(50);
        QTest::mouseClick(pause, Qt::LeftButton);
        QVERIFY(!w.session()->isPaused());
        ++pausedAtMinimum;
      }
      w.resize(1280, 720);
      QCoreApplication::processEvents();
      QCOMPARE(w.size(), QSize(1280, 720));
      const QString large = runControlsProblem(w);
      QVERIFY2(large.isEmpty(), qPrintable("at 1280x720: " + large));
    }
    qInfo("minimum size %dx%d, checked %d times while training", minimum.width(), minimum.height(), whileRunning);
    QVERIFY2(whileRunning >= 3, "the run ended before the window was resized three times");
    QCOMPARE(pausedAtMinimum, 1);
    QTRY_VERIFY_WITH_TIMEOUT(!w.session()->isRunning(), 120000);
    QVERIFY2(w.lastError().isEmpty(), qPrintable(w.lastError()));
    const auto runs = w.project()->runs();
    QCOMPARE(runs.size(), size_t(1));
    QCOMPARE(runs[0].status, kiln::projects::RunStatus::finished);
    w.resize(1, 1);
    QCoreApplication::processEvents();
    QCOMPARE(w.size(), minimum);
    const QString after = runControlsProblem(w);
    QVERIFY2(after.isEmpty(), qPrintable("after the run: " + after));
    QVERIFY(w.trainAction()->isEnabled());
  }

  // 10,000 characters (letters, digits, an integer list), then the largest number, in every
  // editable field; each field alone (the graph and the settings restored after it). Text a
  // field cannot hold is refused as typed (validators) or, for Conv2d's integer lists, with a
  // message in Properties that stays after focus leaves; a number the graph cannot train
  // (2147483647 channels) blocks Train with its reason; the window stays 1280 px wide.
  void longTextInEveryField() {
    MainWindow w;
    w.setSilent(true);
    w.newFromTemplate("fashion_mnist_cnn");
    w.applyDefaultLayout(QSize(1280, 720));
    w.resize(1280, 720);
    w.show();
    w.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&w));
    GraphDocument* doc = w.document();
    const kiln::graph::NodeId conv = nodeNamed(doc->graph(), "conv1");
    w.canvas()->selectNode(conv);
    auto* editor = w.findChild<PropertyEditor*>();
    QCOMPARE(editor->node(), conv);
    QVERIFY(w.trainAction()->isEnabled());
    const std::string original = kiln::graph::to_json(doc->graph());
    const TrainingConfig config = w.trainingPanel()->config();
    const DatasetSettings data = w.datasetSettings();
    // A field by its label or attribute: the property editor rebuilds its rows.
    auto fieldsByName = [&] {
      QMap<QString, QWidget*> out;
      for (QWidget* f : editableFields(w)) {
        QString what = describe(f);
        for (const auto& [attribute, value] : doc->graph().node(conv).attrs)
          if (editor->editor(QString::fromStdString(attribute)) == f) what += " '" + QString::fromStdString(attribute) + "'";
        if (f == editor->nameEdit()) what += " 'name'";
        out.insert(what, f);
      }
      return out;
    };
    const QStringList names = fieldsByName().keys();
    // Properties: the name and Conv2d's 7 attributes; Training: learning rate, weight decay,
    // epochs, batch size, seed; Dataset: 2 sizes; the Layers search; Find.
    QVERIFY2(names.size() >= 17, qPrintable(names.join(", ")));
    for (const QString part : {"'name'", "'out_channels'", "'kernel_size'", "Learning rate", "Batch size", "Training images", "findNode"})
      QVERIFY2(names.filter(part).size() == 1, qPrintable(part + " not in " + names.join(", ")));
    QString list;
    while (list.size() < 10000) list += "3, ";
    const QStringList texts = {QString(10000, 'x'), QString(10000, '9'), list};
    int accepted = 0, refused = 0, blocked = 0;
    for (const QString& what : names) {
      for (int input = 0; input < texts.size() + 1; ++input) {
        QPointer<QWidget> field = fieldsByName().value(what);
        QVERIFY2(field, qPrintable(what + " is gone"));
        auto* spin = qobject_cast<QAbstractSpinBox*>(field.data());
        if (input == texts.size() && !spin) break;
        QString text = input < texts.size() ? texts[input] : QString();
        if (auto* s = qobject_cast<QSpinBox*>(field.data()); s && text.isEmpty()) text = QString::number(s->maximum());
        if (auto* s = qobject_cast<QDoubleSpinBox*>(field.data()); s && text.isEmpty()) text = s->textFromValue(s->maximum());
        const QString tag = what + QString(" <- %1 x '%2'").arg(text.size()).arg(text.left(3));
        const int undo = doc->undoStack()->index();
        pasteAndCommit(field, w.canvas(), text);
        // The layout holds: the window as wide as it was, the toolbar's actions on it.
        QVERIFY2(w.width() == 1280 && w.minimumSizeHint().width() <= 1280,
                 qPrintable(tag + QString(": window %1 wide, minimum %2").arg(w.width()).arg(w.minimumSizeHint().width())));
        for (const QString action : {"Undo", "Redo", "Train", "Pause", "Stop"}) {
          const QString why = notShown(toolButton(w, action), &w, action);
          QVERIFY2(why.isEmpty(), qPrintable(tag + ": " + why));
        }
        if (field)  // it may scroll out of view in its dock, but never grows wider than the window
          QVERIFY2(field->isVisible() && field->width() < w.width(), qPrintable(tag + QString(": %1 px wide").arg(field->width())));
        QVERIFY2(w.findField()->width() <= 220, qPrintable(QString::number(w.findField()->width())));
        QVERIFY2(w.undoAction()->text().size() < 100, qPrintable(tag + ": " + w.undoAction()->text().left(200)));

        const bool graphChanged = doc->undoStack()->index() != undo;
        const bool settingsChanged = w.trainingPanel()->config().to_json() != config.to_json() ||
                                     w.datasetSettings().to_json() != data.to_json();
        if (spin && input < texts.size())  // not a number in range: refused as typed
          QVERIFY2(!graphChanged && !settingsChanged, qPrintable(tag + ": accepted"));
        if (spin && input == texts.size()) {  // its maximum: taken, and Train blocked when the graph cannot train it
          // (Training images' maximum is its value: the 60,000 images less the validation ones.)
          // (The Network Analyzer's batch size is a setting of its view only: its totals follow.)
          const bool analyzed = what.contains("Network Analyzer") &&
                                w.analyzerStatusText().endsWith(QString("at batch %1").arg(text));
          // (The Compare Devices dock's batch size is a setting of that dock: it takes the value.)
          const auto* intSpin = qobject_cast<QSpinBox*>(field.data());
          const bool dockSetting = what.contains("Compare Devices") && intSpin && intSpin->value() == text.toInt();
          QVERIFY2(graphChanged || settingsChanged || analyzed || dockSetting || what.contains("Training images"),
                   qPrintable(tag + ": refused"));
          if (graphChanged) {
            QVERIFY2(!w.trainAction()->isEnabled() && w.trainAction()->toolTip().contains(QRegularExpression("conv[12]")),
                     qPrintable(tag + ": Train stays enabled: " + w.trainAction()->toolTip()));
            ++blocked;
          }
        }
        if (what.contains("'kernel_size'") && input > 0) {  // digits: not a list of int64 values or not 2 of them
          QVERIFY2(!graphChanged, qPrintable(tag + ": accepted"));
          QVERIFY2(editor->errorText().startsWith("kernel_size: ") && editor->errorText().size() < 200,
                   qPrintable(tag + ": message '" + editor->errorText().left(300) + "'"));
          const QLabel* message = nullptr;
          for (const QLabel* l : editor->findChildren<QLabel*>())
            if (l->text() == editor->errorText()) message = l;
          QVERIFY2(message && message->isVisible() && message->width() < w.width(), qPrintable(tag + ": the message is not shown"));
        }
        if (what.contains("'name'") && input == 0) {  // 10,000 letters: an identifier, taken and shown elided
          QVERIFY2(graphChanged && doc->graph().node(conv).name.size() == 10000, qPrintable(tag));
          QVERIFY(w.trainAction()->isEnabled());
        }
        qInfo("%s: graph %s, settings %s, message '%s', train %s", qPrintable(tag), graphChanged ? "changed" : "same",
              settingsChanged ? "changed" : "same", qPrintable(editor->errorText().left(80)),
              w.trainAction()->isEnabled() ? "enabled" : qPrintable("blocked: " + w.trainAction()->toolTip().left(200)));
        (graphChanged || settingsChanged ? accepted : refused)++;
        doc->undoStack()->setIndex(undo);
        w.trainingPanel()->setConfig(config);
        w.setDatasetSettings(data);
        QCoreApplication::processEvents();
      }
    }
    QCOMPARE(kiln::graph::to_json(doc->graph()), original);
    QVERIFY(w.trainAction()->isEnabled());
    QVERIFY2(blocked >= 3, qPrintable(QString::number(blocked)));  // in_channels, out_channels, groups
    qInfo("%d fields: %d inputs accepted, %d refused, %d blocked Train", int(names.size()), accepted, refused, blocked);
  }
};

QTEST_MAIN(TestStudioBadInput)
#include "test_studio_bad_input.moc"
