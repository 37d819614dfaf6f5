// Datasets, random_split, Normalize and the DataLoader.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <numeric>
#include <set>
#include <thread>

#include "engine/core/error.h"
#include "engine/data/dataloader.h"
#include "engine/data/transforms.h"

using namespace kiln;
using namespace kiln::data;

namespace {

// Sample i is the number i (input and target); optionally slow, or failing at one index.
class IndexDataset : public Dataset {
 public:
  explicit IndexDataset(int64_t n, int sleep_us = 0, int64_t fail_at = -1)
      : n_(n), sleep_us_(sleep_us), fail_at_(fail_at) {}
  int64_t size() const override { return n_; }
  Batch get_batch(const std::vector<int64_t>& indices) const override {
    ++calls;
    // Uneven delays shuffle the order in which workers finish.
    if (sleep_us_) std::this_thread::sleep_for(std::chrono::microseconds(sleep_us_ * (1 + indices[0] % 3)));
    for (int64_t i : indices)
      if (i == fail_at_) throw ValueError("IndexDataset: sample " + std::to_string(i) + " is broken");
    Tensor t = Tensor::from_vector(indices, {int64_t(indices.size())});
    return {t, t};
  }
  mutable std::atomic<int> calls{0};

 private:
  int64_t n_;
  int sleep_us_;
  int64_t fail_at_;
};

std::vector<std::vector<int64_t>> pass(DataLoader& loader) {
  std::vector<std::vector<int64_t>> out;
  for (const Batch& b : loader) out.push_back(b.input.to_vector<int64_t>());
  return out;
}

std::vector<int64_t> flat(const std::vector<std::vector<int64_t>>& batches) {
  std::vector<int64_t> v;
  for (const auto& b : batches) v.insert(v.end(), b.begin(), b.end());
  return v;
}

}  // namespace

TEST(DataTensorDataset, GetBatchSelectsRows) {
  Tensor x = Tensor::from_vector(std::vector<float>{0, 1, 2, 3, 4, 5}, {3, 2});
  Tensor y = Tensor::from_vector(std::vector<int64_t>{7, 8, 9}, {3});
  TensorDataset ds(x, y);
  EXPECT_EQ(ds.size(), 3);
  Batch b = ds.get_batch({2, 0});
  EXPECT_EQ(b.input.to_vector<float>(), (std::vector<float>{4, 5, 0, 1}));
  EXPECT_EQ(b.target.to_vector<int64_t>(), (std::vector<int64_t>{9, 7}));
  EXPECT_THROW(ds.get_batch({3}), IndexError);
}

TEST(DataTensorDataset, FirstDimMismatchThrows) {
  Tensor x = Tensor::zeros({4, 2});
  EXPECT_THROW(TensorDataset(x, Tensor::zeros({3})), ShapeError);
  EXPECT_THROW(TensorDataset(x, Tensor::scalar(1)), ShapeError);
}

TEST(DataRandomSplit, DeterministicAndDisjoint) {
  auto ds = std::make_shared<IndexDataset>(100);
  auto a = random_split(ds, {80, 20}, 42);
  auto b = random_split(ds, {80, 20}, 42);
  auto c = random_split(ds, {80, 20}, 43);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0]->size(), 80);
  EXPECT_EQ(a[1]->size(), 20);
  EXPECT_EQ(a[0]->indices(), b[0]->indices());
  EXPECT_EQ(a[1]->indices(), b[1]->indices());
  EXPECT_NE(a[0]->indices(), c[0]->indices());
  std::set<int64_t> all(a[0]->indices().begin(), a[0]->indices().end());
  all.insert(a[1]->indices().begin(), a[1]->indices().end());
  EXPECT_EQ(all.size(), 100u);  // disjoint and covering
  // A subset maps its own indices onto the dataset's.
  Batch batch = a[1]->get_batch({0, 19});
  EXPECT_EQ(batch.input.to_vector<int64_t>(), (std::vector<int64_t>{a[1]->indices()[0], a[1]->indices()[19]}));
  EXPECT_THROW(a[1]->get_batch({20}), IndexError);
  EXPECT_THROW(random_split(ds, {80, 21}, 0), ValueError);
}

TEST(DataNormalize, PerChannel) {
  Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 2, 2});
  Tensor y = Normalize({1.0, 2.0}, {2.0, 4.0})(x);
  EXPECT_EQ(y.shape(), x.shape());
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 0.5f, 1, 1.5f, 0.75f, 1, 1.25f, 1.5f}));
  Tensor chw = Tensor::from_vector(std::vector<float>{1, 3}, {1, 1, 2});
  EXPECT_EQ(Normalize({1.0}, {2.0})(chw).to_vector<float>(), (std::vector<float>{0, 1}));
  EXPECT_THROW(Normalize({1.0, 2.0, 3.0}, {1.0})(x), ShapeError);
  EXPECT_THROW(Normalize({0.0}, {1.0})(Tensor::zeros({2, 2})), ShapeError);
  EXPECT_THROW(Normalize({0.0}, {1.0})(Tensor::zeros({1, 2, 2}, DType::u8)), DTypeError);
  EXPECT_THROW(Normalize({0.0}, {0.0}), ValueError);
  EXPECT_FLOAT_EQ(Normalize({0.5}, {0.25}).u8_table(0)[255], 2.0f);
}

TEST(DataLoader, BatchCountWithAndWithoutDropLast) {
  auto ds = std::make_shared<IndexDataset>(10);
  DataLoader keep(ds, {.batch_size = 4});
  DataLoader drop(ds, {.batch_size = 4, .drop_last = true});
  EXPECT_EQ(keep.size(), 3);
  EXPECT_EQ(drop.size(), 2);
  auto k = pass(keep);
  ASSERT_EQ(k.size(), 3u);
  EXPECT_EQ(k[2], (std::vector<int64_t>{8, 9}));
  EXPECT_EQ(pass(drop).size(), 2u);
  EXPECT_EQ(DataLoader(std::make_shared<IndexDataset>(0), 4).size(), 0);
  DataLoader empty(std::make_shared<IndexDataset>(0), 4);
  EXPECT_TRUE(pass(empty).empty());
  EXPECT_THROW(DataLoader(ds, {.batch_size = 0}), ValueError);
}

TEST(DataLoader, UnshuffledIsInOrder) {
  auto ds = std::make_shared<IndexDataset>(50);
  for (int workers : {0, 1, 3}) {
    DataLoader loader(ds, {.batch_size = 7, .num_workers = workers});
    std::vector<int64_t> want(50);
    std::iota(want.begin(), want.end(), 0);
    EXPECT_EQ(flat(pass(loader)), want) << workers << " workers";
  }
}

TEST(DataLoader, EveryIndexOncePerEpoch) {
  auto ds = std::make_shared<IndexDataset>(1003);
  DataLoader loader(ds, {.batch_size = 32, .shuffle = true, .seed = 5, .num_workers = 3, .prefetch = 4});
  for (int epoch = 0; epoch < 3; ++epoch) {
    std::vector<int64_t> seen = flat(pass(loader));
    std::sort(seen.begin(), seen.end());
    std::vector<int64_t> want(1003);
    std::iota(want.begin(), want.end(), 0);
    EXPECT_EQ(seen, want) << "epoch " << epoch;
  }
}

TEST(DataLoader, ShuffleDeterministicBySeedAndEpoch) {
  auto slow = std::make_shared<IndexDataset>(200, 200);
  DataLoader::Options o{.batch_size = 16, .shuffle = true, .seed = 9, .num_workers = 4, .prefetch = 6};
  DataLoader a(slow, o), b(slow, o);
  DataLoader serial(std::make_shared<IndexDataset>(200), {.batch_size = 16, .shuffle = true, .seed = 9,
                                                          .num_workers = 0});
  auto a0 = pass(a), a1 = pass(a);  // epochs 0 and 1
  auto b0 = pass(b), b1 = pass(b);
  auto s0 = pass(serial);
  EXPECT_EQ(a0, b0);  // whatever the thread timing
  EXPECT_EQ(a1, b1);
  EXPECT_EQ(a0, s0);  // and whatever the number of workers
  EXPECT_NE(a0, a1);  // a new epoch reshuffles
  b.set_epoch(1);
  EXPECT_EQ(pass(b), a1);  // resuming at epoch 1
  DataLoader other(slow, {.batch_size = 16, .shuffle = true, .seed = 10, .num_workers = 2});
  EXPECT_NE(pass(other), a0);
  // next() walks the same batches, then reports the end of the pass.
  DataLoader c(slow, o);
  for (const auto& want : a0) {
    std::optional<Batch> got = c.next();
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->input.to_vector<int64_t>(), want);
  }
  EXPECT_FALSE(c.next().has_value());
  EXPECT_EQ(c.next()->input.to_vector<int64_t>(), a1[0]);  // next() after the end starts epoch 1
}

TEST(DataLoader, ResumeInTheMiddleOfAnEpoch) {
  auto ds = std::make_shared<IndexDataset>(200);
  DataLoader::Options o{.batch_size = 16, .shuffle = true, .seed = 9, .num_workers = 2, .prefetch = 3};
  DataLoader a(ds, o), b(ds, o);
  pass(a);
  auto a1 = pass(a), a2 = pass(a);  // epochs 1 and 2
  b.set_epoch(1, 5);  // batch 5 of epoch 1 on, then epoch 2 whole
  EXPECT_EQ(pass(b), std::vector<std::vector<int64_t>>(a1.begin() + 5, a1.end()));
  EXPECT_EQ(pass(b), a2);
  b.set_epoch(1, b.size());  // an epoch whose batches were all done: an empty pass
  EXPECT_TRUE(pass(b).empty());
  EXPECT_THROW(b.set_epoch(1, b.size() + 1), ValueError);
  EXPECT_THROW(b.set_epoch(1, -1), ValueError);
}

TEST(DataLoader, DestroyMidEpoch) {
  auto ds = std::make_shared<IndexDataset>(10000, 500);
  auto t0 = std::chrono::steady_clock::now();
  {
    DataLoader loader(ds, {.batch_size = 8, .num_workers = 3, .prefetch = 4});
    int n = 0;
    for (const Batch& b : loader) {
      (void)b;
      if (++n == 3) break;
    }
  }  // the destructor stops the workers
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(ds->calls.load(), 20);  // the bounded queue kept the workers close to the consumer
  std::printf("[ info     ] destroyed mid-epoch after %.3f s\n", s);
  {
    DataLoader loader(ds, {.batch_size = 8, .num_workers = 2});
    loader.next();  // workers running; destroyed right away
  }
}

TEST(DataLoader, WorkerExceptionIsRethrown) {
  auto ds = std::make_shared<IndexDataset>(100, 0, 37);
  for (int workers : {0, 2}) {
    DataLoader loader(ds, {.batch_size = 10, .num_workers = workers});
    int got = 0;
    try {
      for (const Batch& b : loader) {
        (void)b;
        ++got;
      }
      FAIL() << "no exception";
    } catch (const ValueError& e) {
      EXPECT_STREQ(e.what(), "IndexDataset: sample 37 is broken");
    }
    EXPECT_EQ(got, 3);  // batches 0..2 arrived before batch 3 failed
    EXPECT_EQ(loader.next()->input.to_vector<int64_t>()[0], 0);  // the loader is usable again
  }
}
