// Device memory of a Context: large blocks carved into size classes with free lists
// (the CPU backend's rounding), dedicated blocks for large requests.
#include <algorithm>
#include <cstring>

#include "backends/vulkan/vk_context.h"
#include "engine/core/error.h"

namespace kiln::vk {

namespace {
constexpr VkDeviceSize kBlockBytes = 64u << 20;       // device memory carved per block
constexpr VkDeviceSize kDedicatedAbove = 16u << 20;   // larger requests get their own block

size_t round_size(size_t n) {
  if (n <= 512) return 512;
  if (n <= (size_t{1} << 20)) {
    size_t s = 512;
    while (s < n) s <<= 1;
    return s;
  }
  constexpr size_t g = size_t{1} << 20;
  return (n + g - 1) / g * g;
}
}  // namespace

uint32_t Context::memory_type(uint32_t bits, VkMemoryPropertyFlags want, VkMemoryPropertyFlags avoid) const {
  for (int pass = 0; pass < 2; ++pass)
    for (uint32_t i = 0; i < mem_props_.memoryTypeCount; ++i) {
      auto fl = mem_props_.memoryTypes[i].propertyFlags;
      if ((bits & (1u << i)) && (fl & want) == want && (pass == 1 || !(fl & avoid))) return i;
    }
  return UINT32_MAX;
}

Block* Context::new_block(VkDeviceSize size, bool host_visible, bool host_cached) {
  auto* b = new Block();
  b->size = size;
  VkBufferCreateInfo bci{}; bci.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  bci.size = size;
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
              VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  auto out_of_memory = [&](VkResult r) {
    throw DeviceError(detail::str_cat(label_, " (", caps_.name, "): out of device memory allocating ", size,
                                      " bytes (", result_name(r), "; ", stats_.reserved, " bytes reserved, ",
                                      caps_.memory_bytes, " on the device)",
                                      *op_name_ ? " in " + op_desc() : std::string()));
  };
  if (VkResult r = f_.vkCreateBuffer(device_, &bci, nullptr, &b->buffer); r != VK_SUCCESS) {
    delete b;
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) out_of_memory(r);
    fail("vkCreateBuffer", r);
  }
  VkMemoryRequirements req;
  f_.vkGetBufferMemoryRequirements(device_, b->buffer, &req);
  VkMemoryPropertyFlags want = host_visible ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
                                            : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  if (host_cached) want |= VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
  uint32_t type = memory_type(req.memoryTypeBits, want, host_visible ? 0 : VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT);
  if (type == UINT32_MAX && host_cached)
    type = memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, 0);
  VkMemoryAllocateFlagsInfo flags{}; flags.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO;
  flags.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
  VkMemoryAllocateInfo mai{}; mai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  mai.pNext = &flags;
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = type;
  VkResult r = type == UINT32_MAX ? VK_ERROR_OUT_OF_DEVICE_MEMORY : f_.vkAllocateMemory(device_, &mai, nullptr, &b->memory);
  if (r != VK_SUCCESS) {
    f_.vkDestroyBuffer(device_, b->buffer, nullptr);
    delete b;
    out_of_memory(r);
  }
  f_.vkBindBufferMemory(device_, b->buffer, b->memory, 0);
  VkBufferDeviceAddressInfo ai{}; ai.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO;
  ai.buffer = b->buffer;
  b->address = f_.vkGetBufferDeviceAddress(device_, &ai);
  if (host_visible) f_.vkMapMemory(device_, b->memory, 0, VK_WHOLE_SIZE, 0, &b->map);
  blocks_.push_back(b);
  return b;
}

void Context::free_block(Block* b) {
  blocks_.erase(std::find(blocks_.begin(), blocks_.end(), b));
  f_.vkDestroyBuffer(device_, b->buffer, nullptr);
  f_.vkFreeMemory(device_, b->memory, nullptr);
  delete b;
}

Allocation* Context::allocate(size_t nbytes) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  size_t size = round_size(nbytes);
  Allocation* a = nullptr;
  if (auto it = free_.find(size); it != free_.end() && !it->second.empty()) {
    a = it->second.back();
    it->second.pop_back();
  } else if (size > kDedicatedAbove) {
    a = new Allocation();
    a->block = new_block(size, false, false);
    a->block->dedicated = true;
    stats_.reserved += size;
  } else {
    if (!bump_ || bump_used_ + size > bump_->size) {
      bump_ = new_block(kBlockBytes, false, false);
      bump_used_ = 0;
      stats_.reserved += kBlockBytes;
    }
    a = new Allocation();
    a->block = bump_;
    a->offset = bump_used_;
    bump_used_ += size;
  }
  a->size = size;
  a->address = a->block->address + a->offset;
  stats_.allocated += size;
  stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
  return a;
}

void Context::deallocate(Allocation* a) {
  if (!a) return;
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  stats_.allocated -= a->size;
  free_[a->size].push_back(a);  // reuse is ordered after earlier work: one queue, barriers
}

void Context::empty_cache() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  synchronize();
  for (auto& [size, list] : free_)
    for (auto it = list.begin(); it != list.end();) {
      if ((*it)->block->dedicated) {
        stats_.reserved -= (*it)->size;
        free_block((*it)->block);
        delete *it;
        it = list.erase(it);
      } else {
        ++it;
      }
    }
}

MemoryStats Context::memory_stats() const {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  return stats_;
}

}  // namespace kiln::vk
