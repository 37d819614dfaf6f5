// DatasetSummary: what the Dataset panel shows of a data set (Fashion-MNIST or another source of
// engine/data/dataset_source.h), computed off the UI thread by summarize_fashion_mnist or
// summarize_source.
#pragma once
#include <QImage>
#include <QString>
#include <QStringList>
#include <array>
#include <memory>
#include <vector>

#include "engine/data/index_store.h"
#include "widgets/project/dataset_settings.h"
#include "widgets/project/text_preview.h"

namespace kiln::studio {

// What the panel shows of a data set, computed off the UI thread.
struct DatasetSummary {
  QString error;                       // non-empty: the data set could not be read
  std::vector<QImage> samples;         // Format_Grayscale8, 28 x 28, from the training split
  std::vector<int> sample_labels;      // class index of each sample
  std::vector<int64_t> sample_indices;  // images: each sample's index in image_train
  std::array<int64_t, 10> train_counts{}, test_counts{};  // images per class
  int64_t train_images = 0, test_images = 0;
  // Another source (an image folder or manifest, a CSV table; engine/data/dataset_source.h):
  QString kind;                        // "imagefolder", "images", "csv"; "" for Fashion-MNIST
  QStringList class_names;             // by label
  std::vector<int64_t> class_counts;   // samples per class (all splits)
  std::vector<int64_t> sample_shape;   // per sample: [C, H, W] or [features]
  QStringList skipped;                 // "PATH: REASON" of every file left out
  QStringList notes;                   // OpenedDataset::notes: the image index store's, the CSV reader's
  QStringList columns;                 // csv: the header's columns (the label's choices)
  QString label;                       // csv: the label column read
  bool regression = false;             // csv: the label is a number predicted (no classes)
  QString details;                     // one line: splits, image size and channels / rows and features
  int64_t total = 0;                   // samples in all splits
  // text: the tokenizer fitted on the training split, samples of it with their tokens, and the
  // token counts of all samples before truncation (text_preview.h).
  TextSummary text;
  int64_t vocab_size = 0;              // text: the fitted vocabulary's size (the Embedding's rows)
  // images: the training split as loaded (before validation was split off; its decoded images
  // cached), what the augmentation preview draws from; null for other sources.
  std::shared_ptr<const data::Dataset> image_train;
};
// Reads both splits from dir (kiln::data::FashionMNIST) and takes `samples` training
// images, evenly spaced. Never throws: errors go into DatasetSummary::error.
DatasetSummary summarize_fashion_mnist(const QString& dir, int samples);
// Opens another source (settings.spec(), its CSV and split settings) with engine/data's
// open_dataset and takes `samples` training thumbnails (images only; at most 56 px); an image
// folder's file index comes from `store` when unchanged (and is saved to it when read), unless
// `rescan` (engine/data/image_source.h load_images). Never throws: the engine's message (naming
// the file, line and column) goes into error verbatim.
DatasetSummary summarize_source(const DatasetSettings& settings, int samples,
                                std::shared_ptr<data::IndexStore> store = nullptr, bool rescan = false);

}  // namespace kiln::studio
