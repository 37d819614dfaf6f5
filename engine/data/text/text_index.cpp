#include "engine/data/text/text_index.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "engine/core/error.h"
#include "engine/data/text/utf8.h"

namespace kiln::data {

namespace fs = std::filesystem;

namespace {

constexpr int64_t kMaxTextFile = int64_t{64} << 20;  // a .txt sample larger than this is skipped
constexpr int64_t kMaxJsonl = int64_t{1} << 30;      // read_jsonl's limit

bool hidden(const fs::path& p) {
  const std::string n = p.filename().string();
  return !n.empty() && n[0] == '.';
}

std::string strip_bom(std::string s) {
  if (s.size() >= 3 && s.compare(0, 3, "\xEF\xBB\xBF") == 0) s.erase(0, 3);
  return s;
}

// The whole file; IoError naming it when it cannot be read or is larger than `limit`.
std::string read_file(const fs::path& p, int64_t limit) {
  std::error_code ec;
  KILN_CHECK(fs::exists(p, ec), IoError, p.string(), ": no such file");
  KILN_CHECK(!fs::is_directory(p, ec), IoError, p.string(), ": is a folder, not a file");
  const auto size = fs::file_size(p, ec);
  KILN_CHECK(!ec, IoError, p.string(), ": cannot read (", ec.message(), ")");
  KILN_CHECK(static_cast<int64_t>(size) <= limit, IoError, p.string(), ": larger than ", limit >> 20, " MiB");
  std::ifstream in(p, std::ios::binary);
  KILN_CHECK(in, IoError, p.string(), ": cannot open");
  std::string s(size, '\0');
  in.read(s.data(), static_cast<std::streamsize>(size));
  KILN_CHECK(in.gcount() == static_cast<std::streamsize>(size), IoError, p.string(), ": read error");
  return s;
}

// Classes of `values` (each label's text) sorted by byte order, or numerically when all are integers.
std::vector<std::string> sorted_classes(const std::set<std::string>& values) {
  std::vector<std::string> classes(values.begin(), values.end());
  const bool integers = std::all_of(classes.begin(), classes.end(), [](const std::string& v) {
    const size_t start = !v.empty() && v[0] == '-' ? 1 : 0;
    return v.size() > start && v.size() < 18 && v.find_first_not_of("0123456789", start) == std::string::npos;
  });
  if (integers)
    std::sort(classes.begin(), classes.end(),
              [](const std::string& a, const std::string& b) { return std::stoll(a) < std::stoll(b); });
  return classes;
}

void require_two_classes(const TextIndex& index) {
  KILN_CHECK(index.classes.size() >= 2, IoError, index.source, ": ",
             index.classes.empty() ? std::string("no labels") : "only one class ('" + index.classes[0] + "')",
             "; a classifier needs at least two");
}

// Labels (the text of each sample's label) to class indices; samples and labels are parallel.
void assign_labels(TextIndex& index, const std::vector<std::string>& labels) {
  index.classes = sorted_classes(std::set<std::string>(labels.begin(), labels.end()));
  std::map<std::string, int64_t> id;
  for (size_t k = 0; k < index.classes.size(); ++k) id[index.classes[k]] = static_cast<int64_t>(k);
  for (size_t i = 0; i < labels.size(); ++i) index.samples[i].label = id[labels[i]];
}

}  // namespace

std::vector<int64_t> TextIndex::labels() const {
  std::vector<int64_t> v;
  v.reserve(samples.size());
  for (const TextSample& s : samples) v.push_back(s.label);
  return v;
}

std::vector<int64_t> TextIndex::class_counts() const {
  std::vector<int64_t> n(classes.size(), 0);
  for (const TextSample& s : samples) ++n[static_cast<size_t>(s.label)];
  return n;
}

std::string unusable_text_reason(std::string_view bytes) {
  if (bytes.empty()) return "empty file (0 bytes)";
  const size_t nul = bytes.find('\0');
  if (nul != std::string_view::npos) return "binary file (NUL byte at byte " + std::to_string(nul) + ")";
  const size_t bad = invalid_utf8_offset(bytes);
  if (bad != std::string_view::npos) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(bytes[bad]));
    return "invalid UTF-8 at byte " + std::to_string(bad) + " (" + hex + ")";
  }
  if (bytes.size() >= 3 && bytes.substr(0, 3) == "\xEF\xBB\xBF") bytes.remove_prefix(3);
  if (bytes.find_first_not_of(" \t\r\n\v\f") == std::string_view::npos)
    return "only whitespace";
  return "";
}

TextIndex scan_text_folder(const std::string& root, const TextReadOptions& options) {
  const fs::path dir(root);
  std::error_code ec;
  KILN_CHECK(fs::exists(dir, ec), IoError, root, ": no such folder");
  KILN_CHECK(fs::is_directory(dir, ec), IoError, root, ": not a folder (a text folder holds one subfolder per class)");
  TextIndex index;
  index.source = root;
  std::vector<std::string> found;
  for (fs::directory_iterator it(dir, ec), end; it != end; it.increment(ec)) {
    KILN_CHECK(!ec, IoError, root, ": cannot list the folder (", ec.message(), ")");
    if (hidden(it->path())) {
      ++index.hidden;
    } else if (it->is_directory(ec)) {
      found.push_back(it->path().filename().string());
    } else {
      index.skipped.push_back({it->path().string(), "a file beside the class folders (each class is a subfolder)"});
    }
  }
  KILN_CHECK(!ec, IoError, root, ": cannot list the folder (", ec.message(), ")");
  std::sort(found.begin(), found.end());
  KILN_CHECK(found.size() >= 2, IoError, root, ": ", found.size(), " class folder", found.size() == 1 ? "" : "s",
             "; a text folder holds one subfolder per class (at least two), e.g. ", root, "/spam/1.txt");
  index.classes = found;
  for (size_t label = 0; label < found.size(); ++label) {
    const fs::path cdir = dir / found[label];
    std::vector<fs::path> files;
    fs::recursive_directory_iterator it(cdir, fs::directory_options::follow_directory_symlink, ec), end;
    KILN_CHECK(!ec, IoError, cdir.string(), ": cannot list the folder (", ec.message(), ")");
    for (; it != end; it.increment(ec)) {
      KILN_CHECK(!ec, IoError, cdir.string(), ": cannot list the folder (", ec.message(), ")");
      if (hidden(it->path())) {
        ++index.hidden;
        if (it->is_directory(ec)) it.disable_recursion_pending();
        continue;
      }
      if (!it->is_directory(ec)) files.push_back(it->path());
    }
    std::sort(files.begin(), files.end());
    const size_t before = index.samples.size();
    for (const fs::path& p : files) {
      if (p.extension() != ".txt") {
        index.skipped.push_back({p.string(), "not a .txt file (" +
                                                 (p.has_extension() ? p.extension().string() : "no extension") + ")"});
        continue;
      }
      const auto size = fs::file_size(p, ec);
      if (ec || static_cast<int64_t>(size) > kMaxTextFile) {
        index.skipped.push_back({p.string(), ec ? "cannot read (" + ec.message() + ")" : "larger than 64 MiB"});
        continue;
      }
      std::string bytes;
      try {
        bytes = read_file(p, kMaxTextFile);
      } catch (const IoError& e) {
        index.skipped.push_back({p.string(), e.what()});
        continue;
      }
      const std::string reason = unusable_text_reason(bytes);
      if (!reason.empty()) {
        index.skipped.push_back({p.string(), reason});
        continue;
      }
      index.samples.push_back({strip_bom(std::move(bytes)), static_cast<int64_t>(label), p.string()});
    }
    KILN_CHECK(index.samples.size() > before, IoError, cdir.string(), ": class folder '", found[label],
               "' holds no usable .txt file (", files.size(), " files, see the skipped list); add texts or remove it");
  }
  if (options.deduplicate) drop_duplicates(index);
  return index;
}

TextIndex text_index_from_table(const CsvTable& t, const TextReadOptions& options) {
  auto column = [&](const std::string& name) {
    auto it = std::find(t.columns.begin(), t.columns.end(), name);
    if (it == t.columns.end()) {
      std::string header;
      for (const std::string& c : t.columns) header += (header.empty() ? "" : ",") + c;
      throw IoError(t.source + ":1: no column '" + name + "' (header: " + header +
                    "); name the text and label columns with --text-column and --label-column");
    }
    return static_cast<size_t>(it - t.columns.begin());
  };
  const size_t tc = column(options.text_column), lc = column(options.label_column);
  TextIndex index;
  index.source = t.source;
  std::vector<std::string> labels;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const std::string origin = t.source + ":" + std::to_string(t.lines[r]);
    KILN_CHECK(!t.rows[r][lc].empty(), IoError, origin, ": empty label (column '", options.label_column, "')");
    const std::string& text = t.rows[r][tc];
    if (text.find_first_not_of(" \t\r\n\v\f") == std::string::npos) {
      index.skipped.push_back({origin, text.empty() ? "empty text" : "only whitespace"});
      continue;
    }
    index.samples.push_back({text, 0, origin});
    labels.push_back(t.rows[r][lc]);
  }
  assign_labels(index, labels);
  require_two_classes(index);
  if (options.deduplicate) drop_duplicates(index);
  return index;
}

TextIndex read_text_table(const std::string& path, const TextReadOptions& options) {
  return text_index_from_table(read_csv(path, options.csv), options);
}

TextIndex parse_jsonl(std::string_view text, const TextReadOptions& options, const std::string& source) {
  const size_t bad = invalid_utf8_offset(text);
  if (bad != std::string_view::npos) {
    const size_t line_start = text.rfind('\n', bad) == std::string_view::npos ? 0 : text.rfind('\n', bad) + 1;
    const int64_t line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(bad), '\n');
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(text[bad]));
    throw IoError(source + ":" + std::to_string(line) + ": invalid UTF-8 at column " +
                  std::to_string(bad - line_start + 1) + " (byte " + hex + ")");
  }
  TextIndex index;
  index.source = source;
  std::vector<std::string> labels;
  for_each_nonblank_line(text, [&](int64_t line, std::string_view row) {
    const std::string origin = source + ":" + std::to_string(line);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(row);
    } catch (const nlohmann::json::exception& e) {
      throw IoError(origin + ": not JSON (" + e.what() + ")");
    }
    KILN_CHECK(j.is_object(), IoError, origin, ": not a JSON object (each line holds {\"", options.text_column,
               "\": ..., \"", options.label_column, "\": ...})");
    auto t = j.find(options.text_column);
    KILN_CHECK(t != j.end(), IoError, origin, ": no key '", options.text_column, "'");
    KILN_CHECK(t->is_string(), IoError, origin, ": '", options.text_column, "' is not a string");
    auto l = j.find(options.label_column);
    KILN_CHECK(l != j.end(), IoError, origin, ": no key '", options.label_column, "'");
    std::string label;
    if (l->is_string()) label = l->get<std::string>();
    else if (l->is_number_integer()) label = std::to_string(l->get<int64_t>());
    else throw IoError(origin + ": '" + options.label_column + "' is neither a string nor an integer");
    KILN_CHECK(!label.empty(), IoError, origin, ": empty label");
    std::string s = t->get<std::string>();
    const std::string reason = s.empty() ? "empty text" : unusable_text_reason(s);
    if (!reason.empty()) {  // \u0000 escapes make NUL bytes; strings are UTF-8 after parsing
      index.skipped.push_back({origin, reason});
      return;
    }
    index.samples.push_back({std::move(s), 0, origin});
    labels.push_back(std::move(label));
  });
  assign_labels(index, labels);
  require_two_classes(index);
  if (options.deduplicate) drop_duplicates(index);
  return index;
}

TextIndex read_jsonl(const std::string& path, const TextReadOptions& options) {
  return parse_jsonl(read_file(path, kMaxJsonl), options, path);
}

TextIndex read_text_dataset(const std::string& path, const TextReadOptions& options) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return scan_text_folder(path, options);
  const std::string ext = fs::path(path).extension().string();
  if (ext == ".jsonl" || ext == ".ndjson") return read_jsonl(path, options);
  return read_text_table(path, options);
}

void drop_duplicates(TextIndex& index) {
  std::unordered_map<std::string_view, int64_t> first;  // text -> label of the kept sample
  std::vector<TextSample> kept;
  kept.reserve(index.samples.size());
  std::vector<bool> keep(index.samples.size());
  for (size_t i = 0; i < index.samples.size(); ++i) {
    const TextSample& s = index.samples[i];
    auto [it, inserted] = first.emplace(s.text, s.label);
    keep[i] = inserted;
    if (!inserted) {
      ++index.duplicates_dropped;
      if (it->second != s.label) ++index.duplicate_conflicts;
    }
  }
  first.clear();  // its keys view the samples' texts, which move below
  for (size_t i = 0; i < index.samples.size(); ++i)
    if (keep[i]) kept.push_back(std::move(index.samples[i]));
  index.samples = std::move(kept);
}

}  // namespace kiln::data
