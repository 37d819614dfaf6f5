// RunsView: the table shows each run's config and final metrics; selecting runs
// overlays one curve per run in both plots; Export CSV writes the selected runs.
#include <qcustomplot.h>

#include <QHeaderView>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include "project_test_util.h"
#include "widgets/project/runs_view.h"

using namespace kiln::projects;
using kiln::studio::RunsModel;
using kiln::studio::RunsView;

class TestRunsView : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString file(const QString& name) const { return dir_.filePath(name); }

  // Three runs: two finished with metrics, one still running with epochs only.
  std::vector<int64_t> fill(Project& p) {
    std::vector<int64_t> ids;
    for (int r = 0; r < 3; ++r) {
      const std::string config = r == 1 ? "{\"optimizer\":\"sgd\",\"lr\":0.1,\"epochs\":4}"
                                        : "{\"optimizer\":\"adam\",\"lr\":0.001,\"epochs\":4}";
      const int64_t id = p.begin_run({"run " + std::to_string(r + 1), config, r == 2 ? "cuda:0" : "cpu", 0});
      ids.push_back(id);
      MetricsWriter w(p.path(), id);
      if (r < 2)
        for (int s = 1; s <= 50 * (r + 1); ++s) w.step({s, 1, 2.0 / s + r, 0.01, 1000, 0.1 * s});
      for (int e = 1; e <= 2 + r; ++e) w.epoch({e, 1.0 / e, 0.5 + 0.1 * e, 1.1 / e, 0.6 + 0.05 * e + 0.01 * r, 0.01, 3});
    }
    p.end_run(ids[0], RunStatus::finished, "",
              R"({"train_loss":0.25,"train_accuracy":0.9,"val_loss":0.3,"val_accuracy":0.8765})");
    p.end_run(ids[1], RunStatus::stopped, "stopped by the user", "");
    return ids;
  }

 private slots:
  void tableShowsRuns() {
    Project p = Project::create(file("table.kiln").toStdString());
    const auto ids = fill(p);
    RunsView view(&p);
    QCOMPARE(view.rowCount(), 3);
    QCOMPARE(view.cellText(0, RunsModel::Name), QString("run 1"));
    QCOMPARE(view.cellText(0, RunsModel::Status), QString("finished"));
    QCOMPARE(view.cellText(0, RunsModel::Device), QString("cpu"));
    QCOMPARE(view.cellText(2, RunsModel::Device), QString("cuda:0"));
    QCOMPARE(view.cellText(0, RunsModel::Epochs), QString("2 / 4"));
    QCOMPARE(view.cellText(0, RunsModel::ValAccuracy), QString("87.65 %"));  // from final_metrics_json
    QCOMPARE(view.cellText(0, RunsModel::TrainLoss), QString("0.2500"));
    QCOMPARE(view.cellText(1, RunsModel::Optimizer), QString("sgd"));
    QCOMPARE(view.cellText(1, RunsModel::LearningRate), QString("0.1"));
    QCOMPARE(view.proxy()->index(1, RunsModel::Status).data(Qt::ToolTipRole).toString(), QString("stopped by the user"));
    QCOMPARE(view.cellText(1, RunsModel::ValAccuracy), QString("76.00 %"));  // last epoch row: 0.6 + 0.05 * 3 + 0.01
    QCOMPARE(view.cellText(2, RunsModel::Status), QString("running"));
    QVERIFY(!view.cellText(0, RunsModel::Duration).isEmpty());
    QVERIFY(!view.cellText(0, RunsModel::Started).isEmpty());

    // refresh() picks up a new run and keeps the selection.
    view.selectRuns({ids[1]});
    p.begin_run({"run 4", "{}", "cpu", 0});
    view.refresh();
    QCOMPARE(view.rowCount(), 4);
    QCOMPARE(view.selectedRuns(), QList<int64_t>{ids[1]});
  }

  void selectionOverlaysOneCurvePerRun() {
    Project p = Project::create(file("overlay.kiln").toStdString());
    const auto ids = fill(p);
    RunsView view(&p);
    view.resize(900, 600);
    QCOMPARE(view.lossPlot()->graphCount(), 0);
    view.selectRuns({ids[0], ids[1]});
    QCOMPARE(view.lossPlot()->graphCount(), 2);
    QCOMPARE(view.accuracyPlot()->graphCount(), 2);
    QCOMPARE(view.lossPlot()->graph(0)->data()->size(), 50);
    QCOMPARE(view.lossPlot()->graph(1)->data()->size(), 100);
    QCOMPARE(view.accuracyPlot()->graph(1)->data()->size(), 3);
    QCOMPARE(view.accuracyPlot()->graph(0)->data()->at(1)->value, 100 * (0.6 + 0.05 * 2));
    QVERIFY(view.lossPlot()->graph(0)->pen().color() != view.lossPlot()->graph(1)->pen().color());
    QCOMPARE(view.lossPlot()->graph(0)->pen().color(), view.accuracyPlot()->graph(0)->pen().color());
    QVERIFY(view.lossPlot()->legend->visible());
    QCOMPARE(view.lossPlot()->legend->itemCount(), 2);
    QVERIFY(view.lossPlot()->graph(1)->name().contains("run 2"));

    if (qEnvironmentVariableIsSet("KILN_TEST_SHOTS"))  // a folder to look at the view in
      view.grab().save(qEnvironmentVariable("KILN_TEST_SHOTS") + "/runs_view.png");

    // Selecting through the table (as a user's Ctrl-click would) overlays all three.
    view.table()->selectAll();
    QCOMPARE(view.selectedRuns().size(), 3);
    QCOMPARE(view.lossPlot()->graphCount(), 3);
    QCOMPARE(view.accuracyPlot()->graphCount(), 3);
    QCOMPARE(view.lossPlot()->graph(2)->data()->size(), 0);  // the running run has no steps
    view.table()->clearSelection();
    QCOMPARE(view.lossPlot()->graphCount(), 0);
    // With no run selected the axes still span the plot (an empty legend squeezed them to ~50 px).
    for (QCustomPlot* plot : {view.lossPlot(), view.accuracyPlot()}) {
      plot->replot();
      QVERIFY2(plot->axisRect()->width() > plot->width() / 2,
               qPrintable(QString("axes %1 px wide in a %2 px plot").arg(plot->axisRect()->width()).arg(plot->width())));
    }
    view.selectRuns({ids[0]});
    QVERIFY(view.lossPlot()->legend->visible());
    QCOMPARE(view.lossPlot()->legend->itemCount(), 1);
  }

  // Test accuracy from final_metrics_json or the stored evaluation; columns fit their
  // contents with the last one stretched; header clicks sort numerically, Run by id.
  void testAccuracyWidthsAndSorting() {
    Project p = Project::create(file("sort.kiln").toStdString());
    const auto ids = fill(p);  // val. accuracy: run 1 87.65 %, run 2 76.00 %, run 3 (running) 82.00 %
    p.database().exec("UPDATE runs SET final_metrics_json = '{\"val_accuracy\":0.8765,\"test_accuracy\":0.8612}' "
                      "WHERE id = " + std::to_string(ids[0]));
    Evaluation ev;
    ev.count = 10;
    ev.accuracy = 0.9;
    ev.class_names = {"a"};
    ev.confusion = {9};
    p.set_evaluation(ids[1], ev);
    RunsView view(&p);
    view.resize(1400, 600);
    view.show();
    QTableView* t = view.table();
    QCOMPARE(view.model()->columnCount(), int(RunsModel::ColumnCount));
    QCOMPARE(view.model()->headerData(RunsModel::TestAccuracy, Qt::Horizontal).toString(), QString("Test acc."));
    QCOMPARE(view.cellText(0, RunsModel::TestAccuracy), QString("86.12 %"));
    QCOMPARE(view.cellText(1, RunsModel::TestAccuracy), QString("90.00 %"));  // the stored evaluation
    QCOMPARE(view.cellText(2, RunsModel::TestAccuracy), QString());
    QVERIFY(t->horizontalHeader()->stretchLastSection());
    QVERIFY(t->isSortingEnabled());
    // Even in a short dock the three runs are all visible without scrolling.
    view.resize(1400, 200);
    QTRY_VERIFY(t->viewport()->height() >= 3 * t->verticalHeader()->defaultSectionSize());
    // Widths fit the contents: no cell text is cut off.
    const QFontMetrics fm(t->font());
    for (int c = 0; c + 1 < RunsModel::ColumnCount; ++c)
      for (int r = 0; r < view.rowCount(); ++r)
        QVERIFY2(t->columnWidth(c) >= fm.horizontalAdvance(view.cellText(r, c)),
                 qPrintable(QString("column %1 row %2: %3 px for '%4'").arg(c).arg(r).arg(t->columnWidth(c)).arg(view.cellText(r, c))));
    auto column = [&](int c) {
      QStringList cells;
      for (int r = 0; r < view.rowCount(); ++r) cells << view.cellText(r, c);
      return cells;
    };
    QCOMPARE(column(RunsModel::Name), (QStringList{"run 1", "run 2", "run 3"}));  // by id
    // A click on the header sorts by that column (numbers, not text).
    QTest::mouseClick(t->horizontalHeader()->viewport(), Qt::LeftButton, {},
                      QPoint(t->horizontalHeader()->sectionViewportPosition(RunsModel::ValAccuracy) + 5, 5));
    QCOMPARE(t->horizontalHeader()->sortIndicatorSection(), int(RunsModel::ValAccuracy));
    t->sortByColumn(RunsModel::ValAccuracy, Qt::AscendingOrder);
    QCOMPARE(column(RunsModel::ValAccuracy), (QStringList{"76.00 %", "82.00 %", "87.65 %"}));
    t->sortByColumn(RunsModel::TestAccuracy, Qt::DescendingOrder);
    QCOMPARE(column(RunsModel::Name), (QStringList{"run 2", "run 1", "run 3"}));  // empty cell last
    // Selection and refresh work on the sorted table.
    view.selectRuns({ids[0]});
    QCOMPARE(view.selectedRuns(), QList<int64_t>{ids[0]});
    view.refresh();
    QCOMPARE(view.selectedRuns(), QList<int64_t>{ids[0]});
    QCOMPARE(column(RunsModel::Name), (QStringList{"run 2", "run 1", "run 3"}));  // the sort is kept
    t->sortByColumn(RunsModel::Name, Qt::AscendingOrder);
    QCOMPARE(column(RunsModel::Name), (QStringList{"run 1", "run 2", "run 3"}));
  }

  // A new project's view is fitted while it has no runs: the first runs (refresh()) get
  // their columns fitted, so "adam lr 0.001, 2 epoch(s)" and the learning rate are not cut.
  void columnsFitTheFirstRuns() {
    Project p = Project::create(file("first.kiln").toStdString());
    RunsView view(&p);
    view.resize(1400, 400);
    view.show();
    const int64_t id = p.begin_run({"adam lr 0.001, 2 epoch(s)", R"({"optimizer":"adam","lr":0.001,"epochs":2})", "cpu", 0});
    p.end_run(id, RunStatus::finished, "", R"({"val_accuracy":0.75})");
    view.refresh();
    QTableView* t = view.table();
    const QFontMetrics fm(t->font());
    for (int c : {int(RunsModel::Name), int(RunsModel::LearningRate), int(RunsModel::Started)})
      QVERIFY2(t->columnWidth(c) >= fm.horizontalAdvance(view.cellText(0, c)),
               qPrintable(QString("column %1: %2 px for '%3'").arg(c).arg(t->columnWidth(c)).arg(view.cellText(0, c))));
    t->setColumnWidth(RunsModel::Name, 40);  // the user's width stays while no run is added
    view.refresh();
    QCOMPARE(t->columnWidth(RunsModel::Name), 40);
  }

  void exportSelectedToCsv() {
    Project p = Project::create(file("export.kiln").toStdString());
    const auto ids = fill(p);
    RunsView view(&p);
    QString error;
    QVERIFY(!view.exportCsv(file("none.csv"), &error));
    QVERIFY2(error.contains("no run is selected"), qPrintable(error));
    view.selectRuns({ids[0], ids[2]});
    QSignalSpy messages(&view, &RunsView::message);
    QVERIFY2(view.exportCsv(file("runs.csv"), &error), qPrintable(error));
    QCOMPARE(messages.size(), 1);
    const QStringList lines = QString::fromUtf8(kiln_test::read_file(file("runs.csv"))).split("\r\n", Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 1 + 50 + 2 + 4);  // header, run 1's steps and epochs, run 3's epochs
    QVERIFY(lines[1].startsWith(QString("%1,run 1,step,1,1,2,").arg(ids[0])));
    QVERIFY(lines.last().startsWith(QString("%1,run 3,epoch,,4,").arg(ids[2])));
    QCOMPARE(kiln_test::raw_int(QString::fromStdString(p.path()), "SELECT count(*) FROM exports WHERE kind = 'csv'"),
             int64_t(1));
    QVERIFY(!view.exportCsv(file("missing/dir/runs.csv"), &error));
    QVERIFY2(error.contains("runs.csv"), qPrintable(error));
  }

  void emptyAndNoProject() {
    RunsView none;
    QCOMPARE(none.rowCount(), 0);
    QString error;
    QVERIFY(!none.exportCsv(file("x.csv"), &error));
    QVERIFY2(error.contains("no project"), qPrintable(error));
    Project p = Project::create(file("empty.kiln").toStdString());
    none.setProject(&p);
    QCOMPARE(none.rowCount(), 0);
    none.setProject(nullptr);
  }
};

QTEST_MAIN(TestRunsView)
#include "test_runs_view.moc"
