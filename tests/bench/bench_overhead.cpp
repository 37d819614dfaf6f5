// Framework overhead: the median time of one forward pass of the reference MLP
// (784-256-128-10) on a single image, eval mode, no gradients. The bar is
// <= 20 us. Also prints the CNN's single-image forward for reference.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "engine/core/grad_mode.h"
#include "engine/core/random.h"
#include "engine/train/reference_models.h"

using namespace kiln;

static double median_us(const std::shared_ptr<nn::Module>& model, const Tensor& x, int reps) {
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    Tensor y = model->forward(x);
    (void)y.data_ptr<float>();  // the result is on the host: nothing left pending
    times.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

int main() {
  manual_seed(0);
  NoGradGuard no_grad;
  for (const char* name : {"mlp", "cnn"}) {
    auto model = train::make_model(name);
    model->eval();
    Tensor x = normal({1, 1, 28, 28}, 0, 1);
    median_us(model, x, 200);  // warm-up: oneDNN primitives and allocator caches
    double us = median_us(model, x, 2000);
    std::printf("%s forward, batch 1, %d threads: median %.2f us%s\n", name, omp_get_max_threads(), us,
                std::string(name) == "mlp" ? (us <= 20 ? "  (<= 20 us: ok)" : "  (> 20 us: over budget)") : "");
  }
  return 0;
}
