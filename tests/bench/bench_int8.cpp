// Int8 vs f32 inference of the same graph in Kiln, side by side from one run (not a test): the
// Fashion-MNIST CNN template (or any one-input image graph given as argv[1]) at batch 256 on 2
// threads by default (on a shared machine run it under taskset with OMP_WAIT_POLICY=passive),
// the int8 model with its u8 chain (int8_model.h, Note [u8 chain]) and with f32 between layers.
// Parameters from the graph's initialization (timing does not depend on the values), calibrated
// by min-max on 4 random batches. Prints median milliseconds per batch, images/s and the ratios.
// An ONNX model (MODEL.onnx, e.g. torchvision's ResNet-18) is imported as a graph with its own
// weights. With QDQ_OUT, the int8 model is also exported in QDQ form (export_qdq.h) to QDQ_OUT and
// Kiln's ONNX executor (kiln run's load-time rewrites: FuseQdq and friends) runs the float export
// and QDQ_OUT side by side, printing how many layers it put on the int8 kernels.
//   bench_int8 [GRAPH.json | MODEL.onnx] [BATCH] [THREADS] [QDQ_OUT.onnx]
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
#include "engine/onnx/executor.h"
#include "engine/onnx/export.h"
#include "engine/onnx/graph_import.h"
#include "engine/quant/int8_model.h"
#include "engine/quant/onnx/export_qdq.h"

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

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The float export of g and the QDQ export of the int8 model in Kiln's ONNX executor, as kiln run
// loads them (SessionOptions::optimize), side by side on x.
void onnx_executor_figures(const graph::Graph& g, const nn::StateDict& state, const quant::Int8Model& m,
                           const std::string& qdq_path, const Tensor& x, int iters) {
  const std::string qdq = quant::export_qdq(m);
  {
    std::FILE* f = std::fopen(qdq_path.c_str(), "wb");
    if (!f || std::fwrite(qdq.data(), 1, qdq.size(), f) != qdq.size()) {
      std::fprintf(stderr, "cannot write %s\n", qdq_path.c_str());
      std::exit(1);
    }
    std::fclose(f);
  }
  kiln::onnx::SessionOptions o;
  o.optimize = true;
  kiln::onnx::Session f32(kiln::onnx::parse_model(kiln::onnx::export_model(g, state), "", "f32"), Device(), o);
  kiln::onnx::Session i8(kiln::onnx::parse_model(qdq, "", qdq_path), Device(), o);
  int fused = 0, adds = 0, left = 0;
  for (const std::string& l : i8.rewrite_log()) {
    if (l.find("(int8 kernels") != std::string::npos) ++fused;
    if (l.find("-> AddQuantize") != std::string::npos) ++adds;
    if (l.find("in float") != std::string::npos) {
      ++left;
      std::printf("  kiln run: %s\n", l.c_str());
    }
  }
  auto run = [&](kiln::onnx::Session& s) { s.run({{s.input_names().at(0), x}}).at(0).to_vector<float>(); };
  for (int w = 0; w < 3; ++w) run(f32), run(i8);
  const std::vector<double> ms = median_ms({[&] { run(f32); }, [&] { run(i8); }}, iters);
  std::printf("ONNX executor (kiln run), %s: %d layers on the int8 kernels, %d residual adds in one pass, %d left in float\n",
              qdq_path.c_str(), fused, adds, left);
  std::printf("  f32 ONNX  %8.3f ms/batch  %10.0f images/s\n", ms[0], 1000.0 * static_cast<double>(x.size(0)) / ms[0]);
  std::printf("  QDQ ONNX  %8.3f ms/batch  %10.0f images/s\n", ms[1], 1000.0 * static_cast<double>(x.size(0)) / ms[1]);
  std::printf("  int8 speed-up in the ONNX executor %.2fx\n", ms[0] / ms[1]);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : KILN_BENCH_TEMPLATES "/fashion_mnist_cnn.json";
  const int64_t batch = argc > 2 ? std::atoll(argv[2]) : 256;
  const int threads = argc > 3 ? std::atoi(argv[3]) : 2;
  omp_set_num_threads(threads);
  manual_seed(0);
  graph::Graph g = ends_with(path, ".onnx") ? kiln::onnx::import_graph(kiln::onnx::load_model(path)).graph : graph::load_graph(path);
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
  if (argc > 4) onnx_executor_figures(g, float_model.state_dict(), *int8_model, argv[4], x, iters);
  return 0;
}
