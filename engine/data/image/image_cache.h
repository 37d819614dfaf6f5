// Decoded images kept in memory between epochs, so that only the first epoch decodes. Images
// are kept in their own bit depth (8 or 16) after the conversion to the dataset's channel count,
// downscaled (antialiased, shrink_to_short_side) so that the shorter side is at most `short_side`
// (by default 1.14 x the target size, the usual 256 for 224): random crops still see the whole
// image. Built only with KILN_OPENCV.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <unordered_map>

#include <opencv2/core.hpp>

namespace kiln::data {

class ImageCache {
 public:
  // limit_bytes: the most pixel bytes held; 0 disables the cache.
  explicit ImageCache(int64_t limit_bytes) : limit_(limit_bytes) {}

  // The image of sample `key`, or an empty Mat. Safe from several threads.
  cv::Mat get(int64_t key) const;
  // Keeps `image` (not copied: cv::Mat shares its pixels) unless it would pass the limit or the
  // key is there already; returns whether it is held.
  bool put(int64_t key, const cv::Mat& image);
  int64_t bytes() const { return bytes_.load(); }
  int64_t limit() const { return limit_; }
  int64_t size() const;  // images held
  // Replaces every image held by fn(image), on `threads` threads (e.g. to downscale them once the
  // target size is known); the byte count follows. Not to be called while others use the cache.
  void update(const std::function<cv::Mat(const cv::Mat&)>& fn, int threads);

 private:
  const int64_t limit_;
  std::atomic<int64_t> bytes_{0};
  mutable std::mutex mutex_;
  std::unordered_map<int64_t, cv::Mat> images_;
};

// The shorter side an image is cached at for a target of height x width: ceil(1.14 x max(h, w)).
int64_t cache_short_side(int64_t height, int64_t width);

// `image` downscaled, antialiased, so that its shorter side is `short_side` (unchanged when it is
// that small already, or short_side <= 0): cv::INTER_AREA when it shrinks by 2 or more; by less,
// bilinear to twice the size then INTER_AREA's 2 x 2 average (a box filter one output pixel wide,
// as INTER_AREA, about 3 x faster; PSNR >= 45 dB against INTER_AREA on photos).
cv::Mat shrink_to_short_side(const cv::Mat& image, int64_t short_side);

}  // namespace kiln::data
