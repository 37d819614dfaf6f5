// Data parallelism on the GPU through NCCL, with what one GPU allows: a world of one rank. Its
// all-reduce of a bucket is still a real NCCL collective on the communicator's own stream, so the
// Trainer with the Reducer must give the single-GPU loss curve bit for bit, eager and captured
// (issue 21: "on one GPU, a world of size 1 must give the single-GPU loss curve bit for bit").
// Two ranks need two GPUs (NCCL refuses two ranks of one communicator on one device).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "engine/core/collectives.h"
#include "engine/core/error.h"
#include "engine/core/random.h"
#include "engine/core/registry.h"
#include "engine/data/dataloader.h"
#include "engine/data/dataset.h"
#include "engine/distributed/process_group.h"
#include "engine/distributed/reducer.h"
#include "engine/nn/nn.h"
#include "engine/optim/adam.h"
#include "engine/optim/sgd.h"
#include "engine/train/trainer.h"
#include "tests/engine/cuda_test_util.h"

namespace kiln::distributed {
namespace {

using kiln::cuda_test::kGpu;

// A free TCP port on 127.0.0.1 for a rendezvous (bound to port 0, read back, closed).
DistributedEnvironment world_of_one() {
  DistributedEnvironment env;
  env.master_addr = "127.0.0.1";
  env.master_port = 20000 + static_cast<int>(::getpid() % 20000);
  env.rank = 0;
  env.world_size = 1;
  return env;
}

struct TrainRun {
  std::vector<double> losses;
  std::vector<float> weights;
  std::string cuda_graph;
};

// 2 epochs of an MLP on 256 random 1x8x8 images, batches of 32, SGD with momentum or Adam. (An MLP:
// its kernels give the same bits on every run, which cuDNN's convolution algorithms need not.)
TrainRun train_mlp(bool cuda_graph, bool adam, ProcessGroup* group) {
  manual_seed(3);
  auto model = std::make_shared<nn::Sequential>(std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(64, 128),
                                                std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(128, 64),
                                                std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(64, 4));
  model->to(kGpu);
  std::shared_ptr<optim::Optimizer> opt;
  if (adam) opt = std::make_shared<optim::Adam>(model->parameters(), optim::AdamOptions{1e-3});
  else opt = std::make_shared<optim::SGD>(model->parameters(), optim::SGDOptions{0.05, 0.9});
  train::TrainerOptions o;
  o.epochs = 2;
  o.num_classes = 4;
  o.top_k = 2;
  o.device = kGpu;
  o.cuda_graph = cuda_graph;
  std::shared_ptr<Reducer> reducer;
  if (group) {
    broadcast_state(*model, group->communicator());
    // Small caps: several buckets, so that all-reduces overlap the backward pass.
    reducer = std::make_shared<Reducer>(model->parameters(), group->communicator(), BucketOptions{1024, 4096});
    EXPECT_EQ(reducer->buckets().size(), 3u);  // [b3 w3] [b2 w2] [b1 w1]
    o.backward = [reducer](const Tensor& loss) { reducer->backward(loss); };
  }
  train::Trainer trainer(model, opt, nullptr, [](const Tensor& l, const Tensor& t) { return nn::F::cross_entropy(l, t); },
                         o);
  Generator g(9);
  Tensor x = normal({256, 1, 8, 8}, 0, 1, DType::f32, Device(), &g);
  std::vector<float> xv = x.to_vector<float>();
  std::vector<int64_t> y(256);
  for (int64_t i = 0; i < 256; ++i) y[i] = (xv[i * 64 + 9] > 0 ? 1 : 0) + (xv[i * 64 + 27] > 0 ? 2 : 0);
  data::DataLoader::Options lo;
  lo.batch_size = 32;
  lo.shuffle = true;
  lo.seed = 5;
  data::DataLoader loader(std::make_shared<data::TensorDataset>(x, Tensor::from_vector(y, {256})), lo);
  trainer.fit(loader, nullptr);
  TrainRun r;
  for (auto& e : trainer.events().drain()) {
    if (auto* b = std::get_if<train::BatchEnd>(&e)) r.losses.push_back(b->loss);
    if (auto* fin = std::get_if<train::Finished>(&e)) {
      EXPECT_TRUE(fin->error.empty()) << fin->error;
      r.cuda_graph = fin->cuda_graph;
    }
  }
  for (const Tensor& p : model->parameters()) {
    auto v = p.to(Device()).contiguous().to_vector<float>();
    r.weights.insert(r.weights.end(), v.begin(), v.end());
  }
  return r;
}

TEST(DistributedCuda, WorldOfOneGivesTheSingleGpuLossCurveBitForBit) {
  REQUIRE_NCCL();
  ProcessGroup group(world_of_one(), kGpu, 60);
  EXPECT_EQ(group.library().rfind("NCCL ", 0), 0u) << group.library();
  for (bool graph : {false, true})
    for (bool adam : {false, true}) {
      SCOPED_TRACE(std::string(graph ? "captured" : "eager") + (adam ? ", Adam" : ", SGD"));
      TrainRun alone = train_mlp(graph, adam, nullptr), again = train_mlp(graph, adam, nullptr);
      TrainRun ddp = train_mlp(graph, adam, &group);
      ASSERT_EQ(alone.losses.size(), 16u);
      // The single-GPU run repeats itself bit for bit, so that a difference below is the Reducer's.
      ASSERT_EQ(again.losses, alone.losses);
      ASSERT_EQ(again.weights, alone.weights);
      EXPECT_EQ(ddp.losses, alone.losses);
      EXPECT_EQ(ddp.weights, alone.weights);
      EXPECT_EQ(ddp.cuda_graph, alone.cuda_graph);
    }
  EXPECT_EQ(group.sum({1.5, -2}), (std::vector<double>{1.5, -2}));
}

TEST(DistributedCuda, ProcessGroupOnTheCpuSaysItNeedsACollectivesLibrary) {
  try {
    ProcessGroup group(world_of_one(), Device(), 5);
    FAIL() << "a process group on the CPU";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("no collectives library"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cpu"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln::distributed
