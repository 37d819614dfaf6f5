// Project: a run's mid-epoch checkpoint, and continuing a stopped, interrupted or failed run from its
// newest checkpoint (schema 11).
#include <unistd.h>

#include <cmath>

#include "engine/train/trainer.h"
#include "projects/project.h"

namespace kiln::projects {

namespace {
// The run's newest checkpoint: the highest epoch, and within it a mid-epoch one (batch > 0) over
// the epoch checkpoint it follows.
constexpr const char* kNewest = "SELECT epoch, batch, step FROM checkpoints WHERE run = ? ORDER BY epoch DESC, batch DESC LIMIT 1";
}  // namespace

void Project::add_mid_epoch_checkpoint(int64_t run, int epochs, int64_t batch, int64_t step,
                                       const std::string& checkpoint_dir) {
  if (batch < 1)
    throw ProjectError("project " + path() + ": a mid-epoch checkpoint of run " + std::to_string(run) +
                       " needs batch >= 1, got " + std::to_string(batch));
  Transaction tx(*db_);
  db_->prepare("DELETE FROM checkpoints WHERE run = ? AND batch > 0").bind(1, run).run();
  store_checkpoint(run, epochs, checkpoint_dir, std::nan(""), batch, step);
  tx.commit();
}

std::optional<ResumePoint> Project::resume_point(int64_t run) const {
  Statement s = db_->prepare(kNewest);
  s.bind(1, run);
  if (!s.step()) return std::nullopt;
  return ResumePoint{static_cast<int>(s.int64(0)), s.int64(1), s.int64(2)};
}

void Project::restore_resume_point(int64_t run, const std::string& into_dir) const {
  const std::optional<ResumePoint> p = resume_point(run);
  if (!p)
    throw ProjectError("project " + path() + ": run " + std::to_string(run) + " has no checkpoint to continue from");
  restore_checkpoint_files(run, p->epoch, p->batch, into_dir);
}

// Note [Continuing a failed run]
// Most failures come from the machine, not the run: the disk or the project filled up, a read
// failed, memory or the device ran out, the process was killed. Its checkpoint is as good as a
// stopped run's, and once the cause is gone the run continues (the Studio prints the earlier
// failure when it does). The one failure Kiln knows to be a property of the run itself is a loss
// that became NaN or Inf (train::NonFiniteLossError): the same checkpoint, data order and
// learning rate reach it again, so that run is refused with its message.
std::string Project::why_not_resumable(int64_t run) const {
  const std::string name = "run " + std::to_string(run);
  for (const RunRecord& r : runs(true)) {
    if (r.id != run) continue;
    if (r.deleted) return name + " is deleted (Edit > Undo brings it back)";
    switch (r.status) {
      case RunStatus::running: return name + " is still running";
      case RunStatus::finished: return name + " finished: it has no epochs left to train";
      case RunStatus::failed:  // Note [Continuing a failed run]
        if (r.message.find(train::kNonFiniteLossWords) != std::string::npos)
          return name + " failed (" + r.message + "); continuing it would fail the same way: start a new run";
        break;
      case RunStatus::stopped:
      case RunStatus::interrupted: break;
    }
    if (!resume_point(run)) return name + " ended before its first checkpoint: there is nothing to continue from";
    return "";
  }
  return "project " + path() + " has no " + name;
}

void Project::reopen_run(int64_t run, int64_t step, int epochs) {
  Transaction tx(*db_);  // the check inside it: of two processes continuing the run, one does
  if (const std::string why = why_not_resumable(run); !why.empty())
    throw ProjectError("project " + path() + ": cannot continue: " + why);
  db_->prepare(
         "UPDATE runs SET status = 'running', ended_at = '', message = '', final_metrics_json = '', pid = ?, host = ?, "
         "heartbeat_at = ? WHERE id = ?")
      .bind(1, static_cast<int64_t>(getpid()))
      .bind(2, host_name())
      .bind(3, unix_time_now())
      .bind(4, run)
      .run();
  db_->prepare("DELETE FROM step_metrics WHERE run = ? AND step > ?").bind(1, run).bind(2, step).run();
  db_->prepare("DELETE FROM epoch_metrics WHERE run = ? AND epoch > ?").bind(1, run).bind(2, int64_t{epochs}).run();
  db_->prepare("DELETE FROM evaluations WHERE run = ?").bind(1, run).run();
  tx.commit();
}

}  // namespace kiln::projects
