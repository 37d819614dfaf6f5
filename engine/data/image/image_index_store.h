// The verified file index of an image folder kept between openings (in an IndexStore: Kiln
// Studio's project, projects/index_store.h), so that reopening a folder of 100,000 images neither
// lists nor decodes its files again. Built only with KILN_OPENCV.
//
// What is stored, under index_store_key(folder, classes): the index as verify_images left it
// (every sample's path relative to the folder, label, size and modification time; the skipped
// files with their reasons, the undecodable ones included; the hidden and non-image counts), the
// verification's ImageStats, and the state of every folder the scan walks (its path relative to
// the folder, modification time and number of entries).
//
// Note [What the folder check misses]
// Reuse is decided from the folders alone: one stat and one listing per folder, never a stat or a
// read of a file. Adding, removing or renaming a file or a class folder changes its parent
// folder's modification time (and its entry count, for file systems with coarse timestamps), so
// it is seen. Not seen: a file rewritten in place under the same name, with the same size or not
// (a photo edited and saved, a file truncated or corrupted: its folder does not change), and a
// change behind a symlinked file. The stored sizes and times would tell them, but checking them
// is a stat per file, what the cache saves. The Dataset panel's Rescan action scans and verifies
// the folder again (index_image_folder's `rescan`) for those.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/data/image/image_index.h"
#include "engine/data/index_store.h"

namespace kiln::data {

class ImageCache;

// One folder the scan of an image folder walks (the folder itself and every non-hidden folder
// below it, symlinks followed).
struct FolderState {
  std::string path;      // relative to the image folder, '/'-separated; "" for the folder itself
  int64_t mtime_ns = 0;  // st_mtim, nanoseconds since 1970-01-01 UTC
  int64_t entries = 0;   // entries listed in it, hidden ones included
  bool operator==(const FolderState&) const = default;
};
// The states of `root` and of every non-hidden folder below it (at most 64 levels deep), sorted
// by path. IoError naming a folder that cannot be listed.
std::vector<FolderState> folder_states(const std::string& root);
// "" when `now` equals `stored`, else what changed, in words ("folder 'cat' changed (12 -> 13
// entries)", "folder 'dog' is new", "folder 'bird' is gone").
std::string folder_change(const std::vector<FolderState>& stored, const std::vector<FolderState>& now);

struct StoredIndex {
  ImageIndex index;
  ImageStats stats;
  std::vector<FolderState> folders;
};
// The key of a folder's index: "imagefolder:" + its absolute, normal path, plus the fixed class
// list of a test/ or val/ split (scan_image_folder's `classes`), which changes what it indexes.
std::string index_store_key(const std::string& folder, const std::vector<std::string>* classes);
// The stored text (JSON, format 1): paths relative to stored.index.source.
std::string stored_index_text(const StoredIndex& stored);
// Reads stored_index_text's text back for the folder `root` (paths joined to it). IoError
// "the stored file index of ROOT is damaged: ..." for text that is not such a document (bad
// JSON, a missing field, a label outside the classes, a negative size, another format).
StoredIndex parse_stored_index(const std::string& text, const std::string& root);

// An image folder indexed and verified, or its index taken from a store.
struct IndexedFolder {
  std::shared_ptr<ImageIndex> index;
  ImageStats stats;
  bool reused = false;  // from the store: nothing below the folder was read or decoded
  std::string note;     // that it was reused, why it was not, or a store that failed ("" when none asked)
};
// scan_image_folder(folder, classes) then verify_images(index, threads, cache, channels,
// short_side), or, with a store, the stored index when its folders are unchanged (folder_states;
// see Note [What the folder check misses]): no file is then opened and the cache stays empty (the
// loader fills it on the first epoch). A scanned index is saved to the store, replacing the old
// one. `rescan` ignores the stored index. A stored index that is damaged, or a store that fails to
// load or save, is never an error: the folder is scanned and `note` says so. Errors otherwise as
// scan_image_folder's.
IndexedFolder index_image_folder(const std::string& folder, const std::vector<std::string>* classes, IndexStore* store,
                                 bool rescan, int threads, ImageCache* cache = nullptr, int channels = 3,
                                 int64_t short_side = 0);

// Normalize's per-channel mean and std "computed from the training split" (image_dataset.h
// channel_stats, which decodes every training image) kept in the store beside the folder's index,
// so that a reopened grey folder is not decoded for them either. Stored under the folder, the
// channels, the size and the split's seed and test fraction, with the training index's
// fingerprint and a hash of the split's positions, which must match to be used. `compute` runs
// when nothing matching is stored (or `rescan`), and its result is stored; a damaged entry or a
// failing store only adds a note, as index_image_folder.
struct ChannelStatsKey {
  std::string folder, fingerprint;
  int channels = 3;
  int64_t height = 0, width = 0;
  uint64_t seed = 0;
  double test_fraction = 0;
  std::vector<int64_t> positions;
};
std::pair<std::vector<double>, std::vector<double>> stored_channel_stats(
    IndexStore* store, bool rescan, const ChannelStatsKey& key,
    const std::function<std::pair<std::vector<double>, std::vector<double>>()>& compute,
    std::vector<std::string>& notes);

}  // namespace kiln::data
