#include "backends/cpu/cpu_backend.h"

#include <omp.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>

#include "engine/core/error.h"
#include "engine/core/registry.h"

namespace kiln::cpu {

namespace {
constexpr size_t kAlignment = 64;  // one cache line; AVX-512 loads stay aligned

std::string cpu_model_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  return "CPU";
}

// The CPU backend registers itself like any other family (engine/core/registry.h), while
// libkiln's static objects are constructed: before main() and before any look-up. The
// registry it registers with is a function-local static, so the order of static objects
// across libkiln's files does not matter.
[[maybe_unused]] const bool registered = [] {
  register_backend_factory({DeviceType::cpu, [](std::string& /*why_unavailable*/) {
                              std::vector<std::unique_ptr<Backend>> found;
                              found.push_back(std::make_unique<CpuBackend>());
                              return found;
                            }});
  return true;
}();
}  // namespace

size_t round_allocation(size_t nbytes) {
  if (nbytes <= 512) return 512;
  if (nbytes <= (size_t{1} << 20)) {  // power of two up to 1 MiB
    size_t s = 512;
    while (s < nbytes) s <<= 1;
    return s;
  }
  constexpr size_t kGranule = size_t{1} << 20;  // whole MiB above that
  return (nbytes + kGranule - 1) / kGranule * kGranule;
}

CpuBackend::CpuBackend() : Backend(Device(DeviceType::cpu, 0)) {}

CpuBackend::~CpuBackend() { empty_cache(); }

DeviceInfo CpuBackend::info() const {
  DeviceInfo d;
  d.device = Device(DeviceType::cpu, 0);
  d.compute_units = omp_get_max_threads();
  d.name = cpu_model_name() + " (" + std::to_string(d.compute_units) + " threads)";
  d.kind = "cpu";
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  d.memory_bytes = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
  d.score = 1.0 * d.compute_units;  // any GPU backend scores above this
  return d;
}

bool CpuBackend::supports_op(OpId op, DType dtype, int /*sub_op*/) const {
  switch (op) {
    case OpId::copy: case OpId::fill: case OpId::where:
    case OpId::gather: case OpId::scatter_add: case OpId::index_select: case OpId::index_add:
      return true;
    case OpId::unary: case OpId::binary: case OpId::reduce:
      return true;  // every sub-op and dtype (floating-only ops of integers compute through f64)
    case OpId::matmul: case OpId::conv2d_forward: case OpId::conv2d_backward_input:
    case OpId::conv2d_backward_weight:
      return dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16 || dtype == DType::f64;
    case OpId::max_pool2d_forward:  // u8: int8 inference, without indices (cpu_pool.cpp)
      return is_floating(dtype) || dtype == DType::u8;
    case OpId::max_pool2d_backward: case OpId::avg_pool2d_forward:
    case OpId::avg_pool2d_backward: case OpId::softmax_forward: case OpId::softmax_backward:
      return is_floating(dtype);
    case OpId::adam_step:
      return dtype == DType::f32 || dtype == DType::f64;
    case OpId::batch_norm_forward: case OpId::batch_norm_backward:  // cpu_batch_norm.cpp; others decomposed
      return dtype == DType::f32;
    case OpId::qconv2d_forward: case OpId::qlinear_forward:  // cpu_qconv.cpp (oneDNN int8)
      return dtype == DType::u8;
    case OpId::relu_backward:  // cpu_fused.cpp
      return is_floating(dtype);
    case OpId::bernoulli:  // cpu_fused.cpp
      return dtype == DType::f32 || dtype == DType::f64;
    case OpId::fake_quantize:  // cpu_fake_quant.cpp; f16/bf16 composed by the front end
      return dtype == DType::f32 || dtype == DType::f64;
    case OpId::conv2d_fused_forward:  // cpu_conv.cpp (oneDNN post-ops); others decomposed by the front end
      return dtype == DType::f32;
    case OpId::count:
      break;
  }
  return false;
}

void* CpuBackend::allocate(size_t nbytes) {
  size_t size = round_allocation(nbytes);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_blocks_.find(size);
    if (it != free_blocks_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      stats_.allocated += size;
      stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
      return p;
    }
  }
  void* p = std::aligned_alloc(kAlignment, size);
  if (!p) {
    empty_cache();
    p = std::aligned_alloc(kAlignment, size);
  }
  KILN_CHECK(p != nullptr, DeviceError, "cpu: out of memory allocating ", nbytes, " bytes");
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.allocated += size;
  stats_.reserved += size;
  stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
  return p;
}

void CpuBackend::deallocate(void* data, size_t nbytes) {
  if (!data) return;
  size_t size = round_allocation(nbytes);
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.allocated -= size;
  free_blocks_[size].push_back(data);
}

void CpuBackend::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [size, blocks] : free_blocks_) {
    for (void* p : blocks) std::free(p);
    stats_.reserved -= size * blocks.size();
  }
  free_blocks_.clear();
}

MemoryStats CpuBackend::memory_stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void CpuBackend::upload(void* dst, size_t off, const void* host, size_t nbytes) {
  if (nbytes) std::memcpy(static_cast<char*>(dst) + off, host, nbytes);
}

void CpuBackend::download(void* host, const void* src, size_t off, size_t nbytes) {
  if (nbytes) std::memcpy(host, static_cast<const char*>(src) + off, nbytes);
}

}  // namespace kiln::cpu
