// profile_json (engine/graph/layer_profile.h): a per-layer profile as kiln bench --profile writes it.
#include <nlohmann/json.hpp>

#include "engine/graph/layer_profile.h"

namespace kiln::graph {

std::string profile_json(const LayerProfile& p) {
  nlohmann::json layers = nlohmann::json::array();
  for (const LayerTime& l : p.layers) {
    layers.push_back({{"node", l.node},
                      {"name", l.name},
                      {"op", l.op},
                      {"forward_ms", l.forward_ms},
                      {"backward_ms", l.backward_ms},
                      {"total_ms", l.total_ms()},
                      {"share_percent", p.share_percent(l)},
                      {"has_backward", l.has_backward},
                      {"has_parameters", l.has_parameters},
                      {"output_bytes", l.output_bytes},
                      {"forward_alloc_bytes", l.forward_alloc_bytes ? nlohmann::json(*l.forward_alloc_bytes)
                                                                    : nlohmann::json(nullptr)}});
  }
  const nlohmann::json j = {
      {"device", p.device},
      {"name", p.name},
      {"precision", p.precision},
      {"batch_size", p.batch},
      {"steps", p.steps},
      {"interrupted", p.cancelled},
      {"step_ms", p.step_ms},
      {"profiled_step_ms", p.profiled_step_ms},
      {"layer_sum_ms", p.layer_sum_ms()},
      {"outside_ms", p.outside_ms},
      {"loss_forward_ms", p.loss_forward_ms},
      {"loss_backward_ms", p.loss_backward_ms},
      {"peak_memory_bytes", p.peak_bytes ? nlohmann::json(*p.peak_bytes) : nlohmann::json(nullptr)},
      {"layers", layers}};
  return j.dump(2) + "\n";
}

}  // namespace kiln::graph
