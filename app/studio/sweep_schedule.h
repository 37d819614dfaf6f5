// Two small pieces of a sweep's control, kept free of Qt and of training so they can be
// tested alone: the device lanes that work through the trial queue, and the median rule
// that stops clearly bad trials early.
#pragma once
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kiln::studio::sweep {

// Trials queued for a set of lanes, one trial per lane at a time: with lanes
// {"cpu", "cuda:0"} the CPU and the GPU each take the next queued trial when they are
// free, so both work through the queue in parallel. A device may be listed twice
// ({"cpu", "cpu"}: two trials at once on it). Not thread-safe (the runner's thread).
class LaneQueue {
 public:
  // lanes: device names, in the order free lanes are served; queue: trial ids in order.
  // std::invalid_argument when lanes is empty.
  LaneQueue(std::vector<std::string> lanes, std::vector<int64_t> queue);
  // Gives each free lane, in lane order, the next queued trial: (lane index, trial id) pairs.
  std::vector<std::pair<int, int64_t>> assign();
  // The lane's trial ended: the lane is free again. std::logic_error when it was idle.
  void release(int lane);
  // The queued trials are dropped (a stop): running ones keep their lanes until released.
  void drop_queued() { queue_.clear(); }
  const std::string& device(int lane) const { return lanes_.at(static_cast<size_t>(lane)); }
  std::optional<int64_t> running(int lane) const { return busy_.at(static_cast<size_t>(lane)); }
  size_t lanes() const { return lanes_.size(); }
  size_t queued() const { return queue_.size(); }
  bool idle() const;  // no lane busy
  bool done() const { return idle() && queue_.empty(); }

 private:
  std::vector<std::string> lanes_;
  std::deque<int64_t> queue_;
  std::vector<std::optional<int64_t>> busy_;
};

// The median stopping rule (Golovin et al. 2017, "Google Vizier", section 3.2.2; Optuna's
// MedianPruner): a trial is stopped after epoch k when its best objective over epochs
// 1..k is worse than the median of the best objectives over epochs 1..k of the completed
// trials that reached epoch k. `finished`: those trials' per-epoch objectives (epoch 1
// first); `current`: the running trial's, k = current.size(). maximize: higher is better
// (val_accuracy), else lower (val_loss). NaN counts as worst. Never prunes with fewer than
// `min_finished` (>= 1) completed trials at epoch k (Optuna's n_startup_trials, 5 there;
// sweeps here are a few trials, so the runner uses 2), nor when current is empty.
struct MedianDecision {
  bool prune = false;
  double best = 0, median = 0;  // the trial's best and the median it was compared with
  int compared = 0;             // completed trials that reached epoch k
};
MedianDecision median_rule(const std::vector<std::vector<double>>& finished, const std::vector<double>& current,
                           bool maximize, int min_finished = 2);

}  // namespace kiln::studio::sweep
