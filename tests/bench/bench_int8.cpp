// Int8 vs f32 inference of the same graph in Kiln, side by side from one run (not a test):
// the Fashion-MNIST CNN template (or any one-input image graph given as argv[1]) at batch 256
// on 2 threads, its parameters from the graph's initialization (timing does not depend on the
// values), calibrated by min-max on 4 random batches. Prints median milliseconds per batch,
// images/s and the ratio.
//   bench_int8 [GRAPH.json] [BATCH] [THREADS]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/core/random.h"
#include "engine/graph/graph_module.h"
#include "engine/graph/json.h"
#include "engine/quant/int8_model.h"

using namespace kiln;

namespace {

template <class F>
double median_ms(F&& f, int iters) {
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) {
    const auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : KILN_BENCH_TEMPLATES "/fashion_mnist_cnn.json";
  const int64_t batch = argc > 2 ? std::atoll(argv[2]) : 256;
  const int threads = argc > 3 ? std::atoi(argv[3]) : 2;
  omp_set_num_threads(threads);
  manual_seed(0);
  graph::Graph g = graph::load_graph(path);
  graph::GraphModule float_model(g);
  float_model.eval();
  graph::store_state(g, float_model.state_dict());
  const graph::Analysis a = graph::analyze(g);
  Shape shape{batch};
  for (size_t d = 1; d < a.nodes.at(g.input_nodes().at(0)).outputs.at(0).shape.size(); ++d)
    shape.push_back(a.nodes.at(g.input_nodes().at(0)).outputs.at(0).shape[d]);
  quant::Calibrator cal(g, {});
  for (int b = 0; b < 4; ++b) cal.observe(normal(shape, 0, 1));
  auto int8_model = cal.convert();
  const Tensor x = normal(shape, 0, 1);
  for (int w = 0; w < 3; ++w) {  // warm-up: oneDNN plans, allocator
    float_model.forward(x).to_vector<float>();
    int8_model->forward(x).to_vector<float>();
  }
  const int iters = 20;
  const double f32 = median_ms([&] { float_model.forward(x).to_vector<float>(); }, iters);
  const double i8 = median_ms([&] { int8_model->forward(x).to_vector<float>(); }, iters);
  std::printf("%s, batch %lld, %d threads, median of %d\n", path.c_str(), static_cast<long long>(batch), threads,
              iters);
  std::printf("  f32   %8.2f ms/batch  %10.0f images/s\n", f32, 1000.0 * batch / f32);
  std::printf("  int8  %8.2f ms/batch  %10.0f images/s  (%zu int8 layers)\n", i8, 1000.0 * batch / i8,
              int8_model->layers().size());
  std::printf("  int8 speed-up %.2fx\n", f32 / i8);
  return 0;
}
