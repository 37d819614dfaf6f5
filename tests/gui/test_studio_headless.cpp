// kiln-studio --headless: create a project from a template, train it in the terminal,
// SIGKILL it mid-run and reopen the project: every metric row it reported committed
// is there. Without a display and without --headless it says so and suggests --headless;
// --help and --version work without one.
#include <QProcess>
#include <QRegularExpression>
#include <QtTest>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "projects/project.h"
#include "tests/common/test_deps.h"

namespace {
const QString kStudio = QStringLiteral(KILN_BINARY_DIR "/bin/kiln-studio");
}

class TestStudioHeadless : public QObject {
  Q_OBJECT
 private slots:
  void noDisplaySuggestsHeadless() {
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    for (const char* v : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"}) env.remove(v);
    p.setProcessEnvironment(env);
    p.start(kStudio, {});
    QVERIFY(p.waitForFinished(20000));
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QCOMPARE(p.exitCode(), 2);
    const QString err = p.readAllStandardError();
    QVERIFY2(err.contains("no display") && err.contains("--headless"), qPrintable(err));

    // --help and --version print without a display (help2man reads them for the man page).
    for (const QString& flag : {QStringLiteral("--help"), QStringLiteral("--version")}) {
      p.start(kStudio, {flag});
      QVERIFY(p.waitForFinished(20000));
      const QString out = p.readAllStandardOutput();
      QVERIFY2(p.exitCode() == 0, qPrintable(flag + ": " + p.readAllStandardError()));
      QVERIFY2(out.contains(flag == "--help" ? "--headless" : "0.1.0"), qPrintable(out));
    }
  }

  void newFromTemplateAndBadArguments() {
    QTemporaryDir dir;
    const QString file = dir.filePath("n.kiln");
    QProcess p;
    p.start(kStudio, {"--headless", "--new", file, "--template", "fashion_mnist_cnn"});
    QVERIFY(p.waitForFinished(20000));
    QCOMPARE(p.exitCode(), 0);
    auto project = kiln::projects::Project::open(file.toStdString());
    QVERIFY(project.latest_graph().has_value());
    QVERIFY(project.setting("training").has_value());

    p.start(kStudio, {"--headless", "--new", dir.filePath("x.kiln"), "--template", "nope"});
    QVERIFY(p.waitForFinished(20000));
    QCOMPARE(p.exitCode(), 2);  // a command-line mistake
    QVERIFY(QString(p.readAllStandardError()).contains("unknown template 'nope'"));

    p.start(kStudio, {"--headless", "--project", dir.filePath("missing.kiln"), "--train"});
    QVERIFY(p.waitForFinished(20000));
    QCOMPARE(p.exitCode(), 1);
    QVERIFY(QString(p.readAllStandardError()).contains("missing.kiln"));
  }

  void readOnlyProjectFailsUpFront() {
    // Root may write to read-only files, so as root the project is opened as user
    // nobody (setpriv, util-linux), for whom the file and its folder are read-only.
    const bool root = ::geteuid() == 0;
    const QString setpriv = QStandardPaths::findExecutable("setpriv");
    KILN_QSKIP_UNLESS_DEP(!root || !setpriv.isEmpty(), "util-linux", "running as root without setpriv");
    QTemporaryDir dir;
    const QString file = dir.filePath("ro.kiln");
    QProcess p;
    p.start(kStudio, {"--headless", "--new", file, "--template", "fashion_mnist_mlp"});
    QVERIFY(p.waitForFinished(20000));
    QCOMPARE(p.exitCode(), 0);
    const auto readOnly = QFile::ReadOwner | QFile::ReadUser | QFile::ReadGroup | QFile::ReadOther;
    QVERIFY(QFile::setPermissions(file, readOnly));
    QVERIFY(QFile::setPermissions(dir.path(), readOnly | QFile::ExeOwner | QFile::ExeUser | QFile::ExeGroup |
                                                  QFile::ExeOther));
    QStringList args{"--headless", "--project", file, "--train"};
    if (root) {
      args.prepend(kStudio);
      args = QStringList{"--reuid=65534", "--regid=65534", "--clear-groups"} + args;
      p.start(setpriv, args);
    } else {
      p.start(kStudio, args);
    }
    QVERIFY(p.waitForFinished(20000));
    QFile::setPermissions(dir.path(), QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    QFile::setPermissions(file, QFile::ReadOwner | QFile::WriteOwner);
    const QString e = p.readAllStandardError();
    QVERIFY2(p.exitCode() == 1, qPrintable(e));
    QVERIFY2(e.contains("read-only") && e.contains("Save As") && !e.contains("run 0"), qPrintable(e));
  }

  void sigkillMidTrainingKeepsCommittedRows() {
    KILN_QSKIP_UNLESS_DEP(QDir("/usr/share/datasets/fashion-mnist").exists(), "dataset-fashion-mnist",
                          "no Fashion-MNIST in /usr/share/datasets/fashion-mnist");
    QTemporaryDir dir;
    const QString file = dir.filePath("k.kiln");
    QProcess make;
    make.start(kStudio, {"--headless", "--new", file, "--template", "fashion_mnist_mlp"});
    QVERIFY(make.waitForFinished(20000));
    QCOMPARE(make.exitCode(), 0);

    QProcess p;
    p.setProcessChannelMode(QProcess::SeparateChannels);
    p.start(kStudio, {"--headless", "--project", file, "--train", "--epochs", "50", "--subset", "20000", "--device", "cpu"});
    QVERIFY(p.waitForStarted(10000));
    QRegularExpression committed("rows committed (\\d+)");
    int progressLines = 0;
    qint64 lastCommitted = -1;
    QString output;
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < 120000 && (progressLines < 4 || lastCommitted <= 0)) {
      if (!p.waitForReadyRead(1000) && p.state() != QProcess::Running) break;
      while (p.canReadLine()) {
        const QString line = QString::fromUtf8(p.readLine());
        output += line;
        auto m = committed.match(line);
        if (m.hasMatch()) {
          ++progressLines;
          lastCommitted = m.captured(1).toLongLong();
        }
      }
    }
    QVERIFY2(progressLines >= 4 && lastCommitted > 0, qPrintable(output + p.readAllStandardError()));
    p.kill();  // SIGKILL
    QVERIFY(p.waitForFinished(10000));
    QCOMPARE(p.exitStatus(), QProcess::CrashExit);

    auto project = kiln::projects::Project::open(file.toStdString());  // opens after the kill
    auto runs = project.runs();
    QCOMPARE(runs.size(), size_t(1));
    // Never ended, its process gone: shown as interrupted, its committed metrics kept.
    QCOMPARE(runs[0].status, kiln::projects::RunStatus::interrupted);
    QCOMPARE(runs[0].message, std::string(kiln::projects::kInterruptedMessage));
    const auto steps = project.step_metrics(runs[0].id);
    const auto epochs = project.epoch_metrics(runs[0].id);
    const qint64 rows = static_cast<qint64>(steps.size() + epochs.size());
    qInfo("reported committed before the kill: %lld rows; found after reopening: %lld", lastCommitted, rows);
    QVERIFY(rows >= lastCommitted);
    for (size_t i = 0; i < steps.size(); ++i) QCOMPARE(steps[i].step, int64_t(i + 1));  // no gaps
  }

  void headlessTrainingFinishes() {
    KILN_QSKIP_UNLESS_DEP(QDir("/usr/share/datasets/fashion-mnist").exists(), "dataset-fashion-mnist",
                          "no Fashion-MNIST in /usr/share/datasets/fashion-mnist");
    QTemporaryDir dir;
    const QString file = dir.filePath("h.kiln");
    QProcess p;
    // One command makes the project and trains it (the quickstart's fallback).
    // --subset shrinks the training images only; --test-subset the test images, recorded with the run.
    p.start(kStudio, {"--headless", "--new", file, "--template", "fashion_mnist_cnn", "--train", "--epochs", "1",
                      "--subset", "512", "--test-subset", "500"});
    QVERIFY(p.waitForFinished(120000));
    const QString out = p.readAllStandardOutput();
    QVERIFY2(p.exitCode() == 0, qPrintable(out + p.readAllStandardError()));
    QVERIFY(out.contains("run 1 finished"));
    QVERIFY(out.contains("test accuracy"));
    QVERIFY2(out.contains("evaluating on 500 of the 10000 (seed 0) test images"), qPrintable(out));
    auto project = kiln::projects::Project::open(file.toStdString());
    QCOMPARE(project.runs().at(0).status, kiln::projects::RunStatus::finished);
    QCOMPARE(project.step_metrics(1).size(), size_t(4));  // 512 images / batch 128
    const auto evaluation = project.evaluation(1);
    QVERIFY(evaluation.has_value());
    QCOMPARE(evaluation->count, int64_t(500));
    QCOMPARE(evaluation->predictions.size(), size_t(500));
    const auto config = nlohmann::json::parse(project.runs().at(0).config_json);
    QCOMPARE(config.at("test_size").get<int64_t>(), int64_t(500));
    QCOMPARE(config.at("test_seed").get<int64_t>(), int64_t(0));
    QCOMPARE(config.at("dataset").at("test_size").get<int64_t>(), int64_t(500));
    QCOMPARE(config.at("dataset").at("train_size").get<int64_t>(), int64_t(512));
    QVERIFY(QString::fromStdString(project.runs().at(0).name).contains("test 500"));
    // Again on the existing file: a second run of the same project.
    // --lr and --batch-size set this run's rate and batch (256 images: 4 steps of 64); the stored
    // training setting is unchanged.
    p.start(kStudio, {"--headless", "--new", file, "--template", "fashion_mnist_cnn", "--train", "--epochs", "1",
                      "--subset", "256", "--test-subset", "300", "--test-seed", "3", "--lr", "0.0125", "--batch-size", "64"});
    QVERIFY(p.waitForFinished(120000));
    QCOMPARE(p.exitCode(), 0);
    auto again = kiln::projects::Project::open(file.toStdString());
    QCOMPARE(again.runs().size(), size_t(2));
    const auto config2 = nlohmann::json::parse(again.runs().at(1).config_json);
    QCOMPARE(config2.at("lr").get<double>(), 0.0125);
    QCOMPARE(config2.at("batch_size").get<int64_t>(), int64_t(64));
    QCOMPARE(again.step_metrics(2).size(), size_t(4));
    QCOMPARE(nlohmann::json::parse(*again.setting("training")).at("batch_size").get<int64_t>(), int64_t(128));
    QCOMPARE(again.evaluation(2)->count, int64_t(300));
    QCOMPARE(nlohmann::json::parse(again.runs().at(1).config_json).at("test_seed").get<int64_t>(), int64_t(3));
    // A random subset of the whole split (test_studio_subsets checks which), not its first 300.
    const auto evaluation2 = again.evaluation(2);  // kept: its predictions are read below
    QVERIFY(evaluation2.has_value());
    const auto& predictions = evaluation2->predictions;
    QVERIFY(predictions.back().index > 300);
    for (size_t i = 1; i < predictions.size(); ++i) QVERIFY(predictions[i - 1].index < predictions[i].index);
    // A seed < 0 is refused with the option's name, exit 2 (a command-line mistake, as kiln's).
    p.start(kStudio, {"--headless", "--project", file, "--train", "--test-subset", "300", "--test-seed", "-1"});
    QVERIFY(p.waitForFinished(30000));
    QCOMPARE(p.exitCode(), 2);
    QVERIFY(QString(p.readAllStandardError()).contains("--test-seed needs a whole number >= 0"));
    // A count beyond an int is refused, not wrapped (4294967328 would be 32).
    p.start(kStudio, {"--headless", "--project", file, "--train", "--batch-size", "4294967328"});
    QVERIFY(p.waitForFinished(30000));
    QCOMPARE(p.exitCode(), 2);
    QVERIFY(QString(p.readAllStandardError()).contains("--batch-size needs a whole number from 1 to 2147483647, got '4294967328'"));
    for (const QString lr : {"0", "-1", "nan", "fast"}) {
      p.start(kStudio, {"--headless", "--project", file, "--train", "--lr", lr});
      QVERIFY(p.waitForFinished(30000));
      QCOMPARE(p.exitCode(), 2);
      QVERIFY2(QString(p.readAllStandardError()).contains("--lr needs a number > 0, got '" + lr + "'"), qPrintable(lr));
    }
  }
};

QTEST_GUILESS_MAIN(TestStudioHeadless)
#include "test_studio_headless.moc"
