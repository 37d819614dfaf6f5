// Tables (csv_reader.h) as training data: typed columns, a label, a missing-value policy, a
// stratified train/test split, and the preprocessing fitted on the training split only
// (standardization of numeric columns, one-hot categories, fill values), kept in a
// TabularSchema that is saved with the model and applied again by `kiln eval`.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/data/csv_reader.h"

namespace kiln::data {

// numeric: a number per row (standardized); categorical: a few distinct strings (one-hot);
// text: many distinct strings (not a feature yet); ignore: left out.
enum class ColumnType { numeric, categorical, text, ignore };
enum class Task { classification, regression };
// What to do with a missing value (an empty field or one of kMissingMarkers) in a feature:
// error names file, line and column; drop removes the row; fill puts in the training split's
// mean (numeric) or most frequent value (categorical), as sklearn's SimpleImputer does.
// A row whose label is missing is an error under `error`, else dropped (a label is not filled).
enum class MissingPolicy { error, drop, fill };

const char* column_type_name(ColumnType t);  // "numeric", ...
const char* task_name(Task t);               // "classification", "regression"
const char* missing_policy_name(MissingPolicy p);  // "error", "drop", "fill"
// ValueError listing the names for anything else.
ColumnType parse_column_type(const std::string& name);
Task parse_task(const std::string& name);
MissingPolicy parse_missing_policy(const std::string& name);

// The fields read as missing: pandas.read_csv's default na_values that occur in practice
// ("", "NA", "N/A", "n/a", "NaN", "nan", "null", "NULL", "None", "#N/A") and UCI's "?".
bool is_missing(const std::string& field);
// Those markers (is_missing also takes them with spaces around).
const std::vector<std::string>& missing_markers();

struct TabularOptions {
  // The label column: a header name, or an index (0-based; negative counts from the end,
  // -1 = the last column). A name wins over an index when both could apply.
  std::string label;
  Task task = Task::classification;
  MissingPolicy missing = MissingPolicy::error;
  // Type overrides, "column=type" with a column as in `label`, e.g. {"zip=categorical"}.
  std::vector<std::string> types;
  // A column of strings (not all numbers) with at most this many distinct values is
  // categorical, else text.
  int64_t max_categories = 50;
  double test_fraction = 0.2;  // in [0, 1); of the rows kept (sklearn's train_test_split rounds up)
  uint64_t seed = 0;           // of the split
};

struct ColumnInfo {
  std::string name;
  int64_t index = 0;                    // in the file, 0-based
  ColumnType type = ColumnType::numeric;
  int64_t missing = 0;                  // missing fields in the file (before any row is dropped)
  // Fitted on the training split:
  double mean = 0, scale = 1;           // numeric: x -> (x - mean) / scale; scale is the population
                                        // std (ddof 0, as sklearn's StandardScaler), 1 when it is 0
  std::vector<std::string> categories;  // categorical: sorted; a value not among them encodes as zeros
                                        // (TabularData::unseen_categories lists them)
  std::string mode;                     // categorical: the fill value
  int64_t width() const;                // features it gives: 1, categories.size(), or 0
};

// Everything needed to turn a row of the table into the model's input, and its label into a target.
struct TabularSchema {
  std::vector<ColumnInfo> columns;   // every column except the label, in file order
  std::string label;                 // the label column's name
  int64_t label_index = 0;
  Task task = Task::classification;
  std::vector<std::string> classes;  // classification: the label's distinct values (numeric order
                                     // when all are numbers, else sorted); class i = classes[i]
  int64_t num_features() const;      // the input's width F
  int64_t num_outputs() const;       // classes.size(), or 1 for regression
  // Stable JSON (format "kiln.tabular", version 1) and back; from_json throws IoError naming
  // `source` for malformed text.
  std::string to_json() const;
  static TabularSchema from_json(const std::string& text, const std::string& source);
};

struct TabularData {
  TabularSchema schema;
  Tensor x_train, x_test;  // f32 [N_train, F], [N_test, F]
  Tensor y_train, y_test;  // i64 [N] class indices, or f32 [N, 1] for regression
  std::vector<int64_t> train_rows, test_rows;  // indices into the table's rows, ascending
  int64_t rows = 0;          // data rows in the file
  int64_t rows_dropped = 0;  // by MissingPolicy::drop or a missing label
  // Categorical fields whose value is not among the column's fitted categories (a test row's, or
  // any row's with a `fitted` schema), encoded as none of them (all zeros, as scikit-learn's
  // OneHotEncoder(handle_unknown='ignore')): {row, column}, an index into the table's rows and one
  // into schema.columns, in encoding order (the training rows, then the test rows).
  std::vector<std::pair<int64_t, int64_t>> unseen_categories;
  std::vector<std::string> notes;  // the CSV reader's (CsvTable::notes)
};

// Types the columns, applies the missing-value policy, splits (stratified by class for
// classification; test_fraction 0 gives an empty test split) and fits the preprocessing on
// the training rows. With `fitted` (a schema saved by an earlier run), its column types,
// classes and fitted values are used instead, and the split is made the same way.
// Throws ValueError for options that do not fit the table (unknown label or column, bad
// type name), and IoError starting "FILE:LINE: column 'NAME' (N)" for data that do not fit:
// text in a numeric column, a missing value under MissingPolicy::error, a label with one
// class, a non-numeric regression label, a label not among `fitted`'s classes.
TabularData prepare_tabular(const CsvTable& table, const TabularOptions& options,
                            const TabularSchema* fitted = nullptr);

// Row positions {train, test} of a split of labels into classes (labels[i] in [0, C)): each
// class sends round(test_fraction * its count) rows to test (the remainders going to the
// classes with the largest, as sklearn's StratifiedShuffleSplit), ceil(test_fraction * N) in
// all, keeping at least one row of each class in train. The order depends only on the seed;
// each list is ascending. ValueError for a fraction outside [0, 1) or a negative label.
std::pair<std::vector<int64_t>, std::vector<int64_t>> stratified_split(const std::vector<int64_t>& labels,
                                                                       double test_fraction, uint64_t seed);

}  // namespace kiln::data
