// CSV and TSV text as a table of strings (RFC 4180: fields separated by a delimiter, records
// by CRLF or LF; a field in double quotes may hold delimiters, line breaks and "" for a quote).
// What the format leaves open is settled as pandas.read_csv does by default: blank lines are
// skipped, an unquoted field keeps a stray quote as text, a UTF-8 byte order mark is dropped.
// Typing the cells (numbers, categories, missing values) is tabular.h's job.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::data {

struct CsvOptions {
  // ',' ';' '\t' ... ; 0: '\t' for a *.tsv[.gz] path, else the one of tab, comma and
  // semicolon seen most often (outside quotes) in the first record; ',' when none is.
  char delimiter = 0;
  bool header = true;     // the first record (after skip_rows) names the columns
  int64_t skip_rows = 0;  // lines dropped before the header or data, e.g. 1 for scikit-learn's
                          // bundled tables, whose first line is a count line ("150,4,setosa,...")
};

struct CsvTable {
  std::string source;                 // the path (or name) errors cite
  std::vector<std::string> columns;   // header names; without a header "0", "1", ... (column indices)
  std::vector<std::vector<std::string>> rows;  // every row has columns.size() fields
  std::vector<int64_t> lines;         // lines[i]: the 1-based line of the file where rows[i] starts
  char delimiter = ',';
  // What was read but may not be meant, one sentence each, for the user to see (kiln dataset
  // inspect, kiln train, the Studio's Dataset panel): a header row whose every field is a number
  // ("FILE: every field of the header row (line 2) is a number: if it is data, ...").
  std::vector<std::string> notes;
};

// Parses `text` (the whole file). Throws IoError starting "SOURCE:LINE:" for text that is not
// UTF-8 (naming the byte and its column; UTF-16 is named as such), a quoted field that never
// closes, text after a closing quote, a row whose field count differs from the header's (or the
// first row's) — naming both counts —, a header naming a column twice, and a table without rows.
CsvTable parse_csv(std::string_view text, const CsvOptions& options, const std::string& source);

// Reads `path` (gzip-compressed when its content starts with the gzip magic, e.g. *.csv.gz) and
// parses it. IoError naming the path when it is missing, a directory, unreadable, a corrupt
// gzip stream or larger than 1 GiB uncompressed; then parse_csv's errors.
CsvTable read_csv(const std::string& path, const CsvOptions& options = {});

// Whether `field` is a finite number as a table's cells are typed (tabular.h): decimal or
// scientific, a leading '+' allowed, spaces and tabs around it ignored; its value in `out`.
bool parse_number(const std::string& field, double& out);

// The byte offset of the first byte that is not valid UTF-8 (overlong forms, surrogates and
// code points above U+10FFFF are invalid, as in RFC 3629), or npos when all of `text` is valid.
size_t invalid_utf8_offset(std::string_view text);

}  // namespace kiln::data
