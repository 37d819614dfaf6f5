#include "engine/data/tabular.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "engine/core/error.h"
#include "engine/data/dataset.h"

namespace kiln::data {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

const char* column_type_name(ColumnType t) {
  switch (t) {
    case ColumnType::numeric: return "numeric";
    case ColumnType::categorical: return "categorical";
    case ColumnType::text: return "text";
    case ColumnType::ignore: return "ignore";
  }
  return "?";
}
const char* task_name(Task t) { return t == Task::classification ? "classification" : "regression"; }
const char* missing_policy_name(MissingPolicy p) {
  return p == MissingPolicy::error ? "error" : p == MissingPolicy::drop ? "drop" : "fill";
}
ColumnType parse_column_type(const std::string& name) {
  for (ColumnType t : {ColumnType::numeric, ColumnType::categorical, ColumnType::text, ColumnType::ignore})
    if (name == column_type_name(t)) return t;
  throw ValueError("unknown column type '" + name + "'; known: numeric, categorical, text, ignore");
}
Task parse_task(const std::string& name) {
  if (name == "classification") return Task::classification;
  if (name == "regression") return Task::regression;
  throw ValueError("unknown task '" + name + "'; known: classification, regression");
}
MissingPolicy parse_missing_policy(const std::string& name) {
  for (MissingPolicy p : {MissingPolicy::error, MissingPolicy::drop, MissingPolicy::fill})
    if (name == missing_policy_name(p)) return p;
  throw ValueError("unknown missing-value policy '" + name + "'; known: error, drop, fill");
}

const std::vector<std::string>& missing_markers() {
  static const std::vector<std::string> markers = {"", "NA", "N/A", "n/a", "NaN", "nan", "null", "NULL", "None", "#N/A", "?"};
  return markers;
}

bool is_missing(const std::string& field) {
  static const std::set<std::string, std::less<>> markers(missing_markers().begin(), missing_markers().end());
  return markers.count(trim(field)) > 0;
}

int64_t ColumnInfo::width() const {
  if (type == ColumnType::numeric) return 1;
  if (type == ColumnType::categorical) return static_cast<int64_t>(categories.size());
  return 0;
}

int64_t TabularSchema::num_features() const {
  int64_t f = 0;
  for (const ColumnInfo& c : columns) f += c.width();
  return f;
}

int64_t TabularSchema::num_outputs() const {
  return task == Task::regression ? 1 : static_cast<int64_t>(classes.size());
}

std::string TabularSchema::to_json() const {
  nlohmann::ordered_json j = {{"format", "kiln.tabular"}, {"version", 1}, {"task", task_name(task)},
                              {"label", label},          {"label_index", label_index}};
  if (task == Task::classification) j["classes"] = classes;
  j["columns"] = nlohmann::ordered_json::array();
  for (const ColumnInfo& c : columns) {
    nlohmann::ordered_json col = {{"name", c.name}, {"index", c.index}, {"type", column_type_name(c.type)},
                                  {"missing", c.missing}};
    if (c.type == ColumnType::numeric) col["mean"] = c.mean, col["scale"] = c.scale;
    if (c.type == ColumnType::categorical) col["categories"] = c.categories, col["mode"] = c.mode;
    j["columns"].push_back(col);
  }
  return j.dump(2) + "\n";
}

TabularSchema TabularSchema::from_json(const std::string& text, const std::string& source) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    KILN_CHECK(j.at("format") == "kiln.tabular" && j.at("version") == 1, IoError, source,
               ": not a kiln.tabular version 1 file");
    TabularSchema s;
    s.task = parse_task(j.at("task").get<std::string>());
    s.label = j.at("label").get<std::string>();
    s.label_index = j.at("label_index").get<int64_t>();
    if (s.task == Task::classification) s.classes = j.at("classes").get<std::vector<std::string>>();
    for (const auto& col : j.at("columns")) {
      ColumnInfo c;
      c.name = col.at("name").get<std::string>();
      c.index = col.at("index").get<int64_t>();
      c.type = parse_column_type(col.at("type").get<std::string>());
      c.missing = col.value("missing", int64_t{0});
      if (c.type == ColumnType::numeric) c.mean = col.at("mean").get<double>(), c.scale = col.at("scale").get<double>();
      if (c.type == ColumnType::categorical) {
        c.categories = col.at("categories").get<std::vector<std::string>>();
        c.mode = col.at("mode").get<std::string>();
      }
      s.columns.push_back(std::move(c));
    }
    return s;
  } catch (const nlohmann::json::exception& e) {
    throw IoError(source + ": malformed table schema (" + e.what() + ")");
  } catch (const ValueError& e) {
    throw IoError(source + ": " + e.what());
  }
}

std::pair<std::vector<int64_t>, std::vector<int64_t>> stratified_split(const std::vector<int64_t>& labels,
                                                                       double test_fraction, uint64_t seed) {
  KILN_CHECK(test_fraction >= 0 && test_fraction < 1, ValueError, "the test fraction must be in [0, 1), got ",
             test_fraction);
  std::vector<std::vector<int64_t>> members;
  for (size_t i = 0; i < labels.size(); ++i) {
    KILN_CHECK(labels[i] >= 0, ValueError, "stratified_split: negative label ", labels[i]);
    if (static_cast<size_t>(labels[i]) >= members.size()) members.resize(static_cast<size_t>(labels[i]) + 1);
    members[static_cast<size_t>(labels[i])].push_back(static_cast<int64_t>(i));
  }
  const double n = static_cast<double>(labels.size());
  auto n_test = static_cast<int64_t>(std::ceil(test_fraction * n - 1e-9));
  // Per class: the floor of its share, then one more to the largest remainders.
  std::vector<int64_t> take(members.size());
  std::vector<std::pair<double, size_t>> remainders;
  for (size_t c = 0; c < members.size(); ++c) {
    const double share = test_fraction * static_cast<double>(members[c].size());
    const int64_t cap = std::max<int64_t>(0, static_cast<int64_t>(members[c].size()) - 1);
    take[c] = std::min<int64_t>(static_cast<int64_t>(std::floor(share)), cap);
    n_test -= take[c];
    if (take[c] < cap) remainders.push_back({share - std::floor(share), c});
  }
  std::stable_sort(remainders.begin(), remainders.end(), [](auto& a, auto& b) { return a.first > b.first; });
  for (size_t k = 0; k < remainders.size() && n_test > 0; ++k, --n_test) ++take[remainders[k].second];
  std::vector<int64_t> train, test;
  for (size_t c = 0; c < members.size(); ++c) {
    const std::vector<int64_t> order =
        seeded_permutation(static_cast<int64_t>(members[c].size()), seed, /*stream=*/c + 1);
    for (size_t k = 0; k < order.size(); ++k)
      (static_cast<int64_t>(k) < take[c] ? test : train).push_back(members[c][static_cast<size_t>(order[k])]);
  }
  std::sort(train.begin(), train.end());
  std::sort(test.begin(), test.end());
  return {train, test};
}

}  // namespace kiln::data
