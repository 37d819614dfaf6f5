#include "engine/data/csv_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "engine/core/error.h"

namespace kiln::data {

namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxBytes = size_t{1} << 30;  // read_csv's limit on the (uncompressed) text

// 1-based line and column (in bytes) of `offset` in `text`.
std::pair<int64_t, int64_t> line_col(std::string_view text, size_t offset) {
  int64_t line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n' || (text[i] == '\r' && (i + 1 >= text.size() || text[i + 1] != '\n'))) {
      ++line;
      line_start = i + 1;
    }
  }
  return {line, static_cast<int64_t>(offset - line_start) + 1};
}

char detect_delimiter(std::string_view text, const std::string& source) {
  const std::string lower = [&] {
    std::string s = source;
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  }();
  auto ends_with = [&](std::string_view suffix) {
    return lower.size() >= suffix.size() && lower.compare(lower.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with(".tsv") || ends_with(".tsv.gz")) return '\t';
  int64_t tabs = 0, commas = 0, semicolons = 0;
  bool quoted = false;
  for (char c : text) {
    if (c == '"') quoted = !quoted;
    if (quoted) continue;
    if (c == '\n' || c == '\r') break;
    tabs += c == '\t';
    commas += c == ',';
    semicolons += c == ';';
  }
  if (tabs > commas && tabs >= semicolons) return '\t';
  if (semicolons > commas) return ';';
  return ',';
}

}  // namespace

size_t invalid_utf8_offset(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const unsigned c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    unsigned lo = 0x80, hi = 0xBF;  // the allowed range of the second byte (RFC 3629, section 4)
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c == 0xE0) len = 3, lo = 0xA0;
    else if (c == 0xED) len = 3, hi = 0x9F;  // no UTF-16 surrogates
    else if (c >= 0xE1 && c <= 0xEF) len = 3;
    else if (c == 0xF0) len = 4, lo = 0x90;
    else if (c == 0xF4) len = 4, hi = 0x8F;  // nothing above U+10FFFF
    else if (c >= 0xF1 && c <= 0xF3) len = 4;
    else return i;
    if (i + len > n || p[i + 1] < lo || p[i + 1] > hi) return i;
    for (size_t k = 2; k < len; ++k)
      if (p[i + k] < 0x80 || p[i + k] > 0xBF) return i;
    i += len;
  }
  return std::string_view::npos;
}

bool parse_number(const std::string& field, double& out) {
  std::string_view s = field;
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && std::isfinite(out);
}

CsvTable parse_csv(std::string_view text, const CsvOptions& options, const std::string& source) {
  KILN_CHECK(options.skip_rows >= 0, ValueError, source, ": skip_rows must be >= 0, got ", options.skip_rows);
  KILN_CHECK(options.delimiter != '"' && options.delimiter != '\n' && options.delimiter != '\r', ValueError, source,
             ": the delimiter cannot be a quote or a line break");
  if (text.size() >= 2 && ((text[0] == '\xFF' && text[1] == '\xFE') || (text[0] == '\xFE' && text[1] == '\xFF')))
    throw IoError(source + ":1: the file is UTF-16; save it as UTF-8");
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // a UTF-8 byte order mark
  if (size_t bad = invalid_utf8_offset(text); bad != std::string_view::npos) {
    auto [line, col] = line_col(text, bad);
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(text[bad]));
    throw IoError(detail::str_cat(source, ":", line, ": not UTF-8 (byte ", hex, " at column ", col,
                                  "); save the file as UTF-8"));
  }

  // Skipped lines are physical lines (a count line has no quotes).
  size_t pos = 0;
  int64_t line = 1;
  for (int64_t k = 0; k < options.skip_rows && pos < text.size(); ++k, ++line) {
    while (pos < text.size() && text[pos] != '\n' && text[pos] != '\r') ++pos;
    if (pos < text.size() && text[pos] == '\r') ++pos;
    if (pos < text.size() && text[pos] == '\n') ++pos;
  }

  CsvTable t;
  t.source = source;
  t.delimiter = options.delimiter ? options.delimiter : detect_delimiter(text.substr(pos), source);
  const char delim = t.delimiter;
  const size_t n = text.size();
  bool have_header = !options.header;  // false until the header record is read
  size_t width = 0;                    // fields per record, from the header or the first row

  std::vector<std::string> record;
  std::string field;
  while (pos < n) {
    // One record, starting at `line`.
    const int64_t record_line = line;
    record.clear();
    bool blank = true;  // the record is an empty line
    for (;;) {
      field.clear();
      bool quoted_field = false;
      if (pos < n && text[pos] == '"') {
        quoted_field = true;
        blank = false;
        const int64_t open_line = line;
        ++pos;
        for (;;) {
          KILN_CHECK(pos < n, IoError, source, ":", open_line, ": a quoted field opened here never closes");
          const char c = text[pos];
          if (c == '"') {
            if (pos + 1 < n && text[pos + 1] == '"') {
              field += '"';
              pos += 2;
              continue;
            }
            ++pos;
            break;
          }
          if (c == '\n' || (c == '\r' && (pos + 1 >= n || text[pos + 1] != '\n'))) ++line;
          field += c;
          ++pos;
        }
        if (pos < n && text[pos] != delim && text[pos] != '\n' && text[pos] != '\r')
          throw IoError(detail::str_cat(source, ":", line, ": text after a closing quote (field ", record.size() + 1,
                                        "); double a quote inside a quoted field (\"\")"));
      } else {
        while (pos < n && text[pos] != delim && text[pos] != '\n' && text[pos] != '\r') field += text[pos++];
      }
      if (!field.empty() || quoted_field) blank = false;
      record.push_back(field);
      if (pos < n && text[pos] == delim) {
        blank = false;
        ++pos;
        continue;
      }
      break;  // end of line or of text
    }
    if (pos < n && text[pos] == '\r') ++pos;
    if (pos < n && text[pos] == '\n') ++pos;
    ++line;
    if (blank) continue;

    if (!have_header) {
      // A header of numbers is most likely the first row of data (a file without a header, or a
      // count line skipped by one line too many): said, not refused, as a column may be named "2024".
      double v = 0;
      if (std::all_of(record.begin(), record.end(), [&v](const std::string& f) { return parse_number(f, v); }))
        t.notes.push_back(detail::str_cat(source, ": every field of the header row (line ", record_line,
                                          ") is a number: if it is data, read the file with --no-header (in Kiln "
                                          "Studio, clear the Dataset panel's 'Header row' box)"));
      for (size_t i = 0; i < record.size(); ++i) {
        if (record[i].empty()) record[i] = std::to_string(i);  // an unnamed column (pandas: "Unnamed: i")
        for (size_t j = 0; j < i; ++j)
          KILN_CHECK(record[j] != record[i], IoError, source, ":", record_line, ": the header names column '",
                     record[i], "' twice (columns ", j + 1, " and ", i + 1, ")");
      }
      t.columns = record;
      width = record.size();
      have_header = true;
      continue;
    }
    if (width == 0) {
      width = record.size();
      for (size_t i = 0; i < width; ++i) t.columns.push_back(std::to_string(i));
    }
    if (record.size() != width)
      throw IoError(detail::str_cat(source, ":", record_line, ": ", record.size(), record.size() == 1 ? " field" : " fields",
                                    " but ", options.header ? "the header has " : "the first row has ", width,
                                    " (ragged rows; is the delimiter '", delim == '\t' ? std::string("\\t") : std::string(1, delim),
                                    "' right?)"));
    t.rows.push_back(record);
    t.lines.push_back(record_line);
  }
  KILN_CHECK(!t.rows.empty(), IoError, source, ": no data rows",
             options.skip_rows ? detail::str_cat(" after skipping ", options.skip_rows, " lines") : std::string(),
             options.header ? " after the header" : "");
  return t;
}

CsvTable read_csv(const std::string& path, const CsvOptions& options) {
  KILN_CHECK(fs::exists(path), IoError, path, ": no such file");
  KILN_CHECK(!fs::is_directory(path), IoError, path, ": is a directory, not a CSV file");
  errno = 0;
  std::unique_ptr<gzFile_s, int (*)(gzFile)> file(gzopen(path.c_str(), "rb"), gzclose);  // reads plain files too
  KILN_CHECK(file != nullptr, IoError, path, ": cannot open (", errno ? std::strerror(errno) : "out of memory", ")");
  std::string text;
  char buf[1 << 16];
  for (;;) {
    const int got = gzread(file.get(), buf, sizeof buf);
    if (got < 0) {
      int err = Z_OK;
      const char* msg = gzerror(file.get(), &err);
      throw IoError(path + ": " + (err == Z_ERRNO ? std::string(std::strerror(errno)) : std::string("corrupt gzip data (") +
                                                                                            (msg ? msg : "zlib error") + ")"));
    }
    if (got == 0) break;
    text.append(buf, static_cast<size_t>(got));
    KILN_CHECK(text.size() <= kMaxBytes, IoError, path, ": larger than 1 GiB; Kiln reads tables into memory whole");
  }
  int err = Z_OK;
  gzerror(file.get(), &err);
  KILN_CHECK(err != Z_BUF_ERROR, IoError, path, ": truncated gzip data (the stream ends early)");
  KILN_CHECK(err == Z_OK, IoError, path, ": corrupt gzip data");
  return parse_csv(text, options, path);
}

}  // namespace kiln::data
