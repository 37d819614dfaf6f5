// Times SGEMM and the Fashion-MNIST CNN's convolutions through CpuBackend, and
// SGEMM through oneDNN's own dnnl_sgemm on the same buffers, for comparison.
// Prints GFLOP/s, the ratio (the backend should reach >= 0.85 of dnnl_sgemm)
// and milliseconds per conv call: medians of 20 runs after warm-up, and in
// brackets the fastest run, steadier on a machine shared with other work.
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <random>
#include <utility>
#include <vector>

#include "backends/cpu/cpu_backend.h"

using namespace kiln;

namespace {

struct Timing {
  double median, best;  // seconds
};

Timing summarize(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  return {t[t.size() / 2], t[0]};
}

double seconds(const std::function<void()>& f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The median and best time of `runs` calls of f after `warmup` calls.
Timing time_calls(const std::function<void()>& f, int runs = 20, int warmup = 3) {
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) t.push_back(seconds(f));
  return summarize(t);
}

// Times f and g alternately, so that other work on the machine slows both alike.
std::pair<Timing, Timing> time_pair(const std::function<void()>& f, const std::function<void()>& g, int runs = 20,
                                    int warmup = 3) {
  for (int i = 0; i < warmup; ++i) f(), g();
  std::vector<double> tf, tg;
  for (int i = 0; i < runs; ++i) {
    tf.push_back(seconds(f));
    tg.push_back(seconds(g));
  }
  return {summarize(tf), summarize(tg)};
}

std::vector<float> random_floats(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

TensorArg arg(std::vector<float>& v, Shape shape) {
  Strides strides = contiguous_strides(shape);
  return TensorArg{v.data(), 0, DType::f32, std::move(shape), std::move(strides)};
}

void bench_sgemm(cpu::CpuBackend& be, int64_t n, std::mt19937& rng) {
  auto a = random_floats(static_cast<size_t>(n * n), rng), b = random_floats(static_cast<size_t>(n * n), rng);
  std::vector<float> c(static_cast<size_t>(n * n));
  const double flops = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  const auto [be_t, dnnl_t] = time_pair(
      [&] { be.matmul(arg(c, {n, n}), arg(a, {n, n}), arg(b, {n, n})); },
      [&] { dnnl_sgemm('N', 'N', n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n); });
  std::printf("sgemm %lld^3: CpuBackend::matmul %.1f [%.1f] GFLOP/s, dnnl_sgemm %.1f [%.1f] GFLOP/s, "
              "ratio %.3f [%.3f]\n", static_cast<long long>(n), flops / be_t.median / 1e9, flops / be_t.best / 1e9,
              flops / dnnl_t.median / 1e9, flops / dnnl_t.best / 1e9, dnnl_t.median / be_t.median,
              dnnl_t.best / be_t.best);
}

void bench_conv(cpu::CpuBackend& be, const char* name, Shape x_shape, int64_t out_channels, std::mt19937& rng) {
  const int64_t N = x_shape[0], C = x_shape[1], H = x_shape[2], W = x_shape[3];
  Conv2dParams p;
  p.padding[0] = p.padding[1] = 1;
  const Shape w_shape{out_channels, C, 3, 3}, y_shape{N, out_channels, H, W}, b_shape{out_channels};
  auto x = random_floats(static_cast<size_t>(numel(x_shape)), rng);
  auto w = random_floats(static_cast<size_t>(numel(w_shape)), rng);
  auto b = random_floats(static_cast<size_t>(out_channels), rng);
  auto gy = random_floats(static_cast<size_t>(numel(y_shape)), rng);
  std::vector<float> y(gy.size()), gx(x.size()), gw(w.size()), gb(b.size());
  const Timing f = time_calls([&] {
    be.conv2d_forward(arg(y, y_shape), arg(x, x_shape), arg(w, w_shape), arg(b, b_shape), p);
  });
  const Timing bi = time_calls([&] {
    be.conv2d_backward_input(arg(gx, x_shape), arg(gy, y_shape), arg(w, w_shape), p);
  });
  const Timing bw = time_calls([&] {
    be.conv2d_backward_weight(arg(gw, w_shape), arg(gb, b_shape), arg(gy, y_shape), arg(x, x_shape), p);
  });
  std::printf("conv %s: forward %.2f [%.2f] ms, backward_input %.2f [%.2f] ms, backward_weight %.2f [%.2f] ms\n",
              name, f.median * 1e3, f.best * 1e3, bi.median * 1e3, bi.best * 1e3, bw.median * 1e3, bw.best * 1e3);
}

}  // namespace

int main() {
  cpu::CpuBackend be;
  std::mt19937 rng(1);
  std::printf("%s\n", be.info().name.c_str());
  bench_sgemm(be, 1024, rng);
  bench_conv(be, "[128,1,28,28] 3x3 -> 32, pad 1", {128, 1, 28, 28}, 32, rng);
  bench_conv(be, "[128,32,14,14] 3x3 -> 64, pad 1", {128, 32, 14, 14}, 64, rng);
  return 0;
}
