#include "backends/vulkan/vk_context.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "engine/core/error.h"

namespace kiln::vk {

namespace {
constexpr int kBatchOps = 256;                        // dispatches per submitted batch
constexpr VkDeviceSize kParamsBytes = 384;            // one Params slot (376 rounded up)
constexpr VkDeviceSize kParamsArena = kParamsBytes * (kBatchOps + 16);
constexpr VkDeviceSize kStagingArena = 16u << 20;     // upload staging per frame
constexpr VkDeviceSize kDownloadChunk = 64u << 20;
constexpr int kFrames = 2;
}  // namespace

struct Context::Frame {
  VkCommandPool pool = VK_NULL_HANDLE;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  bool recording = false, submitted = false;
  Block* params = nullptr;
  VkDeviceSize params_used = 0;
  Block* staging = nullptr;
  VkDeviceSize staging_used = 0;
  int ops = 0;
  std::string last_op;
};

// ---------------------------------------------------------------- context
Context::Context(VkPhysicalDevice pd, std::string label) : label_(std::move(label)), pd_(pd), f_(fns()) {
  caps_ = query_caps(pd);
  uint32_t n = 0;
  f_.vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, nullptr);
  std::vector<VkQueueFamilyProperties> q(n);
  f_.vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, q.data());
  queue_family_ = n;
  for (uint32_t i = 0; i < n && queue_family_ == n; ++i)  // a compute-only family first
    if ((q[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && !(q[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) queue_family_ = i;
  for (uint32_t i = 0; i < n && queue_family_ == n; ++i)
    if (q[i].queueFlags & VK_QUEUE_COMPUTE_BIT) queue_family_ = i;

  float prio = 1.0f;
  VkDeviceQueueCreateInfo qci{}; qci.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  qci.queueFamilyIndex = queue_family_;
  qci.queueCount = 1;
  qci.pQueuePriorities = &prio;
  VkPhysicalDeviceVulkan11Features f11{}; f11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
  VkPhysicalDeviceVulkan12Features f12{}; f12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  VkPhysicalDeviceFeatures2 have{}; have.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  have.pNext = &f11;
  f11.pNext = &f12;
  f_.vkGetPhysicalDeviceFeatures2(pd, &have);
  VkPhysicalDeviceVulkan11Features e11{}; e11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
  VkPhysicalDeviceVulkan12Features e12{}; e12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  VkPhysicalDeviceFeatures2 want{}; want.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  want.pNext = &e11;
  e11.pNext = &e12;
  want.features.shaderInt64 = VK_TRUE;
  want.features.shaderInt16 = have.features.shaderInt16;
  e11.storageBuffer16BitAccess = VK_TRUE;
  e12.storageBuffer8BitAccess = VK_TRUE;
  e12.bufferDeviceAddress = VK_TRUE;
  e12.shaderInt8 = f12.shaderInt8;
  e12.shaderFloat16 = f12.shaderFloat16;
  e12.shaderBufferInt64Atomics = f12.shaderBufferInt64Atomics;
  // Cooperative matrices (caps_.coop_m > 0) need the extension, its feature and the
  // Vulkan memory model (the SPIR-V of shaders/gemm_coop.comp declares it).
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coop{};
  coop.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV;
  std::vector<const char*> extensions;
  if (caps_.coop_m > 0) {
    coop.cooperativeMatrix = VK_TRUE;
    e12.pNext = &coop;
    e12.vulkanMemoryModel = VK_TRUE;
    extensions.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  }
  VkDeviceCreateInfo dci{}; dci.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  dci.pNext = &want;
  dci.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  dci.ppEnabledExtensionNames = extensions.data();
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  if (VkResult r = f_.vkCreateDevice(pd, &dci, nullptr, &device_); r != VK_SUCCESS) fail("vkCreateDevice", r);
  load_device(f_, device_);
  f_.vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
  f_.vkGetPhysicalDeviceMemoryProperties(pd, &mem_props_);

  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, 8};
  VkPipelineLayoutCreateInfo lci{}; lci.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  lci.pushConstantRangeCount = 1;
  lci.pPushConstantRanges = &range;
  if (VkResult r = f_.vkCreatePipelineLayout(device_, &lci, nullptr, &layout_); r != VK_SUCCESS)
    fail("vkCreatePipelineLayout", r);
  VkPipelineCacheCreateInfo cci{}; cci.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
  if (VkResult r = f_.vkCreatePipelineCache(device_, &cci, nullptr, &cache_); r != VK_SUCCESS)
    fail("vkCreatePipelineCache", r);
  modules_.assign(static_cast<size_t>(ShaderId::count), VK_NULL_HANDLE);

  const uint32_t bits = q[queue_family_].timestampValidBits;
  if (bits > 0 && caps_.timestamp_period > 0) {
    timestamps_ = std::make_unique<TimestampPool>(f_, device_, 2);
    timestamp_mask_ = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  }

  err_block_ = new_block(64, true, false);
  err_words_ = static_cast<uint32_t*>(err_block_->map);
  std::memset(err_words_, 0, 64);
  err_address_ = err_block_->address;
  for (int i = 0; i < kFrames; ++i) {
    auto fr = std::make_unique<Frame>();
    VkCommandPoolCreateInfo pci{}; pci.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
    pci.flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
    pci.queueFamilyIndex = queue_family_;
    if (VkResult r = f_.vkCreateCommandPool(device_, &pci, nullptr, &fr->pool); r != VK_SUCCESS)
      fail("vkCreateCommandPool", r);
    VkCommandBufferAllocateInfo ai{}; ai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
    ai.commandPool = fr->pool;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    if (VkResult r = f_.vkAllocateCommandBuffers(device_, &ai, &fr->cmd); r != VK_SUCCESS)
      fail("vkAllocateCommandBuffers", r);
    VkFenceCreateInfo fci{}; fci.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
    if (VkResult r = f_.vkCreateFence(device_, &fci, nullptr, &fr->fence); r != VK_SUCCESS) fail("vkCreateFence", r);
    fr->params = new_block(kParamsArena, true, false);
    fr->staging = new_block(kStagingArena, true, false);
    frames_.push_back(std::move(fr));
  }
}

Context::~Context() {
  if (!device_) return;
  f_.vkDeviceWaitIdle(device_);
  for (auto& fr : frames_) {
    f_.vkDestroyFence(device_, fr->fence, nullptr);
    f_.vkDestroyCommandPool(device_, fr->pool, nullptr);
  }
  timestamps_.reset();
  for (auto& [k, p] : pipelines_) f_.vkDestroyPipeline(device_, p, nullptr);
  for (auto m : modules_)
    if (m) f_.vkDestroyShaderModule(device_, m, nullptr);
  f_.vkDestroyPipelineCache(device_, cache_, nullptr);
  f_.vkDestroyPipelineLayout(device_, layout_, nullptr);
  for (Block* b : blocks_) {
    f_.vkDestroyBuffer(device_, b->buffer, nullptr);
    f_.vkFreeMemory(device_, b->memory, nullptr);
    delete b;
  }
  f_.vkDestroyDevice(device_, nullptr);
}

std::string Context::op_desc() const {
  std::string s = op_name_;
  s += ' ';
  s += shape_str(op_shape_);
  return s;
}

void Context::fail(const char* what, VkResult r) const {
  std::string msg = label_ + " (" + caps_.name + "): " + what + " failed (" + result_name(r) + ")";
  if (r == VK_ERROR_DEVICE_LOST && !batch_last_op_.empty())
    msg += " in a batch ending with " + batch_last_op_;
  else if (*op_name_)
    msg += " in " + op_desc();
  throw DeviceError(msg);
}

// ---------------------------------------------------------------- recording
Context::Frame& Context::frame() {
  Frame& fr = *frames_[current_];
  if (fr.recording) return fr;
  if (fr.submitted) wait_frame(fr);
  f_.vkResetCommandPool(device_, fr.pool, 0);
  VkCommandBufferBeginInfo bi{}; bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  f_.vkBeginCommandBuffer(fr.cmd, &bi);
  fr.recording = true;
  fr.params_used = fr.staging_used = 0;
  fr.ops = 0;
  return fr;
}

void Context::barrier(VkCommandBuffer cmd) {
  VkMemoryBarrier mb{}; mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                     VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_READ_BIT;
  f_.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                          VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT |
                              VK_PIPELINE_STAGE_HOST_BIT,
                          0, 1, &mb, 0, nullptr, 0, nullptr);
}

void Context::submit_current(bool wait) {
  Frame& fr = *frames_[current_];
  if (fr.recording) {
    f_.vkEndCommandBuffer(fr.cmd);
    VkSubmitInfo si{}; si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
    si.commandBufferCount = 1;
    si.pCommandBuffers = &fr.cmd;
    f_.vkResetFences(device_, 1, &fr.fence);
    fr.recording = false;
    batch_last_op_ = fr.last_op;
    if (VkResult r = f_.vkQueueSubmit(queue_, 1, &si, fr.fence); r != VK_SUCCESS) fail("vkQueueSubmit", r);
    fr.submitted = true;
    current_ = (current_ + 1) % frames_.size();
  }
  if (wait)
    for (size_t k = 1; k <= frames_.size(); ++k) {  // oldest first
      Frame& w = *frames_[(current_ + k - 1) % frames_.size()];
      if (w.submitted) wait_frame(w);
    }
}

void Context::wait_frame(Frame& fr) {
  VkResult r;
  do {
    r = f_.vkWaitForFences(device_, 1, &fr.fence, VK_TRUE, 1000000000ull);
  } while (r == VK_TIMEOUT);
  fr.submitted = false;
  if (r != VK_SUCCESS) {
    batch_last_op_ = fr.last_op;
    fail("waiting for the device", r);
  }
  check_errors();
}

void Context::check_errors() {
  uint32_t code = err_words_[0];
  if (code == kErrNone) return;
  static const char* const names[] = {"", "gather", "scatter_add", "index_select", "index_add", "div"};
  uint32_t op = err_words_[1];
  int64_t value = static_cast<int64_t>(static_cast<uint64_t>(err_words_[2]) | (static_cast<uint64_t>(err_words_[3]) << 32));
  int64_t dim = static_cast<int32_t>(err_words_[4]), size = static_cast<int32_t>(err_words_[5]);
  std::memset(err_words_, 0, 64);
  const char* name = op < 6 ? names[op] : "op";
  if (code == kErrIntDivZero)
    throw ValueError(detail::str_cat(label_, ": ", name, ": integer division by zero (reported by the device)"));
  throw IndexError(detail::str_cat(label_, ": ", name, ": index ", value, " is out of range for dimension ", dim,
                                   " of size ", size, " (reported by the device at synchronization)"));
}

VkPipeline Context::pipeline(ShaderId shader, const std::vector<int32_t>& spec) {
  std::string key(1, static_cast<char>(shader));
  key.append(reinterpret_cast<const char*>(spec.data()), spec.size() * sizeof(int32_t));
  if (auto it = pipelines_.find(key); it != pipelines_.end()) return it->second;
  const ShaderCode& code = shader_code(shader);
  VkShaderModule& mod = modules_[static_cast<size_t>(shader)];
  if (!mod) {
    VkShaderModuleCreateInfo mci{}; mci.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
    mci.codeSize = code.count * 4;
    mci.pCode = code.words;
    if (VkResult r = f_.vkCreateShaderModule(device_, &mci, nullptr, &mod); r != VK_SUCCESS)
      fail((std::string("creating shader module ") + code.name).c_str(), r);
  }
  std::vector<VkSpecializationMapEntry> entries(spec.size());
  for (uint32_t i = 0; i < spec.size(); ++i) entries[i] = {i, i * 4, 4};
  VkSpecializationInfo si{static_cast<uint32_t>(entries.size()), entries.data(), spec.size() * 4, spec.data()};
  VkComputePipelineCreateInfo ci{}; ci.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  ci.stage = {}; ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = mod;
  ci.stage.pName = "main";
  ci.stage.pSpecializationInfo = &si;
  ci.layout = layout_;
  VkPipeline p = VK_NULL_HANDLE;
  if (VkResult r = f_.vkCreateComputePipelines(device_, cache_, 1, &ci, nullptr, &p); r != VK_SUCCESS)
    fail((std::string("creating the pipeline of shader ") + code.name).c_str(), r);
  pipelines_.emplace(key, p);
  return p;
}

void Context::dispatch(ShaderId shader, const std::vector<int32_t>& spec, Params& p, uint32_t gx, uint32_t gy,
                       uint32_t gz) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  if (gx == 0 || gy == 0 || gz == 0) return;
  VkPipeline pl = pipeline(shader, spec);
  Frame* fr = &frame();
  if (fr->params_used + kParamsBytes > fr->params->size) {
    submit_current(false);
    fr = &frame();
  }
  p.err = err_address_;
  std::memcpy(static_cast<char*>(fr->params->map) + fr->params_used, &p, sizeof(Params));
  uint64_t addr = fr->params->address + fr->params_used;
  fr->params_used += kParamsBytes;
  f_.vkCmdBindPipeline(fr->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pl);
  f_.vkCmdPushConstants(fr->cmd, layout_, VK_SHADER_STAGE_COMPUTE_BIT, 0, 8, &addr);
  f_.vkCmdDispatch(fr->cmd, gx, gy, gz);
  barrier(fr->cmd);
  fr->last_op = op_desc();
  if (++fr->ops >= kBatchOps) submit_current(false);
}

void Context::dispatch_1d(ShaderId shader, const std::vector<int32_t>& spec, Params& p, uint64_t n, uint32_t local) {
  uint64_t groups = (n + local - 1) / local;
  uint32_t gx = static_cast<uint32_t>(std::min<uint64_t>(groups, 65535));
  uint32_t gy = static_cast<uint32_t>((groups + gx - 1) / std::max<uint32_t>(gx, 1));
  KILN_CHECK(gy <= 65535, DeviceError, label_, ": ", op_desc(), " has too many elements (", n, ") for one dispatch");
  dispatch(shader, spec, p, gx, gy);
}

void Context::upload(Allocation* dst, size_t offset, const void* host, size_t nbytes) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  const char* src = static_cast<const char*>(host);
  while (nbytes > 0) {
    Frame* fr = &frame();
    VkDeviceSize avail = fr->staging->size - fr->staging_used;
    if (avail < std::min<VkDeviceSize>(nbytes, 1u << 20)) {
      submit_current(false);
      continue;
    }
    size_t chunk = static_cast<size_t>(std::min<VkDeviceSize>(nbytes, avail));
    std::memcpy(static_cast<char*>(fr->staging->map) + fr->staging_used, src, chunk);
    VkBufferCopy region{fr->staging_used, dst->offset + offset, chunk};
    f_.vkCmdCopyBuffer(fr->cmd, fr->staging->buffer, dst->block->buffer, 1, &region);
    barrier(fr->cmd);
    fr->staging_used = (fr->staging_used + chunk + 255) & ~VkDeviceSize(255);
    src += chunk;
    offset += chunk;
    nbytes -= chunk;
  }
}

void Context::download(void* host, const Allocation* src, size_t offset, size_t nbytes) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  char* out = static_cast<char*>(host);
  if (nbytes == 0) return synchronize();
  if (!download_block_ || download_block_->size < std::min<VkDeviceSize>(nbytes, kDownloadChunk)) {
    synchronize();
    if (download_block_) free_block(download_block_);
    download_block_ = nullptr;
    download_block_ = new_block(std::max<VkDeviceSize>(std::min<VkDeviceSize>(nbytes, kDownloadChunk), 1u << 20), true,
                                true);
  }
  while (nbytes > 0) {
    size_t chunk = static_cast<size_t>(std::min<VkDeviceSize>(nbytes, download_block_->size));
    Frame& fr = frame();
    VkBufferCopy region{src->offset + offset, 0, chunk};
    f_.vkCmdCopyBuffer(fr.cmd, src->block->buffer, download_block_->buffer, 1, &region);
    barrier(fr.cmd);
    fr.last_op = "download";
    submit_current(true);
    std::memcpy(out, download_block_->map, chunk);
    out += chunk;
    offset += chunk;
    nbytes -= chunk;
  }
}

void Context::copy_buffer(Allocation* dst, size_t dst_off, const Allocation* src, size_t src_off, size_t nbytes) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  if (nbytes == 0) return;
  Frame& fr = frame();
  VkBufferCopy region{src->offset + src_off, dst->offset + dst_off, nbytes};
  f_.vkCmdCopyBuffer(fr.cmd, src->block->buffer, dst->block->buffer, 1, &region);
  barrier(fr.cmd);
}

void Context::synchronize() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  submit_current(true);
  check_errors();
}

// ---------------------------------------------------------------- timing
TimestampPool::TimestampPool(const Fns& f, VkDevice device, uint32_t count) : f_(&f), device_(device) {
  VkQueryPoolCreateInfo ci{}; ci.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
  ci.queryType = VK_QUERY_TYPE_TIMESTAMP;
  ci.queryCount = count;
  if (VkResult r = f.vkCreateQueryPool(device, &ci, nullptr, &pool_); r != VK_SUCCESS)
    throw DeviceError(std::string("vkCreateQueryPool failed (") + result_name(r) + ")");
}

TimestampPool::~TimestampPool() {
  if (pool_) f_->vkDestroyQueryPool(device_, pool_, nullptr);
}

void Context::begin_timing() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  KILN_CHECK(timestamps_, DeviceError, label_, " (", caps_.name, "): the compute queue has no timestamps");
  Frame& fr = frame();
  f_.vkCmdResetQueryPool(fr.cmd, timestamps_->handle(), 0, 2);
  f_.vkCmdWriteTimestamp(fr.cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, timestamps_->handle(), 0);
  timing_ = true;
}

double Context::end_timing() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  KILN_CHECK(timing_, DeviceError, label_, ": end_timing without begin_timing");
  timing_ = false;
  Frame& fr = frame();
  f_.vkCmdWriteTimestamp(fr.cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, timestamps_->handle(), 1);
  fr.last_op = "timestamp";
  synchronize();
  uint64_t t[2] = {};
  if (VkResult r = f_.vkGetQueryPoolResults(device_, timestamps_->handle(), 0, 2, sizeof(t), t, sizeof(uint64_t),
                                            VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
      r != VK_SUCCESS)
    fail("vkGetQueryPoolResults", r);
  const uint64_t ticks = ((t[1] & timestamp_mask_) - (t[0] & timestamp_mask_)) & timestamp_mask_;
  return static_cast<double>(ticks) * caps_.timestamp_period * 1e-9;
}

}  // namespace kiln::vk
