// engine/data/image_source.h load_images (KILN_OPENCV): the input size it chooses when none is given.
#ifdef KILN_HAVE_OPENCV
#include <gtest/gtest.h>

#include <filesystem>
#include <initializer_list>
#include <tuple>
#include <utility>

#include <opencv2/imgcodecs.hpp>

#include "engine/data/image_source.h"
#include "tests/engine/test_util.h"

using namespace kiln;
using namespace kiln::data;
namespace fs = std::filesystem;

// The automatic input size: the most common size, as torchvision's Resize(224) when its shorter side
// is longer (a folder of photos at their own size took 23 GB in a headless Studio run and was killed).
TEST(ImageSource, AutomaticSizeIsTheMostCommonAtMost224OnTheShorterSide) {
  const test::TempDir dir("kiln-image-size");
  auto path = [&](const std::string& p) { return fs::path(dir.path) / p; };
  auto folder = [&](const std::string& name, int rows, int cols) {
    for (const char* c : {"a", "b"}) {
      fs::create_directories(path(name) / c);
      for (int i = 0; i < 3; ++i)
        cv::imwrite((path(name) / c / (std::to_string(i) + ".png")).string(),
                    cv::Mat(rows, cols, CV_8UC3, cv::Scalar(40 * i, 90, 200)));
      cv::imwrite((path(name) / c / "odd.png").string(), cv::Mat(20, 20, CV_8UC3, cv::Scalar(1, 2, 3)));
    }
    ImageConfig config;
    config.kind = "imagefolder", config.path = path(name).string(), config.test_fraction = 0.25, config.cache_mb = 1;
    const ImageRun run = load_images(config).run;
    return std::pair{run.height, run.width};
  };
  EXPECT_EQ(folder("photos_wide", 300, 400), (std::pair<int64_t, int64_t>{224, 298}));  // 224 * 400 / 300
  EXPECT_EQ(folder("photos_tall", 500, 250), (std::pair<int64_t, int64_t>{448, 224}));
  EXPECT_EQ(folder("photos_square", 225, 225), (std::pair<int64_t, int64_t>{224, 224}));
  EXPECT_EQ(folder("small", 28, 32), (std::pair<int64_t, int64_t>{28, 32}));  // kept
}

// Sizes as common as each other (here every training image has its own) give the one with the most
// pixels: the smallest, which a std::map's first maximum gave, set a 1 x 1 input that no CNN takes.
TEST(ImageSource, AutomaticSizeAmongEquallyCommonSizesHasTheMostPixels) {
  const test::TempDir dir("kiln-image-size-ties");
  const fs::path root = fs::path(dir.path) / "photos";
  int k = 0;
  using Image = std::tuple<const char*, const char*, int, int>;  // split, class, rows, cols
  for (const auto& [split, cls, rows, cols] :
       std::initializer_list<Image>{{"train", "a", 1, 1}, {"train", "a", 40, 30}, {"train", "b", 12, 12},
                                    {"train", "b", 50, 36}, {"test", "a", 90, 90}, {"test", "b", 8, 8}}) {
    fs::create_directories(root / split / cls);
    cv::imwrite((root / split / cls / (std::to_string(k++) + ".png")).string(),
                cv::Mat(rows, cols, CV_8UC3, cv::Scalar(10, 90, 200)));
  }
  ImageConfig config;
  config.kind = "imagefolder", config.path = root.string(), config.cache_mb = 1;
  const ImageRun run = load_images(config).run;
  EXPECT_EQ((std::pair{run.height, run.width}), (std::pair<int64_t, int64_t>{50, 36}));  // not test/'s 90 x 90
}
#endif  // KILN_HAVE_OPENCV
