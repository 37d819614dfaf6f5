// Trainer: epochs of optimization with metrics, events, checkpoints and resume.
//
// fit() runs on the calling thread (the CLI calls it directly; Kiln Studio runs it
// on a worker thread) and pushes BatchEnd / EpochEnd / CheckpointSaved / Finished
// events to events(); cancel() may be called from any thread and stops training
// after the current batch. With the same seed on the CPU a run gives the same loss
// curve bit for bit (the DataLoader order depends only on (seed, epoch), dropout
// draws from the default generator, whose state is checkpointed).
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "engine/core/error.h"
#include "engine/data/dataloader.h"
#include "engine/nn/module.h"
#include "engine/optim/lr_scheduler.h"
#include "engine/optim/optimizer.h"
#include "engine/train/evaluate.h"
#include "engine/train/events.h"
#include "engine/train/metrics.h"
#include "engine/train/mixed_precision.h"

namespace kiln::train {

struct TrainerOptions {
  int epochs = 1;
  int64_t num_classes = 10;
  Device device;                // where the model lives; batches are moved there
  std::string checkpoint_dir;   // a checkpoint every epoch when not empty
  // Called on fit()'s thread after each epoch's checkpoint is written to checkpoint_dir
  // (before the next epoch overwrites it), with that epoch's EpochEnd; e.g. to copy it
  // elsewhere. An exception it throws ends fit() like an error of training. May be empty.
  std::function<void(const EpochEnd&)> on_checkpoint;
  // Checkpoints in the middle of an epoch too (into checkpoint_dir, replacing the last one):
  // after every checkpoint_every_steps optimizer steps (0: never), and after the first batch
  // that ends checkpoint_every_seconds of training (pauses left out) after the last checkpoint
  // (0: never); none after an epoch's last batch, whose epoch checkpoint follows. They hold the
  // batch position in the epoch, the epoch's metrics so far, the learning rate it started with
  // and the generator state, so that fit() after load_checkpoint continues with the next batch
  // of the same order (DataLoader::set_epoch(epoch, batch)) and, on the CPU, the same losses.
  int64_t checkpoint_every_steps = 0;
  double checkpoint_every_seconds = 0;
  // A mid-epoch checkpoint when cancel() stops an epoch after at least one of its batches, so
  // that a stopped run continues where it stopped rather than at the last checkpoint.
  bool checkpoint_on_cancel = false;
  // Called on fit()'s thread after each mid-epoch checkpoint is written to checkpoint_dir, as
  // on_checkpoint is after an epoch's. May be empty.
  std::function<void(const CheckpointSaved&)> on_mid_epoch_checkpoint;
  // When this process's part of the run started (its data loading included); unset: when fit()
  // starts. Checkpoints carry the run's seconds from it (Trainer::resumed_seconds).
  std::optional<std::chrono::steady_clock::time_point> run_started;
  bool scheduler_per_batch = false;  // step the scheduler every batch (OneCycleLR) or every epoch
  int64_t top_k = 5;
  // Settings a resumed run must share with the run that wrote the checkpoint
  // (e.g. {"optimizer": "adam", "batch_size": "128"}); saved in every checkpoint and
  // compared by load_checkpoint, which throws ValueError naming the first that differs.
  std::map<std::string, std::string> run_settings;
  // f16 mixed precision: backward runs on the scaled loss and the step goes through the
  // scaler (engine/train/mixed_precision.h), which skips steps with non-finite gradients.
  std::shared_ptr<GradScaler> grad_scaler;
  // Record the training step once and replay it (CUDA graphs; engine/train/captured_step.h)
  // where the device's backend can record: each batch of the first batch's shape is copied
  // into fixed device tensors and the step (zero_grad, forward, loss, backward, optimizer
  // step) is replayed; the loss and logits it rewrites feed the metrics and the NaN check.
  // A batch of another shape (the last partial batch), f16 loss scaling (grad_scaler) and
  // a step that cannot be recorded run eagerly; Finished::cuda_graph says which happened.
  // Off: always eager (as KILN_CUDA_GRAPH=0). The losses match the eager run's within
  // float rounding; on a device that cannot record, the run is the eager run bit for bit.
  bool cuda_graph = true;
  // The training step's backward pass on its (scaled) loss; empty: loss.backward(). Data-parallel
  // training sets it to engine/distributed's Reducer::backward, which also averages the gradients
  // over the ranks (it records into the captured step like any other work).
  std::function<void(const Tensor& loss)> backward;
};

// Thrown when the loss becomes NaN or Inf (the message names epoch, step and lr). fit() reads a
// step's loss and logits once the next step is enqueued (engine/core/async_read.h), so that a
// GPU never waits for the host between steps: the error comes one update after the step it
// names, and BatchEnd events trail the step they describe by one (all are pushed before
// EpochEnd, a pause, a mid-epoch checkpoint). The checkpoint of the last finished epoch is
// unaffected.
struct NonFiniteLossError : Error {
  using Error::Error;
};
// The words every NonFiniteLossError message contains ("... the loss became nan at epoch 3 ..."):
// a stored run message with them names a failure that continuing from the same checkpoint, with
// the same data, order and learning rate, repeats (projects::Project::why_not_resumable).
inline constexpr const char* kNonFiniteLossWords = "the loss became ";

class Trainer {
 public:
  // scheduler may be null. The model must already be on options.device.
  Trainer(std::shared_ptr<nn::Module> model, std::shared_ptr<optim::Optimizer> optimizer,
          std::shared_ptr<optim::LRScheduler> scheduler, LossFn loss, TrainerOptions options);

  // Trains from the current epoch (0, or the one after a resumed checkpoint) up to
  // options.epochs, evaluating on `validation` (may be null) after each epoch.
  // Throws NonFiniteLossError, or any engine error; a Finished event is pushed
  // either way (with the error message).
  void fit(data::DataLoader& train, data::DataLoader* validation);

  // Loss and metrics of the model on a whole loader, in eval mode, without gradients:
  // train::evaluate (evaluate.h) with evaluate_options().
  ClassificationMetrics evaluate(data::DataLoader& loader);
  // The trainer's loss, device, num_classes and top_k as train::evaluate takes them, for a pass
  // that sets more (EvaluateOptions::should_stop: `kiln train`'s test pass stops on Ctrl-C).
  EvaluateOptions evaluate_options() const;

  void cancel();  // also ends a pause
  bool cancelled() const { return cancelled_; }
  // pause() may be called from any thread: fit() then waits before its next batch
  // until resume() or cancel(). The time spent paused counts neither in the
  // images/s and ETA of BatchEnd nor in the epoch's seconds.
  void pause();
  void resume();
  bool paused() const { return paused_; }
  EventQueue& events() { return events_; }

  // Checkpoint = model weights + optimizer state + trainer state (epoch, step,
  // generator state, scheduler position) in `dir` (engine/io/checkpoint.h), replacing
  // `dir` as a whole (a kill while saving leaves the previous checkpoint).
  void save_checkpoint(const std::string& dir) const;
  // Restores a checkpoint written by save_checkpoint or in the middle of an epoch
  // (TrainerOptions::checkpoint_every_steps); the next fit() continues with the epoch
  // after it, or with the next batch of the epoch it was taken in. Throws IoError for
  // missing/corrupt files and ValueError when the checkpoint belongs to another model
  // (names and shapes differ). Returns io::Checkpoint::note: "" or why the previous
  // checkpoint was read instead of `dir` (a kill between the renames of a save).
  std::string load_checkpoint(const std::string& dir);
  int64_t batch_in_epoch() const { return resume_batch_; }  // batches of epoch() a loaded checkpoint had done
  // A checkpoint taken in the middle of an epoch resumes on as many ranks as wrote it (the
  // DataLoader's world_size; data parallelism, engine/distributed): fit() throws ValueError
  // naming both counts otherwise. One taken at an epoch's end resumes on any number.
  int checkpoint_world_size() const { return resume_world_size_; }

  int epoch() const { return epoch_; }         // epochs completed
  int64_t step() const { return step_; }       // optimizer steps taken
  double seconds_training() const { return train_seconds_; }  // wall time of training batches
  // The run's wall time (seconds) before this process continued it: what a loaded checkpoint
  // carries (every checkpoint stores it as the run's seconds when it was saved: those it loaded
  // plus this process's so far, TrainerOptions::run_started); 0 for a new run. A checkpoint made before it was stored gives its
  // training seconds. A run's total time is this plus the continuing process's own.
  double resumed_seconds() const { return resumed_seconds_; }
  int64_t samples_trained() const { return samples_trained_; }
  // Finished::cuda_graph of the last fit() that ended without an error ("" before).
  const std::string& cuda_graph_note() const { return cuda_graph_note_; }

 private:
  std::shared_ptr<nn::Module> model_;
  std::shared_ptr<optim::Optimizer> optimizer_;
  std::shared_ptr<optim::LRScheduler> scheduler_;
  LossFn loss_;
  TrainerOptions options_;
  EventQueue events_;
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> paused_{false};
  std::mutex pause_mutex_;
  std::condition_variable pause_cv_;
  double wait_while_paused();  // seconds waited
  // The checkpoint after `batch` batches of epoch epoch_ (0: at the end of epoch epoch_ - 1),
  // with the epoch's metrics, starting lr and training seconds so far when batch > 0.
  void save_checkpoint_at(const std::string& dir, int64_t batch, const ClassificationMetrics* metrics,
                          double epoch_lr, double epoch_seconds) const;
  // A mid-epoch checkpoint into options_.checkpoint_dir, its callback and CheckpointSaved event.
  void save_mid_epoch(int64_t batch, const ClassificationMetrics& metrics, double epoch_lr, double epoch_seconds);
  int epoch_ = 0;
  int64_t step_ = 0;
  double train_seconds_ = 0;
  int64_t samples_trained_ = 0;
  std::string cuda_graph_note_;
  // A mid-epoch checkpoint's position, restored by load_checkpoint for the next fit().
  int64_t resume_batch_ = 0;
  int world_size_ = 1;         // the ranks of the data fit() runs on (DataLoader::Options::world_size)
  int resume_world_size_ = 1;  // of a loaded mid-epoch checkpoint
  std::map<std::string, double> resume_metrics_;
  double resume_epoch_lr_ = 0, resume_epoch_seconds_ = 0;
  double resumed_seconds_ = 0;
  std::optional<std::chrono::steady_clock::time_point> fit_started_;  // the run seconds' clock
};

}  // namespace kiln::train
