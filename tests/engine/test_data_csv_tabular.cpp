// Tables as training data (engine/data/tabular.h): column types, the label, missing values,
// the stratified split, standardization fitted on the training split only, the schema's JSON,
// and the messages for data that do not fit (file, line, column).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/data/csv_reader.h"
#include "engine/data/tabular.h"
#include "tests/common/test_deps.h"

using namespace kiln;
using namespace kiln::data;
namespace fs = std::filesystem;

namespace {

CsvTable table(const std::string& text) { return parse_csv(text, {}, "t.csv"); }

TabularOptions labelled(const std::string& label, double test_fraction = 0.25) {
  TabularOptions o;
  o.label = label;
  o.test_fraction = test_fraction;
  return o;
}

std::string error_of(const std::string& text, const TabularOptions& o) {
  try {
    prepare_tabular(table(text), o);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Rows "i,i*i,colour,label" with two classes alternating.
std::string numbers_table(int n) {
  std::string s = "x,y,colour,label\n";
  const char* colours[] = {"red", "green", "blue"};
  for (int i = 0; i < n; ++i)
    s += std::to_string(i) + "," + std::to_string(i * i) + "," + colours[i % 3] + "," + (i % 2 ? "odd" : "even") + "\n";
  return s;
}

const ColumnInfo& column(const TabularSchema& s, const std::string& name) {
  for (const ColumnInfo& c : s.columns)
    if (c.name == name) return c;
  throw std::runtime_error("no column " + name);
}

}  // namespace

TEST(CsvTabular, TypesLabelAndShapes) {
  TabularData d = prepare_tabular(table(numbers_table(20)), labelled("label"));
  const TabularSchema& s = d.schema;
  EXPECT_EQ(s.label, "label");
  EXPECT_EQ(s.classes, (std::vector<std::string>{"even", "odd"}));
  EXPECT_EQ(column(s, "x").type, ColumnType::numeric);
  EXPECT_EQ(column(s, "colour").type, ColumnType::categorical);
  EXPECT_EQ(column(s, "colour").categories, (std::vector<std::string>{"blue", "green", "red"}));
  EXPECT_EQ(s.num_features(), 5);  // x, y, 3 one-hot
  EXPECT_EQ(d.x_train.shape(), (Shape{15, 5}));
  EXPECT_EQ(d.x_test.shape(), (Shape{5, 5}));
  EXPECT_EQ(d.y_train.dtype(), DType::i64);
  EXPECT_EQ(d.y_train.shape(), (Shape{15}));
  // The label by index, and -1 for the last column, give the same.
  EXPECT_EQ(prepare_tabular(table(numbers_table(20)), labelled("3")).schema.label, "label");
  EXPECT_EQ(prepare_tabular(table(numbers_table(20)), labelled("-1")).schema.label, "label");
}

TEST(CsvTabular, OneHotRowsAndUnknownCategory) {
  // Train gets red/green only when the test row is the single blue one: it encodes as zeros.
  std::string text = "c,label\n";
  for (int i = 0; i < 8; ++i) text += std::string(i % 2 ? "red" : "green") + "," + (i % 2 ? "a" : "b") + "\n";
  text += "blue,a\n";
  TabularOptions o = labelled("label", 0);
  TabularData all = prepare_tabular(table(text), o);
  EXPECT_EQ(column(all.schema, "c").categories, (std::vector<std::string>{"blue", "green", "red"}));
  // Fitted on a schema without blue: the blue row has no hot column.
  TabularSchema fitted = all.schema;
  fitted.columns[0].categories = {"green", "red"};
  TabularData d = prepare_tabular(table(text), o, &fitted);
  std::vector<float> x = d.x_train.to_vector<float>();
  ASSERT_EQ(x.size(), 18u);
  EXPECT_EQ(x[0] + x[1], 1.0f);   // green
  EXPECT_EQ(x[16] + x[17], 0.0f);  // blue
  EXPECT_EQ(d.unseen_categories, (std::vector<std::pair<int64_t, int64_t>>{{8, 0}}));  // listed: row 8, column c
  EXPECT_TRUE(all.unseen_categories.empty());
}

TEST(CsvTabular, TypeOverridesAndTextColumns) {
  std::string text = "id,code,label\n";
  for (int i = 0; i < 60; ++i) text += "id" + std::to_string(i) + "," + std::to_string(i % 4) + "," + (i % 2 ? "a" : "b") + "\n";
  TabularOptions o = labelled("label");
  TabularData d = prepare_tabular(table(text), o);
  EXPECT_EQ(column(d.schema, "id").type, ColumnType::text);  // 60 distinct strings > 50
  EXPECT_EQ(column(d.schema, "code").type, ColumnType::numeric);
  EXPECT_EQ(d.schema.num_features(), 1);
  o.types = {"code=categorical", "id=ignore"};
  d = prepare_tabular(table(text), o);
  EXPECT_EQ(column(d.schema, "code").type, ColumnType::categorical);
  EXPECT_EQ(d.schema.num_features(), 4);
  o.types = {"code=nominal"};
  EXPECT_THROW(prepare_tabular(table(text), o), ValueError);
  o.types = {"nope=numeric"};
  EXPECT_THROW(prepare_tabular(table(text), o), ValueError);
}

TEST(CsvTabular, BadDataNamesFileLineAndColumn) {
  const std::string text_in_numbers = "a,b,label\n1,2,x\n3,abc,y\n5,6,x\n7,8,y\n";
  EXPECT_EQ(error_of(text_in_numbers, labelled("label")),
            "t.csv:3, column 'b' (field 2): the column holds numbers, but this row has 'abc'; fix the value, leave it "
            "empty (a missing value), or type the column as categorical");
  EXPECT_EQ(error_of("a,label\n1,x\n2,x\n3,x\n", labelled("label")),
            "t.csv, column 'label' (field 2): the label has one value ('x') in every row; classification needs at "
            "least two classes (is it the right label column?)");
  EXPECT_NE(error_of("a,label\n1,x\n2,y\n", labelled("nope")).find("t.csv: no label column 'nope' (its columns: a, label"),
            std::string::npos);
  EXPECT_NE(error_of("a,label\n1,x\n2,y\n", labelled("5")).find("index 5 is out of range"), std::string::npos);
  TabularOptions reg = labelled("label");
  reg.task = Task::regression;
  EXPECT_EQ(error_of("a,label\n1,2.5\n2,high\n", reg),
            "t.csv:3, column 'label' (field 2): a regression label must be a number, got 'high'");
}

TEST(CsvTabular, MissingValuePolicies) {
  const std::string text = "a,c,label\n1,u,x\n,v,y\n3,NA,x\n5,u,y\n7,u,x\n9,v,?\n11,v,y\n13,u,x\n";
  EXPECT_EQ(error_of(text, labelled("label")),
            "t.csv:3, column 'a' (field 1): missing value; fix it, or choose the missing-value policy drop or fill");
  TabularOptions drop = labelled("label", 0);
  drop.missing = MissingPolicy::drop;
  TabularData d = prepare_tabular(table(text), drop);
  EXPECT_EQ(d.rows, 8);
  EXPECT_EQ(d.rows_dropped, 3);  // the empty a, the NA c, the ? label
  EXPECT_EQ(column(d.schema, "a").missing, 1);
  EXPECT_EQ(column(d.schema, "c").missing, 1);
  EXPECT_EQ(d.x_train.size(0), 5);

  TabularOptions fill = labelled("label", 0);
  fill.missing = MissingPolicy::fill;
  d = prepare_tabular(table(text), fill);
  EXPECT_EQ(d.rows_dropped, 1);  // a label is never filled
  ASSERT_EQ(d.x_train.size(0), 7);
  const std::vector<float> x = d.x_train.to_vector<float>();  // a (standardized), c=u, c=v
  EXPECT_EQ(d.train_rows[1], 1);                 // the row with the empty a
  EXPECT_FLOAT_EQ(x[1 * 3 + 0], 0.0f);           // the mean, standardized
  EXPECT_EQ(column(d.schema, "c").mode, "u");
  EXPECT_EQ(x[2 * 3 + 1], 1.0f);                 // NA -> the mode u
}

TEST(CsvTabular, StandardizationFittedOnTrainOnly) {
  TabularData d = prepare_tabular(table(numbers_table(40)), labelled("label", 0.25));
  const ColumnInfo& y = column(d.schema, "y");
  // The mean and population std of the training rows' y only.
  double sum = 0, sq = 0;
  for (int64_t r : d.train_rows) sum += static_cast<double>(r * r);
  const double mean = sum / static_cast<double>(d.train_rows.size());
  for (int64_t r : d.train_rows) sq += (static_cast<double>(r * r) - mean) * (static_cast<double>(r * r) - mean);
  EXPECT_DOUBLE_EQ(y.mean, mean);
  EXPECT_NEAR(y.scale, std::sqrt(sq / static_cast<double>(d.train_rows.size())), 1e-9 * y.scale);
  // Training columns: mean 0, std 1; the test rows are transformed with the training values.
  const std::vector<float> x = d.x_train.to_vector<float>();
  double m = 0, v = 0;
  const auto n = static_cast<size_t>(d.x_train.size(0)), f = static_cast<size_t>(d.x_train.size(1));
  for (size_t i = 0; i < n; ++i) m += x[i * f + 1];
  m /= static_cast<double>(n);
  for (size_t i = 0; i < n; ++i) v += (x[i * f + 1] - m) * (x[i * f + 1] - m);
  EXPECT_NEAR(m, 0, 1e-6);
  EXPECT_NEAR(v / static_cast<double>(n), 1, 1e-5);
  const std::vector<float> xt = d.x_test.to_vector<float>();
  const double r0 = static_cast<double>(d.test_rows[0]);
  EXPECT_NEAR(xt[1], (r0 * r0 - y.mean) / y.scale, 1e-4);
  // A constant column keeps scale 1 (StandardScaler's rule), so it encodes as zeros.
  TabularData c = prepare_tabular(table("k,label\n5,a\n5,b\n5,a\n5,b\n"), labelled("label", 0));
  EXPECT_EQ(c.schema.columns[0].scale, 1.0);
  EXPECT_EQ(c.x_train.to_vector<float>(), std::vector<float>(4, 0.0f));
}

TEST(CsvTabular, StratifiedSplitProportionsAndSeed) {
  std::vector<int64_t> labels;
  for (int i = 0; i < 100; ++i) labels.push_back(0);
  for (int i = 0; i < 50; ++i) labels.push_back(1);
  for (int i = 0; i < 10; ++i) labels.push_back(2);
  auto [train, test] = stratified_split(labels, 0.2, 7);
  EXPECT_EQ(test.size(), 32u);  // ceil(0.2 * 160)
  EXPECT_EQ(train.size() + test.size(), labels.size());
  std::map<int64_t, int> per_class;
  for (int64_t i : test) ++per_class[labels[static_cast<size_t>(i)]];
  EXPECT_EQ(per_class[0], 20);
  EXPECT_EQ(per_class[1], 10);
  EXPECT_EQ(per_class[2], 2);
  EXPECT_TRUE(std::is_sorted(train.begin(), train.end()));
  // The same seed, the same split; another seed, another.
  EXPECT_EQ(stratified_split(labels, 0.2, 7).second, test);
  EXPECT_NE(stratified_split(labels, 0.2, 8).second, test);
  // Every class keeps a training row, even a class of one; fraction 0 keeps all.
  auto [tr, te] = stratified_split({0, 0, 0, 1}, 0.5, 0);
  EXPECT_EQ(std::count(tr.begin(), tr.end(), 3), 1);
  EXPECT_TRUE(stratified_split(labels, 0, 0).second.empty());
  EXPECT_THROW(stratified_split(labels, 1.0, 0), ValueError);
}

TEST(CsvTabular, RegressionTargets) {
  TabularOptions o = labelled("y", 0.25);
  o.task = Task::regression;
  TabularData d = prepare_tabular(table("x,y\n1,1.5\n2,2.5\n3,3.5\n4,4.5\n"), o);
  EXPECT_EQ(d.schema.num_outputs(), 1);
  EXPECT_EQ(d.y_train.dtype(), DType::f32);
  EXPECT_EQ(d.y_train.shape(), (Shape{3, 1}));
  EXPECT_EQ(d.y_test.shape(), (Shape{1, 1}));
  EXPECT_EQ(d.y_test.to_vector<float>()[0], static_cast<float>(d.test_rows[0]) + 1.5f);
}

TEST(CsvTabular, SchemaJsonRoundTripGivesTheSameData) {
  const CsvTable t = table(numbers_table(30));
  TabularData a = prepare_tabular(t, labelled("label"));
  TabularSchema s = TabularSchema::from_json(a.schema.to_json(), "schema.json");
  EXPECT_EQ(s.to_json(), a.schema.to_json());
  TabularData b = prepare_tabular(t, labelled("label"), &s);
  EXPECT_EQ(b.x_test.to_vector<float>(), a.x_test.to_vector<float>());
  EXPECT_EQ(b.y_test.to_vector<int64_t>(), a.y_test.to_vector<int64_t>());
  EXPECT_THROW(TabularSchema::from_json("{\"format\": 3}", "schema.json"), IoError);
  // A label outside the fitted classes names its line.
  try {
    prepare_tabular(table("x,y,colour,label\n1,1,red,even\n2,4,red,third\n"), labelled("label"), &s);
    FAIL();
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("t.csv:3, column 'label' (field 4): the label 'third' is not one of the 2"),
              std::string::npos)
        << e.what();
  }
}

TEST(CsvTabular, ScikitLearnTables) {
  const std::string dir = "/usr/lib/python3/dist-packages/sklearn/datasets/data";
  KILN_SKIP_UNLESS_DEP(fs::exists(dir + "/wine_data.csv"), "python3-sklearn", "no scikit-learn tables in " + dir);
  CsvOptions o;
  o.skip_rows = 1;
  o.header = false;
  TabularData wine = prepare_tabular(read_csv(dir + "/wine_data.csv", o), labelled("-1", 0.2));
  EXPECT_EQ(wine.schema.classes, (std::vector<std::string>{"0", "1", "2"}));
  EXPECT_EQ(wine.schema.num_features(), 13);
  EXPECT_EQ(wine.x_train.size(0) + wine.x_test.size(0), 178);
  EXPECT_EQ(wine.x_test.size(0), 36);  // ceil(0.2 * 178)
}
