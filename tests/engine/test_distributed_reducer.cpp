// engine/distributed/reducer.h and the autograd leaf hook it runs on (LeafGradHookGuard), on the
// CPU. The ranks are threads of this process joined by ThreadGroup below: a real all-reduce over
// host memory, in which the ranks take turns (one rank runs engine code at a time; all_reduce
// hands the turn on), so the test is deterministic and needs no GPU. NCCL itself is checked on the
// GPU (test_cuda_nccl.cpp, test_distributed_cuda.cpp).
#include <gtest/gtest.h>

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "engine/autograd/backward.h"
#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/core/random.h"
#include "engine/distributed/reducer.h"
#include "engine/nn/activation.h"
#include "engine/nn/functional.h"
#include "engine/nn/linear.h"
#include "engine/nn/module.h"

namespace kiln::distributed {
namespace {

// World of `world` ranks, each a thread; run(fn) calls fn(rank, comm) on every rank, one at a time.
class ThreadGroup {
 public:
  explicit ThreadGroup(int world) : world_(world), bufs_(world) {}
  struct Comm : Communicator {
    ThreadGroup* g;
    int r;
    std::unique_lock<std::mutex>* turn = nullptr;  // the rank's hold on the group's turn
    int rank() const override { return r; }
    int world_size() const override { return g->world_; }
    void all_reduce(const TensorArg& buf, bool average) override { g->reduce(*this, buf, average); }
    void broadcast(const TensorArg&, int) override { throw std::logic_error("unused"); }
    void all_gather(const TensorArg&, const TensorArg&) override { throw std::logic_error("unused"); }
    void join() override {}
    void wait(double) override {}
    void abort() override {}
  };
  void run(const std::function<void(int, Communicator&)>& fn) {
    std::vector<std::thread> threads;
    for (int r = 0; r < world_; ++r)
      threads.emplace_back([this, r, &fn] {
        std::unique_lock<std::mutex> turn(mutex_);
        Comm c;
        c.g = this, c.r = r, c.turn = &turn;
        fn(r, c);
      });
    for (auto& t : threads) t.join();
  }
  std::vector<int64_t> sizes;  // numel of each all-reduce, in the order rank 0 called them
  std::function<void()> on_reduce;  // called by rank 0 at each all-reduce

 private:
  void reduce(Comm& c, const TensorArg& buf, bool average) {
    EXPECT_EQ(buf.dtype, DType::f32);
    if (c.r == 0) {
      sizes.push_back(buf.numel());
      if (on_reduce) on_reduce();
    }
    bufs_[c.r] = buf;
    const uint64_t gen = generation_;
    if (++arrived_ < world_) {
      cv_.wait(*c.turn, [&] { return generation_ != gen; });
      return;
    }
    const int64_t n = buf.numel();
    for (int r = 0; r < world_; ++r) ASSERT_EQ(bufs_[r].numel(), n) << "ranks disagree on all-reduce " << sizes.size();
    std::vector<float> sum(static_cast<size_t>(n), 0.f);
    for (int r = 0; r < world_; ++r)
      for (int64_t i = 0; i < n; ++i) sum[i] += static_cast<const float*>(bufs_[r].data)[bufs_[r].offset + i];
    for (int r = 0; r < world_; ++r)
      for (int64_t i = 0; i < n; ++i)
        static_cast<float*>(bufs_[r].data)[bufs_[r].offset + i] = average ? sum[i] / static_cast<float>(world_) : sum[i];
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
  }
  int world_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<TensorArg> bufs_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
};

std::shared_ptr<nn::Sequential> mlp() {
  manual_seed(7);
  return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(6, 16), std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(16, 16),
      std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(16, 3)});
}

Tensor batch_x() {
  manual_seed(11);
  return normal({8, 6}, 0, 1);
}
Tensor batch_y() { return Tensor::from_vector<int64_t>({0, 2, 1, 1, 0, 2, 2, 1}, {8}); }

std::vector<std::vector<float>> grads_of(const nn::Module& m) {
  std::vector<std::vector<float>> out;
  for (const Tensor& p : m.parameters()) out.push_back(Tensor(p.impl()->grad).contiguous().to_vector<float>());
  return out;
}

void expect_close(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b, double tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    ASSERT_EQ(a[k].size(), b[k].size());
    for (size_t i = 0; i < a[k].size(); ++i) ASSERT_NEAR(a[k][i], b[k][i], tol) << "parameter " << k << " element " << i;
  }
}

TEST(DistributedBuckets, ReverseOrderSmallFirstBucketThenCapOneDTypeEach) {
  std::vector<Tensor> p = {Tensor::zeros({10}), Tensor::zeros({30}), Tensor::zeros({5}, DType::f64),
                           Tensor::zeros({20}), Tensor::zeros({4}), Tensor::zeros({3})};
  // From the back, f32: 12, 16, 80 bytes reach the first cap (64) at parameter 3; then 120 + 40
  // reach the second (128) at parameter 0. The f64 parameter's bucket never fills.
  auto b = assign_buckets(p, BucketOptions{64, 128});
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0], (std::vector<size_t>{5, 4, 3}));
  EXPECT_EQ(b[1], (std::vector<size_t>{1, 0}));
  EXPECT_EQ(b[2], (std::vector<size_t>{2}));
  // Default caps (1 MiB, 25 MiB): a small model is one bucket, last parameter first.
  auto one = assign_buckets({Tensor::zeros({10}), Tensor::zeros({3})}, BucketOptions{});
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0], (std::vector<size_t>{1, 0}));
  EXPECT_THROW(assign_buckets(p, BucketOptions{0, 128}), ValueError);
}

TEST(DistributedLeafHook, ReportsEachLeafOnceWithItsWholeGradient) {
  Tensor w = Tensor::from_vector<float>({1, 2, 3}, {3}).requires_grad_();
  Tensor x = Tensor::from_vector<float>({4, 5, 6}, {3}).requires_grad_();
  Tensor unused = Tensor::from_vector<float>({1}, {1}).requires_grad_();
  std::vector<std::pair<const TensorImpl*, std::vector<float>>> seen;
  {
    autograd::LeafGradHookGuard guard([&](const std::shared_ptr<TensorImpl>& leaf) {
      seen.emplace_back(leaf.get(), Tensor(leaf->grad).to_vector<float>());
    });
    Tensor y = add(sum(mul(w, x)), sum(mul(w, w)));  // w takes part in two products
    y.backward();
  }
  ASSERT_EQ(seen.size(), 2u);  // w and x, once each; `unused` is not part of the pass
  for (const auto& [leaf, grad] : seen) {
    if (leaf == w.impl()) {
      EXPECT_EQ(grad, (std::vector<float>{6, 9, 12}));  // x + 2w: both contributions in
    } else {
      EXPECT_EQ(leaf, x.impl());
      EXPECT_EQ(grad, (std::vector<float>{1, 2, 3}));
    }
  }
  EXPECT_FALSE(unused.impl()->grad);
}

// Mean cross entropy of samples [begin, end) of the test batch.
Tensor loss_of(nn::Module& m, int64_t begin, int64_t end) {
  return nn::functional::cross_entropy(m.forward(batch_x().slice(0, begin, end)), batch_y().slice(0, begin, end));
}

TEST(DistributedReducer, TwoRanksAverageToTheFullBatchGradientBucketByBucket) {
  auto reference = mlp();
  loss_of(*reference, 0, 8).backward();
  const auto expected = grads_of(*reference);

  ThreadGroup group(2);
  std::vector<std::vector<std::vector<float>>> got(2);
  std::vector<std::vector<size_t>> buckets;
  int nodes_done = 0, nodes_at_first_reduce = -1;
  group.on_reduce = [&] {
    if (nodes_at_first_reduce < 0) nodes_at_first_reduce = nodes_done;
  };
  group.run([&](int rank, Communicator& comm) {
    auto model = mlp();
    Reducer reducer(model->parameters(), comm, BucketOptions{256, 1024});
    if (rank == 0) buckets = reducer.buckets();
    Tensor loss = loss_of(*model, 4 * rank, 4 * rank + 4);  // each rank its half of the batch
    autograd::BackwardHookGuard count(rank == 0 ? autograd::BackwardNodeHook([&](const Node&, bool done) {
      nodes_done += done;
    }) : autograd::BackwardNodeHook());
    reducer.backward(loss);
    got[rank] = grads_of(*model);
  });
  // The mean of the halves' mean losses is the full batch's mean loss.
  expect_close(got[0], expected, 1e-6);
  EXPECT_EQ(got[0], got[1]);  // the same averaged gradients on both ranks
  // One all-reduce per bucket, in bucket order: 3 + 48 + 16 floats reach 256 bytes first.
  ASSERT_GE(buckets.size(), 2u);
  EXPECT_EQ(buckets[0], (std::vector<size_t>{5, 4, 3}));
  std::vector<int64_t> sizes;
  auto params = mlp()->parameters();
  for (const auto& b : buckets) {
    int64_t n = 0;
    for (size_t i : b) n += params[i].numel();
    sizes.push_back(n);
  }
  EXPECT_EQ(group.sizes, sizes);
  // The first bucket went out while the backward pass still had nodes to do (the overlap).
  EXPECT_GE(nodes_at_first_reduce, 1);
  EXPECT_LT(nodes_at_first_reduce, nodes_done);
}

TEST(DistributedReducer, NoSyncAccumulatesAndTheNextPassAveragesTheSum) {
  auto reference = mlp();
  for (int64_t q = 0; q < 4; ++q) loss_of(*reference, 2 * q, 2 * q + 2).backward();
  auto expected = grads_of(*reference);
  for (auto& g : expected)
    for (float& v : g) v /= 2;  // two ranks: the sum of all four passes over 2

  ThreadGroup group(2);
  std::vector<std::vector<std::vector<float>>> got(2);
  group.run([&](int rank, Communicator& comm) {
    auto model = mlp();
    Reducer reducer(model->parameters(), comm, BucketOptions{256, 1024});
    reducer.backward(loss_of(*model, 4 * rank, 4 * rank + 2), Tensor(), /*sync=*/false);
    reducer.backward(loss_of(*model, 4 * rank + 2, 4 * rank + 4));
    got[rank] = grads_of(*model);
  });
  expect_close(got[0], expected, 1e-6);
  EXPECT_EQ(got[0], got[1]);
  EXPECT_EQ(group.sizes.size(), assign_buckets(mlp()->parameters(), BucketOptions{256, 1024}).size());
}

TEST(DistributedReducer, LeavesOutFrozenParametersAndNeedsOne) {
  ThreadGroup group(1);
  group.run([&](int, Communicator& comm) {
    auto model = mlp();
    auto params = model->parameters();
    for (size_t i = 0; i + 2 < params.size(); ++i) params[i].requires_grad_(false);  // only the head trains
    Reducer reducer(params, comm);
    ASSERT_EQ(reducer.buckets().size(), 1u);
    EXPECT_EQ(reducer.buckets()[0], (std::vector<size_t>{1, 0}));  // of the two that train
    reducer.backward(loss_of(*model, 0, 8));
    EXPECT_FALSE(params[0].impl()->grad);
    EXPECT_TRUE(params.back().impl()->grad);
    for (Tensor& p : params) p.requires_grad_(false);
    EXPECT_THROW(Reducer(params, comm), ValueError);
  });
  EXPECT_EQ(group.sizes, (std::vector<int64_t>{3 + 16 * 3}));
}

}  // namespace
}  // namespace kiln::distributed
