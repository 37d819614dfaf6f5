#include "app/cli/table_data.h"
#include "app/cli/text_data.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/cli/image_data.h"
#include "engine/core/error.h"

namespace kiln::cli {

namespace {

constexpr const char* kTableFlags[] = {"label",   "no-header",    "skip-rows",     "delimiter",
                                       "task",    "missing",      "column-types",  "test-fraction"};

std::string delimiter_name(char d) { return d == '\t' ? "tab" : d == 0 ? "auto" : std::string(1, d); }

}  // namespace

bool is_csv_dataset(const std::string& dataset) { return dataset.rfind(kCsvPrefix, 0) == 0; }

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

data::TabularData load_table(const TableConfig& config, const data::TabularSchema* fitted) {
  return data::prepare_tabular(data::read_csv(config.path, config.csv), config.tabular, fitted);
}

std::string run_table_json(const TableConfig& c, const data::TabularSchema& schema) {
  nlohmann::ordered_json source = {
      {"file", std::filesystem::absolute(c.path).lexically_normal().string()},
      {"header", c.csv.header},
      {"skip_rows", c.csv.skip_rows},
      {"delimiter", delimiter_name(c.csv.delimiter)},
      {"missing", data::missing_policy_name(c.tabular.missing)},
      {"test_fraction", c.tabular.test_fraction},
      {"seed", c.tabular.seed},
      {"max_categories", c.tabular.max_categories},
  };
  nlohmann::ordered_json j = {{"source", source}, {"schema", nlohmann::ordered_json::parse(schema.to_json())}};
  return j.dump(2) + "\n";
}

std::pair<TableConfig, data::TabularSchema> load_run_table(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  KILN_CHECK(in, IoError, path, ": cannot read the run's table description");
  std::stringstream text;
  text << in.rdbuf();
  try {
    const nlohmann::json j = nlohmann::json::parse(text.str());
    const nlohmann::json& s = j.at("source");
    TableConfig c;
    c.path = s.at("file").get<std::string>();
    c.csv.header = s.at("header").get<bool>();
    c.csv.skip_rows = s.at("skip_rows").get<int64_t>();
    const std::string d = s.at("delimiter").get<std::string>();
    c.csv.delimiter = d == "tab" ? '\t' : d == "auto" ? '\0' : d.at(0);
    c.tabular.missing = data::parse_missing_policy(s.at("missing").get<std::string>());
    c.tabular.test_fraction = s.at("test_fraction").get<double>();
    c.tabular.seed = s.at("seed").get<uint64_t>();
    c.tabular.max_categories = s.at("max_categories").get<int64_t>();
    data::TabularSchema schema = data::TabularSchema::from_json(j.at("schema").dump(), path);
    c.tabular.task = schema.task;
    c.tabular.label = schema.label;
    return {c, schema};
  } catch (const nlohmann::json::exception& e) {
    throw IoError(path + ": malformed table description (" + e.what() + ")");
  } catch (const ValueError& e) {
    throw IoError(path + ": " + e.what());
  }
}

nlohmann::ordered_json table_summary(const TableConfig& c, const data::TabularData& d, int64_t n_train,
                                     int64_t n_validation, int64_t n_test) {
  nlohmann::ordered_json columns = nlohmann::ordered_json::array();
  int64_t missing = 0;
  for (const data::ColumnInfo& col : d.schema.columns) {
    nlohmann::ordered_json e = {{"name", col.name}, {"type", data::column_type_name(col.type)},
                                {"missing", col.missing}};
    if (col.type == data::ColumnType::categorical) e["categories"] = col.categories.size();
    columns.push_back(e);
    missing += col.missing;
  }
  nlohmann::ordered_json j = {
      {"kind", "csv"},
      {"file", c.path},
      {"task", data::task_name(d.schema.task)},
      {"label", d.schema.label},
  };
  if (d.schema.task == data::Task::classification) j["classes"] = d.schema.classes;
  j["features"] = d.schema.num_features();
  j["rows"] = d.rows;
  j["rows_dropped"] = d.rows_dropped;
  j["missing_policy"] = data::missing_policy_name(c.tabular.missing);
  j["missing_values"] = missing;
  j["samples"] = {{"train", n_train}, {"validation", n_validation}, {"test", n_test}};
  j["test_fraction"] = c.tabular.test_fraction;
  j["columns"] = columns;
  return j;
}

}  // namespace kiln::cli
