// The Vulkan loader, opened at run time: dlopen("libvulkan.so.1") and every entry
// point through vkGetInstanceProcAddr / vkGetDeviceProcAddr, so that a machine without
// the loader (or without an ICD) still runs Kiln and the registry says why.
#pragma once
#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <string>

namespace kiln::vk {

// Entry points we call; filled by load_global / load_instance / load_device.
#define KILN_VK_GLOBAL_FNS(X) \
  X(vkCreateInstance) X(vkEnumerateInstanceVersion) X(vkEnumerateInstanceExtensionProperties)
#define KILN_VK_INSTANCE_FNS(X)                                                               \
  X(vkDestroyInstance) X(vkEnumeratePhysicalDevices) X(vkGetPhysicalDeviceProperties)         \
  X(vkGetPhysicalDeviceProperties2) X(vkGetPhysicalDeviceFeatures2)                           \
  X(vkGetPhysicalDeviceQueueFamilyProperties) X(vkGetPhysicalDeviceMemoryProperties)          \
  X(vkCreateDevice) X(vkGetDeviceProcAddr) X(vkEnumerateDeviceExtensionProperties)            \
  X(vkGetPhysicalDeviceCooperativeMatrixPropertiesNV) /* null without VK_NV_cooperative_matrix */
#define KILN_VK_DEVICE_FNS(X)                                                                   \
  X(vkDestroyDevice) X(vkGetDeviceQueue) X(vkDeviceWaitIdle) X(vkQueueSubmit)                   \
  X(vkAllocateMemory) X(vkFreeMemory) X(vkMapMemory) X(vkUnmapMemory)                           \
  X(vkCreateBuffer) X(vkDestroyBuffer) X(vkGetBufferMemoryRequirements) X(vkBindBufferMemory)    \
  X(vkGetBufferDeviceAddress) X(vkCreateShaderModule) X(vkDestroyShaderModule)                  \
  X(vkCreatePipelineLayout) X(vkDestroyPipelineLayout) X(vkCreateComputePipelines)              \
  X(vkDestroyPipeline) X(vkCreatePipelineCache) X(vkDestroyPipelineCache)                       \
  X(vkCreateCommandPool) X(vkDestroyCommandPool) X(vkResetCommandPool)                          \
  X(vkAllocateCommandBuffers) X(vkBeginCommandBuffer) X(vkEndCommandBuffer)                     \
  X(vkCmdBindPipeline) X(vkCmdPushConstants) X(vkCmdDispatch) X(vkCmdPipelineBarrier)           \
  X(vkCmdCopyBuffer) X(vkCmdFillBuffer) X(vkCreateFence) X(vkDestroyFence) X(vkWaitForFences)   \
  X(vkResetFences) X(vkGetFenceStatus) X(vkCreateQueryPool) X(vkDestroyQueryPool)               \
  X(vkCmdWriteTimestamp) X(vkCmdResetQueryPool) X(vkGetQueryPoolResults)

struct Fns {
#define KILN_VK_DECL(name) PFN_##name name = nullptr;
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
  KILN_VK_GLOBAL_FNS(KILN_VK_DECL)
  KILN_VK_INSTANCE_FNS(KILN_VK_DECL)
  KILN_VK_DEVICE_FNS(KILN_VK_DECL)
#undef KILN_VK_DECL
};

// The process-wide table (one loader, one instance; devices share instance-level
// entry points; device-level ones are per VkDevice but identical for one ICD, and
// Kiln keeps them per device in Context).
Fns& fns();

// Opens the loader; false with `why` ("libvulkan.so.1 not found") when it cannot.
bool load_global(std::string& why);
void load_instance(VkInstance instance);
void load_device(Fns& f, VkDevice device);  // f starts as a copy of fns()

// "VK_ERROR_OUT_OF_DEVICE_MEMORY" for a VkResult.
const char* result_name(VkResult r);

}  // namespace kiln::vk
