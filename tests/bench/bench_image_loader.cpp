// bench_image_loader DIR THREADS [EPOCHS=2]: Kiln's image loading on an image folder, as
// tests/bench/data_vs_torchvision.sh compares it with torchvision: decode only (read_image on
// THREADS threads), then epochs of RandomResizedCrop(224) + RandomHorizontalFlip + Normalize
// (ImageNet's) through the DataLoader with THREADS workers, batches of 64; the first epoch decodes
// (and fills the cache), the later ones read the cache. Prints images/s and images/s per thread.
// Needs KILN_OPENCV.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "engine/data/dataloader.h"
#include "engine/data/image/image_dataset.h"
#include "engine/data/image/image_decode.h"

using namespace kiln::data;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_image_loader DIR THREADS [EPOCHS=2]\n");
    return 2;
  }
  const int threads = std::stoi(argv[2]);
  const int epochs = argc > 3 ? std::stoi(argv[3]) : 2;
  auto index = std::make_shared<ImageIndex>(scan_image_folder(argv[1]));
  const size_t n = index->samples.size();
  auto report = [&](const char* what, double seconds) {
    const double rate = static_cast<double>(n) / seconds;
    std::printf("kiln %-22s %6zu images %7.2f s %8.1f images/s %7.1f images/s/thread\n", what, n, seconds, rate,
                rate / threads);
  };

  std::atomic<size_t> next{0};
  auto t0 = Clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (size_t i; (i = next++) < n;) (void)read_image(index->samples[i].path, 3, 0);
    });
  for (auto& t : pool) t.join();
  report("decode only", std::chrono::duration<double>(Clock::now() - t0).count());

  ImageTransform t;
  t.height = t.width = 224;
  t.channels = 3;
  t.augment = Augment::standard;  // RandomResizedCrop + flip, without ColorJitter: torchvision's pipeline
  t.color_jitter = false;
  t.mean.assign(kImageNetMean.begin(), kImageNetMean.end());
  t.stddev.assign(kImageNetStd.begin(), kImageNetStd.end());
  std::vector<int64_t> all(n);
  for (size_t i = 0; i < n; ++i) all[i] = static_cast<int64_t>(i);
  auto cache = std::make_shared<ImageCache>(int64_t{8} << 30);
  auto dataset = std::make_shared<ImageDataset>(index, all, t, true, 0, cache);
  DataLoader loader(dataset, {.batch_size = 64, .shuffle = true, .seed = 0, .num_workers = threads,
                              .prefetch = 2 * threads});
  for (int e = 0; e < epochs; ++e) {
    t0 = Clock::now();
    int64_t seen = 0;
    for (const Batch& b : loader) seen += b.input.size(0);
    const std::string what = e == 0 ? "epoch 1 (decoding)" : "epoch " + std::to_string(e + 1) + " (cached)";
    report(what.c_str(), std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return 0;
}
