#include "engine/data/image/image_index_store.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include "engine/core/error.h"

namespace kiln::data {

namespace fs = std::filesystem;

namespace {

constexpr int kFormat = 1;
constexpr int kMaxDepth = 64;

bool hidden(const fs::path& p) {
  const std::string n = p.filename().string();
  return !n.empty() && n[0] == '.';
}

void walk(const fs::path& dir, const std::string& rel, int depth, std::vector<FolderState>& out) {
  FolderState f;
  f.path = rel;
  struct stat st {};
  KILN_CHECK(::stat(dir.c_str(), &st) == 0, IoError, dir.string(), ": cannot read the folder's state");
  f.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  std::vector<std::string> subdirs;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; it != end; it.increment(ec)) {
    ++f.entries;
    std::error_code type_ec;
    if (!hidden(it->path()) && it->is_directory(type_ec)) subdirs.push_back(it->path().filename().string());
  }
  KILN_CHECK(!ec, IoError, dir.string(), ": cannot list the folder (", ec.message(), ")");
  out.push_back(f);
  if (depth >= kMaxDepth) return;
  std::sort(subdirs.begin(), subdirs.end());
  for (const std::string& d : subdirs) walk(dir / d, rel.empty() ? d : rel + "/" + d, depth + 1, out);
}

// The path of a stored file: relative to root when below it, else as is.
std::string relative_to(const std::string& path, const std::string& root) {
  const std::string prefix = root.empty() || root.back() == '/' ? root : root + "/";
  return path.rfind(prefix, 0) == 0 ? path.substr(prefix.size()) : path;
}

std::string joined(const std::string& root, const std::string& rel) {
  return fs::path(rel).is_absolute() ? rel : (fs::path(root) / rel).string();
}

}  // namespace

std::vector<FolderState> folder_states(const std::string& root) {
  std::vector<FolderState> out;
  walk(fs::path(root), "", 0, out);
  std::sort(out.begin(), out.end(), [](const FolderState& a, const FolderState& b) { return a.path < b.path; });
  return out;
}

std::string folder_change(const std::vector<FolderState>& stored, const std::vector<FolderState>& now) {
  std::map<std::string, const FolderState*> before;
  for (const FolderState& f : stored) before[f.path] = &f;
  auto name = [](const std::string& p) { return p.empty() ? std::string("the folder itself") : "folder '" + p + "'"; };
  for (const FolderState& f : now) {
    auto it = before.find(f.path);
    if (it == before.end()) return name(f.path) + " is new";
    if (it->second->entries != f.entries)
      return name(f.path) + " changed (" + std::to_string(it->second->entries) + " -> " + std::to_string(f.entries) +
             " entries)";
    if (it->second->mtime_ns != f.mtime_ns) return name(f.path) + " changed (modified since it was indexed)";
    before.erase(it);
  }
  if (!before.empty()) return name(before.begin()->first) + " is gone";
  return "";
}

std::string index_store_key(const std::string& folder, const std::vector<std::string>* classes) {
  std::string key = "imagefolder:" + fs::absolute(folder).lexically_normal().string();
  if (classes) {
    key += "\nclasses:";
    for (const std::string& c : *classes) key += "\n" + c;
  }
  return key;
}

std::string stored_index_text(const StoredIndex& s) {
  const ImageIndex& ix = s.index;
  nlohmann::json samples = nlohmann::json::array(), skipped = nlohmann::json::array(), folders = nlohmann::json::array();
  for (const ImageSample& x : ix.samples) samples.push_back({relative_to(x.path, ix.source), x.label, x.bytes, x.mtime_ns});
  for (const SkippedFile& f : ix.skipped) skipped.push_back({relative_to(f.path, ix.source), f.reason});
  for (const FolderState& f : s.folders) folders.push_back({f.path, f.mtime_ns, f.entries});
  nlohmann::json sizes = nlohmann::json::array(), channels = nlohmann::json::array(), depths = nlohmann::json::array();
  for (const auto& [hw, n] : s.stats.sizes) sizes.push_back({hw.first, hw.second, n});
  for (const auto& [c, n] : s.stats.channels) channels.push_back({c, n});
  for (const auto& [d, n] : s.stats.depths) depths.push_back({d, n});
  const nlohmann::json j = {{"format", kFormat},
                            {"classes", ix.classes},
                            {"samples", samples},
                            {"skipped", skipped},
                            {"hidden", ix.hidden},
                            {"non_images", ix.non_images},
                            {"stats", {{"sizes", sizes}, {"channels", channels}, {"depths", depths}, {"bytes", s.stats.bytes}}},
                            {"folders", folders}};
  return j.dump();
}

StoredIndex parse_stored_index(const std::string& text, const std::string& root) {
  auto damaged = [&](const std::string& why) {
    return IoError("the stored file index of " + root + " is damaged: " + why);
  };
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    if (!j.is_object()) throw damaged("not a JSON object");
    if (j.value("format", 0) != kFormat) throw damaged("format " + j.value("format", nlohmann::json()).dump() +
                                                       ", this build reads " + std::to_string(kFormat));
    StoredIndex s;
    ImageIndex& ix = s.index;
    ix.source = root;
    ix.classes = j.at("classes").get<std::vector<std::string>>();
    if (ix.classes.empty()) throw damaged("no classes");
    const auto k = static_cast<int64_t>(ix.classes.size());
    for (const auto& x : j.at("samples")) {
      ImageSample smp{joined(root, x.at(0).get<std::string>()), x.at(1).get<int64_t>(), x.at(2).get<int64_t>(),
                      x.at(3).get<int64_t>()};
      if (smp.label < 0 || smp.label >= k)
        throw damaged("sample '" + smp.path + "' has label " + std::to_string(smp.label) + " of " +
                      std::to_string(k) + " classes");
      if (smp.bytes < 0) throw damaged("sample '" + smp.path + "' has a negative size");
      ix.samples.push_back(std::move(smp));
    }
    for (const auto& f : j.at("skipped")) ix.skipped.push_back({joined(root, f.at(0).get<std::string>()), f.at(1).get<std::string>()});
    ix.hidden = j.at("hidden").get<int64_t>();
    ix.non_images = j.at("non_images").get<int64_t>();
    const auto& st = j.at("stats");
    for (const auto& e : st.at("sizes")) s.stats.sizes[{e.at(0).get<int64_t>(), e.at(1).get<int64_t>()}] = e.at(2).get<int64_t>();
    for (const auto& e : st.at("channels")) s.stats.channels[e.at(0).get<int>()] = e.at(1).get<int64_t>();
    for (const auto& e : st.at("depths")) s.stats.depths[e.at(0).get<int>()] = e.at(1).get<int64_t>();
    s.stats.bytes = st.at("bytes").get<int64_t>();
    for (const auto& f : j.at("folders"))
      s.folders.push_back({f.at(0).get<std::string>(), f.at(1).get<int64_t>(), f.at(2).get<int64_t>()});
    if (s.folders.empty()) throw damaged("no folder states");
    return s;
  } catch (const nlohmann::json::exception& e) {
    throw damaged(e.what());
  }
}

IndexedFolder index_image_folder(const std::string& folder, const std::vector<std::string>* classes, IndexStore* store,
                                 bool rescan, int threads, ImageCache* cache, int channels, int64_t short_side) {
  IndexedFolder out;
  std::vector<FolderState> now;
  std::string key;
  if (store) {
    try {
      now = folder_states(folder);  // before the scan: a change made during it is seen next time
      key = index_store_key(folder, classes);
    } catch (const Error&) {
      store = nullptr;  // the scan below says what is wrong with the folder
    }
  }
  if (store && !rescan) {
    try {
      if (std::optional<std::string> text = store->load(key)) {
        StoredIndex s = parse_stored_index(*text, folder);
        if (classes && s.index.classes != *classes)
          throw IoError("the stored file index of " + folder + " is damaged: its classes differ from the key's");
        const std::string change = folder_change(s.folders, now);
        if (change.empty()) {
          out.index = std::make_shared<ImageIndex>(std::move(s.index));
          out.stats = std::move(s.stats);
          out.reused = true;
          out.note = folder + ": the stored file index was used (" + std::to_string(out.index->samples.size()) +
                     " images; no file or folder added, removed or renamed since it was made)";
          return out;
        }
        out.note = folder + ": scanned again, " + change;
      }
    } catch (const std::exception& e) {
      out.note = std::string(e.what()) + "; the folder was scanned again";
    }
  }
  out.index = std::make_shared<ImageIndex>(scan_image_folder(folder, classes));
  out.stats = verify_images(*out.index, threads, cache, channels, short_side);
  if (store) {
    try {
      store->save(key, stored_index_text({*out.index, out.stats, now}));
    } catch (const std::exception& e) {
      out.note += std::string(out.note.empty() ? "" : "; ") + folder + ": the file index could not be stored (" +
                  e.what() + ")";
    }
  }
  return out;
}

std::pair<std::vector<double>, std::vector<double>> stored_channel_stats(
    IndexStore* store, bool rescan, const ChannelStatsKey& k,
    const std::function<std::pair<std::vector<double>, std::vector<double>>()>& compute,
    std::vector<std::string>& notes) {
  if (!store) return compute();
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64 of the positions
  for (int64_t p : k.positions)
    for (int b = 0; b < 8; ++b) h = (h ^ ((static_cast<uint64_t>(p) >> (8 * b)) & 0xFF)) * 0x100000001b3ull;
  const std::string key = "channel_stats:" + fs::absolute(k.folder).lexically_normal().string() + "\n" +
                          std::to_string(k.channels) + "x" + std::to_string(k.height) + "x" + std::to_string(k.width) +
                          "\nseed " + std::to_string(k.seed) + " test " + nlohmann::json(k.test_fraction).dump();
  const std::string split = k.fingerprint + ":" + std::to_string(h);
  if (!rescan) {
    try {
      if (std::optional<std::string> text = store->load(key)) {
        const nlohmann::json j = nlohmann::json::parse(*text);
        if (j.at("split").get<std::string>() == split) {
          auto mean = j.at("mean").get<std::vector<double>>(), std = j.at("std").get<std::vector<double>>();
          if (mean.size() != std.size() || mean.empty()) throw IoError("mean and std of different lengths");
          return {mean, std};
        }
      }
    } catch (const std::exception& e) {
      notes.push_back("the stored mean and std of " + k.folder + " are damaged (" + e.what() + "); computed again");
    }
  }
  auto stats = compute();
  try {
    store->save(key, nlohmann::json{{"split", split}, {"mean", stats.first}, {"std", stats.second}}.dump());
  } catch (const std::exception& e) {
    notes.push_back(k.folder + ": the computed mean and std could not be stored (" + e.what() + ")");
  }
  return stats;
}

}  // namespace kiln::data
