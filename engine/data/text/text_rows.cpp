#include "engine/data/text/text_rows.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "engine/core/error.h"
#include "engine/data/text/utf8.h"

namespace kiln::data {

namespace fs = std::filesystem;

namespace {

constexpr int64_t kMaxJsonl = int64_t{1} << 30;  // as read_jsonl's limit

std::string read_whole(const std::string& path) {
  std::error_code ec;
  KILN_CHECK(fs::exists(path, ec), IoError, path, ": no such file");
  KILN_CHECK(!fs::is_directory(path, ec), IoError, path, ": is a folder, not a file");
  const auto size = fs::file_size(path, ec);
  KILN_CHECK(!ec, IoError, path, ": cannot read (", ec.message(), ")");
  KILN_CHECK(static_cast<int64_t>(size) <= kMaxJsonl, IoError, path, ": larger than ", kMaxJsonl >> 20, " MiB");
  std::ifstream in(path, std::ios::binary);
  KILN_CHECK(in, IoError, path, ": cannot open");
  std::string s(size, '\0');
  in.read(s.data(), static_cast<std::streamsize>(size));
  KILN_CHECK(in.gcount() == static_cast<std::streamsize>(size), IoError, path, ": read error");
  return s;
}

// The reason a row's text cannot be used, or "".
std::string row_reason(const std::string& text) {
  if (text.empty()) return "empty text";
  return unusable_text_reason(text);
}

TextRows jsonl_rows(const std::string& path, const TextReadOptions& options) {
  std::string_view text;
  const std::string bytes = read_whole(path);
  text = bytes;
  TextRows out;
  for_each_nonblank_line(text, [&](int64_t line, std::string_view row) {
    TextRow r;
    r.origin = path + ":" + std::to_string(line);
    out.rows.push_back(r);
    TextRow& o = out.rows.back();
    if (const size_t bad = invalid_utf8_offset(row); bad != std::string_view::npos) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(row[bad]));
      o.error = "invalid UTF-8 at column " + std::to_string(bad + 1) + " (byte " + hex + ")";
      return;
    }
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(row);
    } catch (const nlohmann::json::exception& e) {
      o.error = std::string("not JSON (") + e.what() + ")";
      return;
    }
    if (!j.is_object()) {
      o.error = "not a JSON object";
      return;
    }
    if (auto l = j.find(options.label_column); l != j.end()) {
      out.has_labels = true;
      if (l->is_string()) o.label = l->get<std::string>();
      else if (l->is_number_integer()) o.label = std::to_string(l->get<int64_t>());
    }
    auto t = j.find(options.text_column);
    if (t == j.end()) o.error = "no key '" + options.text_column + "'";
    else if (!t->is_string()) o.error = "'" + options.text_column + "' is not a string";
    else if (std::string s = t->get<std::string>(); (o.error = row_reason(s)).empty()) o.text = std::move(s);
  });
  KILN_CHECK(!out.rows.empty(), IoError, path, ": no JSON line in it");
  return out;
}

TextRows table_rows(const std::string& path, const TextReadOptions& options) {
  const CsvTable t = read_csv(path, options.csv);
  auto find = [&](const std::string& name) { return std::find(t.columns.begin(), t.columns.end(), name); };
  const auto tc = find(options.text_column), lc = find(options.label_column);
  if (tc == t.columns.end()) {
    std::string header;
    for (const std::string& c : t.columns) header += (header.empty() ? "" : ",") + c;
    throw IoError(t.source + ":1: no column '" + options.text_column + "' (header: " + header +
                  "); the run reads its texts from column '" + options.text_column + "'");
  }
  TextRows out;
  out.has_labels = lc != t.columns.end();
  const auto ti = static_cast<size_t>(tc - t.columns.begin()), li = static_cast<size_t>(lc - t.columns.begin());
  for (size_t r = 0; r < t.rows.size(); ++r) {
    TextRow o;
    o.origin = t.source + ":" + std::to_string(t.lines[r]);
    if (out.has_labels) o.label = t.rows[r][li];
    const std::string& text = t.rows[r][ti];
    if (text.find_first_not_of(" \t\r\n\v\f") == std::string::npos) o.error = text.empty() ? "empty text" : "only whitespace";
    else if ((o.error = row_reason(text)).empty()) o.text = text;
    out.rows.push_back(std::move(o));
  }
  return out;
}

}  // namespace

bool is_jsonl_path(const std::string& path) {
  const std::string ext = fs::path(path).extension().string();
  return ext == ".jsonl" || ext == ".ndjson";
}

TextRows read_text_rows(const std::string& path, const TextReadOptions& options) {
  return is_jsonl_path(path) ? jsonl_rows(path, options) : table_rows(path, options);
}

}  // namespace kiln::data
