// Datasets: random access to (input, target) samples, fetched a batch at a time
// (torch.utils.data.Dataset / TensorDataset / Subset / random_split). A dataset
// hands out whole batches so that readers can build them with one bulk copy
// instead of one small tensor per sample.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/core/tensor.h"

namespace kiln::data {

// One batch: input [B, ...] and target [B, ...] (e.g. class indices i64 [B]). Sequence datasets
// (text_dataset.h) also hand a mask of the valid steps, f32 [B, T] with 1 for a token and 0 for
// padding; other datasets leave it undefined.
struct Batch {
  Tensor input;
  Tensor target;
  Tensor mask{};
};

// A dataset of size() samples. get_batch must be safe to call from several
// threads at once (DataLoader workers do).
class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  // The samples at `indices` (each in [0, size()), IndexError otherwise), stacked
  // along a new first dimension in the order given.
  virtual Batch get_batch(const std::vector<int64_t>& indices) const = 0;
  // The same for the pass of `epoch` (the DataLoader's): datasets with random augmentation
  // draw it from (seed, epoch, sample index), so that a run is reproducible whatever the worker
  // count and timing. The default ignores the epoch.
  virtual Batch get_batch_for_epoch(const std::vector<int64_t>& indices, int64_t epoch) const {
    (void)epoch;
    return get_batch(indices);
  }
};

// Samples are the rows of two tensors: inputs [N, ...] and targets [N, ...].
// ShapeError when the first dimensions differ or a tensor is 0-d.
class TensorDataset : public Dataset {
 public:
  TensorDataset(Tensor inputs, Tensor targets);
  int64_t size() const override;
  Batch get_batch(const std::vector<int64_t>& indices) const override;  // via index_select

 private:
  Tensor inputs_, targets_;
};

// The samples of `dataset` at `indices` (a view; nothing is copied). IndexError
// when an index is outside the dataset.
class Subset : public Dataset {
 public:
  Subset(std::shared_ptr<const Dataset> dataset, std::vector<int64_t> indices);
  int64_t size() const override { return static_cast<int64_t>(indices_.size()); }
  Batch get_batch(const std::vector<int64_t>& indices) const override;
  Batch get_batch_for_epoch(const std::vector<int64_t>& indices, int64_t epoch) const override;
  const std::vector<int64_t>& indices() const { return indices_; }
  const Dataset& dataset() const { return *dataset_; }  // the dataset the indices point into

 private:
  std::vector<int64_t> map(const std::vector<int64_t>& indices) const;
  std::shared_ptr<const Dataset> dataset_;
  std::vector<int64_t> indices_;
};

// Splits `dataset` into disjoint random subsets of the given lengths
// (torch.utils.data.random_split), e.g. {n_train, n_val}. The lengths must be
// non-negative and sum to dataset->size() (ValueError otherwise). The split
// depends only on the seed: the same seed gives the same subsets on every run.
std::vector<std::shared_ptr<Subset>> random_split(std::shared_ptr<const Dataset> dataset,
                                                  const std::vector<int64_t>& lengths, uint64_t seed);

// A permutation of 0..n-1 that depends only on (seed, stream), e.g. stream = epoch.
std::vector<int64_t> seeded_permutation(int64_t n, uint64_t seed, uint64_t stream = 0);

}  // namespace kiln::data
