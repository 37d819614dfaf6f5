#include "engine/data/dataset.h"

#include <numeric>
#include <random>

#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/core/splitmix.h"

namespace kiln::data {

std::vector<int64_t> seeded_permutation(int64_t n, uint64_t seed, uint64_t stream) {
  KILN_CHECK(n >= 0, ValueError, "seeded_permutation: n must be non-negative, got ", n);
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  std::mt19937_64 e(mix64(seed ^ mix64(stream)));
  for (size_t i = v.size(); i > 1; --i) {  // Fisher-Yates with our own draw: same on every libstdc++
    size_t j = static_cast<size_t>(e() % i);
    std::swap(v[i - 1], v[j]);
  }
  return v;
}

TensorDataset::TensorDataset(Tensor inputs, Tensor targets)
    : inputs_(std::move(inputs)), targets_(std::move(targets)) {
  KILN_CHECK(inputs_.defined() && targets_.defined(), ValueError, "TensorDataset: undefined tensor");
  KILN_CHECK(inputs_.dim() > 0 && targets_.dim() > 0, ShapeError,
             "TensorDataset: inputs and targets need a sample dimension, got ", shape_str(inputs_.shape()), " and ",
             shape_str(targets_.shape()));
  KILN_CHECK(inputs_.size(0) == targets_.size(0), ShapeError, "TensorDataset: inputs ", shape_str(inputs_.shape()),
             " and targets ", shape_str(targets_.shape()), " differ in their first dimension");
}

int64_t TensorDataset::size() const { return inputs_.size(0); }

Batch TensorDataset::get_batch(const std::vector<int64_t>& indices) const {
  for (int64_t i : indices)
    KILN_CHECK(i >= 0 && i < size(), IndexError, "TensorDataset: index ", i, " is out of range [0, ", size(), ")");
  Tensor idx = Tensor::from_vector(indices, {static_cast<int64_t>(indices.size())}, inputs_.device());
  Tensor tidx = targets_.device() == inputs_.device() ? idx : idx.to(targets_.device());
  return {index_select(inputs_, 0, idx), index_select(targets_, 0, tidx)};
}

Subset::Subset(std::shared_ptr<const Dataset> dataset, std::vector<int64_t> indices)
    : dataset_(std::move(dataset)), indices_(std::move(indices)) {
  KILN_CHECK(dataset_ != nullptr, ValueError, "Subset: null dataset");
  int64_t n = dataset_->size();
  for (int64_t i : indices_)
    KILN_CHECK(i >= 0 && i < n, IndexError, "Subset: index ", i, " is out of range [0, ", n, ")");
}

Batch Subset::get_batch(const std::vector<int64_t>& indices) const { return dataset_->get_batch(map(indices)); }

Batch Subset::get_batch_for_epoch(const std::vector<int64_t>& indices, int64_t epoch) const {
  return dataset_->get_batch_for_epoch(map(indices), epoch);
}

std::vector<int64_t> Subset::map(const std::vector<int64_t>& indices) const {
  std::vector<int64_t> mapped(indices.size());
  for (size_t k = 0; k < indices.size(); ++k) {
    int64_t i = indices[k];
    KILN_CHECK(i >= 0 && i < size(), IndexError, "Subset: index ", i, " is out of range [0, ", size(), ")");
    mapped[k] = indices_[static_cast<size_t>(i)];
  }
  return mapped;
}

std::vector<std::shared_ptr<Subset>> random_split(std::shared_ptr<const Dataset> dataset,
                                                  const std::vector<int64_t>& lengths, uint64_t seed) {
  KILN_CHECK(dataset != nullptr, ValueError, "random_split: null dataset");
  int64_t total = 0;
  for (int64_t n : lengths) {
    KILN_CHECK(n >= 0, ValueError, "random_split: lengths must be non-negative, got ", n);
    total += n;
  }
  KILN_CHECK(total == dataset->size(), ValueError, "random_split: lengths sum to ", total,
             " but the dataset has ", dataset->size(), " samples");
  std::vector<int64_t> perm = seeded_permutation(total, seed);
  std::vector<std::shared_ptr<Subset>> out;
  auto it = perm.begin();
  for (int64_t n : lengths) {
    out.push_back(std::make_shared<Subset>(dataset, std::vector<int64_t>(it, it + n)));
    it += n;
  }
  return out;
}

}  // namespace kiln::data
