// engine/data/image (KILN_OPENCV): decoding the crafted files of tests/data/image_cases.h, the
// folder index, torchvision's transform semantics, and the seeded augmentation's independence of
// the DataLoader's worker count.
#ifdef KILN_HAVE_OPENCV
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include <opencv2/imgproc.hpp>

#include "engine/core/error.h"
#include "engine/data/dataloader.h"
#include "engine/data/image/image_dataset.h"
#include "engine/data/image/image_decode.h"
#include "image_cases.h"
#include "tests/engine/test_util.h"

using namespace kiln;
using namespace kiln::data;
namespace fs = std::filesystem;

namespace {

class ImageData : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir("kiln-images");
    testdata::write_crafted_cases(dir_->path);
  }
  static void TearDownTestSuite() { delete dir_; }
  static fs::path path(const std::string& p) { return fs::path(dir_->path) / p; }
  static test::TempDir* dir_;
};
test::TempDir* ImageData::dir_ = nullptr;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_F(ImageData, ExifOrientationIsApplied) {
  const cv::Mat m = read_image(path("crafted/b/exif6.jpg").string());
  EXPECT_EQ(m.rows, 20);  // stored 20 wide x 10 high, rotated 90 degrees clockwise
  EXPECT_EQ(m.cols, 10);
}

TEST_F(ImageData, SixteenBitPngStaysSixteenBit) {
  const cv::Mat m = read_image(path("crafted/a/sixteen.png").string());
  ASSERT_EQ(m.depth(), CV_16U);
  EXPECT_EQ(m.at<uint16_t>(0, 0), 65535);
  EXPECT_EQ(m.at<uint16_t>(1, 1), 65535 - 4000 - 1);
  ImageTransform t;
  t.height = 12, t.width = 16, t.channels = 1;
  std::vector<float> out(12 * 16);
  std::mt19937_64 g = sample_generator(0, 0, 0);
  t.apply(m, false, g, out.data());
  EXPECT_FLOAT_EQ(out[0], 1.0f);                                      // not saturated at 255
  EXPECT_NEAR(out[16 + 1], (65535.0 - 4001.0) / 65535.0, 1e-6);       // scaled by 1/65535
  const cv::Mat deep = read_image(path("crafted/b/deep.tif").string());
  EXPECT_EQ(deep.depth(), CV_16U);
  EXPECT_EQ(deep.channels(), 3);
}

TEST_F(ImageData, BadFilesGiveErrorsNamingThem) {
  const std::string trunc = path("crafted/b/truncated.jpg").string();
  EXPECT_NE(error_of([&] { read_image(trunc); }).find(trunc + ": truncated JPEG"), std::string::npos);
  const std::string zero = path("crafted/b/zero.jpg").string();
  EXPECT_EQ(error_of([&] { read_image(zero); }), zero + ": empty file (0 bytes)");
  const std::string garbage = path("crafted/b/garbage.png").string();
  EXPECT_NE(error_of([&] { read_image(garbage); }).find(garbage + ": not an image"), std::string::npos);
  EXPECT_NE(error_of([&] { read_image(path("nope.png").string()); }).find("cannot read"), std::string::npos);
}

TEST_F(ImageData, ChannelConversions) {
  const cv::Mat rgba = read_image(path("crafted/a/rgba.png").string());
  ASSERT_EQ(rgba.channels(), 3);  // the decoder drops alpha
  const cv::Mat rgb = to_channels(rgba, 3);
  ASSERT_EQ(rgb.channels(), 3);
  EXPECT_EQ(rgb.at<cv::Vec3b>(0, 0), cv::Vec3b(30, 20, 10));  // BGRA (10, 20, 30, 128) -> RGB
  cv::Mat four(2, 2, CV_8UC4, cv::Scalar(10, 20, 30, 128));
  EXPECT_EQ(to_channels(four, 3).at<cv::Vec3b>(0, 0), cv::Vec3b(30, 20, 10));
  const cv::Mat grey = to_channels(rgba, 1);
  EXPECT_EQ(grey.at<uint8_t>(0, 0), 22);  // 0.299 * 30 + 0.587 * 20 + 0.114 * 10 = 21.88
  const cv::Mat g3 = to_channels(read_image(path("crafted/a/grey.png").string()), 3);
  EXPECT_EQ(g3.channels(), 3);
  EXPECT_THROW(to_channels(rgba, 2), ValueError);
}

TEST_F(ImageData, FolderIndexAndVerification) {
  ImageIndex index = scan_image_folder(path("crafted").string());
  EXPECT_EQ(index.classes, (std::vector<std::string>{"a", "b", "c \xC3\xBC"}));
  EXPECT_EQ(index.hidden, 1);
  EXPECT_EQ(index.non_images, 1);  // notes.txt
  EXPECT_EQ(index.samples.size(), 5u + 6u + 2u);
  const ImageStats st = verify_images(index, 2);
  EXPECT_EQ(index.samples.size(), 10u);
  EXPECT_EQ(index.class_counts(), (std::vector<int64_t>{5, 3, 2}));
  std::vector<std::string> skipped;
  for (const SkippedFile& f : index.skipped) skipped.push_back(fs::path(f.path).filename().string());
  EXPECT_EQ(skipped, (std::vector<std::string>{"notes.txt", "garbage.png", "truncated.jpg", "zero.jpg"}));
  EXPECT_EQ(st.depths.at(16), 2);
  EXPECT_EQ(st.sizes.at({20, 10}), 1);
  const std::string fp = index.fingerprint();
  EXPECT_EQ(fp.size(), 16u);
  index.samples.back().bytes += 1;
  EXPECT_NE(index.fingerprint(), fp);
}

TEST_F(ImageData, BadFoldersAreErrorsNamingThem) {
  const std::string empty = path("empty_class/b").string();
  EXPECT_NE(error_of([&] { scan_image_folder(path("empty_class").string()); }).find(empty + ": class folder 'b' holds no image"),
            std::string::npos);
  EXPECT_NE(error_of([&] { scan_image_folder(path("nope").string()); }).find("no such folder"), std::string::npos);
  EXPECT_NE(error_of([&] { scan_image_folder(path("crafted/a").string()); }).find("no class folders"),
            std::string::npos);
  const std::vector<std::string> only_a = {"a"};
  EXPECT_NE(error_of([&] { scan_image_folder(path("crafted").string(), &only_a); })
                .find("is not among the training split's classes"),
            std::string::npos);
}

TEST_F(ImageData, ManifestPathsRelativeToTheCsv) {
  ImageIndex index = read_image_manifest(path("manifest.csv").string());
  EXPECT_EQ(index.classes, (std::vector<std::string>{"cat", "dog"}));
  ASSERT_EQ(index.samples.size(), 3u);
  EXPECT_EQ(index.samples[1].path, path("crafted/c \xC3\xBC/\xC3\xBC 1.png").string());
  ASSERT_EQ(index.skipped.size(), 1u);
  EXPECT_NE(index.skipped[0].reason.find("manifest.csv:5: no such file"), std::string::npos);
}

TEST(ImageTransforms, ResizeShrinksWithAreaAveraging) {
  cv::Mat checker(4, 4, CV_8UC1);
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x) checker.at<uint8_t>(y, x) = (x + y) % 2 ? 200 : 0;
  const cv::Mat small = resize(checker, 2, 2);
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 2; ++x) EXPECT_EQ(small.at<uint8_t>(y, x), 100);  // antialiased, not sampled
}

TEST(ImageTransforms, CenterCropAsTorchvision) {
  cv::Mat m(5, 7, CV_8UC1);
  for (int y = 0; y < 5; ++y)
    for (int x = 0; x < 7; ++x) m.at<uint8_t>(y, x) = static_cast<uint8_t>(10 * y + x);
  const cv::Mat c = center_crop(m, 2, 2);  // top = round(1.5) = 2, left = round(2.5) = 2 (half to even)
  EXPECT_EQ(c.at<uint8_t>(0, 0), 22);
  const cv::Mat padded = center_crop(m, 7, 7);  // zeros above and below
  EXPECT_EQ(padded.at<uint8_t>(0, 3), 0);
  EXPECT_EQ(padded.at<uint8_t>(1, 3), 3);
}

TEST(ImageTransforms, RandomResizedCropParamsAndFallback) {
  RandomResizedCrop rrc{.height = 8, .width = 8};
  std::mt19937_64 g = sample_generator(1, 2, 3);
  for (int k = 0; k < 200; ++k) {
    const cv::Rect r = rrc.params(cv::Size(50, 40), g);
    ASSERT_GT(r.width, 0);
    ASSERT_LE(r.x + r.width, 50);
    ASSERT_LE(r.y + r.height, 40);
    const double area = static_cast<double>(r.area()) / (50.0 * 40.0);
    EXPECT_GE(area, 0.07);
  }
  // A 100 x 10 strip: no crop of >= 90% of the area fits the ratio range in 10 tries, so the
  // central crop of ratio 4/3 (torchvision's fallback): h 10, w round(13.33) = 13, x (100-13)/2.
  RandomResizedCrop wide{.height = 8, .width = 8, .scale_min = 0.9};
  EXPECT_EQ(wide.params(cv::Size(100, 10), g), cv::Rect(43, 0, 13, 10));
}

TEST(ImageTransforms, ColorJitterStaysInRangeAndIsSeeded) {
  cv::Mat f(6, 6, CV_32FC3);
  cv::randu(f, 0.0f, 1.0f);
  cv::Mat a = f.clone(), b = f.clone();
  std::mt19937_64 g1 = sample_generator(5, 1, 9), g2 = sample_generator(5, 1, 9);
  ColorJitter{0.4, 0.4, 0.4, 0.1}(a, g1);
  ColorJitter{0.4, 0.4, 0.4, 0.1}(b, g2);
  EXPECT_EQ(cv::norm(a, b, cv::NORM_INF), 0.0);
  EXPECT_GT(cv::norm(a, f, cv::NORM_INF), 0.0);
  double lo, hi;
  cv::minMaxLoc(a.reshape(1), &lo, &hi);
  EXPECT_GE(lo, 0.0);
  EXPECT_LE(hi, 1.0 + 1e-6);
}

TEST_F(ImageData, AugmentationIsTheSameWhateverTheWorkerCount) {
  auto index = std::make_shared<ImageIndex>(scan_image_folder(path("crafted").string()));
  verify_images(*index, 1);
  ImageTransform t;
  t.height = 10, t.width = 12, t.channels = 3, t.augment = Augment::standard, t.rotation = 15;
  t.mean.assign(kImageNetMean.begin(), kImageNetMean.end());
  t.stddev.assign(kImageNetStd.begin(), kImageNetStd.end());
  std::vector<int64_t> all(index->samples.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  auto epochs = [&](int workers) {
    auto d = std::make_shared<ImageDataset>(index, all, t, true, 7, std::make_shared<ImageCache>(1 << 20));
    DataLoader loader(d, {.batch_size = 3, .shuffle = true, .seed = 7, .num_workers = workers});
    std::vector<std::vector<float>> out;
    for (int e = 0; e < 2; ++e)
      for (const Batch& b : loader) {
        const float* p = b.input.data_ptr<const float>();
        out.emplace_back(p, p + b.input.numel());
      }
    return out;
  };
  const auto zero = epochs(0), three = epochs(3);
  ASSERT_EQ(zero.size(), three.size());
  for (size_t k = 0; k < zero.size(); ++k) {
    ASSERT_EQ(zero[k].size(), three[k].size());
    EXPECT_EQ(std::memcmp(zero[k].data(), three[k].data(), zero[k].size() * sizeof(float)), 0) << "batch " << k;
  }
  // Another epoch draws other augmentations (the same order would repeat them).
  auto d = std::make_shared<ImageDataset>(index, all, t, true, 7, nullptr);
  const Tensor e0 = d->get_batch_for_epoch({0, 1}, 0).input, e1 = d->get_batch_for_epoch({0, 1}, 1).input;
  EXPECT_NE(std::memcmp(e0.data_ptr<const float>(), e1.data_ptr<const float>(), e0.numel() * sizeof(float)), 0);
}

TEST_F(ImageData, CacheKeepsDownscaledImagesInTheirDepth) {
  auto index = std::make_shared<ImageIndex>(scan_image_folder(path("crafted").string()));
  auto cache = std::make_shared<ImageCache>(1 << 20);
  verify_images(*index, 2, cache.get(), 1, cache_short_side(4, 4));  // shorter side <= ceil(4.56) = 5
  EXPECT_EQ(cache->size(), static_cast<int64_t>(index->samples.size()));
  for (size_t i = 0; i < index->samples.size(); ++i) {
    const cv::Mat m = cache->get(static_cast<int64_t>(i));
    EXPECT_EQ(std::min(m.rows, m.cols), 5);
    EXPECT_EQ(m.channels(), 1);
    if (index->samples[i].path.find("sixteen") != std::string::npos) {
      EXPECT_EQ(m.depth(), CV_16U);
    }
  }
  cache->update([](const cv::Mat& m) { return shrink_to_short_side(m, 2); }, 2);  // once the size is known
  int64_t bytes = 0;
  for (size_t i = 0; i < index->samples.size(); ++i) {
    const cv::Mat m = cache->get(static_cast<int64_t>(i));
    EXPECT_EQ(std::min(m.rows, m.cols), 2);
    bytes += static_cast<int64_t>(m.total() * m.elemSize());
  }
  EXPECT_EQ(cache->bytes(), bytes);
  ImageCache tiny(10);
  EXPECT_FALSE(tiny.put(0, cv::Mat(4, 4, CV_8UC1)));  // 16 bytes > 10
  EXPECT_EQ(tiny.bytes(), 0);
}

#endif  // KILN_HAVE_OPENCV
