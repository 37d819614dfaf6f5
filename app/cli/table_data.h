// CSV/TSV tables as the data of `kiln train --dataset csv:FILE` and `kiln eval` (engine/data/
// tabular.h): the table flags, loading and splitting, and the run file table.json that keeps
// how the table was read plus the preprocessing fitted on its training split, so that `kiln
// eval` rebuilds the same test split with the same standardization.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "app/cli/args.h"
#include "engine/data/csv_reader.h"
#include "engine/data/tabular.h"

namespace kiln::cli {

inline constexpr const char* kCsvPrefix = "csv:";
inline constexpr const char* kRunTableFile = "table.json";     // in the run directory
inline constexpr const char* kTableMetadataKey = "kiln.table";  // model.safetensors metadata naming it

// Whether `dataset` is "csv:FILE" (FILE may be .csv, .tsv, or either gzip-compressed).
bool is_csv_dataset(const std::string& dataset);

// How a table is read, typed and split.
struct TableConfig {
  std::string path;
  data::CsvOptions csv;
  data::TabularOptions tabular;
};

// Adds --label, --no-header, --skip-rows, --delimiter, --task, --missing, --column-types and
// --test-fraction to a command's flags.
ArgParser& add_table_flags(ArgParser& p);
// The table flags' values for dataset "csv:FILE" (seed: the split's); UsageError for a bad value,
// and for a table flag given with another dataset.
TableConfig table_config(const Args& args, const std::string& dataset, uint64_t seed);

// Reads and prepares the table (engine errors name file, line and column). With `fitted`, its
// types and fitted values are applied instead of fitting new ones.
data::TabularData load_table(const TableConfig& config, const data::TabularSchema* fitted = nullptr);

// table.json: {"source": how the table was read and split, "schema": TabularSchema::to_json}.
std::string run_table_json(const TableConfig& config, const data::TabularSchema& schema);
// Reads a run's table.json; IoError naming path when it is missing or malformed.
std::pair<TableConfig, data::TabularSchema> load_run_table(const std::string& path);

// summary.json's "data" entry: kind, file, task, label, classes, sample counts, rows dropped,
// and each column's type and missing values.
nlohmann::ordered_json table_summary(const TableConfig& config, const data::TabularData& data, int64_t n_train,
                                     int64_t n_validation, int64_t n_test);

}  // namespace kiln::cli
