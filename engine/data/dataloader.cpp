#include "engine/data/dataloader.h"

#include <algorithm>
#include <numeric>

#include "engine/core/error.h"
#include "engine/data/class_balance.h"

namespace kiln::data {

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, Options options)
    : dataset_(std::move(dataset)), options_(options) {
  KILN_CHECK(dataset_ != nullptr, ValueError, "DataLoader: null dataset");
  KILN_CHECK(options_.batch_size >= 1, ValueError, "DataLoader: batch_size must be at least 1, got ",
             options_.batch_size);
  KILN_CHECK(options_.num_workers >= 0, ValueError, "DataLoader: num_workers must be non-negative, got ",
             options_.num_workers);
  KILN_CHECK(options_.prefetch >= 1, ValueError, "DataLoader: prefetch must be at least 1, got ", options_.prefetch);
  if (!options_.sample_weights.empty()) {
    KILN_CHECK(static_cast<int64_t>(options_.sample_weights.size()) == dataset_->size(), ValueError,
               "DataLoader: ", options_.sample_weights.size(), " sample weights for a dataset of ", dataset_->size(),
               " samples; give one per sample");
    weighted_sample(options_.sample_weights, 0, 0, 0);  // checks the weights now, not at the first epoch
  }
}

DataLoader::~DataLoader() { stop_pass(); }

int64_t DataLoader::size() const {
  int64_t n = dataset_->size(), b = options_.batch_size;
  return options_.drop_last ? n / b : (n + b - 1) / b;
}

void DataLoader::set_epoch(int64_t epoch, int64_t first_batch) {
  KILN_CHECK(first_batch >= 0 && first_batch <= size(), ValueError, "DataLoader: first batch ", first_batch,
             " is outside [0, ", size(), "]");
  stop_pass();
  next_epoch_ = epoch;
  next_first_batch_ = first_batch;
}

void DataLoader::start_pass() {
  stop_pass();
  int64_t n = dataset_->size();
  if (!options_.sample_weights.empty()) {
    order_ = weighted_sample(options_.sample_weights, n, options_.seed, static_cast<uint64_t>(next_epoch_));
  } else if (options_.shuffle) {
    order_ = seeded_permutation(n, options_.seed, static_cast<uint64_t>(next_epoch_));
  } else {
    order_.resize(static_cast<size_t>(n));
    std::iota(order_.begin(), order_.end(), 0);
  }
  pass_epoch_ = next_epoch_++;
  n_batches_ = size();
  next_claim_ = next_deliver_ = std::min(next_first_batch_, n_batches_);
  next_first_batch_ = 0;
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
