// DataLoader: batches of a Dataset, optionally shuffled, built ahead of time on
// background threads (torch.utils.data.DataLoader).
//
// Note [Deterministic batches]: the order of an epoch is a permutation (or, with sample weights,
// a weighted draw) seeded by (seed, epoch) only, and batch k always holds positions [k*B, (k+1)*B) of it.
// Workers may finish batches in any order; the consumer receives them in k order,
// so a run is reproducible whatever the thread timing.
//
// Note [Distributed sampling]: with world_size W > 1 each rank takes its share of the epoch's
// order as torch.utils.data.DistributedSampler(drop_last=False) does: the order of Note
// [Deterministic batches] (the global order: the same on every rank) is padded to a multiple of W
// by repeating its start, and rank r takes positions r, r + W, r + 2W ... (indices[r::W]); its
// batches are made from that list as above. So every rank has the same number of batches of the
// same sizes, and after k batches on every rank the job has consumed the global order's first
// k * batch_size * W positions. A run resumed on another number of ranks continues at the next
// global sample: set_epoch_at_sample shards the rest of the global order by the new W. A weighted
// draw (sample_weights) is sharded the same way: the ranks share the one draw of size() samples.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "engine/data/dataset.h"

namespace kiln::data {

class DataLoader {
 public:
  struct Options {
    int64_t batch_size = 64;
    bool shuffle = false;
    uint64_t seed = 0;       // with shuffle: the order depends only on (seed, epoch)
    bool drop_last = false;  // drop a final batch smaller than batch_size
    int num_workers = 1;     // background threads; 0 builds batches in the consumer's thread
    int prefetch = 2;        // batches built ahead of the consumer (at least num_workers)
    // Non-empty: a weighted sampler instead of the shuffle (torch.utils.data.WeightedRandomSampler(
    // sample_weights, len(dataset), replacement=True)): each epoch draws size() samples with
    // replacement, sample i with probability sample_weights[i] / sum, seeded by (seed, epoch) only
    // (class_balance.h weighted_sample), so that a resumed epoch draws the same. One weight per sample.
    std::vector<double> sample_weights{};
    // This process's share of each epoch (Note [Distributed sampling]): the rank, in
    // [0, world_size), and the number of ranks. world_size 1 gives the whole order, as before.
    int rank = 0;
    int world_size = 1;
  };

  // ValueError when dataset is null, batch_size < 1, num_workers < 0, prefetch < 1, world_size < 1,
  // rank is outside [0, world_size), or sample_weights is neither empty nor one finite non-negative
  // weight per sample with a positive sum.
  DataLoader(std::shared_ptr<const Dataset> dataset, Options options);
  DataLoader(std::shared_ptr<const Dataset> dataset, int64_t batch_size)
      : DataLoader(std::move(dataset), Options{.batch_size = batch_size}) {}
  ~DataLoader();  // stops the workers, also in the middle of an epoch
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // Batches per epoch on this rank: ceil(size / world_size) samples (the padded share of Note
  // [Distributed sampling]) in batches of batch_size, the last one dropped when short and drop_last.
  int64_t size() const;
  const Options& options() const { return options_; }
  const Dataset& dataset() const { return *dataset_; }
  const std::shared_ptr<const Dataset>& dataset_ptr() const { return dataset_; }

  // The epoch the next pass uses (for the shuffle order). Each pass started by
  // begin() or by next() after the end of a pass advances it by one, so epochs
  // 0, 1, 2 ... follow by themselves; set_epoch(e) is for resuming at epoch e, and
  // set_epoch(e, k) for resuming in its middle: that pass starts at batch k of epoch e's
  // order (the batches it gives are those an uninterrupted pass gives from batch k on;
  // Note [Deterministic batches]). Calling it in the middle of a pass abandons that pass.
  // ValueError when first_batch is outside [0, size()].
  void set_epoch(int64_t epoch, int64_t first_batch = 0);
  int64_t epoch() const { return next_epoch_; }

  // Resuming at a global sample (Note [Distributed sampling]), possibly on another number of ranks
  // than the run that stopped: the next pass is epoch `epoch`'s global order from position
  // global_sample on (global_samples_consumed of the stopped run), sharded by this loader's
  // world_size (padded by repeating the start of that rest) and cut into batches; it has fewer
  // batches than size(). A global_sample at or past the dataset's size gives an empty pass.
  // ValueError when global_sample < 0.
  void set_epoch_at_sample(int64_t epoch, int64_t global_sample);

  // The global samples consumed (a position in the epoch's global order, for set_epoch_at_sample)
  // once every rank has taken `batches` batches of a pass that started at global position
  // start_sample (0 for a pass begun by set_epoch, whose batches are counted from the epoch's
  // start): start_sample + batches * batch_size * world_size, clipped to the end of the pass's
  // padded order. ValueError when batches or start_sample is negative.
  int64_t global_samples_consumed(int64_t batches, int64_t start_sample = 0) const;

  // The next batch of the current pass (starting a pass when none is running), or
  // nullopt at the end of the pass. Rethrows an exception a worker met while
  // building the batch (the pass then ends).
  std::optional<Batch> next();

  // Range-for support: `for (const Batch& b : loader)` runs one pass. begin()
  // abandons any pass in progress and starts a new one.
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    using pointer = const Batch*;
    using reference = const Batch&;
    Iterator() = default;
    const Batch& operator*() const { return *current_; }
    const Batch* operator->() const { return &*current_; }
    Iterator& operator++();
    void operator++(int) { ++*this; }
    bool operator==(const Iterator& o) const { return !current_.has_value() && !o.current_.has_value(); }

   private:
    friend class DataLoader;
    DataLoader* loader_ = nullptr;
    std::optional<Batch> current_;
  };
  Iterator begin();
  Iterator end() { return Iterator(); }

 private:
  struct Slot {
    Batch batch;
    std::exception_ptr error;
  };
  void start_pass();
  void stop_pass();  // joins the workers and drops queued batches
  void worker_loop();
  Batch build(int64_t k) const;  // batch k of the current order

  std::shared_ptr<const Dataset> dataset_;
  Options options_;
  int64_t next_epoch_ = 0;
  int64_t next_first_batch_ = 0;  // where the next pass starts (set_epoch); later passes start at 0
  int64_t next_start_sample_ = 0;  // the global position the next pass starts at (set_epoch_at_sample)

  // The current pass. order_ and n_batches_ are written only while no worker runs.
  bool active_ = false;
  int64_t pass_epoch_ = 0;  // the epoch of the current pass, handed to Dataset::get_batch_for_epoch
  std::vector<int64_t> order_;
  int64_t n_batches_ = 0;
  std::mutex mutex_;
  std::condition_variable worker_cv_, consumer_cv_;
  bool stop_ = false;
  int64_t next_claim_ = 0;    // next batch a worker will build
  int64_t next_deliver_ = 0;  // next batch the consumer receives
  std::map<int64_t, Slot> ready_;
  std::vector<std::thread> workers_;
};

}  // namespace kiln::data
