// bench_image_folder_train DIR [EPOCHS=2] [WORKERS=1] [BATCH=64] [AUGMENT=flip] [ROUNDS=3]: is
// training from an image folder input-bound on the CPU? The image-folder CNN template
// (projects/templates/image_folder_cnn.json: 3 x 64 x 64, a residual block, 10 classes) trains
// with Adam on the folder's images at 64 x 64 (load_images: decoded once into the cache, then
// Resize + CenterCrop [+ flip] + Normalize per sample on WORKERS loader threads), and on the same
// images held as an in-memory TensorDataset (decoded and transformed once, no augmentation left)
// through a DataLoader with the same options; first each loader alone (no training), then both
// train EPOCHS epochs after one untimed warm-up
// pass (which fills the cache), in alternating rounds; prints the images/s of each (per second of
// wall time and per second of the process's CPU time) and the median ratios folder / tensor over
// ROUNDS (the goal: >= 0.9). tests/bench/image_folder_vs_tensor.sh
// generates a folder and runs it. Needs KILN_OPENCV. Its OpenMP threads wait as kiln's do
// (app/omp_wait.h: GOMP_SPINCOUNT=1000 unless GOMP_SPINCOUNT or OMP_WAIT_POLICY is set).
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "app/omp_wait.h"
#include "engine/core/ops.h"
#include "engine/core/random.h"
#include "engine/data/dataloader.h"
#include "engine/data/image_source.h"
#include "engine/graph/graph_module.h"
#include "engine/graph/json.h"
#include "engine/nn/functional.h"
#include "engine/optim/adam.h"

using namespace kiln;
using Clock = std::chrono::steady_clock;

namespace {

struct Rate {
  double wall = 0;  // images per second of wall time
  double cpu = 0;   // images per second of the process's CPU time (all its threads: training and loading)
};

// The rates of `epochs` training epochs of a fresh template model (seed 0) on `dataset`.
Rate train_rate(const std::shared_ptr<const data::Dataset>& dataset, const data::DataLoader::Options& o, int epochs,
                  const graph::Graph& net) {
  manual_seed(0);
  auto model = std::make_shared<graph::GraphModule>(net);
  optim::Adam adam(model->parameters(), optim::AdamOptions{});
  data::DataLoader loader(dataset, o);
  model->train();
  int64_t samples = 0;
  const auto t0 = Clock::now();
  const std::clock_t c0 = std::clock();
  for (int e = 0; e < epochs; ++e)
    for (const data::Batch& b : loader) {
      adam.zero_grad();
      Tensor loss = nn::functional::cross_entropy(model->forward(b.input), b.target);
      loss.backward();
      adam.step();
      (void)loss.item<float>();  // one read a step, as the Trainer's
      samples += b.input.size(0);
    }
  const double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
  const double n = static_cast<double>(samples);
  return {n / std::chrono::duration<double>(Clock::now() - t0).count(), n / cpu};
}

}  // namespace

int main(int argc, char** argv) {
  app::use_short_omp_spin(argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_image_folder_train DIR [EPOCHS=2] [WORKERS=1] [BATCH=64] [AUGMENT=flip] [ROUNDS=3]\n");
    return 2;
  }
  try {
    const int epochs = argc > 2 ? std::stoi(argv[2]) : 2;
    const int workers = argc > 3 ? std::stoi(argv[3]) : 1;
    const int64_t batch = argc > 4 ? std::stoll(argv[4]) : 64;
    const std::string augment = argc > 5 ? argv[5] : "flip";
    const int rounds = argc > 6 ? std::stoi(argv[6]) : 3;
    const graph::Graph net = graph::load_graph(std::string(KILN_BENCH_TEMPLATES) + "/image_folder_cnn.json");

    data::ImageConfig c = data::image_config_from_spec(std::string("imagefolder:") + argv[1]);
    c.height = c.width = 64;
    c.channels = 3;
    c.augment = augment;
    c.test_fraction = 0.1;
    c.workers = workers;
    const auto t0 = Clock::now();
    const data::ImageData images = data::load_images(c);
    const double load_s = std::chrono::duration<double>(Clock::now() - t0).count();
    const auto folder = images.train;
    const data::DataLoader::Options o{.batch_size = batch, .shuffle = true, .seed = 0, .num_workers = workers,
                                      .prefetch = std::max(2, 2 * workers)};
    {  // the warm-up pass: every training image in the cache
      data::DataLoader warm(folder, o);
      for (const data::Batch& b : warm) (void)b;
    }
    std::vector<int64_t> all(static_cast<size_t>(folder->size()));
    std::iota(all.begin(), all.end(), 0);
    const data::Batch whole = folder->get_batch_for_epoch(all, 0);
    auto tensors = std::make_shared<data::TensorDataset>(whole.input, whole.target);
    std::printf("%lld training images of %s (%zu classes), 3 x 64 x 64, augment %s; indexed, decoded and cached in "
                "%.1f s; %d epochs a run, batch %lld, %d loader worker(s)\n",
                static_cast<long long>(folder->size()), argv[1], images.run.classes.size(), augment.c_str(), load_s,
                epochs, static_cast<long long>(batch), workers);
    // The loaders alone (no training): what an epoch of input costs.
    for (const auto& [name, ds] : {std::pair{"image folder (cached)", std::shared_ptr<const data::Dataset>(folder)},
                                   std::pair{"in-memory tensors", std::shared_ptr<const data::Dataset>(tensors)}}) {
      data::DataLoader loader(ds, o);
      const auto s0 = Clock::now();
      int64_t seen = 0;
      for (const data::Batch& b : loader) seen += b.input.size(0);
      const double s = std::chrono::duration<double>(Clock::now() - s0).count();
      std::printf("loading only, %s: %.0f images/s (an epoch in %.3f s)\n", name, static_cast<double>(seen) / s, s);
    }
    std::vector<double> ratios, cpu_ratios;
    for (int r = 0; r < rounds; ++r) {
      Rate f, t;
      if (r % 2 == 0) {
        f = train_rate(folder, o, epochs, net);
        t = train_rate(tensors, o, epochs, net);
      } else {
        t = train_rate(tensors, o, epochs, net);
        f = train_rate(folder, o, epochs, net);
      }
      ratios.push_back(f.wall / t.wall);
      cpu_ratios.push_back(f.cpu / t.cpu);
      std::printf("round %d: image folder (cached) %.1f images/s (%.1f per CPU-second), in-memory tensors %.1f images/s "
                  "(%.1f per CPU-second); ratio %.3f wall, %.3f CPU\n",
                  r + 1, f.wall, f.cpu, t.wall, t.cpu, f.wall / t.wall, f.cpu / t.cpu);
      std::fflush(stdout);
    }
    std::sort(ratios.begin(), ratios.end());
    std::sort(cpu_ratios.begin(), cpu_ratios.end());
    // On a machine shared with other work the wall-clock ratio follows the scheduler; the CPU-time
    // ratio (the work per image, loading included) does not.
    std::printf("median ratio image folder / in-memory tensors: %.3f wall clock, %.3f CPU time (goal >= 0.9)\n",
                ratios[ratios.size() / 2], cpu_ratios[cpu_ratios.size() / 2]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_image_folder_train: %s\n", e.what());
    return 1;
  }
  return 0;
}
