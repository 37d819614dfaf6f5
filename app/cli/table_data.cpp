#include "app/cli/table_data.h"
#include "app/cli/text_data.h"

#include <sstream>

#include "app/cli/image_data.h"
#include "engine/core/error.h"

namespace kiln::cli {

namespace {

constexpr const char* kTableFlags[] = {"label",   "no-header",    "skip-rows",     "delimiter",
                                       "task",    "missing",      "column-types",  "test-fraction"};

}  // namespace

ArgParser& add_table_flags(ArgParser& p) {
  return p
      .flag("label", "COLUMN", "", "csv: the label column, by header name or 0-based index (-1 = the last;\n"
                                   "default: the last column)")
      .toggle("no-header", "csv: the first row is data; columns are named by index 0, 1, ...")
      .flag("skip-rows", "N", "0", "csv: lines to skip before the header or data (1 for scikit-learn's\n"
                                   "bundled tables, whose first line is a count line)")
      .flag("delimiter", "C", "auto", "csv: field delimiter: , ; | tab (auto: tab for *.tsv, else the most\n"
                                      "frequent of tab , ; in the first line)")
      .flag("task", "T", "classification", "csv: classification (classes from the label's values, cross-entropy)\n"
                                           "or regression (one output, mse_loss)",
            {"classification", "regression"})
      .flag("missing", "POLICY", "error", "csv: missing values (empty, NA, NaN, ?, ...): error names the line;\n"
                                          "drop drops the row; fill uses the training split's mean or mode",
            {"error", "drop", "fill"})
      .flag("column-types", "LIST", "", "csv: type overrides, COLUMN=TYPE[,COLUMN=TYPE...] with TYPE numeric,\n"
                                        "categorical (one-hot), text or ignore (both left out)")
      .flag("test-fraction", "F", "0.2", "csv, images, text: fraction of the rows, images or texts held out as the test split\n"
                                         "(stratified by class, by --seed; an image folder with train/ and test/\n"
                                         "subfolders uses those)");
}

TableConfig table_config(const Args& args, const std::string& dataset, uint64_t seed) {
  TableConfig t;
  if (!is_csv_dataset(dataset)) {
    for (const char* f : kTableFlags)
      if (args.given(f) && !((is_image_dataset(dataset) || is_text_dataset(dataset)) && std::string(f) == "test-fraction")) args.fail(std::string("--") + f + " applies to --dataset csv:FILE only");
    return t;
  }
  t.path = dataset.substr(std::string(kCsvPrefix).size());
  if (t.path.empty()) args.fail("--dataset csv:FILE needs a file, e.g. csv:iris.csv");
  t.csv.header = !args.given("no-header");
  t.csv.skip_rows = args.integer("skip-rows", 0);
  const std::string d = args.str("delimiter");
  if (d == "tab" || d == "\\t" || d == "\t") t.csv.delimiter = '\t';
  else if (d == "auto") t.csv.delimiter = 0;
  else if (d.size() == 1 && d != "\"" && d != "\n" && d != "\r") t.csv.delimiter = d[0];
  else args.fail("--delimiter expects one character or 'tab', got '" + d + "'");
  t.tabular.label = args.str("label");
  t.tabular.task = data::parse_task(args.str("task"));
  t.tabular.missing = data::parse_missing_policy(args.str("missing"));
  std::stringstream types(args.str("column-types"));
  for (std::string item; std::getline(types, item, ',');) {
    if (item.empty()) continue;
    const size_t eq = item.rfind('=');
    if (eq == std::string::npos || eq == 0) args.fail("--column-types expects COLUMN=TYPE items, got '" + item + "'");
    try {
      data::parse_column_type(item.substr(eq + 1));
    } catch (const ValueError& e) {
      args.fail(std::string("--column-types: ") + e.what());
    }
    t.tabular.types.push_back(item);
  }
  t.tabular.test_fraction = args.number("test-fraction", 0, 0.95);
  t.tabular.seed = seed;
  return t;
}

}  // namespace kiln::cli
