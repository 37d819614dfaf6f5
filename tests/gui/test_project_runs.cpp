// Editing runs in the project store: rename, tags (validated), soft delete with
// restore, the purge that removes a deleted run's metrics, checkpoints and evaluation,
// unique default names, and the one-query run summaries.
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>

#include "project_test_util.h"

using namespace kiln::projects;
using kiln_test::project_error;

class TestProjectRuns : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString file(const QString& name) const { return dir_.filePath(name); }

  // A finished run with 3 steps, 2 epochs, a checkpoint and an evaluation.
  int64_t finishedRun(Project& p, const std::string& name) {
    const int64_t id = p.begin_run({name, "{}", "cpu", 0});
    {
      MetricsWriter w(p.path(), id);
      for (int s = 1; s <= 3; ++s) w.step({s, 1, 1.0 / s, 0.01, 100.0 * s, 0.1 * s});
      w.epoch({1, 1.0, 0.5, 1.1, 0.6, 0.01, 2});
      w.epoch({2, 0.5, 0.7, 0.6, 0.8, 0.01, 2});
    }
    QDir().mkpath(file("ckpt"));
    kiln_test::write_file(file("ckpt/model.bin"), "weights");
    p.add_checkpoint(id, 2, file("ckpt").toStdString());
    Evaluation ev;
    ev.count = 4;
    ev.accuracy = 0.75;
    ev.class_names = {"a", "b"};
    ev.confusion = {2, 1, 0, 1};
    p.set_evaluation(id, ev);
    p.end_run(id, RunStatus::finished, "", "");
    return id;
  }
  static int64_t rows(Project& p, const std::string& table, int64_t run) {
    Statement s = p.database().prepare("SELECT COUNT(*) FROM " + table + " WHERE run = ?");
    s.bind(1, run);
    s.step();
    return s.int64(0);
  }

 private slots:
  void renamePersistsAndValidates() {
    const QString path = file("rename.kiln");
    int64_t id = 0;
    {
      Project p = Project::create(path.toStdString());
      id = finishedRun(p, "first");
      p.rename_run(id, "  baseline  ");
      QString e = project_error([&] { p.rename_run(id, "two\nlines"); });
      QVERIFY2(e.contains("run " + QString::number(id)) && e.contains("line break"), qPrintable(e));
      e = project_error([&] { p.rename_run(id, " \t "); });
      QVERIFY2(e.contains("empty"), qPrintable(e));
      e = project_error([&] { p.rename_run(id, std::string(Project::kMaxRunNameBytes + 1, 'x')); });
      QVERIFY2(e.contains("1001 bytes") && e.contains("1000"), qPrintable(e));
      e = project_error([&] { p.rename_run(99, "x"); });
      QVERIFY2(e.contains("run 99") && e.contains("no such run"), qPrintable(e));
      p.rename_run(id, std::string(500, 'n'));  // long but allowed
      p.rename_run(id, "baseline");
    }
    Project p = Project::open(path.toStdString());
    QCOMPARE(p.runs().at(0).name, std::string("baseline"));
  }

  void tagsAreTrimmedAndValidated() {
    const QString path = file("tags.kiln");
    Project p = Project::create(path.toStdString());
    const int64_t id = finishedRun(p, "r");
    p.set_run_tags(id, {" baseline ", "", "adam", "baseline", "lr sweep"});
    QCOMPARE(p.runs().at(0).tags, (std::vector<std::string>{"baseline", "adam", "lr sweep"}));
    QString e = project_error([&] { p.set_run_tags(id, {"ok", "bad\ntag"}); });
    QVERIFY2(e.contains("line break") && e.contains("bad"), qPrintable(e));
    e = project_error([&] { p.set_run_tags(id, {std::string(Project::kMaxTagBytes + 1, 't')}); });
    QVERIFY2(e.contains("201 bytes"), qPrintable(e));
    std::vector<std::string> many;
    for (size_t i = 0; i <= Project::kMaxTags; ++i) many.push_back(std::to_string(i) + "t");
    e = project_error([&] { p.set_run_tags(id, many); });
    QVERIFY2(e.contains("51 tags"), qPrintable(e));
    QCOMPARE(p.runs().at(0).tags.size(), size_t(3));  // unchanged by the refused edits
    p.set_run_tags(id, {});
    QVERIFY(p.runs().at(0).tags.empty());
  }

  void deleteRestoreAndPurge() {
    const QString path = file("delete.kiln");
    int64_t keep = 0, gone = 0;
    {
      Project p = Project::create(path.toStdString());
      keep = finishedRun(p, "keep");
      gone = finishedRun(p, "gone");
      p.delete_run(gone);
      QCOMPARE(p.runs().size(), size_t(1));
      QCOMPARE(p.runs(true).size(), size_t(2));
      QVERIFY(p.runs(true).at(1).deleted);
      p.restore_run(gone);  // undo: everything is back
      QCOMPARE(p.runs().size(), size_t(2));
      QCOMPARE(p.step_metrics(gone).size(), size_t(3));
      p.delete_run(gone);
      QCOMPARE(p.purge_deleted_runs(), 1);
      for (const char* table : {"step_metrics", "epoch_metrics", "checkpoints", "evaluations"})
        QVERIFY2(rows(p, table, gone) == 0, table);
      QCOMPARE(rows(p, "step_metrics", keep), int64_t(3));
      QVERIFY(p.evaluation(keep).has_value());
      QCOMPARE(kiln_test::raw_int(path, "SELECT COUNT(*) FROM checkpoint_files"), int64_t(1));
      QString e = project_error([&] { p.restore_run(gone); });
      QVERIFY2(e.contains("no such run"), qPrintable(e));
      e = project_error([&] { p.delete_run(77); });
      QVERIFY2(e.contains("run 77"), qPrintable(e));
      const int64_t running = p.begin_run({"live", "{}", "cpu", 0});
      e = project_error([&] { p.delete_run(running); });
      QVERIFY2(e.contains("still running"), qPrintable(e));
    }
    QCOMPARE(Project::open(path.toStdString()).runs(true).size(), size_t(2));  // keep + live
  }

  void defaultNamesAreUnique() {
    Project p = Project::create(file("names.kiln").toStdString());
    const std::string base = "adam lr 0.005, 1 epoch(s)";
    for (int i = 0; i < 3; ++i) p.end_run(p.begin_run({base, "{}", "cpu", 0}), RunStatus::finished, "", "");
    const auto runs = p.runs();
    QCOMPARE(runs.at(0).name, base);
    QCOMPARE(runs.at(1).name, base + " #2");
    QCOMPARE(runs.at(2).name, base + " #3");
  }

  void summariesMatchTheMetrics() {
    Project p = Project::create(file("summary.kiln").toStdString());
    const int64_t a = finishedRun(p, "a");
    const int64_t b = p.begin_run({"b", "{}", "cpu", 0});
    p.end_run(b, RunStatus::stopped, "stopped", "");
    const auto s = p.run_summaries();
    QCOMPARE(s.size(), size_t(2));
    QCOMPARE(s[0].run.id, a);
    QCOMPARE(s[0].last_epoch.epoch, 2);
    QCOMPARE(s[0].last_epoch.val_accuracy, 0.8);
    QCOMPARE(s[0].steps, int64_t(3));
    QCOMPARE(s[0].mean_images_per_second, 200.0);
    QVERIFY(s[0].has_evaluation);
    QCOMPARE(s[0].test_accuracy, 0.75);
    QCOMPARE(s[1].last_epoch.epoch, 0);
    QVERIFY(std::isnan(s[1].last_epoch.val_accuracy) && std::isnan(s[1].mean_images_per_second));
    QVERIFY(!s[1].has_evaluation && std::isnan(s[1].test_accuracy));
    p.delete_run(b);
    QCOMPARE(p.run_summaries().size(), size_t(1));
    QCOMPARE(p.run_summaries(true).size(), size_t(2));
  }
};

QTEST_GUILESS_MAIN(TestProjectRuns)
#include "test_project_runs.moc"
