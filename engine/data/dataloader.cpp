#include "engine/data/dataloader.h"

#include <algorithm>
#include <numeric>

#include "engine/core/error.h"
#include "engine/data/class_balance.h"

namespace kiln::data {
namespace {

int64_t batch_count(int64_t samples, int64_t batch_size, bool drop_last) {
  return drop_last ? samples / batch_size : (samples + batch_size - 1) / batch_size;
}

// Rank `rank`'s share of `order` (Note [Distributed sampling]): order padded to a multiple of
// `world` by repeating it from its start, then positions rank, rank + world ...
std::vector<int64_t> shard(std::vector<int64_t> order, int rank, int world) {
  const auto n = static_cast<int64_t>(order.size());
  if (world == 1 || n == 0) return order;
  std::vector<int64_t> mine(static_cast<size_t>((n + world - 1) / world));
  for (size_t j = 0; j < mine.size(); ++j) mine[j] = order[static_cast<size_t>((rank + int64_t(j) * world) % n)];
  return mine;
}

}  // namespace

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, Options options)
    : dataset_(std::move(dataset)), options_(options) {
  KILN_CHECK(dataset_ != nullptr, ValueError, "DataLoader: null dataset");
  KILN_CHECK(options_.batch_size >= 1, ValueError, "DataLoader: batch_size must be at least 1, got ",
             options_.batch_size);
  KILN_CHECK(options_.num_workers >= 0, ValueError, "DataLoader: num_workers must be non-negative, got ",
             options_.num_workers);
  KILN_CHECK(options_.prefetch >= 1, ValueError, "DataLoader: prefetch must be at least 1, got ", options_.prefetch);
  KILN_CHECK(options_.world_size >= 1, ValueError, "DataLoader: world_size must be at least 1, got ",
             options_.world_size);
  KILN_CHECK(options_.rank >= 0 && options_.rank < options_.world_size, ValueError, "DataLoader: rank ",
             options_.rank, " is outside [0, world_size=", options_.world_size, ")");
  if (!options_.sample_weights.empty()) {
    KILN_CHECK(static_cast<int64_t>(options_.sample_weights.size()) == dataset_->size(), ValueError,
               "DataLoader: ", options_.sample_weights.size(), " sample weights for a dataset of ", dataset_->size(),
               " samples; give one per sample");
    weighted_sample(options_.sample_weights, 0, 0, 0);  // checks the weights now, not at the first epoch
  }
}

DataLoader::~DataLoader() { stop_pass(); }

int64_t DataLoader::size() const {
  int64_t n = dataset_->size(), w = options_.world_size;
  return batch_count((n + w - 1) / w, options_.batch_size, options_.drop_last);
}

int64_t DataLoader::global_samples_consumed(int64_t batches, int64_t start_sample) const {
  KILN_CHECK(batches >= 0 && start_sample >= 0, ValueError, "DataLoader: global_samples_consumed(", batches, ", ",
             start_sample, "): both must be non-negative");
  int64_t w = options_.world_size, rest = std::max<int64_t>(dataset_->size() - start_sample, 0);
  int64_t padded = (rest + w - 1) / w * w, per_batch = options_.batch_size * w;
  return start_sample + (batches >= (padded + per_batch - 1) / per_batch ? padded : batches * per_batch);
}

void DataLoader::set_epoch(int64_t epoch, int64_t first_batch) {
  KILN_CHECK(first_batch >= 0 && first_batch <= size(), ValueError, "DataLoader: first batch ", first_batch,
             " is outside [0, ", size(), "]");
  stop_pass();
  next_epoch_ = epoch;
  next_first_batch_ = first_batch;
  next_start_sample_ = 0;
}

void DataLoader::set_epoch_at_sample(int64_t epoch, int64_t global_sample) {
  KILN_CHECK(global_sample >= 0, ValueError, "DataLoader: global sample ", global_sample, " is negative");
  stop_pass();
  next_epoch_ = epoch;
  next_first_batch_ = 0;
  next_start_sample_ = global_sample;
}

void DataLoader::start_pass() {
  stop_pass();
  int64_t n = dataset_->size();
  std::vector<int64_t> global;  // the epoch's order, the same on every rank
  if (!options_.sample_weights.empty()) {
    global = weighted_sample(options_.sample_weights, n, options_.seed, static_cast<uint64_t>(next_epoch_));
  } else if (options_.shuffle) {
    global = seeded_permutation(n, options_.seed, static_cast<uint64_t>(next_epoch_));
  } else {
    global.resize(static_cast<size_t>(n));
    std::iota(global.begin(), global.end(), 0);
  }
  global.erase(global.begin(), global.begin() + std::min(next_start_sample_, n));
  order_ = shard(std::move(global), options_.rank, options_.world_size);
  pass_epoch_ = next_epoch_++;
  n_batches_ = batch_count(static_cast<int64_t>(order_.size()), options_.batch_size, options_.drop_last);
  next_claim_ = next_deliver_ = std::min(next_first_batch_, n_batches_);
  next_first_batch_ = next_start_sample_ = 0;
  ready_.clear();
  stop_ = false;
  active_ = true;
  int workers = static_cast<int>(std::min<int64_t>(options_.num_workers, n_batches_));
  for (int w = 0; w < workers; ++w) workers_.emplace_back([this] { worker_loop(); });
}

void DataLoader::stop_pass() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  worker_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
  ready_.clear();
  active_ = false;
}

Batch DataLoader::build(int64_t k) const {
  int64_t b = options_.batch_size;
  auto first = order_.begin() + k * b;
  auto last = order_.begin() + std::min<int64_t>((k + 1) * b, static_cast<int64_t>(order_.size()));
  return dataset_->get_batch_for_epoch(std::vector<int64_t>(first, last), pass_epoch_);
}

void DataLoader::worker_loop() {
  // Batches in flight or queued stay within `window` of the consumer (a bounded queue).
  const int64_t window = std::max<int64_t>(options_.prefetch, options_.num_workers);
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    worker_cv_.wait(lock, [&] { return stop_ || next_claim_ >= n_batches_ || next_claim_ < next_deliver_ + window; });
    if (stop_ || next_claim_ >= n_batches_) return;
    int64_t k = next_claim_++;
    lock.unlock();
    Slot slot;
    try {
      slot.batch = build(k);
    } catch (...) {
      slot.error = std::current_exception();
    }
    lock.lock();
    ready_.emplace(k, std::move(slot));
    consumer_cv_.notify_one();
  }
}

std::optional<Batch> DataLoader::next() {
  if (!active_) start_pass();
  if (next_deliver_ >= n_batches_) {
    stop_pass();
    return std::nullopt;
  }
  int64_t k = next_deliver_;
  Slot slot;
  if (workers_.empty()) {
    try {
      slot.batch = build(k);
    } catch (...) {
      slot.error = std::current_exception();
    }
  } else {
    std::unique_lock<std::mutex> lock(mutex_);
    consumer_cv_.wait(lock, [&] { return ready_.count(k) != 0; });
    auto it = ready_.find(k);
    slot = std::move(it->second);
    ready_.erase(it);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++next_deliver_;
  }
  worker_cv_.notify_all();
  if (slot.error) {
    stop_pass();
    std::rethrow_exception(slot.error);
  }
  return std::move(slot.batch);
}

DataLoader::Iterator DataLoader::begin() {
  start_pass();
  Iterator it;
  it.loader_ = this;
  it.current_ = next();
  return it;
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  current_ = loader_->next();
  return *this;
}

}  // namespace kiln::data
