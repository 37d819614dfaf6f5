// Matmul on a Vulkan device through the backend: C[n, n] = A[n, n] @ B[n, n] in f32 or
// f16 (f16 runs on tensor cores where the device has cooperative matrices).
// Prints milliseconds per matmul (mean of back-to-back runs after warm-up, from the
// device's timestamps where it has them, else host time with the device synchronized at
// the end), GFLOP/s (2 n^3 / t) and the NMSE against the CPU backend.
//   bench_vulkan_matmul [n (4096)] [device (vulkan:0)] [runs (20)] [dtype f32|f16 (f32)]
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
  const DType dt = dtype_from_name(argc > 4 ? argv[4] : "f32");
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
  if (dt != DType::f32) a = a.to(dt), bm = bm.to(dt);  // the reference sees the same rounded inputs
  Tensor da = a.to(dev), db = bm.to(dev);
  Tensor dc = matmul(da, db);  // warm-up: pipeline creation
  for (int i = 0; i < 2; ++i) dc = matmul(da, db);
  b->synchronize();
  const bool device_clock = b->begin_timing();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < runs; ++i) dc = matmul(da, db);
  double s = 0;
  if (device_clock) {
    s = b->end_timing() / runs;
  } else {
    b->synchronize();
    s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / runs;
  }
  const double gflops = 2.0 * n * n * n / s / 1e9;
  // accuracy against the CPU backend
  Tensor ref = matmul(a.to(DType::f32), bm.to(DType::f32)), got = dc.to(Device()).to(DType::f32);
  const double err = sum(square(sub(got, ref))).item<double>() / sum(square(ref)).item<double>();
  std::printf("device: %s (%s)\n", dev.str().c_str(), b->info().name.c_str());
  std::printf("matmul %s %lldx%lldx%lld: %.3f ms (%s), %.1f GFLOP/s, NMSE vs cpu (f32) %.2e\n", dtype_name(dt),
              static_cast<long long>(n), static_cast<long long>(n), static_cast<long long>(n), s * 1e3,
              device_clock ? "device time" : "host time", gflops, err);
  std::printf("RESULT vulkan_matmul_gflops=%.1f\n", gflops);
  return 0;
}
