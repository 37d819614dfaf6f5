// Internal to the CPU backend: strided N-d iteration, threading and dtype helpers
// shared by the elementwise, reduction, softmax and index kernels.
//
// Note [CPU kernel structure]
// A kernel is a small struct whose always-inline operator()(char* const* p, n) handles one
// run of n elements along the innermost (collapsed) dimension; StridedIter walks the outer
// dimensions and hands it runs. Dimensions of size 1 are dropped and dimensions that are
// contiguous with each other (in every operand) merge, so a contiguous tensor is one run
// and a broadcast scalar operand has inner stride 0. The kernel tests the inner strides
// and takes a plain __restrict loop the auto-vectorizer handles when they are unit or 0.
// Work above kGrain elements is split over OpenMP threads; tiny ops stay on the calling
// thread. Float kernels are compiled three times (x86-64 baseline, AVX2+FMA, AVX-512)
// and picked at run time by cpu_isa(); a kernel body must not contain lambdas (GCC gives
// a lambda inside a target function that target, and then cannot inline it).
#pragma once
#include <omp.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "backends/cpu/cpu_isa.h"
#include "engine/core/backend.h"
#include "engine/core/error.h"

#define KILN_INLINE [[gnu::always_inline]] inline
#if defined(__x86_64__) && defined(__GNUC__)
#define KILN_X86 1
#define KILN_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define KILN_TARGET_AVX512 __attribute__((target("avx2,fma,avx512f,avx512vl,avx512bw,avx512dq")))
#else
#define KILN_X86 0
#define KILN_TARGET_AVX2
#define KILN_TARGET_AVX512
#endif

namespace kiln::cpu {

// ---- threads ----
// Note [Grain]: a parallel region costs a few microseconds (waking the team's sleeping threads,
// the barrier at its end: ~3.5 us on a 2-core VM), about what an elementwise op on 2^16 f32
// elements takes on one core. A bias add on [1024, 64] took 4.4 us on one thread and 6.4 us on
// two; the two broke even at 2^17 elements (10 us). So an op on fewer than kGrain elements runs
// on the calling thread (raised from 2^15: MLP inference +20% and the ViT-tiny's batch-1 run
// -9% on 2 threads). Once parallel, a chunk needs only kGrain / 8 elements, the 2^14 of
// before: an Adam step on 200k parameters still spreads over 12 threads of 16 (with chunks of
// kGrain / 2 it got 3, and the MLP trained 25% slower on the 16-thread host).
constexpr int64_t kGrain = int64_t{1} << 17;  // below this many elements an op runs on one thread

// How many threads n elements of work deserve: 1 below `grain` or inside a parallel region,
// else one per grain / 8 elements, at most the team (Note [Grain]).
inline int num_chunks(int64_t n, int64_t grain) {
  if (n < grain || grain <= 0 || omp_in_parallel()) return 1;
  return static_cast<int>(std::min<int64_t>(omp_get_max_threads(), std::max<int64_t>(1, 8 * n / grain)));
}

// Note [Team size]: libgomp (GCC's OpenMP) keeps one pool of threads, and a parallel region
// with fewer threads than the one before it ends the pool's surplus threads; the next larger
// region creates them again (libgomp team.c, gomp_team_start: "The extra threads should be
// exiting"). A region of 1 thread does not touch the pool. So alternating oneDNN's regions,
// which use every thread, with ours sized by the work created and joined threads op after op:
// on 16 threads a batch-1 MobileNet ran 8x slower than on 2. parallel_for therefore runs on one
// thread or on the whole team, and gives the work's chunks to the first threads of the team.

// Runs f(begin, end) over [0, n) in num_chunks(n, grain) contiguous chunks, one per thread of a
// team of omp_get_max_threads() (Note [Team size]; a smaller team takes several each), or on the
// calling thread when that is one chunk. Long chunks start at multiples of 64 elements (no two
// threads write one cache line). f must not throw.
template <class F>
void parallel_for(int64_t n, int64_t grain, const F& f) {
  const int64_t nc = num_chunks(n, grain);
  if (nc <= 1) {
    if (n > 0) f(int64_t{0}, n);
    return;
  }
  int64_t chunk = (n + nc - 1) / nc;
  if (chunk >= 4096) chunk = (chunk + 63) & ~int64_t{63};
#pragma omp parallel
  for (int64_t c = omp_get_thread_num(); c < nc; c += omp_get_num_threads()) {
    const int64_t b = std::min(n, c * chunk), e = std::min(n, b + chunk);
    if (b < e) f(b, e);
  }
}

// ---- strided iteration ----
constexpr int kMaxDims = 16;  // after collapsing

template <int N>
struct StridedIter {
  int ndim = 0;       // collapsed dimensions, innermost first; 0 = a single element
  int64_t numel = 1;
  int64_t size[kMaxDims];
  int64_t stride[kMaxDims][N];  // bytes
  std::array<char*, N> base{};

  StridedIter() = default;
  // shape has `rank` dims (outermost first); operand k starts at base[k] with element
  // strides strides[k][0..rank) and elements of esize[k] bytes.
  StridedIter(int rank, const int64_t* shape, const std::array<char*, N>& bases,
              const std::array<const int64_t*, N>& strides, const std::array<int64_t, N>& esize)
      : base(bases) {
    for (int d = rank - 1; d >= 0; --d) {
      int64_t s = shape[d];
      numel *= s;
      if (s == 1) continue;
      if (ndim > 0) {
        bool merge = true;
        for (int k = 0; k < N; ++k) merge &= strides[k][d] * esize[k] == stride[ndim - 1][k] * size[ndim - 1];
        if (merge) {
          size[ndim - 1] *= s;
          continue;
        }
      }
      KILN_CHECK(ndim < kMaxDims, ShapeError, "cpu: tensor of rank ", rank, " has too many non-mergeable dims");
      size[ndim] = s;
      for (int k = 0; k < N; ++k) stride[ndim][k] = strides[k][d] * esize[k];
      ++ndim;
    }
  }
  int64_t inner_stride(int k) const { return ndim ? stride[0][k] : 0; }

  // Pointers to the element at linear (row-major) index `linear`, from `from`.
  KILN_INLINE void locate(int64_t linear, const std::array<char*, N>& from, char** p, int64_t* idx) const {
    for (int k = 0; k < N; ++k) p[k] = from[k];
    for (int d = 0; d < ndim; ++d) {
      idx[d] = linear % size[d];
      linear /= size[d];
      for (int k = 0; k < N; ++k) p[k] += idx[d] * stride[d][k];
    }
  }

  // Calls k(p, n) for consecutive runs covering linear indices [begin, end); p[k] points
  // at operand k's first element of the run and the run's stride is inner_stride(k).
  template <class K>
  KILN_INLINE void run(const std::array<char*, N>& from, int64_t begin, int64_t end, K& k) const {
    if (begin >= end) return;
    char* p[N];
    if (ndim == 0) {
      for (int j = 0; j < N; ++j) p[j] = from[j];
      k(p, int64_t{1});
      return;
    }
    int64_t idx[kMaxDims];
    locate(begin, from, p, idx);
    for (;;) {
      int64_t n = std::min(size[0] - idx[0], end - begin);
      k(p, n);
      begin += n;
      if (begin >= end) return;
      for (int j = 0; j < N; ++j) p[j] -= idx[0] * stride[0][j];
      idx[0] = 0;
      for (int d = 1;; ++d) {
        for (int j = 0; j < N; ++j) p[j] += stride[d][j];
        if (++idx[d] < size[d]) break;
        for (int j = 0; j < N; ++j) p[j] -= size[d] * stride[d][j];
        idx[d] = 0;
      }
    }
  }
  template <class K>
  KILN_INLINE void run(int64_t begin, int64_t end, K& k) const { run(base, begin, end, k); }
};

// An iterator over `shape` for the given tensors (their own strides and dtypes). With an output
// and inputs (N >= 2), the dims are visited in the order of the output's strides, largest first,
// so that an output laid out otherwise than row-major (channels last, Note [Channels last] in
// engine/core/ops_internal.h) is written in memory order and its dims merge as a contiguous
// one's do; an elementwise kernel's result does not depend on the order.
template <int N>
StridedIter<N> make_iter(const Shape& shape, const std::array<const TensorArg*, N>& args) {
  std::array<char*, N> bases;
  std::array<const int64_t*, N> strides;
  std::array<int64_t, N> esize;
  for (int k = 0; k < N; ++k) {
    esize[k] = static_cast<int64_t>(dtype_size(args[k]->dtype));
    bases[k] = static_cast<char*>(args[k]->data) + args[k]->offset * esize[k];
    strides[k] = args[k]->strides.data();
  }
  const int rank = static_cast<int>(shape.size());
  const int64_t* out = strides[0];
  bool ordered = true;
  for (int d = 0, last = -1; d < rank && N >= 2; ++d) {
    if (shape[d] == 1) continue;  // StridedIter skips it
    ordered &= last < 0 || out[d] <= out[last];
    last = d;
  }
  if (ordered) return StridedIter<N>(rank, shape.data(), bases, strides, esize);
  std::vector<int> perm(static_cast<size_t>(rank));
  for (int d = 0; d < rank; ++d) perm[d] = d;
  std::stable_sort(perm.begin(), perm.end(), [&](int a, int b) { return out[a] > out[b]; });
  std::vector<int64_t> pshape(static_cast<size_t>(rank)), pstrides(static_cast<size_t>(rank) * N);
  std::array<const int64_t*, N> ps;
  for (int k = 0; k < N; ++k) {
    for (int d = 0; d < rank; ++d) pstrides[k * rank + d] = strides[k][perm[d]];
    ps[k] = pstrides.data() + k * rank;
  }
  for (int d = 0; d < rank; ++d) pshape[d] = shape[perm[d]];
  return StridedIter<N>(rank, pshape.data(), bases, ps, esize);
}

// Throws ShapeError unless t has exactly `shape` (and one stride per dim).
inline void check_shape(const char* op, const char* what, const TensorArg& t, const Shape& shape) {
  KILN_CHECK(t.shape == shape && t.strides.size() == t.shape.size(), ShapeError, op, ": ", what, " has shape ",
             shape_str(t.shape), " (", t.strides.size(), " strides), expected ", shape_str(shape));
}

// Kernel launch: chunk functions for the three ISA levels, picked once per call.
template <class K, int N>
KILN_INLINE void launch_impl(const StridedIter<N>& it, int64_t b, int64_t e, const K& kernel) {
  K k = kernel;
  it.run(b, e, k);
}
template <class K, int N> void launch_base(const StridedIter<N>& it, int64_t b, int64_t e, const K& k) { launch_impl<K, N>(it, b, e, k); }
template <class K, int N> KILN_TARGET_AVX2 void launch_avx2(const StridedIter<N>& it, int64_t b, int64_t e, const K& k) { launch_impl<K, N>(it, b, e, k); }
template <class K, int N> KILN_TARGET_AVX512 void launch_avx512(const StridedIter<N>& it, int64_t b, int64_t e, const K& k) { launch_impl<K, N>(it, b, e, k); }

// Runs kernel k over the iterator; `multiversion` compiles and uses the AVX2/AVX-512 variants.
template <bool multiversion, class K, int N>
void launch(const StridedIter<N>& it, const K& k, int64_t grain = kGrain) {
  using Fn = void (*)(const StridedIter<N>&, int64_t, int64_t, const K&);
  Fn fn = launch_base<K, N>;
  if constexpr (multiversion && KILN_X86) {
    Isa isa = cpu_isa();
    if (isa == Isa::avx512) fn = launch_avx512<K, N>;
    else if (isa == Isa::avx2) fn = launch_avx2<K, N>;
  }
  parallel_for(it.numel, grain, [&](int64_t b, int64_t e) { fn(it, b, e, k); });
}

// Runs job(begin, end) (an always-inline const operator()) over task indices [0, n) on
// threads, compiled for the three ISA levels when `multiversion`.
template <class J> void tasks_base(const J& j, int64_t b, int64_t e) { j(b, e); }
template <class J> KILN_TARGET_AVX2 void tasks_avx2(const J& j, int64_t b, int64_t e) { j(b, e); }
template <class J> KILN_TARGET_AVX512 void tasks_avx512(const J& j, int64_t b, int64_t e) { j(b, e); }
template <bool multiversion, class J>
void launch_tasks(int64_t n, int64_t grain, const J& job) {
  void (*fn)(const J&, int64_t, int64_t) = tasks_base<J>;
  if constexpr (multiversion && KILN_X86) {
    Isa isa = cpu_isa();
    if (isa == Isa::avx512) fn = tasks_avx512<J>;
    else if (isa == Isa::avx2) fn = tasks_avx2<J>;
  }
  parallel_for(n, grain, [&](int64_t b, int64_t e) { fn(job, b, e); });
}

// ---- dtype helpers ----
template <class T> struct TypeTag { using type = T; };

// Calls f(TypeTag<T>{}) with T the C++ type of dt.
template <class F>
KILN_INLINE void visit_dtype(DType dt, F&& f) {
  switch (dt) {
    case DType::f32: f(TypeTag<float>{}); return;
    case DType::f64: f(TypeTag<double>{}); return;
    case DType::f16: f(TypeTag<half>{}); return;
    case DType::bf16: f(TypeTag<bfloat16>{}); return;
    case DType::i64: f(TypeTag<int64_t>{}); return;
    case DType::i32: f(TypeTag<int32_t>{}); return;
    case DType::u8: f(TypeTag<uint8_t>{}); return;
    case DType::i8: f(TypeTag<int8_t>{}); return;
    case DType::bool_: f(TypeTag<bool>{}); return;
    case DType::i16: f(TypeTag<int16_t>{}); return;
    case DType::u16: f(TypeTag<uint16_t>{}); return;
    case DType::u32: f(TypeTag<uint32_t>{}); return;
    case DType::u64: f(TypeTag<uint64_t>{}); return;
  }
  throw DTypeError("cpu: unknown dtype");
}

// Unsigned integer type of a byte size (for kernels that only move bits).
template <size_t S> struct Bits;
template <> struct Bits<1> { using type = uint8_t; };
template <> struct Bits<2> { using type = uint16_t; };
template <> struct Bits<4> { using type = uint32_t; };
template <> struct Bits<8> { using type = uint64_t; };
template <class F>
KILN_INLINE void visit_size(size_t bytes, F&& f) {
  switch (bytes) {
    case 1: f(TypeTag<uint8_t>{}); return;
    case 2: f(TypeTag<uint16_t>{}); return;
    case 4: f(TypeTag<uint32_t>{}); return;
    case 8: f(TypeTag<uint64_t>{}); return;
  }
  throw DTypeError("cpu: unsupported element size");
}

template <class T> inline constexpr bool is_half_v = std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;
// Kernels on these types are compiled per ISA level (launch<true>): f32, and bf16, whose
// conversions to and from float are integer bit operations the vectorizer handles (bf16
// autocast training runs its activations' elementwise ops in bf16).
template <class T> inline constexpr bool multiversion_v = std::is_same_v<T, float> || std::is_same_v<T, bfloat16>;
// Arithmetic type of T's kernels: float for f16/bf16, T otherwise.
template <class T> using compute_t = std::conditional_t<is_half_v<T>, float, T>;
// Accumulator of sums: double for floating types, int64 for integers and bool.
template <class T> using sum_t = std::conditional_t<std::is_floating_point_v<compute_t<T>>, double, int64_t>;

// Value conversion as torch's .to(): floats truncate toward zero into ints, anything
// nonzero (NaN included) is true. Floats go to u8/u16/u32 through int64 and wrap
// (c10::convert's path for uint8: -1.0 -> 255), so a negative value is defined; u64 takes
// a negative float through int64 too. Floats outside int64 (or u64) stay undefined in C++.
template <class D, class S>
KILN_INLINE D convert(S s) {
  if constexpr (is_half_v<S>) return convert<D>(static_cast<float>(s));
  else if constexpr (is_half_v<D>) return D(static_cast<float>(s));
  else if constexpr (std::is_same_v<D, bool>) return s != S(0);
  else if constexpr (std::is_floating_point_v<S> && std::is_unsigned_v<D> && sizeof(D) < 8)
    return static_cast<D>(static_cast<int64_t>(s));
  else if constexpr (std::is_floating_point_v<S> && std::is_unsigned_v<D>)
    return s < S(0) ? static_cast<D>(static_cast<int64_t>(s)) : static_cast<D>(s);
  else return static_cast<D>(s);
}

// A double scalar as T: NaN gives 0 and out-of-range values saturate for integer T.
template <class T>
T scalar_as(double v) {
  using C = compute_t<T>;
  if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else if constexpr (std::is_floating_point_v<C>) {
    return T(static_cast<C>(v));
  } else {
    if (v != v) return T(0);
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  }
}

// Branch-free select the vectorizer turns into a blend (a ?: whose arms compute
// something is left as a branch under -ftrapping-math).
KILN_INLINE float sel(bool c, float a, float b) {
  uint32_t m = 0u - static_cast<uint32_t>(c);
  return std::bit_cast<float>((std::bit_cast<uint32_t>(a) & m) | (std::bit_cast<uint32_t>(b) & ~m));
}
KILN_INLINE double sel(bool c, double a, double b) {
  uint64_t m = uint64_t{0} - static_cast<uint64_t>(c);
  return std::bit_cast<double>((std::bit_cast<uint64_t>(a) & m) | (std::bit_cast<uint64_t>(b) & ~m));
}

// Sum of n contiguous floats or doubles in 16 double lanes: error ~n * 1e-16 relative,
// and free where it matters (a long sum is memory-bound). Reductions and softmax use it.
template <class T>
KILN_INLINE double sum_contiguous(const T* __restrict p, int64_t n) {
  constexpr int L = 16;
  double acc[L] = {};
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int j = 0; j < L; ++j) acc[j] += static_cast<double>(p[i + j]);
  for (int w = L / 2; w > 0; w /= 2)
    for (int j = 0; j < w; ++j) acc[j] += acc[j + w];
  double s = acc[0];
  for (; i < n; ++i) s += static_cast<double>(p[i]);
  return s;
}

// sqrt of n contiguous floats (out may equal in). std::sqrt cannot be auto-vectorized
// while -fmath-errno is on, so this one uses SSE/AVX intrinsics.
void sqrt_contiguous(float* out, const float* in, int64_t n);

}  // namespace kiln::cpu
