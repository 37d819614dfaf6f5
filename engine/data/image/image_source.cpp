// The OpenCV half of image_source.h (built with KILN_OPENCV; image_source.cpp has the rest).
#include "engine/data/image_source.h"

#include <algorithm>
#include <filesystem>
#include <opencv2/imgproc.hpp>
#include <sstream>
#include <sys/stat.h>

#include "engine/core/error.h"
#include "engine/core/plural.h"
#include "engine/data/image/image_dataset.h"
#include "engine/data/image/image_decode.h"
#include "engine/data/image/image_index_store.h"
#include "engine/data/tabular.h"  // stratified_split

namespace kiln::data {

namespace fs = std::filesystem;


namespace {

struct Split {
  std::shared_ptr<ImageIndex> index;
  std::vector<int64_t> positions;
  std::shared_ptr<ImageCache> cache;
};

std::vector<int64_t> all_positions(const ImageIndex& index) {
  std::vector<int64_t> v(index.samples.size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(i);
  return v;
}

nlohmann::ordered_json skipped_json(const ImageIndex& index) {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (const SkippedFile& f : index.skipped) a.push_back({{"path", f.path}, {"reason", f.reason}});
  return a;
}

std::string size_text(const ImageStats& st) {
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

ImageData load_images(const ImageConfig& config, const ImageRun* fitted, IndexStore* store, bool rescan) {
  const fs::path root(config.path);
  std::error_code ec;
  const bool presplit = config.kind == "imagefolder" && fs::is_directory(root / "train", ec) &&
                        fs::is_directory(root / "test", ec);
  const int64_t cache_bytes = config.cache_mb * (int64_t{1} << 20);
  const int threads = std::max(1, config.workers);
  ImageData d;
  // Scans (or reads) and verifies one folder's index, or takes it from the store.
  auto indexed = [&](const fs::path& dir, const std::vector<std::string>* classes, ImageCache* cache, int channels,
                     int64_t short_side) {
    if (config.kind == "imagefolder") {
      IndexedFolder f = index_image_folder(dir.string(), classes, store, rescan, threads, cache, channels, short_side);
      d.index_reused += f.reused;
      if (!f.note.empty()) d.notes.push_back(f.note);
      return std::make_pair(f.index, f.stats);
    }
    auto index = std::make_shared<ImageIndex>(read_image_manifest(dir.string()));
    ImageStats stats = verify_images(*index, threads, cache, channels, short_side);
    return std::make_pair(index, stats);
  };

  // The training index first: it settles the classes, channels and size.
  // Verifying decodes every image once and fills the cache. The channel count and size may be
  // settled by the data only after that: the images are then cached as RGB and at full size, and
  // converted once they are known (RGB to grey only when every image was grey, so exactly).
  int channels = fitted ? fitted->channels : config.channels;
  auto shared_cache = std::make_shared<ImageCache>(cache_bytes);
  const int64_t given_height = fitted ? fitted->height : config.height;
  const int64_t given_width = fitted ? fitted->width : config.width;
  const int64_t short_side = given_height > 0 ? cache_short_side(given_height, given_width) : 0;
  const int verify_channels = channels ? channels : 3;
  auto train_indexed = indexed(presplit ? root / "train" : root, fitted ? &fitted->classes : nullptr,
                               shared_cache.get(), verify_channels, short_side);
  std::shared_ptr<ImageIndex> train_index = train_indexed.first;
  const ImageStats& train_stats = train_indexed.second;
  KILN_CHECK(!train_index->samples.empty(), ValueError, train_index->source, ": no image could be read (",
             count_of(static_cast<long long>(train_index->skipped.size()), "file"), " skipped)");
  KILN_CHECK(fitted || train_index->classes.size() >= 2, ValueError, train_index->source, ": one class ('",
             train_index->classes.at(0), "'); classification needs at least two class folders");
  if (!channels) channels = train_stats.channels.size() == 1 && train_stats.channels.count(1) ? 1 : 3;
  int64_t height = given_height, width = given_width;
  if (!height) {
    // The most common size; among sizes as common (every photo its own size), the most pixels, so
    // that one tiny image does not set the input of all the others.
    auto most = std::max_element(train_stats.sizes.begin(), train_stats.sizes.end(), [](const auto& a, const auto& b) {
      return std::pair{a.second, a.first.first * a.first.second} < std::pair{b.second, b.first.first * b.first.second};
    });
    height = most->first.first, width = most->first.second;
    if (std::min(height, width) > kDefaultShortSide) {  // torchvision's Resize(224): the long side truncated
      int64_t& s = height < width ? height : width;
      int64_t& l = height < width ? width : height;
      l = kDefaultShortSide * l / s, s = kDefaultShortSide;
    }
  }
  if (channels != verify_channels || short_side == 0) {
    const int64_t side = cache_short_side(height, width);
    shared_cache->update(
        [&](const cv::Mat& m) {
          return shrink_to_short_side(channels == verify_channels ? m : to_channels(m, channels), side);
        },
        threads);
  }

  // The splits.
  Split train{train_index, {}, shared_cache}, test, val;
  if (presplit) {
    train.positions = all_positions(*train_index);
    test.index = indexed(root / "test", &train_index->classes, nullptr, 3, 0).first;
    test.positions = all_positions(*test.index);
    test.cache = std::make_shared<ImageCache>(cache_bytes / 4);
    if (fs::is_directory(root / "val", ec)) {
      val.index = indexed(root / "val", &train_index->classes, nullptr, 3, 0).first;
      val.positions = all_positions(*val.index);
      val.cache = std::make_shared<ImageCache>(cache_bytes / 4);
    }
  } else {
    auto [tr, te] = stratified_split(train_index->labels(), config.test_fraction, config.seed);
    train.positions = tr;
    test = {train_index, te, shared_cache};
  }

  ImageRun& r = d.run;
  r.config = config;
  r.channels = channels, r.height = height, r.width = width;
  r.classes = train_index->classes;
  r.fingerprint = train_index->fingerprint();
  ImageTransform transform;
  transform.height = height, transform.width = width, transform.channels = channels;
  transform.augment = parse_augment(config.augment), transform.rotation = config.rotation;
  if (fitted) {
    r.mean = fitted->mean, r.stddev = fitted->stddev;
  } else if (config.normalize == "imagenet" || (config.normalize == "auto" && channels == 3)) {
    r.mean.assign(kImageNetMean.begin(), kImageNetMean.end());
    r.stddev.assign(kImageNetStd.begin(), kImageNetStd.end());
    if (channels == 1) r.mean = {0.449}, r.stddev = {0.226};  // the means of ImageNet's three
  } else if (config.normalize == "computed" || config.normalize == "auto") {
    ChannelStatsKey key{presplit ? (root / "train").string() : root.string(), r.fingerprint, channels, height, width,
                        config.seed, presplit ? 0.0 : config.test_fraction, train.positions};
    std::tie(r.mean, r.stddev) = stored_channel_stats(
        config.kind == "imagefolder" ? store : nullptr, rescan, key,
        [&] { return channel_stats(ImageDataset(train.index, train.positions, transform, false, 0, train.cache)); },
        d.notes);
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
  auto make = [&](const Split& s, bool train_mode) -> std::shared_ptr<const Dataset> {
    if (!s.index) return nullptr;
    return std::make_shared<ImageDataset>(s.index, s.positions, transform, train_mode, config.seed, s.cache);
  };
  if (!fitted) d.train = make(train, true);
  d.test = make(test, false);
  d.validation = make(val, false);
  for (const auto* idx : {train_index.get(), test.index != train_index ? test.index.get() : nullptr, val.index.get()})
    if (idx)
      for (const SkippedFile& f : idx->skipped) d.skipped.push_back(f.path + ": " + f.reason);

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
    ImageIndex index = config.kind == "imagefolder"
                                 ? scan_image_folder(dir.string(), classes.empty() ? nullptr : &classes)
                                 : read_image_manifest(dir.string());
    if (classes.empty()) classes = index.classes;
    const ImageStats st = verify_images(index, std::max(1, config.workers));
    out << dir.string() << (part.empty() ? "" : " (" + part + " split)") << ": " << index.samples.size()
        << " images, " << index.classes.size() << " classes, "
        << count_of(static_cast<long long>(index.skipped.size()), "file") << " skipped, "
        << index.hidden << " hidden entries\n";
    const std::vector<int64_t> counts = index.class_counts();
    for (size_t k = 0; k < index.classes.size(); ++k)
      out << "  class " << k << " '" << index.classes[k] << "': " << counts[k] << "\n";
    out << "  sizes (height x width): " << size_text(st) << "\n  channels:";
    for (const auto& [c, n] : st.channels) out << " " << c << " (" << n << ")";
    out << "\n  bit depth:";
    for (const auto& [b, n] : st.depths) out << " " << b << " (" << n << ")";
    out << "\n  fingerprint " << index.fingerprint() << "\n";
    for (const SkippedFile& f : index.skipped) out << "  skipped " << f.path << ": " << f.reason << "\n";
  }
  return out.str();
}


Thumbnail image_thumbnail(const Dataset& dataset, int64_t i, int64_t max_side) {
  const auto* images = dynamic_cast<const ImageDataset*>(&dataset);
  if (!images) return {};
  cv::Mat m = images->image(i);
  if (m.depth() == CV_16U) m.convertTo(m, CV_8U, 255.0 / 65535.0);
  else if (m.depth() != CV_8U) m.convertTo(m, CV_8U);
  const int longer = std::max(m.rows, m.cols);
  if (max_side > 0 && longer > max_side) {
    const double f = static_cast<double>(max_side) / longer;
    cv::Mat small;
    cv::resize(m, small, cv::Size(std::max(1, static_cast<int>(m.cols * f + 0.5)), std::max(1, static_cast<int>(m.rows * f + 0.5))),
               0, 0, cv::INTER_AREA);
    m = small;
  }
  if (!m.isContinuous()) m = m.clone();
  Thumbnail t;
  t.height = m.rows, t.width = m.cols, t.channels = m.channels();
  t.pixels.assign(m.data, m.data + static_cast<size_t>(m.rows) * static_cast<size_t>(m.cols) * static_cast<size_t>(m.channels()));
  return t;
}

std::string image_sample_path(const Dataset& dataset, int64_t i) {
  const auto* images = dynamic_cast<const ImageDataset*>(&dataset);
  if (!images) return {};
  KILN_CHECK(i >= 0 && i < images->size(), IndexError, "image sample ", i, " out of range [0, ", images->size(), ")");
  return images->index().samples.at(static_cast<size_t>(images->positions()[static_cast<size_t>(i)])).path;
}

std::vector<int64_t> image_labels(const Dataset& dataset) {
  const auto* images = dynamic_cast<const ImageDataset*>(&dataset);
  if (!images) return {};
  std::vector<int64_t> labels;
  labels.reserve(images->positions().size());
  for (int64_t p : images->positions()) labels.push_back(images->index().samples.at(static_cast<size_t>(p)).label);
  return labels;
}

std::vector<std::string> changed_image_files(const std::vector<const Dataset*>& datasets) {
  std::vector<const ImageIndex*> seen;
  std::vector<std::string> changed;
  for (const Dataset* d : datasets) {
    while (const auto* subset = dynamic_cast<const Subset*>(d)) d = &subset->dataset();
    const auto* images = dynamic_cast<const ImageDataset*>(d);
    if (!images || std::find(seen.begin(), seen.end(), &images->index()) != seen.end()) continue;
    seen.push_back(&images->index());
    for (const ImageSample& s : images->index().samples) {
      struct stat st {};
      if (::stat(s.path.c_str(), &st) != 0) {
        changed.push_back(s.path + " (gone)");
        continue;
      }
      const int64_t mtime = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
      if (static_cast<int64_t>(st.st_size) != s.bytes)
        changed.push_back(s.path + " (" + std::to_string(s.bytes) + " bytes when indexed, " + std::to_string(st.st_size) + " now)");
      else if (mtime != s.mtime_ns)
        changed.push_back(s.path + " (modified since it was indexed)");
    }
  }
  return changed;
}

}  // namespace kiln::data
