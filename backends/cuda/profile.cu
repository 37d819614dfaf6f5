#include "backends/cuda/profile.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

namespace kiln::cuda {

namespace {
struct Record {
  std::string key;
  cudaEvent_t begin, end;
};
struct Total {
  double ms = 0;
  long calls = 0;
};

struct Profiler {
  std::mutex mutex;
  std::vector<Record> pending;
  std::vector<cudaEvent_t> pool;
  std::map<std::string, Total> totals;

  cudaEvent_t event() {
    if (!pool.empty()) {
      cudaEvent_t e = pool.back();
      pool.pop_back();
      return e;
    }
    cudaEvent_t e = nullptr;
    cudaEventCreate(&e);
    return e;
  }
  void flush_locked() {
    for (Record& r : pending) {
      float ms = 0;
      if (cudaEventSynchronize(r.end) == cudaSuccess && cudaEventElapsedTime(&ms, r.begin, r.end) == cudaSuccess) {
        auto [it, fresh] = totals.try_emplace(r.key);
        if (!fresh) {  // the first call of a kind (plans, algorithm search, handles) is left out
          it->second.ms += ms;
          ++it->second.calls;
        }
      }
      cudaGetLastError();
      pool.push_back(r.begin);
      pool.push_back(r.end);
    }
    pending.clear();
  }
  ~Profiler() {  // prints only what was already resolved: the CUDA context may be gone
    if (totals.empty()) return;
    std::vector<std::pair<std::string, Total>> rows(totals.begin(), totals.end());
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
    double sum = 0;
    for (const auto& r : rows) sum += r.second.ms;
    std::fprintf(stderr, "KILN_CUDA_PROFILE: %.3f ms of GPU time in %zu op kinds (first call of each left out)\n", sum,
                 rows.size());
    std::fprintf(stderr, "%10s %8s %6s  %s\n", "ms", "calls", "share", "op dtype shape");
    for (size_t i = 0; i < rows.size() && i < 60; ++i)
      std::fprintf(stderr, "%10.3f %8ld %5.1f%%  %s\n", rows[i].second.ms, rows[i].second.calls,
                   100.0 * rows[i].second.ms / sum, rows[i].first.c_str());
  }
};

Profiler& profiler() {
  static Profiler p;
  return p;
}
}  // namespace

bool profiling() {
  static const bool on = [] {
    const char* v = std::getenv("KILN_CUDA_PROFILE");
    return v && std::strcmp(v, "1") == 0;
  }();
  return on;
}

void ProfileScope::begin(cudaStream_t stream, const char* op, const TensorArg& first, const TensorArg* second) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaStreamIsCapturing(stream, &status);
  if (status != cudaStreamCaptureStatusNone) return;
  Profiler& p = profiler();
  std::lock_guard<std::mutex> lock(p.mutex);
  key_ = std::string(op) + " " + dtype_name(first.dtype) + " " + shape_str(first.shape);
  if (second) key_ += " x " + shape_str(second->shape);
  cudaEvent_t e = p.event();
  cudaEventRecord(e, stream);
  ev_ = e;
  stream_ = stream;
}

void ProfileScope::end() {
  Profiler& p = profiler();
  std::lock_guard<std::mutex> lock(p.mutex);
  cudaEvent_t e = p.event();
  cudaEventRecord(e, stream_);
  p.pending.push_back({std::move(key_), static_cast<cudaEvent_t>(ev_), e});
  if (p.pending.size() >= 8192) p.flush_locked();
}

void profile_flush() {
  if (!profiling()) return;
  Profiler& p = profiler();
  std::lock_guard<std::mutex> lock(p.mutex);
  p.flush_locked();
}

}  // namespace kiln::cuda
