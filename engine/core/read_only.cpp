#include "engine/core/read_only.h"

#include <atomic>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/tensor.h"

namespace kiln {
namespace {

struct Marks {
  std::mutex mutex;
  std::unordered_set<const void*> marked;
  std::vector<std::function<void(const void*)>> hooks;
  std::atomic<size_t> count{0};  // marked.size(), read without the lock on every Storage release
};

Marks& marks() {
  static Marks* m = new Marks;  // never destroyed: storages may be released during exit
  return *m;
}

}  // namespace

void mark_read_only(const Tensor& t) {
  KILN_CHECK(t.defined(), ValueError, "mark_read_only: undefined tensor");
  TensorArg a = t.arg();
  KILN_CHECK(a.offset == 0, ValueError, "mark_read_only: the tensor must start its allocation, its offset is ",
             a.offset, " elements");
  if (!a.data) return;
  Marks& m = marks();
  std::lock_guard<std::mutex> lock(m.mutex);
  m.marked.insert(a.data);
  m.count = m.marked.size();
}

bool is_read_only(const void* data) {
  Marks& m = marks();
  if (m.count.load(std::memory_order_relaxed) == 0) return false;
  std::lock_guard<std::mutex> lock(m.mutex);
  return m.marked.count(data) != 0;
}

void release_read_only(const void* data) {
  Marks& m = marks();
  if (m.count.load(std::memory_order_relaxed) == 0) return;
  std::vector<std::function<void(const void*)>> hooks;
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    if (!m.marked.erase(data)) return;
    m.count = m.marked.size();
    hooks = m.hooks;
  }
  for (const auto& h : hooks) h(data);
}

void on_read_only_release(std::function<void(const void*)> hook) {
  Marks& m = marks();
  std::lock_guard<std::mutex> lock(m.mutex);
  m.hooks.push_back(std::move(hook));
}

}  // namespace kiln
