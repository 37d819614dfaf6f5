// kiln-studio --headless, issue 14's new-user try of their own data: options that were silently
// ignored or wrongly refused. An option given twice, --subset on a table, --label on an image
// folder, --skip-rows without a table, an unknown --device and --new on an existing file are usage
// errors (exit 2, nothing stored); --skip-rows 0 is accepted; a task set for one table is not
// carried to another; --new with --dataset but without --train stores the dataset and fits the
// graph (it was ignored), and stores --epochs, --lr, --batch-size, --device and --checkpoint-every
// as the project's training settings (they were ignored); --subset and the other options of one
// run are usage errors there. Tiny generated tables, one epoch.
#include <QCryptographicHash>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>
#include <nlohmann/json.hpp>

#include "projects/project.h"
#include "tests/gui/headless_studio.h"
#include "tests/gui/test_files.h"

using kiln::studio::test::writeFile;
using kiln::studio::test::writeImageFolder;
using kiln::test::studio;

namespace {

// a,b,<label>: `rows` rows of two classes ("low", "high") or, with `regression`, a numeric label
// y = 3a - 2b + 1.
QByteArray table(int rows, bool regression) {
  QByteArray t = regression ? "a,b,y\n" : "a,b,kind\n";
  for (int i = 0; i < rows; ++i) {
    const double a = 0.1 * (i % 10) + (regression ? 0 : 3.0 * (i % 2)), b = 0.1 * ((i * 3) % 10);
    t += QByteArray::number(a) + "," + QByteArray::number(b) + "," +
         (regression ? QByteArray::number(3 * a - 2 * b + 1) : QByteArray(i % 2 ? "high" : "low")) + "\n";
  }
  return t;
}

size_t runCount(const QString& file) { return kiln::projects::Project::open(file.toStdString()).runs().size(); }

nlohmann::json storedTraining(const QString& file) {
  return nlohmann::json::parse(*kiln::projects::Project::open(file.toStdString()).setting("training"));
}

nlohmann::json storedDataset(const QString& file) {
  return nlohmann::json::parse(*kiln::projects::Project::open(file.toStdString()).setting("dataset"));
}

// The latest graph version's Input shape and the out_features of its last Linear layer: "[5] 2".
QString inputAndClasses(const QString& file) {
  const auto version = kiln::projects::Project::open(file.toStdString()).latest_graph();
  if (!version) return "no graph";
  const nlohmann::json g = nlohmann::json::parse(version->graph_json);
  std::string shape = "no Input";
  int64_t classes = -1;
  for (const nlohmann::json& n : g.at("nodes")) {
    if (n.at("op") == "Input") shape = n.at("attrs").at("shape").dump();
    if (n.at("op") == "Linear") classes = n.at("attrs").at("out_features").get<int64_t>();
  }
  return QString("%1 %2").arg(QString::fromStdString(shape)).arg(classes);
}

QByteArray digest(const QString& file) {
  QFile f(file);
  return f.open(QIODevice::ReadOnly) ? QCryptographicHash::hash(f.readAll(), QCryptographicHash::Sha256) : QByteArray();
}

}  // namespace

class TestStudioHeadlessFlags : public QObject {
  Q_OBJECT
 private slots:
  void optionsThatNothingReadsAreUsageErrors() {
    QTemporaryDir dir;
    const QString file = dir.filePath("u.kiln"), csv = dir.filePath("t.csv"), pets = dir.filePath("pets");
    writeFile(csv, table(40, false));
    writeImageFolder(pets, {"a", "b"}, 3);
    int code = 0;
    QString out = studio({"--headless", "--new", file, "--template", "table_mlp"}, &code);
    QVERIFY2(code == 0, qPrintable(out));
    const QByteArray before = digest(file);
    const QStringList train{"--headless", "--project", file, "--train", "--epochs", "1"};
    struct Case {
      QStringList args;
      QString says;
    };
    const QList<Case> mistakes = {
        {train + QStringList{"--epochs", "2"}, "--epochs given twice ('1' and '2'); it takes one value"},
        {train + QStringList{"--rescan", "--rescan"}, "--rescan given twice"},
        {train + QStringList{"--dataset", "csv:" + csv, "--subset", "10"},
         "--subset N trains on N of Fashion-MNIST's training images; the dataset csv:" + csv + " is trained on whole"},
        {train + QStringList{"--dataset", "imagefolder:" + pets, "--label", "kind"},
         "--label names the label column of a table (csv:FILE, text:FILE); the classes of 'imagefolder:" + pets +
             "' are its subfolders' names"},
        {train + QStringList{"--label", "kind"}, "--label needs --dataset csv:FILE or text:FILE"},
        {train + QStringList{"--dataset", "imagefolder:" + pets, "--skip-rows", "1"},
         "--skip-rows applies to --dataset csv:FILE, not 'imagefolder:" + pets + "'"},
        {train + QStringList{"--no-header"}, "--no-header applies to --dataset csv:FILE"},
        {train + QStringList{"--dataset", "csv:" + csv, "--device", "nodev"},
         "--device nodev: unknown device 'nodev': expected cpu, vulkan[:N], cuda[:N] or hip[:N]; devices found: cpu"},
        {train + QStringList{"--device", "cuda:99"}, "--device cuda:99: "},
        {train + QStringList{"--checkpoint-every", "5x"},
         "--checkpoint-every expects N (optimizer steps, a whole number) or Nm (minutes), e.g. 500 or 10m; "
         "0: at epoch ends only; got '5x'"},
        {train + QStringList{"--checkpoint-every", "-1"}, "--checkpoint-every expects N (optimizer steps, a whole number) or Nm"},
        {train + QStringList{"--checkpoint-every", "1.5"}, "got '1.5'"},
        {train + QStringList{"--checkpoint-every", ""}, "got ''"},
        {{"--headless", "--new", file, "--template", "table_mlp"},
         file + " exists; open it without --new (--project " + file + " --train), or remove it"},
    };
    for (const Case& c : mistakes) {
      out = studio(c.args, &code);
      QVERIFY2(code == 2, qPrintable(c.args.join(' ') + " -> " + QString::number(code) + ": " + out));
      QVERIFY2(out.contains(c.says), qPrintable(c.args.join(' ') + ": " + out));
    }
    QVERIFY2(out.count('\n') == 1, qPrintable(out));  // one line, no "cannot create project"
    QCOMPARE(digest(file), before);  // nothing stored: no run, no dataset, no fitted graph
    // cuda:99 is not here: the message lists the devices that are.
    out = studio(train + QStringList{"--device", "cuda:99"}, &code);
    QVERIFY2(out.contains("devices found: cpu"), qPrintable(out));
    // --skip-rows 0 is the default and a valid value.
    out = studio(train + QStringList{"--dataset", "csv:" + csv, "--skip-rows", "0"}, &code);
    QVERIFY2(code == 0, qPrintable(out));
    QVERIFY2(out.contains(" samples/s ETA ") && !out.contains("img/s"), qPrintable(out));  // a table's rows are not images
    QCOMPARE(runCount(file), size_t(1));
    QCOMPARE(storedDataset(file).value("skip_rows", -1), 0);
  }

  // The task stored for one table is not the next table's: it starts from classification (a
  // table of class names trains) unless --task says otherwise; the same table keeps it.
  void taskIsNotCarriedToAnotherTable() {
    QTemporaryDir dir;
    const QString file = dir.filePath("t.kiln"), reg = dir.filePath("r.csv"), cls = dir.filePath("c.csv");
    writeFile(reg, table(60, true));
    writeFile(cls, table(40, false));
    int code = 0;
    QString out = studio({"--headless", "--new", file, "--template", "table_mlp", "--dataset", "csv:" + reg, "--label",
                          "y", "--task", "regression", "--train", "--epochs", "1"},
                         &code);
    QVERIFY2(code == 0, qPrintable(out));
    QCOMPARE(storedDataset(file).value("task", ""), std::string("regression"));
    // The same table and label again, without --task: still regression.
    out = studio({"--headless", "--project", file, "--dataset", "csv:" + reg, "--label", "y", "--train", "--epochs", "1"},
                 &code);
    QVERIFY2(code == 0, qPrintable(out));
    QCOMPARE(storedDataset(file).value("task", ""), std::string("regression"));
    // Another table: classification, said on the terminal.
    out = studio({"--headless", "--project", file, "--dataset", "csv:" + cls, "--train", "--epochs", "1"}, &code);
    QVERIFY2(code == 0, qPrintable(out));
    QVERIFY2(out.contains("task: classification (the project's regression was for its earlier table csv:" + reg), qPrintable(out));
    QCOMPARE(storedDataset(file).value("task", "classification"), std::string("classification"));
    auto project = kiln::projects::Project::open(file.toStdString());
    QCOMPARE(project.runs().size(), size_t(3));
    QVERIFY(!project.evaluation(project.runs().back().id)->is_regression());
  }

  // --new FILE --template T --dataset csv:FILE and the table's options without --train: the
  // project keeps the dataset and a graph fitted to it, as --train would, and trains nothing.
  void newWithDatasetStoresItWithoutTraining() {
    QTemporaryDir dir;
    const QString file = dir.filePath("n.kiln"), plain = dir.filePath("p.kiln"), csv = dir.filePath("five.csv"),
                  rows = dir.filePath("rows.csv");
    QByteArray t = "# five features and a label, made by the test\na,b,c,d,e,kind\n", data;
    for (int i = 0; i < 20; ++i)
      data += QByteArray::number(i) + ",1,2,3," + QByteArray::number(i % 3) + "," + (i % 2 ? "x" : "y") + "\n";
    writeFile(csv, t + data);
    writeFile(rows, data);
    int code = 0;
    QString out = studio({"--headless", "--new", file, "--template", "table_mlp", "--dataset", "csv:" + csv, "--skip-rows",
                          "1", "--label", "kind", "--task", "classification"},
                         &code);
    QVERIFY2(code == 0, qPrintable(out));
    QVERIFY2(out.contains("fitted to the dataset: Input 'features': shape [4] -> [5]"), qPrintable(out));
    QVERIFY2(out.contains("stored the dataset csv:" + csv + " (classification) in " + file), qPrintable(out));
    QVERIFY2(!out.contains("samples/s"), qPrintable(out));  // nothing trained
    QCOMPARE(runCount(file), size_t(0));
    const nlohmann::json stored = storedDataset(file);
    QCOMPARE(stored.value("name", ""), std::string("csv"));
    QCOMPARE(stored.value("path", ""), csv.toStdString());
    QCOMPARE(stored.value("label", ""), std::string("kind"));
    QCOMPARE(stored.value("skip_rows", -1), 1);
    QCOMPARE(stored.value("header", false), true);
    QCOMPARE(inputAndClasses(file), QString("[5] 2"));
    // --no-header: the first line is a row (the label is the last column).
    out = studio({"--headless", "--new", plain, "--template", "table_mlp", "--dataset", "csv:" + rows, "--no-header"}, &code);
    QVERIFY2(code == 0, qPrintable(out));
    QCOMPARE(storedDataset(plain).value("header", true), false);
    QCOMPARE(inputAndClasses(plain), QString("[5] 2"));
    // A table that cannot be read: exit 1 naming it; the project is made, the dataset not stored.
    const QString bad = dir.filePath("b.kiln");
    out = studio({"--headless", "--new", bad, "--template", "table_mlp", "--dataset", "csv:" + dir.filePath("none.csv")},
                 &code);
    QCOMPARE(code, 1);
    QVERIFY2(out.contains("cannot fit " + bad + " on csv:" + dir.filePath("none.csv") + ": "), qPrintable(out));
    QCOMPARE(inputAndClasses(bad), QString("[4] 3"));
  }

  // --new FILE --template T without --train: the run options become the project's training
  // settings, which the next --train uses; the options of one run are usage errors, nothing made.
  void newWithoutTrainStoresRunOptions() {
    QTemporaryDir dir;
    const QString file = dir.filePath("s.kiln"), plain = dir.filePath("plain.kiln"), csv = dir.filePath("t.csv"),
                  gaps = dir.filePath("gaps.csv");
    writeFile(csv, table(40, false));
    QByteArray withGaps = table(40, false);
    withGaps.replace("\n0.2,", "\nNA,");  // a missing feature value in some rows
    writeFile(gaps, withGaps);
    int code = 0;
    QString out = studio({"--headless", "--new", file, "--template", "table_mlp", "--dataset", "csv:" + csv, "--epochs",
                          "2", "--lr", "0.02", "--batch-size", "16", "--device", "cpu", "--checkpoint-every", "7"},
                         &code);
    QVERIFY2(code == 0, qPrintable(out));
    QVERIFY2(out.contains("stored the training settings in " + file +
                          ": 2 epochs, lr 0.02, batch size 16, device cpu, a checkpoint every 7 steps"),
             qPrintable(out));
    QVERIFY2(!out.contains("samples/s"), qPrintable(out));  // nothing trained
    QCOMPARE(runCount(file), size_t(0));
    nlohmann::json t = storedTraining(file);
    QCOMPARE(t.value("epochs", 0), 2);
    QCOMPARE(t.value("lr", 0.0), 0.02);
    QCOMPARE(t.value("batch_size", 0), 16);
    QCOMPARE(t.value("device", ""), std::string("cpu"));
    QCOMPARE(t.value("checkpoint_steps", int64_t(0)), int64_t(7));
    QCOMPARE(t.value("checkpoint_minutes", -1.0), 0.0);
    // A later --train uses them: two epochs of batches of 16, recorded with the run.
    out = studio({"--headless", "--project", file, "--train"}, &code);
    QVERIFY2(code == 0, qPrintable(out));
    QVERIFY2(out.contains("epoch 2/2"), qPrintable(out));
    const auto runs = kiln::projects::Project::open(file.toStdString()).runs();
    QCOMPARE(runs.size(), size_t(1));
    const nlohmann::json run = nlohmann::json::parse(runs[0].config_json);
    QCOMPARE(run.value("epochs", 0), 2);
    QCOMPARE(run.value("batch_size", 0), 16);
    QCOMPARE(run.value("lr", 0.0), 0.02);
    // Without --dataset too; --checkpoint-every 5m is five minutes.
    out = studio({"--headless", "--new", plain, "--template", "table_mlp", "--epochs", "3", "--checkpoint-every", "5m"}, &code);
    QVERIFY2(code == 0, qPrintable(out));
    t = storedTraining(plain);
    QCOMPARE(t.value("epochs", 0), 3);
    QCOMPARE(t.value("batch_size", 0), 128);  // not given: the template's
    QCOMPARE(t.value("checkpoint_steps", int64_t(-1)), int64_t(0));
    QCOMPARE(t.value("checkpoint_minutes", 0.0), 5.0);
    // --missing with a table is stored as its policy (the table with gaps is read with it; without
    // it, the stored policy 'error' names the line).
    out = studio({"--headless", "--new", dir.filePath("gaps.kiln"), "--template", "table_mlp", "--dataset", "csv:" + gaps},
                 &code);
    QVERIFY2(code == 1 && out.contains("missing value"), qPrintable(out));
    const QString filled = dir.filePath("filled.kiln");
    out = studio({"--headless", "--new", filled, "--template", "table_mlp", "--dataset", "csv:" + gaps, "--missing", "fill"},
                 &code);
    QVERIFY2(code == 0, qPrintable(out));
    QCOMPARE(storedDataset(filled).value("missing", ""), std::string("fill"));
    // The options of one run, and --missing without a table, are refused before a file is made.
    const QString none = dir.filePath("none.kiln");
    const QStringList make{"--headless", "--new", none, "--template", "table_mlp"};
    struct Case {
      QStringList args;
      QString says;
    };
    const QList<Case> mistakes = {
        {make + QStringList{"--dataset", "csv:" + csv, "--test-subset", "5"},
         "--test-subset is about a run and not stored in the project; add --train to train it now"},
        {make + QStringList{"--subset", "10", "--test-seed", "3"}, "--subset, --test-seed are about a run"},
        {make + QStringList{"--resume"}, "--resume is about a run"},
        {make + QStringList{"--missing", "fill"}, "--missing applies to a CSV table: --dataset csv:FILE"},
        {make + QStringList{"--rescan"}, "--rescan without --train reads the image folder of --dataset imagefolder:DIR"},
        {make + QStringList{"--train", "--checkpoint-every", "5x"}, "--checkpoint-every expects N"},
        {make + QStringList{"--checkpoint-every", "1.5"}, "--checkpoint-every expects N"},
    };
    for (const Case& c : mistakes) {
      out = studio(c.args, &code);
      QVERIFY2(code == 2, qPrintable(c.args.join(' ') + " -> " + QString::number(code) + ": " + out));
      QVERIFY2(out.contains(c.says), qPrintable(c.args.join(' ') + ": " + out));
      QVERIFY2(!QFile::exists(none), qPrintable(c.args.join(' ')));
    }
  }
};

QTEST_GUILESS_MAIN(TestStudioHeadlessFlags)
#include "test_studio_headless_flags.moc"
