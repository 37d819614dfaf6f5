#include "backends/cpu/dnnl_context.h"

#include <cstdlib>
#include <list>
#include <mutex>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "engine/core/error.h"

namespace kiln::cpu {

dnnl::engine& dnnl_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& dnnl_stream() {
  thread_local dnnl::stream stream(dnnl_engine());
  return stream;
}

dnnl::memory::data_type dnnl_type(DType t) {
  switch (t) {
    case DType::f32: return dnnl::memory::data_type::f32;
    case DType::f16: return dnnl::memory::data_type::f16;
    case DType::bf16: return dnnl::memory::data_type::bf16;
    default: break;
  }
  throw DTypeError(detail::str_cat("oneDNN: no ", dtype_name(t), " kernels"));
}

// ---- plan cache (Note [Plan cache]) ----

namespace {
struct PlanCache {
  using Entry = std::pair<std::string, std::shared_ptr<void>>;
  std::mutex mutex;
  std::list<Entry> lru;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index;
};
PlanCache& plan_cache() {
  dnnl_engine();  // made first, so destroyed after the plans that use it
  static PlanCache cache;
  return cache;
}
}  // namespace

std::shared_ptr<void> plan_cache_find(const std::string& key) {
  PlanCache& c = plan_cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  auto it = c.index.find(key);
  if (it == c.index.end()) return nullptr;
  c.lru.splice(c.lru.begin(), c.lru, it->second);
  return it->second->second;
}

void plan_cache_insert(const std::string& key, std::shared_ptr<void> plan) {
  PlanCache& c = plan_cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (c.index.count(key)) return;  // another thread made it meanwhile
  c.lru.emplace_front(key, std::move(plan));
  c.index.emplace(key, c.lru.begin());
  while (c.lru.size() > kPlanCacheCapacity) {
    c.index.erase(c.lru.back().first);
    c.lru.pop_back();
  }
}

size_t plan_cache_size() {
  PlanCache& c = plan_cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.lru.size();
}

void plan_cache_clear() {
  PlanCache& c = plan_cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.index.clear();
  c.lru.clear();
}

// ---- scratch ----

namespace {
struct ScratchSlots {
  struct Slot {
    void* data = nullptr;
    size_t size = 0;
  };
  Slot slots[static_cast<int>(Scratch::count)];
  ~ScratchSlots() {
    for (Slot& s : slots) std::free(s.data);
  }
};
}  // namespace

void* scratch(Scratch slot, size_t nbytes) {
  thread_local ScratchSlots tls;
  ScratchSlots::Slot& s = tls.slots[static_cast<int>(slot)];
  if (s.size < nbytes) {
    std::free(s.data);
    s.data = nullptr;
    s.size = 0;
    size_t size = (nbytes + nbytes / 4 + 63) / 64 * 64;  // some headroom for growing shapes
    s.data = std::aligned_alloc(64, size);
    KILN_CHECK(s.data != nullptr, DeviceError, "cpu: out of memory allocating ", size, " scratch bytes");
    s.size = size;
  }
  return s.data;
}

// ---- strided copies ----

namespace {
// Destination and source strides of one copy, with size-1 dims dropped and
// dims merged where both layouts allow.
struct CopyLayout {
  std::vector<int64_t> shape, dst, src;
};

CopyLayout collapse(const Shape& shape, const Strides& dst, const Strides& src) {
  CopyLayout l;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!l.shape.empty() && l.dst.back() == dst[d] * shape[d] && l.src.back() == src[d] * shape[d]) {
      l.shape.back() *= shape[d];
      l.dst.back() = dst[d];
      l.src.back() = src[d];
    } else {
      l.shape.push_back(shape[d]);
      l.dst.push_back(dst[d]);
      l.src.push_back(src[d]);
    }
  }
  return l;
}

template <class D, class S>
inline D convert(S v) {
  using W = std::conditional_t<std::is_same_v<D, double> || std::is_same_v<S, double>, double, float>;
  return static_cast<D>(static_cast<W>(v));
}

template <class D, class S>
void copy_loop(const CopyLayout& l, D* dst, const S* src) {
  const int r = static_cast<int>(l.shape.size());
  if (r == 0) {
    dst[0] = convert<D>(src[0]);
    return;
  }
  const int64_t inner = l.shape[r - 1], sd = l.dst[r - 1], ss = l.src[r - 1];
  int64_t rows = 1;
  for (int d = 0; d < r - 1; ++d) rows *= l.shape[d];
#pragma omp parallel for schedule(static) if (rows * inner > (1 << 15))
  for (int64_t row = 0; row < rows; ++row) {
    int64_t rem = row, od = 0, os = 0;
    for (int d = r - 2; d >= 0; --d) {
      const int64_t i = rem % l.shape[d];
      rem /= l.shape[d];
      od += i * l.dst[d];
      os += i * l.src[d];
    }
    D* dp = dst + od;
    const S* sp = src + os;
    if (sd == 1 && ss == 1) {
      for (int64_t j = 0; j < inner; ++j) dp[j] = convert<D>(sp[j]);
    } else {
      for (int64_t j = 0; j < inner; ++j) dp[j * sd] = convert<D>(sp[j * ss]);
    }
  }
}

void copy_any(const Shape& shape, void* dst, DType dt, const Strides& ds, const void* src, DType st,
              const Strides& ss) {
  if (numel(shape) == 0) return;
  CopyLayout l = collapse(shape, ds, ss);
  dispatch_floating("strided copy", dt, [&](auto d) {
    dispatch_floating("strided copy", st, [&](auto s) {
      using D = decltype(d);
      using S = decltype(s);
      copy_loop(l, static_cast<D*>(dst), static_cast<const S*>(src));
    });
  });
}
}  // namespace

void gather_dense(const TensorArg& src, void* dst, DType dst_type) {
  copy_any(src.shape, dst, dst_type, contiguous_strides(src.shape), first_element(src), src.dtype, src.strides);
}

void scatter_dense(const TensorArg& dst, const void* src, DType src_type) {
  copy_any(dst.shape, first_element(dst), dst.dtype, dst.strides, src, src_type, contiguous_strides(dst.shape));
}

void fill_zero(const TensorArg& t) {
  static const float zero = 0.0f;
  copy_any(t.shape, first_element(t), t.dtype, t.strides, &zero, DType::f32, Strides(t.shape.size(), 0));
}

DenseView::DenseView(const TensorArg& t, DType want, Scratch slot, bool load) : orig_(t), view_(t) {
  if (t.dtype == want && t.is_contiguous()) {
    view_.data = first_element(t);
    view_.offset = 0;
    return;
  }
  copied_ = true;
  view_.data = scratch(slot, static_cast<size_t>(t.numel()) * dtype_size(want));
  view_.offset = 0;
  view_.dtype = want;
  view_.strides = contiguous_strides(t.shape);
  if (load) gather_dense(t, view_.data, want);
}

void DenseView::finish() {
  if (copied_) scatter_dense(orig_, view_.data, view_.dtype);
}

}  // namespace kiln::cpu
