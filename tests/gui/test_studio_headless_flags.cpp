// kiln-studio --headless, issue 14's new-user try of their own data: options that were silently
// ignored or wrongly refused. An option given twice, --subset on a table, --label on an image
// folder, --skip-rows without a table, an unknown --device and --new on an existing file are usage
// errors (exit 2, nothing stored); --skip-rows 0 is accepted; a task set for one table is not
// carried to another. Tiny generated tables, one epoch.
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

nlohmann::json storedDataset(const QString& file) {
  return nlohmann::json::parse(*kiln::projects::Project::open(file.toStdString()).setting("dataset"));
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
};

QTEST_GUILESS_MAIN(TestStudioHeadlessFlags)
#include "test_studio_headless_flags.moc"
