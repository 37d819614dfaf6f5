// kiln-studio --headless, a new user's findings: a command-line mistake exits 2 (as `kiln`'s do)
// and a runtime failure 1; a project whose dataset folder is gone is refused before a run is
// recorded; --missing sets a CSV table's missing-value policy for one run (kiln train's names);
// an image truncated in place after the project stored the folder's file index is skipped and
// named instead of failing the run, and --rescan ignores the stored index. Tiny generated data.
#include <QDir>
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

// x1,x2,kind: two separated classes, `rows` rows; row 3's x2 is empty (a missing value on line 5).
QByteArray tableWithAGap(int rows) {
  QByteArray t = "x1,x2,kind\n";
  for (int i = 0; i < rows; ++i) {
    const bool high = i % 2;
    t += QByteArray::number((high ? 5.0 : -5.0) + 0.1 * (i % 7)) + "," +
         (i == 3 ? QByteArray() : QByteArray::number(0.3 * (i % 5))) + "," + (high ? "high" : "low") + "\n";
  }
  return t;
}

size_t runCount(const QString& file) { return kiln::projects::Project::open(file.toStdString()).runs().size(); }

nlohmann::json runDataset(const QString& file, size_t i) {
  return nlohmann::json::parse(kiln::projects::Project::open(file.toStdString()).runs().at(i).config_json).at("dataset");
}

// An image-folder project (template image_folder_cnn on root: two classes of 6 images), trained
// once for an epoch, which stores the folder's file index in the project.
void makeFolderProject(const QString& file, const QString& root) {
  writeImageFolder(root, {"a", "b"}, 6);
  int code = 0;
  const QString out = studio({"--headless", "--new", file, "--template", "image_folder_cnn", "--dataset",
                              "imagefolder:" + root, "--train", "--epochs", "1"},
                             &code);
  QVERIFY2(code == 0, qPrintable(out));
}

}  // namespace

class TestStudioHeadlessData : public QObject {
  Q_OBJECT
 private slots:
  void usageErrorsExit2RuntimeErrors1() {
    QTemporaryDir dir;
    const QString file = dir.filePath("u.kiln");
    int code = 0;
    QString out = studio({"--headless", "--new", file, "--template", "table_mlp"}, &code);
    QVERIFY2(code == 0, qPrintable(out));
    const QStringList train{"--headless", "--project", file, "--train"};
    struct Case {
      QStringList args;
      QString says;
    };
    const QList<Case> mistakes = {
        {train + QStringList{"--bogus"}, "Unknown option 'bogus'"},
        {train + QStringList{"--epochs"}, "Missing value after '--epochs'"},
        {train + QStringList{"--epochs", "two"}, "--epochs needs a whole number from 1 to 2147483647, got 'two'"},
        {train + QStringList{"--lr", "fast"}, "--lr needs a number > 0, got 'fast'"},
        {train + QStringList{"--missing", "zero"}, "--missing must be error, drop or fill (as kiln train --missing), got 'zero'"},
        {train + QStringList{"--dataset", "folder:x"}, "--dataset expects imagefolder:DIR"},
        {{"--headless", "--project", file}, "add --train"},
        {{"--headless", "--new", dir.filePath("n.kiln"), "--template", "nope"}, "unknown template 'nope'"},
        {{"--headless", "--new", dir.filePath("n.kiln")}, "--new needs --template NAME"},
        {{"--headless"}, "--headless needs --project FILE --train"},
        {{"--bogus"}, "Unknown option 'bogus'"},  // without --headless too (no window opens)
    };
    for (const Case& c : mistakes) {
      out = studio(c.args, &code);
      QVERIFY2(code == 2, qPrintable(c.args.join(' ') + " -> " + QString::number(code) + ": " + out));
      QVERIFY2(out.contains(c.says), qPrintable(c.args.join(' ') + ": " + out));
    }
    QVERIFY(!QFileInfo::exists(dir.filePath("n.kiln")));
    QCOMPARE(runCount(file), size_t(0));
    // A runtime failure stays 1: a project that is not there, a table that is not there.
    out = studio({"--headless", "--project", dir.filePath("missing.kiln"), "--train"}, &code);
    QVERIFY2(code == 1 && out.contains("missing.kiln"), qPrintable(out));
    out = studio(train + QStringList{"--dataset", "csv:" + dir.filePath("none.csv")}, &code);
    QVERIFY2(code == 1 && out.contains("none.csv"), qPrintable(out));
    // --help says which status is which.
    out = studio({"--help"}, &code);
    QVERIFY2(code == 0 && out.contains("2 a mistake on the command line"), qPrintable(out));
  }

  void goneDatasetFolderIsRefusedBeforeARun() {
    QTemporaryDir dir;
    const QString root = dir.filePath("pets"), file = dir.filePath("g.kiln");
    makeFolderProject(file, root);
    QCOMPARE(runCount(file), size_t(1));
    QVERIFY(QDir(root).removeRecursively());
    int code = 0;
    const QString out = studio({"--headless", "--project", file, "--train", "--epochs", "1"}, &code);
    QVERIFY2(code == 1, qPrintable(out));
    QVERIFY2(out.contains("the dataset's image folder '" + root + "' is gone"), qPrintable(out));
    QVERIFY2(!out.contains("run 2"), qPrintable(out));
    QCOMPARE(runCount(file), size_t(1));  // no failed run recorded
  }

  void missingPolicyForOneRun() {
    QTemporaryDir dir;
    const QString csv = dir.filePath("gap.csv"), file = dir.filePath("m.kiln");
    writeFile(csv, tableWithAGap(40));
    int code = 0;
    // Without a policy the stored one (error) names the line.
    QString out = studio({"--headless", "--new", file, "--template", "table_mlp", "--dataset", "csv:" + csv, "--train",
                          "--epochs", "1"},
                         &code);
    QVERIFY2(code == 1 && out.contains("gap.csv:5, column 'x2'"), qPrintable(out));
    QCOMPARE(runCount(file), size_t(0));
    // --missing drop: the row is dropped, the run finishes and records the policy; the project keeps its own.
    out = studio({"--headless", "--project", file, "--dataset", "csv:" + csv, "--missing", "drop", "--train", "--epochs", "1"},
                 &code);
    QVERIFY2(code == 0, qPrintable(out));
    QCOMPARE(runCount(file), size_t(1));
    QCOMPARE(runDataset(file, 0).value("missing", ""), std::string("drop"));
    auto stored = nlohmann::json::parse(*kiln::projects::Project::open(file.toStdString()).setting("dataset"));
    QVERIFY2(!stored.contains("missing"), stored.dump().c_str());
    // fill, on the stored dataset.
    out = studio({"--headless", "--project", file, "--train", "--epochs", "1", "--missing", "fill"}, &code);
    QVERIFY2(code == 0, qPrintable(out));
    QCOMPARE(runDataset(file, 1).value("missing", ""), std::string("fill"));
    // A policy the project stores (the Dataset settings' "missing") is used without the flag.
    stored["missing"] = "drop";
    kiln::projects::Project::open(file.toStdString()).set_setting("dataset", stored.dump());
    out = studio({"--headless", "--project", file, "--train", "--epochs", "1"}, &code);
    QVERIFY2(code == 0, qPrintable(out));
    QCOMPARE(runDataset(file, 2).value("missing", ""), std::string("drop"));
    // --missing error overrides it: the line is named again.
    out = studio({"--headless", "--project", file, "--train", "--epochs", "1", "--missing", "error"}, &code);
    QVERIFY2(code == 1 && out.contains("gap.csv:5, column 'x2'"), qPrintable(out));
    // A stored policy the Studio does not know is named, nothing trained.
    stored["missing"] = "sometimes";
    kiln::projects::Project::open(file.toStdString()).set_setting("dataset", stored.dump());
    const size_t runs = runCount(file);
    out = studio({"--headless", "--project", file, "--train", "--epochs", "1"}, &code);
    QVERIFY2(code == 1 && out.contains("'missing' must be error, drop or fill, got 'sometimes'"), qPrintable(out));
    QCOMPARE(runCount(file), runs);
  }

  // A dataset the project's graph cannot take even fitted (a CNN given a table's rows) is refused
  // before the project keeps the fitted graph or the new dataset: a plain --train still works after.
  void unfittableDatasetLeavesTheProjectAsItWas() {
    QTemporaryDir dir;
    const QString csv = dir.filePath("t.csv"), file = dir.filePath("cnn.kiln");
    writeFile(csv, tableWithAGap(40));
    int code = 0;
    QString out = studio({"--headless", "--new", file, "--template", "fashion_mnist_cnn"}, &code);
    QVERIFY2(code == 0, qPrintable(out));
    auto versions = [&] { return kiln::projects::Project::open(file.toStdString()).graph_versions().size(); };
    const size_t before = versions();
    out = studio({"--headless", "--project", file, "--train", "--dataset", "csv:" + csv, "--missing", "drop", "--epochs", "1"},
                 &code);
    QVERIFY2(code == 1 && out.contains("the graph cannot take this dataset's samples [2]: node 'conv1' (Conv2d)"),
             qPrintable(out));
    QCOMPARE(versions(), before);
    QCOMPARE(runCount(file), size_t(0));
    const auto stored = nlohmann::json::parse(*kiln::projects::Project::open(file.toStdString()).setting("dataset"));
    QCOMPARE(stored.value("name", ""), std::string("fashion-mnist"));
  }

  void missingNeedsATable() {
    QTemporaryDir dir;
    const QString root = dir.filePath("pets"), file = dir.filePath("t.kiln");
    makeFolderProject(file, root);
    int code = 0;
    const QString out = studio({"--headless", "--project", file, "--train", "--missing", "drop"}, &code);
    QVERIFY2(code == 2 && out.contains("--missing applies to a CSV table") && out.contains(root), qPrintable(out));
    QCOMPARE(runCount(file), size_t(1));
  }

  void imageTruncatedAfterTheIndexWasStored() {
    QTemporaryDir dir;
    const QString root = dir.filePath("pets"), file = dir.filePath("t.kiln");
    makeFolderProject(file, root);  // the folder's index is now in the project
    // Rewritten in place: the folder's modification time and entries do not change.
    QFile a(root + "/a/2.png");
    QVERIFY(a.resize(20));
    int code = 0;
    QString out = studio({"--headless", "--project", file, "--train", "--epochs", "1"}, &code);
    QVERIFY2(code == 0, qPrintable(out));
    QVERIFY2(out.contains("reading the folder again"), qPrintable(out));
    QVERIFY2(out.contains("skipped " + root + "/a/2.png"), qPrintable(out));
    auto project = kiln::projects::Project::open(file.toStdString());
    QCOMPARE(project.runs().size(), size_t(2));
    QCOMPARE(project.runs().at(1).status, kiln::projects::RunStatus::finished);
    QVERIFY(project.evaluation(project.runs().at(1).id).has_value());
    // --rescan reads the folder whatever the index holds: another truncated file is named.
    QFile b(root + "/b/4.png");
    QVERIFY(b.resize(30));
    out = studio({"--headless", "--project", file, "--train", "--epochs", "1", "--rescan"}, &code);
    QVERIFY2(code == 0, qPrintable(out));
    QVERIFY2(!out.contains("reading the folder again"), qPrintable(out));
    QVERIFY2(out.contains("skipped " + root + "/b/4.png") && out.contains("skipped " + root + "/a/2.png"), qPrintable(out));
    QCOMPARE(runCount(file), size_t(3));
  }
};

QTEST_GUILESS_MAIN(TestStudioHeadlessData)
#include "test_studio_headless_data.moc"
