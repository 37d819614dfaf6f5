#include "backends/cpu/cpu_packed.h"

#include <mutex>
#include <unordered_map>
#include <vector>

#include "engine/core/read_only.h"

namespace kiln::cpu {
namespace {

struct Packed {
  dnnl::memory::desc user, inner;
  dnnl::memory mem;
};

struct Cache {
  std::mutex mutex;
  std::unordered_map<const void*, std::vector<Packed>> copies;  // read-only allocation -> its copies
};

Cache& cache() {
  static Cache* c = [] {
    auto* made = new Cache;  // never destroyed: allocations may be released during exit
    on_read_only_release([made](const void* data) {
      std::vector<Packed> dropped;  // freed outside the lock
      std::lock_guard<std::mutex> lock(made->mutex);
      auto it = made->copies.find(data);
      if (it == made->copies.end()) return;
      dropped = std::move(it->second);
      made->copies.erase(it);
    });
    return made;
  }();
  return *c;
}

const dnnl::memory* find(const std::vector<Packed>& v, const dnnl::memory::desc& user, const dnnl::memory::desc& inner) {
  for (const Packed& p : v)
    if (p.user == user && p.inner == inner) return &p.mem;
  return nullptr;
}

}  // namespace

dnnl::memory packed_weights(const void* data, const dnnl::memory::desc& user, const dnnl::memory::desc& inner,
                            const std::function<dnnl::memory()>& make) {
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.copies.find(data);
    if (it != c.copies.end())
      if (const dnnl::memory* m = find(it->second, user, inner)) return *m;
  }
  dnnl::memory mem = make();  // outside the lock: the reorder may run in parallel
  // Kept only while marked: checked after making it, so a release that ran meanwhile (whose
  // hook found nothing to drop yet) leaves no copy behind.
  std::lock_guard<std::mutex> lock(c.mutex);
  if (!is_read_only(data)) return mem;
  std::vector<Packed>& v = c.copies[data];
  if (const dnnl::memory* m = find(v, user, inner)) return *m;  // another thread made it first
  v.push_back({user, inner, mem});
  return mem;
}

size_t packed_count() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  size_t n = 0;
  for (const auto& [data, v] : c.copies) n += v.size();
  return n;
}

}  // namespace kiln::cpu
