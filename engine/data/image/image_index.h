// The file index of an image dataset: which files hold which class, found by scanning a folder
// the way torchvision's ImageFolder does (root/<class>/**/<image>) or read from a manifest CSV
// (path,label). Files that cannot be used are kept in the index with the reason, so that a run's
// summary can name every one of them. Built only with KILN_OPENCV.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace kiln::data {

struct ImageSample {
  std::string path;    // as found (root joined with the relative path)
  int64_t label = 0;   // index into ImageIndex::classes
  int64_t bytes = 0;   // file size
  int64_t mtime_ns = 0;  // last modification, nanoseconds since 1970-01-01 UTC (st_mtim)
};

struct SkippedFile {
  std::string path;
  std::string reason;  // e.g. "empty file (0 bytes)", "truncated JPEG ...", "not an image file name"
};

struct ImageIndex {
  std::string source;                  // the folder or manifest it was read from
  std::vector<std::string> classes;    // sorted by name (byte order, as torchvision's sorted())
  std::vector<ImageSample> samples;    // in class order, then by path
  std::vector<SkippedFile> skipped;    // files left out, with the reason (verify_images adds undecodable ones)
  int64_t hidden = 0;                  // hidden files and folders (names starting with '.') not looked into
  int64_t non_images = 0;              // files whose extension is not an image's (is_image_file_name)
  std::vector<int64_t> labels() const;
  std::vector<int64_t> class_counts() const;
  // FNV-1a 64 of every sample's path relative to `source`, size and label, in order, as 16 hex
  // digits: changes when a file is added, removed, renamed, relabelled or changes size.
  std::string fingerprint() const;
};

// Scans root/<class>/... : each non-hidden subfolder of root is a class (sorted by name), and
// every image file below it, at any depth, is a sample of that class (symlinks followed). Hidden
// entries are counted, not entered; non-image files are counted and listed as skipped. `classes`,
// when given, fixes the class list (a test/ split uses train/'s): a folder not among them is an
// IoError. Throws IoError naming the folder when it is missing or not a folder, holds no class
// folders, or a class folder holds no image (torchvision's ImageFolder refuses that too).
ImageIndex scan_image_folder(const std::string& root, const std::vector<std::string>* classes = nullptr);

// Reads a manifest CSV with a header naming the columns `path` and `label` (others ignored):
// paths relative to the CSV's folder (or absolute), classes the label's distinct values sorted
// (numerically when all are integers). A path that does not exist or is not an image file name
// is listed as skipped. IoError naming the file (and line) for a missing column, an empty path,
// and csv_reader.h's errors.
ImageIndex read_image_manifest(const std::string& csv_path);

// What verify_images saw of the decodable samples: {(height, width): count} after the EXIF
// orientation, channels in the file {1|3|4: count}, bit depths {8|16: count}.
struct ImageStats {
  std::map<std::pair<int64_t, int64_t>, int64_t> sizes;
  std::map<int, int64_t> channels, depths;
  int64_t bytes = 0;  // of the decodable files
};
// Decodes every sample once on `threads` threads (at least 1) and moves those that fail
// (decode_image's errors) to `skipped` with the reason, keeping the order of the others. Decoding
// is the loader's (image_decode.h read_image with a reduced JPEG scale): with a cache, the images
// converted to `channels` and downscaled to cache_short_side (image_cache.h), exactly as an
// uncached ImageDataset sample reads them, are kept in it under their position in the final
// index while it has room; without one, JPEGs are decoded at 1/8 scale. The stats are the files'
// full sizes either way.
class ImageCache;
ImageStats verify_images(ImageIndex& index, int threads, ImageCache* cache = nullptr, int channels = 3,
                         int64_t cache_short_side = 0);

}  // namespace kiln::data
