// The project store's round trips: graph versions, autosave, settings, runs and
// metrics, checkpoint blobs, exports, Save As and the CSV export.
#include <QDir>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QFileInfo>
#include <QtTest>
#include <cmath>
#include <limits>
#include <random>

#include "project_test_util.h"
#include "projects/schema.h"

using namespace kiln::projects;
using kiln_test::project_error;

class TestProjectStore : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString file(const QString& name) const { return dir_.filePath(name); }

 private slots:
  void createSetsHeaderAndRefusesExisting() {
    const QString path = file("new.kiln");
    { Project p = Project::create(path.toStdString()); QCOMPARE(QString::fromStdString(p.path()), path); }
    QCOMPARE(kiln_test::raw_int(path, "PRAGMA application_id"), int64_t(kApplicationId));
    QCOMPARE(kiln_test::raw_int(path, "PRAGMA user_version"), int64_t(Project::kSchemaVersion));
    QCOMPARE(kiln_test::raw_int(path, "SELECT value FROM meta WHERE key = 'schema_version'"), int64_t(Project::kSchemaVersion));
    QString e = project_error([&] { Project::create(path.toStdString()); });
    QVERIFY2(e.contains("already exists") && e.contains(path), qPrintable(e));
    e = project_error([&] { Project::create(file("no/such/dir/x.kiln").toStdString()); });
    QVERIFY2(e.contains("does not exist"), qPrintable(e));
    QVERIFY(!QFile::exists(file("no/such/dir/x.kiln")));
    Project p = Project::open(path.toStdString());
    QCOMPARE(p.database().pragma_int("foreign_keys"), int64_t(1));
    Statement mode = p.database().prepare("PRAGMA journal_mode");
    QVERIFY(mode.step());
    QCOMPARE(QString::fromStdString(mode.text(0)), QString("wal"));
  }

  void graphVersionsAndAutosave() {
    const std::string path = file("graph.kiln").toStdString();
    {
      Project p = Project::create(path);
      QVERIFY(!p.latest_graph());
      QVERIFY(!p.autosave_if_newer());
      const int64_t v1 = p.save_graph(R"({"format":"kiln-graph","nodes":[]})", "empty");
      const int64_t v2 = p.save_graph(R"({"format":"kiln-graph","nodes":[1]})");
      QVERIFY(v2 > v1);
      p.autosave(R"({"format":"kiln-graph","nodes":[1,2]})");
    }
    Project p = Project::open(path);
    auto versions = p.graph_versions();
    QCOMPARE(versions.size(), size_t(2));
    QCOMPARE(versions[0].message, std::string("empty"));
    QCOMPARE(versions[1].graph_json, std::string(R"({"format":"kiln-graph","nodes":[1]})"));
    QVERIFY(QRegularExpression(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$)")
                .match(QString::fromStdString(versions[0].created_at)).hasMatch());
    QCOMPARE(p.latest_graph()->id, versions[1].id);
    QCOMPARE(p.autosave_if_newer().value_or(""), std::string(R"({"format":"kiln-graph","nodes":[1,2]})"));
    p.save_graph(R"({"format":"kiln-graph","nodes":[1,2]})", "saved");
    QVERIFY(!p.autosave_if_newer());  // saving clears the slot
    p.autosave(R"({"format":"kiln-graph","nodes":[1,2]})");
    QVERIFY(!p.autosave_if_newer());  // same as the latest version
    QCOMPARE(p.graph_versions().size(), size_t(3));
  }

  void largeUnicodeGraphIsByteIdentical() {
    std::string json = "{\"name\":\"Réseau \u00e9 — 網絡 🧵\",\"nodes\":[";
    for (int i = 0; i < 20000; ++i) {
      json += i ? ",{\"id\":" : "{\"id\":";
      json += std::to_string(i);
      json += ",\"op\":\"Conv2d\"}";
    }
    json += "]}";
    QVERIFY(json.size() > 400000);
    const std::string path = file("large.kiln").toStdString();
    Project::create(path).save_graph(json, "big");
    QVERIFY(Project::open(path).latest_graph()->graph_json == json);
  }

  void settings() {
    Project p = Project::create(file("settings.kiln").toStdString());
    QVERIFY(!p.setting("dataset"));
    p.set_setting("dataset", R"({"validation":5000})");
    p.set_setting("training", R"({"lr":0.001})");
    p.set_setting("dataset", R"({"validation":6000})");
    QCOMPARE(p.setting("dataset").value(), std::string(R"({"validation":6000})"));
    QCOMPARE(p.setting("training").value(), std::string(R"({"lr":0.001})"));
    QVERIFY(!project_error([&] { p.set_setting("", "{}"); }).isEmpty());
  }

  void runsAndMetrics() {
    const std::string path = file("runs.kiln").toStdString();
    int64_t run = 0;
    {
      Project p = Project::create(path);
      const int64_t g = p.save_graph("{}");
      QString e = project_error([&] { p.begin_run({"bad", "{}", "cpu", g + 5}); });
      QVERIFY2(e.contains("graph version") && e.contains(QString::number(g + 5)), qPrintable(e));
      run = p.begin_run({"cnn, lr=0.1", R"({"optimizer":"adam","lr":0.001})", "cpu", g});
      QCOMPARE(p.runs().at(0).status, RunStatus::running);
      QVERIFY(p.runs().at(0).ended_at.empty());
      {
        MetricsWriter w(path, run);
        for (int s = 1; s <= 300; ++s) w.step({s, (s - 1) / 100 + 1, 2.0 / s, 0.001, 5000.0 + s, 0.01 * s});
        w.step({301, 3, std::numeric_limits<double>::quiet_NaN(), 0.001, std::numeric_limits<double>::infinity(), 3.01});
        w.epoch({1, 0.9, 0.7, 0.8, 0.72, 0.001, 12.5});
        w.epoch({2, 0.5, 0.8, 0.6, 0.81, 0.0005, 12.25});
        w.flush();
        QCOMPARE(w.rows_committed(), int64_t(303));
      }
      p.end_run(run, RunStatus::finished, "done", R"({"val_accuracy":0.81})");
      QVERIFY(!project_error([&] { p.end_run(run + 9, RunStatus::failed, "", ""); }).isEmpty());
      QVERIFY(!project_error([&] { MetricsWriter(path, run + 9); }).isEmpty());
    }
    Project p = Project::open(path);
    auto runs = p.runs();
    QCOMPARE(runs.size(), size_t(1));
    QCOMPARE(runs[0].name, std::string("cnn, lr=0.1"));
    QCOMPARE(runs[0].device, std::string("cpu"));
    QCOMPARE(runs[0].status, RunStatus::finished);
    QCOMPARE(runs[0].message, std::string("done"));
    QCOMPARE(runs[0].final_metrics_json, std::string(R"({"val_accuracy":0.81})"));
    QVERIFY(!runs[0].ended_at.empty());
    auto steps = p.step_metrics(run);
    QCOMPARE(steps.size(), size_t(301));
    QCOMPARE(steps[149].step, int64_t(150));
    QCOMPARE(steps[149].epoch, 2);
    QCOMPARE(steps[149].loss, 2.0 / 150);
    QCOMPARE(steps[149].images_per_second, 5150.0);
    QVERIFY(std::isnan(steps[300].loss));
    QVERIFY(std::isinf(steps[300].images_per_second));
    auto epochs = p.epoch_metrics(run);
    QCOMPARE(epochs.size(), size_t(2));
    QCOMPARE(epochs[1].val_accuracy, 0.81);
    QCOMPARE(epochs[1].seconds, 12.25);
    QCOMPARE(epochs[0].lr, 0.001);
  }

  // add_epoch_checkpoint keeps the latest and the best epoch only; the file stops growing.
  void epochCheckpointsKeepLatestAndBest() {
    QDir(dir_.path()).mkpath("epoch");
    std::mt19937 rng(3);
    QByteArray weights(200000, '\0');
    for (auto& c : weights) c = static_cast<char>(rng());
    kiln_test::write_file(file("epoch/model.safetensors"), weights);
    const QString path = file("epochs.kiln");
    Project p = Project::create(path.toStdString());
    const int64_t run = p.begin_run({"r", "{}", "cpu", 0});
    const int64_t other = p.begin_run({"other", "{}", "cpu", 0});
    p.add_epoch_checkpoint(other, 1, file("epoch").toStdString(), 0.99);
    const double val[] = {0.50, 0.70, 0.65, 0.60, 0.70, 0.55, 0.52, 0.51};
    qint64 size_after_3 = 0;
    for (int e = 1; e <= 8; ++e) {
      p.add_epoch_checkpoint(run, e, file("epoch").toStdString(), val[e - 1]);
      p.database().exec("PRAGMA wal_checkpoint(TRUNCATE)");
      if (e == 3) size_after_3 = QFileInfo(path).size();
    }
    // The file holds at most two of this run's checkpoints at any time: no growth after epoch 3.
    // Epoch 5 ties epoch 2 at 0.70: the later one is the best.
    QCOMPARE(p.checkpoint_epochs(run), (std::vector<int>{5, 8}));
    const auto info = p.checkpoints(run);
    QCOMPARE(info.size(), size_t(2));
    QVERIFY(info[0].best && !info[0].latest);
    QVERIFY(info[1].latest && !info[1].best);
    QCOMPARE(info[0].val_accuracy, 0.70);
    QCOMPARE(kiln_test::raw_int(path, "SELECT count(*) FROM checkpoint_files"), int64_t(3));  // 2 + other's 1
    QCOMPARE(p.checkpoint_epochs(other), std::vector<int>{1});  // other runs untouched
    QVERIFY2(QFileInfo(path).size() <= size_after_3 + 64 * 1024,
             qPrintable(QString("%1 bytes after 8 epochs, %2 after 3").arg(QFileInfo(path).size()).arg(size_after_3)));
    p.restore_checkpoint(run, 8, file("epoch-restored").toStdString());
    QCOMPARE(kiln_test::file_sha256(file("epoch-restored/model.safetensors")),
             kiln_test::file_sha256(file("epoch/model.safetensors")));
    // Without validation accuracy (NaN) the best is the latest: one checkpoint.
    const int64_t noval = p.begin_run({"no validation", "{}", "cpu", 0});
    for (int e = 1; e <= 3; ++e) p.add_epoch_checkpoint(noval, e, file("epoch").toStdString(), std::nan(""));
    QCOMPARE(p.checkpoint_epochs(noval), std::vector<int>{3});
    QVERIFY(p.checkpoints(noval)[0].best && p.checkpoints(noval)[0].latest);
    const QString e = project_error([&] { p.add_epoch_checkpoint(99, 1, file("epoch").toStdString(), 0.5); });
    QVERIFY2(e.contains("no run with id 99"), qPrintable(e));
  }

  void evaluationRoundTripAndBadInput() {
    const QString path = file("eval.kiln");
    int64_t run = 0;
    Evaluation ev;
    ev.count = 100;
    ev.loss = 0.42;
    ev.accuracy = 0.87;
    ev.class_names = {"a", "b", "c"};
    ev.confusion = {40, 2, 1, 3, 30, 0, 4, 3, 17};
    ev.misclassified = {{5, 0, 1}, {17, 2, 0}};
    ev.image_height = 2;
    ev.image_width = 3;
    ev.images = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    ev.predictions = {{0, 0, 0, 0.75f}, {5, 0, 1, 0.5f}, {17, 2, 0, NAN}};
    {
      Project p = Project::create(path.toStdString());
      run = p.begin_run({"r", "{}", "cpu", 0});
      QVERIFY(!p.evaluation(run));
      p.set_evaluation(run, ev);
    }
    Project p = Project::open(path.toStdString());
    const auto back = p.evaluation(run);
    QVERIFY(back);
    QCOMPARE(back->count, int64_t(100));
    QCOMPARE(back->loss, 0.42);
    QCOMPARE(back->accuracy, 0.87);
    QCOMPARE(back->class_names, ev.class_names);
    QCOMPARE(back->confusion, ev.confusion);
    QCOMPARE(back->misclassified.size(), size_t(2));
    QCOMPARE(back->misclassified[1].index, int64_t(17));
    QCOMPARE(back->misclassified[1].truth, 2);
    QCOMPARE(back->misclassified[1].predicted, 0);
    QCOMPARE(back->images, ev.images);
    QCOMPARE(back->predictions.size(), size_t(3));
    QCOMPARE(back->predictions[1].index, 5);
    QCOMPARE(back->predictions[1].predicted, 1);
    QCOMPARE(back->predictions[1].probability, 0.5f);
    QVERIFY(std::isnan(back->predictions[2].probability));

    Evaluation bad = ev;
    bad.confusion.pop_back();
    QString e = project_error([&] { p.set_evaluation(run, bad); });
    QVERIFY2(e.contains("confusion matrix has 8 cells, 3 classes need 9"), qPrintable(e));
    bad = ev;
    bad.misclassified[0].predicted = 3;
    e = project_error([&] { p.set_evaluation(run, bad); });
    QVERIFY2(e.contains("label outside"), qPrintable(e));
    bad = ev;
    bad.images.pop_back();
    e = project_error([&] { p.set_evaluation(run, bad); });
    QVERIFY2(e.contains("11 image bytes for 2 images of 2x3"), qPrintable(e));
    bad = ev;
    bad.predictions[0].truth = 3;
    e = project_error([&] { p.set_evaluation(run, bad); });
    QVERIFY2(e.contains("prediction of sample 0 has a label outside"), qPrintable(e));
    bad = ev;
    bad.predictions[1].probability = 1.5f;
    e = project_error([&] { p.set_evaluation(run, bad); });
    QVERIFY2(e.contains("sample 5 has probability 1.5"), qPrintable(e));
    e = project_error([&] { p.set_evaluation(run + 5, ev); });
    QVERIFY2(e.contains("no run with id"), qPrintable(e));
    QCOMPARE(p.evaluation(run)->confusion, ev.confusion);  // the refused ones changed nothing
    p.database().exec("UPDATE evaluations SET predictions = zeroblob(17)");
    e = project_error([&] { p.evaluation(run); });
    QVERIFY2(e.contains("17 prediction bytes"), qPrintable(e));
    p.database().exec("UPDATE evaluations SET misclassified = 'x:y'");
    e = project_error([&] { p.evaluation(run); });
    QVERIFY2(e.contains("damaged") && e.contains("x:y"), qPrintable(e));
  }

  // A text dataset's evaluation keeps each sample's origin, text and tokens (schema 6).
  void evaluationTextsRoundTripAndDamage() {
    const QString path = file("texts.kiln");
    Evaluation ev;
    ev.count = 2;
    ev.class_names = {"ham", "spam"};
    ev.confusion = {1, 0, 1, 0};
    ev.texts = {{"mail/ham/1", "see you at lunch", "see you at lunch"},
                {"rows.csv:3", std::string("buy \xc3\xa9 pills\0!", 14), ""}};
    Project p = Project::create(path.toStdString());
    const int64_t run = p.begin_run({"r", "{}", "cpu", 0});
    p.set_evaluation(run, ev);
    const auto back = p.evaluation(run);
    QVERIFY(back);
    QCOMPARE(back->texts.size(), size_t(2));
    QCOMPARE(back->texts[1].origin, std::string("rows.csv:3"));
    QCOMPARE(back->texts[1].text, ev.texts[1].text);  // UTF-8 and a NUL kept byte for byte
    QCOMPARE(back->texts[1].tokens, std::string());
    QCOMPARE(back->texts[0].tokens, std::string("see you at lunch"));
    Evaluation bad = ev;
    bad.texts.pop_back();
    QString e = project_error([&] { p.set_evaluation(run, bad); });
    QVERIFY2(e.contains("1 texts for 2 evaluated samples"), qPrintable(e));
    p.database().exec("UPDATE evaluations SET texts = substr(texts, 1, 60)");
    e = project_error([&] { p.evaluation(run); });
    QVERIFY2(e.contains("damaged: text 1 runs past the 60 stored bytes"), qPrintable(e));
  }

  void checkpointBlobsRestoreByteIdentical() {
    QDir root(dir_.path());
    root.mkpath("ckpt/sub");
    std::mt19937 rng(7);
    QByteArray big(300000, '\0');
    for (auto& c : big) c = static_cast<char>(rng());
    kiln_test::write_file(file("ckpt/model.safetensors"), big);
    kiln_test::write_file(file("ckpt/trainer.json"), R"({"epoch": 2})");
    kiln_test::write_file(file("ckpt/sub/empty.bin"), QByteArray());
    Project p = Project::create(file("ckpt.kiln").toStdString());
    const int64_t run = p.begin_run({"r", "{}", "cpu", 0});
    p.add_checkpoint(run, 2, file("ckpt").toStdString());
    p.add_checkpoint(run, 2, file("ckpt").toStdString());  // replaces, no duplicate error
    QCOMPARE(p.checkpoint_epochs(run), std::vector<int>{2});
    p.restore_checkpoint(run, 2, file("restored").toStdString());
    for (QString name : {"model.safetensors", "trainer.json", "sub/empty.bin"})
      QCOMPARE(kiln_test::file_sha256(file("restored/" + name)), kiln_test::file_sha256(file("ckpt/" + name)));
    QCOMPARE(QDir(file("restored")).entryList(QDir::Files).size(), 2);
    QString e = project_error([&] { p.restore_checkpoint(run, 3, file("r3").toStdString()); });
    QVERIFY2(e.contains("no such checkpoint"), qPrintable(e));
    e = project_error([&] { p.add_checkpoint(run, 3, file("missing").toStdString()); });
    QVERIFY2(e.contains("does not exist"), qPrintable(e));
    e = project_error([&] { p.add_checkpoint(run + 1, 3, file("ckpt").toStdString()); });
    QVERIFY2(e.contains("no run"), qPrintable(e));
  }

  void saveAsContinuesOnTheCopy() {
    const QString a = file("a.kiln"), b = file("b.kiln");
    Project p = Project::create(a.toStdString());
    p.save_graph("{\"v\":1}", "one");
    const int64_t run = p.begin_run({"r1", "{}", "cpu", 0});
    p.add_export("onnx", "/tmp/m.onnx");
    QVERIFY(!project_error([&] { p.save_as(a.toStdString()); }).isEmpty());
    kiln_test::write_file(b, "old content that Save As replaces");
    kiln_test::write_file(b + "-wal", "a stale WAL that must not be replayed");
    p.save_as(b.toStdString());
    QCOMPARE(QString::fromStdString(p.path()), b);
    QVERIFY(!QFile::exists(b + ".saving"));
    p.save_graph("{\"v\":2}", "two");  // goes to the copy only
    QCOMPARE(p.graph_versions().size(), size_t(2));
    QCOMPARE(p.runs().at(0).id, run);
    QCOMPARE(kiln_test::raw_int(b, "SELECT count(*) FROM exports"), int64_t(1));
    QCOMPARE(kiln_test::raw_int(b, "PRAGMA application_id"), int64_t(kApplicationId));
    QCOMPARE(Project::open(a.toStdString()).graph_versions().size(), size_t(1));
    QVERIFY(!project_error([&] { p.save_as(file("nodir/c.kiln").toStdString()); }).isEmpty());
  }

  void exportRunsCsv() {
    const std::string path = file("csv.kiln").toStdString();
    Project p = Project::create(path);
    const int64_t r1 = p.begin_run({"first", "{}", "cpu", 0});
    const int64_t r2 = p.begin_run({"second, \"quoted\"", "{}", "cpu", 0});
    {
      MetricsWriter w1(path, r1), w2(path, r2);
      w1.step({1, 1, 2.5, 0.1, 1000, 0.5});
      w1.step({2, 1, 0.1, 0.1, 1000, 1});
      w1.epoch({1, 1.25, 0.5, 1.5, 0.25, 0.1, 2});
      w2.step({1, 1, std::numeric_limits<double>::quiet_NaN(), 0.01, 900, 0.25});
    }
    p.export_runs_csv({r2, r1}, file("runs.csv").toStdString());
    const QString csv = QString::fromUtf8(kiln_test::read_file(file("runs.csv")));
    const QStringList lines = csv.split("\r\n", Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 5);
    QCOMPARE(lines[0], QString("run_id,run_name,kind,step,epoch,loss,lr,images_per_second,time_s,train_loss,"
                               "train_accuracy,val_loss,val_accuracy,seconds"));
    QCOMPARE(lines[1], QString("%1,\"second, \"\"quoted\"\"\",step,1,1,nan,0.01,900,0.25,,,,,").arg(r2));
    QCOMPARE(lines[2], QString("%1,first,step,1,1,2.5,0.1,1000,0.5,,,,,").arg(r1));
    QCOMPARE(lines[3], QString("%1,first,step,2,1,0.1,0.1,1000,1,,,,,").arg(r1));
    QCOMPARE(lines[4], QString("%1,first,epoch,,1,,0.1,,,1.25,0.5,1.5,0.25,2").arg(r1));
    QString e = project_error([&] { p.export_runs_csv({r1, 99}, file("bad.csv").toStdString()); });
    QVERIFY2(e.contains("run 99"), qPrintable(e));
    QVERIFY(!QFile::exists(file("bad.csv")));
    e = project_error([&] { p.export_runs_csv({r1}, file("nodir/x.csv").toStdString()); });
    QVERIFY2(e.contains("x.csv"), qPrintable(e));
  }
};

QTEST_GUILESS_MAIN(TestProjectStore)
#include "test_project_store.moc"
