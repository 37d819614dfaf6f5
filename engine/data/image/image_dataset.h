// Images as a Dataset: samples of an ImageIndex (image_index.h) decoded on the DataLoader's
// worker threads (each get_batch decodes its own samples), kept in an ImageCache after the first
// decode, transformed (image_transforms.h) with draws seeded by (seed, epoch, sample index), and
// stacked as f32 [B, channels, height, width] with i64 class targets [B]. Built only with KILN_OPENCV.
#pragma once
#include <memory>
#include <vector>

#include "engine/data/dataset.h"
#include "engine/data/image/image_cache.h"
#include "engine/data/image/image_index.h"
#include "engine/data/image/image_transforms.h"

namespace kiln::data {

class ImageDataset : public Dataset {
 public:
  // The samples of `index` at `positions` (all of them when empty is not what you want: pass
  // them). `cache` (may be null) is keyed by position in `index`, so datasets over one index may
  // share it. train: the transform's random augmentation is on; seed: of its draws.
  // IndexError for a position outside the index.
  ImageDataset(std::shared_ptr<const ImageIndex> index, std::vector<int64_t> positions, ImageTransform transform,
               bool train, uint64_t seed, std::shared_ptr<ImageCache> cache);

  int64_t size() const override { return static_cast<int64_t>(positions_.size()); }
  Batch get_batch(const std::vector<int64_t>& indices) const override { return get_batch_for_epoch(indices, 0); }
  // IndexError for a bad index; IoError naming the file when one no longer decodes.
  Batch get_batch_for_epoch(const std::vector<int64_t>& indices, int64_t epoch) const override;

  // The decoded image of sample i (through the cache), converted to the transform's channels.
  cv::Mat image(int64_t i) const;
  const ImageIndex& index() const { return *index_; }
  const std::vector<int64_t>& positions() const { return positions_; }
  const ImageTransform& transform() const { return transform_; }
  uint64_t seed() const { return seed_; }  // of the augmentation draws
  bool train() const { return train_; }

 private:
  std::shared_ptr<const ImageIndex> index_;
  std::vector<int64_t> positions_;
  ImageTransform transform_;
  bool train_;
  uint64_t seed_;
  std::shared_ptr<ImageCache> cache_;
  int64_t short_side_;
};

// Per-channel mean and population std of the pixels (scaled to [0, 1]) of `dataset`'s images as
// cached (before cropping): Normalize "computed from the training split". One value per channel.
std::pair<std::vector<double>, std::vector<double>> channel_stats(const ImageDataset& dataset);

}  // namespace kiln::data
