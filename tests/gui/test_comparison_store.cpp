// Device comparisons in the project file (schema 9, issue 20): saved, read back after reopening,
// bad input refused with nothing stored, and projects of older schemas (the schema-4 and
// schema-7 fixtures, made by the Kiln of their time) opening with the table added.
#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

#include "projects/project.h"
#include "projects/schema.h"

using namespace kiln::projects;

namespace {

struct ScratchDir {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("kiln-comparison-store-" + std::to_string(getpid()));
  ScratchDir() {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  ~ScratchDir() { std::filesystem::remove_all(dir); }
  std::string file(const std::string& name) const { return (dir / name).string(); }
};

// A `kiln bench --graph --json` document with one row.
const std::string kResults =
    R"({"batch_size":8,"model":"g.json","results":[{"device":"cpu","precision":"f32","train_step_ms":1.5,)"
    R"("max_output_diff":0.0,"error":""}]})";

}  // namespace

TEST(ComparisonStore, SavedAndReadBackAfterReopening) {
  ScratchDir d;
  const std::string path = d.file("c.kiln");
  int64_t g = 0, id = 0;
  {
    Project p = Project::create(path);
    g = p.save_graph("{}", "g");
    DeviceComparisonRecord r;
    r.graph_version = g;
    r.batch_size = 8;
    r.results_json = kResults;
    id = p.save_device_comparison(r);
    r.graph_version = 0;  // none
    p.save_device_comparison(r);
  }
  Project p = Project::open(path);
  const std::vector<DeviceComparisonRecord> all = p.device_comparisons();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].id, id);
  EXPECT_EQ(all[0].graph_version, g);
  EXPECT_EQ(all[0].batch_size, 8);
  EXPECT_EQ(all[0].results_json, kResults);
  EXPECT_FALSE(all[0].created_at.empty());
  EXPECT_EQ(all[1].graph_version, 0);
}

TEST(ComparisonStore, BadInputIsRefusedAndNothingStored) {
  ScratchDir d;
  Project p = Project::create(d.file("c.kiln"));
  DeviceComparisonRecord r;
  r.results_json = kResults;
  r.graph_version = 42;  // no such version
  EXPECT_THROW(p.save_device_comparison(r), ProjectError);
  r.graph_version = 0;
  r.batch_size = 0;
  EXPECT_THROW(p.save_device_comparison(r), ProjectError);
  r.batch_size = 4;
  for (const char* bad : {"", "[1, 2]", "{\"results\": 3}", "{\"model\": \"g\"}", "{not json"}) {
    r.results_json = bad;
    try {
      p.save_device_comparison(r);
      ADD_FAILURE() << "saved results " << bad;
    } catch (const ProjectError& e) {
      EXPECT_NE(std::string(e.what()).find("\"results\" array"), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(p.device_comparisons().empty());
}

TEST(ComparisonStore, OlderProjectsOpenWithTheTableAdded) {
  ScratchDir d;
  for (const char* fixture : {"project_schema4.kiln", "project_schema7.kiln"}) {
    SCOPED_TRACE(fixture);
    const std::string path = d.file(fixture);  // opening migrates it: a copy
    std::filesystem::copy_file(std::string(KILN_SOURCE_DIR) + "/tests/fixtures/" + fixture, path);
    Project p = Project::open(path);
    EXPECT_EQ(p.database().pragma_int("user_version"), int64_t(kCurrentSchema));
    EXPECT_TRUE(p.device_comparisons().empty());
    ASSERT_TRUE(p.latest_graph().has_value());  // what the old file held is still there
    DeviceComparisonRecord r;
    r.graph_version = p.latest_graph()->id;
    r.results_json = kResults;
    p.save_device_comparison(r);
    EXPECT_EQ(p.device_comparisons().size(), 1u);
  }
}
