// data::read_table_input (engine/data/predict_input.h), the table rows of `kiln predict` and Kiln
// Studio's Predict: the label column never chooses rows, and a category the training rows never
// had is encoded as none and listed (unseen, unseen_categories_note).
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "engine/data/predict_input.h"
#include "tests/engine/test_util.h"

using namespace kiln;
using namespace kiln::data;

namespace {

struct TrainedTable {
  test::TempDir dir{"kiln-predict-input"};
  TableConfig config;
  TabularSchema schema;
  TrainedTable() {
    std::ofstream(dir / "t.csv") << "x,colour,kind\n1,red,a\n2,blue,b\n3,red,a\n4,blue,b\n5,red,a\n6,blue,b\n";
    config.path = dir / "t.csv";
    config.tabular.test_fraction = 0;
    schema = load_table(config).schema;
  }
  TableInput read(const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return read_table_input(dir / name, config, schema);
  }
};

}  // namespace

TEST(PredictInput, TheLabelColumnNeverChoosesRows) {
  TrainedTable t;
  // An empty label, a missing marker and a class the run does not know: every row is read, encoded
  // as without the label column, and the label echoed as written.
  const TableInput odd = t.read("odd.csv", "x,colour,kind\n1,red,\n2,blue,NA\n3,red,zebra\n4,blue,b\n");
  const TableInput plain = t.read("plain.csv", "x,colour\n1,red\n2,blue\n3,red\n4,blue\n");
  EXPECT_TRUE(odd.labelled);
  EXPECT_EQ(odd.labels, (std::vector<std::string>{"", "NA", "zebra", "b"}));
  EXPECT_EQ(odd.inputs.size(), 4u);
  EXPECT_TRUE(odd.dropped.empty());
  EXPECT_EQ(odd.x.to_vector<float>(), plain.x.to_vector<float>());
  EXPECT_FALSE(plain.labelled);
  EXPECT_EQ(plain.labels, (std::vector<std::string>(4, "")));
}

TEST(PredictInput, UnseenCategoriesAreEncodedAsNoneAndListed) {
  TrainedTable t;
  std::string text = "x,colour\n1,red\n";
  for (int i = 1; i <= 7; ++i) text += "2,green" + std::to_string(i) + "\n";
  const TableInput in = t.read("new.csv", text);
  ASSERT_EQ(in.inputs.size(), 8u);
  ASSERT_EQ(in.unseen.size(), 7u);
  EXPECT_EQ(in.unseen[0].input, 1u);
  EXPECT_EQ(in.unseen[0].column, "colour");
  EXPECT_EQ(in.unseen[0].value, "green1");
  const std::vector<float> x = in.x.to_vector<float>();  // [8, 3]: x, then colour blue / red
  EXPECT_EQ(x[1] + x[2], 1.0f);
  EXPECT_EQ(x[4] + x[5], 0.0f);
  const std::string note = unseen_categories_note(in);
  EXPECT_EQ(note.rfind("7 values of categorical columns were not seen in training: encoded as none of the column's "
                       "categories (as scikit-learn's OneHotEncoder(handle_unknown='ignore')), the row still predicted:\n",
                       0), 0u) << note;
  EXPECT_NE(note.find("\n  " + (t.dir / "new.csv") + ":3, column 'colour': 'green1'\n"), std::string::npos) << note;
  EXPECT_NE(note.find(":7, column 'colour': 'green5'\n  and 2 more"), std::string::npos) << note;
  EXPECT_EQ(note.find("green6"), std::string::npos) << note;
  // One value: the singular; none: no note.
  const TableInput one = t.read("one.csv", "x,colour\n1,green\n2,red\n");
  EXPECT_EQ(unseen_categories_note(one).rfind("1 value of a categorical column was not seen in training", 0), 0u);
  EXPECT_EQ(unseen_categories_note(t.read("none.csv", "x,colour\n1,red\n")), "");
}
