// Issue 14, Deliver 4, the Dataset panel's image options: the input size, the augmentation and
// rotation and the test / validation shares are set in the panel, stored with the project's
// dataset settings (old settings open with the defaults), opened by engine/data as `kiln
// train`'s flags are, and used by Studio training (kiln-studio --headless); the augmentation
// preview shows one training image under 8 draws of the loader's own transforms.
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QImage>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "engine/data/dataset_source.h"
#include "engine/data/image_source.h"
#include "projects/index_store.h"
#include "projects/project.h"
#include "tests/gui/headless_studio.h"
#include "tests/gui/test_files.h"
#include "widgets/project/dataset_panel.h"

using namespace kiln::studio;
using kiln::studio::test::writeImageFolder;
using kiln::studio::test::writeProject;
namespace data = kiln::data;

namespace {

bool waitLoaded(DatasetPanel& panel) {
  return QTest::qWaitFor([&] { return panel.isLoaded() || !panel.errorText().isEmpty(); }, 60000);
}

DatasetSettings folder(const QString& path) {
  DatasetSettings s;
  s.name = "imagefolder";
  s.path = path.toStdString();
  return s;
}

// How many of the grid's pictures differ from the first.
int differentFromFirst(const SampleGrid& grid) {
  int n = 0;
  for (int i = 1; i < grid.count(); ++i) n += grid.image(i) != grid.image(0);
  return n;
}

}  // namespace

class TestStudioAugment : public QObject {
  Q_OBJECT
 private slots:
  // Settings written before these options read with the defaults, and defaults write no new keys.
  void oldSettingsKeepDefaults() {
    const std::string old = R"({"dir":"/x","name":"imagefolder","path":"/data/pets","test_fraction":0.2,)"
                            R"("train_size":55000,"validation_fraction":0.1,"validation_size":5000})";
    const DatasetSettings s = DatasetSettings::from_json(old);
    QCOMPARE(s.image_height, int64_t(0));
    QCOMPARE(s.image_width, int64_t(0));
    QCOMPARE(s.augment, std::string("none"));
    QCOMPARE(s.rotation, 0.0);
    QCOMPARE(s.to_json(), old);
    DatasetSettings t = s;
    t.image_height = 24, t.image_width = 32, t.augment = "standard", t.rotation = 15;
    QCOMPARE(DatasetSettings::from_json(t.to_json()), t);
    const data::DatasetSource src = t.source(5);
    QCOMPARE(src.image_height, int64_t(24));
    QCOMPARE(src.image_width, int64_t(32));
    QCOMPARE(src.augment, std::string("standard"));
    QCOMPARE(src.rotation, 15.0);
    for (const char* bad : {R"({"name":"imagefolder","path":"/p","augment":"mirror"})",
                            R"({"name":"imagefolder","path":"/p","rotation":270})",
                            R"({"name":"imagefolder","path":"/p","image_height":8})"}) {
      try {
        DatasetSettings::from_json(bad);
        QFAIL(bad);
      } catch (const kiln::ValueError& e) {
        QVERIFY2(QString(e.what()).contains("dataset settings: '"), e.what());
      }
    }
  }

  // The panel sets size, augmentation, rotation and shares; a new size or share reads the data again.
  void panelSetsImageOptions() {
    QTemporaryDir dir;
    const QString root = dir.filePath("pets");
    writeImageFolder(root, {"cat", "dog"}, 10);
    DatasetPanel panel;
    panel.setSettings(folder(root));
    QVERIFY(waitLoaded(panel));
    QVERIFY2(panel.isLoaded(), qPrintable(panel.errorText()));
    QCOMPARE(panel.summary().sample_shape, std::vector<int64_t>({3, 16, 16}));
    SourceOptions* o = panel.sourceOptions();
    QVERIFY(o->heightSpin()->isVisibleTo(&panel));
    QSignalSpy changed(&panel, &DatasetPanel::settingsChanged);
    o->heightSpin()->setValue(8);  // width "= height": 8 x 8
    QVERIFY(waitLoaded(panel));
    QVERIFY2(panel.isLoaded(), qPrintable(panel.errorText()));
    QCOMPARE(panel.settings().image_height, int64_t(8));
    QCOMPARE(panel.settings().image_width, int64_t(8));
    QCOMPARE(panel.summary().sample_shape, std::vector<int64_t>({3, 8, 8}));
    o->augmentCombo()->setCurrentIndex(o->augmentCombo()->findData("standard"));
    emit o->augmentCombo()->activated(o->augmentCombo()->currentIndex());
    o->rotationSpin()->setValue(20);
    QCOMPARE(panel.settings().augment, std::string("standard"));
    QCOMPARE(panel.settings().rotation, 20.0);
    o->testPercentSpin()->setValue(50);
    QVERIFY(waitLoaded(panel));
    QCOMPARE(panel.settings().test_fraction, 0.5);
    QCOMPARE(panel.summary().test_images, int64_t(10));  // half of each class
    o->validationPercentSpin()->setValue(40);  // at most 90 % together: clamped
    QCOMPARE(o->validationPercentSpin()->value(), 40.0);
    QVERIFY(waitLoaded(panel));
    QCOMPARE(panel.settings().validation_fraction, 0.4);
    QVERIFY(changed.count() >= 5);
    // What the project stores and reads back.
    const DatasetSettings back = DatasetSettings::from_json(panel.settings().to_json());
    QCOMPARE(back, panel.settings());
    // Another panel (a reopened project) shows the stored values.
    DatasetPanel again(nullptr, back);
    QCOMPARE(again.sourceOptions()->heightSpin()->value(), 8);
    QCOMPARE(again.sourceOptions()->augmentCombo()->currentData().toString(), QString("standard"));
    QCOMPARE(again.sourceOptions()->testPercentSpin()->value(), 50.0);
    QVERIFY(waitLoaded(again));
  }

  // A table has shares but no image options.
  void tableHasSharesOnly() {
    QTemporaryDir dir;
    QFile f(dir.filePath("t.csv"));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("a,b,y\n");
    for (int i = 0; i < 40; ++i) f.write(QByteArray::number(i % 2 ? 5 + i % 3 : -5 - i % 3) + ",1," + (i % 2 ? "p" : "n") + "\n");
    f.close();
    DatasetSettings s;
    s.name = "csv";
    s.path = dir.filePath("t.csv").toStdString();
    DatasetPanel panel(nullptr, s);
    QVERIFY(waitLoaded(panel));
    QVERIFY2(panel.isLoaded(), qPrintable(panel.errorText()));
    QVERIFY(!panel.sourceOptions()->heightSpin()->isVisibleTo(&panel));
    QVERIFY(panel.sourceOptions()->testPercentSpin()->isVisibleTo(&panel));
    panel.sourceOptions()->testPercentSpin()->setValue(25);
    QVERIFY(waitLoaded(panel));
    QCOMPARE(panel.settings().test_fraction, 0.25);
    QCOMPARE(panel.summary().test_images, int64_t(10));
    QVERIFY(!panel.augmentPreview()->isVisibleTo(&panel));
  }

  // The preview: 8 draws of the loader's transforms of one training image, redrawn on a change.
  void augmentationPreview() {
    QTemporaryDir dir;
    const QString root = dir.filePath("pets");
    writeImageFolder(root, {"cat", "dog"}, 6);
    DatasetPanel panel;
    panel.setSettings(folder(root));
    QVERIFY(waitLoaded(panel));
    const SampleGrid& grid = *panel.augmentPreview()->grid();
    QVERIFY(panel.augmentPreview()->isVisibleTo(&panel));
    QCOMPARE(grid.count(), AugmentPreview::kDraws);
    QCOMPARE(grid.image(0).size(), QSize(16, 16));
    QCOMPARE(differentFromFirst(grid), 0);  // no augmentation: resize and center crop every time
    SourceOptions* o = panel.sourceOptions();
    o->augmentCombo()->setCurrentIndex(o->augmentCombo()->findData("flip"));
    emit o->augmentCombo()->activated(o->augmentCombo()->currentIndex());
    QCOMPARE(grid.count(), AugmentPreview::kDraws);
    const int flips = differentFromFirst(grid);
    QVERIFY2(flips > 0 && flips < AugmentPreview::kDraws - 1, qPrintable(QString::number(flips)));  // some flipped, some not
    for (int i = 1; i < grid.count(); ++i)  // a flip or the image itself
      QVERIFY(grid.image(i) == grid.image(0) || grid.image(i) == grid.image(0).mirrored(true, false));
    o->augmentCombo()->setCurrentIndex(o->augmentCombo()->findData("standard"));
    emit o->augmentCombo()->activated(o->augmentCombo()->currentIndex());
    std::vector<QImage> first;
    for (int i = 0; i < grid.count(); ++i) first.push_back(grid.image(i));
    QVERIFY(differentFromFirst(grid) >= AugmentPreview::kDraws - 2);
    o->rotationSpin()->setValue(30);
    o->rotationSpin()->setValue(0);  // the same transforms again: the same seeded draws
    for (int i = 0; i < grid.count(); ++i) QVERIFY(grid.image(i) == first[size_t(i)]);
  }

  // The preview's image is chosen by a click on a sample of the panel's grid, or with its spin box.
  void previewImageIsChosen() {
    QTemporaryDir dir;
    const QString root = dir.filePath("pets");
    writeImageFolder(root, {"cat", "dog", "fox"}, 6);
    DatasetPanel panel;
    panel.resize(400, 900);
    panel.show();
    panel.setSettings(folder(root));
    QVERIFY(waitLoaded(panel));
    AugmentPreview* preview = const_cast<AugmentPreview*>(panel.augmentPreview());
    const data::Dataset& train = *panel.summary().image_train;
    // The preview's first picture is sample i's, resized and cropped (no augmentation).
    auto shows = [&](int64_t i) {
      const data::Thumbnail t = data::augmentation_preview(train, i, "none", 0, 1).at(0);
      const QImage& got = preview->grid()->image(0);
      if (got.width() != t.width || got.height() != t.height) return false;
      for (int64_t y = 0; y < t.height; ++y)
        if (std::memcmp(got.constScanLine(int(y)), t.pixels.data() + y * t.width * 3, size_t(t.width * 3)) != 0) return false;
      return true;
    };
    QCOMPARE(preview->sample(), int64_t(0));
    QCOMPARE(preview->sampleSpin()->value(), 1);
    QCOMPARE(preview->sampleSpin()->maximum(), int(train.size()));
    QVERIFY(shows(0));
    // A click on the grid's last sample (another class than the first).
    const SampleGrid* grid = panel.sampleGrid();
    const int k = grid->count() - 1;
    QVERIFY(k > 0);
    QPoint at(-1, -1);
    for (int y = 0; y < grid->height() && at.x() < 0; y += 4)
      for (int x = 0; x < grid->width() && at.x() < 0; x += 4)
        if (grid->indexAt({x, y}) == k) at = {x + 2, y + 2};
    QVERIFY(at.x() >= 0);
    QTest::mouseClick(const_cast<SampleGrid*>(grid), Qt::LeftButton, {}, at);
    const int64_t chosen = panel.summary().sample_indices.at(size_t(k));
    QVERIFY(chosen > 0);
    QCOMPARE(preview->sample(), chosen);
    QCOMPARE(preview->sampleSpin()->value(), int(chosen + 1));
    QCOMPARE(grid->selected(), k);
    QVERIFY(shows(chosen));
    QVERIFY(!shows(0));  // another picture than before
    // The spin box: image 5 of the split.
    preview->sampleSpin()->setValue(5);
    QCOMPARE(preview->sample(), int64_t(4));
    QVERIFY(shows(4));
    // Out of range values are clamped to the split.
    preview->setSample(100000);
    QCOMPARE(preview->sample(), train.size() - 1);
    QVERIFY(shows(train.size() - 1));
  }

  // With the project's index store, a panel reopening the folder reads only the files it shows
  // (its thumbnails), none to index; Rescan reads and checks every file again.
  void reopenUsesTheProjectsIndex() {
    QTemporaryDir dir;
    const QString root = dir.filePath("pets");
    writeImageFolder(root, {"cat", "dog"}, 40);
    const std::string project = dir.filePath("p.kiln").toStdString();
    kiln::projects::Project::create(project);
    auto store = std::make_shared<kiln::projects::ProjectIndexStore>(project);
    int64_t read = data::image_files_read();
    {
      DatasetPanel first;
      first.setIndexStore(store);
      first.setSettings(folder(root));
      QVERIFY(waitLoaded(first));
      QVERIFY(first.rescanButton()->isVisibleTo(&first));
      QVERIFY(data::image_files_read() - read >= 80);  // every file verified
    }
    read = data::image_files_read();
    DatasetPanel panel;
    panel.setIndexStore(std::make_shared<kiln::projects::ProjectIndexStore>(project));
    panel.setSettings(folder(root));
    QVERIFY(waitLoaded(panel));
    QVERIFY2(panel.statusLabel()->toolTip().contains("stored file index was used"), qPrintable(panel.statusLabel()->toolTip()));
    // The grid's thumbnails and the preview's image only.
    QVERIFY2(data::image_files_read() - read <= DatasetPanel::kSamples + 1,
             qPrintable(QString::number(data::image_files_read() - read)));
    QCOMPARE(panel.summary().total, int64_t(80));
    read = data::image_files_read();
    panel.rescanButton()->click();
    QVERIFY(waitLoaded(panel));
    QVERIFY(data::image_files_read() - read >= 80);
    QVERIFY(!panel.statusLabel()->toolTip().contains("stored file index was used"));
    // Texts and tables have no index to rescan.
    DatasetSettings csv;
    csv.name = "csv";
    csv.path = dir.filePath("none.csv").toStdString();
    panel.setSettings(csv);
    QVERIFY(!panel.rescanButton()->isVisibleTo(&panel));
  }

  // The preview's draws are the loader's: epoch d's batch of that sample, normalization undone.
  void previewIsTheLoadersDraws() {
    QTemporaryDir dir;
    const QString root = dir.filePath("pets");
    writeImageFolder(root, {"cat", "dog"}, 6);
    DatasetSettings s = folder(root);
    s.augment = "standard";
    s.rotation = 10;
    s.image_height = 12, s.image_width = 12;
    const data::OpenedDataset d = data::open_dataset(s.source(3));
    const data::Dataset& train = *d.images->train;
    const std::vector<data::Thumbnail> draws = data::augmentation_preview(train, 2, "standard", 10, 4);
    QCOMPARE(draws.size(), size_t(4));
    const auto& mean = d.images->run.mean;
    const auto& sd = d.images->run.stddev;
    QCOMPARE(mean.size(), size_t(3));
    for (int epoch = 0; epoch < 4; ++epoch) {
      const kiln::Tensor x = train.get_batch_for_epoch({2}, epoch).input.contiguous();
      QCOMPARE(x.shape(), (std::vector<int64_t>{1, 3, 12, 12}));
      const float* p = x.data_ptr<const float>();
      const data::Thumbnail& t = draws[size_t(epoch)];
      QCOMPARE(t.height, int64_t(12));
      for (int c = 0; c < 3; ++c)
        for (int i = 0; i < 144; ++i) {
          const double v = std::clamp(p[c * 144 + i] * sd[size_t(c)] + mean[size_t(c)], 0.0, 1.0) * 255;
          QVERIFY(std::abs(v - t.pixels[size_t(i * 3 + c)]) <= 0.51);
        }
    }
  }

  // kiln-studio --headless trains with the stored size and augmentation: the graph is fitted to
  // 8 x 8 inputs and the run records the settings.
  void headlessTrainsWithStoredOptions() {
    QTemporaryDir dir;
    const QString root = dir.filePath("shapes");
    writeImageFolder(root, {"circle", "square", "star"}, 6);
    const QString file = dir.filePath("p.kiln");
    DatasetSettings d = folder(root);
    d.image_height = d.image_width = 8;
    d.augment = "flip";
    d.rotation = 10;
    writeProject(file, "image_folder_cnn", d);
    int code = 0;
    const QString out = kiln::test::studio(
        {"--headless", "--project", file, "--dataset", "imagefolder:" + root, "--train", "--epochs", "1"}, &code);
    QVERIFY2(code == 0, qPrintable(out));
    QVERIFY2(out.contains("-> [3, 8, 8]"), qPrintable(out));
    auto p = kiln::projects::Project::open(file.toStdString());
    const auto runs = p.runs();
    QCOMPARE(runs.size(), size_t(1));
    QCOMPARE(runs[0].status, kiln::projects::RunStatus::finished);
    const auto config = nlohmann::json::parse(runs[0].config_json);
    QCOMPARE(config["dataset"]["image_height"].get<int64_t>(), int64_t(8));
    QCOMPARE(config["dataset"]["augment"].get<std::string>(), std::string("flip"));
  }
};

QTEST_MAIN(TestStudioAugment)
#include "test_studio_augment.moc"
