// Training events and the thread-safe queue that carries them from the
// Trainer's thread to listeners (the CLI's progress bar, Kiln Studio's plots).
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace kiln::train {

struct BatchEnd {
  int epoch = 0;                  // 0-based
  int64_t step = 0;               // global optimizer step, 1-based
  int64_t batch = 0;              // 1-based within the epoch
  int64_t batches_per_epoch = 0;
  double loss = 0;                // this batch's mean loss
  double accuracy = 0;            // this batch's accuracy (fraction)
  double lr = 0;                  // learning rate used for this step
  double samples_per_second = 0;  // training throughput over the epoch so far (images/s)
  double eta_seconds = 0;         // estimated time left in the whole run
};

struct EpochEnd {
  int epoch = 0;
  double train_loss = 0, train_accuracy = 0;  // means over the epoch's batches (weighted by size)
  double val_loss = 0, val_accuracy = 0;      // NaN when there is no validation set
  double seconds = 0;                         // wall time of the epoch's training
  double samples_per_second = 0;
  double lr = 0;                              // learning rate the epoch started with
};

struct CheckpointSaved {
  int epoch = 0;      // 0-based: the epoch that ended, or the one a mid-epoch checkpoint is in
  std::string path;
  int64_t batch = 0;  // batches of `epoch` done at a mid-epoch checkpoint; 0 at an epoch's end
  int64_t step = 0;   // optimizer steps taken
};

struct Finished {
  bool cancelled = false;
  std::string error;  // empty on success; the message of the error that stopped training
  // The training device's caching allocator at the end (Backend::memory_stats), in bytes:
  // the most its tensors held during the run's process, and what it holds now.
  uint64_t peak_allocated_bytes = 0;
  uint64_t reserved_bytes = 0;
  // The captured training step (TrainerOptions::cuda_graph): "replaying" when the step was
  // recorded and its replays trained the run's full batches, else why every step ran
  // eagerly (e.g. "cpu cannot record work for replay"); "" when an error stopped training.
  std::string cuda_graph;
};

using Event = std::variant<BatchEnd, EpochEnd, CheckpointSaved, Finished>;

// Unbounded multi-producer queue; pop() waits up to `timeout` for an event.
class EventQueue {
 public:
  void push(Event e) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      events_.push_back(std::move(e));
    }
    cv_.notify_all();
  }
  std::optional<Event> pop(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!cv_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return std::nullopt;
    Event e = std::move(events_.front());
    events_.pop_front();
    return e;
  }
  std::vector<Event> drain() {  // everything queued now, without waiting
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<Event> out(std::make_move_iterator(events_.begin()), std::make_move_iterator(events_.end()));
    events_.clear();
    return out;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Event> events_;
};

}  // namespace kiln::train
