#include "engine/data/image/image_index.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <set>
#include <thread>

#include <sys/stat.h>

#include "engine/core/error.h"
#include "engine/data/csv_reader.h"
#include "engine/data/image/image_cache.h"
#include "engine/data/image/image_decode.h"

namespace kiln::data {

namespace fs = std::filesystem;

namespace {

bool hidden(const fs::path& p) {
  const std::string n = p.filename().string();
  return !n.empty() && n[0] == '.';
}

// A sample of `label` at p with its size and modification time (one stat; 0 and 0 when it fails).
ImageSample sample_at(const fs::path& p, int64_t label) {
  ImageSample s{p.string(), label, 0, 0};
  struct stat st {};
  if (::stat(p.c_str(), &st) == 0) {
    s.bytes = static_cast<int64_t>(st.st_size);
    s.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  }
  return s;
}

// Every image below `dir` (recursively, symlinks followed, hidden entries counted and not
// entered), sorted by path.
void scan_class(const fs::path& dir, int64_t label, ImageIndex& index) {
  std::vector<ImageSample> found;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::follow_directory_symlink, ec), end;
  KILN_CHECK(!ec, IoError, dir.string(), ": cannot list the folder (", ec.message(), ")");
  for (; it != end; it.increment(ec)) {
    KILN_CHECK(!ec, IoError, dir.string(), ": cannot list the folder (", ec.message(), ")");
    const fs::path& p = it->path();
    if (hidden(p)) {
      ++index.hidden;
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (it->is_directory(ec)) continue;
    if (!is_image_file_name(p.string())) {
      ++index.non_images;
      index.skipped.push_back({p.string(), "not an image file name (" +
                                               (p.has_extension() ? p.extension().string() : std::string("no extension")) +
                                               ")"});
      continue;
    }
    found.push_back(sample_at(p, label));
  }
  std::sort(found.begin(), found.end(), [](const ImageSample& a, const ImageSample& b) { return a.path < b.path; });
  index.samples.insert(index.samples.end(), found.begin(), found.end());
}

// FNV-1a 64 (Fowler, Noll, Vo), as 16 hex digits.
struct Fnv {
  uint64_t h = 0xcbf29ce484222325ull;
  void add(const std::string& s) {
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
    h = (h ^ 0xFF) * 0x100000001b3ull;  // separator
  }
};

}  // namespace

std::vector<int64_t> ImageIndex::labels() const {
  std::vector<int64_t> v;
  v.reserve(samples.size());
  for (const ImageSample& s : samples) v.push_back(s.label);
  return v;
}

std::vector<int64_t> ImageIndex::class_counts() const {
  std::vector<int64_t> n(classes.size(), 0);
  for (const ImageSample& s : samples) ++n[static_cast<size_t>(s.label)];
  return n;
}

std::string ImageIndex::fingerprint() const {
  Fnv f;
  std::error_code ec;
  const fs::path base = fs::is_directory(source, ec) ? fs::path(source) : fs::path(source).parent_path();
  for (const ImageSample& s : samples) {
    f.add(fs::path(s.path).lexically_relative(base).string());
    f.add(std::to_string(s.bytes));
    f.add(std::to_string(s.label));
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(f.h));
  return hex;
}

ImageIndex scan_image_folder(const std::string& root, const std::vector<std::string>* classes) {
  const fs::path dir(root);
  std::error_code ec;
  KILN_CHECK(fs::exists(dir, ec), IoError, root, ": no such folder");
  KILN_CHECK(fs::is_directory(dir, ec), IoError, root, ": not a folder (an image folder holds one subfolder per class)");
  ImageIndex index;
  index.source = root;
  std::vector<std::string> found;
  for (fs::directory_iterator it(dir, ec), end; it != end; it.increment(ec)) {
    KILN_CHECK(!ec, IoError, root, ": cannot list the folder (", ec.message(), ")");
    if (hidden(it->path())) {
      ++index.hidden;
      continue;
    }
    if (it->is_directory(ec)) {
      found.push_back(it->path().filename().string());
    } else {
      ++index.non_images;
      index.skipped.push_back({it->path().string(), "a file beside the class folders (each class is a subfolder)"});
    }
  }
  KILN_CHECK(!ec, IoError, root, ": cannot list the folder (", ec.message(), ")");
  std::sort(found.begin(), found.end());
  KILN_CHECK(!found.empty(), IoError, root, ": no class folders (an image folder holds one subfolder per class, "
             "e.g. ", root, "/cat/1.jpg)");
  if (classes) {
    for (const std::string& c : found)
      KILN_CHECK(std::find(classes->begin(), classes->end(), c) != classes->end(), IoError, (dir / c).string(),
                 ": class '", c, "' is not among the training split's classes");
    index.classes = *classes;
  } else {
    index.classes = found;
  }
  for (const std::string& c : found) {
    const int64_t label = std::find(index.classes.begin(), index.classes.end(), c) - index.classes.begin();
    const size_t before = index.samples.size();
    scan_class(dir / c, label, index);
    KILN_CHECK(index.samples.size() > before, IoError, (dir / c).string(), ": class folder '", c,
               "' holds no image (.jpg .jpeg .png .bmp .tif .tiff .webp .ppm .pgm); add images or remove it");
  }
  return index;
}

ImageIndex read_image_manifest(const std::string& csv_path) {
  const CsvTable t = read_csv(csv_path);
  auto column = [&](const char* name) {
    auto it = std::find(t.columns.begin(), t.columns.end(), name);
    KILN_CHECK(it != t.columns.end(), IoError, csv_path, ":1: an image manifest needs the columns 'path' and 'label'",
               " (header: ", [&] {
                 std::string h;
                 for (const std::string& c : t.columns) h += (h.empty() ? "" : ",") + c;
                 return h;
               }(), ")");
    return static_cast<size_t>(it - t.columns.begin());
  };
  const size_t pc = column("path"), lc = column("label");
  ImageIndex index;
  index.source = csv_path;
  bool all_integers = true;
  std::set<std::string> values;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const std::string& label = t.rows[r][lc];
    KILN_CHECK(!label.empty(), IoError, csv_path, ":", t.lines[r], ": empty label");
    KILN_CHECK(!t.rows[r][pc].empty(), IoError, csv_path, ":", t.lines[r], ": empty path");
    values.insert(label);
    all_integers = all_integers && label.find_first_not_of("0123456789") == std::string::npos && label.size() < 18;
  }
  index.classes.assign(values.begin(), values.end());
  if (all_integers)
    std::sort(index.classes.begin(), index.classes.end(),
              [](const std::string& a, const std::string& b) { return std::stoll(a) < std::stoll(b); });
  const fs::path base = fs::path(csv_path).parent_path();
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const fs::path p = fs::path(t.rows[r][pc]).is_absolute() ? fs::path(t.rows[r][pc]) : base / t.rows[r][pc];
    const std::string where = csv_path + ":" + std::to_string(t.lines[r]) + ": ";
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) {
      index.skipped.push_back({p.string(), where + (fs::exists(p, ec) ? "not a file" : "no such file")});
      continue;
    }
    if (!is_image_file_name(p.string())) {
      ++index.non_images;
      index.skipped.push_back({p.string(), where + "not an image file name"});
      continue;
    }
    const int64_t label =
        std::find(index.classes.begin(), index.classes.end(), t.rows[r][lc]) - index.classes.begin();
    index.samples.push_back(sample_at(p, label));
  }
  return index;
}

ImageStats verify_images(ImageIndex& index, int threads, ImageCache* cache, int channels, int64_t short_side) {
  const size_t n = index.samples.size();
  std::vector<std::string> errors(n);
  std::vector<int64_t> h(n), w(n);
  std::vector<int> ch(n), depth(n);
  std::vector<cv::Mat> kept(cache ? n : 0);
  std::atomic<size_t> next{0};
  std::atomic<int64_t> reserved{0};
  auto work = [&] {
    for (size_t i; (i = next++) < n;) {
      try {
        // The loader's decoder (image_decode.h): JPEGs through libjpeg-turbo, at the reduced scale
        // the cache keeps (or, with no cache, the smallest: every byte is still entropy-decoded, so
        // a corrupt file still fails), so that the first pass costs what an uncached epoch does.
        ImageInfo info;
        cv::Mat m = read_image(index.samples[i].path, channels, cache ? short_side : 1, &info);
        h[i] = info.height, w[i] = info.width, ch[i] = info.channels, depth[i] = info.depth;
        if (cache) {
          cv::Mat small = shrink_to_short_side(m, short_side);
          const int64_t b = static_cast<int64_t>(small.total() * small.elemSize());
          if (reserved.fetch_add(b) + b <= cache->limit()) kept[i] = small;
        }
      } catch (const Error& e) {
        errors[i] = e.what();
      } catch (const std::exception& e) {
        errors[i] = index.samples[i].path + ": " + e.what();
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < std::max(1, threads); ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  ImageStats stats;
  std::vector<ImageSample> good;
  for (size_t i = 0; i < n; ++i) {
    if (!errors[i].empty()) {
      std::string reason = errors[i];
      const std::string prefix = index.samples[i].path + ": ";
      if (reason.rfind(prefix, 0) == 0) reason = reason.substr(prefix.size());
      index.skipped.push_back({index.samples[i].path, reason});
      continue;
    }
    ++stats.sizes[{h[i], w[i]}];
    ++stats.channels[ch[i]];
    ++stats.depths[depth[i]];
    stats.bytes += index.samples[i].bytes;
    if (cache && !kept[i].empty()) cache->put(static_cast<int64_t>(good.size()), kept[i]);
    good.push_back(index.samples[i]);
  }
  index.samples = std::move(good);
  return stats;
}

}  // namespace kiln::data
