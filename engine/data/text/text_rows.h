// The texts of a CSV/TSV table or a JSON-lines file to predict on (`kiln predict --run RUN --input
// FILE`): the text column (or key) of every row, the label when the file has the label column too,
// and for a row that cannot be used the reason instead of a text, so that each row gets one line
// of output. Unlike text_index.h's readers, which build a training set, a row's problem is kept
// with the row (empty or whitespace-only text, binary or invalid UTF-8 text, a JSON line that is
// not an object or lacks the text key), and duplicates are kept.
#pragma once
#include <string>
#include <vector>

#include "engine/data/text/text_index.h"

namespace kiln::data {

struct TextRow {
  std::string origin;  // "FILE:LINE"
  std::string text;    // UTF-8; empty when error is set
  std::string label;   // the label column's value, "" when the file has none (or the row left it empty)
  std::string error;   // why the row has no text, or ""
};

struct TextRows {
  std::vector<TextRow> rows;   // in file order
  bool has_labels = false;     // the table has options.label_column / some JSON line has its key
};

// A *.jsonl / *.ndjson file (one JSON object per line, blank lines skipped; a label that is an
// integer is written in decimal) or else a CSV/TSV table (csv_reader.h's read_csv with
// options.csv). IoError naming the file for I/O errors and csv_reader's errors (ragged rows, text
// that is not UTF-8); IoError "FILE:1: no column 'NAME' (header: ...)" when a table lacks the text
// column. options.deduplicate is ignored.
TextRows read_text_rows(const std::string& path, const TextReadOptions& options = {});

// Whether `path` names a JSON-lines file by its extension (.jsonl, .ndjson).
bool is_jsonl_path(const std::string& path);

}  // namespace kiln::data
