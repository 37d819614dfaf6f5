// Issue 20, Deliver 1: the device comparison dock (widgets/graph/device_compare_panel.h) on the
// Fashion-MNIST MLP template — a run on a worker thread filling the table and the chart, Cancel,
// an error row, export as JSON and CSV, and a stored comparison shown again (the reopen path).
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <qcustomplot.h>

#include "engine/core/registry.h"
#include "engine/graph/json.h"
#include "widgets/graph/device_compare_panel.h"

using namespace kiln;
using namespace kiln::studio;

namespace {

graph::Graph mlpTemplate() { return graph::load_graph(KILN_SOURCE_DIR "/projects/templates/fashion_mnist_mlp.json"); }

DeviceInfo cpuInfo() {
  for (const DeviceInfo& d : list_devices())
    if (d.device.type == DeviceType::cpu) return d;
  return {};
}

QString text(const DeviceComparePanel& p, int row, int column) {
  const QTableWidgetItem* it = p.table()->item(row, column);
  return it ? it->text() : QString("<none>");
}

int checkedTargets(const DeviceComparePanel& p) {
  int n = 0;
  for (int i = 0; i < p.targetList()->count(); ++i) n += p.targetList()->item(i)->checkState() == Qt::Checked;
  return n;
}

}  // namespace

class TestDeviceComparePanel : public QObject {
  Q_OBJECT
 private slots:
  void runFillsTableAndChart() {
    GraphDocument doc;
    doc.setGraph(mlpTemplate());
    DeviceComparePanel p(&doc);
    p.setDevices({cpuInfo(), DeviceInfo{Device(DeviceType::cuda, 7), "gone", "discrete GPU", 0, 1, 1}});
    QCOMPARE(checkedTargets(p), 2);  // f32 of each (bf16 on this CPU, when it has it, unchecked)
    p.setIterations(2, 1);
    p.batchSpin()->setValue(4);
    QSignalSpy finished(&p, &DeviceComparePanel::comparisonFinished);
    int ticks = 0;  // the event loop keeps running while the worker compares
    QTimer timer;
    connect(&timer, &QTimer::timeout, [&] { ++ticks; });
    timer.start(5);
    QTest::mouseClick(p.runButton(), Qt::LeftButton);
    QVERIFY(p.isRunning());
    QVERIFY(!p.runButton()->isEnabled());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
    QVERIFY(ticks > 0);
    QVERIFY(!p.isRunning());
    QCOMPARE(finished.at(0).at(1).toInt(), 4);
    QCOMPARE(p.table()->rowCount(), 2);
    QCOMPARE(text(p, 0, DeviceComparePanel::DeviceCol), QString("cpu"));
    QCOMPARE(text(p, 0, DeviceComparePanel::Status), QString("done"));
    QCOMPARE(text(p, 0, DeviceComparePanel::TrainSpeedup), QString("1.00×"));
    QCOMPARE(text(p, 0, DeviceComparePanel::OutputDiff), QString("0.00e+00"));
    QVERIFY(text(p, 0, DeviceComparePanel::TrainMs).toDouble() > 0);
    QVERIFY(text(p, 1, DeviceComparePanel::Status).startsWith("failed: "));
    QCOMPARE(text(p, 1, DeviceComparePanel::TrainSpeedup), QString("n/a"));
    // The chart: inference and training bars, one per row.
    QCOMPARE(p.chart()->plottableCount(), 2);
    auto* bars = qobject_cast<QCPBars*>(p.chart()->plottable(1));
    QVERIFY(bars);
    QCOMPARE(bars->data()->size(), 2);
    QCOMPARE(bars->data()->at(0)->value, p.document().rows[0].train_samples_per_second);
    // The document emitted is what the panel shows.
    const graph::CompareDocument d = graph::compare_from_json(finished.at(0).at(0).toString().toStdString());
    QCOMPARE(d.rows.size(), size_t(2));
    QCOMPARE(d.rows[0].train_ms, p.document().rows[0].train_ms);
    QVERIFY(!d.interrupted);
  }

  void cancelStopsTheRun() {
    GraphDocument doc;
    doc.setGraph(mlpTemplate());
    DeviceComparePanel p(&doc);
    p.setDevices({cpuInfo(), cpuInfo()});
    p.setIterations(100000000, 0);
    p.batchSpin()->setValue(4);
    QSignalSpy finished(&p, &DeviceComparePanel::comparisonFinished);
    p.run();
    QVERIFY(p.cancelButton()->isEnabled());
    QTest::qWait(500);
    QElapsedTimer clock;
    clock.start();
    QTest::mouseClick(p.cancelButton(), Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
    qInfo("cancel to finished: %lld ms", static_cast<long long>(clock.elapsed()));
    const graph::CompareDocument d = graph::compare_from_json(finished.at(0).at(0).toString().toStdString());
    QVERIFY(d.interrupted);
    QVERIFY(!d.rows.empty());
    QVERIFY(d.rows[0].cancelled);
    QVERIFY(p.statusLabel()->text().startsWith("Cancelled"));
    QVERIFY(p.runButton()->isEnabled());
  }

  void exportAndShowStored() {
    GraphDocument doc;
    doc.setGraph(mlpTemplate());
    DeviceComparePanel p(&doc);
    QTemporaryDir dir;
    QString error;
    QVERIFY(!p.exportTo(dir.filePath("none.csv"), &error));  // nothing to export yet
    QVERIFY(error.contains("no comparison"));
    p.setDevices({cpuInfo()});
    p.setIterations(1, 0);
    p.batchSpin()->setValue(2);
    QSignalSpy finished(&p, &DeviceComparePanel::comparisonFinished);
    p.run();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
    const QString json = finished.at(0).at(0).toString();
    QVERIFY(p.exportTo(dir.filePath("c.json"), &error));
    QVERIFY(p.exportTo(dir.filePath("c.csv"), &error));
    QFile j(dir.filePath("c.json")), c(dir.filePath("c.csv"));
    QVERIFY(j.open(QIODevice::ReadOnly) && c.open(QIODevice::ReadOnly));
    QCOMPARE(QString::fromUtf8(j.readAll()), json);
    const graph::CompareDocument d = p.document();
    QCOMPARE(QString::fromUtf8(c.readAll()), QString::fromStdString(graph::compare_csv(d.rows)));
    QVERIFY(!p.exportTo(dir.filePath("no/such/dir/c.csv"), &error));
    QVERIFY(error.contains("cannot write"));
    // A stored comparison shown in a new panel (a reopened project): the same cells.
    DeviceComparePanel again(&doc);
    QVERIFY(!again.showDocument("not json"));
    QCOMPARE(again.table()->rowCount(), 0);
    QVERIFY(again.showDocument(json));
    QCOMPARE(again.batchSpin()->value(), 2);
    QCOMPARE(again.table()->rowCount(), 1);
    for (int col = 0; col < DeviceComparePanel::ColumnCount; ++col) QCOMPARE(text(again, 0, col), text(p, 0, col));
  }
};

QTEST_MAIN(TestDeviceComparePanel)
#include "test_device_compare_panel.moc"
