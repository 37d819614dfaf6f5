// data::parse_classes and data::ClassFilter (engine/data/class_filter.h), shared by
// `kiln train --classes` and Kiln Studio's dataset setting "classes".
#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/data/class_filter.h"

using namespace kiln;
using namespace kiln::data;

namespace {
// Sample i has the label labels[i] (input: i).
class LabelDataset : public Dataset {
 public:
  explicit LabelDataset(std::vector<int64_t> labels) : labels_(std::move(labels)) {}
  int64_t size() const override { return static_cast<int64_t>(labels_.size()); }
  Batch get_batch(const std::vector<int64_t>& indices) const override {
    std::vector<int64_t> t;
    for (int64_t i : indices) t.push_back(labels_.at(static_cast<size_t>(i)));
    const auto n = static_cast<int64_t>(indices.size());
    return {Tensor::from_vector(indices, {n}), Tensor::from_vector(t, {n})};
  }

 private:
  std::vector<int64_t> labels_;
};

std::string error_of(const std::string& spec, const std::string& what = "--classes") {
  try {
    parse_classes(spec, 10, what);
  } catch (const ValueError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(ClassFilter, ParsesRangesListsAndSpaces) {
  EXPECT_EQ(parse_classes("5-9", 10), (std::vector<int64_t>{5, 6, 7, 8, 9}));
  EXPECT_EQ(parse_classes("7, 0-2", 10), (std::vector<int64_t>{0, 1, 2, 7}));
  EXPECT_EQ(classes_str({5, 6, 7}), "5,6,7");
  EXPECT_NE(error_of("5-12").find("--classes '5-12': class 12 is out of range"), std::string::npos);
  // The Studio names its setting instead of the CLI flag.
  EXPECT_NE(error_of("9-5", "dataset settings: 'classes'").find("dataset settings: 'classes' '9-5': the range 9-5 is reversed"),
            std::string::npos);
  EXPECT_NE(error_of(" ").find("needs classes"), std::string::npos);
  EXPECT_NE(error_of("1,1").find("names class 1 twice"), std::string::npos);
}

TEST(ClassFilter, RelabelsAndMapsBackToTheSourceIndex) {
  auto source = std::make_shared<LabelDataset>(std::vector<int64_t>{5, 0, 9, 5, 3, 7});
  ClassFilter f(source, {5, 7, 9});
  ASSERT_EQ(f.size(), 4);
  EXPECT_EQ(f.source_index(0), 0);
  EXPECT_EQ(f.source_index(1), 2);
  EXPECT_EQ(f.source_index(2), 3);
  EXPECT_EQ(f.source_index(3), 5);
  EXPECT_THROW(f.source_index(4), IndexError);
  const Batch b = f.get_batch({0, 1, 2, 3});
  EXPECT_EQ(b.target.to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 0, 1}));  // 5 -> 0, 7 -> 1, 9 -> 2
  EXPECT_EQ(b.input.to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 3, 5}));
}
