#include "engine/data/image/image_transforms.h"

#include <algorithm>
#include <cmath>

#include <opencv2/imgproc.hpp>

#include "engine/core/error.h"
#include "engine/core/splitmix.h"
#include "engine/data/image/image_decode.h"

namespace kiln::data {

namespace {

int64_t randint(std::mt19937_64& g, int64_t lo, int64_t hi) {  // in [lo, hi)
  return lo + static_cast<int64_t>(g() % static_cast<uint64_t>(hi - lo));
}

// torchvision's rgb_to_grayscale weights (ITU-R 601).
float grey(const float* p) { return 0.299f * p[0] + 0.587f * p[1] + 0.114f * p[2]; }

void blend(cv::Mat& img, const cv::Mat& other, double factor) {  // factor * img + (1 - factor) * other, clamped
  cv::addWeighted(img, factor, other, 1.0 - factor, 0.0, img);
  cv::min(img, 1.0, img);
  cv::max(img, 0.0, img);
}

}  // namespace

std::mt19937_64 sample_generator(uint64_t seed, int64_t epoch, int64_t index) {
  return std::mt19937_64(mix64(seed ^ mix64(static_cast<uint64_t>(epoch) ^ mix64(static_cast<uint64_t>(index)))));
}

double uniform(std::mt19937_64& g, double lo, double hi) {
  return lo + (hi - lo) * static_cast<double>(g() >> 11) * 0x1.0p-53;
}

cv::Mat resize(const cv::Mat& image, int64_t height, int64_t width) {
  KILN_CHECK(height >= 1 && width >= 1, ValueError, "resize: size must be positive, got ", height, " x ", width);
  if (image.rows == height && image.cols == width) return image;
  const bool shrink = height * width < static_cast<int64_t>(image.rows) * image.cols;
  cv::Mat out;
  cv::resize(image, out, cv::Size(static_cast<int>(width), static_cast<int>(height)), 0, 0,
             shrink ? cv::INTER_AREA : cv::INTER_LINEAR);
  return out;
}

cv::Mat resize_short_side(const cv::Mat& image, int64_t size) {
  const int64_t h = image.rows, w = image.cols;
  if (std::min(h, w) == size) return image;
  return h <= w ? resize(image, size, std::max<int64_t>(1, size * w / h))
                : resize(image, std::max<int64_t>(1, size * h / w), size);
}

cv::Mat resize_to_cover(const cv::Mat& image, int64_t height, int64_t width) {
  const double f = std::max(static_cast<double>(height) / image.rows, static_cast<double>(width) / image.cols);
  if (f == 1.0) return image;
  return resize(image, std::max<int64_t>(height, static_cast<int64_t>(image.rows * f)),
                std::max<int64_t>(width, static_cast<int64_t>(image.cols * f)));
}

cv::Mat center_crop(const cv::Mat& image, int64_t height, int64_t width) {
  cv::Mat src = image;
  if (src.rows < height || src.cols < width) {
    const int pad_h = static_cast<int>(std::max<int64_t>(0, height - src.rows));
    const int pad_w = static_cast<int>(std::max<int64_t>(0, width - src.cols));
    cv::copyMakeBorder(src, src, pad_h / 2, (pad_h + 1) / 2, pad_w / 2, (pad_w + 1) / 2, cv::BORDER_CONSTANT, 0);
  }
  const int top = static_cast<int>(std::nearbyint((src.rows - height) / 2.0));
  const int left = static_cast<int>(std::nearbyint((src.cols - width) / 2.0));
  return src(cv::Rect(left, top, static_cast<int>(width), static_cast<int>(height)));
}

cv::Rect RandomResizedCrop::params(cv::Size size, std::mt19937_64& g) const {
  const int64_t H = size.height, W = size.width;
  const double area = static_cast<double>(H * W);
  const double lr0 = std::log(ratio_min), lr1 = std::log(ratio_max);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * uniform(g, scale_min, scale_max);
    const double aspect = std::exp(uniform(g, lr0, lr1));
    const int64_t w = static_cast<int64_t>(std::nearbyint(std::sqrt(target * aspect)));
    const int64_t h = static_cast<int64_t>(std::nearbyint(std::sqrt(target / aspect)));
    if (0 < w && w <= W && 0 < h && h <= H) {
      const int64_t i = randint(g, 0, H - h + 1), j = randint(g, 0, W - w + 1);
      return cv::Rect(static_cast<int>(j), static_cast<int>(i), static_cast<int>(w), static_cast<int>(h));
    }
  }
  // Fallback to a central crop (torchvision).
  const double in_ratio = static_cast<double>(W) / static_cast<double>(H);
  int64_t w = W, h = H;
  if (in_ratio < ratio_min) h = static_cast<int64_t>(std::nearbyint(static_cast<double>(w) / ratio_min));
  else if (in_ratio > ratio_max) w = static_cast<int64_t>(std::nearbyint(static_cast<double>(h) * ratio_max));
  h = std::clamp<int64_t>(h, 1, H), w = std::clamp<int64_t>(w, 1, W);
  return cv::Rect(static_cast<int>((W - w) / 2), static_cast<int>((H - h) / 2), static_cast<int>(w),
                  static_cast<int>(h));
}

cv::Mat RandomResizedCrop::operator()(const cv::Mat& image, std::mt19937_64& g) const {
  return resize(image(params(image.size(), g)), height, width);
}

cv::Mat random_horizontal_flip(const cv::Mat& image, std::mt19937_64& g, double p) {
  if (uniform(g, 0, 1) >= p) return image;
  cv::Mat out;
  cv::flip(image, out, 1);
  return out;
}

cv::Mat random_rotation(const cv::Mat& image, std::mt19937_64& g, double degrees) {
  const double angle = uniform(g, -degrees, degrees);
  const cv::Mat m = cv::getRotationMatrix2D(cv::Point2f(static_cast<float>(image.cols - 1) / 2.0f,
                                                        static_cast<float>(image.rows - 1) / 2.0f), angle, 1.0);
  cv::Mat out;
  cv::warpAffine(image, out, m, image.size(), cv::INTER_NEAREST, cv::BORDER_CONSTANT, 0);
  return out;
}

void ColorJitter::operator()(cv::Mat& img, std::mt19937_64& g) const {
  int order[4] = {0, 1, 2, 3};
  for (int i = 3; i > 0; --i) std::swap(order[i], order[randint(g, 0, i + 1)]);
  auto factor = [&](double v) { return uniform(g, std::max(0.0, 1 - v), 1 + v); };
  const double fb = brightness > 0 ? factor(brightness) : 1, fc = contrast > 0 ? factor(contrast) : 1;
  const double fs = saturation > 0 ? factor(saturation) : 1, fh = hue > 0 ? uniform(g, -hue, hue) : 0;
  const bool rgb = img.channels() == 3;
  for (int op : order) {
    if (op == 0 && fb != 1) {
      blend(img, cv::Mat::zeros(img.size(), img.type()), fb);
    } else if (op == 1 && fc != 1) {
      double mean = 0;
      if (rgb) {
        for (int y = 0; y < img.rows; ++y)
          for (int x = 0; x < img.cols; ++x) mean += grey(img.ptr<float>(y) + 3 * x);
        mean /= static_cast<double>(img.total());
      } else {
        mean = cv::mean(img)[0];
      }
      blend(img, cv::Mat(img.size(), img.type(), cv::Scalar::all(mean)), fc);
    } else if (op == 2 && fs != 1 && rgb) {
      cv::Mat g3(img.size(), img.type());
      for (int y = 0; y < img.rows; ++y)
        for (int x = 0; x < img.cols; ++x) {
          const float v = grey(img.ptr<float>(y) + 3 * x);
          float* d = g3.ptr<float>(y) + 3 * x;
          d[0] = d[1] = d[2] = v;
        }
      blend(img, g3, fs);
    } else if (op == 3 && fh != 0 && rgb) {
      cv::Mat hsv;
      cv::cvtColor(img, hsv, cv::COLOR_RGB2HSV);  // float: H in [0, 360)
      for (int y = 0; y < hsv.rows; ++y)
        for (int x = 0; x < hsv.cols; ++x) {
          float& h = hsv.ptr<float>(y)[3 * x];
          h = static_cast<float>(std::fmod(h + fh * 360.0 + 360.0, 360.0));
        }
      cv::cvtColor(hsv, img, cv::COLOR_HSV2RGB);
    }
  }
}

const char* augment_name(Augment a) {
  switch (a) {
    case Augment::none: return "none";
    case Augment::flip: return "flip";
    case Augment::standard: return "standard";
  }
  return "?";
}

Augment parse_augment(const std::string& name) {
  if (name == "none") return Augment::none;
  if (name == "flip") return Augment::flip;
  if (name == "standard") return Augment::standard;
  throw ValueError("unknown augmentation '" + name + "'; known: none, flip, standard");
}

void ImageTransform::apply(const cv::Mat& image, bool train, std::mt19937_64& g, float* out) const {
  KILN_CHECK(image.channels() == channels, ShapeError, "ImageTransform: the image has ", image.channels(),
             " channels, the transform expects ", channels);
  cv::Mat m;
  if (train && augment == Augment::standard)
    m = RandomResizedCrop{.height = height, .width = width}(image, g);
  else
    m = center_crop(resize_to_cover(image, height, width), height, width);
  if (train && augment != Augment::none) m = random_horizontal_flip(m, g);
  if (train && rotation > 0) m = random_rotation(m, g, rotation);
  cv::Mat f;
  m.convertTo(f, CV_32F, unit_scale(image));
  if (train && augment == Augment::standard && color_jitter) ColorJitter{0.4, 0.4, 0.4, 0}(f, g);
  const int64_t plane = height * width;
  for (int c = 0; c < channels; ++c) {
    const size_t k = mean.size() == 1 ? 0 : static_cast<size_t>(c);
    const float mu = mean.empty() ? 0.f : static_cast<float>(mean[k]);
    const float inv = stddev.empty() ? 1.f : static_cast<float>(1.0 / stddev[k]);
    float* dst = out + c * plane;
    for (int y = 0; y < f.rows; ++y) {
      const float* src = f.ptr<float>(y);
      for (int x = 0; x < f.cols; ++x) dst[y * width + x] = (src[x * channels + c] - mu) * inv;
    }
  }
}

}  // namespace kiln::data
