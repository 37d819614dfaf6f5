// MetricsWriter under concurrency and a crash: a writer thread while the UI
// connection reads, several threads on one writer, the ~200 ms background commit,
// and a child process SIGKILLed mid-run whose committed rows must all survive.
//
// Child mode: `test_project_crash --child PROJECT RUN` writes step metrics forever (one
// every ~1 ms, so most commits come from the 200 ms timer) and prints "committed N"
// after each commit it observes.
#include <QElapsedTimer>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <thread>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "project_test_util.h"

using namespace kiln::projects;

static int run_child(const std::string& path, int64_t run) {
  MetricsWriter writer(path, run);
  int64_t reported = 0;
  for (int64_t s = 1;; ++s) {
    writer.step({s, static_cast<int>(s / 1000) + 1, 1.0 / static_cast<double>(s), 0.01, 1000, 0.001 * s});
    const int64_t committed = writer.rows_committed();
    if (committed != reported) {
      reported = committed;
      std::printf("committed %lld\n", static_cast<long long>(committed));
      std::fflush(stdout);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// Whether another process sees a lock on SQLite's SHARED byte range of the file
// (https://sqlite.org/lockingv3.html: PENDING_BYTE 0x40000000, SHARED range from +2, 510 bytes).
static bool other_process_sees_lock(const std::string& path) {
  const pid_t child = fork();
  if (child == 0) {
    const int fd = ::open(path.c_str(), O_RDWR);
    struct flock probe {};
    probe.l_type = F_WRLCK;
    probe.l_whence = SEEK_SET;
    probe.l_start = 0x40000002;
    probe.l_len = 510;
    const bool locked = fd >= 0 && fcntl(fd, F_GETLK, &probe) == 0 && probe.l_type != F_UNLCK;
    _exit(locked ? 0 : 1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// A new project at `path` with one run, and this binary started in --child mode writing
// that run's metrics; returns the run's id.
static int64_t start_writer_child(const QString& path, const char* run_name, QProcess& child) {
  int64_t run = 0;
  {
    Project p = Project::create(path.toStdString());
    run = p.begin_run({run_name, "{}", "cpu", 0});
  }
  child.setProgram(QCoreApplication::applicationFilePath());
  child.setArguments({"--child", path, QString::number(run)});
  child.setProcessChannelMode(QProcess::ForwardedErrorChannel);
  child.start();
  return run;
}

class TestProjectCrash : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString file(const QString& name) const { return dir_.filePath(name); }

 private slots:
  void backgroundCommitWithoutFlush() {
    const std::string path = file("timer.kiln").toStdString();
    Project p = Project::create(path);
    const int64_t run = p.begin_run({"r", "{}", "cpu", 0});
    MetricsWriter w(path, run);
    for (int s = 1; s <= 10; ++s) w.step({s, 1, 1.0, 0.1, 10, 0.1});
    QTRY_COMPARE_WITH_TIMEOUT(w.rows_committed(), int64_t(10), 5000);  // the ~200 ms timer, no flush()
    QCOMPARE(p.step_metrics(run).size(), size_t(10));
    for (int s = 11; s <= 11 + MetricsWriter::kMaxRows; ++s) w.step({s, 1, 1.0, 0.1, 10, 0.1});
    QTRY_VERIFY_WITH_TIMEOUT(w.rows_committed() >= 10 + MetricsWriter::kMaxRows, 5000);
  }

  void writerThreadWhileUiReads() {
    const std::string path = file("concurrent.kiln").toStdString();
    Project p = Project::create(path);
    const int64_t run = p.begin_run({"r", "{}", "cpu", 0});
    constexpr int kSteps = 4000;
    std::atomic<bool> done{false};
    std::thread trainer([&] {
      MetricsWriter w(path, run);
      for (int s = 1; s <= kSteps; ++s) {
        w.step({s, 1, 1.0 / s, 0.1, 10, 0.001 * s});
        if (s % 1000 == 0) w.epoch({s / 1000, 1, 0.5, 1, 0.5, 0.1, 1});
        if (s % 8 == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
      done = true;
    });  // the writer's destructor commits the rest
    size_t last = 0;
    int reads = 0;
    bool prefix = true;  // checked after join(): a QVERIFY here would leave the thread running
    while (!done && prefix) {
      auto steps = p.step_metrics(run);  // the UI connection reads while the writer commits
      prefix = steps.size() >= last;
      for (size_t i = 0; i < steps.size(); ++i) prefix = prefix && steps[i].step == int64_t(i + 1);  // no gaps
      last = steps.size();
      p.autosave("{\"reads\":" + std::to_string(++reads) + "}");  // UI writes interleave too
    }
    trainer.join();
    QVERIFY2(prefix, "the UI read a non-prefix of the committed steps");
    QCOMPARE(p.step_metrics(run).size(), size_t(kSteps));
    QCOMPARE(p.epoch_metrics(run).size(), size_t(4));
    QVERIFY(reads > 1);
  }

  void manyThreadsOneWriter() {
    const std::string path = file("threads.kiln").toStdString();
    Project p = Project::create(path);
    const int64_t run = p.begin_run({"r", "{}", "cpu", 0});
    MetricsWriter w(path, run);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&w, t] {
        for (int i = 0; i < 1000; ++i) {
          w.step({t * 1000 + i + 1, 1, 0.5, 0.1, 10, 0.1});
          if (i % 300 == 0) w.flush();
        }
      });
    for (auto& th : threads) th.join();
    w.flush();
    QCOMPARE(w.rows_committed(), int64_t(4000));
    QCOMPARE(p.step_metrics(run).size(), size_t(4000));
  }

  // Opening a project while another connection holds the file's EXCLUSIVE lock for a moment (as
  // one does while it closes as the last connection and checkpoints the WAL): the open waits for
  // it. Before every connection had the busy timeout, the read-only check connection of
  // Project::open failed at once with "database is locked" (cli.sweep_run saw it: two lanes
  // ending their runs together, one run left 'running'). A child process holds the lock
  // (https://sqlite.org/lockingv3.html: PENDING_BYTE 0x40000000, SHARED range from +2, 510 bytes).
  void openWaitsForAnExclusiveLock() {
    const std::string path = file("locked.kiln").toStdString();
    { Project::create(path).begin_run({"r", "{}", "cpu", 0}); }
    int ready[2];
    QVERIFY(pipe(ready) == 0);
    const pid_t child = fork();
    if (child == 0) {
      const int fd = ::open(path.c_str(), O_RDWR);
      struct flock lock {};
      lock.l_type = F_WRLCK;
      lock.l_whence = SEEK_SET;
      lock.l_start = 0x40000000;
      lock.l_len = 512;  // PENDING, RESERVED and the SHARED range: EXCLUSIVE
      const char ok = fd >= 0 && fcntl(fd, F_SETLK, &lock) == 0 ? '1' : '0';
      if (write(ready[1], &ok, 1) != 1) _exit(2);
      usleep(400 * 1000);
      _exit(0);  // the lock goes with the process
    }
    char ok = 0;
    QCOMPARE(read(ready[0], &ok, 1), ssize_t(1));
    QCOMPARE(ok, '1');
    QElapsedTimer timer;
    timer.start();
    std::string error;
    try {
      Project p = Project::open(path);
      p.end_run(1, RunStatus::finished, "", "{}");
    } catch (const std::exception& e) {
      error = e.what();
    }
    const qint64 waited = timer.elapsed();
    int status = 0;
    waitpid(child, &status, 0);
    ::close(ready[0]), ::close(ready[1]);
    QVERIFY2(error.empty(), error.c_str());
    QVERIFY2(waited >= 200, qPrintable(QString("opened after %1 ms, while the lock was held").arg(waited)));
    QCOMPARE(Project::open(path).runs().at(0).status, RunStatus::finished);
  }

  void sigkilledWriterKeepsCommittedRows() {
    const QString path = file("crash.kiln");
    QProcess child;
    const int64_t run = start_writer_child(path, "killed", child);
    QVERIFY(child.waitForStarted(10000));
    int64_t reported = 0;
    int commits = 0;
    QByteArray pending;
    while (commits < 5) {  // at least 5 commits (~1 s) before the kill
      QVERIFY2(child.waitForReadyRead(10000), "the child stopped reporting commits");
      pending += child.readAllStandardOutput();
      for (qsizetype nl; (nl = pending.indexOf('\n')) >= 0; pending.remove(0, nl + 1)) {
        const QByteArray line = pending.left(nl);
        QVERIFY2(line.startsWith("committed "), line.constData());
        const int64_t n = line.mid(10).toLongLong();
        QVERIFY(n > reported);
        reported = n;
        ++commits;
      }
    }
    child.kill();  // SIGKILL on Unix: no destructor, no flush
    QVERIFY(child.waitForFinished(10000));
    QCOMPARE(child.exitStatus(), QProcess::CrashExit);
    pending += child.readAllStandardOutput();  // commits printed after our last read
    for (const QByteArray& line : pending.split('\n'))
      if (line.startsWith("committed ")) reported = std::max(reported, int64_t(line.mid(10).toLongLong()));
    QVERIFY(QFile::exists(path + "-wal"));  // killed with an uncheckpointed WAL

    Project p = Project::open(path.toStdString());  // runs quick_check first
    const auto steps = p.step_metrics(run);
    qInfo("reported %lld committed rows before SIGKILL; the file holds %zu", static_cast<long long>(reported),
          steps.size());
    QVERIFY(int64_t(steps.size()) >= reported);
    for (size_t i = 0; i < steps.size(); ++i) QCOMPARE(steps[i].step, int64_t(i + 1));
    // Nobody ended it, but its process is gone: open() stored it as interrupted.
    QCOMPARE(p.runs().at(0).status, RunStatus::interrupted);
    QCOMPARE(p.runs().at(0).message, std::string(kInterruptedMessage));
    QVERIFY(!p.runs().at(0).ended_at.empty());
    QCOMPARE(kiln_test::raw_int(path, "SELECT count(*) FROM runs WHERE status = 'interrupted'"), int64_t(1));
    QCOMPARE(p.step_metrics(run).size(), steps.size());  // the metrics are kept
    p.end_run(run, RunStatus::failed, "killed", "{}");   // the file is writable again
    QCOMPARE(p.runs().at(0).status, RunStatus::failed);
  }

  // While the writing process lives (another process on this host), opening the project
  // leaves its run running; the pid and host in the run are the child's.
  void liveWriterIsNotInterrupted() {
    const QString path = file("alive.kiln");
    QProcess child;
    start_writer_child(path, "alive", child);
    QVERIFY(child.waitForStarted(10000));
    QVERIFY2(child.waitForReadyRead(10000), "the child reported no commit");
    {
      Project p = Project::open(path.toStdString());
      const RunRecord r = p.runs().at(0);
      QCOMPARE(r.status, RunStatus::running);
      QCOMPARE(r.pid, static_cast<int64_t>(child.processId()));
      QCOMPARE(r.host, host_name());
      QVERIFY(std::abs(r.heartbeat_at - unix_time_now()) < 60);
      QCOMPARE(p.mark_interrupted_runs(), 0);
      // Taken for interrupted by mistake (e.g. after a suspend): the next commit revives it.
      p.database().exec("UPDATE runs SET status = 'interrupted', message = 'x'");
      QTRY_COMPARE_WITH_TIMEOUT(p.runs().at(0).status, RunStatus::running, 5000);
    }
    child.kill();
    QVERIFY(child.waitForFinished(10000));
    Project p = Project::open(path.toStdString());
    QCOMPARE(p.runs().at(0).status, RunStatus::interrupted);
  }

  // Opening the same project a second time in one process (the Studio's training thread
  // does, and end_run at the end of a run) must not drop the SQLite file locks of the
  // first connection: closing any descriptor of a file releases all of the process's POSIX
  // locks on it, after which another process could checkpoint and delete the WAL under us.
  void secondOpenKeepsTheFirstConnectionsLocks() {
    const std::string path = file("locks.kiln").toStdString();
    Project::create(path);
    Project first = Project::open(path);
    (void)first.runs();  // a read: in WAL mode the connection now holds a SHARED lock on the file
    QVERIFY2(other_process_sees_lock(path), "the first connection holds no lock to begin with");
    {
      Project second = Project::open(path);
      (void)second.runs();
    }
    QVERIFY2(other_process_sees_lock(path), "opening the project again dropped the first connection's lock");
  }

  // The rules of Project::run_process_gone on hand-made runs.
  void livenessRules() {
    const QString path = file("rules.kiln");
    Project p = Project::create(path.toStdString());
    const int64_t mine = p.begin_run({"mine", "{}", "cpu", 0});  // this process: alive
    const int64_t remote = p.begin_run({"remote fresh", "{}", "cpu", 0});
    const int64_t stale = p.begin_run({"remote stale", "{}", "cpu", 0});
    const int64_t dead = p.begin_run({"dead pid", "{}", "cpu", 0});
    const int64_t old = p.begin_run({"alive pid, stale", "{}", "cpu", 0});
    QProcess gone;  // a pid that existed and is reaped
    gone.start("true", {});
    QVERIFY(gone.waitForStarted(10000));
    const qint64 gone_pid = gone.processId();
    QVERIFY(gone.waitForFinished(10000));
    const double now = unix_time_now();
    const std::string t = std::to_string(static_cast<int64_t>(now - Project::kHeartbeatTimeoutS - 60));
    p.database().exec("UPDATE runs SET host = 'elsewhere.example' WHERE id IN (" + std::to_string(remote) + "," +
                                 std::to_string(stale) + ");" + "UPDATE runs SET heartbeat_at = " + t + " WHERE id IN (" +
                                 std::to_string(stale) + "," + std::to_string(old) + ");" +
                                 "UPDATE runs SET pid = " + std::to_string(gone_pid) +
                                 " WHERE id = " + std::to_string(dead) + ";");
    const auto runs = p.runs();
    QCOMPARE(runs.at(0).status, RunStatus::running);
    QCOMPARE(runs.at(1).status, RunStatus::running);      // another host, recent heartbeat
    QCOMPARE(runs.at(2).status, RunStatus::interrupted);  // another host, heartbeat too old
    QCOMPARE(runs.at(3).status, RunStatus::interrupted);  // this host, no such process
    QCOMPARE(runs.at(4).status, RunStatus::interrupted);  // heartbeat too old
    QCOMPARE(p.mark_interrupted_runs(), 3);
    QCOMPARE(p.mark_interrupted_runs(), 0);
    p.end_run(mine, RunStatus::finished, "", "{}");
    QCOMPARE(p.runs().at(0).status, RunStatus::finished);
    QCOMPARE(p.runs().at(3).message, std::string(kInterruptedMessage));
    // An interrupted run ended at its last heartbeat, not when the project was reopened.
    QCOMPARE(p.runs().at(4).ended_at, utc_from_unix(static_cast<double>(std::stoll(t))));
  }
};

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "--child") return run_child(argv[2], std::stoll(argv[3]));
  QCoreApplication app(argc, argv);
  TestProjectCrash test;
  QTEST_SET_MAIN_SOURCE_PATH
  return QTest::qExec(&test, argc, argv);
}
#include "test_project_crash.moc"
