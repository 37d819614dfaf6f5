// libFuzzer target for the CSV reader and tabular preparation (not built by CMake or run by CI;
// see run_csv.sh): the first byte picks the options (header, skip rows, delimiter, task,
// missing-value policy, test fraction), the rest is the file's text. parse_csv, then
// prepare_tabular on the last column, then the schema's JSON round trip and a second
// prepare_tabular with the fitted schema. A kiln::Error is the expected answer to bad input;
// anything else escaping, a crash, an ASan report or a hang is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/core/error.h"
#include "engine/data/csv_reader.h"
#include "engine/data/tabular.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t k = data[0];
  std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  kiln::data::CsvOptions csv;
  csv.header = (k & 1) != 0;
  csv.skip_rows = (k >> 1) & 1;
  static const char delimiters[] = {0, ',', '\t', ';'};
  csv.delimiter = delimiters[(k >> 2) & 3];
  kiln::data::TabularOptions tab;
  tab.label = (k & 16) ? "-1" : "0";
  tab.task = (k & 32) ? kiln::data::Task::regression : kiln::data::Task::classification;
  tab.missing = static_cast<kiln::data::MissingPolicy>((k >> 6) % 3);
  tab.test_fraction = (k & 128) ? 0.5 : 0.2;
  tab.max_categories = 8;
  try {
    kiln::data::CsvTable t = kiln::data::parse_csv(text, csv, "<fuzz input>");
    kiln::data::TabularData d = kiln::data::prepare_tabular(t, tab);
    kiln::data::TabularSchema s = kiln::data::TabularSchema::from_json(d.schema.to_json(), "<schema>");
    (void)kiln::data::prepare_tabular(t, tab, &s);
  } catch (const kiln::Error&) {
    // a clear error: the expected outcome for malformed tables
  }
  return 0;
}
