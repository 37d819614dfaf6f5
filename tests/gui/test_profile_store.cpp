// Per-layer profiles in the project file (schema 12, issue 20): stored, listed and read back after
// reopening, deleted, bad input refused with nothing stored, and a schema-11 project (the fixture
// made by the Kiln before schema 12) opening with the table added and its run still there.
#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

#include "projects/project.h"
#include "projects/schema.h"

using namespace kiln::projects;

namespace {

struct ScratchDir {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("kiln-profile-store-" + std::to_string(getpid()));
  ScratchDir() {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  ~ScratchDir() { std::filesystem::remove_all(dir); }
  std::string file(const std::string& name) const { return (dir / name).string(); }
};

// A `kiln bench --graph --profile --json` document with one layer.
const std::string kProfile =
    R"({"batch_size":8,"device":"cpu","precision":"f32","steps":3,"outside_ms":0.25,"loss_forward_ms":0.1,)"
    R"("layers":[{"name":"fc1","op":"Linear","forward_ms":1.5,"backward_ms":2.0,"share_percent":100.0}]})";

ProfileRecord record(int64_t graph_version = 0, int64_t run = 0) {
  ProfileRecord r;
  r.graph_version = graph_version;
  r.run = run;
  r.device = "cpu";
  r.precision = "f32";
  r.batch_size = 8;
  r.steps = 3;
  r.profile_json = kProfile;
  return r;
}

// ProjectError's message for `r`, "" when it is stored.
std::string refusal(Project& p, const ProfileRecord& r) {
  try {
    p.add_profile(r);
  } catch (const ProjectError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(ProfileStore, StoredListedAndReadBackAfterReopening) {
  ScratchDir d;
  const std::string path = d.file("p.kiln");
  int64_t g = 0, run = 0, first = 0, second = 0;
  {
    Project p = Project::create(path);
    g = p.save_graph("{}", "g");
    run = p.begin_run({"r", "{}", "cpu", g});
    p.end_run(run, RunStatus::finished, "", "{}");
    first = p.add_profile(record(g));
    ProfileRecord other = record(0, run);
    other.device = "cuda:0";
    other.precision = "bf16";
    other.batch_size = 64;
    other.steps = 10;
    second = p.add_profile(other);
  }
  Project p = Project::open(path);
  const std::vector<ProfileRecord> all = p.profiles();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].id, first);
  EXPECT_EQ(all[0].graph_version, g);
  EXPECT_EQ(all[0].run, 0);
  EXPECT_EQ(all[0].device, "cpu");
  EXPECT_EQ(all[0].profile_json, kProfile);
  EXPECT_FALSE(all[0].created_at.empty());
  EXPECT_EQ(all[1].id, second);
  EXPECT_EQ(all[1].graph_version, 0);
  EXPECT_EQ(all[1].run, run);
  EXPECT_EQ(all[1].device, "cuda:0");
  EXPECT_EQ(all[1].precision, "bf16");
  EXPECT_EQ(all[1].batch_size, 64);
  EXPECT_EQ(all[1].steps, 10);
  const std::optional<ProfileRecord> one = p.profile(second);
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(one->device, "cuda:0");
  EXPECT_FALSE(p.profile(second + 100).has_value());

  p.delete_profile(first);
  ASSERT_EQ(p.profiles().size(), 1u);
  EXPECT_EQ(p.profiles()[0].id, second);
  EXPECT_THROW(p.delete_profile(first), ProjectError);  // already gone
  // Purging the run keeps its profile, no longer tied to a run.
  p.delete_run(run);
  EXPECT_EQ(p.purge_deleted_runs(), 1);
  ASSERT_EQ(p.profiles().size(), 1u);
  EXPECT_EQ(p.profiles()[0].run, 0);
}

TEST(ProfileStore, BadInputIsRefusedAndNothingStored) {
  ScratchDir d;
  Project p = Project::create(d.file("p.kiln"));
  EXPECT_NE(refusal(p, record(42)).find("refers to graph version 42, which it does not have"), std::string::npos)
      << refusal(p, record(42));
  EXPECT_NE(refusal(p, record(0, 7)).find("refers to run 7, which it does not have"), std::string::npos)
      << refusal(p, record(0, 7));
  ProfileRecord r = record();
  r.batch_size = 0;
  EXPECT_NE(refusal(p, r).find("batch size of at least 1, got 0"), std::string::npos) << refusal(p, r);
  r = record();
  r.steps = -1;
  EXPECT_NE(refusal(p, r).find("cannot have -1 steps"), std::string::npos) << refusal(p, r);
  r = record();
  r.device = "";
  EXPECT_NE(refusal(p, r).find("needs its device"), std::string::npos) << refusal(p, r);
  r = record();
  r.precision = "";
  EXPECT_NE(refusal(p, r).find("needs its precision"), std::string::npos) << refusal(p, r);
  for (const char* bad : {"", "[1, 2]", "{\"layers\": 3}", "{\"device\": \"cpu\"}", "{not json"}) {
    r = record();
    r.profile_json = bad;
    EXPECT_NE(refusal(p, r).find("\"layers\" array"), std::string::npos) << bad;
  }
  EXPECT_THROW(p.delete_profile(1), ProjectError);
  EXPECT_TRUE(p.profiles().empty());
}

TEST(ProfileStore, Schema11ProjectOpensWithTheTableAdded) {
  ScratchDir d;
  const std::string path = d.file("project_schema11.kiln");  // opening migrates it: a copy
  std::filesystem::copy_file(std::string(KILN_SOURCE_DIR) + "/tests/fixtures/project_schema11.kiln", path);
  EXPECT_EQ(check_project_file(path, kCurrentSchema), 11);
  Project p = Project::open(path);
  EXPECT_EQ(p.database().pragma_int("user_version"), int64_t(kCurrentSchema));
  EXPECT_TRUE(p.profiles().empty());
  // What the old file held is still there: its graph and its finished run, which a profile can name.
  ASSERT_TRUE(p.latest_graph().has_value());
  const std::vector<RunRecord> runs = p.runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, RunStatus::finished);
  EXPECT_FALSE(p.epoch_metrics(runs[0].id).empty());
  const int64_t id = p.add_profile(record(p.latest_graph()->id, runs[0].id));
  ASSERT_EQ(p.profiles().size(), 1u);
  EXPECT_EQ(p.profile(id)->run, runs[0].id);
}
