// The oneDNN context of the CPU backend (cpu_matmul.cpp, cpu_conv.cpp): one
// engine, a stream per thread, a bounded LRU cache of plans (primitives and the
// reorders around them) keyed by everything that shapes them, per-thread scratch
// memory, and the strided copy/convert helpers those kernels share.
//
// Note [Plan cache]: creating a oneDNN primitive descriptor costs tens to
// hundreds of microseconds; a training step runs the same shapes every time, so
// each kernel builds a PlanKey from (op, dtype, dims, strides, params), and
// cached_plan() creates the plan once. The cache holds kPlanCacheCapacity
// plans and evicts the least recently used.
#pragma once
#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/core/backend.h"
#include "engine/core/error.h"

namespace kiln::cpu {

constexpr size_t kPlanCacheCapacity = 256;

dnnl::engine& dnnl_engine();
dnnl::stream& dnnl_stream();  // one per thread; CPU streams run synchronously

// oneDNN's type for f32, f16 and bf16; throws DTypeError for others.
dnnl::memory::data_type dnnl_type(DType t);

// A cache key: the op's name and the thread count (oneDNN fixes a primitive's threads when it
// is made), followed by raw integers.
class PlanKey {
 public:
  explicit PlanKey(const char* op) : s_(op) {
    s_.push_back('\0');
    add(omp_get_max_threads());
  }
  PlanKey& add(int64_t v) {
    s_.append(reinterpret_cast<const char*>(&v), sizeof v);
    return *this;
  }
  PlanKey& add(const std::vector<int64_t>& v) {
    add(static_cast<int64_t>(v.size()));
    for (int64_t x : v) add(x);
    return *this;
  }
  const std::string& str() const { return s_; }

 private:
  std::string s_;
};

// Note [Serial small kernels]: a parallel region costs microseconds (waking the team, the
// barrier at its end; more on VMs whose cores are shared), more than a convolution or matrix
// product of a few hundred thousand multiply-adds takes on one core (2^18 at ~50 GFLOP/s: 10 us),
// such as the 1x1 convolutions on [1, C, 1, 1] of MobileNet's and EfficientNet's
// squeeze-excitation blocks, or a transformer's projections of a short sequence. So a oneDNN
// primitive with fewer than kSerialWork multiply-adds is made, and run, on the calling thread
// alone (oneDNN takes its thread count from omp_get_max_threads() when the primitive is made,
// and its reorders when they run). One thread or all: a team smaller than the one before ends
// libgomp's surplus threads (Note [Team size] in strided.h).
constexpr int64_t kSerialWork = int64_t{1} << 18;
// oneDNN's matrix product splits a short M (a sequence of 32-65 tokens) poorly: on 2 threads a
// [32, 64] x [64, 256] product (524k multiply-adds) took 13 us against 7 us on one, spinning
// threads or not, and a 2-layer TransformerEncoder (d 64) ran 0.30 ms against 0.20 ms with the
// products below 2^20 on one thread. So matmul's bound is 4x the convolutions'.
constexpr int64_t kSerialMatmulWork = int64_t{1} << 20;

// While alive, omp_get_max_threads() is 1 for the calling thread when `on`.
class OneThreadIf {
 public:
  explicit OneThreadIf(bool on) : old_(on ? omp_get_max_threads() : 0) {
    if (on) omp_set_num_threads(1);
  }
  ~OneThreadIf() {
    if (old_ > 0) omp_set_num_threads(old_);
  }
  OneThreadIf(const OneThreadIf&) = delete;
  OneThreadIf& operator=(const OneThreadIf&) = delete;

 private:
  int old_;
};

// The cache itself (thread-safe); see cached_plan().
std::shared_ptr<void> plan_cache_find(const std::string& key);
void plan_cache_insert(const std::string& key, std::shared_ptr<void> plan);
size_t plan_cache_size();
void plan_cache_clear();

// The plan for key, made by make() (returning std::shared_ptr<T>) on a miss.
// make() runs outside the cache's lock, so it may itself use the cache.
template <class T, class Make>
std::shared_ptr<T> cached_plan(const PlanKey& key, Make&& make) {
  if (auto p = plan_cache_find(key.str())) return std::static_pointer_cast<T>(p);
  std::shared_ptr<T> p = make();
  plan_cache_insert(key.str(), p);
  return p;
}

// Per-thread scratch buffers, 64-byte aligned, kept between calls and grown as
// needed. Each user takes its own slot so nested kernels never share one.
enum class Scratch : int { cvt0, cvt1, cvt2, cvt3, dense0, dense1, dense2, dense3, dnnl0, dnnl1, dnnl2, dnnl3, count };
void* scratch(Scratch slot, size_t nbytes);

// The address of t's first element (data + offset).
inline char* first_element(const TensorArg& t) {
  return static_cast<char*>(t.data) + t.offset * static_cast<int64_t>(dtype_size(t.dtype));
}

// Whether t is 4-d and dense in NHWC order, channels last (strides {H W C, 1, W C, C}; a size-1
// dim's stride does not count; Note [Channels last] in engine/core/ops_internal.h).
inline bool is_nhwc(const TensorArg& t) {
  if (t.shape.size() != 4 || t.strides.size() != 4) return false;
  const Shape& n = t.shape;
  const int64_t want[4] = {n[2] * n[3] * n[1], 1, n[3] * n[1], n[1]};
  for (int d = 0; d < 4; ++d)
    if (n[d] != 1 && t.strides[d] != want[d]) return false;
  return true;
}

// Copies the strided floating tensor src into dst (contiguous, dtype dst_type), converting.
void gather_dense(const TensorArg& src, void* dst, DType dst_type);
// Copies dense src (dtype src_type, src's layout is dst's shape, contiguous) into the strided dst.
void scatter_dense(const TensorArg& dst, const void* src, DType src_type);
// Sets every element of the strided floating tensor t to zero.
void fill_zero(const TensorArg& t);

// A contiguous view of t in dtype `want`: t itself when it already is one, else
// a converted copy in scratch `slot`. For outputs, finish() writes the copy back.
class DenseView {
 public:
  DenseView(const TensorArg& t, DType want, Scratch slot, bool load);
  const TensorArg& arg() const { return view_; }
  void* data() const { return view_.data; }
  void finish();  // for outputs: copies the dense result into t when it is a copy

 private:
  TensorArg orig_, view_;
  bool copied_ = false;
};

// Calls f(T{}) with T the C++ type of a floating dtype (float, double, half,
// bfloat16); DTypeError naming `op` for any other dtype.
template <class F>
void dispatch_floating(const char* op, DType t, F&& f) {
  switch (t) {
    case DType::f32: f(float{}); return;
    case DType::f64: f(double{}); return;
    case DType::f16: f(half{}); return;
    case DType::bf16: f(bfloat16{}); return;
    default: break;
  }
  throw DTypeError(detail::str_cat(op, ": no ", dtype_name(t), " kernel on the CPU (floating types only)"));
}

}  // namespace kiln::cpu
