// The Vulkan backend's pow with small integer exponents (backends/vulkan/shaders/math.glsl
// k_pow: by squaring) gives what std::pow gives on the CPU: exact where the power is
// representable (3^6 = 729, not exp2(6 log2 3) = 729.00018), within a few ulp for x^-n.
// Skipped without the Vulkan plugin; without a Vulkan device too, unless KILN_REQUIRE_TEST_DEPS=1
// (tests/common/test_deps.h).
#include <gtest/gtest.h>

#include <cmath>

#include "engine/core/ops.h"
#include "engine/core/registry.h"
#include "engine/core/tensor.h"
#include "tests/common/test_deps.h"

using namespace kiln;

namespace {

bool have_vulkan() {
  for (const DeviceInfo& d : list_devices())
    if (d.device.type == DeviceType::vulkan) return true;
  return false;
}

}  // namespace

TEST(VulkanPow, IntegerExponentsMatchTheCpu) {
  if (!KILN_TEST_WITH_VULKAN) GTEST_SKIP() << "the Vulkan plugin is not built (KILN_VULKAN=OFF)";
  KILN_SKIP_UNLESS_DEP(have_vulkan(), "mesa-vulkan-drivers", "no Vulkan device though the Vulkan plugin is built");
  const Device vk{DeviceType::vulkan, 0};
  std::vector<float> xs, ys;
  for (int x = -9; x <= 9; ++x)
    for (int y = -4; y <= 9; ++y) {
      xs.push_back(static_cast<float>(x) * 0.5f);
      ys.push_back(static_cast<float>(y));
    }
  const int64_t n = static_cast<int64_t>(xs.size());
  Tensor x = Tensor::from_vector(xs, {n}), y = Tensor::from_vector(ys, {n});
  std::vector<float> got = pow(x.to(vk), y.to(vk)).to_vector<float>();
  std::vector<float> scalar3 = pow(x.to(vk), 3.0).to_vector<float>();
  for (int64_t i = 0; i < n; ++i) {
    float want = std::pow(xs[i], ys[i]);
    if (ys[i] >= 0) {
      EXPECT_EQ(got[i], want) << xs[i] << " ^ " << ys[i];
    } else if (std::isinf(want)) {
      EXPECT_EQ(got[i], want) << xs[i] << " ^ " << ys[i];
    } else {
      EXPECT_NEAR(got[i], want, 3 * std::fabs(want) * 1.2e-7f) << xs[i] << " ^ " << ys[i];
    }
    EXPECT_EQ(scalar3[i], xs[i] * xs[i] * xs[i]) << xs[i] << " ^ 3 (pow_scalar)";
  }
}
