#include "widgets/project/dataset_summary.h"

#include <QLocale>
#include <QObject>
#include <algorithm>
#include <cstring>

#include "engine/data/dataset_source.h"
#include "engine/data/fashion_mnist.h"
#include "widgets/project/sample_grid.h"

namespace kiln::studio {

namespace {
constexpr int kNumClasses = 10;
QString thousands(int64_t n) { return QLocale(QLocale::English).toString(static_cast<qlonglong>(n)); }
}  // namespace

DatasetSummary summarize_fashion_mnist(const QString& dir, int samples) {
  DatasetSummary s;
  try {
    for (bool train : {true, false}) {
      data::FashionMNIST ds(train, dir.toStdString());
      const int64_t n = ds.size();
      const int64_t* labels = ds.labels().data_ptr<const int64_t>();
      auto& counts = train ? s.train_counts : s.test_counts;
      for (int64_t i = 0; i < n; ++i)
        if (labels[i] >= 0 && labels[i] < kNumClasses) ++counts[static_cast<size_t>(labels[i])];
      (train ? s.train_images : s.test_images) = n;
      if (!train || n == 0) continue;
      const int64_t h = ds.images().size(1), w = ds.images().size(2);
      const uint8_t* pixels = ds.images().data_ptr<const uint8_t>();
      for (int k = 0; k < samples && k < n; ++k) {
        const int64_t i = static_cast<int64_t>(k) * n / samples;  // evenly spaced over the split
        QImage img(static_cast<int>(w), static_cast<int>(h), QImage::Format_Grayscale8);
        for (int64_t y = 0; y < h; ++y) std::memcpy(img.scanLine(static_cast<int>(y)), pixels + (i * h + y) * w, size_t(w));
        s.samples.push_back(std::move(img));
        s.sample_labels.push_back(static_cast<int>(labels[i]));
      }
    }
  } catch (const std::exception& e) {
    s = DatasetSummary{};
    s.error = QString::fromUtf8(e.what());
  }
  return s;
}

DatasetSummary summarize_source(const DatasetSettings& settings, int samples, std::shared_ptr<data::IndexStore> store,
                                bool rescan) {
  DatasetSummary s;
  try {
    data::DatasetSource source = settings.source(0);  // the summary's split: seed 0
    source.cache_mb = 256;
    source.index_store = std::move(store);
    source.rescan = rescan;
    const data::OpenedDataset d = data::open_dataset(source);
    s.kind = QString::fromStdString(d.kind);
    for (const std::string& c : d.classes) s.class_names << QString::fromStdString(c);
    s.class_counts = d.class_counts;
    s.sample_shape = d.sample_shape;
    for (const std::string& f : d.skipped) s.skipped << QString::fromStdString(f);
    for (const std::string& n : d.notes) s.notes << QString::fromStdString(n);
    const int64_t val = d.validation ? d.validation->size() : 0;
    s.total = d.train->size() + val + d.test->size();
    s.train_images = d.train->size();
    s.test_images = d.test->size();
    const QString split = QObject::tr("%1 for training, %2 for validation, %3 for testing")
                              .arg(thousands(d.train->size()), thousands(val), thousands(d.test->size()));
    if (d.text) {
      s.text = summarize_text(*d.text, samples);
      s.vocab_size = d.text->tokenizer->vocab_size();
      s.details = QObject::tr("%1 texts of %2 classes%3 (%4 duplicates dropped), %5 tokens each (longer texts "
                              "truncated, shorter padded); %6.")
                      .arg(thousands(s.total))
                      .arg(d.classes.size())
                      .arg(s.skipped.isEmpty() ? QString() : QObject::tr(", %n file(s) or row(s) skipped", nullptr, int(s.skipped.size())))
                      .arg(d.text->index->duplicates_dropped)
                      .arg(d.text->max_length)
                      .arg(split);
    } else if (d.table) {
      for (const data::ColumnInfo& c : d.table->schema.columns) s.columns << QString::fromStdString(c.name);
      s.label = QString::fromStdString(d.table->schema.label);
      s.columns.insert(static_cast<qsizetype>(std::min<int64_t>(d.table->schema.label_index, s.columns.size())), s.label);
      s.regression = d.regression;
      s.details = d.regression ? QObject::tr("%1 rows (%2 dropped), %3 features, regression of the number in column "
                                             "'%4' (one output); %5.")
                                     .arg(thousands(d.table->rows), thousands(d.table->rows_dropped))
                                     .arg(d.sample_shape[0])
                                     .arg(s.label, split)
                               : QObject::tr("%1 rows (%2 dropped), %3 features, %4 classes in column '%5'; %6.")
                                     .arg(thousands(d.table->rows), thousands(d.table->rows_dropped))
                                     .arg(d.sample_shape[0])
                                     .arg(d.classes.size())
                                     .arg(s.label, split);
    } else {
      s.details = QObject::tr("%1 images of %2 classes, %3 channel(s), %4 × %5 (the model's input size; others are resized)%6; %7.")
                      .arg(thousands(s.total))
                      .arg(d.classes.size())
                      .arg(d.sample_shape[0])
                      .arg(d.sample_shape[1])
                      .arg(d.sample_shape[2])
                      .arg(s.skipped.isEmpty() ? QString() : QObject::tr(", %n file(s) skipped", nullptr, int(s.skipped.size())))
                      .arg(split);
      const data::Dataset& train = *d.images->train;  // the ImageDataset before validation was split off
      s.image_train = d.images->train;
      const int64_t n = train.size();
      for (int k = 0; k < samples && k < n; ++k) {
        const int64_t i = static_cast<int64_t>(k) * n / samples;  // evenly spaced over the split
        const data::Thumbnail t = data::image_thumbnail(train, i, 28 * SampleGrid::kScale);
        if (t.pixels.empty()) continue;
        QImage img(int(t.width), int(t.height), t.channels == 3 ? QImage::Format_RGB888 : QImage::Format_Grayscale8);
        for (int64_t y = 0; y < t.height; ++y)
          std::memcpy(img.scanLine(int(y)), t.pixels.data() + y * t.width * t.channels, size_t(t.width * t.channels));
        s.samples.push_back(std::move(img));
        s.sample_labels.push_back(int(train.get_batch({i}).target.contiguous().data_ptr<const int64_t>()[0]));
        s.sample_indices.push_back(i);
      }
    }
  } catch (const std::exception& e) {
    s = DatasetSummary{};
    s.kind = QString::fromStdString(settings.name);
    s.error = QString::fromUtf8(e.what());
  }
  return s;
}

}  // namespace kiln::studio
