#include "backends/vulkan/vk_backend.h"

#include <algorithm>
#include <array>

#include "engine/core/error.h"
#include "engine/core/registry.h"

namespace kiln::vk {

VulkanBackend::VulkanBackend(int index, VkPhysicalDevice pd)
    : Backend(Device(DeviceType::vulkan, index)),
      ctx_(std::make_unique<Context>(pd, Device(DeviceType::vulkan, index).str())) {}

DeviceInfo VulkanBackend::info() const {
  const DeviceCaps& c = ctx_->caps();
  DeviceInfo d;
  d.device = device();
  d.name = c.name;
  d.kind = c.kind;
  d.memory_bytes = c.memory_bytes;
  d.compute_units = static_cast<int>(c.compute_units);
  // A discrete GPU outranks everything; software renderers (lavapipe) rank below the CPU
  // backend, which runs the same host faster.
  const double gib = static_cast<double>(c.memory_bytes) / (1u << 30);
  switch (c.type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: d.score = 1000 + gib; break;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: d.score = 100 + gib; break;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: d.score = 50 + gib; break;
    default: d.score = 0.5; break;
  }
  return d;
}

bool VulkanBackend::supports_op(OpId op, DType dtype, int sub_op) const {
  if (dtype == DType::f64) return op == OpId::copy || op == OpId::fill;  // conversions only
  // No shader handles 16-bit integers or unsigned 16/32/64-bit integers.
  if (dtype == DType::i16 || dtype == DType::u16 || dtype == DType::u32 || dtype == DType::u64) return false;
  const bool fp = dtype == DType::f32 || dtype == DType::f16 || dtype == DType::bf16;
  switch (op) {
    case OpId::copy: case OpId::fill: case OpId::binary: case OpId::where: case OpId::reduce:
    case OpId::gather: case OpId::index_select:
      return true;  // every BinaryOp and ReduceOp (shaders/math.glsl, reduce.comp)
    case OpId::unary:  // shaders/math.glsl unary_f: in float; of integers and bool only logical_not (to bool)
      return fp || sub_op == static_cast<int>(UnaryOp::logical_not);
    case OpId::avg_pool2d_forward: case OpId::avg_pool2d_backward:
    case OpId::max_pool2d_forward: case OpId::max_pool2d_backward: case OpId::softmax_forward:
    case OpId::softmax_backward: case OpId::matmul: case OpId::conv2d_forward: case OpId::conv2d_backward_input:
    case OpId::conv2d_backward_weight:
      return fp;
    case OpId::adam_step:
      return dtype == DType::f32;
    case OpId::scatter_add: case OpId::index_add:
      return dtype == DType::f32 || dtype == DType::i32 || (dtype == DType::i64 && ctx_->caps().int64_atomics);
    case OpId::batch_norm_forward: case OpId::batch_norm_backward:  // decomposed by the front end
      return false;
    case OpId::qconv2d_forward: case OpId::qlinear_forward:  // no int8 kernels: quantized models run in float
      return false;
    case OpId::relu_backward:  // composed by the autograd rule
      return false;
    case OpId::bernoulli:  // drawn on the host and uploaded by the front end (random.cpp)
      return false;
    case OpId::fake_quantize:  // composed of elementwise ops by the front end (ops_fake_quant.cpp)
      return false;
    case OpId::conv2d_fused_forward:  // decomposed by the front end (conv2d_fused)
      return false;
    case OpId::count:
      break;
  }
  return false;
}

void VulkanBackend::require(OpId op, DType dtype, const char* name) const {
  KILN_CHECK(supports(op, dtype), DTypeError, name, ": ", dtype_name(dtype), " is not supported on ",
             device().str(), " (", ctx_->caps().name, ")");
}

void* VulkanBackend::allocate(size_t nbytes) { return ctx_->allocate(nbytes); }
void VulkanBackend::deallocate(void* data, size_t) { ctx_->deallocate(static_cast<Allocation*>(data)); }
void VulkanBackend::upload(void* dst, size_t off, const void* host, size_t nbytes) {
  if (nbytes) ctx_->upload(static_cast<Allocation*>(dst), off, host, nbytes);
}
void VulkanBackend::download(void* host, const void* src, size_t off, size_t nbytes) {
  ctx_->download(host, static_cast<const Allocation*>(src), off, nbytes);
}
void VulkanBackend::synchronize() { ctx_->synchronize(); }
MemoryStats VulkanBackend::memory_stats() const { return ctx_->memory_stats(); }
void VulkanBackend::empty_cache() { ctx_->empty_cache(); }
bool VulkanBackend::begin_timing() {
  if (!ctx_->has_timestamps()) return false;
  ctx_->begin_timing();
  return true;
}
double VulkanBackend::end_timing() { return ctx_->has_timestamps() ? ctx_->end_timing() : 0.0; }

uint64_t address(const TensorArg& t) {
  return static_cast<const Allocation*>(t.data)->address + static_cast<uint64_t>(t.offset) * dtype_size(t.dtype);
}

void check_index_range(const Context& ctx, const char* op, const TensorArg& t) {
  int64_t last = 0;
  for (size_t d = 0; d < t.shape.size(); ++d) last += (t.shape[d] - 1) * t.strides[d];
  KILN_CHECK(t.numel() < (int64_t{1} << 31) && last < (int64_t{1} << 32), DeviceError, ctx.label(), ": ", op,
             ": tensor ", shape_str(t.shape), " is beyond the 2^31 elements a kernel indexes");
}

Collapsed collapse(const char* op, const Shape& shape, std::initializer_list<const Strides*> strides) {
  Collapsed c;
  const int nops = static_cast<int>(strides.size());
  std::vector<int64_t> sz;
  std::vector<std::vector<int64_t>> st(nops);
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = !sz.empty();
    int k = 0;
    for (const Strides* s : strides) {
      if (merge && st[k].back() != (*s)[d] * shape[d]) merge = false;
      ++k;
    }
    k = 0;
    if (merge) {
      sz.back() *= shape[d];
      for (const Strides* s : strides) st[k++].back() = (*s)[d];
    } else {
      sz.push_back(shape[d]);
      for (const Strides* s : strides) st[k++].push_back((*s)[d]);
    }
  }
  if (sz.empty()) {  // a scalar, or all dims of size 1
    sz.push_back(1);
    for (auto& s : st) s.push_back(0);
  }
  KILN_CHECK(sz.size() <= 8, ShapeError, op, ": shape ", shape_str(shape), " has more than 8 non-mergeable dims");
  c.ndim = static_cast<int>(sz.size());
  for (int d = 0; d < c.ndim; ++d) {
    c.size[d] = sz[d];
    for (int k = 0; k < nops; ++k) c.stride[k][d] = st[k][d];
  }
  return c;
}

namespace {
std::vector<std::unique_ptr<Backend>> enumerate(std::string& why) {
  std::vector<std::unique_ptr<Backend>> out;
  Instance* inst = instance(why);
  if (!inst) return out;
  auto& f = fns();
  uint32_t n = 0;
  f.vkEnumeratePhysicalDevices(inst->handle, &n, nullptr);
  std::vector<VkPhysicalDevice> pds(n);
  f.vkEnumeratePhysicalDevices(inst->handle, &n, pds.data());
  if (n == 0) {
    why = "no Vulkan device (the loader found no driver / ICD)";
    return out;
  }
  std::vector<std::pair<double, VkPhysicalDevice>> usable;
  std::vector<std::array<uint8_t, VK_UUID_SIZE>> seen;
  std::string reasons;
  for (VkPhysicalDevice pd : pds) {
    // One GPU listed twice (two manifests of the same driver) is one device.
    VkPhysicalDeviceIDProperties id{}; id.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES;
    VkPhysicalDeviceProperties2 p2{}; p2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
    p2.pNext = &id;
    f.vkGetPhysicalDeviceProperties2(pd, &p2);
    std::array<uint8_t, VK_UUID_SIZE> uuid;
    std::copy(std::begin(id.deviceUUID), std::end(id.deviceUUID), uuid.begin());
    const bool known = std::any_of(uuid.begin(), uuid.end(), [](uint8_t v) { return v != 0; });
    if (known && std::find(seen.begin(), seen.end(), uuid) != seen.end()) continue;
    if (known) seen.push_back(uuid);
    std::string r;
    if (!device_usable(pd, r)) {
      reasons += (reasons.empty() ? "" : "; ") + r;
      continue;
    }
    DeviceCaps c = query_caps(pd);
    double rank = c.type == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU ? 3 : c.type == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ? 2
                  : c.type == VK_PHYSICAL_DEVICE_TYPE_CPU ? 0 : 1;
    usable.push_back({rank, pd});
  }
  // vulkan:0 is the best device (discrete first), so `--device vulkan:0` picks the GPU.
  std::stable_sort(usable.begin(), usable.end(), [](auto& a, auto& b) { return a.first > b.first; });
  for (auto& [rank, pd] : usable) {
    try {
      out.push_back(std::make_unique<VulkanBackend>(static_cast<int>(out.size()), pd));
    } catch (const std::exception& e) {
      reasons += (reasons.empty() ? "" : "; ") + std::string(e.what());
    }
  }
  if (out.empty()) why = "no usable Vulkan device: " + reasons;
  return out;
}
}  // namespace

}  // namespace kiln::vk

extern "C" __attribute__((visibility("default"))) kiln::BackendFactory* kiln_backend_factory() {
  static kiln::BackendFactory factory{kiln::DeviceType::vulkan, &kiln::vk::enumerate};
  return &factory;
}
