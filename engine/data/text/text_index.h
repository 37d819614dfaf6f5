// The samples of a text classification dataset, read from one of three layouts:
//   - a folder per class of .txt files (root/<class>/**/<file>.txt, as torchvision's ImageFolder:
//     classes are the subfolders sorted by name, files found recursively, symlinks followed);
//   - a CSV or TSV table with a text column and a label column (csv_reader.h);
//   - JSON lines (*.jsonl, *.ndjson): one object per line with a string "text" and a string or
//     integer "label".
// Files that cannot be used (not .txt, empty, whitespace only, binary, not UTF-8) are kept in the
// index with the reason; rows of a table or JSON-lines file that are malformed are an IoError
// naming the file and line. Identical texts are dropped (the first kept) before any split, so that
// a text cannot sit in train and test at once.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/data/csv_reader.h"

namespace kiln::data {

struct TextSample {
  std::string text;    // UTF-8, without a byte order mark
  int64_t label = 0;   // index into TextIndex::classes
  std::string origin;  // the file, or "FILE:LINE" for a table row or JSON line
};

struct SkippedText {
  std::string origin;  // the file, or "FILE:LINE"
  std::string reason;  // e.g. "empty file (0 bytes)", "binary file (NUL byte at byte 12)"
};

struct TextIndex {
  std::string source;                // the folder or file it was read from
  std::vector<std::string> classes;  // folder: names sorted by byte order; table/JSONL: see read_text_table
  std::vector<TextSample> samples;   // folder: in class order, then by path; table/JSONL: in file order
  std::vector<SkippedText> skipped;  // left out, with the reason
  int64_t hidden = 0;                // hidden files and folders (names starting with '.') not looked into
  int64_t duplicates_dropped = 0;    // samples whose text equals an earlier one's (drop_duplicates)
  int64_t duplicate_conflicts = 0;   // ... of those, how many had a different label than the kept one
  std::vector<int64_t> labels() const;
  std::vector<int64_t> class_counts() const;
};

struct TextReadOptions {
  std::string text_column = "text";    // table column or JSON key of the text
  std::string label_column = "label";  // table column or JSON key of the label
  bool deduplicate = true;             // drop_duplicates after reading
  CsvOptions csv;                      // delimiter, header, skip_rows of a table
};

// Scans root/<class>/... (see above). Only *.txt files are samples; other files are listed as
// skipped. IoError naming the folder when it is missing or not a folder, has fewer than two class
// folders, or a class folder holds no usable text file.
TextIndex scan_text_folder(const std::string& root, const TextReadOptions& options = {});

// The samples of a parsed table: columns options.text_column and options.label_column. Classes are
// the labels' distinct values sorted (numerically when all are integers). A row with an empty text
// is skipped ("FILE:LINE: empty text"). IoError "FILE:LINE: ..." for a missing column (naming the
// header), an empty label, and fewer than two classes.
TextIndex text_index_from_table(const CsvTable& table, const TextReadOptions& options = {});
// read_csv(path, options.csv) (its errors: not UTF-8, ragged rows, ...), then text_index_from_table.
TextIndex read_text_table(const std::string& path, const TextReadOptions& options = {});

// JSON lines `text` (the whole file; blank lines skipped). IoError "SOURCE:LINE: ..." for text that
// is not UTF-8, a line that is not a JSON object, a missing or non-string text key, a missing,
// empty or non-string/integer label, and fewer than two classes. Classes as text_index_from_table.
TextIndex parse_jsonl(std::string_view text, const TextReadOptions& options, const std::string& source);
TextIndex read_jsonl(const std::string& path, const TextReadOptions& options = {});  // + IoError for I/O

// A folder (scan_text_folder), *.jsonl / *.ndjson (read_jsonl) or a table (read_text_table).
TextIndex read_text_dataset(const std::string& path, const TextReadOptions& options = {});

// Drops every sample whose text is byte-identical to an earlier sample's, counting them in
// duplicates_dropped (and duplicate_conflicts when the labels differ). The order is kept.
void drop_duplicates(TextIndex& index);

// Why `bytes` (a file's content) is not usable text, or "" when it is: "empty file (0 bytes)",
// "binary file (NUL byte at byte N)", "invalid UTF-8 at byte N (0xNN)", "only whitespace".
std::string unusable_text_reason(std::string_view bytes);

}  // namespace kiln::data
