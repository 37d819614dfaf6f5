// The data of `kiln train`: the dataset opened with its three splits and the loaders over them.
// A user's dataset (csv:, imagefolder:, images:, text:) opens through engine/data/dataset_source.h's
// open_dataset as in Kiln Studio, splits included (its split_validation: --val-fraction of the
// training split); Fashion-MNIST opens from --data-dir with --classes / --train-subset and the same
// split_validation.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "app/cli/image_data.h"
#include "app/cli/table_data.h"
#include "app/cli/text_run.h"
#include "app/cli/train_config.h"
#include "engine/data/dataloader.h"
#include "engine/data/dataset.h"

namespace kiln::cli {

struct TrainData {
  std::optional<data::TabularData> table;  // csv:FILE
  std::optional<ImageData> images;         // imagefolder:DIR, images:FILE.csv
  std::optional<TextData> text;            // text:DIR|FILE
  // The splits; validation null when there is none (no --val-fraction and no val/ folder).
  std::shared_ptr<const data::Dataset> train, validation, test;
  std::vector<int64_t> classes;  // Fashion-MNIST: the classes kept (--classes; all of them without)
};

// Opens c.dataset with c's reading settings. The loaders' errors unchanged (IoError naming the
// file, line and column for bad data; ValueError for one class, ...).
TrainData open_train_data(const TrainConfig& c);

struct Loaders {
  std::unique_ptr<data::DataLoader> train, validation, test;
};

// Loaders over the splits, each cut to c.limit_batches batches when that is set; the training one
// shuffled by c.seed. Images are decoded and augmented on c.images.workers loader threads.
// Data parallel (world_size > 1): the training loader gives rank `rank` its share of each epoch
// (Note [Distributed sampling]), c.limit_batches batches of it when set; the validation and test
// loaders stay whole (Note [Rank 0 speaks] in train_distributed.h).
Loaders make_loaders(const TrainConfig& c, const TrainData& d, int rank = 0, int world_size = 1);

}  // namespace kiln::cli
