// kiln_image_fixtures: writes image datasets for the tests (tests/cli/test_images.sh) with OpenCV.
//   kiln_image_fixtures crafted DIR
//       the crafted cases of image_cases.h
//   kiln_image_fixtures fashion-mnist DIR [TRAIN_PER_CLASS TEST_PER_CLASS [IDX_DIR]]
//       Fashion-MNIST (Debian's dataset-fashion-mnist) as 28 x 28 grey PNGs, DIR/train/<class>/
//       and DIR/test/<class>/, the first N of each class in file order (default: all of them)
//   kiln_image_fixtures digits DIR [CSV]
//       scikit-learn's digits (python3-sklearn's digits.csv.gz: 64 values 0..16 and the label per
//       row) as 8 x 8 grey PNGs (value * 255 / 16, rounded), DIR/<label>/<row>.png
//   kiln_image_fixtures jpegs DIR N
//       N photo-like JPEGs (quality 90) of about 500 x 375 (every fifth one 375 x 500: blurred noise,
//       a gradient and a few shapes) in 10 class folders, DIR/<k>/<i>.jpg, for
//       tests/bench/data_vs_torchvision.sh and tests/bench/image_folder_vs_tensor.sh
//   kiln_image_fixtures shapes DIR N SIZE
//       N colour PNGs of SIZE x SIZE in 3 class folders, DIR/<k>_<shape>/<i>.png: a filled circle,
//       a filled square or horizontal stripes of a random colour, place and size on a noisy
//       background (learnable in a few epochs; tests/cli/test_images.sh resnet)
// Exit status 1 with a message for a missing input.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "engine/data/csv_reader.h"
#include "engine/data/fashion_mnist.h"
#include "image_cases.h"

namespace fs = std::filesystem;

namespace {

void fashion_mnist(const fs::path& dir, int64_t train_per_class, int64_t test_per_class, const std::string& src) {
  for (bool train : {true, false}) {
    kiln::data::FashionMNIST d(train, src);
    const int64_t limit = train ? train_per_class : test_per_class;
    std::vector<int64_t> written(10, 0);
    const uint8_t* px = d.images().data_ptr<const uint8_t>();
    const int64_t* labels = d.labels().data_ptr<const int64_t>();
    for (int64_t i = 0; i < d.size(); ++i) {
      const int64_t l = labels[i];
      if (written[static_cast<size_t>(l)] >= limit) continue;
      char name[32];
      std::snprintf(name, sizeof name, "%05lld.png", static_cast<long long>(i));
      // Class folders "0_T-shirt_top" ... sort in label order.
      std::string cls = std::to_string(l) + "_" + kiln::data::FashionMNIST::kClassNames[static_cast<size_t>(l)];
      for (char& ch : cls)
        if (ch == '/' || ch == ' ') ch = '_';
      const fs::path p = dir / (train ? "train" : "test") / cls / name;
      fs::create_directories(p.parent_path());
      const cv::Mat m(28, 28, CV_8UC1, const_cast<uint8_t*>(px + i * 784));
      if (!cv::imwrite(p.string(), m)) throw std::runtime_error("cannot write " + p.string());
      ++written[static_cast<size_t>(l)];
    }
  }
}

void digits(const fs::path& dir, const std::string& csv) {
  kiln::data::CsvOptions o;
  o.header = false;
  const kiln::data::CsvTable t = kiln::data::read_csv(csv, o);
  for (size_t r = 0; r < t.rows.size(); ++r) {
    cv::Mat m(8, 8, CV_8UC1);
    for (int k = 0; k < 64; ++k)
      m.at<uint8_t>(k / 8, k % 8) = static_cast<uint8_t>(std::lround(std::stod(t.rows[r][k]) * 255.0 / 16.0));
    const std::string label = std::to_string(std::lround(std::stod(t.rows[r][64])));
    char name[32];
    std::snprintf(name, sizeof name, "%04zu.png", r);
    const fs::path p = dir / label / name;
    fs::create_directories(p.parent_path());
    if (!cv::imwrite(p.string(), m)) throw std::runtime_error("cannot write " + p.string());
  }
}

void jpegs(const fs::path& dir, int64_t n) {
  cv::RNG rng(12345);
  for (int64_t i = 0; i < n; ++i) {
    const bool portrait = i % 5 == 4;
    const int w = (portrait ? 375 : 500) + static_cast<int>(rng.uniform(-20, 21));
    const int h = (portrait ? 500 : 375) + static_cast<int>(rng.uniform(-20, 21));
    cv::Mat noise(h / 8, w / 8, CV_8UC3), m;
    rng.fill(noise, cv::RNG::UNIFORM, 0, 256);
    cv::resize(noise, m, cv::Size(w, h), 0, 0, cv::INTER_CUBIC);
    cv::GaussianBlur(m, m, cv::Size(0, 0), 3);
    for (int k = 0; k < 6; ++k) {
      const cv::Scalar colour(rng.uniform(0, 256), rng.uniform(0, 256), rng.uniform(0, 256));
      const cv::Point c(rng.uniform(0, w), rng.uniform(0, h));
      if (k % 2) cv::circle(m, c, rng.uniform(10, 80), colour, cv::FILLED, cv::LINE_AA);
      else cv::rectangle(m, cv::Rect(c, cv::Size(rng.uniform(10, 120), rng.uniform(10, 120))), colour, cv::FILLED);
    }
    cv::Mat grain(h, w, CV_8UC3);
    rng.fill(grain, cv::RNG::NORMAL, 0, 6);
    m += grain;
    const fs::path p = dir / std::to_string(i % 10) / (std::to_string(i) + ".jpg");
    fs::create_directories(p.parent_path());
    if (!cv::imwrite(p.string(), m, {cv::IMWRITE_JPEG_QUALITY, 90})) throw std::runtime_error("cannot write " + p.string());
  }
}

void shapes(const fs::path& dir, int64_t n, int size) {
  cv::RNG rng(2024);
  const char* names[] = {"0_circle", "1_square", "2_stripes"};
  for (int64_t i = 0; i < n; ++i) {
    const int k = static_cast<int>(i % 3);
    cv::Mat m(size, size, CV_8UC3);
    rng.fill(m, cv::RNG::UNIFORM, 0, 96);
    const cv::Scalar colour(rng.uniform(120, 256), rng.uniform(120, 256), rng.uniform(120, 256));
    const int r = rng.uniform(size / 6, size / 3 + 1);
    const cv::Point c(rng.uniform(r, size - r + 1), rng.uniform(r, size - r + 1));
    if (k == 0) cv::circle(m, c, r, colour, cv::FILLED, cv::LINE_AA);
    else if (k == 1) cv::rectangle(m, cv::Rect(c.x - r, c.y - r, 2 * r, 2 * r), colour, cv::FILLED);
    else
      for (int y = c.y - r; y < c.y + r; y += 4) cv::rectangle(m, cv::Rect(c.x - r, y, 2 * r, 2), colour, cv::FILLED);
    const fs::path p = dir / names[k] / (std::to_string(i) + ".png");
    fs::create_directories(p.parent_path());
    if (!cv::imwrite(p.string(), m)) throw std::runtime_error("cannot write " + p.string());
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 2 ? argv[1] : "";
  try {
    if (mode == "crafted") {
      kiln::testdata::write_crafted_cases(argv[2]);
    } else if (mode == "fashion-mnist") {
      fashion_mnist(argv[2], argc > 3 ? std::stoll(argv[3]) : 1 << 30, argc > 4 ? std::stoll(argv[4]) : 1 << 30,
                    argc > 5 ? argv[5] : kiln::data::FashionMNIST::kDefaultDir);
    } else if (mode == "digits") {
      digits(argv[2], argc > 3 ? argv[3] : "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz");
    } else if (mode == "jpegs") {
      jpegs(argv[2], argc > 3 ? std::stoll(argv[3]) : 2000);
    } else if (mode == "shapes") {
      shapes(argv[2], argc > 3 ? std::stoll(argv[3]) : 300, argc > 4 ? std::stoi(argv[4]) : 32);
    } else {
      std::fprintf(stderr, "usage: kiln_image_fixtures crafted|fashion-mnist|digits|jpegs|shapes DIR [...]\n");
      return 2;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln_image_fixtures: %s\n", e.what());
    return 1;
  }
  return 0;
}
