#include "engine/data/text/utf8.h"

#include <algorithm>
#include <cstdio>

#include "engine/core/error.h"
#include "engine/data/csv_reader.h"
#include "engine/data/text/unicode_tables.h"

namespace kiln::data {

std::u32string decode_utf8(std::string_view s, const std::string& source) {
  const size_t bad = invalid_utf8_offset(s);
  if (bad != std::string_view::npos) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(s[bad]));
    throw IoError(source + ": invalid UTF-8 at byte " + std::to_string(bad) + " (" + hex + ")");
  }
  std::u32string out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  for (size_t i = 0; i < s.size();) {  // valid UTF-8 from here on
    const unsigned c = p[i];
    if (c < 0x80) {
      out.push_back(c);
      i += 1;
    } else if (c < 0xE0) {
      out.push_back(((c & 0x1F) << 6) | (p[i + 1] & 0x3F));
      i += 2;
    } else if (c < 0xF0) {
      out.push_back(((c & 0x0F) << 12) | ((p[i + 1] & 0x3F) << 6) | (p[i + 2] & 0x3F));
      i += 3;
    } else {
      out.push_back(((c & 0x07) << 18) | ((p[i + 1] & 0x3F) << 12) | ((p[i + 2] & 0x3F) << 6) | (p[i + 3] & 0x3F));
      i += 4;
    }
  }
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string encode_utf8(std::u32string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char32_t cp : text) append_utf8(out, cp);
  return out;
}

namespace {
bool in_ranges(char32_t cp, const unicode::CodeRange* r, size_t n) {
  const unicode::CodeRange* end = r + n;
  const unicode::CodeRange* it =
      std::upper_bound(r, end, cp, [](char32_t v, const unicode::CodeRange& x) { return v < x.first; });
  return it != r && cp <= (it - 1)->last;
}
}  // namespace

bool is_punctuation(char32_t cp) {
  if (cp < 0x80) return (cp >= 0x21 && cp <= 0x2F) || (cp >= 0x3A && cp <= 0x40) || (cp >= 0x5B && cp <= 0x60) ||
                        (cp >= 0x7B && cp <= 0x7E);
  return in_ranges(cp, unicode::kPunctuation, unicode::kPunctuationCount);
}

bool is_separator(char32_t cp) { return in_ranges(cp, unicode::kSeparators, unicode::kSeparatorsCount); }

char32_t to_lower(char32_t cp) {
  if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
  const unicode::CodePair* end = unicode::kLowercase + unicode::kLowercaseCount;
  const unicode::CodePair* it = std::lower_bound(unicode::kLowercase, end, cp,
                                                 [](const unicode::CodePair& x, char32_t v) { return x.from < v; });
  return it != end && it->from == cp ? it->to : cp;
}

std::string text_preview(std::string_view text, size_t n) {
  std::string out;
  size_t cps = 0;
  bool space = false;
  for (size_t i = 0; i < text.size() && cps < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == ' ') {
      if (!space && !out.empty()) out += ' ', ++cps;
      space = true;
      continue;
    }
    space = false;
    out += static_cast<char>(c);
    if ((c & 0xC0) != 0x80) ++cps;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

void for_each_nonblank_line(std::string_view text, const std::function<void(int64_t line, std::string_view row)>& f) {
  if (text.size() >= 3 && text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  int64_t line = 0;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view row = text.substr(start, end - start);
    start = end + 1;
    ++line;
    if (!row.empty() && row.back() == '\r') row.remove_suffix(1);
    if (row.find_first_not_of(" \t") != std::string_view::npos) f(line, row);
  }
}

}  // namespace kiln::data
