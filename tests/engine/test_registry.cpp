// The registry finds the CPU backend as any other family (it registers itself while libkiln
// loads: backends/cpu/cpu_backend.cpp).
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/core/error.h"
#include "engine/core/registry.h"

using namespace kiln;

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
