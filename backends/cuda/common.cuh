// Shared by the CUDA kernels (and, through backends/hip/hip_compat.h, the HIP build):
// device types of the dtypes, conversions, dtype dispatch, the strided indexer and the
// elementwise launcher every op family uses.
//
// Note [elementwise launcher]: launch_elementwise<N>(stream, shape, args, f) coalesces
// the dims of N operands (dims whose strides chain for every operand merge; size-1 dims
// drop), then runs f(off) for every element, where off[k] is the element offset of
// operand k from its base pointer (TensorArg data + offset). When every operand is
// contiguous after coalescing, off[k] is the linear index and no division runs.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "backends/cuda/gpu_runtime.h"
#include "engine/core/backend.h"
#include "engine/core/error.h"

namespace kiln::cuda {

constexpr int kMaxDims = 12;  // dims after coalescing; more throws ShapeError
constexpr int kThreads = 256;

// ---- device types of the dtypes ----
using f16_t = __half;
using bf16_t = KILN_BF16_TYPE;

template <class T> struct acc_type { using type = T; };
template <> struct acc_type<f16_t> { using type = float; };
template <> struct acc_type<bf16_t> { using type = float; };
template <class T> using acc_t = typename acc_type<T>::type;

template <class T> inline constexpr bool is_low_float_v = std::is_same_v<T, f16_t> || std::is_same_v<T, bf16_t>;
template <class T> inline constexpr bool is_float_v = std::is_floating_point_v<T> || is_low_float_v<T>;

// Converts between any two device types (float -> int: NaN gives 0, out of range saturates,
// as the CPU backend's scalar_as; anything -> bool: != 0).
template <class To, class From>
__host__ __device__ __forceinline__ To convert(From x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (is_low_float_v<From>) {
    return convert<To>(static_cast<float>(x));
  } else if constexpr (std::is_same_v<To, f16_t>) {
    return __float2half_rn(static_cast<float>(x));
  } else if constexpr (std::is_same_v<To, bf16_t>) {
    return __float2bfloat16_rn(static_cast<float>(x));
  } else if constexpr (std::is_same_v<To, bool>) {
    return x != From(0);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    if (x != x) return To(0);
    if (x <= static_cast<From>(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
    if (x >= static_cast<From>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return static_cast<To>(x);
  } else {
    return static_cast<To>(x);
  }
}

// Runs the block with `T` bound to the device type of dt. FLOAT_ONLY limits to f32, f64,
// f16, bf16; ALL adds i64, i32, u8, i8, bool (no kernels for i16, u16, u32, u64). Other
// dtypes throw DTypeError naming `op`.
#define KILN_CUDA_CASE(E, CT, ...) \
  case ::kiln::DType::E: {         \
    using T = CT;                  \
    __VA_ARGS__;                   \
    break;                         \
  }
#define KILN_CUDA_DISPATCH_FLOAT(dt, op, ...)                                                      \
  switch (dt) {                                                                                   \
    KILN_CUDA_CASE(f32, float, __VA_ARGS__)                                                       \
    KILN_CUDA_CASE(f64, double, __VA_ARGS__)                                                      \
    KILN_CUDA_CASE(f16, ::kiln::cuda::f16_t, __VA_ARGS__)                                         \
    KILN_CUDA_CASE(bf16, ::kiln::cuda::bf16_t, __VA_ARGS__)                                       \
    default:                                                                                      \
      throw ::kiln::DTypeError(::kiln::detail::str_cat(op, ": dtype ", ::kiln::dtype_name(dt),    \
                                                       " is not supported on the CUDA backend")); \
  }
#define KILN_CUDA_DISPATCH_ALL(dt, op, ...)                                                       \
  switch (dt) {                                                                                   \
    KILN_CUDA_CASE(f32, float, __VA_ARGS__)                                                       \
    KILN_CUDA_CASE(f64, double, __VA_ARGS__)                                                      \
    KILN_CUDA_CASE(f16, ::kiln::cuda::f16_t, __VA_ARGS__)                                         \
    KILN_CUDA_CASE(bf16, ::kiln::cuda::bf16_t, __VA_ARGS__)                                       \
    KILN_CUDA_CASE(i64, int64_t, __VA_ARGS__)                                                     \
    KILN_CUDA_CASE(i32, int32_t, __VA_ARGS__)                                                     \
    KILN_CUDA_CASE(u8, uint8_t, __VA_ARGS__)                                                      \
    KILN_CUDA_CASE(i8, int8_t, __VA_ARGS__)                                                       \
    KILN_CUDA_CASE(bool_, bool, __VA_ARGS__)                                                      \
    default:                                                                                      \
      throw ::kiln::DTypeError(::kiln::detail::str_cat(op, ": dtype ", ::kiln::dtype_name(dt),    \
                                                       " is not supported on the CUDA backend")); \
  }

// Typed base pointer of a kernel argument (data + offset).
template <class T>
inline T* ptr(const TensorArg& t) {
  return static_cast<T*>(t.data) + t.offset;
}

// ---- the strided indexer (Note [elementwise launcher]) ----
template <int N>
struct Indexer {
  int ndim = 0;
  int64_t size[kMaxDims] = {};
  int64_t stride[N][kMaxDims] = {};

  // 32-bit division while the index fits (every size does then), 64-bit otherwise.
  __device__ __forceinline__ void offsets(int64_t linear, int64_t (&off)[N]) const {
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] = 0;
    if (linear <= 0xffffffffll) {
      uint32_t l = static_cast<uint32_t>(linear);
      for (int d = ndim - 1; d >= 0; --d) {
        const uint32_t sz = static_cast<uint32_t>(size[d] <= 0xffffffffll ? size[d] : 0xffffffffll);
        const uint32_t i = l % sz;
        l /= sz;
#pragma unroll
        for (int k = 0; k < N; ++k) off[k] += static_cast<int64_t>(i) * stride[k][d];
      }
      return;
    }
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t i = linear % size[d];
      linear /= size[d];
#pragma unroll
      for (int k = 0; k < N; ++k) off[k] += i * stride[k][d];
    }
  }
  bool contiguous() const {  // after coalescing: one dim of unit strides (or none)
    if (ndim == 0) return true;
    if (ndim > 1) return false;
    for (int k = 0; k < N; ++k)
      if (stride[k][0] != 1) return false;
    return true;
  }
};

// Builds the coalesced indexer of `shape` for operands with the given strides. Throws
// ShapeError naming op when more than kMaxDims dims remain.
template <int N>
Indexer<N> make_indexer(const char* op, const Shape& shape, const std::array<const Strides*, N>& strides) {
  Indexer<N> ix;
  int nd = 0;
  int64_t sz[64];
  int64_t st[N][64];
  KILN_CHECK(shape.size() <= 64, ShapeError, op, ": too many dimensions (", shape.size(), ")");
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = nd > 0;
    for (int k = 0; k < N && merge; ++k) merge = st[k][nd - 1] == (*strides[k])[d] * shape[d];
    if (merge) {
      sz[nd - 1] *= shape[d];
      for (int k = 0; k < N; ++k) st[k][nd - 1] = (*strides[k])[d];
    } else {
      sz[nd] = shape[d];
      for (int k = 0; k < N; ++k) st[k][nd] = (*strides[k])[d];
      ++nd;
    }
  }
  KILN_CHECK(nd <= kMaxDims, ShapeError, op, ": the CUDA backend handles at most ", kMaxDims,
             " non-mergeable dimensions, got ", nd, " for shape ", shape_str(shape));
  ix.ndim = nd;
  for (int d = 0; d < nd; ++d) {
    ix.size[d] = sz[d];
    for (int k = 0; k < N; ++k) ix.stride[k][d] = st[k][d];
  }
  return ix;
}

template <int N, class F>
__global__ void elementwise_kernel(int64_t n, Indexer<N> ix, bool contiguous, F f) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t off[N];
    if (contiguous) {
#pragma unroll
      for (int k = 0; k < N; ++k) off[k] = i;
    } else {
      ix.offsets(i, off);
    }
    f(off);
  }
}

inline unsigned grid_for(int64_t n, int threads = kThreads) {
  const int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 65536 * 8 ? (blocks > 0 ? blocks : 1) : 65536 * 8);
}

// Throws DeviceError with the CUDA error string, the op and `what` (shapes) when err != success.
void check_cuda(cudaError_t err, const char* op, const std::string& what = {});
// Checks the launch of the last kernel.
inline void check_launch(const char* op, const Shape& shape) {
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) check_cuda(err, op, shape_str(shape));
}

template <int N, class F>
void launch_elementwise(const char* op, cudaStream_t stream, const Shape& shape,
                        const std::array<const Strides*, N>& strides, F f) {
  const int64_t n = numel(shape);
  if (n == 0) return;
  Indexer<N> ix = make_indexer<N>(op, shape, strides);
  elementwise_kernel<N><<<grid_for(n), kThreads, 0, stream>>>(n, ix, ix.contiguous(), f);
  check_launch(op, shape);
}

// ---- the contiguous fast path (Note [elementwise launcher]) ----
// When every operand is contiguous and 16-byte aligned, launch_vectorized runs
// o[i] = f(a[i]) or f(a[i], b[i]) with one 16-byte load per operand per V elements (V fills
// 16 bytes of the widest type), which keeps enough bytes in flight to near the memory
// bandwidth; the indexed launcher's 2-byte accesses reach about a quarter of it (H200, bf16).
template <class T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

template <int V, class O, class F, class A>
__global__ void vectorized_kernel(int64_t n, O* o, F f, const A* a) {
  const int64_t nvec = n / V, step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t q = tid; q < nvec; q += step) {
    const Pack<A, V> pa = reinterpret_cast<const Pack<A, V>*>(a)[q];
    Pack<O, V> po;
#pragma unroll
    for (int k = 0; k < V; ++k) po.v[k] = f(pa.v[k]);
    reinterpret_cast<Pack<O, V>*>(o)[q] = po;
  }
  if (const int64_t i = nvec * V + tid; i < n) o[i] = f(a[i]);  // the tail, fewer than V
}

template <int V, class O, class F, class A, class B>
__global__ void vectorized_kernel(int64_t n, O* o, F f, const A* a, const B* b) {
  const int64_t nvec = n / V, step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t q = tid; q < nvec; q += step) {
    const Pack<A, V> pa = reinterpret_cast<const Pack<A, V>*>(a)[q];
    const Pack<B, V> pb = reinterpret_cast<const Pack<B, V>*>(b)[q];
    Pack<O, V> po;
#pragma unroll
    for (int k = 0; k < V; ++k) po.v[k] = f(pa.v[k], pb.v[k]);
    reinterpret_cast<Pack<O, V>*>(o)[q] = po;
  }
  if (const int64_t i = nvec * V + tid; i < n) o[i] = f(a[i], b[i]);  // the tail, fewer than V
}

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Runs the fast path and returns true when `out` and the inputs `ins` (one or two, whose typed
// base pointers are a[, b]) are contiguous and aligned; returns false, launching nothing,
// otherwise. f: (A[, B]) -> O on the device; in place (o == a) is allowed.
template <class O, class F, class A, class... B>
bool launch_vectorized(const char* op, cudaStream_t stream, const TensorArg& out, O* o, F f,
                       std::initializer_list<const TensorArg*> ins, const A* a, const B*... b) {
  static_assert(sizeof...(B) <= 1, "one or two inputs");
  if (!out.is_contiguous() || !aligned16(o) || !aligned16(a) || !(aligned16(b) && ...)) return false;
  for (const TensorArg* t : ins)
    if (!t->is_contiguous()) return false;
  constexpr int V = static_cast<int>(16 / std::max({sizeof(O), sizeof(A), sizeof(B)...}));
  const int64_t n = out.numel();
  if (n == 0) return true;
  vectorized_kernel<V><<<grid_for(n / V + 1), kThreads, 0, stream>>>(n, o, f, a, b...);
  check_launch(op, out.shape);
  return true;
}

// "[2, 3] f32, [3] f32" for error messages.
std::string args_str(std::initializer_list<const TensorArg*> args);

}  // namespace kiln::cuda
