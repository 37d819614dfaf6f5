#include "app/cli/train_data.h"

#include <algorithm>

#include "app/cli/datasets.h"
#include "app/cli/train_transfer.h"
#include "engine/data/dataset_source.h"

namespace kiln::cli {

TrainData open_train_data(const TrainConfig& c) {
  TrainData d;
  if (!is_csv_dataset(c.dataset) && !is_image_dataset(c.dataset) && !is_text_dataset(c.dataset)) {
    d.train = open_dataset(c.dataset, c.data_dir, /*train=*/true);
    d.test = open_dataset(c.dataset, c.data_dir, /*train=*/false);
    d.classes = filter_splits(c, static_cast<int64_t>(class_names(c.dataset).size()), d.train, d.test);
    data::TrainValidation tv = data::split_validation(d.train, c.val_fraction, d.train->size(), c.seed);
    d.train = tv.train;
    d.validation = tv.validation;
    return d;
  }
  data::DatasetSource s;
  s.spec = c.dataset;
  s.seed = c.seed;
  s.validation_fraction = c.val_fraction;
  s.validation_of_train = true;
  if (is_image_dataset(c.dataset)) s.image = c.images;
  if (is_csv_dataset(c.dataset)) s.table = c.table;
  if (is_text_dataset(c.dataset)) {
    s.test_fraction = c.text.test_fraction;
    s.text_read = c.text.read;
    s.tokenizer = c.text.tokenizer;
    s.max_length = c.text.max_length;
  }
  data::OpenedDataset opened = data::open_dataset(s);
  d.train = opened.train;
  d.validation = opened.validation;
  d.test = opened.test;
  d.table = std::move(opened.table);
  d.images = std::move(opened.images);
  if (opened.text) d.text = text_data(c.text, *opened.text);
  return d;
}

Loaders make_loaders(const TrainConfig& c, const TrainData& d, int rank, int world_size) {
  std::shared_ptr<const data::Dataset> train_set = d.train, test_set = d.test, val_set = d.validation;
  const int workers = d.images ? std::max(1, c.images.workers) : 1;
  if (c.limit_batches > 0) {
    const int64_t cap = c.limit_batches * c.batch_size;
    train_set = random_subset(train_set, cap * world_size, c.seed);  // the same subset on every rank
    test_set = random_subset(test_set, cap, c.seed);
    if (val_set) val_set = random_subset(val_set, cap, c.seed);
  }
  using Options = data::DataLoader::Options;
  Loaders l;
  const int prefetch = std::max(2, 2 * workers);
  l.train = std::make_unique<data::DataLoader>(train_set, Options{.batch_size = c.batch_size, .shuffle = true,
                                                                  .seed = c.seed, .num_workers = workers,
                                                                  .prefetch = prefetch, .rank = rank,
                                                                  .world_size = world_size});
  if (val_set)
    l.validation = std::make_unique<data::DataLoader>(
        val_set, Options{.batch_size = c.batch_size, .num_workers = workers, .prefetch = prefetch});
  l.test = std::make_unique<data::DataLoader>(
      test_set, Options{.batch_size = c.batch_size, .num_workers = workers, .prefetch = prefetch});
  return l;
}

}  // namespace kiln::cli
