// Kiln Studio's window on laptop screens (issue 15, finding 1): the minimum size hint fits
// 1280x720; at 1280x720 and 1366x768 no visible dock overlaps another or leaves the window,
// and every tab of the bottom dock area (Plots, Evaluation, Log, Runs) is visible; dragging
// the Properties dock taller does not grow the window; the dock arrangement is remembered
// per user (QSettings) and the default arrangement depends on the screen size.
#include <QDockWidget>
#include <QMainWindow>
#include <QSettings>
#include <QTabBar>
#include <QtTest>

#include "app/studio/main_window.h"

using namespace kiln::studio;

namespace {

QRect inWindow(const QWidget* w, const QMainWindow& win) { return QRect(w->mapTo(&win, QPoint(0, 0)), w->size()); }

// The docks the user sees: visible and not hidden behind another dock's tab.
QList<QDockWidget*> shownDocks(const QMainWindow& win) {
  QList<QDockWidget*> out;
  for (QDockWidget* d : win.findChildren<QDockWidget*>())
    if (d->isVisible() && !d->visibleRegion().isEmpty()) out << d;
  return out;
}

// The tab bar of the dock area that holds `title`, nullptr when none.
QTabBar* tabBarWith(const QMainWindow& win, const QString& title) {
  for (QTabBar* bar : win.findChildren<QTabBar*>())
    for (int i = 0; i < bar->count(); ++i)
      if (bar->isVisible() && bar->tabText(i) == title) return bar;
  return nullptr;
}

}  // namespace

class TestStudioLayout : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("KilnTest");
    QCoreApplication::setApplicationName("test_studio_layout");
    QSettings().clear();
  }
  void cleanup() { QSettings().clear(); }

  void minimumSizeFitsALaptop() {
    MainWindow w;
    w.newFromTemplate("fashion_mnist_cnn");
    const QSize hint = w.minimumSizeHint();
    QVERIFY2(hint.width() <= 1280 && hint.height() <= 720,
             qPrintable(QString("minimumSizeHint %1x%2").arg(hint.width()).arg(hint.height())));
  }

  void docksDoNotOverlapAtLaptopSizes_data() {
    QTest::addColumn<QSize>("size");
    QTest::newRow("1280x720") << QSize(1280, 720);
    QTest::newRow("1366x768") << QSize(1366, 768);
    QTest::newRow("1920x1080") << QSize(1920, 1080);
  }
  void docksDoNotOverlapAtLaptopSizes() {
    QFETCH(QSize, size);
    MainWindow w;
    w.setSilent(true);
    w.newFromTemplate("fashion_mnist_cnn");
    w.applyDefaultLayout(size);
    w.resize(size);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QCOMPARE(w.size(), size);
    const QRect area = w.rect();
    const QList<QDockWidget*> docks = shownDocks(w);
    QVERIFY(docks.size() >= 4);
    for (QDockWidget* a : docks) {
      const QRect ra = inWindow(a, w);
      QVERIFY2(area.contains(ra), qPrintable(a->objectName() + " leaves the window"));
      QVERIFY2(ra.width() >= 60 && ra.height() >= 60, qPrintable(a->objectName() + " is squashed"));
      for (QDockWidget* b : docks)
        if (a != b) QVERIFY2(!ra.intersects(inWindow(b, w)), qPrintable(a->objectName() + " overlaps " + b->objectName()));
    }
    QTabBar* bottom = tabBarWith(w, "Plots");
    QVERIFY(bottom);
    for (const QString title : {"Plots", "Evaluation", "Log", "Runs"}) {
      int index = -1;
      for (int i = 0; i < bottom->count(); ++i)
        if (bottom->tabText(i) == title) index = i;
      QVERIFY2(index >= 0, qPrintable(title + " is not a bottom tab"));
      const QRect tab(bottom->mapTo(&w, bottom->tabRect(index).topLeft()), bottom->tabRect(index).size());
      QVERIFY2(area.contains(tab), qPrintable(title + " tab is off-screen"));
    }
  }

  void propertiesDockGrowsWithoutGrowingTheWindow() {
    MainWindow w;
    w.newFromTemplate("fashion_mnist_cnn");
    w.applyDefaultLayout(QSize(1280, 720));
    w.resize(1280, 720);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QDockWidget* props = w.dock("properties");
    QVERIFY(props->isVisible());
    // The compact arrangement gives Properties all but a low Problems dock: make room first.
    w.resizeDocks({props}, {props->height() - 100}, Qt::Vertical);
    QCoreApplication::processEvents();
    const int before = props->height();
    w.resizeDocks({props}, {before + 200}, Qt::Vertical);
    QCoreApplication::processEvents();
    QCOMPARE(w.size(), QSize(1280, 720));
    QVERIFY2(props->height() > before, qPrintable(QString("%1 -> %2").arg(before).arg(props->height())));
  }

  void layoutIsRememberedPerUser() {
    {
      MainWindow w;
      w.resize(1280, 720);
      w.show();
      QVERIFY(QTest::qWaitForWindowExposed(&w));
      w.dock("log")->hide();
      w.close();  // stores geometry and dock state
    }
    MainWindow again;
    QVERIFY(again.dock("log")->isHidden());
    again.resetLayout();
    QVERIFY(!again.dock("log")->isHidden());
  }

  void defaultArrangementDependsOnTheScreen() {
    MainWindow w;
    w.applyDefaultLayout(QSize(1280, 720));
    // Small screens: Properties and Training share the right area as tabs.
    QVERIFY(w.tabifiedDockWidgets(w.dock("properties")).contains(w.dock("training")));
    w.applyDefaultLayout(QSize(2560, 1440));
    QVERIFY(!w.tabifiedDockWidgets(w.dock("properties")).contains(w.dock("training")));
  }
};

QTEST_MAIN(TestStudioLayout)
#include "test_studio_layout.moc"
