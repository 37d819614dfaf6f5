// prepare_tabular (tabular.h): typing, missing values, the split, fitting and encoding.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>

#include "engine/core/error.h"
#include "engine/data/dataset.h"
#include "engine/data/tabular.h"

namespace kiln::data {

namespace {

std::string where(const CsvTable& t, size_t row, int64_t col) {
  return detail::str_cat(t.source, ":", t.lines[row], ", column '", t.columns[static_cast<size_t>(col)], "' (field ",
                         col + 1, ")");
}

// The column `spec` names: a header name first, else a 0-based index (negative from the end).
int64_t column_of(const CsvTable& t, const std::string& spec, const char* what) {
  const auto n = static_cast<int64_t>(t.columns.size());
  for (int64_t i = 0; i < n; ++i)
    if (t.columns[static_cast<size_t>(i)] == spec) return i;
  int64_t index = 0;
  auto [end, ec] = std::from_chars(spec.data(), spec.data() + spec.size(), index);
  if (!spec.empty() && ec == std::errc() && end == spec.data() + spec.size()) {
    if (index < 0) index += n;
    KILN_CHECK(index >= 0 && index < n, ValueError, t.source, ": the ", what, " column index ", spec,
               " is out of range (the table has ", n, " columns: 0 to ", n - 1, ", or -1 for the last)");
    return index;
  }
  std::string names;
  for (size_t i = 0; i < t.columns.size() && i < 12; ++i) names += (i ? ", " : "") + t.columns[i];
  if (t.columns.size() > 12) names += ", ...";
  throw ValueError(detail::str_cat(t.source, ": no ", what, " column '", spec, "' (its columns: ", names,
                                   "; a column may also be given by its 0-based index)"));
}

// Types every column but the label from its values (or the override), and finds the classes.
TabularSchema infer_schema(const CsvTable& t, const TabularOptions& o) {
  TabularSchema s;
  s.task = o.task;
  s.label_index = column_of(t, o.label.empty() ? "-1" : o.label, "label");
  s.label = t.columns[static_cast<size_t>(s.label_index)];
  std::map<int64_t, ColumnType> overrides;
  for (const std::string& spec : o.types) {
    const size_t eq = spec.rfind('=');
    KILN_CHECK(eq != std::string::npos && eq > 0, ValueError, "a column type is given as COLUMN=TYPE, got '", spec,
               "'");
    const int64_t col = column_of(t, spec.substr(0, eq), "typed");
    KILN_CHECK(col != s.label_index, ValueError, "'", spec, "' types the label column; use the task instead");
    overrides[col] = parse_column_type(spec.substr(eq + 1));
  }
  for (int64_t c = 0; c < static_cast<int64_t>(t.columns.size()); ++c) {
    if (c == s.label_index) continue;
    ColumnInfo info;
    info.name = t.columns[static_cast<size_t>(c)];
    info.index = c;
    int64_t numbers = 0, others = 0;
    std::set<std::string> distinct;
    for (const auto& row : t.rows) {
      const std::string& f = row[static_cast<size_t>(c)];
      double v;
      if (is_missing(f)) continue;
      if (parse_number(f, v)) ++numbers;
      else ++others;
      if (distinct.size() <= static_cast<size_t>(o.max_categories)) distinct.insert(f);
    }
    if (auto it = overrides.find(c); it != overrides.end()) info.type = it->second;
    else if (numbers + others == 0) info.type = ColumnType::ignore;  // nothing but missing values
    else if (numbers >= others) info.type = ColumnType::numeric;     // text among numbers: an error later
    else if (static_cast<int64_t>(distinct.size()) <= o.max_categories) info.type = ColumnType::categorical;
    else info.type = ColumnType::text;
    s.columns.push_back(std::move(info));
  }
  if (s.task == Task::classification) {
    std::set<std::string> values;
    for (const auto& row : t.rows)
      if (!is_missing(row[static_cast<size_t>(s.label_index)])) values.insert(row[static_cast<size_t>(s.label_index)]);
    s.classes.assign(values.begin(), values.end());
    // Numeric order when every class is a number ("2" before "10").
    std::vector<std::pair<double, std::string>> keyed;
    for (const std::string& v : s.classes) {
      double x;
      if (!parse_number(v, x)) break;
      keyed.push_back({x, v});
    }
    if (keyed.size() == s.classes.size()) {
      std::stable_sort(keyed.begin(), keyed.end(), [](auto& a, auto& b) { return a.first < b.first; });
      for (size_t i = 0; i < keyed.size(); ++i) s.classes[i] = keyed[i].second;
    }
    KILN_CHECK(s.classes.size() >= 2, IoError, t.source, ", column '", s.label, "' (field ", s.label_index + 1,
               "): the label has ", s.classes.empty() ? "no values" : "one value ('" + s.classes[0] + "')",
               " in every row; classification needs at least two classes (is it the right label column?)");
  }
  return s;
}

// The fitted schema's columns must be the table's.
void check_fits(const CsvTable& t, const TabularSchema& s) {
  auto check = [&](int64_t index, const std::string& name) {
    KILN_CHECK(index >= 0 && index < static_cast<int64_t>(t.columns.size()) &&
                   t.columns[static_cast<size_t>(index)] == name,
               ValueError, t.source, ": the model was trained on a table with column '", name, "' as field ", index + 1,
               "; this table differs");
  };
  check(s.label_index, s.label);
  for (const ColumnInfo& c : s.columns) check(c.index, c.name);
}

}  // namespace

TabularData prepare_tabular(const CsvTable& t, const TabularOptions& o, const TabularSchema* fitted) {
  TabularData d;
  d.rows = static_cast<int64_t>(t.rows.size());
  d.notes = t.notes;
  if (fitted) check_fits(t, *fitted);
  TabularSchema s = fitted ? *fitted : infer_schema(t, o);
  const bool fit = fitted == nullptr;

  std::map<std::string, int64_t> class_index;
  for (size_t i = 0; i < s.classes.size(); ++i) class_index[s.classes[i]] = static_cast<int64_t>(i);
  for (ColumnInfo& c : s.columns) {
    c.missing = 0;
    for (const auto& row : t.rows) c.missing += is_missing(row[static_cast<size_t>(c.index)]);
  }

  // The rows kept, their numeric values (NaN = missing, filled after fitting) and labels.
  const size_t n_cols = s.columns.size();
  std::vector<size_t> kept;
  std::vector<double> values;  // [kept, n_cols]; categorical columns hold NaN (read from the table)
  std::vector<int64_t> classes;
  std::vector<float> targets;
  std::vector<double> row_values(n_cols);
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const auto& row = t.rows[r];
    const std::string& label = row[static_cast<size_t>(s.label_index)];
    if (is_missing(label)) {
      KILN_CHECK(o.missing != MissingPolicy::error, IoError, where(t, r, s.label_index),
                 ": the label is missing; fix the row, or choose the missing-value policy drop (or fill, which drops "
                 "rows without a label)");
      ++d.rows_dropped;
      continue;
    }
    bool drop = false;
    for (size_t c = 0; c < n_cols; ++c) {
      const ColumnInfo& col = s.columns[c];
      row_values[c] = NAN;
      if (col.type != ColumnType::numeric && col.type != ColumnType::categorical) continue;
      const std::string& f = row[static_cast<size_t>(col.index)];
      if (is_missing(f)) {
        KILN_CHECK(o.missing != MissingPolicy::error, IoError, where(t, r, col.index),
                   ": missing value; fix it, or choose the missing-value policy drop or fill");
        drop = drop || o.missing == MissingPolicy::drop;
        continue;
      }
      if (col.type == ColumnType::numeric && !parse_number(f, row_values[c]))
        throw IoError(where(t, r, col.index) + ": the column holds numbers, but this row has '" + f.substr(0, 40) +
                      (f.size() > 40 ? "...'" : "'") +
                      "; fix the value, leave it empty (a missing value), or type the column as categorical");
    }
    if (drop) {
      ++d.rows_dropped;
      continue;
    }
    if (s.task == Task::classification) {
      auto it = class_index.find(label);
      KILN_CHECK(it != class_index.end(), IoError, where(t, r, s.label_index), ": the label '", label,
                 "' is not one of the ", s.classes.size(), " classes the model was trained on");
      classes.push_back(it->second);
    } else {
      double y;
      KILN_CHECK(parse_number(label, y), IoError, where(t, r, s.label_index),
                 ": a regression label must be a number, got '", label.substr(0, 40), "'");
      targets.push_back(static_cast<float>(y));
    }
    kept.push_back(r);
    values.insert(values.end(), row_values.begin(), row_values.end());
  }
  KILN_CHECK(!kept.empty(), IoError, t.source, ": no rows left after dropping ", d.rows_dropped,
             " with missing values");

  // The split, over positions in `kept`.
  std::vector<int64_t> train, test;
  if (s.task == Task::classification) {
    std::tie(train, test) = stratified_split(classes, o.test_fraction, o.seed);
  } else {
    KILN_CHECK(o.test_fraction >= 0 && o.test_fraction < 1, ValueError, "the test fraction must be in [0, 1), got ",
               o.test_fraction);
    std::vector<int64_t> order = seeded_permutation(static_cast<int64_t>(kept.size()), o.seed);
    const auto n_test = static_cast<size_t>(std::ceil(o.test_fraction * static_cast<double>(kept.size()) - 1e-9));
    test.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(std::min(n_test, order.size() - 1)));
    train.assign(order.begin() + static_cast<std::ptrdiff_t>(test.size()), order.end());
    std::sort(train.begin(), train.end());
    std::sort(test.begin(), test.end());
  }

  // Fitting on the training rows only.
  if (fit) {
    for (size_t c = 0; c < n_cols; ++c) {
      ColumnInfo& col = s.columns[c];
      if (col.type == ColumnType::numeric) {
        double sum = 0, sq = 0;
        int64_t n = 0;
        for (int64_t k : train) {
          const double v = values[static_cast<size_t>(k) * n_cols + c];
          if (!std::isnan(v)) sum += v, ++n;
        }
        col.mean = n ? sum / static_cast<double>(n) : 0.0;
        for (int64_t k : train) {
          const double v = values[static_cast<size_t>(k) * n_cols + c];
          if (!std::isnan(v)) sq += (v - col.mean) * (v - col.mean);
        }
        const double std = n ? std::sqrt(sq / static_cast<double>(n)) : 0.0;  // population std (ddof 0)
        col.scale = std > 0 ? std : 1.0;  // a constant column stays 0, as StandardScaler
      } else if (col.type == ColumnType::categorical) {
        std::map<std::string, int64_t> counts;
        for (int64_t k : train) {
          const std::string& f = t.rows[kept[static_cast<size_t>(k)]][static_cast<size_t>(col.index)];
          if (!is_missing(f)) ++counts[f];
        }
        col.categories.clear();
        int64_t best = -1;
        for (const auto& [v, n] : counts) {
          col.categories.push_back(v);
          if (n > best) best = n, col.mode = v;
        }
      }
    }
  }

  // Encoding: standardized numbers and one-hot categories, missing values filled.
  const int64_t width = s.num_features();
  KILN_CHECK(width > 0, ValueError, t.source, ": no feature columns (every column but the label is text, ignored "
                                              "or empty)");
  auto encode = [&](const std::vector<int64_t>& part, Tensor& x, Tensor& y, std::vector<int64_t>& rows) {
    std::vector<float> xs(part.size() * static_cast<size_t>(width), 0.0f);
    std::vector<int64_t> ys;
    std::vector<float> ts;
    for (size_t i = 0; i < part.size(); ++i) {
      const auto k = static_cast<size_t>(part[i]);
      float* out = xs.data() + i * static_cast<size_t>(width);
      for (size_t c = 0; c < n_cols; ++c) {
        const ColumnInfo& col = s.columns[c];
        if (col.type == ColumnType::numeric) {
          const double v = values[k * n_cols + c];
          *out++ = static_cast<float>(std::isnan(v) ? 0.0 : (v - col.mean) / col.scale);  // fill = mean -> 0
        } else if (col.type == ColumnType::categorical) {
          std::string f = t.rows[kept[k]][static_cast<size_t>(col.index)];
          const bool missing = is_missing(f);
          if (missing) f = col.mode;
          auto it = std::lower_bound(col.categories.begin(), col.categories.end(), f);
          if (it != col.categories.end() && *it == f) out[it - col.categories.begin()] = 1.0f;
          else if (!missing) d.unseen_categories.push_back({static_cast<int64_t>(kept[k]), static_cast<int64_t>(c)});
          out += col.categories.size();
        }
      }
      rows.push_back(static_cast<int64_t>(kept[k]));
      if (s.task == Task::classification) ys.push_back(classes[k]);
      else ts.push_back(targets[k]);
    }
    const auto n = static_cast<int64_t>(part.size());
    x = Tensor::from_vector(xs, {n, width});
    y = s.task == Task::classification ? Tensor::from_vector(ys, {n}) : Tensor::from_vector(ts, {n, 1});
  };
  encode(train, d.x_train, d.y_train, d.train_rows);
  encode(test, d.x_test, d.y_test, d.test_rows);
  d.schema = std::move(s);
  return d;
}

}  // namespace kiln::data
