// data::open_dataset (engine/data/dataset_source.h), the one entry of Kiln Studio to a user's
// CSV table: splits, shape and classes, and the errors it passes on or adds.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "engine/core/error.h"
#include "engine/data/dataset_source.h"

using namespace kiln;
namespace fs = std::filesystem;

namespace {

std::string write_table(const std::string& name, const std::string& text) {
  const fs::path p = fs::temp_directory_path() / ("kiln_data_source_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(p) << text;
  return p.string();
}

std::string two_classes(int rows) {
  std::string t = "a,b,y\n";
  for (int i = 0; i < rows; ++i) t += std::to_string(i % 7) + "," + std::to_string(i) + "," + (i % 2 ? "yes" : "no") + "\n";
  return t;
}

}  // namespace

TEST(DataSource, CsvSplitsShapeAndClasses) {
  const std::string file = write_table("t.csv", two_classes(100));
  data::DatasetSource s;
  s.spec = "csv:" + file;
  const data::OpenedDataset d = data::open_dataset(s);
  EXPECT_EQ(d.kind, "csv");
  EXPECT_EQ(d.sample_shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(d.classes, (std::vector<std::string>{"no", "yes"}));
  EXPECT_EQ(d.class_counts, (std::vector<int64_t>{50, 50}));
  EXPECT_EQ(d.test->size(), 20);
  ASSERT_TRUE(d.validation);
  EXPECT_EQ(d.validation->size(), 10);
  EXPECT_EQ(d.train->size(), 70);
  EXPECT_NE(d.description().find("2 classes, 100 rows, samples [2]"), std::string::npos) << d.description();
  fs::remove(file);
}

TEST(DataSource, BadInputNamesTheFile) {
  std::string one = "a,y\n";
  for (int i = 0; i < 10; ++i) one += std::to_string(i) + ",same\n";
  const std::string file = write_table("one.csv", one);
  data::DatasetSource s;
  s.spec = "csv:" + file;
  try {
    data::open_dataset(s);
    FAIL() << "a label with one value was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("one.csv"), std::string::npos) << e.what();
  }
  fs::remove(file);
  s.spec = "parquet:x";
  EXPECT_THROW(data::open_dataset(s), ValueError);
  s.spec = "csv:" + (fs::temp_directory_path() / "kiln_no_such_table.csv").string();
  EXPECT_THROW(data::open_dataset(s), Error);
}
