#include "engine/onnx/profile.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace kiln::onnx::profile {
namespace {

struct Table {
  std::mutex mutex;
  std::map<std::string, std::pair<double, long long>> ops;  // op type -> (total ms, calls)
  ~Table() {
    std::string r = report();
    if (!r.empty()) std::fputs(r.c_str(), stderr);
  }
};

Table& table() {
  static Table t;
  return t;
}

}  // namespace

bool enabled() {
  static const bool on = [] {
    const char* e = std::getenv("KILN_ONNX_PROFILE");
    return e && *e && std::string(e) != "0";
  }();
  return on;
}

void record(const std::string& op_type, double ms) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto& [total, calls] = t.ops[op_type];
  total += ms;
  ++calls;
}

std::string report() {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  if (t.ops.empty()) return "";
  std::vector<std::pair<std::string, std::pair<double, long long>>> rows(t.ops.begin(), t.ops.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  double all = 0;
  for (const auto& r : rows) all += r.second.first;
  std::string out = "KILN_ONNX_PROFILE: time per op type over all runs (" + std::to_string(all) + " ms)\n";
  char line[256];
  for (const auto& [op, v] : rows) {
    std::snprintf(line, sizeof line, "  %-24s %10.3f ms %5.1f%% %8lld calls %9.4f ms/call\n", op.c_str(), v.first,
                  all > 0 ? 100.0 * v.first / all : 0.0, v.second, v.first / static_cast<double>(v.second));
    out += line;
  }
  return out;
}

}  // namespace kiln::onnx::profile
