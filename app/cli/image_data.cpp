#include "app/cli/image_data.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/core/error.h"

namespace kiln::cli {

namespace fs = std::filesystem;

namespace {

constexpr const char* kImageFlags[] = {"image-size", "channels", "augment", "rotation", "normalize", "workers",
                                       "cache-mb"};

std::vector<double> parse_numbers(const std::string& text, const Args& args) {
  std::vector<double> v;
  std::stringstream s(text);
  for (std::string item; std::getline(s, item, ',');) {
    try {
      size_t used = 0;
      v.push_back(std::stod(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      args.fail("--normalize expects auto, computed, imagenet, none or MEAN[,MEAN...]/STD[,STD...], got '" + text + "'");
    }
  }
  return v;
}

}  // namespace

ArgParser& add_image_flags(ArgParser& p) {
  return p
      .flag("image-size", "H[xW]", "", "images: the input size (default: the most common size of the training images, scaled to 224 on its shorter side when longer)")
      .flag("channels", "C", "", "images: 1 (grey) or 3 (RGB) (default: 1 when every image is grey, else 3)")
      .flag("augment", "A", "none", "images: training augmentation: none (resize + center crop), flip (+ random\n"
                                    "horizontal flip), standard (RandomResizedCrop + flip + ColorJitter 0.4)",
            {"none", "flip", "standard"})
      .flag("rotation", "DEG", "0", "images: RandomRotation of up to DEG degrees when training (0: none)")
      .flag("normalize", "N", "auto", "images: auto (ImageNet's mean/std for RGB, computed for grey), computed\n"
                                      "(from the training split), imagenet, none, or MEAN[,..]/STD[,..]")
      .flag("workers", "N", "2", "images: threads that decode and augment (the DataLoader's workers)")
      .flag("cache-mb", "MB", "4096", "images: memory for decoded images, so later epochs do not decode (0: none)");
}

ImageConfig image_config(const Args& args, const std::string& dataset, double test_fraction, uint64_t seed) {
  ImageConfig c;
  if (!is_image_dataset(dataset)) {
    for (const char* f : kImageFlags)
      if (args.given(f))
        args.fail(std::string("--") + f + " applies to --dataset imagefolder:DIR and images:FILE.csv only");
    return c;
  }
  try {
    c = data::image_config_from_spec(dataset);
  } catch (const ValueError& e) {
    args.fail(std::string("--dataset ") + e.what());
  }
  if (args.given("image-size")) {
    const std::string s = args.str("image-size");
    const size_t x = s.find('x');
    try {
      size_t used = 0;
      c.height = std::stoll(s.substr(0, x), &used);
      if (used != (x == std::string::npos ? s.size() : x)) throw std::invalid_argument(s);
      c.width = x == std::string::npos ? c.height : std::stoll(s.substr(x + 1), &used);
      if (x != std::string::npos && used != s.size() - x - 1) throw std::invalid_argument(s);
    } catch (const std::exception&) {
      c.height = 0;
    }
    if (c.height < 1 || c.width < 1 || c.height > 8192 || c.width > 8192)
      args.fail("--image-size expects H or HxW (1 to 8192), got '" + s + "'");
  }
  if (args.given("channels")) {
    const int64_t ch = args.integer("channels", 1);
    if (ch != 1 && ch != 3) args.fail("--channels expects 1 or 3, got " + std::to_string(ch));
    c.channels = static_cast<int>(ch);
  }
  c.augment = args.str("augment");
  c.rotation = args.number("rotation", 0, 180);
  c.normalize = args.str("normalize");
  if (c.normalize != "auto" && c.normalize != "computed" && c.normalize != "imagenet" && c.normalize != "none") {
    const size_t slash = c.normalize.find('/');
    if (slash == std::string::npos) args.fail("--normalize expects auto, computed, imagenet, none or MEAN/STD, got '" +
                                              c.normalize + "'");
    parse_numbers(c.normalize.substr(0, slash), args);
    for (double s : parse_numbers(c.normalize.substr(slash + 1), args))
      if (!(s > 0)) args.fail("--normalize: a std must be positive");
  }
  c.workers = static_cast<int>(std::min<int64_t>(args.integer("workers", 1), 256));
  c.cache_mb = args.integer("cache-mb", 0);
  c.test_fraction = test_fraction;
  c.seed = seed;
  return c;
}

}  // namespace kiln::cli
