// Sweeps in the project file (schema 7): a sweep and its planned trials, a trial's run and
// end, and a trial whose process died: marked interrupted when the project is opened, and
// queued again (a new row, the same index) by requeue_interrupted_trials.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <unistd.h>

#include "projects/project.h"

using namespace kiln::projects;

namespace {

struct ScratchFile {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("kiln-sweep-store-" + std::to_string(getpid()));
  std::string path;
  ScratchFile() {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    path = (dir / "s.kiln").string();
  }
  ~ScratchFile() { std::filesystem::remove_all(dir); }
};

}  // namespace

TEST(SweepStore, TrialsRunEndAndAreQueuedAgainAfterAnInterruption) {
  ScratchFile f;
  int64_t sweep = 0, run0 = 0, run1 = 0;
  {
    Project p = Project::create(f.path);
    const int64_t g = p.save_graph("{}", "g");
    SweepRecord r;
    r.name = "grid search, 3 trials";
    r.space_json = R"({"params":["lr=1e-3,1e-2,1e-1"]})";
    r.objective = "val_accuracy";
    r.graph_version = g;
    sweep = p.create_sweep(r, {R"({"lr":0.001})", R"({"lr":0.01})", R"({"lr":0.1})"});
    std::vector<SweepTrial> t = p.sweep_trials(sweep);
    ASSERT_EQ(t.size(), 3u);
    EXPECT_EQ(t[2].trial, 2);
    EXPECT_EQ(t[2].params_json, R"({"lr":0.1})");
    EXPECT_EQ(t[0].status, "queued");
    EXPECT_TRUE(std::isnan(t[0].objective));
    ASSERT_EQ(p.sweeps().size(), 1u);
    EXPECT_EQ(p.sweeps()[0].status, "running");
    EXPECT_EQ(p.sweeps()[0].graph_version, g);

    run0 = p.begin_run({"t0", "{}", "cpu", g});
    p.start_trial(t[0].id, run0);
    p.end_run(run0, RunStatus::finished, "", "{}");
    p.end_trial(t[0].id, "finished", 0.75, "");
    run1 = p.begin_run({"t1", "{}", "cpu", g});
    p.start_trial(t[1].id, run1);
    // Its process dies: another host's run whose heartbeat is long gone.
    p.database().exec("UPDATE runs SET host = 'elsewhere', heartbeat_at = 1 WHERE id = " + std::to_string(run1));

    EXPECT_THROW(p.end_trial(t[0].id, "running", 0, ""), ProjectError);
    EXPECT_THROW(p.start_trial(t[2].id, 999), ProjectError);
    EXPECT_THROW(p.sweep_trials(sweep + 1), ProjectError);
    EXPECT_THROW(p.create_sweep(r, {"[1]"}), ProjectError);
    EXPECT_EQ(p.sweeps().size(), 1u);  // the refused sweep stored nothing
  }
  Project p = Project::open(f.path);  // marks run1 and its trial interrupted
  std::vector<SweepTrial> t = p.sweep_trials(sweep);
  EXPECT_EQ(t[0].status, "finished");
  EXPECT_DOUBLE_EQ(t[0].objective, 0.75);
  EXPECT_EQ(t[0].run, run0);
  EXPECT_EQ(t[1].status, "interrupted");
  EXPECT_EQ(t[1].run, run1);
  EXPECT_EQ(t[2].status, "queued");

  EXPECT_EQ(p.requeue_interrupted_trials(sweep), 1);
  t = p.sweep_trials(sweep);
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[1].status, "interrupted");  // kept, with its run
  EXPECT_EQ(t[3].trial, 1);
  EXPECT_EQ(t[3].status, "queued");
  EXPECT_EQ(t[3].params_json, R"({"lr":0.01})");
  EXPECT_EQ(p.requeue_interrupted_trials(sweep), 0);  // once only
  // A trial stopped by the user (Ctrl-C) is queued again too; a finished one never.
  const int64_t run2 = p.begin_run({"t1 again", "{}", "cpu", 0});
  p.start_trial(t[3].id, run2);
  p.end_run(run2, RunStatus::stopped, "", "{}");
  p.end_trial(t[3].id, "stopped", NAN, "stopped by the user");
  EXPECT_EQ(p.requeue_interrupted_trials(sweep), 1);
  t = p.sweep_trials(sweep);
  ASSERT_EQ(t.size(), 5u);
  EXPECT_EQ(t[4].trial, 1);
  EXPECT_EQ(t[4].status, "queued");

  p.set_sweep_status(sweep, "finished");
  EXPECT_EQ(p.sweeps()[0].status, "finished");
  EXPECT_FALSE(p.sweeps()[0].ended_at.empty());
  EXPECT_THROW(p.set_sweep_status(sweep, "paused"), ProjectError);
}
