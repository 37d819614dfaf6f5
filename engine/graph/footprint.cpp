#include "engine/graph/footprint.h"

#include <algorithm>
#include <cstdio>

#include "engine/core/error.h"
#include "engine/graph/op_helpers.h"
#include "engine/optim/factory.h"

namespace kiln::graph {

using detail::sat_add;
using detail::sat_mul;

int optimizer_state_slots(const std::string& optimizer, double momentum) {
  if (optimizer == "adam" || optimizer == "adamw") return 2;  // exp_avg, exp_avg_sq (no amsgrad)
  if (optimizer == "sgd") return momentum > 0 ? 1 : 0;        // momentum_buffer
  if (optimizer == "rmsprop") return momentum > 0 ? 2 : 1;    // square_avg (+ momentum_buffer)
  std::string known;
  for (const std::string& n : optim::optimizer_names()) known += (known.empty() ? "" : ", ") + n;
  throw ValueError("unknown optimizer '" + optimizer + "'; known: " + known);
}

MemoryEstimate estimate_memory(const Graph& g, const Analysis& a, const MemoryOptions& o) {
  KILN_CHECK(o.batch >= 1, ValueError, "the batch size must be at least 1, got ", o.batch);
  KILN_CHECK(is_floating(o.dtype), ValueError, "the memory estimate needs a floating dtype, got ", dtype_name(o.dtype));
  const int slots = optimizer_state_slots(o.optimizer, o.momentum);
  const int64_t d = static_cast<int64_t>(dtype_size(o.dtype));
  MemoryEstimate m;
  int64_t params = 0, trainable = 0;
  for (const auto& [id, info] : a.nodes) {
    params = sat_add(params, info.parameters);
    if (g.node(id).trainable) trainable = sat_add(trainable, info.parameters);
    int64_t bytes = 0;
    bool known = true;
    for (const TensorType& t : info.outputs) {
      int64_t elements = 1;
      for (size_t i = 0; i < t.shape.size(); ++i) {
        const int64_t dim = t.shape[i];
        if (dim == kBatch) elements = sat_mul(elements, o.batch);
        else if (is_symbolic(dim)) known = false;
        else elements = sat_mul(elements, dim);
      }
      const int64_t size = is_floating(t.dtype) ? d : static_cast<int64_t>(dtype_size(t.dtype));
      bytes = sat_add(bytes, sat_mul(elements, size));
    }
    if (!known) {
      m.unknown.push_back(id);
      continue;
    }
    m.activation_bytes[id] = bytes;
    m.activations = sat_add(m.activations, bytes);
  }
  m.parameters = sat_mul(params, d);
  m.gradients = sat_mul(trainable, d);
  m.optimizer_state = sat_mul(sat_mul(trainable, slots), d);
  m.training = sat_add(sat_add(m.activations, m.parameters), sat_add(m.gradients, m.optimizer_state));
  return m;
}

std::string bytes_str(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 6) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  if (u == 0) std::snprintf(buf, sizeof(buf), "%lld B", static_cast<long long>(bytes));
  else std::snprintf(buf, sizeof(buf), "%.1f %s", v, units[u]);
  return buf;
}

std::string count_str(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0 && digits[i - 1] != '-') out += ',';
    out += digits[i];
  }
  return out;
}

std::string macs_str(int64_t macs) {
  char buf[32];
  const double v = static_cast<double>(macs);
  if (v >= 1e9) std::snprintf(buf, sizeof(buf), "%.2f G", v / 1e9);
  else if (v >= 1e6) std::snprintf(buf, sizeof(buf), "%.2f M", v / 1e6);
  else if (v >= 1e3) std::snprintf(buf, sizeof(buf), "%.1f k", v / 1e3);
  else std::snprintf(buf, sizeof(buf), "%lld", static_cast<long long>(macs));
  return buf;
}

namespace {

std::string percent(double share) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%.0f%%", share * 100.0);
  return buf;
}

}  // namespace

std::vector<Warning> network_warnings(const Graph& g, const Analysis& a, const MemoryEstimate& m, int64_t batch,
                                      const std::vector<DeviceInfo>& devices, const WarningThresholds& t) {
  std::vector<Warning> out;
  int with_macs = 0;
  for (const auto& [id, info] : a.nodes) with_macs += info.macs > 0;
  if (with_macs >= 2 && a.total_macs > 0) {
    for (const auto& [id, info] : a.nodes) {
      const double share = static_cast<double>(info.macs) / static_cast<double>(a.total_macs);
      if (share > t.macs_share)
        out.push_back({id, "dominant_macs",
                       "'" + g.node(id).name + "' does " + percent(share) + " of the model's multiply-adds (" +
                           count_str(info.macs) + " of " + count_str(a.total_macs) +
                           " per sample): it will likely dominate the step time"});
    }
  }
  for (const auto& [id, info] : a.nodes) {
    const Node& n = g.node(id);
    if (n.op != "Linear") continue;
    const auto src = g.source_of({id, 0});
    if (!src || g.node(src->node).op != "Flatten") continue;
    const double share = a.total_parameters > 0
                             ? static_cast<double>(info.parameters) / static_cast<double>(a.total_parameters)
                             : 0.0;
    const bool huge = info.parameters > t.linear_parameters;
    const bool bulk = a.total_parameters >= t.linear_share_min_parameters && share > t.linear_share;
    if (!huge && !bulk) continue;
    const int64_t in = info.inputs.empty() || info.inputs[0].shape.empty() ? 0 : info.inputs[0].shape.back();
    out.push_back({id, "large_linear_after_flatten",
                   "'" + n.name + "' after Flatten '" + g.node(src->node).name + "' has " + count_str(info.parameters) +
                       " parameters (" + percent(share) + " of the model's) from " + count_str(in) +
                       " flattened features: pool the feature map further (e.g. AdaptiveAvgPool2d) or use fewer "
                       "channels before flattening"});
  }
  NodeId largest = -1;
  int64_t largest_bytes = -1;
  for (const auto& [id, bytes] : m.activation_bytes)
    if (bytes > largest_bytes) largest = id, largest_bytes = bytes;
  for (const DeviceInfo& d : devices) {
    if (d.memory_bytes == 0 || static_cast<uint64_t>(m.training) <= d.memory_bytes) continue;
    std::string msg = "training at batch " + std::to_string(batch) + " needs an estimated " + bytes_str(m.training) +
                      " but " + d.device.str() + " (" + d.name + ") has " +
                      bytes_str(static_cast<int64_t>(std::min<uint64_t>(d.memory_bytes, detail::kInt64Max)));
    if (largest >= 0)
      msg += "; the largest activation is '" + g.node(largest).name + "' with " + bytes_str(largest_bytes) +
             ": use a smaller batch size";
    out.push_back({largest, "memory", msg});
  }
  return out;
}

}  // namespace kiln::graph
