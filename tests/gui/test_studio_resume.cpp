// Issue 14, Deliver 5 in the Studio: mid-epoch checkpoints stored in the project (schema 11: one
// per run, dropped by the next epoch checkpoint; a schema-10 project made by the Kiln before it,
// tests/fixtures/project_schema10.kiln, opens with its checkpoints and its stopped run can be
// continued), and Resume Run: a headless run killed with SIGKILL after a mid-epoch checkpoint, and
// a run stopped in the window, continue from their checkpoints with exactly the per-step losses,
// epoch figures and test accuracy of a run never interrupted (same seed, CPU).
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>
#include <random>

#include "app/studio/main_window.h"
#include "app/studio/training_session.h"
#include "projects/project.h"
#include "projects/schema.h"
#include "tests/gui/headless_studio.h"
#include "tests/gui/test_files.h"
#include "widgets/project/dataset_panel.h"
#include "widgets/project/runs_view.h"
#include "widgets/training/live_plots.h"
#include "widgets/training/log_panel.h"
#include "widgets/training/training_panel.h"

using namespace kiln::studio;
using kiln::projects::Project;
using kiln::projects::RunStatus;
using kiln::studio::test::writeProject;

namespace {

// 4000 rows of 4 features around class-dependent means, 3 classes (as tests/cli/test_resume.sh).
void writeTable(const QString& path) {
  std::mt19937 gen(0);
  std::normal_distribution<double> noise(0, 1);
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write("a,b,c,d,label\n");
  for (int i = 0; i < 4000; ++i) {
    const int k = i % 3;
    QByteArray row;
    for (int j = 0; j < 4; ++j) row += QByteArray::number(k * (j + 1) * 0.3 + noise(gen), 'f', 4) + ",";
    f.write(row + "k" + QByteArray::number(k) + "\n");
  }
}

// The dataset setting of writeTable's table `csv` (a project's graph is fitted by its first
// headless run).
DatasetSettings tableSettings(const QString& csv) {
  DatasetSettings d;
  d.name = "csv";
  d.path = csv.toStdString();
  d.label = "label";
  return d;
}

// Run `b`'s per-step losses and learning rates, epoch figures and test accuracy are run `a`'s,
// bit for bit; `steps` of each.
void compareRuns(const Project& p, int64_t a, int64_t b, size_t steps) {
  const auto sa = p.step_metrics(a), sb = p.step_metrics(b);
  QCOMPARE(sa.size(), steps);
  QCOMPARE(sb.size(), steps);
  for (size_t i = 0; i < steps; ++i) {
    QCOMPARE(sa[i].step, sb[i].step);
    QVERIFY2(sa[i].loss == sb[i].loss && sa[i].lr == sb[i].lr,
             qPrintable(QString("step %1: loss %2 vs %3").arg(sa[i].step).arg(sa[i].loss, 0, 'g', 17).arg(sb[i].loss, 0, 'g', 17)));
  }
  const auto ea = p.epoch_metrics(a), eb = p.epoch_metrics(b);
  QCOMPARE(ea.size(), eb.size());
  for (size_t i = 0; i < ea.size(); ++i) {
    QCOMPARE(ea[i].train_loss, eb[i].train_loss);
    QCOMPARE(ea[i].train_accuracy, eb[i].train_accuracy);
    QCOMPARE(ea[i].val_loss, eb[i].val_loss);
  }
  const auto va = p.evaluation(a), vb = p.evaluation(b);
  QVERIFY(va && vb);
  QCOMPARE(va->accuracy, vb->accuracy);
  QCOMPARE(va->confusion, vb->confusion);
}

RunStatus statusOf(const Project& p, int64_t run) {
  for (const auto& r : p.runs())
    if (r.id == run) return r.status;
  return RunStatus::failed;
}

}  // namespace

class TestStudioResume : public QObject {
  Q_OBJECT
 private slots:
  void aRunKeepsOneMidEpochCheckpoint() {
    QTemporaryDir dir;
    Project p = Project::create(dir.filePath("p.kiln").toStdString());
    const int64_t run = p.begin_run({"r", "{}", "cpu", 0});
    auto checkpoint = [&](const QByteArray& bytes) {
      QDir(dir.filePath("ckpt")).removeRecursively();
      QDir().mkpath(dir.filePath("ckpt"));
      QFile f(dir.filePath("ckpt/trainer.json"));
      f.open(QIODevice::WriteOnly);
      f.write(bytes);
      return dir.filePath("ckpt").toStdString();
    };
    QVERIFY(!p.resume_point(run));
    p.add_epoch_checkpoint(run, 1, checkpoint("epoch 1"), 0.5, 10);
    p.add_mid_epoch_checkpoint(run, 1, 3, 13, checkpoint("batch 3"));
    p.add_mid_epoch_checkpoint(run, 1, 5, 15, checkpoint("batch 5"));  // replaces batch 3
    auto point = p.resume_point(run);
    QVERIFY(point);
    QCOMPARE(point->epoch, 1);
    QCOMPARE(point->batch, int64_t(5));
    QCOMPARE(point->step, int64_t(15));
    QCOMPARE(p.checkpoint_epochs(run), std::vector<int>{1});  // epoch checkpoints only
    QCOMPARE(p.checkpoints(run).size(), size_t(1));
    kiln::projects::Statement rows = p.database().prepare("SELECT count(*) FROM checkpoints WHERE batch > 0");
    QVERIFY(rows.step());
    QCOMPARE(rows.int64(0), int64_t(1));
    p.restore_resume_point(run, dir.filePath("out").toStdString());
    QFile restored(dir.filePath("out/trainer.json"));
    QVERIFY(restored.open(QIODevice::ReadOnly));
    QCOMPARE(restored.readAll(), QByteArray("batch 5"));
    p.restore_checkpoint(run, 1, dir.filePath("epoch").toStdString());  // the epoch's own files
    QFile epoch(dir.filePath("epoch/trainer.json"));
    QVERIFY(epoch.open(QIODevice::ReadOnly));
    QCOMPARE(epoch.readAll(), QByteArray("epoch 1"));
    // The next epoch checkpoint is newer: the mid-epoch one goes.
    p.add_epoch_checkpoint(run, 2, checkpoint("epoch 2"), 0.4, 20);
    point = p.resume_point(run);
    QCOMPARE(point->epoch, 2);
    QCOMPARE(point->batch, int64_t(0));
    QCOMPARE(point->step, int64_t(20));
    QCOMPARE(p.checkpoint_epochs(run), (std::vector<int>{1, 2}));  // the best (epoch 1) and the latest
    QVERIFY_THROWS_EXCEPTION(kiln::projects::ProjectError, p.add_mid_epoch_checkpoint(run, 2, 0, 20, checkpoint("x")));
  }

  // Stopped, interrupted and failed runs with a checkpoint continue, except one whose loss became
  // NaN (it would again: Note [Continuing a failed run]).
  void onlyRunsThatCanGoOnContinue() {
    QTemporaryDir dir;
    const std::string ckpt = dir.filePath("ckpt").toStdString();
    QDir().mkpath(dir.filePath("ckpt"));
    QFile f(dir.filePath("ckpt/model.safetensors"));
    f.open(QIODevice::WriteOnly);
    f.write("weights");
    f.close();
    Project p = Project::create(dir.filePath("p.kiln").toStdString());
    const std::string nan = "training stopped: the loss became nan at epoch 1, step 4 (batch 4 of 10) with learning "
                            "rate 0.1; try a lower learning rate (e.g. 0.01)";
    auto make = [&](RunStatus status, bool checkpoint, const std::string& message = "") {
      const int64_t run = p.begin_run({"r", "{}", "cpu", 0});
      if (checkpoint) p.add_mid_epoch_checkpoint(run, 0, 4, 4, ckpt);
      if (status != RunStatus::running) p.end_run(run, status, message, "");
      return run;
    };
    const int64_t running = make(RunStatus::running, true), finished = make(RunStatus::finished, true),
                  failed = make(RunStatus::failed, true, nan), early = make(RunStatus::stopped, false),
                  stopped = make(RunStatus::stopped, true), deleted = make(RunStatus::stopped, true),
                  diskFull = make(RunStatus::failed, true, "metrics could not be saved: database or disk is full"),
                  failedEarly = make(RunStatus::failed, false, "out of memory");
    p.delete_run(deleted);
    QVERIFY(QString::fromStdString(p.why_not_resumable(running)).contains("still running"));
    QVERIFY(QString::fromStdString(p.why_not_resumable(finished)).contains("no epochs left"));
    QVERIFY(QString::fromStdString(p.why_not_resumable(failed)).contains("the loss became nan at epoch 1"));
    QVERIFY(QString::fromStdString(p.why_not_resumable(failed)).contains("would fail the same way"));
    QCOMPARE(p.why_not_resumable(diskFull), std::string());  // the machine's failure, not the run's
    QVERIFY(QString::fromStdString(p.why_not_resumable(failedEarly)).contains("before its first checkpoint"));
    QVERIFY(QString::fromStdString(p.why_not_resumable(early)).contains("before its first checkpoint"));
    QVERIFY(QString::fromStdString(p.why_not_resumable(deleted)).contains("deleted"));
    QVERIFY(QString::fromStdString(p.why_not_resumable(999)).contains("no run 999"));
    QCOMPARE(p.why_not_resumable(stopped), std::string());
    QVERIFY_THROWS_EXCEPTION(kiln::projects::ProjectError, p.reopen_run(finished, 4, 0));

    // Reopened: running again, its rows after the checkpoint and its evaluation gone.
    {
      kiln::projects::MetricsWriter w(p.path(), stopped);
      for (int s = 1; s <= 10; ++s) w.step({s, s <= 5 ? 1 : 2, 1.0 / s, 0.1, 100, 0.1 * s});
      w.epoch({1, 0.5, 0.6, 0.5, 0.6, 0.1, 1});
      w.epoch({2, 0.4, 0.7, 0.4, 0.7, 0.1, 1});
    }
    p.end_run(stopped, RunStatus::stopped, "", "{\"steps\": 10}");
    p.reopen_run(stopped, 7, 1);
    QCOMPARE(statusOf(p, stopped), RunStatus::running);
    for (const auto& r : p.runs())
      if (r.id == stopped) QVERIFY(r.ended_at.empty() && r.final_metrics_json.empty());
    QCOMPARE(p.step_metrics(stopped).size(), size_t(7));
    QCOMPARE(p.epoch_metrics(stopped).size(), size_t(1));
  }

  void schema10ProjectMigrates() {
    QTemporaryDir dir;
    const QString path = dir.filePath("old10.kiln");
    QVERIFY(QFile::copy(KILN_SOURCE_DIR "/tests/fixtures/project_schema10.kiln", path));
    QFile::setPermissions(path, QFile::ReadOwner | QFile::WriteOwner);
    QCOMPARE(kiln::projects::check_project_file(path.toStdString(), kiln::projects::kCurrentSchema), 10);
    Project p = Project::open(path.toStdString());  // migrated to the current schema
    QCOMPARE(kiln::projects::check_project_file(path.toStdString(), kiln::projects::kCurrentSchema),
             kiln::projects::kCurrentSchema);
    // Run 1 finished (2 epochs); run 2 was stopped with Ctrl-C after 193 epochs of iris, its
    // latest (and best) epoch checkpoint at epoch 192.
    QCOMPARE(p.checkpoint_epochs(1), std::vector<int>{2});
    QCOMPARE(p.checkpoint_epochs(2), std::vector<int>{192});
    QVERIFY(QString::fromStdString(p.why_not_resumable(1)).contains("finished"));
    QCOMPARE(p.why_not_resumable(2), std::string());
    const auto point = p.resume_point(2);
    QVERIFY(point);
    QCOMPARE(point->epoch, 192);
    QCOMPARE(point->batch, int64_t(0));
    QCOMPARE(point->step, int64_t(0));  // not recorded before schema 11
    p.restore_resume_point(2, dir.filePath("ckpt").toStdString());
    QVERIFY(QFile::exists(dir.filePath("ckpt/model.safetensors")));
    QVERIFY(QFile::exists(dir.filePath("ckpt/trainer.json")));
  }

  // SIGKILL after a mid-epoch checkpoint, the run then marked failed (the disk was full), then
  // --resume: the losses of a run never killed.
  void killedHeadlessRunResumes() {
    QTemporaryDir dir;
    const QString csv = dir.filePath("t.csv"), file = dir.filePath("p.kiln");
    writeTable(csv);
    writeProject(file, "table_mlp", tableSettings(csv));
    const QStringList train = {"--headless", "--project", file, "--train", "--epochs", "4", "--batch-size", "4",
                               "--device", "cpu"};
    QProcess killed;
    killed.setProcessChannelMode(QProcess::MergedChannels);
    killed.start(KILN_BINARY_DIR "/bin/kiln-studio",
                 QStringList(train) << "--dataset" << "csv:" + csv << "--label" << "label" << "--checkpoint-every" << "100");
    // Until a mid-epoch checkpoint is stored and the metrics before it are committed (~200 ms).
    // Killed in its third epoch, so that the time it trained is much longer than a start.
    QString out;
    int64_t step = 0;
    const QRegularExpression stored("checkpoint stored in the project at step (\\d+)");
    QVERIFY2(QTest::qWaitFor(
                 [&] {
                   out += killed.readAll();
                   if (step == 0)
                     for (auto it = stored.globalMatch(out); it.hasNext();)
                       if (const int64_t s = it.next().captured(1).toLongLong(); s >= 1400) step = s;
                   return step > 0 && int64_t(Project::open(file.toStdString()).step_metrics(1).size()) >= step;
                 },
                 120000),
             qPrintable(out));
    QVERIFY2(killed.state() == QProcess::Running, qPrintable(out + "\nthe run ended before it was killed"));
    killed.kill();  // SIGKILL
    QVERIFY(killed.waitForFinished());
    int64_t resumedAt = 0;
    double before = 0;  // the run's seconds at its checkpoint
    {
      Project p = Project::open(file.toStdString());
      QCOMPARE(statusOf(p, 1), RunStatus::interrupted);
      const auto point = p.resume_point(1);
      QVERIFY(point && point->batch > 0 && point->step % 100 == 0);
      resumedAt = point->step;
      before = p.step_metrics(1).at(size_t(resumedAt - 1)).time_s;
      // As a run whose project filled the disk ends (TrainingSession::finish): failed, its
      // checkpoint kept. Once there is space again, --resume picks it and continues it.
      p.end_run(1, RunStatus::failed, "metrics could not be saved to the project: database or disk is full", "");
    }
    int code = 0;
    out = kiln::test::studio({"--headless", "--project", file, "--resume"}, &code);
    QVERIFY2(code == 0, qPrintable(out));
    QVERIFY2(out.contains("run 1 failed earlier (metrics could not be saved to the project: database or disk is full); "
                          "continuing it from its checkpoint"),
             qPrintable(out));
    QVERIFY2(out.contains(QString("continuing run 1 at step %1 (batch %2 of epoch").arg(resumedAt + 1).arg(resumedAt % 700 + 1)),
             qPrintable(out));
    out = kiln::test::studio(train, &code);  // the run never interrupted: run 2
    QVERIFY2(code == 0, qPrintable(out));
    Project p = Project::open(file.toStdString());
    QCOMPARE(statusOf(p, 1), RunStatus::finished);
    compareRuns(p, 1, 2, 4 * 700);
    // The run's clock went on from its checkpoint: the steps' times and its final seconds count
    // the killed part too.
    const auto steps = p.step_metrics(1);
    const double resumedFirst = steps.at(size_t(resumedAt)).time_s, last = steps.back().time_s;
    QVERIFY2(resumedFirst >= before, qPrintable(QString("step %1 at %2 s, after step %3 at %4 s")
                                                    .arg(resumedAt + 1).arg(resumedFirst).arg(resumedAt).arg(before)));
    for (const auto& r : p.runs())
      if (r.id == 1) {
        const double seconds = QJsonDocument::fromJson(QByteArray::fromStdString(r.final_metrics_json))["seconds"].toDouble();
        QVERIFY2(seconds >= before + (last - resumedFirst) && seconds >= last,
                 qPrintable(QString("%1 s in all; %2 s before the kill, %3 s after").arg(seconds).arg(before).arg(last - resumedFirst)));
      }
    // Nothing left to continue; an override is a usage error.
    out = kiln::test::studio({"--headless", "--project", file, "--resume"}, &code);
    QVERIFY2(code == 1 && out.contains("no stopped, interrupted or failed run with a checkpoint"), qPrintable(out));
    out = kiln::test::studio({"--headless", "--project", file, "--resume", "--run", "2"}, &code);
    QVERIFY2(code == 1 && out.contains("run 2 finished: it has no epochs left to train"), qPrintable(out));
    out = kiln::test::studio({"--headless", "--project", file, "--resume", "--lr", "0.1"}, &code);
    QVERIFY2(code == 2 && out.contains("drop --lr"), qPrintable(out));
  }

  // Stop in the window checkpoints where it stopped; Resume Run (the Runs view's menu) continues.
  void stoppedRunResumesInTheWindow() {
    QTemporaryDir dir;
    const QString csv = dir.filePath("t.csv"), file = dir.filePath("p.kiln");
    writeTable(csv);
    writeProject(file, "table_mlp", tableSettings(csv));
    int code = 0;
    const QString out = kiln::test::studio(
        {"--headless", "--project", file, "--dataset", "csv:" + csv, "--label", "label", "--train", "--epochs", "1"}, &code);
    QVERIFY2(code == 0, qPrintable(out));  // run 1: the graph fitted to the table
    MainWindow w;
    w.setSilent(true);
    QVERIFY(w.openProject(file));
    auto* panel = w.findChild<DatasetPanel*>();
    QVERIFY(QTest::qWaitFor([&] { return panel->isLoaded() || !panel->errorText().isEmpty(); }, 60000));
    QVERIFY2(panel->isLoaded(), qPrintable(panel->errorText()));
    TrainingConfig c;
    c.epochs = 3;
    c.batch_size = 4;
    c.device = "cpu";
    c.checkpoint_minutes = 0;  // epoch ends and the Stop only
    w.trainingPanel()->setConfig(c);
    QVERIFY2(w.startTraining(), qPrintable(w.trainBlockers().join("; ")));
    QVERIFY(QTest::qWaitFor([&] { return w.session()->runId() != 0 && w.session()->rowsCommitted() >= 300; }, 60000));
    const int64_t run = w.session()->runId();
    w.session()->stop();
    QVERIFY(QTest::qWaitFor([&] { return !w.session()->isRunning(); }, 60000));
    int64_t stoppedAt = 0;
    {
      Project p = Project::open(file.toStdString());
      QCOMPARE(statusOf(p, run), RunStatus::stopped);
      const auto point = p.resume_point(run);
      // Mid-epoch as a rule; a Stop that comes during an epoch's evaluation or checkpoint (a slow
      // disk, a loaded machine) stops at that epoch's end, whose checkpoint is then where it stopped.
      QVERIFY(point);
      QVERIFY2(point->batch > 0 || (point->step > 0 && point->step % 700 == 0),
               qPrintable(QString("batch %1, step %2").arg(point->batch).arg(point->step)));
      stoppedAt = point->step;
      QCOMPARE(int64_t(p.step_metrics(run).size()), stoppedAt);  // where it stopped, not an earlier checkpoint
      QVERIFY(stoppedAt < 3 * 700);
    }
    {
      MainWindow reopened;  // the log says which run can be continued, and from where
      reopened.setSilent(true);
      QVERIFY(reopened.openProject(file));
      QVERIFY2(reopened.logPanel()->text().contains(QString("run %1 (").arg(run)) &&
                   reopened.logPanel()->text().contains("the Runs view's Resume Run continues it"),
               qPrintable(reopened.logPanel()->text()));
    }
    emit w.runsView()->resumeRequested(run);
    QVERIFY(w.session()->isRunning());
    QCOMPARE(int64_t(w.plots()->stepCount()), stoppedAt);  // the curve so far, before the new steps
    QVERIFY(QTest::qWaitFor([&] { return !w.session()->isRunning(); }, 120000));
    QVERIFY2(w.startTraining(), qPrintable(w.trainBlockers().join("; ")));  // never stopped
    QVERIFY(QTest::qWaitFor([&] { return w.session()->runId() > run; }, 60000));
    const int64_t uninterrupted = w.session()->runId();
    QVERIFY(QTest::qWaitFor([&] { return !w.session()->isRunning(); }, 120000));
    {
      Project p = Project::open(file.toStdString());
      QCOMPARE(statusOf(p, run), RunStatus::finished);
      compareRuns(p, run, uninterrupted, 3 * 700);
    }
    QVERIFY(!w.resumeRun(run));  // finished: refused with the reason
    QVERIFY2(w.logPanel()->text().contains("no epochs left to train"), qPrintable(w.logPanel()->text()));
  }
};

QTEST_MAIN(TestStudioResume)
#include "test_studio_resume.moc"
