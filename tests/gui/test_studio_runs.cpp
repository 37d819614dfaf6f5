// Kiln Studio's results side (issue 15): any run's evaluation can be opened, two side by side
// ("Compare evaluations"); a reopened
// project whose last run was stopped shows the newest run that has an evaluation; a
// deleted run comes back with Edit > Undo (the graph stays unmodified) and is purged when
// the window closes the project; a project with 1,000 runs opens, sorts and filters with
// a fixed number of SQL statements, none per run and none for a sort or a filter (the
// UI-thread times are printed, not asserted: tests/gui/bench_* and this log are where
// speed is read).
#include <QAction>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QHeaderView>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <ctime>
#include <sqlite3.h>

#include "app/studio/main_window.h"
#include "project_test_util.h"
#include "widgets/graph/graph_document.h"
#include "widgets/project/runs_model.h"
#include "widgets/project/runs_view.h"
#include "widgets/training/evaluation_compare.h"
#include "widgets/training/evaluation_view.h"
#include "widgets/training/live_plots.h"

using namespace kiln::studio;
using namespace kiln::projects;

// UI-thread time: the CPU time of this thread (CLOCK_THREAD_CPUTIME_ID) and the wall time.
class UiTimer {
 public:
  struct Ms {
    double cpu = 0, wall = 0;
    QString text() const { return QString("%1 ms / %2 ms").arg(cpu, 0, 'f', 1).arg(wall, 0, 'f', 1); }
  };
  UiTimer() { restart(); }
  Ms restart() {
    const double cpu = cpuMs();
    const Ms elapsed{cpu - cpu_, wall_.nsecsElapsed() / 1e6};
    cpu_ = cpu;
    wall_.start();
    return elapsed;
  }

 private:
  static double cpuMs() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
  }
  double cpu_ = 0;
  QElapsedTimer wall_;
};

class TestStudioRuns : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString file(const QString& name) const { return dir_.filePath(name); }

  // Run r (from 0) has 10 * (r + 1) steps, r + 1 epochs and, when finished, an evaluation
  // of accuracy 0.5 + 0.1 * r; the last run is stopped without one.
  std::vector<int64_t> makeProject(const QString& path, int finished) {
    Project p = Project::create(path.toStdString());
    std::vector<int64_t> ids;
    for (int r = 0; r <= finished; ++r) {
      const int64_t id = p.begin_run({"adam lr 0.005, 1 epoch(s)", "{\"optimizer\":\"adam\",\"lr\":0.005}", "cpu", 0});
      {
        MetricsWriter w(p.path(), id);
        for (int s = 1; s <= 10 * (r + 1); ++s) w.step({s, 1, 1.0 / s, 0.005, 500, 0.1 * s});
        for (int e = 1; e <= r + 1; ++e) w.epoch({e, 0.5, 0.8, 0.6, 0.7, 0.005, 1});
      }
      if (r < finished) {
        Evaluation ev;
        ev.count = 8;
        ev.accuracy = 0.5 + 0.1 * r;
        ev.class_names = {"a", "b"};
        ev.confusion = {4, 0, 0, 4};
        p.set_evaluation(id, ev);
        p.end_run(id, RunStatus::finished, "", "");
      } else {
        p.end_run(id, RunStatus::stopped, "stopped by the user", "");
      }
      ids.push_back(id);
    }
    return ids;
  }

 private slots:
  void initTestCase() { QCoreApplication::setOrganizationName("KilnTest"); }

  void reopenedProjectShowsTheNewestEvaluation() {
    const QString path = file("stopped.kiln");
    const auto ids = makeProject(path, 4);  // runs 1-4 finished, run 5 stopped
    MainWindow w;
    w.setSilent(true);
    QVERIFY(w.openProject(path));
    QCOMPARE(w.shownRun(), ids[3]);
    QVERIFY2(w.evaluationView()->summaryText().contains("80.00"), qPrintable(w.evaluationView()->summaryText()));
    QCOMPARE(w.plots()->stepCount(), 40);
    QCOMPARE(w.runsView()->selectedRuns(), QList<int64_t>{ids[3]});
    QVERIFY2(w.dock("evaluation")->windowTitle().contains(QString("run %1").arg(ids[3])),
             qPrintable(w.dock("evaluation")->windowTitle()));
  }

  void anyRunsEvaluationOpens() {
    const QString path = file("older.kiln");
    const auto ids = makeProject(path, 4);
    MainWindow w;
    w.setSilent(true);
    QVERIFY(w.openProject(path));
    QVERIFY(w.openRunEvaluation(ids[0]));  // as the Runs view's "Open Evaluation"
    QVERIFY2(w.evaluationView()->summaryText().contains("50.00"), qPrintable(w.evaluationView()->summaryText()));
    QCOMPARE(w.plots()->stepCount(), 10);
    QCOMPARE(w.shownRun(), ids[0]);
    // Selecting a run in the table (a click) shows it as well.
    RunsView* view = w.runsView();
    int row = -1;
    for (int r = 0; r < view->rowCount(); ++r)
      if (view->runAtRow(r) == ids[1]) row = r;
    view->table()->selectRow(row);
    QCOMPARE(w.shownRun(), ids[1]);
    QVERIFY(w.evaluationView()->summaryText().contains("60.00"));
    QCOMPARE(w.plots()->stepCount(), 20);
    QCOMPARE(w.plots()->epochCount(), 2);
    // The stopped run has curves and no evaluation.
    QVERIFY(w.openRunEvaluation(ids[4]));
    QCOMPARE(w.plots()->stepCount(), 50);
    QVERIFY(!w.evaluationView()->summaryText().contains("%"));
  }

  // "Compare evaluations": two runs with an evaluation side by side, with the accuracy and
  // per-class precision / recall / F1 differences (B - A, B the newer run).
  void compareTwoEvaluations() {
    const QString path = file("compare.kiln");
    const auto ids = makeProject(path, 2);  // two finished runs and a stopped one
    {
      Project p = Project::open(path.toStdString());
      Evaluation a;  // class a: 3 of 4 right, class b: 2 of 4 -> accuracy 5/8
      a.count = 8;
      a.accuracy = 5.0 / 8;
      a.class_names = {"a", "b"};
      a.confusion = {3, 1, 2, 2};
      p.set_evaluation(ids[0], a);
      Evaluation b = a;  // 4 of 4 and 3 of 4 -> 7/8
      b.accuracy = 7.0 / 8;
      b.confusion = {4, 0, 1, 3};
      p.set_evaluation(ids[1], b);
    }
    MainWindow w;
    w.setSilent(true);
    QVERIFY(w.openProject(path));
    RunsView* view = w.runsView();
    QPushButton* button = view->compareButton();
    view->selectRuns({ids[0]});
    QVERIFY(!button->isEnabled());
    view->selectRuns({ids[0], ids[2]});  // the stopped run has no evaluation
    QVERIFY(!button->isEnabled());
    view->selectRuns({ids[1], ids[0]});
    QVERIFY(button->isEnabled());
    QSignalSpy requested(view, &RunsView::compareRequested);
    button->click();
    QCOMPARE(requested.size(), 1);
    QCOMPARE(requested.at(0).at(0).toLongLong(), ids[0]);  // the older run is A
    auto* compare = w.findChild<EvaluationCompare*>();
    QVERIFY2(compare, "no comparison window opened");
    QVERIFY(compare->window()->isVisible());
    QVERIFY2(compare->summaryText().contains("+25.00 percentage points"), qPrintable(compare->summaryText()));
    QTableWidget* t = compare->deltaTable();
    QCOMPARE(t->rowCount(), 4);  // a, b, macro avg, weighted avg
    auto at = [t](int row, int column) { return t->item(row, column)->data(Qt::UserRole).toDouble(); };
    // Class a: precision 3/5 -> 4/5, recall 3/4 -> 4/4.
    QCOMPARE(at(0, EvaluationCompare::PrecisionA), 0.6);
    QCOMPARE(at(0, EvaluationCompare::PrecisionB), 0.8);
    QVERIFY(qAbs(at(0, EvaluationCompare::PrecisionDelta) - 0.2) < 1e-12);
    QCOMPARE(at(0, EvaluationCompare::RecallDelta), 0.25);
    // Class b: recall 2/4 -> 3/4; F1 (2PR / (P + R)): 4/7 -> 6/7.
    QCOMPARE(at(1, EvaluationCompare::RecallDelta), 0.25);
    QVERIFY(qAbs(at(1, EvaluationCompare::F1Delta) - 2.0 / 7) < 1e-12);
    // Both evaluations are shown, A's and B's.
    QVERIFY(compare->viewA()->summaryText().contains("62.50"));
    QVERIFY(compare->viewB()->summaryText().contains("87.50"));
    // The matrices take each half's width (the per-class tabs beside them squashed both at
    // 1366x768); a clicked cell brings its samples.
    QVERIFY(!compare->viewA()->detailsShown() && !compare->viewB()->detailsShown());
    compare->viewA()->showCell(1, 0);
    QVERIFY(compare->viewA()->detailsShown());
    // Without an evaluation there is nothing to compare: refused, no window.
    QVERIFY(!w.compareEvaluations(ids[0], ids[2]));
  }

  void deleteUndoAndPurgeOnClose() {
    const QString path = file("delete.kiln");
    const auto ids = makeProject(path, 2);
    {
      MainWindow w;
      w.setSilent(true);
      QVERIFY(w.openProject(path));
      QVERIFY(!w.document()->isModified());
      QVERIFY(w.runsView()->deleteRuns({ids[1]}));
      QCOMPARE(w.runsView()->rowCount(), 2);
      QVERIFY(!w.document()->isModified());  // a run edit is not a graph edit
      QVERIFY2(w.undoAction()->text().contains("Delete run"), qPrintable(w.undoAction()->text()));
      w.undoAction()->trigger();  // Edit > Undo (Ctrl+Z)
      QCOMPARE(w.runsView()->rowCount(), 3);
      QCOMPARE(w.project()->step_metrics(ids[1]).size(), size_t(20));
      QVERIFY(w.project()->evaluation(ids[1]).has_value());
      QVERIFY(!w.document()->isModified());
      QVERIFY(w.runsView()->renameRun(ids[0], "baseline"));
      QVERIFY(w.runsView()->deleteRuns({ids[1]}));
      QVERIFY(!w.document()->isModified());
      QCOMPARE(kiln_test::raw_int(path, "SELECT COUNT(*) FROM runs"), int64_t(3));  // soft: still in the file
    }  // the window closes the project
    QCOMPARE(kiln_test::raw_int(path, "SELECT COUNT(*) FROM runs"), int64_t(2));
    QCOMPARE(kiln_test::raw_int(path, "SELECT COUNT(*) FROM step_metrics WHERE run = " + std::to_string(ids[1])),
             int64_t(0));
    QCOMPARE(kiln_test::raw_int(path, "SELECT COUNT(*) FROM evaluations WHERE run = " + std::to_string(ids[1])),
             int64_t(0));
    Project p = Project::open(path.toStdString());
    QCOMPARE(p.runs().at(0).name, std::string("baseline"));
  }

  // 1,000 runs with 20 step and 2 epoch rows each (and an evaluation for every tenth),
  // written in one transaction; then the window opens the project and the Runs view is
  // sorted by every column and filtered, each timed on the UI thread.
  void thousandRunsStayResponsive() {
    const QString path = file("many.kiln");
    const int kRuns = 1000;
    {
      Project p = Project::create(path.toStdString());
      Transaction tx(p.database());
      Statement run = p.database().prepare(
          "INSERT INTO runs(name, config_json, device, started_at, ended_at, status, final_metrics_json, tags) "
          "VALUES(?, ?, ?, '2026-12-01T10:00:00.000Z', ?, ?, '', ?)");
      Statement step = p.database().prepare("INSERT INTO step_metrics VALUES(?, ?, 1, ?, 0.01, ?, ?)");
      Statement epoch = p.database().prepare("INSERT INTO epoch_metrics VALUES(?, ?, 0.5, 0.8, 0.6, ?, 0.01, 3)");
      for (int r = 0; r < kRuns; ++r) {
        const std::string config = "{\"optimizer\":\"" + std::string(r % 2 ? "sgd" : "adam") + "\",\"lr\":" +
                                   std::to_string(0.001 * (r % 7 + 1)) + ",\"epochs\":2,\"batch_size\":" +
                                   std::to_string(32 << (r % 4)) + ",\"dataset\":{\"train_size\":" +
                                   std::to_string(1000 + (r * 37) % 54000) + "}}";
        run.reset();
        run.bind(1, "run " + std::to_string(r) + (r % 100 == 0 ? std::string(500, 'x') : std::string()))
            .bind(2, config).bind(3, r % 3 ? "cpu" : "cuda:0")
            .bind(4, "2026-12-01T10:" + std::string(r % 60 < 10 ? "0" : "") + std::to_string(r % 60) + ":00.000Z")
            .bind(5, r % 5 ? "finished" : "stopped").bind(6, r % 4 ? "" : "baseline\nsweep");
        run.run();
        const int64_t id = p.database().last_insert_rowid();
        for (int s = 1; s <= 20; ++s) {
          step.reset();
          step.bind(1, id).bind(2, s).bind(3, 2.0 / s).bind(4, 100.0 + (r * 13) % 900).bind(5, 0.1 * s).run();
        }
        for (int e = 1; e <= 2; ++e) {
          epoch.reset();
          epoch.bind(1, id).bind(2, e).bind(3, 0.5 + 0.0004 * ((r * 7) % 1000)).run();
        }
      }
      tx.commit();
      Evaluation ev;
      ev.count = 8;
      ev.accuracy = 0.75;
      ev.class_names = {"a", "b"};
      ev.confusion = {4, 0, 2, 2};
      for (int64_t id = 1; id <= kRuns; id += 10) p.set_evaluation(id, ev);
    }
    MainWindow w;
    w.setSilent(true);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    UiTimer timer;
    QVERIFY(w.openProject(path));
    const UiTimer::Ms open = timer.restart();
    RunsView* view = w.runsView();
    QCOMPARE(view->rowCount(), kRuns);
    // Every SQL statement the project's connection runs from here on is counted.
    int statements = 0;
    sqlite3_trace_v2(w.project()->database().handle(), SQLITE_TRACE_STMT,
                     [](unsigned, void* count, void*, void*) { return ++*static_cast<int*>(count), 0; }, &statements);
    timer.restart();
    view->refresh();
    const UiTimer::Ms reload = timer.restart();
    const int reloadStatements = statements;
    QVERIFY2(reloadStatements > 0 && reloadStatements < 20,  // a few queries for all runs, none per run
             qPrintable(QString("reloading 1,000 runs ran %1 SQL statements").arg(reloadStatements)));
    UiTimer::Ms worstSort, worstFilter;
    int worstColumn = -1;
    for (int c = 0; c < RunsModel::ColumnCount; ++c)
      for (Qt::SortOrder order : {Qt::AscendingOrder, Qt::DescendingOrder}) {
        timer.restart();
        view->table()->sortByColumn(c, order);
        QCoreApplication::processEvents();  // the view's relayout and repaint
        const UiTimer::Ms ms = timer.restart();
        if (ms.cpu > worstSort.cpu) worstSort = ms, worstColumn = c;
      }
    view->table()->sortByColumn(RunsModel::ValAccuracy, Qt::AscendingOrder);
    QVERIFY(view->cellText(0, RunsModel::ValAccuracy) <= view->cellText(kRuns - 1, RunsModel::ValAccuracy));
    QStringList filterLog;
    for (const char* f : {"tag:baseline", "tag:baseline cuda", "run 99", "status:stopped", "nothing matches", ""}) {
      timer.restart();
      view->filterField()->setText(f);
      QCoreApplication::processEvents();
      const UiTimer::Ms ms = timer.restart();
      if (ms.cpu > worstFilter.cpu) worstFilter = ms;
      filterLog << QString("'%1' %2 rows %3").arg(f).arg(view->rowCount()).arg(ms.text());
    }
    view->setFilterText("tag:baseline");
    QCOMPARE(view->rowCount(), kRuns / 4);
    view->setFilterText("");
    QCOMPARE(statements, reloadStatements);  // sorting and filtering work on the rows in memory
    sqlite3_trace_v2(w.project()->database().handle(), 0, nullptr, nullptr);
    qInfo("1,000 runs (UI-thread CPU / wall): openProject %s, Runs view reload %s (%d SQL statements), worst sort "
          "%s (column %d), worst filter %s; filters: %s",
          qPrintable(open.text()), qPrintable(reload.text()), reloadStatements, qPrintable(worstSort.text()),
          worstColumn, qPrintable(worstFilter.text()), qPrintable(filterLog.join(", ")));
  }
};

QTEST_MAIN(TestStudioRuns)
#include "test_studio_runs.moc"
