// The datasets the CLI knows by name (`--dataset`), and where they live.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "engine/data/dataset.h"

namespace kiln::cli {

// {"fashion-mnist"}.
const std::vector<std::string>& dataset_names();
// Where the Debian package puts it ("/usr/share/datasets/fashion-mnist").
std::string default_data_dir(const std::string& dataset);
// The training (train = true) or test split, loaded from dir. The engine's IoError
// when the files are missing names the Debian package to install.
std::shared_ptr<const data::Dataset> open_dataset(const std::string& dataset, const std::string& dir, bool train);
// Names of the dataset's classes, by label ("T-shirt/top", ...).
std::vector<std::string> class_names(const std::string& dataset);

// The first `count` samples of `dataset` in a seeded random order (all of them when
// count >= size): a quick subset for smoke tests (`--limit-batches`).
std::shared_ptr<const data::Dataset> random_subset(std::shared_ptr<const data::Dataset> dataset, int64_t count,
                                                   uint64_t seed);

}  // namespace kiln::cli
