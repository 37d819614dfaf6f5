#include "backends/vulkan/vk_loader.h"

#include <dlfcn.h>

#include <mutex>

namespace kiln::vk {

Fns& fns() {
  static Fns f;
  return f;
}

bool load_global(std::string& why) {
  static std::once_flag once;
  static std::string error;
  std::call_once(once, [] {
    void* lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);  // never closed
    if (!lib) {
      error = "libvulkan.so.1 not found (install the Vulkan loader, Debian package libvulkan1)";
      return;
    }
    auto& f = fns();
    f.vkGetInstanceProcAddr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
    if (!f.vkGetInstanceProcAddr) {
      error = "libvulkan.so.1 has no vkGetInstanceProcAddr";
      return;
    }
#define KILN_VK_LOAD(name) f.name = reinterpret_cast<PFN_##name>(f.vkGetInstanceProcAddr(nullptr, #name));
    KILN_VK_GLOBAL_FNS(KILN_VK_LOAD)
#undef KILN_VK_LOAD
    if (!f.vkCreateInstance) error = "libvulkan.so.1 has no vkCreateInstance";
  });
  why = error;
  return error.empty();
}

void load_instance(VkInstance instance) {
  auto& f = fns();
#define KILN_VK_LOAD(name) f.name = reinterpret_cast<PFN_##name>(f.vkGetInstanceProcAddr(instance, #name));
  KILN_VK_INSTANCE_FNS(KILN_VK_LOAD)
#undef KILN_VK_LOAD
}

void load_device(Fns& f, VkDevice device) {
#define KILN_VK_LOAD(name) f.name = reinterpret_cast<PFN_##name>(f.vkGetDeviceProcAddr(device, #name));
  KILN_VK_DEVICE_FNS(KILN_VK_LOAD)
#undef KILN_VK_LOAD
}

const char* result_name(VkResult r) {
  switch (r) {
#define KILN_VK_CASE(x) case x: return #x;
    KILN_VK_CASE(VK_SUCCESS) KILN_VK_CASE(VK_NOT_READY) KILN_VK_CASE(VK_TIMEOUT)
    KILN_VK_CASE(VK_INCOMPLETE) KILN_VK_CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
    KILN_VK_CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY) KILN_VK_CASE(VK_ERROR_INITIALIZATION_FAILED)
    KILN_VK_CASE(VK_ERROR_DEVICE_LOST) KILN_VK_CASE(VK_ERROR_MEMORY_MAP_FAILED)
    KILN_VK_CASE(VK_ERROR_LAYER_NOT_PRESENT) KILN_VK_CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
    KILN_VK_CASE(VK_ERROR_FEATURE_NOT_PRESENT) KILN_VK_CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
    KILN_VK_CASE(VK_ERROR_TOO_MANY_OBJECTS) KILN_VK_CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
    KILN_VK_CASE(VK_ERROR_FRAGMENTED_POOL) KILN_VK_CASE(VK_ERROR_OUT_OF_POOL_MEMORY)
    KILN_VK_CASE(VK_ERROR_INVALID_SHADER_NV) KILN_VK_CASE(VK_ERROR_UNKNOWN)
#undef KILN_VK_CASE
    default: return "VK_ERROR (unknown code)";
  }
}

}  // namespace kiln::vk
