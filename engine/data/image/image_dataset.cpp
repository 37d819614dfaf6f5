#include "engine/data/image/image_dataset.h"

#include <cmath>

#include "engine/core/error.h"
#include "engine/data/image/image_decode.h"

namespace kiln::data {

ImageDataset::ImageDataset(std::shared_ptr<const ImageIndex> index, std::vector<int64_t> positions,
                           ImageTransform transform, bool train, uint64_t seed, std::shared_ptr<ImageCache> cache)
    : index_(std::move(index)), positions_(std::move(positions)), transform_(std::move(transform)), train_(train),
      seed_(seed), cache_(std::move(cache)),
      short_side_(cache_short_side(transform_.height, transform_.width)) {
  KILN_CHECK(index_ != nullptr, ValueError, "ImageDataset: null index");
  const int64_t n = static_cast<int64_t>(index_->samples.size());
  for (int64_t p : positions_)
    KILN_CHECK(p >= 0 && p < n, IndexError, "ImageDataset: position ", p, " is out of range [0, ", n, ")");
  KILN_CHECK(transform_.channels == 1 || transform_.channels == 3, ValueError, "ImageDataset: 1 or 3 channels, not ",
             transform_.channels);
}

cv::Mat ImageDataset::image(int64_t i) const {
  KILN_CHECK(i >= 0 && i < size(), IndexError, "ImageDataset: index ", i, " is out of range [0, ", size(), ")");
  const int64_t p = positions_[static_cast<size_t>(i)];
  if (cache_) {
    cv::Mat m = cache_->get(p);
    if (!m.empty()) return m;
  }
  cv::Mat m = shrink_to_short_side(
      read_image(index_->samples[static_cast<size_t>(p)].path, transform_.channels, short_side_), short_side_);
  if (cache_) cache_->put(p, m);
  return m;
}

Batch ImageDataset::get_batch_for_epoch(const std::vector<int64_t>& indices, int64_t epoch) const {
  const int64_t b = static_cast<int64_t>(indices.size());
  const int64_t c = transform_.channels, h = transform_.height, w = transform_.width;
  Tensor input = Tensor::empty({b, c, h, w}, DType::f32);
  Tensor target = Tensor::empty({b}, DType::i64);
  float* dst = input.data_ptr<float>();
  int64_t* t = target.data_ptr<int64_t>();
  for (int64_t k = 0; k < b; ++k) {
    const int64_t i = indices[static_cast<size_t>(k)];
    const cv::Mat m = image(i);
    const int64_t p = positions_[static_cast<size_t>(i)];
    std::mt19937_64 g = sample_generator(seed_, epoch, p);
    transform_.apply(m, train_, g, dst + k * c * h * w);
    t[k] = index_->samples[static_cast<size_t>(p)].label;
  }
  return {input, target};
}

std::pair<std::vector<double>, std::vector<double>> channel_stats(const ImageDataset& d) {
  const int c = d.transform().channels;
  std::vector<double> sum(c, 0), sq(c, 0);
  double count = 0;
  for (int64_t i = 0; i < d.size(); ++i) {
    const cv::Mat m = d.image(i);
    cv::Mat f;
    m.convertTo(f, CV_64F, unit_scale(m));
    const cv::Scalar s = cv::sum(f), q = cv::sum(f.mul(f));
    for (int k = 0; k < c; ++k) sum[k] += s[k], sq[k] += q[k];
    count += static_cast<double>(m.total());
  }
  KILN_CHECK(count > 0, ValueError, "channel_stats: the dataset has no images");
  std::vector<double> mean(c), stddev(c);
  for (int k = 0; k < c; ++k) {
    mean[k] = sum[k] / count;
    stddev[k] = std::sqrt(std::max(0.0, sq[k] / count - mean[k] * mean[k]));
    if (stddev[k] <= 0) stddev[k] = 1;
  }
  return {mean, stddev};
}

}  // namespace kiln::data
