// Issue 14: an image folder's verified file index kept in the project (schema 10, table
// file_indexes; projects/index_store.h, engine/data/image/image_index_store.h). Reopening an
// unchanged folder reads no image file (the decoder's count stays put); a file or class folder
// added or removed is picked up; a damaged stored index is ignored with a note and replaced; a
// file rewritten in place is missed until a rescan (Note [What the folder check misses]); the
// schema-9 project made by the Kiln before it (tests/fixtures/project_schema9.kiln) migrates.
#include <QDir>
#include <QFile>
#include <QImage>
#include <QTemporaryDir>
#include <QtTest>

#include "engine/data/dataset_source.h"
#include "engine/data/image/image_index_store.h"
#include "projects/index_store.h"
#include "projects/project.h"
#include "projects/schema.h"
#include "tests/gui/test_files.h"

using kiln::studio::test::writeFile;
using kiln::studio::test::writeImageFolder;

namespace {

// The folder opened as the Studio opens it, through the project's store.
kiln::data::OpenedDataset openWith(const QString& folder, const std::string& project, bool rescan = false) {
  kiln::data::DatasetSource s;
  s.spec = "imagefolder:" + folder.toStdString();
  s.index_store = std::make_shared<kiln::projects::ProjectIndexStore>(project);
  s.rescan = rescan;
  return kiln::data::open_dataset(s);
}

int64_t total(const kiln::data::OpenedDataset& d) {
  return d.train->size() + d.test->size() + (d.validation ? d.validation->size() : 0);
}

QString notes(const kiln::data::OpenedDataset& d) {
  QStringList l;
  for (const std::string& n : d.notes) l << QString::fromStdString(n);
  return l.join(" | ");
}

}  // namespace

class TestIndexStore : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString folder_;
  std::string project_;

 private slots:
  void init() {
    static int n = 0;
    folder_ = dir_.filePath(QString("shapes%1").arg(++n));
    writeImageFolder(folder_, {"circle", "square", "star"}, 6);
    writeFile(folder_ + "/square/broken.png", QByteArray("\x89PNG\r\n\x1a\n not really a png", 26));
    writeFile(folder_ + "/star/notes.txt", "not an image");
    project_ = dir_.filePath(QString("p%1.kiln").arg(n)).toStdString();
    kiln::projects::Project::create(project_);
  }

  void reopeningAnUnchangedFolderReadsNoFile() {
    const int64_t before = kiln::data::image_files_read();
    const auto first = openWith(folder_, project_);
    QCOMPARE(first.images->index_reused, 0);
    QVERIFY(kiln::data::image_files_read() - before >= 19);  // every file verified once
    const int64_t mid = kiln::data::image_files_read();
    const auto again = openWith(folder_, project_);
    QCOMPARE(kiln::data::image_files_read() - mid, int64_t(0));
    QCOMPARE(again.images->index_reused, 1);
    QVERIFY2(notes(again).contains("stored file index was used"), qPrintable(notes(again)));
    // The same dataset: classes, counts, skipped files with their reasons, size, fingerprint.
    QCOMPARE(again.classes, first.classes);
    QCOMPARE(again.class_counts, first.class_counts);
    QCOMPARE(again.skipped, first.skipped);
    QCOMPARE(again.skipped.size(), size_t(2));  // the corrupt PNG and the text file
    QCOMPARE(again.sample_shape, first.sample_shape);
    QCOMPARE(again.images->run.fingerprint, first.images->run.fingerprint);
    QCOMPARE(again.images->summary["image_sizes"], first.images->summary["image_sizes"]);
    QCOMPARE(total(again), int64_t(18));
    // The samples decode as before (the loader reads them on demand).
    const auto a = first.test->get_batch({0, 1}).input.contiguous().to_vector<float>();
    const auto b = again.test->get_batch({0, 1}).input.contiguous().to_vector<float>();
    QCOMPARE(a, b);
  }

  // Grey images are normalized with the mean and std computed from the training split: those are
  // kept too, per split, so a reopened grey folder is not decoded either.
  void aGreyFolderReopensWithoutDecoding() {
    const QString grey = dir_.filePath("grey");
    for (int c = 0; c < 2; ++c) {
      QVERIFY(QDir().mkpath(grey + QString("/%1").arg(c)));
      for (int i = 0; i < 10; ++i) {
        QImage img(8, 8, QImage::Format_Grayscale8);
        img.fill(QColor::fromRgb(20 * i + 100 * c, 20 * i + 100 * c, 20 * i + 100 * c));
        QVERIFY(img.save(grey + QString("/%1/%2.png").arg(c).arg(i)));
      }
    }
    const auto first = openWith(grey, project_);
    QCOMPARE(first.sample_shape[0], int64_t(1));
    const int64_t before = kiln::data::image_files_read();
    const auto again = openWith(grey, project_);
    QCOMPARE(kiln::data::image_files_read(), before);
    QCOMPARE(again.images->run.mean, first.images->run.mean);
    QCOMPARE(again.images->run.stddev, first.images->run.stddev);
    // Another split (seed): the stats of its training images are computed and kept.
    kiln::data::DatasetSource s;
    s.spec = "imagefolder:" + grey.toStdString();
    s.seed = 5;
    s.index_store = std::make_shared<kiln::projects::ProjectIndexStore>(project_);
    const auto other = kiln::data::open_dataset(s);
    QVERIFY(kiln::data::image_files_read() > before);
    const auto plain = [&] {  // the same split without a store
      kiln::data::DatasetSource t = s;
      t.index_store = nullptr;
      return kiln::data::open_dataset(t);
    }();
    QCOMPARE(other.images->run.mean, plain.images->run.mean);
    const int64_t mid = kiln::data::image_files_read();
    QCOMPARE(kiln::data::open_dataset(s).images->run.stddev, plain.images->run.stddev);
    QCOMPARE(kiln::data::image_files_read(), mid);
  }

  void addedAndRemovedFilesAndClassesArePickedUp() {
    openWith(folder_, project_);
    QVERIFY(QFile::copy(folder_ + "/circle/0.png", folder_ + "/circle/extra.png"));
    auto d = openWith(folder_, project_);
    QCOMPARE(d.images->index_reused, 0);
    QVERIFY2(notes(d).contains("folder 'circle' changed"), qPrintable(notes(d)));
    QCOMPARE(total(d), int64_t(19));
    QVERIFY(QFile::remove(folder_ + "/square/0.png") && QFile::remove(folder_ + "/square/1.png"));
    d = openWith(folder_, project_);
    QCOMPARE(total(d), int64_t(17));
    writeImageFolder(folder_, {"moon"}, 5);
    d = openWith(folder_, project_);
    QVERIFY2(notes(d).contains("the folder itself changed (3 -> 4 entries)"), qPrintable(notes(d)));
    QCOMPARE(d.classes, std::vector<std::string>({"circle", "moon", "square", "star"}));
    QVERIFY(QDir(folder_ + "/star").removeRecursively());
    d = openWith(folder_, project_);
    QCOMPARE(d.classes, std::vector<std::string>({"circle", "moon", "square"}));
    QCOMPARE(total(d), int64_t(6 + 1 + 5 + 4));
    const int64_t before = kiln::data::image_files_read();
    QCOMPARE(openWith(folder_, project_).images->index_reused, 1);  // stored anew each time
    QCOMPARE(kiln::data::image_files_read(), before);
  }

  void aDamagedStoredIndexIsIgnoredWithANote() {
    const auto first = openWith(folder_, project_);
    for (const char* damage : {"'not json at all'", "'{\"format\": 1}'", "'{\"format\": 7}'",
                               "replace(data, '[\"circle/0.png\",0,', '[\"circle/0.png\",9,')"}) {
      {
        kiln::projects::Project p = kiln::projects::Project::open(project_);
        p.database().exec(std::string("UPDATE file_indexes SET data = ") + damage);
        QCOMPARE(p.database().changes(), 1);
      }
      const int64_t before = kiln::data::image_files_read();
      const auto d = openWith(folder_, project_);
      QVERIFY2(notes(d).contains("is damaged") && notes(d).contains("scanned again"), qPrintable(notes(d)));
      QVERIFY(kiln::data::image_files_read() - before >= 18);
      QCOMPARE(d.class_counts, first.class_counts);
      QCOMPARE(d.skipped, first.skipped);
      QCOMPARE(openWith(folder_, project_).images->index_reused, 1);  // replaced by the rescan
    }
  }

  void aFileRewrittenInPlaceWaitsForARescan() {
    openWith(folder_, project_);
    // Same name, same folder: the folder check does not see it (Note [What the folder check misses]).
    QFile f(folder_ + "/circle/3.png");
    QVERIFY(f.open(QIODevice::ReadWrite));
    QVERIFY(f.write(QByteArray(int(f.size()), 'x')) > 0);
    f.close();
    QCOMPARE(openWith(folder_, project_).skipped.size(), size_t(2));
    const auto d = openWith(folder_, project_, /*rescan=*/true);
    QCOMPARE(d.images->index_reused, 0);
    QCOMPARE(d.skipped.size(), size_t(3));
    QCOMPARE(openWith(folder_, project_).skipped.size(), size_t(3));  // the rescan is stored
  }

  void aStoreThatFailsIsNeverAnError() {
    // Not a project: the store fails, the folder is read as without one and the note says why.
    const QString bogus = dir_.filePath("bogus.kiln");
    writeFile(bogus, "plain text");
    const auto d = openWith(folder_, bogus.toStdString());
    QCOMPARE(total(d), int64_t(18));
    QVERIFY2(notes(d).contains("could not be stored"), qPrintable(notes(d)));
  }

  // The project file made by the Kiln before schema 10 opens migrated: its run keeps no
  // preprocessing (Predict opens its dataset again), and indexes are stored in it.
  void schema9ProjectMigrates() {
    const QString path = dir_.filePath("old9.kiln");
    QVERIFY(QFile::copy(KILN_SOURCE_DIR "/tests/fixtures/project_schema9.kiln", path));
    QFile::setPermissions(path, QFile::ReadOwner | QFile::WriteOwner);
    QCOMPARE(kiln::projects::check_project_file(path.toStdString(), kiln::projects::kCurrentSchema), 9);
    {
      // A store on the unmigrated file fails (no table): noted, never an error.
      const auto d = openWith(folder_, path.toStdString());
      QVERIFY2(notes(d).contains("schema 9 keeps no file indexes"), qPrintable(notes(d)));
      QCOMPARE(kiln::projects::check_project_file(path.toStdString(), kiln::projects::kCurrentSchema), 9);
    }
    auto p = kiln::projects::Project::open(path.toStdString());
    QCOMPARE(p.database().pragma_int("user_version"), int64_t(kiln::projects::kCurrentSchema));
    const auto runs = p.runs();
    QCOMPARE(runs.size(), size_t(1));
    QCOMPARE(runs[0].status, kiln::projects::RunStatus::finished);
    QCOMPARE(p.checkpoint_epochs(runs[0].id), std::vector<int>({1}));
    QCOMPARE(p.run_preprocessing(runs[0].id), std::string());
    QVERIFY_THROWS_EXCEPTION(kiln::projects::ProjectError, p.set_run_preprocessing(runs[0].id, "[1, 2]"));
    QVERIFY_THROWS_EXCEPTION(kiln::projects::ProjectError, p.set_run_preprocessing(runs[0].id, R"({"text": {}})"));
    QVERIFY_THROWS_EXCEPTION(kiln::projects::ProjectError, p.set_run_preprocessing(99, R"({"images": {}})"));
    p.set_run_preprocessing(runs[0].id, R"({"images": {"channels": 3}})");
    QCOMPARE(p.run_preprocessing(runs[0].id), std::string(R"({"images": {"channels": 3}})"));
    openWith(folder_, path.toStdString());
    QCOMPARE(openWith(folder_, path.toStdString()).images->index_reused, 1);
  }
};

QTEST_MAIN(TestIndexStore)
#include "test_index_store.moc"
