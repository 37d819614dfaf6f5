// UTF-8 <-> code points and the character classes the word tokenizer splits on.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::data {

// The code points of `text`. IoError "SOURCE: invalid UTF-8 at byte OFFSET (0xNN)" when it is not
// UTF-8 (RFC 3629: no overlong forms, surrogates or code points above U+10FFFF).
std::u32string decode_utf8(std::string_view text, const std::string& source);

// Appends the UTF-8 encoding of `cp` (a valid scalar value) to `out`.
void append_utf8(std::string& out, char32_t cp);
std::string encode_utf8(std::u32string_view text);

// ASCII punctuation (C's ispunct: !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~) or a code point of Unicode's
// general categories P* (unicode_tables.h).
bool is_punctuation(char32_t cp);
// Unicode separators (Z*) and controls (Cc: tab, LF, CR, ...).
bool is_separator(char32_t cp);
// The simple lowercase of `cp` (Unicode's one-to-one mapping: A -> a, É -> é, Σ -> σ, Д -> д);
// code points without one, or whose lowercase is several code points, are returned unchanged.
char32_t to_lower(char32_t cp);

// The first `n` code points of `text` on one line, for listings of samples: runs of control
// characters and spaces (line breaks, tabs) become one space, leading and trailing ones dropped.
std::string text_preview(std::string_view text, size_t n);

// Calls f(line, row) for each line of `text` that holds more than spaces and tabs, with its
// 1-based line number; a UTF-8 byte-order mark at the start and each row's trailing '\r' are
// dropped (JSON-lines files: text_index.cpp, text_rows.cpp).
void for_each_nonblank_line(std::string_view text, const std::function<void(int64_t line, std::string_view row)>& f);

}  // namespace kiln::data
