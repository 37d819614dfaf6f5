// Elementwise and reduction throughput of the CPU backend's own kernels: microseconds per
// op and GB/s (bytes read + written) on 1M f32 elements, per ISA level, and the per-call
// overhead of a 10-element add. Usage: bench_elementwise [elements] [repeats]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_isa.h"

using namespace kiln;

namespace {

TensorArg arg(std::vector<float>& v, int64_t n) { return TensorArg{v.data(), 0, DType::f32, {n}, {1}}; }

// Median of `repeats` timings of f, in microseconds.
double time_us(const std::function<void()>& f, int repeats) {
  f();  // warm up (pages, threads)
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 1 << 20;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 200;
  cpu::CpuBackend be;
  std::printf("%s, %lld f32 elements, median of %d\n", be.info().name.c_str(), static_cast<long long>(n), repeats);
  std::vector<float> a(n), b(n), out(n), sum(1);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-4, 4);
  for (int64_t i = 0; i < n; ++i) a[i] = dist(rng), b[i] = dist(rng);

  struct Case {
    const char* name;
    double bytes;  // moved per call
    std::function<void()> run;
  };
  const double fb = 4.0 * static_cast<double>(n);
  std::vector<Case> cases = {
      {"add", 3 * fb, [&] { be.binary(BinaryOp::add, arg(out, n), arg(a, n), arg(b, n)); }},
      {"mul", 3 * fb, [&] { be.binary(BinaryOp::mul, arg(out, n), arg(a, n), arg(b, n)); }},
      {"relu", 2 * fb, [&] { be.unary(UnaryOp::relu, arg(out, n), arg(a, n), 0, 0); }},
      {"exp", 2 * fb, [&] { be.unary(UnaryOp::exp, arg(out, n), arg(a, n), 0, 0); }},
      {"tanh", 2 * fb, [&] { be.unary(UnaryOp::tanh, arg(out, n), arg(a, n), 0, 0); }},
      {"gelu", 2 * fb, [&] { be.unary(UnaryOp::gelu, arg(out, n), arg(a, n), 0, 0); }},
      {"sum", fb, [&] { be.reduce(ReduceOp::sum, TensorArg{sum.data(), 0, DType::f32, {1}, {1}}, arg(a, n), 0); }},
  };
  for (cpu::Isa isa : {cpu::Isa::base, cpu::Isa::avx2, cpu::Isa::avx512}) {
    if (cpu::set_cpu_isa(isa) != isa) continue;
    const char* isa_name = isa == cpu::Isa::avx512 ? "avx512" : isa == cpu::Isa::avx2 ? "avx2" : "base";
    for (const Case& c : cases) {
      double us = time_us(c.run, repeats);
      std::printf("%-7s %-6s %9.1f us  %7.2f GB/s\n", isa_name, c.name, us, c.bytes / us * 1e-3);
    }
  }
  cpu::set_cpu_isa(cpu::Isa::avx512);

  // Small ops of an MLP training step (batch 64): latency per call.
  std::vector<float> act(64 * 128), bias(128), hid(64 * 128), g128(128), logits(64 * 10), lsm(64 * 10);
  std::vector<float> tbuf(1024 * 1024), tsrc(1024 * 1024, 1.0f), p(100000), g(100000), m(100000), v(100000);
  auto t2 = [](std::vector<float>& x, Shape s, Strides st = {}) {
    if (st.empty()) st = contiguous_strides(s);
    return TensorArg{x.data(), 0, DType::f32, s, st};
  };
  AdamParams ap;
  std::vector<Case> small = {
      {"relu [64,128]", 0, [&] { be.unary(UnaryOp::relu, t2(hid, {64, 128}), t2(act, {64, 128}), 0, 0); }},
      {"add bias [64,128]+[128]", 0,
       [&] { be.binary(BinaryOp::add, t2(hid, {64, 128}), t2(act, {64, 128}), t2(bias, {64, 128}, {0, 1})); }},
      {"sum dim 0 of [64,128]", 0, [&] { be.reduce(ReduceOp::sum, t2(g128, {1, 128}), t2(act, {64, 128}), 0); }},
      {"log_softmax [64,10]", 0, [&] { be.softmax_forward(t2(lsm, {64, 10}), t2(logits, {64, 10}), 1, true); }},
      {"log_softmax bwd [64,10]", 0,
       [&] { be.softmax_backward(t2(logits, {64, 10}), t2(lsm, {64, 10}), t2(lsm, {64, 10}), 1, true); }},
      {"adam_step 100k", 0, [&] { be.adam_step(t2(p, {100000}), t2(g, {100000}), t2(m, {100000}), t2(v, {100000}), ap); }},
      {"transpose copy [1024,1024]", 0,
       [&] { be.copy(t2(tbuf, {1024, 1024}), t2(tsrc, {1024, 1024}, {1, 1024})); }},
  };
  for (const Case& c : small) std::printf("%-28s %9.2f us\n", c.name, time_us(c.run, repeats));

  std::vector<float> s1(10, 1.0f), s2(10, 2.0f), s3(10);
  const int calls = 100000;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) be.binary(BinaryOp::add, arg(s3, 10), arg(s1, 10), arg(s2, 10));
  double per_call = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / calls;
  std::printf("add of 10 elements: %.3f us per call (TensorArg construction included)\n", per_call);
  TensorArg o10 = arg(s3, 10), a10 = arg(s1, 10), b10 = arg(s2, 10);
  t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) be.binary(BinaryOp::add, o10, a10, b10);
  per_call = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / calls;
  std::printf("add of 10 elements: %.3f us per call (kernel dispatch only), %d threads\n", per_call,
              omp_get_max_threads());
  return s3[0] == 3.0f ? 0 : 1;
}
