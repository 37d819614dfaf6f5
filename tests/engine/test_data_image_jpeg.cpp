// engine/data/image's JPEG fast path (jpeg_decode.h: libjpeg-turbo straight to R, G, B) against
// OpenCV's imdecode + to_channels, every EXIF orientation, grey JPEGs, DCT-domain scaling (PIL's
// draft), and the cache's downscale against cv::INTER_AREA.
#ifdef KILN_HAVE_OPENCV
#include <gtest/gtest.h>

#include <filesystem>

#include <opencv2/imgproc.hpp>

#include "engine/data/image/image_cache.h"
#include "engine/data/image/image_decode.h"
#include "engine/data/image/image_index.h"
#include "engine/data/image/jpeg_decode.h"
#include "image_cases.h"
#include "tests/engine/test_util.h"

using namespace kiln;
using namespace kiln::data;
namespace fs = std::filesystem;

namespace {

double max_abs_diff(const cv::Mat& a, const cv::Mat& b) {
  EXPECT_EQ(a.size(), b.size());
  EXPECT_EQ(a.type(), b.type());
  if (a.size() != b.size() || a.type() != b.type()) return 1e9;
  double m = 0;
  cv::Mat d;
  cv::absdiff(a, b, d);
  cv::minMaxLoc(d.reshape(1), nullptr, &m);
  return m;
}

// A photo-like BGR image (blurred noise, shapes, grain), as kiln_image_fixtures jpegs writes.
cv::Mat photo(int h, int w, uint64_t seed) {
  cv::RNG rng(seed);
  cv::Mat noise(h / 8, w / 8, CV_8UC3), m;
  rng.fill(noise, cv::RNG::UNIFORM, 0, 256);
  cv::resize(noise, m, cv::Size(w, h), 0, 0, cv::INTER_CUBIC);
  for (int k = 0; k < 6; ++k)
    cv::circle(m, cv::Point(rng.uniform(0, w), rng.uniform(0, h)), rng.uniform(5, 60),
               cv::Scalar(rng.uniform(0, 256), rng.uniform(0, 256), rng.uniform(0, 256)), cv::FILLED, cv::LINE_AA);
  cv::Mat grain(h, w, CV_8UC3);
  rng.fill(grain, cv::RNG::NORMAL, 0, 6);
  return m + grain;
}

}  // namespace

TEST(ImageJpeg, FastPathEqualsOpenCVForEveryOrientationAndChannelCount) {
  test::TempDir dir("kiln-jpeg");
  const std::vector<uchar> colour = testdata::encode(".jpg", testdata::test_card(24, 40));
  cv::Mat grey_card;
  cv::cvtColor(testdata::test_card(24, 40), grey_card, cv::COLOR_BGR2GRAY);
  const std::vector<uchar> grey = testdata::encode(".jpg", grey_card);
  for (const auto* bytes : {&colour, &grey})
    for (int orientation = 1; orientation <= 8; ++orientation) {
      const fs::path p = fs::path(dir.path) / (std::to_string(bytes == &grey) + "_" + std::to_string(orientation) + ".jpg");
      testdata::write_bytes(p, orientation == 1 ? *bytes : testdata::with_exif_orientation(*bytes, orientation));
      const cv::Mat reference = read_image(p.string());  // cv::imdecode
      for (int channels : {1, 3}) {
        SCOPED_TRACE(p.string() + " channels " + std::to_string(channels));
        const cv::Mat fast = read_image(p.string(), channels, 0);
        EXPECT_EQ(max_abs_diff(fast, to_channels(reference, channels)), 0);
      }
      EXPECT_EQ(reference.rows, orientation >= 5 ? 40 : 24);  // 5 to 8 transpose
    }
}

TEST(ImageJpeg, ExifOrientationParserRefusesMalformedSegments) {
  EXPECT_EQ(exif_orientation(""), 1);
  EXPECT_EQ(exif_orientation(std::string("Exif\0\0MM\0*\0\0\0\x08", 14)), 1);             // no IFD entries
  EXPECT_EQ(exif_orientation(std::string("Exif\0\0XX\0*\0\0\0\x08\0\0", 16)), 1);          // bad byte order
  const std::string ok("Exif\0\0MM\0*\0\0\0\x08\0\x01\x01\x12\0\x03\0\0\0\x01\0\x06\0\0", 28);
  EXPECT_EQ(exif_orientation(ok), 6);
  EXPECT_EQ(exif_orientation(ok.substr(0, 20)), 1);  // cut inside the entry
}

TEST(ImageJpeg, DraftScalingKeepsTheShortSideAndMatchesAFullDecode) {
  test::TempDir dir("kiln-jpeg");
  const fs::path p = fs::path(dir.path) / "big.jpg";
  testdata::write_bytes(p, testdata::encode(".jpg", photo(600, 800, 7)));
  const cv::Mat full = read_image(p.string(), 3, 0);
  ASSERT_EQ(full.rows, 600);
  const cv::Mat half = read_image(p.string(), 3, 256);  // 1/2: 300 >= 256; 1/4 would be 150
  EXPECT_EQ(half.rows, 300);
  EXPECT_EQ(half.cols, 400);
  EXPECT_EQ(read_image(p.string(), 3, 100).rows, 150);  // 1/4
  EXPECT_EQ(read_image(p.string(), 3, 601).rows, 600);  // larger than the image: full size
  // What the cache keeps: the draft then the shrink, against a full decode then INTER_AREA.
  cv::Mat area;
  cv::resize(full, area, cv::Size(341, 256), 0, 0, cv::INTER_AREA);
  const cv::Mat cached = shrink_to_short_side(half, 256);
  ASSERT_EQ(cached.size(), area.size());
  EXPECT_GT(cv::PSNR(cached, area), 35.0);
}

TEST(ImageJpeg, VerificationDecodesAsTheLoaderAndReportsFullSizes) {
  // Two classes of large JPEGs (one EXIF-turned, one grey) and a PNG: verify_images caches what
  // an uncached sample read gives (the reduced JPEG decode, then the shrink) and reports the files'
  // own sizes and channels, not the reduced ones.
  test::TempDir dir("kiln-verify");
  const fs::path a = fs::path(dir.path) / "a", b = fs::path(dir.path) / "b";
  fs::create_directories(a);
  fs::create_directories(b);
  testdata::write_bytes(a / "wide.jpg", testdata::encode(".jpg", photo(240, 400, 1)));
  testdata::write_bytes(a / "turned.jpg", testdata::with_exif_orientation(testdata::encode(".jpg", photo(240, 400, 2)), 6));
  cv::Mat grey;
  cv::cvtColor(photo(160, 160, 3), grey, cv::COLOR_BGR2GRAY);
  testdata::write_bytes(b / "grey.jpg", testdata::encode(".jpg", grey));
  testdata::write_bytes(b / "small.png", testdata::encode(".png", photo(40, 48, 4)));
  for (bool cached : {true, false}) {
    ImageIndex index = scan_image_folder(dir.path.string());
    ImageCache cache(64 << 20);
    const int64_t side = cache_short_side(32, 32);  // about 37: the large JPEGs decode at 1/2 or 1/4 scale
    const ImageStats st = verify_images(index, 2, cached ? &cache : nullptr, 3, side);
    ASSERT_EQ(index.samples.size(), 4u);
    EXPECT_EQ(st.sizes, (std::map<std::pair<int64_t, int64_t>, int64_t>{{{240, 400}, 1}, {{400, 240}, 1},
                                                                         {{160, 160}, 1}, {{40, 48}, 1}}));
    EXPECT_EQ(st.channels, (std::map<int, int64_t>{{1, 1}, {3, 3}}));
    EXPECT_EQ(st.depths, (std::map<int, int64_t>{{8, 4}}));
    if (!cached) continue;
    for (size_t i = 0; i < index.samples.size(); ++i) {
      const std::string& path = index.samples[i].path;
      const cv::Mat want = shrink_to_short_side(read_image(path, 3, side), side);  // ImageDataset's miss
      EXPECT_EQ(max_abs_diff(cache.get(static_cast<int64_t>(i)), want), 0) << path;
    }
  }
}

TEST(ImageJpeg, ShrinkIsCloseToInterArea) {
  for (uint64_t seed : {1, 2, 3}) {
    const cv::Mat m = photo(375, 500, seed);
    cv::Mat area;
    cv::resize(m, area, cv::Size(341, 256), 0, 0, cv::INTER_AREA);
    const cv::Mat s = shrink_to_short_side(m, 256);
    ASSERT_EQ(s.size(), area.size());
    EXPECT_GT(cv::PSNR(s, area), 45.0) << "seed " << seed;
    EXPECT_LE(max_abs_diff(s, area), 24);
    cv::Mat m16, area16;  // 16-bit and grey take the same path
    m.convertTo(m16, CV_16U, 257);
    cv::cvtColor(m16, m16, cv::COLOR_BGR2GRAY);
    cv::resize(m16, area16, cv::Size(341, 256), 0, 0, cv::INTER_AREA);
    EXPECT_GT(cv::PSNR(shrink_to_short_side(m16, 256), area16, 65535), 45.0);
  }
}

#endif
