// Our thin RAII layer over one Vulkan device: the device and its compute queue,
// device memory sub-allocated from large blocks, pipelines keyed by shader and
// specialization constants (one VkPipelineCache), and command batching.
//
// Every kernel reads its tensors through buffer device addresses (Vulkan 1.2
// bufferDeviceAddress), so no descriptor sets: a dispatch writes its Params into
// the frame's host-visible arena and pushes the arena address as a push constant.
// Dispatches are recorded into one command buffer with a barrier after each, and the
// buffer is submitted when the host needs data (download, synchronize) or a batch
// fills (kBatchOps dispatches, or the frame's parameter / staging arena is full).
// Two frames alternate so that recording overlaps the previous batch's execution.
// Timing: a two-slot timestamp query pool (when the queue family has timestampValidBits
// > 0) brackets a span of recorded work; ticks x timestampPeriod gives nanoseconds
// (Vulkan spec 1.3, section 18.5 "Timestamp Queries").
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/vulkan/vk_loader.h"
#include "backends/vulkan/vk_shaders.h"
#include "engine/core/backend.h"

namespace kiln::vk {

// Parameters of one dispatch as the shaders read them (shaders/common.glsl, std430).
struct Params {
  uint64_t ptr[6] = {};  // device addresses of the tensors' element 0
  uint64_t err = 0;      // address of the error words (see ErrorCode)
  int32_t i[72] = {};
  float f[8] = {};
};
static_assert(sizeof(Params) == 376);

// Errors a shader reports through the error words; thrown at the next host wait.
enum ErrorCode : uint32_t { kErrNone = 0, kErrIndex = 1, kErrIntDivZero = 2 };

// The process-wide instance; null (with why) when there is no loader or no driver.
struct Instance {
  VkInstance handle = VK_NULL_HANDLE;
  uint32_t api_version = 0;
  ~Instance();
};
Instance* instance(std::string& why);

// One VkDeviceMemory with a VkBuffer over all of it (mapped when host-visible).
struct Block {
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize size = 0;
  uint64_t address = 0;
  void* map = nullptr;
  bool dedicated = false;
};

// A device allocation: the handle a Backend gives out as TensorArg::data.
struct Allocation {
  Block* block = nullptr;
  VkDeviceSize offset = 0, size = 0;
  uint64_t address = 0;  // device address of byte 0
};

// A VkQueryPool of `count` timestamp queries, destroyed with its owner.
class TimestampPool {
 public:
  TimestampPool() = default;
  TimestampPool(const Fns& f, VkDevice device, uint32_t count);  // throws DeviceError
  ~TimestampPool();
  TimestampPool(const TimestampPool&) = delete;
  TimestampPool& operator=(const TimestampPool&) = delete;
  VkQueryPool handle() const { return pool_; }

 private:
  const Fns* f_ = nullptr;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueryPool pool_ = VK_NULL_HANDLE;
};

struct DeviceCaps {
  std::string name, kind;
  uint64_t memory_bytes = 0;
  float timestamp_period = 0;  // nanoseconds per timestamp tick (limits.timestampPeriod)
  uint32_t compute_units = 0, subgroup_size = 0, shared_memory = 0;
  bool float16 = false, int64_atomics = false;
  // Tensor-core matmul (shaders/gemm_coop.comp): the f16 x f16 + f32 subgroup shape
  // M x N x K picked from vkGetPhysicalDeviceCooperativeMatrixPropertiesNV; 0 when the
  // device lacks VK_NV_cooperative_matrix, shaderFloat16, vulkanMemoryModel or 32-wide
  // subgroups, or lists no shape that tiles the kernel's 64 x 32 subgroup block.
  uint32_t coop_m = 0, coop_n = 0, coop_k = 0;
  bool khr_cooperative_matrix = false;  // VK_KHR_cooperative_matrix listed (not used, see vk_ops_gemm.cpp)
  VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
};

// Whether a physical device can run Kiln's shaders; sets why not.
bool device_usable(VkPhysicalDevice pd, std::string& why);
DeviceCaps query_caps(VkPhysicalDevice pd);

class Context {
 public:
  Context(VkPhysicalDevice pd, std::string label);  // label: "vulkan:0"; throws DeviceError
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const DeviceCaps& caps() const { return caps_; }
  const std::string& label() const { return label_; }

  // ---- memory ----
  Allocation* allocate(size_t nbytes);  // DeviceError naming size and device when out of memory
  void deallocate(Allocation* a);
  void empty_cache();
  MemoryStats memory_stats() const;

  // ---- work ----
  // Sets the op named in errors ("matmul [64, 32] x [32, 16]"); cheap: formatted lazily.
  void set_op(const char* name, const Shape& shape) { op_name_ = name; op_shape_ = shape; }
  // Records one dispatch of `shader` specialized with `spec` (constant_id 0 = local size x,
  // then the shader's own constants from id 1), reading `p`.
  void dispatch(ShaderId shader, const std::vector<int32_t>& spec, Params& p, uint32_t gx, uint32_t gy = 1,
                uint32_t gz = 1);
  // Dispatch enough 1-d work groups of `local` threads for n items (over x and y when
  // n / local exceeds the 65535 groups of one dimension).
  void dispatch_1d(ShaderId shader, const std::vector<int32_t>& spec, Params& p, uint64_t n, uint32_t local = 256);
  void upload(Allocation* dst, size_t offset, const void* host, size_t nbytes);
  void download(void* host, const Allocation* src, size_t offset, size_t nbytes);
  void copy_buffer(Allocation* dst, size_t dst_off, const Allocation* src, size_t src_off, size_t nbytes);
  void synchronize();  // submits and waits; throws the first shader-reported error

  // ---- timing ----
  // Whether the compute queue writes timestamps (its family's timestampValidBits > 0).
  bool has_timestamps() const { return timestamp_mask_ != 0; }
  // Records a timestamp before the work that follows (after all earlier work completes);
  // DeviceError when !has_timestamps().
  void begin_timing();
  // Records the closing timestamp, waits for the device and returns the seconds between
  // the two; DeviceError without a begin_timing().
  double end_timing();

 private:
  struct Frame;
  Frame& frame();  // the recording frame, begun
  void submit_current(bool wait);
  void wait_frame(Frame& f);
  void check_errors();
  void barrier(VkCommandBuffer cmd);
  VkPipeline pipeline(ShaderId shader, const std::vector<int32_t>& spec);
  Block* new_block(VkDeviceSize size, bool host_visible, bool host_cached);
  void free_block(Block* b);
  uint32_t memory_type(uint32_t bits, VkMemoryPropertyFlags want, VkMemoryPropertyFlags avoid) const;
  [[noreturn]] void fail(const char* what, VkResult r) const;
  std::string op_desc() const;

  std::string label_;
  DeviceCaps caps_;
  VkPhysicalDevice pd_;
  VkDevice device_ = VK_NULL_HANDLE;
  Fns f_;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  VkPhysicalDeviceMemoryProperties mem_props_{};
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipelineCache cache_ = VK_NULL_HANDLE;
  std::unordered_map<std::string, VkPipeline> pipelines_;
  std::vector<VkShaderModule> modules_;

  // memory: size classes with free lists, carved from large blocks
  mutable std::recursive_mutex mutex_;
  std::vector<Block*> blocks_;
  Block* bump_ = nullptr;
  VkDeviceSize bump_used_ = 0;
  std::unordered_map<size_t, std::vector<Allocation*>> free_;
  MemoryStats stats_;

  std::unique_ptr<TimestampPool> timestamps_;
  uint64_t timestamp_mask_ = 0;  // the valid bits of a timestamp; 0: none
  bool timing_ = false;

  std::vector<std::unique_ptr<Frame>> frames_;
  size_t current_ = 0;
  Block* err_block_ = nullptr;
  uint32_t* err_words_ = nullptr;
  uint64_t err_address_ = 0;
  Block* download_block_ = nullptr;
  const char* op_name_ = "";
  Shape op_shape_;
  std::string batch_last_op_;  // named when a submitted batch fails
};

}  // namespace kiln::vk
