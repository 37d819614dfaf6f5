// f32 matmul on a Vulkan device through the backend: C[n, n] = A[n, n] @ B[n, n].
// Prints milliseconds per matmul (mean of back-to-back runs after warm-up, the device
// synchronized at the end), GFLOP/s (2 n^3 / t) and the NMSE against the CPU backend.
//   bench_vulkan_matmul [n (4096)] [device (vulkan:0)] [runs (20)]
// Exits 77 when the device is absent. A benchmark: it prints figures, it asserts nothing.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "engine/core/ops.h"
#include "engine/core/random.h"
#include "engine/core/registry.h"

using namespace kiln;

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 4096;
  const std::string dev_name = argc > 2 ? argv[2] : "vulkan:0";
  const int runs = argc > 3 ? std::atoi(argv[3]) : 20;
  Device dev;
  try {
    dev = resolve_device(dev_name);
  } catch (const std::exception& e) {
    std::printf("SKIPPED: %s\n", e.what());
    for (auto& why : unavailable_backends()) std::printf("  %s\n", why.c_str());
    return 77;
  }
  Backend* b = backend_for(dev);
  manual_seed(0);
  Tensor a = uniform({n, n}, -1, 1), bm = uniform({n, n}, -1, 1);
  Tensor da = a.to(dev), db = bm.to(dev);
  Tensor dc = matmul(da, db);  // warm-up: pipeline creation
  for (int i = 0; i < 2; ++i) dc = matmul(da, db);
  b->synchronize();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < runs; ++i) dc = matmul(da, db);
  b->synchronize();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / runs;
  const double gflops = 2.0 * n * n * n / s / 1e9;
  // accuracy against the CPU backend
  Tensor ref = matmul(a, bm), got = dc.to(Device());
  const double err = sum(square(sub(got, ref))).item<double>() / sum(square(ref)).item<double>();
  std::printf("device: %s (%s)\n", dev.str().c_str(), b->info().name.c_str());
  std::printf("matmul f32 %lldx%lldx%lld: %.3f ms, %.1f GFLOP/s, NMSE vs cpu %.2e\n", static_cast<long long>(n),
              static_cast<long long>(n), static_cast<long long>(n), s * 1e3, gflops, err);
  std::printf("RESULT vulkan_matmul_gflops=%.1f\n", gflops);
  return 0;
}
