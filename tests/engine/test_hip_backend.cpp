// The HIP backend (backends/hip: the CUDA backend's sources compiled as HIP, with our own
// GEMM for matmul and im2col for conv2d) against the CPU backend. Without an AMD GPU (or
// without the plugin) the comparisons skip, naming the registry's reason, and one test
// checks that the reason is given.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/core/random.h"
#include "engine/core/registry.h"
#include "engine/nn/functional.h"
#include "tests/common/test_deps.h"

namespace kiln {
namespace {

std::string hip_reason() {
  for (const std::string& why : unavailable_backends())
    if (why.rfind("hip:", 0) == 0) return why;
  return "";
}

bool have_hip() {
  for (const DeviceInfo& d : list_devices())
    if (d.device.type == DeviceType::hip) return true;
  return false;
}

#define REQUIRE_HIP() \
  if (!have_hip()) GTEST_SKIP() << "no AMD GPU: " << hip_reason()

const Device kGpu(DeviceType::hip, 0);

Tensor rnd(const Shape& s, DType t, uint64_t seed) {
  Generator g(seed);
  return uniform(s, -2, 2, DType::f64, Device(), &g).to(t);
}

// |hip - cpu| <= tol * (1 + |cpu|) elementwise.
void expect_close(const Tensor& gpu, const Tensor& cpu, double tol, const std::string& what) {
  ASSERT_EQ(gpu.device(), kGpu) << what;
  ASSERT_EQ(gpu.shape(), cpu.shape()) << what;
  std::vector<double> g = gpu.to(Device()).to(DType::f64).contiguous().to_vector<double>();
  std::vector<double> c = cpu.to(DType::f64).contiguous().to_vector<double>();
  int bad = 0;
  for (size_t i = 0; i < c.size() && bad < 5; ++i)
    if (!(std::fabs(g[i] - c[i]) <= tol * (1 + std::fabs(c[i]))))
      ++bad, ADD_FAILURE() << what << ": element " << i << " hip " << g[i] << " cpu " << c[i];
}

TEST(HipBackend, ReportsDevicesOrWhyNot) {
  const bool built = std::filesystem::exists(backend_plugin_dir() + "/libkiln_backend_hip.so");
  if (!built && !KILN_TEST_WITH_HIP) GTEST_SKIP() << "the HIP plugin is not built (KILN_HIP=OFF)";
  KILN_SKIP_UNLESS_DEP(built, "libamdhip64-dev", "KILN_HIP is ON (hipcc found) but the HIP plugin is not built");
  if (have_hip()) {
    for (const DeviceInfo& d : list_devices())
      if (d.device.type == DeviceType::hip) {
        EXPECT_GT(d.memory_bytes, 0u);
        EXPECT_NE(d.name.find("gfx"), std::string::npos) << d.name;
      }
  } else {
    const std::string why = hip_reason();
    EXPECT_FALSE(why.empty()) << "no AMD GPU and no reason given";
    EXPECT_TRUE(why.find("AMD GPU") != std::string::npos || why.find("cannot open") != std::string::npos) << why;
    EXPECT_EQ(Tensor::ones({2}).sum().item<float>(), 2.0f);  // the CPU keeps working
  }
}

TEST(HipBackend, OwnGemmMatchesCpu) {
  REQUIRE_HIP();
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::f64}) {
    const std::string d = dtype_name(t);
    const double tol = t == DType::f32 ? 1e-4 : t == DType::f64 ? 1e-9 : 0.3;
    Tensor a = rnd({37, 70}, t, 1), b = rnd({70, 19}, t, 2);
    expect_close(matmul(a.to(kGpu), b.to(kGpu)), matmul(a, b), tol, "matmul " + d);
    expect_close(matmul(a.t().to(kGpu).t(), b.t().to(kGpu).t()), matmul(a, b), tol, "transposed " + d);
    Tensor ba = rnd({2, 3, 4, 5}, t, 3), bb = rnd({3, 5, 6}, t, 4);  // broadcast batch
    expect_close(matmul(ba.to(kGpu), bb.to(kGpu)), matmul(ba, bb), tol, "batched " + d);
  }
}

TEST(HipBackend, ConvMatchesCpu) {
  REQUIRE_HIP();
  Conv2dParams p;
  p.stride[0] = 2, p.padding[0] = 1, p.padding[1] = 2, p.groups = 2;
  Tensor x = rnd({2, 4, 9, 11}, DType::f32, 5), w = rnd({6, 2, 3, 3}, DType::f32, 6), bias = rnd({6}, DType::f32, 7);
  expect_close(conv2d(x.to(kGpu), w.to(kGpu), bias.to(kGpu), p), conv2d(x, w, bias, p), 2e-4, "conv2d");
}

TEST(HipBackend, BadInput) {
  REQUIRE_HIP();
  Backend* be = backend_for(kGpu);
  Tensor i = Tensor::ones({2, 2}, DType::i64, kGpu);
  EXPECT_THROW(be->matmul(i.arg(), i.arg(), i.arg()), DTypeError);
  EXPECT_THROW(Tensor::ones({2}, DType::f32, Device(DeviceType::hip, 64)), DeviceError);
  try {
    add(Tensor::ones({2}, DType::f32, kGpu), Tensor::ones({2}));
    ADD_FAILURE() << "mixed devices did not throw";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("hip:0"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln
