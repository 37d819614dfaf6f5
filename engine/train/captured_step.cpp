#include "engine/train/captured_step.h"

#include <cstdlib>
#include <cstring>
#include <exception>

#include "engine/core/registry.h"

namespace kiln::train {

CapturedStep::CapturedStep(Device device, int warmup, bool enabled)
    : device_(device), warmup_(warmup < 1 ? 1 : warmup), enabled_(enabled) {
  const char* env = std::getenv("KILN_CUDA_GRAPH");
  if (env && std::strcmp(env, "0") == 0) enabled_ = false, note_ = "recording turned off (KILN_CUDA_GRAPH=0)";
  else if (!enabled_) note_ = "recording turned off";
}

void CapturedStep::run(const std::function<void()>& step) {
  Backend* be = backend_for(device_);
  if (graph_ > 0) return be->replay(graph_);
  if (!enabled_ || calls_++ < warmup_) return step();
  enabled_ = false;  // one attempt
  std::string why;
  if (!be->begin_capture(why)) {
    note_ = why;
    return step();
  }
  try {
    step();
    graph_ = be->end_capture();
  } catch (const std::exception& e) {
    be->abort_capture();
    note_ = std::string("the step could not be recorded: ") + e.what();
    return step();
  }
  be->replay(graph_);
}

}  // namespace kiln::train
