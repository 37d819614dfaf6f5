// Project::open on bad files (each refused with a clear message, the bytes unchanged)
// and schema migrations (older files are migrated; a failing step rolls back).
#include <QTemporaryDir>
#include <QtTest>
#include <random>

#include "project_test_util.h"
#include "projects/schema.h"

using namespace kiln::projects;
using kiln_test::project_error;

class TestProjectOpen : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString file(const QString& name) const { return dir_.filePath(name); }

  // A closed, valid project with some content (a few pages of metrics).
  QString make_project(const QString& name) {
    const QString path = file(name);
    Project p = Project::create(path.toStdString());
    p.save_graph("{\"nodes\":[]}", "v1");
    const int64_t run = p.begin_run({"r", "{}", "cpu", 0});
    MetricsWriter w(path.toStdString(), run);
    for (int s = 1; s <= 2000; ++s) w.step({s, 1, 1.0 / s, 0.1, 100, s * 0.1});
    return path;
  }

  // open() must throw a message containing `expected` and leave the file as it was.
  void expect_refused(const QString& path, const QString& expected) {
    const QByteArray before = kiln_test::file_sha256(path);
    const bool hadWal = QFile::exists(path + "-wal"), hadShm = QFile::exists(path + "-shm");
    const QString e = project_error([&] { Project::open(path.toStdString()); });
    QVERIFY2(!e.isEmpty(), qPrintable("no error for " + path));
    qInfo().noquote() << e;
    QVERIFY2(e.contains(expected, Qt::CaseInsensitive), qPrintable(e));
    QVERIFY2(e.contains(path), qPrintable(e));
    QCOMPARE(kiln_test::file_sha256(path), before);
    QVERIFY2(!QFile::exists(path + "-journal"), "a rejected file got a rollback journal");
    QVERIFY2((hadWal || !QFile::exists(path + "-wal")) && (hadShm || !QFile::exists(path + "-shm")),
             "a rejected file got -wal / -shm files");
  }

 private slots:
  void missingAndEmpty() {
    expect_refused(file("missing.kiln"), "does not exist");
    kiln_test::write_file(file("empty.kiln"), QByteArray());
    expect_refused(file("empty.kiln"), "empty");
    QDir(dir_.path()).mkdir("folder.kiln");
    QVERIFY(!project_error([&] { Project::open(file("folder.kiln").toStdString()); }).isEmpty());
  }

  void randomBytesAndText() {
    std::mt19937 rng(3);
    QByteArray junk(8192, '\0');
    for (auto& c : junk) c = static_cast<char>(rng());
    kiln_test::write_file(file("random.kiln"), junk);
    expect_refused(file("random.kiln"), "not a SQLite database");
    kiln_test::write_file(file("text.kiln"), "{\"format\": \"kiln-graph\"}\n");
    expect_refused(file("text.kiln"), "not a SQLite database");
    QVERIFY(!QFile::exists(file("random.kiln-wal")));
  }

  void truncated() {
    const QString path = make_project("truncated.kiln");
    QByteArray bytes = kiln_test::read_file(path);
    QVERIFY(bytes.size() >= 8 * 4096);
    kiln_test::write_file(path, bytes.left(bytes.size() / 2 / 4096 * 4096));  // whole pages, fewer than the header says
    expect_refused(path, "truncated: the header says");
    kiln_test::write_file(path, bytes.left(60));
    expect_refused(path, "truncated");
    kiln_test::write_file(path, bytes.left(bytes.size() - 1000));  // not a whole number of pages
    expect_refused(path, "truncated");
  }

  void corruptPages() {
    const QString path = make_project("corrupt.kiln");
    QByteArray bytes = kiln_test::read_file(path);
    std::mt19937 rng(11);
    for (qsizetype i = 4096; i < bytes.size(); ++i) bytes[i] = static_cast<char>(rng());  // every page but the first
    kiln_test::write_file(path, bytes);
    expect_refused(path, "corrupt");
  }

  void otherApplicationsSqlite() {
    const QString path = file("other.sqlite");
    kiln_test::raw_sql(path, "CREATE TABLE contacts(name TEXT); INSERT INTO contacts VALUES('x');");
    expect_refused(path, "not a Kiln project");
    // Kiln's application_id but not Kiln's tables (someone else's file with a clashing id).
    const QString fake = file("fake.kiln");
    kiln_test::raw_sql(fake, "PRAGMA application_id = " + std::to_string(kApplicationId) +
                                 "; CREATE TABLE meta(key TEXT, value TEXT); INSERT INTO meta VALUES"
                                 "('application', 'other'), ('schema_version', '1'); PRAGMA user_version = 1;");
    expect_refused(fake, "not a Kiln project");
  }

  void missingTable() {
    const QString path = make_project("dropped.kiln");
    kiln_test::raw_sql(path, "DROP TABLE checkpoint_files;");
    expect_refused(path, "table 'checkpoint_files' is missing");
  }

  void futureVersion() {
    const QString path = make_project("future.kiln");
    const std::string next = std::to_string(kCurrentSchema + 1);
    kiln_test::raw_sql(path, "PRAGMA user_version = " + next + "; UPDATE meta SET value = '" + next +
                                 "' WHERE key = 'schema_version';");
    expect_refused(path, QString("made by a newer Kiln: schema %1, this build reads <= %2").arg(kCurrentSchema + 1).arg(kCurrentSchema));
  }

  void validProjectOpensAfterRefusals() {
    const QString path = make_project("good.kiln");
    Project p = Project::open(path.toStdString());
    QCOMPARE(p.step_metrics(p.runs().at(0).id).size(), size_t(2000));
  }

  // A version-0 file (Kiln's application_id, no tables: what create() starts from) is
  // migrated to the current schema by open().
  void olderSchemaIsMigrated() {
    const QString path = file("v0.kiln");
    kiln_test::raw_sql(path, "PRAGMA application_id = " + std::to_string(kApplicationId) +
                                 "; PRAGMA user_version = 0; VACUUM;");
    QCOMPARE(kiln_test::raw_int(path, "PRAGMA application_id"), int64_t(kApplicationId));
    {
      Project p = Project::open(path.toStdString());
      QCOMPARE(p.database().pragma_int("user_version"), int64_t(Project::kSchemaVersion));
      p.save_graph("{}", "after migration");
      QCOMPARE(p.graph_versions().size(), size_t(1));
    }
    QCOMPARE(kiln_test::raw_int(path, "SELECT value FROM meta WHERE key = 'schema_version'"),
             int64_t(Project::kSchemaVersion));
  }

  // A schema-1 file with runs and metrics (what Kiln wrote before the runs' liveness
  // columns) is migrated: runs rebuilt with the same ids, no metric row lost to the
  // foreign-key cascade, a still-"running" run of a dead process becomes interrupted.
  void schema1RunsAreMigrated() {
    const QString path = file("v1.kiln");
    {
      Database db(path.toStdString(), Database::Mode::create);
      db.exec("PRAGMA application_id = " + std::to_string(kApplicationId));
      configure_connection(db);
      migrate(db, 0, 1, migrations());
      db.exec("INSERT INTO runs(name, started_at, status) VALUES('done', 't0', 'finished'), ('killed', 't1', 'running')");
      for (int s = 1; s <= 50; ++s)
        db.exec("INSERT INTO step_metrics(run, step, epoch, loss) VALUES(2, " + std::to_string(s) + ", 1, 0.5)");
      db.exec("INSERT INTO epoch_metrics(run, epoch, val_accuracy) VALUES(1, 1, 0.75)");
    }
    QCOMPARE(kiln_test::raw_int(path, "PRAGMA user_version"), int64_t(1));
    Project p = Project::open(path.toStdString());
    QCOMPARE(p.database().pragma_int("user_version"), int64_t(kCurrentSchema));
    QCOMPARE(p.database().pragma_int("foreign_keys"), int64_t(1));
    const auto runs = p.runs();
    QCOMPARE(runs.size(), size_t(2));
    QCOMPARE(runs[0].id, int64_t(1));
    QCOMPARE(runs[0].status, RunStatus::finished);
    QCOMPARE(runs[1].status, RunStatus::interrupted);  // no heartbeat: its process is long gone
    QCOMPARE(p.step_metrics(2).size(), size_t(50));
    QCOMPARE(p.epoch_metrics(1).size(), size_t(1));
    QCOMPARE(p.begin_run({"next", "{}", "cpu", 0}), int64_t(3));  // AUTOINCREMENT continues
  }

  // A schema-3 file (the release before run tags and stored predictions) with a finished run
  // and its evaluation: migrated to 4, the evaluation reads back without predictions, the
  // run gets no tags and is not deleted, and a new evaluation stores predictions.
  void schema3EvaluationIsMigrated() {
    const QString path = file("v3.kiln");
    {
      Database db(path.toStdString(), Database::Mode::create);
      db.exec("PRAGMA application_id = " + std::to_string(kApplicationId));
      configure_connection(db);
      migrate(db, 0, 3, migrations());
      db.exec("INSERT INTO runs(name, started_at, ended_at, status) VALUES('old', 't0', 't1', 'finished')");
      db.exec("INSERT INTO evaluations(run, count, loss, accuracy, class_names, confusion, misclassified, created_at) "
              "VALUES(1, 4, 0.5, 0.75, 'a' || char(10) || 'b', zeroblob(32), '3:1:0 ', 't1')");
    }
    QCOMPARE(kiln_test::raw_int(path, "PRAGMA user_version"), int64_t(3));
    Project p = Project::open(path.toStdString());
    QCOMPARE(p.database().pragma_int("user_version"), int64_t(kCurrentSchema));
    const auto ev = p.evaluation(1);
    QVERIFY(ev);
    QCOMPARE(ev->accuracy, 0.75);
    QCOMPARE(ev->misclassified.size(), size_t(1));
    QVERIFY(ev->predictions.empty());
    {
      Statement s = p.database().prepare("SELECT tags || '|' || deleted_at FROM runs WHERE id = 1");
      QVERIFY(s.step());
      QCOMPARE(s.text(0), std::string("|"));
    }
    Evaluation next = *ev;
    next.predictions = {{0, 0, 0, 0.9f}, {3, 1, 0, 0.6f}};
    p.set_evaluation(1, next);
    QCOMPARE(p.evaluation(1)->predictions.size(), size_t(2));
  }

  // The framework on a made-up step current -> current + 1: applied in order, user_version and meta follow.
  void migrationStepsRunInOrder() {
    const QString path = file("steps.kiln");
    Project::create(path.toStdString());
    std::vector<Migration> steps = migrations();
    const int v = kCurrentSchema;
    steps.push_back({v, "CREATE TABLE extra(x INTEGER); INSERT INTO extra VALUES(42);"});
    {
      Database db(path.toStdString(), Database::Mode::read_write);
      migrate(db, v, v + 1, steps);
    }
    QCOMPARE(kiln_test::raw_int(path, "PRAGMA user_version"), int64_t(v + 1));
    QCOMPARE(kiln_test::raw_int(path, "SELECT value FROM meta WHERE key = 'schema_version'"), int64_t(v + 1));
    QCOMPARE(kiln_test::raw_int(path, "SELECT x FROM extra"), int64_t(42));
    // This build reads <= kCurrentSchema, so the migrated file is now "newer".
    expect_refused(path, QString("schema %1").arg(v + 1));
  }

  void failingMigrationRollsBack() {
    const QString path = file("failing.kiln");
    Project::create(path.toStdString());
    std::vector<Migration> steps = migrations();
    const int v = kCurrentSchema;
    steps.push_back({v, "CREATE TABLE extra(x); CREATE TABLE extra(y);"});  // second statement fails
    {
      Database db(path.toStdString(), Database::Mode::read_write);
      const QString e = project_error([&] { migrate(db, v, v + 1, steps); });
      QVERIFY2(e.contains(QString("migrating schema %1 -> %2").arg(v).arg(v + 1)) && e.contains("extra"), qPrintable(e));
      const QString missing = project_error([&] { migrate(db, v, v + 2, migrations()); });
      QVERIFY2(missing.contains(QString("no migration from schema %1 to %2").arg(v).arg(v + 1)), qPrintable(missing));
    }
    QCOMPARE(kiln_test::raw_int(path, "PRAGMA user_version"), int64_t(v));
    QCOMPARE(kiln_test::raw_int(path, "SELECT count(*) FROM sqlite_master WHERE name = 'extra'"), int64_t(0));
    QVERIFY_THROWS_NO_EXCEPTION(Project::open(path.toStdString()));
  }
};

QTEST_GUILESS_MAIN(TestProjectOpen)
#include "test_project_open.moc"
