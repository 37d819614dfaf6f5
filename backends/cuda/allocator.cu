#include <algorithm>

#include "backends/cuda/common.cuh"
#include "backends/cuda/cuda_backend.h"

namespace kiln::cuda {

size_t CachingAllocator::round(size_t nbytes) {
  if (nbytes <= 512) return 512;
  if (nbytes <= (size_t{1} << 20)) {
    size_t s = 512;
    while (s < nbytes) s <<= 1;
    return s;
  }
  constexpr size_t kGranule = size_t{2} << 20;
  return (nbytes + kGranule - 1) / kGranule * kGranule;
}

void CachingAllocator::set_private(bool on) {
  std::lock_guard<std::mutex> lock(mutex_);
  private_ = on;
}

void* CachingAllocator::allocate(size_t nbytes) {
  const size_t size = round(nbytes);
  bool priv = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    priv = private_;
    auto& pool = priv ? private_free_ : free_;
    auto it = pool.find(size);
    if (it != pool.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      stats_.allocated += size;
      stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
      return p;
    }
  }
  void* p = nullptr;
  cudaError_t err = cudaMalloc(&p, size);
  if (err != cudaSuccess && !priv) {  // (emptying the cache waits for the device: not while recording)
    cudaGetLastError();
    empty_cache();
    err = cudaMalloc(&p, size);
  }
  if (err != cudaSuccess) {
    cudaGetLastError();
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    MemoryStats s = stats();
    throw DeviceError(detail::str_cat(name_, ": out of memory allocating ", nbytes, " bytes (", nbytes >> 20,
                                      " MiB); the device has ", free_b, " bytes (", free_b >> 20, " MiB) free of ",
                                      total_b >> 20, " MiB, Kiln holds ", s.reserved >> 20, " MiB (",
                                      cudaGetErrorString(err), ")"));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (priv) private_blocks_.insert(p);
  stats_.allocated += size;
  stats_.reserved += size;
  stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
  return p;
}

void CachingAllocator::deallocate(void* p, size_t nbytes) {
  if (!p) return;
  const size_t size = round(nbytes);
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.allocated -= size;
  (private_blocks_.count(p) ? private_free_ : free_)[size].push_back(p);
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (free_.empty()) return;
  cudaDeviceSynchronize();  // a cached block may still be in use by queued kernels
  for (auto& [size, blocks] : free_) {
    for (void* p : blocks) cudaFree(p);
    stats_.reserved -= size * blocks.size();
  }
  free_.clear();
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace kiln::cuda
