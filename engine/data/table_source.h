// CSV/TSV tables opened from a spec ("csv:FILE"), shared by `kiln train|eval` (app/cli) and Kiln
// Studio (app/studio): how a table is read, typed and split (TableConfig), loading it with the
// preprocessing fitted on its training split (tabular.h), the run description table.json that
// keeps both so that an evaluation rebuilds the same test split, and the summary of the data.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "engine/data/csv_reader.h"
#include "engine/data/tabular.h"

namespace kiln::data {

inline constexpr const char* kCsvPrefix = "csv:";

// Whether `spec` is "csv:FILE" (FILE may be .csv, .tsv, or either gzip-compressed).
bool is_csv_dataset(const std::string& spec);

// How a table is read, typed and split.
struct TableConfig {
  std::string path;
  CsvOptions csv;
  TabularOptions tabular;
};

// Reads and prepares the table (csv_reader.h's and tabular.h's errors name file, line and column).
// With `fitted`, its types and fitted values are applied instead of fitting new ones.
TabularData load_table(const TableConfig& config, const TabularSchema* fitted = nullptr);

// table.json: {"source": how the table was read and split, "schema": TabularSchema::to_json}.
std::string run_table_json(const TableConfig& config, const TabularSchema& schema);
// Reads a run's table.json; IoError naming path when it is missing or malformed.
std::pair<TableConfig, TabularSchema> load_run_table(const std::string& path);
// The same from the text of a table.json; `path` names where it came from in the errors.
std::pair<TableConfig, TabularSchema> parse_run_table(const std::string& text, const std::string& path);

// summary.json's "data" entry: kind, file, task, label, classes, sample counts, rows dropped,
// and each column's type and missing values.
nlohmann::ordered_json table_summary(const TableConfig& config, const TabularData& data, int64_t n_train,
                                     int64_t n_validation, int64_t n_test);

}  // namespace kiln::data
