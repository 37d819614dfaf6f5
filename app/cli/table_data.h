// CSV/TSV tables as the data of `kiln train --dataset csv:FILE` and `kiln eval`: the table flags and
// the run file table.json. Loading, the run description and the summary are engine/data/
// table_source.h's (shared with Kiln Studio).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "app/cli/args.h"
#include "engine/data/table_source.h"

namespace kiln::cli {

inline constexpr const char* kRunTableFile = "table.json";     // in the run directory
inline constexpr const char* kTableMetadataKey = "kiln.table";  // model.safetensors metadata naming it

// The loading itself is the engine's (engine/data/table_source.h), shared with Kiln Studio.
using data::is_csv_dataset;
using data::kCsvPrefix;
using data::load_run_table;
using data::load_table;
using data::run_table_json;
using data::table_summary;
using data::TableConfig;

// Adds --label, --no-header, --skip-rows, --delimiter, --task, --missing, --column-types and
// --test-fraction to a command's flags.
ArgParser& add_table_flags(ArgParser& p);
// The table flags' values for dataset "csv:FILE" (seed: the split's); UsageError for a bad value,
// and for a table flag given with another dataset.
TableConfig table_config(const Args& args, const std::string& dataset, uint64_t seed);

}  // namespace kiln::cli
