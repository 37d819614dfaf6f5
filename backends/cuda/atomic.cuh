// atomic_add for every device type: native where the hardware has it, else a
// compare-and-swap loop on the aligned 32-bit word holding the value (1- and 2-byte
// types). Integer adds wrap; bool "adds" are logical or.
#pragma once
#include "backends/cuda/common.cuh"

namespace kiln::cuda {

template <class T>
__device__ __forceinline__ void atomic_add_cas(T* p, T v) {
  static_assert(sizeof(T) <= 2);
  unsigned int* word = reinterpret_cast<unsigned int*>(reinterpret_cast<size_t>(p) & ~size_t{3});
  const unsigned shift = static_cast<unsigned>(reinterpret_cast<size_t>(p) & 3) * 8;
  constexpr unsigned mask = sizeof(T) == 1 ? 0xffu : 0xffffu;
  unsigned int old = *word, assumed;
  do {
    assumed = old;
    T cur;
    if constexpr (sizeof(T) == 1) {
      const unsigned char bits = static_cast<unsigned char>((assumed >> shift) & mask);
      memcpy(&cur, &bits, 1);
    } else {
      const unsigned short bits = static_cast<unsigned short>((assumed >> shift) & mask);
      memcpy(&cur, &bits, 2);
    }
    T sum;
    if constexpr (std::is_same_v<T, bool>) sum = cur || v;
    else if constexpr (is_low_float_v<T>) sum = convert<T>(static_cast<float>(cur) + static_cast<float>(v));
    else sum = static_cast<T>(static_cast<unsigned>(cur) + static_cast<unsigned>(v));
    unsigned int bits = 0;
    memcpy(&bits, &sum, sizeof(T));
    const unsigned int next = (assumed & ~(mask << shift)) | ((bits & mask) << shift);
    old = atomicCAS(word, assumed, next);
  } while (old != assumed);
}

template <class T>
__device__ __forceinline__ void atomic_add(T* p, T v) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    atomicAdd(p, v);
  } else if constexpr (std::is_same_v<T, int32_t>) {
    atomicAdd(reinterpret_cast<int*>(p), static_cast<int>(v));
  } else if constexpr (std::is_same_v<T, int64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && !defined(KILN_HIP)
  } else if constexpr (std::is_same_v<T, f16_t> || std::is_same_v<T, bf16_t>) {
    atomicAdd(p, v);
#endif
  } else {
    atomic_add_cas(p, v);
  }
}

}  // namespace kiln::cuda
