// The Vulkan instance and the choice of physical devices (see vk_context.h).
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "backends/vulkan/vk_context.h"

namespace kiln::vk {

// ---------------------------------------------------------------- instance
Instance::~Instance() = default;  // leaked on purpose: tensors may outlive static destruction

Instance* instance(std::string& why) {
  static std::once_flag once;
  static Instance* inst = nullptr;
  static std::string error;
  std::call_once(once, [] {
    if (!load_global(error)) return;
    auto& f = fns();
    uint32_t version = VK_API_VERSION_1_0;
    if (f.vkEnumerateInstanceVersion) f.vkEnumerateInstanceVersion(&version);
    if (version < VK_API_VERSION_1_2) {
      error = "the Vulkan loader is older than 1.2";
      return;
    }
    VkApplicationInfo app{}; app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
    app.pApplicationName = "kiln";
    app.pEngineName = "kiln";
    app.apiVersion = std::min<uint32_t>(version, VK_API_VERSION_1_3);
    VkInstanceCreateInfo ci{}; ci.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
    ci.pApplicationInfo = &app;
    auto* i = new Instance();
    VkResult r = f.vkCreateInstance(&ci, nullptr, &i->handle);
    if (r != VK_SUCCESS) {
      error = std::string("vkCreateInstance failed (") + result_name(r) + "): no Vulkan driver (ICD) installed?";
      delete i;
      return;
    }
    i->api_version = app.apiVersion;
    load_instance(i->handle);
    inst = i;
  });
  why = error;
  return inst;
}

// ---------------------------------------------------------------- device choice
bool device_usable(VkPhysicalDevice pd, std::string& why) {
  auto& f = fns();
  VkPhysicalDeviceProperties props;
  f.vkGetPhysicalDeviceProperties(pd, &props);
  std::string name = props.deviceName;
  if (props.apiVersion < VK_API_VERSION_1_2) {
    why = name + " supports Vulkan below 1.2";
    return false;
  }
  VkPhysicalDeviceVulkan11Features f11{}; f11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
  VkPhysicalDeviceVulkan12Features f12{}; f12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  f11.pNext = &f12;
  VkPhysicalDeviceFeatures2 feat{}; feat.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  feat.pNext = &f11;
  f.vkGetPhysicalDeviceFeatures2(pd, &feat);
  std::string missing;
  if (!feat.features.shaderInt64) missing += " shaderInt64";
  if (!f12.bufferDeviceAddress) missing += " bufferDeviceAddress";
  if (!f12.storageBuffer8BitAccess) missing += " storageBuffer8BitAccess";
  if (!f11.storageBuffer16BitAccess) missing += " storageBuffer16BitAccess";
  if (!missing.empty()) {
    why = name + " lacks" + missing;
    return false;
  }
  uint32_t n = 0;
  f.vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, nullptr);
  std::vector<VkQueueFamilyProperties> q(n);
  f.vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, q.data());
  for (auto& fam : q)
    if (fam.queueFlags & VK_QUEUE_COMPUTE_BIT) return true;
  why = name + " has no compute queue";
  return false;
}

DeviceCaps query_caps(VkPhysicalDevice pd) {
  auto& f = fns();
  DeviceCaps c;
  VkPhysicalDeviceSubgroupProperties sub{}; sub.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
  VkPhysicalDeviceProperties2 props{}; props.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  props.pNext = &sub;
  f.vkGetPhysicalDeviceProperties2(pd, &props);
  c.name = props.properties.deviceName;
  c.type = props.properties.deviceType;
  switch (c.type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: c.kind = "discrete GPU"; break;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: c.kind = "integrated GPU"; break;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: c.kind = "virtual GPU"; break;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: c.kind = "software"; break;
    default: c.kind = "other"; break;
  }
  c.subgroup_size = sub.subgroupSize;
  c.shared_memory = props.properties.limits.maxComputeSharedMemorySize;
  c.timestamp_period = props.properties.limits.timestampPeriod;
  VkPhysicalDeviceMemoryProperties mem;
  f.vkGetPhysicalDeviceMemoryProperties(pd, &mem);
  for (uint32_t i = 0; i < mem.memoryHeapCount; ++i)
    if (mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      c.memory_bytes = std::max<uint64_t>(c.memory_bytes, mem.memoryHeaps[i].size);
  VkPhysicalDeviceVulkan12Features f12{}; f12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  VkPhysicalDeviceFeatures2 feat{}; feat.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  feat.pNext = &f12;
  f.vkGetPhysicalDeviceFeatures2(pd, &feat);
  c.float16 = f12.shaderFloat16;
  c.int64_atomics = f12.shaderBufferInt64Atomics;
  uint32_t n = 0;
  f.vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> ext(n);
  f.vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, ext.data());
  bool sm_builtins = false, coop_nv = false;
  for (auto& e : ext) {
    if (std::strcmp(e.extensionName, "VK_KHR_cooperative_matrix") == 0) c.khr_cooperative_matrix = true;
    if (std::strcmp(e.extensionName, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME) == 0) coop_nv = true;
    if (std::strcmp(e.extensionName, "VK_NV_shader_sm_builtins") == 0) sm_builtins = true;
  }
  if (coop_nv && c.float16 && f12.vulkanMemoryModel && c.subgroup_size == 32 &&
      f.vkGetPhysicalDeviceCooperativeMatrixPropertiesNV) {
    VkPhysicalDeviceCooperativeMatrixFeaturesNV cm{};
    cm.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV;
    VkPhysicalDeviceFeatures2 f2{}; f2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    f2.pNext = &cm;
    f.vkGetPhysicalDeviceFeatures2(pd, &f2);
    uint32_t count = 0;
    if (cm.cooperativeMatrix && f.vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(pd, &count, nullptr) == VK_SUCCESS) {
      std::vector<VkCooperativeMatrixPropertiesNV> shapes(count);
      for (auto& s : shapes) s.sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV;
      f.vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(pd, &count, shapes.data());
      for (const auto& s : shapes) {
        const bool types = s.AType == VK_COMPONENT_TYPE_FLOAT16_NV && s.BType == VK_COMPONENT_TYPE_FLOAT16_NV &&
                           s.CType == VK_COMPONENT_TYPE_FLOAT32_NV && s.DType == VK_COMPONENT_TYPE_FLOAT32_NV &&
                           s.scope == VK_SCOPE_SUBGROUP_NV;
        const bool tiles = s.MSize > 0 && s.NSize > 0 && s.KSize > 0 && 64 % s.MSize == 0 && 32 % s.NSize == 0 &&
                           32 % s.KSize == 0 && s.NSize % 8 == 0 && s.KSize % 8 == 0 && s.MSize * s.NSize <= 256;
        if (types && tiles && s.MSize * s.NSize * s.KSize > c.coop_m * c.coop_n * c.coop_k) {
          c.coop_m = s.MSize;
          c.coop_n = s.NSize;
          c.coop_k = s.KSize;
        }
      }
    }
  }
  // compute units: NVIDIA's SM count; a software device's host threads; else unknown (0)
  if (sm_builtins) {
    VkPhysicalDeviceShaderSMBuiltinsPropertiesNV sm{};
    sm.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV;
    VkPhysicalDeviceProperties2 p2{};
    p2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
    p2.pNext = &sm;
    f.vkGetPhysicalDeviceProperties2(pd, &p2);
    c.compute_units = sm.shaderSMCount;
  } else if (c.type == VK_PHYSICAL_DEVICE_TYPE_CPU) {
    c.compute_units = std::thread::hardware_concurrency();
  }
  return c;
}

}  // namespace kiln::vk
