// The registry finds the CPU backend as any other family (it registers itself while libkiln
// loads: backends/cpu/cpu_backend.cpp), and Backend::supports() answers per sub-op: the
// Vulkan shaders run logical_not of integers but no other unary op of them (skipped without
// a Vulkan device), CUDA's reduce has no integer mean or var (skipped without a CUDA device).
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/core/registry.h"
#include "engine/core/tensor.h"
#include "tests/common/test_deps.h"

using namespace kiln;

namespace {

bool have(DeviceType type) {
  for (const DeviceInfo& d : list_devices())
    if (d.device.type == type) return true;
  return false;
}

}  // namespace

TEST(Registry, ListsTheCpuAsAnyOtherBackend) {
  const std::vector<DeviceInfo> devices = list_devices();
  auto cpu = std::find_if(devices.begin(), devices.end(), [](const DeviceInfo& d) { return d.device == Device(); });
  ASSERT_NE(cpu, devices.end()) << "no cpu:0 among the registry's devices";
  EXPECT_GT(cpu->score, 0);
  EXPECT_GT(cpu->compute_units, 0);
  EXPECT_EQ(cpu->kind, "cpu");
  EXPECT_EQ(std::count_if(devices.begin(), devices.end(), [](const DeviceInfo& d) { return d.device.type == DeviceType::cpu; }), 1);
  for (const std::string& why : unavailable_backends()) EXPECT_NE(why.rfind("cpu:", 0), 0u) << why;
  Backend* b = backend_for(Device());
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->device(), Device());
  EXPECT_EQ(backend_for(Device()), b);  // one backend object, the fast path's included
  EXPECT_EQ(b->info().name, cpu->name);
  EXPECT_THROW(backend_for(Device(DeviceType::cpu, 1)), DeviceError);
}

TEST(Registry, CpuSupportsEverySubOp) {
  Backend* cpu = backend_for(Device());
  for (DType t : {DType::f32, DType::i32, DType::bool_}) {
    for (int u = 0; u < static_cast<int>(UnaryOp::count); ++u)
      EXPECT_TRUE(cpu->supports(static_cast<UnaryOp>(u), t)) << unary_op_name(static_cast<UnaryOp>(u)) << " " << dtype_name(t);
    for (int r = 0; r < static_cast<int>(ReduceOp::count); ++r)
      EXPECT_TRUE(cpu->supports(static_cast<ReduceOp>(r), t)) << reduce_op_name(static_cast<ReduceOp>(r)) << " " << dtype_name(t);
    EXPECT_TRUE(cpu->supports(OpId::unary, t));  // every sub-op
  }
  EXPECT_TRUE(cpu->supports(UnaryOp::erf, DType::f64));
  EXPECT_TRUE(cpu->supports(OpId::binary, DType::i64, static_cast<int>(BinaryOp::pow)));
  EXPECT_FALSE(cpu->supports(OpId::matmul, DType::i32, Backend::kEverySubOp));  // ops without sub-ops ignore it
}

TEST(Registry, VulkanRunsLogicalNotButNoOtherUnaryOpOfIntegers) {
  if (!KILN_TEST_WITH_VULKAN) GTEST_SKIP() << "the Vulkan plugin is not built (KILN_VULKAN=OFF)";
  KILN_SKIP_UNLESS_DEP(have(DeviceType::vulkan), "mesa-vulkan-drivers", "no Vulkan device though the Vulkan plugin is built");
  const Device vk{DeviceType::vulkan, 0};
  Backend* b = backend_for(vk);
  EXPECT_TRUE(b->supports(UnaryOp::neg, DType::f32));
  EXPECT_TRUE(b->supports(OpId::unary, DType::f32));
  EXPECT_TRUE(b->supports(UnaryOp::logical_not, DType::i32));
  EXPECT_FALSE(b->supports(UnaryOp::neg, DType::i32));
  EXPECT_FALSE(b->supports(UnaryOp::abs, DType::i64));
  EXPECT_FALSE(b->supports(OpId::unary, DType::i32));  // not every sub-op
  // The front end asks per sub-op: logical_not runs, neg is refused by name before any kernel.
  Tensor x = Tensor::from_vector(std::vector<int32_t>{0, 3, -1, 0}, {4});
  EXPECT_EQ(logical_not(x.to(vk)).to(Device()).to_vector<bool>(), logical_not(x).to_vector<bool>());
  try {
    neg(x.to(vk));
    ADD_FAILURE() << "neg of i32 ran on " << vk.str();
  } catch (const DTypeError& e) {
    EXPECT_NE(std::string(e.what()).find("neg: i32 is not supported on vulkan:0"), std::string::npos) << e.what();
  }
}

TEST(Registry, CudaReduceHasNoIntegerMean) {
  if (!have(DeviceType::cuda)) GTEST_SKIP() << "no CUDA device";
  Backend* b = backend_for(Device(DeviceType::cuda, 0));
  EXPECT_TRUE(b->supports(ReduceOp::sum, DType::i32));
  EXPECT_TRUE(b->supports(ReduceOp::mean, DType::f32));
  EXPECT_FALSE(b->supports(ReduceOp::mean, DType::i32));
  EXPECT_FALSE(b->supports(ReduceOp::var, DType::i64));
  EXPECT_FALSE(b->supports(OpId::reduce, DType::i32));  // not every sub-op
  EXPECT_TRUE(b->supports(OpId::reduce, DType::f32));
}
