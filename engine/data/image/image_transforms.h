// Image transforms with torchvision's semantics and defaults (torchvision.transforms v0.14), on
// OpenCV images of 8 or 16 bits, each random one drawing from a generator that image_dataset.h
// seeds from (seed, epoch, sample index) alone, so that the same sample in the same epoch gets
// the same draws whatever the worker thread. Built only with KILN_OPENCV.
#pragma once
#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

namespace kiln::data {

// The generator of one sample's draws: mt19937_64 seeded by a SplitMix64 mix of the three.
std::mt19937_64 sample_generator(uint64_t seed, int64_t epoch, int64_t index);
// A double in [lo, hi) from 53 random bits (the same on every standard library).
double uniform(std::mt19937_64& g, double lo, double hi);

// Resize: to exactly height x width; cv::INTER_AREA (antialiased, as PIL's and torchvision's
// antialias=True) when shrinking, bilinear when enlarging. Unchanged when the size matches.
cv::Mat resize(const cv::Mat& image, int64_t height, int64_t width);
// Resize(size) with an int: the shorter side becomes `size`, the other int(size * long / short).
cv::Mat resize_short_side(const cv::Mat& image, int64_t size);
// The smallest resize (aspect kept) that covers height x width: for a square target this is
// torchvision's Resize(size) with an int. Unchanged when the image is that size already.
cv::Mat resize_to_cover(const cv::Mat& image, int64_t height, int64_t width);
// CenterCrop(height, width): top = round((H - h) / 2), left = round((W - w) / 2); an image
// smaller than the crop is padded with zeros first (as torchvision).
cv::Mat center_crop(const cv::Mat& image, int64_t height, int64_t width);

// RandomResizedCrop(size, scale=(0.08, 1), ratio=(3/4, 4/3)): up to 10 tries of an area
// fraction in `scale` and a log-uniform aspect ratio in `ratio`, then the central crop of the
// nearest ratio (torchvision's fallback); the crop is resized to height x width.
struct RandomResizedCrop {
  int64_t height = 224, width = 224;
  double scale_min = 0.08, scale_max = 1.0;
  double ratio_min = 3.0 / 4.0, ratio_max = 4.0 / 3.0;
  // The crop {x, y, w, h} chosen for an image of `size`.
  cv::Rect params(cv::Size size, std::mt19937_64& g) const;
  cv::Mat operator()(const cv::Mat& image, std::mt19937_64& g) const;
};

// RandomHorizontalFlip(p=0.5).
cv::Mat random_horizontal_flip(const cv::Mat& image, std::mt19937_64& g, double p = 0.5);

// RandomRotation(degrees): an angle uniform in [-degrees, degrees] (counter-clockwise), about
// the image's center, same size, nearest-neighbour, zeros outside (torchvision's defaults).
cv::Mat random_rotation(const cv::Mat& image, std::mt19937_64& g, double degrees);

// ColorJitter(brightness, contrast, saturation, hue) on a float image in [0, 1] (CV_32F, 1 or
// 3 channels RGB): factors uniform in [max(0, 1 - b), 1 + b] (hue: a shift in [-hue, hue] of a
// turn, hue <= 0.5), applied in a random order, each result clamped to [0, 1] (torchvision's
// adjust_*: contrast blends with the mean of the grey image, saturation with the grey image;
// saturation and hue leave a grey image as it is). Changes `image` in place.
struct ColorJitter {
  double brightness = 0, contrast = 0, saturation = 0, hue = 0;
  void operator()(cv::Mat& image, std::mt19937_64& g) const;
};

// The transforms a dataset applies, in torchvision's usual order.
enum class Augment { none, flip, standard };
const char* augment_name(Augment a);     // "none", "flip", "standard"
Augment parse_augment(const std::string& name);  // ValueError listing the names

struct ImageTransform {
  int64_t height = 224, width = 224;  // the output size
  int channels = 3;                   // 1 or 3
  // Training (train = true):
  //   none:     resize + CenterCrop, as evaluation
  //   flip:     that + RandomHorizontalFlip
  //   standard: RandomResizedCrop + RandomHorizontalFlip + ColorJitter(0.4, 0.4, 0.4)
  // Evaluation: resize_to_cover(height, width) + CenterCrop(height, width) (for a square size,
  // Resize(size) + CenterCrop(size)).
  Augment augment = Augment::none;
  bool color_jitter = true;           // standard's ColorJitter (off: RandomResizedCrop + flip only)
  double rotation = 0;                // degrees of RandomRotation when training (0: none)
  std::vector<double> mean, stddev;   // Normalize per channel (one value: every channel); empty: none
  // Writes the transformed image as floats, channel-major [channels, height, width], into out:
  // pixel / 255 (8-bit) or / 65535 (16-bit), then ColorJitter, then (x - mean) / std.
  void apply(const cv::Mat& image, bool train, std::mt19937_64& g, float* out) const;
};

// ImageNet's mean and std (torchvision's reference scripts): Normalize's default for RGB.
inline constexpr std::array<double, 3> kImageNetMean = {0.485, 0.456, 0.406};
inline constexpr std::array<double, 3> kImageNetStd = {0.229, 0.224, 0.225};

}  // namespace kiln::data
