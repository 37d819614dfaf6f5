// The DataLoader's share of each epoch on one rank of several (Note [Distributed sampling]):
// torch.utils.data.DistributedSampler's sharding, and resuming on another number of ranks.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "engine/core/error.h"
#include "engine/data/dataloader.h"

using namespace kiln;
using namespace kiln::data;

namespace {

// Sample i is the number i (input and target).
class IndexDataset : public Dataset {
 public:
  explicit IndexDataset(int64_t n) : n_(n) {}
  int64_t size() const override { return n_; }
  Batch get_batch(const std::vector<int64_t>& indices) const override {
    Tensor t = Tensor::from_vector(indices, {int64_t(indices.size())});
    return {t, t};
  }

 private:
  int64_t n_;
};

using Batches = std::vector<std::vector<int64_t>>;

DataLoader::Options options(int64_t batch, bool shuffle, int rank = 0, int world = 1) {
  DataLoader::Options o;
  o.batch_size = batch;
  o.shuffle = shuffle;
  o.seed = 7;
  o.num_workers = 0;
  o.rank = rank;
  o.world_size = world;
  return o;
}

Batches pass(DataLoader& loader) {
  Batches out;
  for (const Batch& b : loader) out.push_back(b.input.to_vector<int64_t>());
  return out;
}

// The pass of `epoch` (from global sample `start`) of a loader with these options.
Batches pass_of(int64_t n, DataLoader::Options o, int64_t epoch, int64_t start = 0) {
  DataLoader loader(std::make_shared<IndexDataset>(n), o);
  loader.set_epoch_at_sample(epoch, start);
  return pass(loader);
}

std::vector<int64_t> flat(const Batches& batches) {
  std::vector<int64_t> v;
  for (const auto& b : batches) v.insert(v.end(), b.begin(), b.end());
  return v;
}

std::vector<size_t> sizes(const Batches& batches) {
  std::vector<size_t> s;
  for (const auto& b : batches) s.push_back(b.size());
  return s;
}

}  // namespace

TEST(DistributedSampler, RanksInterleaveTheGlobalOrder) {
  const int64_t n = 11;
  for (bool shuffle : {true, false}) {
    const std::vector<int64_t> global = flat(pass_of(n, options(3, shuffle), 2));
    ASSERT_EQ(global.size(), size_t(n));
    std::map<int64_t, int> seen;
    std::vector<Batches> ranks;
    for (int r = 0; r < 2; ++r) {
      ranks.push_back(pass_of(n, options(3, shuffle, r, 2), 2));
      std::vector<int64_t> mine = flat(ranks.back());
      ASSERT_EQ(mine.size(), 6u);  // ceil(11 / 2)
      for (size_t j = 0; j < mine.size(); ++j) {
        EXPECT_EQ(mine[j], global[(r + 2 * j) % n]) << "rank " << r << " position " << j << " shuffle " << shuffle;
        ++seen[mine[j]];
      }
    }
    // The whole dataset, each sample once, but the padding: the global order's first sample again.
    ASSERT_EQ(seen.size(), size_t(n));
    for (const auto& [sample, count] : seen) EXPECT_EQ(count, sample == global[0] ? 2 : 1) << sample;
    EXPECT_EQ(sizes(ranks[0]), sizes(ranks[1]));
    EXPECT_EQ(sizes(ranks[0]), (std::vector<size_t>{3, 3}));
  }
  EXPECT_EQ(flat(pass_of(n, options(3, false, 1, 2), 0)), (std::vector<int64_t>{1, 3, 5, 7, 9, 0}));
}

TEST(DistributedSampler, EveryRankHasTheSameBatches) {
  for (int64_t n : {1, 2, 5, 12, 13})
    for (int world : {1, 2, 3, 4})
      for (int64_t batch : {1, 2, 5})
        for (bool drop_last : {false, true}) {
          std::vector<size_t> first;
          for (int r = 0; r < world; ++r) {
            DataLoader::Options o = options(batch, true, r, world);
            o.drop_last = drop_last;
            DataLoader loader(std::make_shared<IndexDataset>(n), o);
            std::vector<size_t> s = sizes(pass(loader));
            EXPECT_EQ(int64_t(s.size()), loader.size()) << n << " " << world << " " << batch << " " << drop_last;
            if (r == 0) first = s;
            EXPECT_EQ(s, first) << "rank " << r << " of " << world << ", n " << n << ", batch " << batch;
          }
        }
  // Fewer samples than ranks: the order repeats (torch pads with indices * ceil(padding / n)).
  const std::vector<int64_t> global = flat(pass_of(2, options(1, true), 0));
  for (int r = 0; r < 3; ++r) EXPECT_EQ(flat(pass_of(2, options(1, true, r, 3), 0)), (std::vector<int64_t>{global[r % 2]}));
}

TEST(DistributedSampler, ResumingOnOneRankContinuesAtTheNextGlobalSample) {
  const int64_t n = 23, batch = 3, epoch = 4, k = 2;
  const std::vector<int64_t> global = flat(pass_of(n, options(batch, true), epoch));
  // Two ranks stop after k batches each: they consumed the global order's first k * 3 * 2 samples.
  std::vector<int64_t> done;
  int64_t consumed = 0;
  for (int r = 0; r < 2; ++r) {
    DataLoader loader(std::make_shared<IndexDataset>(n), options(batch, true, r, 2));
    loader.set_epoch(epoch);
    for (int64_t i = 0; i < k; ++i) {
      std::vector<int64_t> b = loader.next()->input.to_vector<int64_t>();
      done.insert(done.end(), b.begin(), b.end());
    }
    consumed = loader.global_samples_consumed(k);
  }
  ASSERT_EQ(consumed, 12);
  std::sort(done.begin(), done.end());
  std::vector<int64_t> head(global.begin(), global.begin() + consumed);
  std::sort(head.begin(), head.end());
  EXPECT_EQ(done, head);
  // One rank resumes there: exactly the rest of the global order, then the next epoch whole.
  DataLoader one(std::make_shared<IndexDataset>(n), options(batch, true));
  one.set_epoch_at_sample(epoch, consumed);
  Batches rest = pass(one);
  EXPECT_EQ(flat(rest), std::vector<int64_t>(global.begin() + consumed, global.end()));
  EXPECT_EQ(sizes(rest), (std::vector<size_t>{3, 3, 3, 2}));
  EXPECT_EQ(one.global_samples_consumed(int64_t(rest.size()), consumed), n);
  EXPECT_EQ(one.epoch(), epoch + 1);
  EXPECT_EQ(flat(pass(one)), flat(pass_of(n, options(batch, true), epoch + 1)));
}

TEST(DistributedSampler, ResumingOnThreeRanksShardsTheRest) {
  const int64_t n = 23, start = 9;  // one rank did 3 batches of 3
  const std::vector<int64_t> global = flat(pass_of(n, options(3, true), 1));
  ASSERT_EQ(DataLoader(std::make_shared<IndexDataset>(n), options(3, true)).global_samples_consumed(3), start);
  const std::vector<int64_t> rest(global.begin() + start, global.end());  // 14 samples, padded to 15
  for (int r = 0; r < 3; ++r) {
    std::vector<int64_t> mine = flat(pass_of(n, options(3, true, r, 3), 1, start));
    ASSERT_EQ(mine.size(), 5u);
    for (size_t j = 0; j < mine.size(); ++j) EXPECT_EQ(mine[j], rest[(r + 3 * j) % rest.size()]) << r << " " << j;
  }
}

TEST(DistributedSampler, ConsumedSamplesAreClippedToThePaddedEpoch) {
  DataLoader loader(std::make_shared<IndexDataset>(11), options(3, true, 1, 2));
  EXPECT_EQ(loader.size(), 2);
  EXPECT_EQ(loader.global_samples_consumed(0), 0);
  EXPECT_EQ(loader.global_samples_consumed(1), 6);
  EXPECT_EQ(loader.global_samples_consumed(2), 12);  // 11 samples padded to 12
  EXPECT_EQ(loader.global_samples_consumed(1000000), 12);
  EXPECT_EQ(loader.global_samples_consumed(1, 10), 12);  // 1 sample left, padded to 2
  EXPECT_EQ(loader.global_samples_consumed(3, 30), 30);  // past the end: nothing left
  EXPECT_THROW(loader.global_samples_consumed(-1), ValueError);
  EXPECT_THROW(loader.global_samples_consumed(1, -1), ValueError);
  EXPECT_THROW(loader.set_epoch_at_sample(0, -1), ValueError);
  loader.set_epoch_at_sample(0, 11);
  EXPECT_TRUE(pass(loader).empty());
}

TEST(DistributedSampler, WorldOfOneIsUnchanged) {
  auto data = std::make_shared<IndexDataset>(17);
  for (bool drop_last : {false, true}) {
    DataLoader::Options plain;
    plain.batch_size = 4;
    plain.shuffle = true;
    plain.seed = 3;
    plain.drop_last = drop_last;
    plain.num_workers = 2;
    DataLoader a(data, plain), b(data, plain), c(data, plain);
    ASSERT_EQ(a.size(), drop_last ? 4 : 5);
    std::vector<int64_t> perm = seeded_permutation(17, 3, 1);
    a.set_epoch(1);
    Batches whole = pass(a);
    EXPECT_EQ(flat(whole), std::vector<int64_t>(perm.begin(), perm.begin() + (drop_last ? 16 : 17)));
    // Resuming at batch 2 or at its first global sample gives the same batches.
    b.set_epoch(1, 2);
    c.set_epoch_at_sample(1, b.global_samples_consumed(2));
    Batches from_batch = pass(b), from_sample = pass(c);
    EXPECT_EQ(from_batch, Batches(whole.begin() + 2, whole.end()));
    EXPECT_EQ(from_sample, from_batch);
  }
}

TEST(DistributedSampler, WeightedDrawIsShardedToo) {
  DataLoader::Options o = options(2, false);
  o.sample_weights = {1, 0, 2, 3, 1, 0, 5};
  const std::vector<int64_t> global = flat(pass_of(7, o, 3));
  for (int r = 0; r < 2; ++r) {
    o.rank = r;
    o.world_size = 2;
    std::vector<int64_t> mine = flat(pass_of(7, o, 3));
    ASSERT_EQ(mine.size(), 4u);
    for (size_t j = 0; j < mine.size(); ++j) EXPECT_EQ(mine[j], global[(r + 2 * j) % 7]);
  }
}

TEST(DistributedSampler, BadRankOrWorldSize) {
  auto data = std::make_shared<IndexDataset>(4);
  EXPECT_THROW(DataLoader(data, options(2, false, 0, 0)), ValueError);
  EXPECT_THROW(DataLoader(data, options(2, false, 2, 2)), ValueError);
  EXPECT_THROW(DataLoader(data, options(2, false, -1, 2)), ValueError);
  try {
    DataLoader(data, options(2, false, 3, 2));
    ADD_FAILURE() << "no error for rank 3 of 2";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 3 is outside [0, world_size=2)"), std::string::npos) << e.what();
  }
}
