// Int8 vs f32 inference of the same graph in Kiln, side by side from one run (not a test): the
// Fashion-MNIST CNN template (or any one-input image graph given as argv[1]) at batch 256 on 2
// threads by default (on a shared machine run it under taskset with OMP_WAIT_POLICY=passive),
// the int8 model with its u8 chain (int8_model.h, Note [u8 chain]) and with f32 between layers.
// Parameters from the graph's initialization (timing does not depend on the values), calibrated
// by min-max on 4 random batches. Prints median milliseconds per batch, images/s and the ratios.
//   bench_int8 [GRAPH.json] [BATCH] [THREADS]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "engine/core/random.h"
#include "engine/graph/graph_module.h"
#include "engine/graph/json.h"
#include "engine/quant/int8_model.h"

using namespace kiln;

namespace {

double median(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Milliseconds of each f() in fs over `iters` rounds, the functions interleaved within a round so
// that the load of a shared machine falls on all of them alike; the median of each.
std::vector<double> median_ms(const std::vector<std::function<void()>>& fs, int iters) {
  std::vector<std::vector<double>> t(fs.size());
  for (int i = 0; i < iters; ++i)
    for (size_t k = 0; k < fs.size(); ++k) {
      const auto a = std::chrono::steady_clock::now();
      fs[k]();
      t[k].push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
    }
  std::vector<double> out;
  for (const auto& v : t) out.push_back(median(v));
  return out;
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
  const int iters = batch < 16 ? 200 : 20;
  quant::Int8Model* m = int8_model.get();
  const std::vector<double> ms = median_ms(
      {[&] { float_model.forward(x).to_vector<float>(); }, [&] { m->forward(x).to_vector<float>(); },
       [&] {
         m->set_u8_chain(false);
         m->forward(x).to_vector<float>();
         m->set_u8_chain(true);
       }},
      iters);
  const double f32 = ms[0], i8 = ms[1], i8_f32_between = ms[2];
  std::printf("%s, batch %lld, %d threads, median of %d\n", path.c_str(), static_cast<long long>(batch), threads,
              iters);
  std::printf("  f32   %8.3f ms/batch  %10.0f images/s\n", f32, 1000.0 * batch / f32);
  std::printf("  int8  %8.3f ms/batch  %10.0f images/s  (%zu int8 layers, %zu write u8 for the next)\n", i8,
              1000.0 * batch / i8, int8_model->layers().size(), int8_model->u8_chained_layers().size());
  std::printf("  int8, f32 between layers %8.3f ms/batch\n", i8_f32_between);
  std::printf("  int8 speed-up %.2fx (f32 between layers: %.2fx)\n", f32 / i8, f32 / i8_f32_between);
  return 0;
}
