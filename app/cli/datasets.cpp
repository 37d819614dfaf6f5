#include "app/cli/datasets.h"

#include "engine/core/error.h"
#include "engine/data/fashion_mnist.h"

namespace kiln::cli {

const std::vector<std::string>& dataset_names() {
  static const std::vector<std::string> names = {"fashion-mnist"};
  return names;
}

std::string default_data_dir(const std::string& dataset) {
  KILN_CHECK(dataset == "fashion-mnist", ValueError, "unknown dataset '", dataset, "'; known: fashion-mnist");
  return data::FashionMNIST::kDefaultDir;
}

std::shared_ptr<const data::Dataset> open_dataset(const std::string& dataset, const std::string& dir, bool train) {
  KILN_CHECK(dataset == "fashion-mnist", ValueError, "unknown dataset '", dataset, "'; known: fashion-mnist");
  return std::make_shared<data::FashionMNIST>(train, dir);
}

std::vector<std::string> class_names(const std::string& dataset) {
  KILN_CHECK(dataset == "fashion-mnist", ValueError, "unknown dataset '", dataset, "'; known: fashion-mnist");
  return {data::FashionMNIST::kClassNames.begin(), data::FashionMNIST::kClassNames.end()};
}

std::shared_ptr<const data::Dataset> random_subset(std::shared_ptr<const data::Dataset> dataset, int64_t count,
                                                   uint64_t seed) {
  if (count >= dataset->size()) return dataset;
  std::vector<int64_t> order = data::seeded_permutation(dataset->size(), seed, /*stream=*/0x5eed);
  order.resize(static_cast<size_t>(count));
  return std::make_shared<data::Subset>(std::move(dataset), std::move(order));
}

}  // namespace kiln::cli
