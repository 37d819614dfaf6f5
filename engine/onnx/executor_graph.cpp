#include "engine/onnx/executor_graph.h"

#include <cstdlib>
#include <cstring>
#include <exception>

#include "engine/core/registry.h"

namespace kiln::onnx::detail {

namespace {

// "x:f32[1,3,224,224];" for each input; empty when an input is not one plain tensor.
std::string shape_key(const std::map<std::string, Value>& inputs) {
  std::string key;
  for (const auto& [name, v] : inputs) {
    if (!v.tensor.defined() || v.is_sequence() || v.is_strings() || v.optional) return "";
    key += name + ":" + dtype_name(v.tensor.dtype()) + shape_str(v.tensor.shape()) + ";";
  }
  return key;
}

std::vector<Value> copies_of(const std::vector<Value>& outputs) {
  std::vector<Value> out;
  out.reserve(outputs.size());
  for (const Value& v : outputs) out.emplace_back(v.tensor.clone());
  return out;
}

}  // namespace

CapturedRuns::CapturedRuns(Device device, bool enabled) : device_(device), enabled_(enabled) {
  const char* env = std::getenv("KILN_CUDA_GRAPH");
  if (env && std::strcmp(env, "0") == 0) enabled_ = false, off_reason_ = "recording turned off (KILN_CUDA_GRAPH=0)";
  else if (!enabled_) off_reason_ = "recording turned off (SessionOptions::cuda_graph)";
}

CapturedRuns::~CapturedRuns() {
  try {
    for (auto& [key, e] : entries_)
      if (e.graph > 0) backend_for(device_)->release_graph(e.graph);
  } catch (const std::exception&) {  // the device is gone: nothing left to free
  }
}

std::vector<Value> CapturedRuns::run(const std::map<std::string, Value>& inputs, const RunFn& run) {
  if (!enabled_) return run(inputs, nullptr);
  std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  const std::string key = shape_key(inputs);
  if (!lock || key.empty() || (!entries_.count(key) && entries_.size() >= kMaxShapes)) return run(inputs, nullptr);
  Entry& e = entries_[key];
  if (!e.failed.empty()) return run(inputs, nullptr);
  Backend* backend = backend_for(device_);
  if (e.graph > 0) {
    for (auto& [name, t] : e.inputs) t.copy_(inputs.at(name).tensor);
    backend->replay(e.graph, {});
    return copies_of(e.outputs);
  }
  if (e.runs++ == 0) {  // plain, keeping its host copies for the recording
    e.copies.mode = HostCopies::Mode::record;
    return run(inputs, &e.copies);
  }
  std::map<std::string, Value> fixed;
  for (const auto& [name, v] : inputs) fixed[name] = e.inputs[name] = v.tensor.clone();  // outside the recording
  std::string why;
  if (!backend->begin_capture(why)) {
    e.failed = why;
    e.inputs.clear();
    return run(inputs, nullptr);
  }
  e.copies.mode = HostCopies::Mode::serve;
  try {
    e.outputs = run(fixed, &e.copies);
    e.graph = backend->end_capture();
  } catch (const std::exception& ex) {
    backend->abort_capture();
    e.failed = std::string("the run could not be recorded: ") + ex.what();
    e.inputs.clear();
    e.outputs.clear();
    return run(inputs, nullptr);
  }
  backend->replay(e.graph, {});  // the recorded run itself: recording ran nothing
  return copies_of(e.outputs);
}

std::string CapturedRuns::note() const {
  if (!enabled_) return off_reason_;
  std::lock_guard<std::mutex> lock(mutex_);
  int replaying = 0;
  std::string failed;
  for (const auto& [key, e] : entries_) {
    replaying += e.graph > 0;
    if (failed.empty() && !e.failed.empty()) failed = e.failed;
  }
  if (replaying) return "replaying " + std::to_string(replaying) + " input shape set" + (replaying > 1 ? "s" : "");
  return failed.empty() ? "not recorded yet (the second run of an input shape set is recorded)" : failed;
}

}  // namespace kiln::onnx::detail
