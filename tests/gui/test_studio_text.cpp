// Kiln Studio's text under long input (issue 15, findings 2-4): the training status line
// stays inside the Training panel and never squashes its settings, however long the
// "Cannot train yet" reasons; a 265-character node name keeps every toolbar action on the
// toolbar and the Edit menu narrow; Ctrl+Z in a property field undoes the field's own typing
// first and then the graph's last edit; the toolbar's Undo / Redo keep a fixed text; a
// disabled menu item is drawn once (not etched).
#include <QAction>
#include <QApplication>
#include <QDockWidget>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QMenu>
#include <QMenuBar>
#include <QScrollArea>
#include <QSpinBox>
#include <QToolBar>
#include <QToolButton>
#include <QUndoStack>
#include <QtTest>
#include <algorithm>

#include "app/studio/main_window.h"
#include "engine/graph/json.h"
#include "widgets/graph/graph_canvas.h"
#include "widgets/graph/graph_document.h"
#include "widgets/graph/property_editor.h"
#include "widgets/training/training_panel.h"

using namespace kiln::studio;
using kiln::graph::NodeId;

namespace {

NodeId nodeNamed(const kiln::graph::Graph& g, const std::string& name) {
  for (const auto& n : g.nodes())
    if (n.name == name) return n.id;
  return -1;
}

QRect inWindow(const QWidget* w, const QWidget* window) { return QRect(w->mapTo(window, QPoint(0, 0)), w->size()); }

QToolBar* mainToolBar(const MainWindow& w) { return w.findChild<QToolBar*>("toolbar-main"); }

QToolButton* toolButton(const MainWindow& w, const QString& text) {
  for (QToolButton* b : mainToolBar(w)->findChildren<QToolButton*>())
    if (b->defaultAction() && b->defaultAction()->text().remove('&') == text) return b;
  return nullptr;
}

}  // namespace

class TestStudioText : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("KilnTest");
    QCoreApplication::setApplicationName("test_studio_text");
    QSettings().clear();
  }

  // Finding 2: many long reasons wrap inside the panel; the settings keep their height
  // (they scroll) and the panel its width.
  void longBlockersDoNotSquashTheSettings() {
    TrainingPanel panel;
    panel.resize(300, 420);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    auto* epochs = panel.findChildren<QSpinBox*>().first();
    const int rowHeight = epochs->sizeHint().height();
    QStringList reasons;
    const QString longName(265, QChar('n'));
    for (int i = 0; i < 12; ++i)
      reasons << QString("node '%1' (Linear): its input [N,32,13,13] does not match reason %2").arg(longName).arg(i);
    panel.setStartBlockers(reasons);
    QCoreApplication::processEvents();
    QLabel* status = panel.statusLabel();
    QVERIFY(status->text().startsWith("Cannot train yet"));
    QVERIFY2(status->text().size() < 700, qPrintable(QString::number(status->text().size())));
    QVERIFY(status->toolTip().contains(reasons.last()));  // every reason in full
    QVERIFY2(epochs->height() >= rowHeight, qPrintable(QString("%1 -> %2").arg(rowHeight).arg(epochs->height())));
    QVERIFY2(panel.sizeHint().width() < 600, qPrintable(QString::number(panel.sizeHint().width())));
    QVERIFY2(panel.minimumSizeHint().width() <= 300, qPrintable(QString::number(panel.minimumSizeHint().width())));
    QVERIFY2(panel.minimumSizeHint().height() <= 420, qPrintable(QString::number(panel.minimumSizeHint().height())));
    QVERIFY(inWindow(panel.startButton(), &panel).bottom() < inWindow(status, &panel).top());
    QVERIFY2(inWindow(status, &panel).right() <= panel.width(), "the status line leaves the panel");
  }

  // Finding 2: in the window, the Training dock's text never draws over the Problems dock.
  void statusLineStaysInItsDock() {
    MainWindow w;
    w.setSilent(true);
    w.newFromTemplate("fashion_mnist_cnn");
    w.applyDefaultLayout(QSize(1920, 1080));  // Properties, Training, Problems one above the other
    w.resize(1280, 720);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QDockWidget* training = w.dock("training");
    QDockWidget* problems = w.dock("problems");
    QLabel* status = w.trainingPanel()->statusLabel();
    const QRect shown = status->visibleRegion().boundingRect().translated(status->mapTo(&w, QPoint(0, 0)));
    QVERIFY2(inWindow(training, &w).contains(shown) || shown.isEmpty(), "the status line leaves the Training dock");
    QVERIFY(!shown.intersects(inWindow(problems, &w)));
  }

  // Finding 3: a 265-character name in the undo history.
  void longNodeNameKeepsTheToolbar() {
    MainWindow w;
    w.setSilent(true);
    w.newFromTemplate("fashion_mnist_cnn");
    w.resize(1280, 720);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    const QString longName = "n" + QString(264, QChar('x'));
    QString reason;
    QVERIFY2(w.document()->renameNode(nodeNamed(w.document()->graph(), "conv1"), longName, &reason), qPrintable(reason));
    QCoreApplication::processEvents();
    QCOMPARE(w.width(), 1280);
    QVERIFY(w.undoAction()->text().size() < 100);
    QMenu* edit = nullptr;
    for (QAction* a : w.menuBar()->actions())
      if (a->text() == "&Edit") edit = a->menu();
    QVERIFY(edit);
    QVERIFY2(edit->sizeHint().width() < 500, qPrintable(QString::number(edit->sizeHint().width())));
    QToolBar* bar = mainToolBar(w);
    for (const QString text : {"Undo", "Redo", "Auto Layout", "Fit Graph in View", "Train", "Pause", "Stop"}) {
      QToolButton* b = toolButton(w, text);
      QVERIFY2(b, qPrintable(text + " is not on the toolbar"));
      QVERIFY2(b->isVisible(), qPrintable(text + " was pushed off the toolbar"));
      QVERIFY2(inWindow(b, &w).right() < w.width(), qPrintable(text + " is off-screen"));
    }
    // A narrow window: the toolbar overflows into its extension menu instead of losing actions.
    w.resize(w.minimumSizeHint().width(), 720);
    QCoreApplication::processEvents();
    QVERIFY(inWindow(bar, &w).right() <= w.width());
  }

  // Finding 4: the toolbar's Undo / Redo have a fixed text.
  void toolbarUndoKeepsItsText() {
    MainWindow w;
    w.setSilent(true);
    w.newFromTemplate("fashion_mnist_cnn");
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QToolButton* undo = toolButton(w, "Undo");
    QVERIFY(undo);
    QVERIFY(!undo->isEnabled());
    const int width = undo->width();
    QVERIFY(w.document()->renameNode(nodeNamed(w.document()->graph(), "conv1"), "first_convolution"));
    QCoreApplication::processEvents();
    QCOMPARE(undo->text(), QString("Undo"));
    QCOMPARE(undo->width(), width);
    QVERIFY(undo->isEnabled());
    QVERIFY2(undo->toolTip().contains("first_convolution"), qPrintable(undo->toolTip()));
    undo->click();
    QVERIFY(nodeNamed(w.document()->graph(), "conv1") >= 0);
  }

  // Finding 4: Ctrl+Z in a focused property field: first the field's typing, then the graph.
  void ctrlZInAFieldUndoesTheFieldThenTheGraph() {
    MainWindow w;
    w.setSilent(true);
    w.newFromTemplate("fashion_mnist_cnn");
    w.show();
    w.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&w));
    QUndoStack* stack = w.document()->undoStack();
    QVERIFY(w.document()->renameNode(nodeNamed(w.document()->graph(), "fc1"), "hidden"));
    const NodeId conv = nodeNamed(w.document()->graph(), "conv1");
    w.canvas()->selectNode(conv);
    auto* editor = w.findChild<PropertyEditor*>();
    QCOMPARE(editor->node(), conv);
    QLineEdit* name = editor->nameEdit();
    name->setFocus();
    QVERIFY(QTest::qWaitFor([&] { return name->hasFocus(); }));
    name->end(false);
    QTest::keyClicks(name, "_typed");
    QCOMPARE(name->text(), QString("conv1_typed"));
    const int index = stack->index();
    QTest::keySequence(name, QKeySequence::Undo);  // the field's uncommitted text
    QCOMPARE(name->text(), QString("conv1"));
    QCOMPARE(stack->index(), index);
    QTest::keySequence(name, QKeySequence::Undo);  // nothing left in the field: the graph's rename
    QCOMPARE(stack->index(), index - 1);
    QVERIFY(nodeNamed(w.document()->graph(), "fc1") >= 0);
    QTest::keySequence(name, QKeySequence::Redo);
    QVERIFY(nodeNamed(w.document()->graph(), "hidden") >= 0);

    // A spin box: its typed value is committed on Enter, then Ctrl+Z undoes the attribute.
    auto* channels = qobject_cast<QSpinBox*>(editor->editor("out_channels"));
    QVERIFY(channels);
    const int before = channels->value();
    channels->setFocus();
    QVERIFY(QTest::qWaitFor([&] { return channels->hasFocus(); }));
    channels->selectAll();
    QTest::keyClicks(channels, "12");
    QTest::keyClick(channels, Qt::Key_Return);
    QCOMPARE(channels->value(), 12);
    QTest::keySequence(channels, QKeySequence::Undo);
    QCOMPARE(channels->value(), before);
  }

  // File > Open Recent, disabled with no recent files, is drawn once in the disabled text
  // colour: Fusion's etching added a copy in the palette's Light colour (white on the dark
  // palette) one pixel down and right. No pixel of the item is brighter than that colour.
  void disabledMenuItemIsDrawnOnce() {
    MainWindow::applyStyle();
    MainWindow w;
    w.setSilent(true);
    w.resize(1280, 720);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QMenu* file = nullptr;
    for (QAction* a : w.menuBar()->actions())
      if (a->text() == "&File") file = a->menu();
    QVERIFY(file);
    QAction* recent = nullptr;
    for (QAction* a : file->actions())
      if (a->text() == "Open &Recent") recent = a;
    QVERIFY(recent);
    QVERIFY(!recent->isEnabled());  // no recent files (initTestCase cleared them)
    file->popup(w.mapToGlobal(QPoint(0, 0)));
    QVERIFY(QTest::qWaitForWindowExposed(file));
    const QImage image = file->grab(file->actionGeometry(recent)).toImage();
    const QColor disabled = QApplication::palette().color(QPalette::Disabled, QPalette::WindowText);
    int brightest = 0, textPixels = 0;
    for (int y = 0; y < image.height(); ++y)
      for (int x = 0; x < image.width(); ++x) {
        const QColor c = image.pixelColor(x, y);
        brightest = std::max({brightest, c.red(), c.green(), c.blue()});
        textPixels += c.value() >= disabled.value() - 10;
      }
    file->hide();
    QVERIFY2(textPixels > 20, "the item's text was not drawn");
    QVERIFY2(brightest <= disabled.value() + 8,
             qPrintable(QString("a pixel of %1 in a disabled item drawn in %2").arg(brightest).arg(disabled.value())));
  }
};

QTEST_MAIN(TestStudioText)
#include "test_studio_text.moc"
