// DatasetPanel: sample grid and class counts from the Debian package
// dataset-fashion-mnist, validated split sizes, settings JSON, a missing data set.
#include <QLineEdit>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include "engine/core/error.h"
#include "engine/data/fashion_mnist.h"
#include "tests/common/test_deps.h"
#include "widgets/project/dataset_panel.h"

using kiln::studio::DatasetPanel;
using kiln::studio::DatasetSettings;

class TestDatasetPanel : public QObject {
  Q_OBJECT

  // Fashion-MNIST settings of these sizes in `dir` (the other fields at their defaults).
  static DatasetSettings fashion(std::string dir, int64_t train, int64_t validation) {
    DatasetSettings s;
    s.dir = std::move(dir);
    s.train_size = train;
    s.validation_size = validation;
    return s;
  }

  static QString error_of(const std::function<void()>& f) {
    try {
      f();
    } catch (const kiln::ValueError& e) {
      return QString::fromUtf8(e.what());
    }
    return {};
  }

 private slots:
  void showsSamplesAndCounts() {
    KILN_QSKIP_UNLESS_DEP(QFile::exists(QString(kiln::data::FashionMNIST::kDefaultDir) + "/train-labels-idx1-ubyte.gz"),
                          "dataset-fashion-mnist", std::string("no Fashion-MNIST in ") + kiln::data::FashionMNIST::kDefaultDir);
    DatasetPanel panel;
    panel.resize(800, 900);
    panel.show();
    QSignalSpy loaded(&panel, &DatasetPanel::loaded);
    QVERIFY(loaded.wait(60000));
    QVERIFY2(panel.isLoaded(), qPrintable(panel.errorText()));
    QVERIFY(panel.errorText().isEmpty());
    const auto* grid = panel.sampleGrid();
    QCOMPARE(grid->count(), DatasetPanel::kSamples);
    QCOMPARE(grid->image(0).size(), QSize(28, 28));
    QCOMPARE(grid->image(0).format(), QImage::Format_Grayscale8);
    QStringList names;
    for (const char* n : kiln::data::FashionMNIST::kClassNames) names << n;
    QSet<QString> seen;
    bool any_ink = false;
    for (int i = 0; i < grid->count(); ++i) {
      QVERIFY2(names.contains(grid->label(i)), qPrintable(grid->label(i)));
      seen.insert(grid->label(i));
      any_ink = any_ink || grid->image(i).pixelColor(14, 14) != QColor(Qt::black);
    }
    QVERIFY(seen.size() >= 5);  // evenly spaced samples cover many classes
    QVERIFY(any_ink);
    QCOMPARE(grid->label(0), names[9]);  // the first training image is an ankle boot
    QVERIFY(grid->heightForWidth(grid->width()) > 56);
    const QImage shot = panel.grab().toImage();
    QVERIFY(!shot.isNull());
    if (qEnvironmentVariableIsSet("KILN_TEST_SHOTS"))  // a folder to look at the panel in
      shot.save(qEnvironmentVariable("KILN_TEST_SHOTS") + "/dataset_panel.png");

    const QTableWidget* t = panel.classTable();
    QCOMPARE(t->rowCount(), 10);
    for (int c = 0; c < 10; ++c) {
      QCOMPARE(t->item(c, 0)->text(), names[c]);
      QCOMPARE(t->item(c, 1)->text(), QString("6,000"));  // Fashion-MNIST is balanced
      QCOMPARE(t->item(c, 2)->text(), QString("1,000"));
    }
  }

  void spinBoxesAreValidated() {
    DatasetPanel panel(nullptr, fashion("/nonexistent", 55000, 5000));
    QSignalSpy changed(&panel, &DatasetPanel::settingsChanged);
    panel.validationSpin()->setValue(10000);  // "all the rest" follows the validation size
    QCOMPARE(panel.settings().validation_size, int64_t(10000));
    QCOMPARE(panel.settings().train_size, int64_t(50000));
    panel.trainSpin()->setValue(2000);        // a subset
    QCOMPARE(panel.settings().train_size, int64_t(2000));
    panel.validationSpin()->setValue(59000);  // keeps the subset, shrinks its maximum
    QCOMPARE(panel.trainSpin()->maximum(), 1000);
    QCOMPARE(panel.settings().train_size, int64_t(1000));
    panel.trainSpin()->setValue(70000);       // beyond the range: clamped
    QCOMPARE(panel.settings().train_size, int64_t(1000));
    QVERIFY(changed.size() >= 3);
    QCOMPARE(changed.last().at(0).value<DatasetSettings>(), panel.settings());
    panel.settings().validate();

    const QString e = error_of([&] { panel.setSettings(fashion("/nonexistent", 58000, 5000)); });
    QVERIFY2(e.contains("exceeds the 60000"), qPrintable(e));
    QCOMPARE(panel.settings().validation_size, int64_t(59000));  // unchanged after the refusal
    panel.setSettings(fashion("/nonexistent", 3000, 1000));
    QCOMPARE(panel.validationSpin()->value(), 1000);
    QCOMPARE(panel.trainSpin()->value(), 3000);
  }

  void classesAndTestSizeAreSettings() {
    DatasetPanel panel(nullptr, fashion("/nonexistent", 55000, 5000));
    QCOMPARE(panel.testSpin()->text(), QString("all"));
    panel.testSpin()->setValue(500);
    QCOMPARE(panel.settings().test_size, int64_t(500));
    panel.classesEdit()->setText("5-9");
    emit panel.classesEdit()->editingFinished();
    QCOMPARE(panel.settings().classes, std::string("5-9"));
    QCOMPARE(panel.settings().num_classes(), int64_t(5));
    // 30000 training images of five classes: "all the rest" shrinks with them.
    QCOMPARE(panel.settings().train_size + panel.settings().validation_size, int64_t(30000));
    QCOMPARE(panel.trainSpin()->maximum() + panel.validationSpin()->value(), 30000);
    panel.trainSpin()->setValue(1000);  // issue 13's transfer experiment
    QCOMPARE(panel.settings().train_size, int64_t(1000));
    panel.classesEdit()->setText("5-12");
    emit panel.classesEdit()->editingFinished();
    QVERIFY2(panel.classesError().contains("class 12 is out of range"), qPrintable(panel.classesError()));
    QCOMPARE(panel.settings().classes, std::string("5-9"));  // the refused text is not applied
    const DatasetSettings back = DatasetSettings::from_json(panel.settings().to_json());
    QCOMPARE(back, panel.settings());
    QVERIFY(back.to_json().find(R"("classes":"5-9")") != std::string::npos);
    QVERIFY(back.to_json().find(R"("test_size":500)") != std::string::npos);
    panel.classesEdit()->setText("");  // all ten again
    emit panel.classesEdit()->editingFinished();
    QCOMPARE(panel.settings().num_classes(), int64_t(10));
    QVERIFY(panel.classesError().isEmpty());
  }

  void settingsJsonRoundTrip() {
    DatasetSettings s = fashion("/data/fm", 20000, 4000);
    QCOMPARE(s.to_json(), std::string(R"({"dir":"/data/fm","name":"fashion-mnist","train_size":20000,"validation_size":4000})"));
    QCOMPARE(DatasetSettings::from_json(s.to_json()), s);
    QCOMPARE(DatasetSettings::from_json("{}"), DatasetSettings{});
    QString e = error_of([] { DatasetSettings::from_json("not json"); });
    QVERIFY2(e.contains("dataset settings: not JSON"), qPrintable(e));
    e = error_of([] { DatasetSettings::from_json(R"({"train_size":"many"})"); });
    QVERIFY2(e.contains("'train_size' must be an integer, got \"many\""), qPrintable(e));
    e = error_of([] { DatasetSettings::from_json(R"({"validation_size":2.5})"); });
    QVERIFY2(e.contains("'validation_size' must be an integer, got 2.5"), qPrintable(e));
    e = error_of([] { DatasetSettings::from_json(R"({"name":"cifar10"})"); });
    QVERIFY2(e.contains("'name' must be fashion-mnist"), qPrintable(e));
    e = error_of([] { DatasetSettings::from_json(R"({"validation_size":-1})"); });
    QVERIFY2(e.contains("'validation_size' must be >= 0"), qPrintable(e));
    e = error_of([] { DatasetSettings::from_json("[1,2]"); });
    QVERIFY2(e.contains("expected a JSON object"), qPrintable(e));
    e = error_of([] { DatasetSettings::from_json(R"({"train_size":59000,"validation_size":5000})"); });
    QVERIFY2(e.contains("exceeds the 60000 Fashion-MNIST training images"), qPrintable(e));
  }

  void missingDatasetNamesThePackage() {
    QTemporaryDir empty;
    DatasetPanel panel(nullptr, fashion(empty.filePath("absent").toStdString(), 55000, 5000));
    panel.show();
    QSignalSpy loaded(&panel, &DatasetPanel::loaded);
    QVERIFY(loaded.wait(10000));
    QVERIFY(!panel.isLoaded());
    QVERIFY2(panel.errorText().contains("dataset-fashion-mnist"), qPrintable(panel.errorText()));
    QCOMPARE(panel.sampleGrid()->count(), 0);
    QCOMPARE(panel.classTable()->item(0, 1)->text(), QString("0"));
    QVERIFY(!panel.grab().isNull());  // paints without samples
  }
};

QTEST_MAIN(TestDatasetPanel)
#include "test_dataset_panel.moc"
