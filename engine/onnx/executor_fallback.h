// The executor's per-node CPU fallback (SessionOptions::cpu_fallback): what Session and its
// node runner share. Internal to engine/onnx (executor.cpp, executor_fallback.cpp).
#pragma once
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "engine/core/backend.h"
#include "engine/onnx/executor.h"
#include "engine/onnx/op_context.h"

namespace kiln::onnx::detail {

// The nodes of one session that ran on the CPU; record() counts a node once however often it runs.
struct FallbackLog {
  std::mutex mutex;
  std::set<const Node*> counted;
  FallbackStats stats;
  void record(const Node& n, const std::string& why);  // why: the device's error, or device_lacks()
  bool counts(const Node& n);  // n ran on the CPU before (its next runs skip the device attempt)
};

bool has_subgraph(const Node& n);  // If, Loop, Scan ...: attributes holding graphs
// The backend whose missing ops and dtypes run on the CPU; null when none (the device is the
// CPU, or the fallback is off). DeviceError (registry) when the device is unknown.
Backend* fallback_backend(Device device, const SessionOptions& options);
// t on `device`, or left where it is when `fallback` (may be null) cannot hold its dtype
// (Backend::supports(OpId::copy, dtype) false).
Tensor place(const Tensor& t, Device device, const Backend* fallback);
// The values with their tensors (and sequence items) placed on `device` as place() does;
// STRING tensors stay on the host.
std::vector<Value> values_on(const std::vector<Value>& in, Device device, const Backend* fallback = nullptr);
// Why `device` cannot take these inputs ("" when it can): a tensor of a dtype the backend
// cannot hold ("vulkan:0 cannot hold u16 (Backend::supports(copy, u16) is false)") or on another
// device than `device` and the host (a host tensor is copied over by OpContext::input).
std::string device_lacks(const std::vector<Value>& in, Device device, const Backend& backend);

}  // namespace kiln::onnx::detail
