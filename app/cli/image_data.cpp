#include "app/cli/image_data.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/core/error.h"
#include "engine/data/tabular.h"  // stratified_split
#ifdef KILN_HAVE_OPENCV
#include "engine/data/image/image_dataset.h"
#include "engine/data/image/image_decode.h"
#endif

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

bool is_image_dataset(const std::string& dataset) {
  return dataset.rfind(kImageFolderPrefix, 0) == 0 || dataset.rfind(kImageManifestPrefix, 0) == 0;
}

bool have_image_support() {
#ifdef KILN_HAVE_OPENCV
  return true;
#else
  return false;
#endif
}

ArgParser& add_image_flags(ArgParser& p) {
  return p
      .flag("image-size", "H[xW]", "", "images: the input size (default: the most common size of the training images)")
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
  const bool folder = dataset.rfind(kImageFolderPrefix, 0) == 0;
  c.kind = folder ? "imagefolder" : "images";
  c.path = dataset.substr(std::string(folder ? kImageFolderPrefix : kImageManifestPrefix).size());
  if (c.path.empty()) args.fail(folder ? "--dataset imagefolder:DIR needs a folder" : "--dataset images:FILE.csv needs a file");
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

std::string run_images_json(const ImageRun& r) {
  const ImageConfig& c = r.config;
  nlohmann::ordered_json source = {
      {"kind", c.kind},
      {"path", fs::absolute(c.path).lexically_normal().string()},
      {"test_fraction", c.test_fraction},
      {"seed", c.seed},
      {"augment", c.augment},
      {"rotation", c.rotation},
      {"normalize", c.normalize},
  };
  nlohmann::ordered_json j = {{"source", source},   {"channels", r.channels}, {"height", r.height},
                              {"width", r.width},   {"mean", r.mean},         {"std", r.stddev},
                              {"classes", r.classes}, {"fingerprint", r.fingerprint}};
  return j.dump(2) + "\n";
}

ImageRun load_run_images(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  KILN_CHECK(in, IoError, path, ": cannot read the run's image dataset description");
  std::stringstream text;
  text << in.rdbuf();
  try {
    const nlohmann::json j = nlohmann::json::parse(text.str());
    const nlohmann::json& s = j.at("source");
    ImageRun r;
    r.config.kind = s.at("kind").get<std::string>();
    r.config.path = s.at("path").get<std::string>();
    r.config.test_fraction = s.at("test_fraction").get<double>();
    r.config.seed = s.at("seed").get<uint64_t>();
    r.config.augment = s.at("augment").get<std::string>();
    r.config.rotation = s.at("rotation").get<double>();
    r.config.normalize = s.at("normalize").get<std::string>();
    r.channels = j.at("channels").get<int>();
    r.height = j.at("height").get<int64_t>();
    r.width = j.at("width").get<int64_t>();
    r.mean = j.at("mean").get<std::vector<double>>();
    r.stddev = j.at("std").get<std::vector<double>>();
    r.classes = j.at("classes").get<std::vector<std::string>>();
    r.fingerprint = j.at("fingerprint").get<std::string>();
    KILN_CHECK((r.channels == 1 || r.channels == 3) && r.height > 0 && r.width > 0 && r.mean.size() == r.stddev.size(),
               IoError, path, ": inconsistent image dataset description");
    r.config.channels = r.channels;
    r.config.height = r.height, r.config.width = r.width;
    return r;
  } catch (const nlohmann::json::exception& e) {
    throw IoError(path + ": malformed image dataset description (" + e.what() + ")");
  }
}

#ifndef KILN_HAVE_OPENCV

namespace {
[[noreturn]] void no_opencv(const ImageConfig& c) {
  throw ValueError(c.kind + ":" + c.path + ": this build of Kiln reads no images: it was configured without OpenCV "
                   "(KILN_OPENCV=OFF, or libopencv-imgcodecs-dev and libopencv-imgproc-dev missing; "
                   "installer/quickstart.sh installs them)");
}
}  // namespace

ImageData load_images(const ImageConfig& config, const ImageRun*) { no_opencv(config); }
std::string inspect_images(const ImageConfig& config) { no_opencv(config); }

#else

namespace {

struct Split {
  std::shared_ptr<data::ImageIndex> index;
  std::vector<int64_t> positions;
  std::shared_ptr<data::ImageCache> cache;
};

std::vector<int64_t> all_positions(const data::ImageIndex& index) {
  std::vector<int64_t> v(index.samples.size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(i);
  return v;
}

nlohmann::ordered_json skipped_json(const data::ImageIndex& index) {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (const data::SkippedFile& f : index.skipped) a.push_back({{"path", f.path}, {"reason", f.reason}});
  return a;
}

std::string size_text(const data::ImageStats& st) {
  std::vector<std::pair<int64_t, std::pair<int64_t, int64_t>>> by_count;
  for (const auto& [size, n] : st.sizes) by_count.push_back({n, size});
  std::sort(by_count.begin(), by_count.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string s;
  for (size_t i = 0; i < by_count.size() && i < 5; ++i)
    s += (i ? ", " : "") + std::to_string(by_count[i].second.first) + "x" + std::to_string(by_count[i].second.second) +
         " (" + std::to_string(by_count[i].first) + ")";
  if (by_count.size() > 5) s += ", ... (" + std::to_string(by_count.size()) + " sizes)";
  return s;
}

}  // namespace

ImageData load_images(const ImageConfig& config, const ImageRun* fitted) {
  const fs::path root(config.path);
  std::error_code ec;
  const bool presplit = config.kind == "imagefolder" && fs::is_directory(root / "train", ec) &&
                        fs::is_directory(root / "test", ec);
  const int64_t cache_bytes = config.cache_mb * (int64_t{1} << 20);
  const int threads = std::max(1, config.workers);
  auto scan = [&](const fs::path& dir, const std::vector<std::string>* classes) {
    return std::make_shared<data::ImageIndex>(config.kind == "imagefolder"
                                                  ? data::scan_image_folder(dir.string(), classes)
                                                  : data::read_image_manifest(dir.string()));
  };

  // The training index first: it settles the classes, channels and size.
  std::shared_ptr<data::ImageIndex> train_index = scan(presplit ? root / "train" : root,
                                                       fitted ? &fitted->classes : nullptr);
  // Verifying decodes every image once and fills the cache. The channel count and size may be
  // settled by the data only after that: the images are then cached as RGB and at full size, and
  // converted once they are known (RGB to grey only when every image was grey, so exactly).
  int channels = fitted ? fitted->channels : config.channels;
  auto shared_cache = std::make_shared<data::ImageCache>(cache_bytes);
  const int64_t given_height = fitted ? fitted->height : config.height;
  const int64_t given_width = fitted ? fitted->width : config.width;
  const int64_t short_side = given_height > 0 ? data::cache_short_side(given_height, given_width) : 0;
  const int verify_channels = channels ? channels : 3;
  data::ImageStats train_stats =
      data::verify_images(*train_index, threads, shared_cache.get(), verify_channels, short_side);
  KILN_CHECK(!train_index->samples.empty(), ValueError, train_index->source, ": no image could be read (",
             train_index->skipped.size(), " files skipped)");
  KILN_CHECK(fitted || train_index->classes.size() >= 2, ValueError, train_index->source, ": one class ('",
             train_index->classes.at(0), "'); classification needs at least two class folders");
  if (!channels) channels = train_stats.channels.size() == 1 && train_stats.channels.count(1) ? 1 : 3;
  int64_t height = given_height, width = given_width;
  if (!height) {
    auto most = std::max_element(train_stats.sizes.begin(), train_stats.sizes.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
    height = most->first.first, width = most->first.second;
  }
  if (channels != verify_channels || short_side == 0) {
    const int64_t side = data::cache_short_side(height, width);
    shared_cache->update(
        [&](const cv::Mat& m) {
          return data::shrink_to_short_side(channels == verify_channels ? m : data::to_channels(m, channels), side);
        },
        threads);
  }

  // The splits.
  Split train{train_index, {}, shared_cache}, test, val;
  if (presplit) {
    train.positions = all_positions(*train_index);
    test.index = scan(root / "test", &train_index->classes);
    data::verify_images(*test.index, threads);
    test.positions = all_positions(*test.index);
    test.cache = std::make_shared<data::ImageCache>(cache_bytes / 4);
    if (fs::is_directory(root / "val", ec)) {
      val.index = scan(root / "val", &train_index->classes);
      data::verify_images(*val.index, threads);
      val.positions = all_positions(*val.index);
      val.cache = std::make_shared<data::ImageCache>(cache_bytes / 4);
    }
  } else {
    auto [tr, te] = data::stratified_split(train_index->labels(), config.test_fraction, config.seed);
    train.positions = tr;
    test = {train_index, te, shared_cache};
  }

  ImageData d;
  ImageRun& r = d.run;
  r.config = config;
  r.channels = channels, r.height = height, r.width = width;
  r.classes = train_index->classes;
  r.fingerprint = train_index->fingerprint();
  data::ImageTransform transform;
  transform.height = height, transform.width = width, transform.channels = channels;
  transform.augment = data::parse_augment(config.augment), transform.rotation = config.rotation;
  if (fitted) {
    r.mean = fitted->mean, r.stddev = fitted->stddev;
  } else if (config.normalize == "imagenet" || (config.normalize == "auto" && channels == 3)) {
    r.mean.assign(data::kImageNetMean.begin(), data::kImageNetMean.end());
    r.stddev.assign(data::kImageNetStd.begin(), data::kImageNetStd.end());
    if (channels == 1) r.mean = {0.449}, r.stddev = {0.226};  // the means of ImageNet's three
  } else if (config.normalize == "computed" || config.normalize == "auto") {
    std::tie(r.mean, r.stddev) =
        data::channel_stats(data::ImageDataset(train.index, train.positions, transform, false, 0, train.cache));
  } else if (config.normalize != "none") {
    const size_t slash = config.normalize.find('/');
    auto numbers = [](const std::string& s) {
      std::vector<double> v;
      std::stringstream in(s);
      for (std::string item; std::getline(in, item, ',');) v.push_back(std::stod(item));
      return v;
    };
    r.mean = numbers(config.normalize.substr(0, slash)), r.stddev = numbers(config.normalize.substr(slash + 1));
    KILN_CHECK((r.mean.size() == 1 || static_cast<int>(r.mean.size()) == channels) && r.mean.size() == r.stddev.size(),
               ValueError, "--normalize gives ", r.mean.size(), " means and ", r.stddev.size(), " stds for ", channels,
               " channels");
  }
  transform.mean = r.mean, transform.stddev = r.stddev;
  auto make = [&](const Split& s, bool train_mode) -> std::shared_ptr<const data::Dataset> {
    if (!s.index) return nullptr;
    return std::make_shared<data::ImageDataset>(s.index, s.positions, transform, train_mode, config.seed, s.cache);
  };
  if (!fitted) d.train = make(train, true);
  d.test = make(test, false);
  d.validation = make(val, false);
  for (const auto* idx : {train_index.get(), test.index != train_index ? test.index.get() : nullptr, val.index.get()})
    if (idx)
      for (const data::SkippedFile& f : idx->skipped) d.skipped.push_back(f.path + ": " + f.reason);

  std::vector<int64_t> counts(r.classes.size(), 0);
  for (int64_t p : train.positions) ++counts[static_cast<size_t>(train_index->samples[static_cast<size_t>(p)].label)];
  nlohmann::ordered_json skipped = skipped_json(*train_index);
  if (test.index != train_index)
    for (const auto& e : skipped_json(*test.index)) skipped.push_back(e);
  if (val.index)
    for (const auto& e : skipped_json(*val.index)) skipped.push_back(e);
  d.summary = {
      {"kind", config.kind},
      {"path", config.path},
      {"classes", r.classes},
      {"class_counts", counts},
      {"samples", {{"train", train.positions.size()}, {"validation", val.positions.size()},
                   {"test", test.positions.size()}}},
      {"split", presplit ? "folders" : "stratified"},
      {"channels", channels},
      {"image_size", {height, width}},
      {"augment", config.augment},
      {"normalize", {{"mean", r.mean}, {"std", r.stddev}}},
      {"image_sizes", size_text(train_stats)},
      {"bit_depths", [&] {
         nlohmann::ordered_json j = nlohmann::ordered_json::object();
         for (const auto& [bits, n] : train_stats.depths) j[std::to_string(bits)] = n;
         return j;
       }()},
      {"hidden", train_index->hidden},
      {"skipped_count", d.skipped.size()},
      {"skipped", skipped},
      {"fingerprint", r.fingerprint},
  };
  return d;
}

std::string inspect_images(const ImageConfig& config) {
  std::ostringstream out;
  const fs::path root(config.path);
  std::error_code ec;
  const bool presplit = config.kind == "imagefolder" && fs::is_directory(root / "train", ec) &&
                        fs::is_directory(root / "test", ec);
  std::vector<std::string> parts = presplit ? std::vector<std::string>{"train", "test", "val"}
                                            : std::vector<std::string>{""};
  std::vector<std::string> classes;
  for (const std::string& part : parts) {
    const fs::path dir = part.empty() ? root : root / part;
    if (!part.empty() && !fs::is_directory(dir, ec)) continue;
    data::ImageIndex index = config.kind == "imagefolder"
                                 ? data::scan_image_folder(dir.string(), classes.empty() ? nullptr : &classes)
                                 : data::read_image_manifest(dir.string());
    if (classes.empty()) classes = index.classes;
    const data::ImageStats st = data::verify_images(index, std::max(1, config.workers));
    out << dir.string() << (part.empty() ? "" : " (" + part + " split)") << ": " << index.samples.size()
        << " images, " << index.classes.size() << " classes, " << index.skipped.size() << " files skipped, "
        << index.hidden << " hidden entries\n";
    const std::vector<int64_t> counts = index.class_counts();
    for (size_t k = 0; k < index.classes.size(); ++k)
      out << "  class " << k << " '" << index.classes[k] << "': " << counts[k] << "\n";
    out << "  sizes (height x width): " << size_text(st) << "\n  channels:";
    for (const auto& [c, n] : st.channels) out << " " << c << " (" << n << ")";
    out << "\n  bit depth:";
    for (const auto& [b, n] : st.depths) out << " " << b << " (" << n << ")";
    out << "\n  fingerprint " << index.fingerprint() << "\n";
    for (const data::SkippedFile& f : index.skipped) out << "  skipped " << f.path << ": " << f.reason << "\n";
  }
  return out.str();
}

#endif

}  // namespace kiln::cli
