#include "engine/data/table_source.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/core/error.h"

namespace kiln::data {

namespace {
std::string delimiter_name(char d) { return d == '\t' ? "tab" : d == 0 ? "auto" : std::string(1, d); }
}  // namespace

bool is_csv_dataset(const std::string& spec) { return spec.rfind(kCsvPrefix, 0) == 0; }

TabularData load_table(const TableConfig& config, const TabularSchema* fitted) {
  return prepare_tabular(read_csv(config.path, config.csv), config.tabular, fitted);
}

std::string run_table_json(const TableConfig& c, const TabularSchema& schema) {
  nlohmann::ordered_json source = {
      {"file", std::filesystem::absolute(c.path).lexically_normal().string()},
      {"header", c.csv.header},
      {"skip_rows", c.csv.skip_rows},
      {"delimiter", delimiter_name(c.csv.delimiter)},
      {"missing", missing_policy_name(c.tabular.missing)},
      {"test_fraction", c.tabular.test_fraction},
      {"seed", c.tabular.seed},
      {"max_categories", c.tabular.max_categories},
  };
  nlohmann::ordered_json j = {{"source", source}, {"schema", nlohmann::ordered_json::parse(schema.to_json())}};
  return j.dump(2) + "\n";
}

std::pair<TableConfig, TabularSchema> load_run_table(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  KILN_CHECK(in, IoError, path, ": cannot read the run's table description");
  std::stringstream text;
  text << in.rdbuf();
  return parse_run_table(text.str(), path);
}

std::pair<TableConfig, TabularSchema> parse_run_table(const std::string& text, const std::string& path) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    const nlohmann::json& s = j.at("source");
    TableConfig c;
    c.path = s.at("file").get<std::string>();
    c.csv.header = s.at("header").get<bool>();
    c.csv.skip_rows = s.at("skip_rows").get<int64_t>();
    const std::string d = s.at("delimiter").get<std::string>();
    c.csv.delimiter = d == "tab" ? '\t' : d == "auto" ? '\0' : d.at(0);
    c.tabular.missing = parse_missing_policy(s.at("missing").get<std::string>());
    c.tabular.test_fraction = s.at("test_fraction").get<double>();
    c.tabular.seed = s.at("seed").get<uint64_t>();
    c.tabular.max_categories = s.at("max_categories").get<int64_t>();
    TabularSchema schema = TabularSchema::from_json(j.at("schema").dump(), path);
    c.tabular.task = schema.task;
    c.tabular.label = schema.label;
    return {c, schema};
  } catch (const nlohmann::json::exception& e) {
    throw IoError(path + ": malformed table description (" + e.what() + ")");
  } catch (const ValueError& e) {
    throw IoError(path + ": " + e.what());
  }
}

nlohmann::ordered_json table_summary(const TableConfig& c, const TabularData& d, int64_t n_train,
                                     int64_t n_validation, int64_t n_test) {
  nlohmann::ordered_json columns = nlohmann::ordered_json::array();
  int64_t missing = 0;
  for (const ColumnInfo& col : d.schema.columns) {
    nlohmann::ordered_json e = {{"name", col.name}, {"type", column_type_name(col.type)},
                                {"missing", col.missing}};
    if (col.type == ColumnType::categorical) e["categories"] = col.categories.size();
    columns.push_back(e);
    missing += col.missing;
  }
  nlohmann::ordered_json j = {
      {"kind", "csv"},
      {"file", c.path},
      {"task", task_name(d.schema.task)},
      {"label", d.schema.label},
  };
  if (d.schema.task == Task::classification) j["classes"] = d.schema.classes;
  j["features"] = d.schema.num_features();
  j["rows"] = d.rows;
  j["rows_dropped"] = d.rows_dropped;
  j["missing_policy"] = missing_policy_name(c.tabular.missing);
  j["missing_values"] = missing;
  j["samples"] = {{"train", n_train}, {"validation", n_validation}, {"test", n_test}};
  j["test_fraction"] = c.tabular.test_fraction;
  j["columns"] = columns;
  return j;
}

}  // namespace kiln::data
