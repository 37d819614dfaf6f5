// Training throughput and matmul speed of a device (default cuda:0), printed as one JSON
// line per figure for tests/bench/cuda_vs_pytorch.sh, which runs PyTorch on the same GPU
// beside it (tests/bench/pytorch_cuda_bench.py). A benchmark, not a test.
//
//   bench_cuda_train train  [--device D] [--model cnn|mlp|resnet18] [--batch 128] [--steps 400] [--warmup 30]
//                           [--precision f32|bf16|f16] [--epochs E] [--no-cuda-graph] [--compare-graph K]
//                           [--scheduler none|onecycle|cosine] [--ddp]
//   bench_cuda_train matmul [--device D] [--size 8192] [--dtype bf16|f16|f32] [--iters 20]
//
// train: the reference model (engine/train/reference_models.h), Adam lr 1e-3, on random
// images and labels held on the device (Fashion-MNIST shapes, 60,000 of them, taken in order
// batch by batch); each step is forward, cross-entropy, backward, Adam, and reading the loss
// (as the Trainer does), so the figure includes one device round trip per step.
// After 3 eager steps the step is recorded as a CUDA graph and replayed (engine/train/
// captured_step.h; --no-cuda-graph or KILN_CUDA_GRAPH=0 keeps it eager; "graph_note" says
// why it stayed eager). --compare-graph K: K steps eager, then the same K steps from the same
// seed with the graph; prints the largest loss difference (exit 1 unless replayed and < 1e-3).
// --scheduler onecycle|cosine: OneCycleLR (max lr 1e-3) or CosineAnnealingLR stepped after every
// step over the run's steps, so each replay gets another learning rate (Backend::ReplayArgs).
// --precision bf16|f16: mixed precision (engine/train/mixed_precision.h), f16 with loss scaling.
// resnet18: the CIFAR form of ResNet-18 (He et al. 2016; 3x3 stem, no max pool, BasicBlocks
// [2, 2, 2, 2] of 64..512 channels, BatchNorm) on 3x32x32 images, 10 classes.
// --epochs E: E passes over the 60,000 images instead of --steps; the device's reserved bytes
// after each pass are listed (the caching allocator should stop growing after the first).
// --ddp: data parallel (engine/distributed): the process is one rank of the job the torchrun
// variables describe (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK; a world of one on
// 127.0.0.1 when WORLD_SIZE is unset), trains on cuda:LOCAL_RANK, and every backward pass averages
// the gradients over the ranks through NCCL (distributed::Reducer); images_per_second is this
// rank's. tests/bench/ddp_scaling.sh launches the ranks and prints per-GPU efficiency.
// matmul: C = A @ B, timed over `iters` calls after warm-up, in TFLOP/s (2 n^3 per call).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/autocast.h"
#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/nn/nn.h"
#include "engine/core/random.h"
#include "engine/core/registry.h"
#include "engine/distributed/process_group.h"
#include "engine/distributed/reducer.h"
#include "engine/nn/functional.h"
#include "engine/optim/adam.h"
#include "engine/optim/lr_scheduler.h"
#include "engine/train/captured_step.h"
#include "engine/train/mixed_precision.h"
#include "engine/train/reference_models.h"

using namespace kiln;

namespace {

std::string flag(int argc, char** argv, const std::string& name, const std::string& def) {
  for (int i = 2; i + 1 < argc; ++i)
    if (argv[i] == "--" + name) return argv[i + 1];
  return def;
}

bool toggle(int argc, char** argv, const std::string& name) {
  for (int i = 2; i < argc; ++i)
    if (argv[i] == "--" + name) return true;
  return false;
}

// --ddp's process group: the torchrun variables, or a world of one on 127.0.0.1.
std::unique_ptr<distributed::ProcessGroup> join_job() {
  distributed::DistributedEnvironment env;
  if (std::getenv("WORLD_SIZE")) {
    env = distributed::from_environment();
  } else {
    env.master_addr = "127.0.0.1";
    env.master_port = 20000 + static_cast<int>(::getpid() % 20000);
  }
  return std::make_unique<distributed::ProcessGroup>(env, Device(DeviceType::cuda, env.local_rank));
}

// ResNet-18's BasicBlock: relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)).
class BasicBlock : public nn::Module {
 public:
  BasicBlock(int64_t in, int64_t out, int64_t stride) {
    conv1_ = register_module("conv1", std::make_shared<nn::Conv2d>(in, out, 3, stride, 1, 1, 1, false));
    bn1_ = register_module("bn1", std::make_shared<nn::BatchNorm2d>(out));
    conv2_ = register_module("conv2", std::make_shared<nn::Conv2d>(out, out, 3, 1, 1, 1, 1, false));
    bn2_ = register_module("bn2", std::make_shared<nn::BatchNorm2d>(out));
    if (stride != 1 || in != out)
      shortcut_ = register_module("shortcut", std::make_shared<nn::Sequential>(
                                                  std::make_shared<nn::Conv2d>(in, out, 1, stride, 0, 1, 1, false),
                                                  std::make_shared<nn::BatchNorm2d>(out)));
  }
  Tensor forward(const Tensor& x) override {
    Tensor y = (*bn2_)((*conv2_)(relu((*bn1_)((*conv1_)(x)))));
    return relu(add(y, shortcut_ ? (*shortcut_)(x) : x));
  }

 private:
  std::shared_ptr<nn::Conv2d> conv1_, conv2_;
  std::shared_ptr<nn::BatchNorm2d> bn1_, bn2_;
  std::shared_ptr<nn::Sequential> shortcut_;
};

std::shared_ptr<nn::Module> resnet18() {
  auto net = std::make_shared<nn::Sequential>(std::make_shared<nn::Conv2d>(3, 64, 3, 1, 1, 1, 1, false),
                                              std::make_shared<nn::BatchNorm2d>(64), std::make_shared<nn::ReLU>());
  int64_t in = 64;
  for (int64_t out : {64, 128, 256, 512})
    for (int b = 0; b < 2; ++b) {
      net->push_back(std::make_shared<BasicBlock>(in, out, b == 0 && out != 64 ? 2 : 1));
      in = out;
    }
  net->push_back(std::make_shared<nn::AdaptiveAvgPool2d>(1));
  net->push_back(std::make_shared<nn::Flatten>());
  net->push_back(std::make_shared<nn::Linear>(512, 10));
  return net;
}

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// One training run of the benchmark (see the header); losses, when given, gets every step's loss.
struct RunResult {
  double images_per_second = 0, mean_loss = 0;
  std::string reserved_after_each_epoch, graph_note;
  bool replayed = false;
};

RunResult run_training(int argc, char** argv, bool use_graph, int steps, std::vector<float>* losses,
                       distributed::ProcessGroup* group = nullptr) {
  const Device dev = group ? group->device() : resolve_device(flag(argc, argv, "device", "cuda:0"));
  const std::string model_name = flag(argc, argv, "model", "cnn");
  const int64_t batch = std::stoll(flag(argc, argv, "batch", "128"));
  const int warmup = std::stoi(flag(argc, argv, "warmup", "30"));
  const bool resnet = model_name == "resnet18";
  const int64_t n = resnet ? 50000 : 60000;
  manual_seed(0);
  Tensor images = resnet ? normal({n, 3, 32, 32}, 0, 1, DType::f32, dev) : normal({n, 1, 28, 28}, 0, 1, DType::f32, dev);
  Tensor labels = floor(uniform({n}, 0, 9.999, DType::f32, dev)).to(DType::i64);
  auto model = resnet ? resnet18() : train::make_model(model_name);
  model->to(dev);
  optim::AdamOptions o;
  o.lr = 1e-3;
  optim::Adam opt(model->parameters(), o);
  std::unique_ptr<distributed::Reducer> reducer;
  if (group) {
    distributed::broadcast_state(*model, group->communicator());
    reducer = std::make_unique<distributed::Reducer>(model->parameters(), group->communicator());
  }
  auto backward = [&](const Tensor& l) { reducer ? reducer->backward(l) : l.backward(); };
  const std::string precision = flag(argc, argv, "precision", "f32");
  const train::PrecisionPlan plan = train::plan_precision(precision, dev);
  AutocastGuard autocast_scope(plan.autocast);
  train::GradScaler scaler;
  // The batch is copied into fixed tensors, so a recorded step reads each new batch.
  Shape xs_shape = images.shape();
  xs_shape[0] = batch;
  Tensor xs = Tensor::empty(xs_shape, DType::f32, dev), ys = Tensor::empty({batch}, DType::i64, dev);
  Tensor loss;
  train::CapturedStep graph(dev, opt, 3, use_graph && !plan.loss_scaling);
  int64_t pos = 0;
  double loss_sum = 0;
  auto compute = [&] {
    opt.zero_grad();
    loss = nn::F::cross_entropy((*model)(xs), ys);
    if (plan.loss_scaling) {
      backward(scaler.scale(loss));
      scaler.step(opt);
    } else {
      backward(loss);
      opt.step();
    }
  };
  const int epochs = std::stoi(flag(argc, argv, "epochs", "0"));
  const int per_epoch = static_cast<int>(n / batch);
  if (epochs > 0) steps = epochs * per_epoch;
  const std::string sched_name = flag(argc, argv, "scheduler", "none");
  std::unique_ptr<optim::LRScheduler> sched;
  if (sched_name == "onecycle") sched = std::make_unique<optim::OneCycleLR>(opt, 1e-3, warmup + steps + 1);
  else if (sched_name == "cosine") sched = std::make_unique<optim::CosineAnnealingLR>(opt, warmup + steps);
  else if (sched_name != "none") throw ValueError("--scheduler: unknown '" + sched_name + "'; known: none, onecycle, cosine");
  auto step = [&] {
    if (pos + batch > n) pos = 0;
    xs.copy_(images.slice(0, pos, pos + batch));
    ys.copy_(labels.slice(0, pos, pos + batch));
    pos += batch;
    graph.run(compute);
    const float l = loss.item<float>();
    loss_sum += l;
    if (losses) losses->push_back(l);
    if (sched) sched->step();
  };
  for (int i = 0; i < warmup; ++i) step();
  Backend* be = backend_for(dev);
  be->synchronize();
  loss_sum = 0;
  std::string reserved = "[";
  const double t0 = now();
  for (int i = 0; i < steps; ++i) {
    step();
    if (epochs > 0 && (i + 1) % per_epoch == 0)
      reserved += (reserved.size() > 1 ? ", " : "") + std::to_string(be->memory_stats().reserved);
  }
  reserved += "]";
  be->synchronize();
  RunResult r;
  r.images_per_second = static_cast<double>(steps * batch) / (now() - t0);
  r.mean_loss = loss_sum / steps;
  r.reserved_after_each_epoch = reserved;
  r.replayed = graph.replaying();
  r.graph_note = graph.note();
  return r;
}

int train_bench(int argc, char** argv) {
  std::unique_ptr<distributed::ProcessGroup> group = toggle(argc, argv, "ddp") ? join_job() : nullptr;
  const Device dev = group ? group->device() : resolve_device(flag(argc, argv, "device", "cuda:0"));
  const int steps = std::stoi(flag(argc, argv, "steps", "400"));
  bool use_graph = true;
  for (int i = 2; i < argc; ++i)
    if (std::string(argv[i]) == "--no-cuda-graph") use_graph = false;
  const int compare = std::stoi(flag(argc, argv, "compare-graph", "0"));
  if (compare > 0) {  // the same run eager and recorded: the loss curves must agree
    std::vector<float> eager, replayed;
    RunResult a = run_training(argc, argv, false, compare, &eager);
    RunResult b = run_training(argc, argv, true, compare, &replayed);
    double worst = 0;
    for (size_t i = 0; i < eager.size() && i < replayed.size(); ++i)
      worst = std::max(worst, static_cast<double>(std::fabs(eager[i] - replayed[i])));
    std::printf("{\"bench\": \"compare_graph\", \"steps\": %zu, \"replayed\": %s, \"graph_note\": \"%s\", "
                "\"first_loss\": %.6f, \"last_loss_eager\": %.6f, \"last_loss_replayed\": %.6f, "
                "\"max_abs_loss_difference\": %.3g}\n",
                eager.size(), b.replayed ? "true" : "false", b.graph_note.c_str(), eager.empty() ? 0.0 : eager.front(),
                eager.empty() ? 0.0 : eager.back(), replayed.empty() ? 0.0 : replayed.back(), worst);
    (void)a;
    return b.replayed && worst < 1e-3 ? 0 : 1;
  }
  const RunResult r = run_training(argc, argv, use_graph, steps, nullptr, group.get());
  const MemoryStats m = backend_for(dev)->memory_stats();
  std::printf("{\"bench\": \"train\", \"rank\": %d, \"world_size\": %d, \"model\": \"%s\", \"precision\": \"%s\", \"device\": \"%s\", \"batch_size\": %s, \"steps\": %d, "
              "\"cuda_graph\": %s, \"graph_note\": \"%s\", "
              "\"images_per_second\": %.1f, \"mean_loss\": %.4f, \"peak_allocated_bytes\": %llu, "
              "\"reserved_bytes\": %llu, \"reserved_after_each_epoch\": %s}\n",
              group ? group->rank() : 0, group ? group->world_size() : 1, flag(argc, argv, "model", "cnn").c_str(),
              flag(argc, argv, "precision", "f32").c_str(), dev.str().c_str(), flag(argc, argv, "batch", "128").c_str(), steps, r.replayed ? "true" : "false", r.graph_note.c_str(),
              r.images_per_second, r.mean_loss, static_cast<unsigned long long>(m.peak_allocated),
              static_cast<unsigned long long>(m.reserved), r.reserved_after_each_epoch.c_str());
  return 0;
}

int matmul_bench(int argc, char** argv) {
  const Device dev = resolve_device(flag(argc, argv, "device", "cuda:0"));
  const int64_t size = std::stoll(flag(argc, argv, "size", "8192"));
  const DType t = dtype_from_name(flag(argc, argv, "dtype", "bf16"));
  const int iters = std::stoi(flag(argc, argv, "iters", "20"));
  Tensor a = normal({size, size}, 0, 1, DType::f32, dev).to(t), b = normal({size, size}, 0, 1, DType::f32, dev).to(t);
  Backend* be = backend_for(dev);
  for (int i = 0; i < 3; ++i) matmul(a, b);
  be->synchronize();
  const double t0 = now();
  for (int i = 0; i < iters; ++i) matmul(a, b);
  be->synchronize();
  const double dt = (now() - t0) / iters;
  std::printf("{\"bench\": \"matmul\", \"device\": \"%s\", \"size\": %lld, \"dtype\": \"%s\", \"ms\": %.3f, "
              "\"tflops\": %.1f}\n",
              dev.str().c_str(), static_cast<long long>(size), dtype_name(t), dt * 1e3,
              2.0 * static_cast<double>(size) * static_cast<double>(size) * static_cast<double>(size) / dt / 1e12);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string cmd = argc > 1 ? argv[1] : "";
  try {
    if (cmd == "train") return train_bench(argc, argv);
    if (cmd == "matmul") return matmul_bench(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_cuda_train: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "usage: bench_cuda_train train|matmul [--device D] ... (see the source's header)\n");
  return 2;
}
