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

// The CSV reader's notes (a header of numbers) reach OpenedDataset::notes, which kiln-studio
// --headless and the Dataset panel show; a table with a header of names has none.
TEST(DataSource, CsvReaderNotesArePassedOn) {
  std::string rows;
  for (int i = 0; i < 20; ++i) rows += std::to_string(i + 10) + "," + std::to_string(i % 2) + "\n";
  const std::string file = write_table("numbers.csv", rows), named = write_table("named.csv", "a,y\n" + rows);
  data::DatasetSource s;
  s.spec = "csv:" + file;
  const data::OpenedDataset d = data::open_dataset(s);
  ASSERT_EQ(d.notes.size(), 1u);
  EXPECT_EQ(d.notes[0].find(file + ": every field of the header row (line 1) is a number: if it is data, read the file "
                                   "with --no-header"), 0u) << d.notes[0];
  ASSERT_TRUE(d.table);
  EXPECT_EQ(d.table->notes, d.notes);  // kiln train prints the table's
  s.spec = "csv:" + named;
  EXPECT_TRUE(data::open_dataset(s).notes.empty());
  fs::remove(file);
  fs::remove(named);
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

// A text dataset (a folder per class of .txt files): the tokenizer fitted on the training split,
// samples [max_length] of token ids, the files left out, and the texts kept for the preview.
TEST(DataSource, TextFolderSplitsTokenizesAndListsSkippedFiles) {
  const fs::path dir = fs::temp_directory_path() / ("kiln_data_source_text_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  for (const std::string c : {"neg", "pos"}) fs::create_directories(dir / c);
  for (int i = 0; i < 20; ++i) {
    std::ofstream(dir / "pos" / ("p" + std::to_string(i) + ".txt")) << "good lovely film " << i;
    std::ofstream(dir / "neg" / ("n" + std::to_string(i) + ".txt")) << "bad dull film " << i;
  }
  std::ofstream(dir / "neg" / "empty.txt");
  data::DatasetSource s;
  s.spec = "text:" + dir.string();
  s.max_length = 3;
  s.validation_fraction = 0;
  const data::OpenedDataset d = data::open_dataset(s);
  EXPECT_EQ(d.kind, "text");
  EXPECT_EQ(d.sample_shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(d.classes, (std::vector<std::string>{"neg", "pos"}));
  EXPECT_EQ(d.class_counts, (std::vector<int64_t>{20, 20}));
  EXPECT_EQ(d.train->size(), 32);
  EXPECT_EQ(d.test->size(), 8);
  ASSERT_EQ(d.skipped.size(), 1u);
  EXPECT_EQ(d.skipped[0], (dir / "neg" / "empty.txt").string() + ": empty file (0 bytes)");
  ASSERT_TRUE(d.text);
  EXPECT_EQ(d.text->tokenizer->kind(), "word");
  EXPECT_EQ(d.text->train->truncated(), 32);  // 4 words each, 3 kept
  const data::Batch b = d.test->get_batch({0, 1});
  EXPECT_EQ(b.input.dtype(), DType::i64);
  EXPECT_EQ(b.input.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_NE(d.description().find("2 classes, 40 texts (1 file skipped), samples [3] token ids, word vocabulary"), std::string::npos)
      << d.description();
  s.max_length = 0;
  EXPECT_THROW(data::open_dataset(s), ValueError);
  s.max_length = 8;
  s.validation_fraction = 0.1;
  const data::OpenedDataset v = data::open_dataset(s);
  ASSERT_TRUE(v.validation);
  EXPECT_EQ(v.validation->size(), 4);
  EXPECT_EQ(v.text->train->size(), 32);  // the tokenizer's split, before validation is taken out
  fs::remove_all(dir);
}

// The one validation split of kiln train (a share of the training split) and Kiln Studio (a share
// of all samples), and kiln train's settings: a regression table, its own table config.
TEST(DataSource, SplitValidationAndTrainSettings) {
  auto ds = std::make_shared<data::TensorDataset>(Tensor::from_vector(std::vector<float>(10, 1.f), {10}),
                                                  Tensor::from_vector(std::vector<int64_t>(10, 0), {10}));
  data::TrainValidation tv = data::split_validation(ds, 0.2, 10, 3);
  ASSERT_TRUE(tv.validation);
  EXPECT_EQ(tv.train->size(), 8);
  EXPECT_EQ(tv.validation->size(), 2);
  auto same = data::random_split(ds, {8, 2}, 3);  // random_split by the seed, as before
  EXPECT_EQ(dynamic_cast<const data::Subset&>(*tv.validation).indices(), same[1]->indices());
  EXPECT_EQ(data::split_validation(ds, 0.2, 100, 3).validation->size(), 9);  // at most all but one
  EXPECT_EQ(data::split_validation(ds, 0.01, 10, 3).validation->size(), 1);  // at least one when asked
  EXPECT_FALSE(data::split_validation(ds, 0, 10, 3).validation);
  auto one = std::make_shared<data::Subset>(ds, std::vector<int64_t>{4});
  EXPECT_FALSE(data::split_validation(one, 0.5, 1, 3).validation);

  const std::string file = write_table("reg.csv", "a,b,y\n" + [] {
    std::string t;
    for (int i = 0; i < 50; ++i) t += std::to_string(i) + "," + std::to_string(i % 5) + "," + std::to_string(0.5 * i) + "\n";
    return t;
  }());
  data::DatasetSource s;
  s.spec = "csv:" + file;
  data::TableConfig c;
  c.path = file;
  c.tabular.label = "y";
  c.tabular.task = data::Task::regression;
  c.tabular.test_fraction = 0.2;
  s.table = c;
  s.validation_fraction = 0.25;
  s.validation_of_train = true;
  const data::OpenedDataset d = data::open_dataset(s);
  EXPECT_TRUE(d.classes.empty());
  EXPECT_TRUE(d.regression);
  EXPECT_EQ(d.test->size(), 10);
  ASSERT_TRUE(d.validation);
  EXPECT_EQ(d.validation->size(), 10);  // a quarter of the 40 training rows
  EXPECT_EQ(d.train->size(), 30);
  EXPECT_EQ(d.train->get_batch({0}).target.dtype(), DType::f32);
  fs::remove(file);
}
