// Issue 20, Deliver 1 in Kiln Studio: Model > Compare Devices shows the dock; a comparison run
// there is stored in the project (schema 9) and shown again when the project is reopened;
// another project shows none.
#include <QAction>
#include <QDockWidget>
#include <QMenuBar>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "app/studio/main_window.h"
#include "engine/graph/device_compare.h"
#include "widgets/graph/device_compare_panel.h"

using namespace kiln;
using namespace kiln::studio;

class TestStudioCompare : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("KilnTest");
    QCoreApplication::setApplicationName("test_studio_compare");
  }

  void storedAndShownAfterReopening() {
    QTemporaryDir dir;
    const QString path = dir.filePath("c.kiln"), other = dir.filePath("other.kiln");
    QString json;
    {
      MainWindow w;
      w.setSilent(true);
      QVERIFY(w.newProjectFile(path, "fashion_mnist_mlp"));
      QDockWidget* d = w.dock("compare");
      QVERIFY(d);
      d->hide();
      QAction* action = w.menuBar()->findChild<QAction*>("compareDevices");
      QVERIFY(action);
      action->trigger();
      QVERIFY(!d->isHidden());
      auto* panel = w.findChild<DeviceComparePanel*>();
      QVERIFY(panel);
      QVERIFY(panel->targetList()->count() >= 1);
      for (int i = 0; i < panel->targetList()->count(); ++i)  // the CPU in f32 only: quick
        panel->targetList()->item(i)->setCheckState(
            panel->targetList()->item(i)->data(DeviceComparePanel::kTargetRole).toString() == "cpu|f32" ? Qt::Checked
                                                                                                        : Qt::Unchecked);
      panel->setIterations(1, 0);
      panel->batchSpin()->setValue(2);
      QSignalSpy finished(panel, &DeviceComparePanel::comparisonFinished);
      QTest::mouseClick(panel->runButton(), Qt::LeftButton);
      QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
      json = finished.at(0).at(0).toString();
      QVERIFY(w.project());
      const std::vector<projects::DeviceComparisonRecord> stored = w.project()->device_comparisons();
      QCOMPARE(stored.size(), size_t(1));
      QCOMPARE(QString::fromStdString(stored[0].results_json), json);
      QCOMPARE(stored[0].batch_size, int64_t(2));
      QVERIFY(stored[0].graph_version > 0);
      QVERIFY(w.newProjectFile(other, "fashion_mnist_mlp"));  // another project: no rows
      QCOMPARE(panel->table()->rowCount(), 0);
    }
    MainWindow w;
    w.setSilent(true);
    QVERIFY(w.openProject(path));
    auto* panel = w.findChild<DeviceComparePanel*>();
    QVERIFY(panel);
    QCOMPARE(panel->table()->rowCount(), 1);
    QCOMPARE(panel->table()->item(0, DeviceComparePanel::DeviceCol)->text(), QString("cpu"));
    QCOMPARE(panel->batchSpin()->value(), 2);
    QCOMPARE(panel->document().rows[0].train_ms, graph::compare_from_json(json.toStdString()).rows[0].train_ms);
  }
};

QTEST_MAIN(TestStudioCompare)
#include "test_studio_compare.moc"
