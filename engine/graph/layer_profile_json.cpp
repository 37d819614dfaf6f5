// profile_json (engine/graph/layer_profile.h): a per-layer profile as kiln bench --profile writes it.
#include <nlohmann/json.hpp>

#include "engine/core/error.h"
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

namespace {

// The value of `key` in `j` (an object), checked by `ok`; `where` names the object in errors.
const nlohmann::json& need(const nlohmann::json& j, const char* key, bool (nlohmann::json::*ok)() const noexcept,
                           const char* type, const std::string& where) {
  const auto it = j.find(key);
  if (it == j.end()) throw ValueError("per-layer profile: " + where + "has no \"" + key + "\"");
  if (!((*it).*ok)()) throw ValueError("per-layer profile: " + where + "\"" + key + "\" is not " + type);
  return *it;
}

double number(const nlohmann::json& j, const char* key, const std::string& where, bool required = false) {
  if (!required && !j.contains(key)) return 0;
  return need(j, key, &nlohmann::json::is_number, "a number", where).get<double>();
}

bool flag(const nlohmann::json& j, const char* key, const std::string& where) {
  return j.contains(key) && need(j, key, &nlohmann::json::is_boolean, "true or false", where).get<bool>();
}

}  // namespace

LayerProfile profile_from_json(const std::string& json) {
  const nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (!j.is_object()) throw ValueError("per-layer profile: not a JSON object");
  const std::string top;
  LayerProfile p;
  p.device = need(j, "device", &nlohmann::json::is_string, "a string", top).get<std::string>();
  p.precision = need(j, "precision", &nlohmann::json::is_string, "a string", top).get<std::string>();
  if (j.contains("name")) p.name = need(j, "name", &nlohmann::json::is_string, "a string", top).get<std::string>();
  p.batch = need(j, "batch_size", &nlohmann::json::is_number_integer, "an integer", top).get<int64_t>();
  p.steps = need(j, "steps", &nlohmann::json::is_number_integer, "an integer", top).get<int>();
  p.cancelled = flag(j, "interrupted", top);
  p.step_ms = number(j, "step_ms", top);
  p.profiled_step_ms = number(j, "profiled_step_ms", top);
  p.outside_ms = number(j, "outside_ms", top);
  p.loss_forward_ms = number(j, "loss_forward_ms", top);
  p.loss_backward_ms = number(j, "loss_backward_ms", top);
  if (j.contains("peak_memory_bytes") && !j["peak_memory_bytes"].is_null())
    p.peak_bytes = need(j, "peak_memory_bytes", &nlohmann::json::is_number_unsigned, "a byte count", top).get<uint64_t>();
  const nlohmann::json& layers = need(j, "layers", &nlohmann::json::is_array, "an array", top);
  for (size_t i = 0; i < layers.size(); ++i) {
    const nlohmann::json& l = layers[i];
    const std::string where = "layer " + std::to_string(i) + ": ";
    if (!l.is_object()) throw ValueError("per-layer profile: " + where + "not a JSON object");
    LayerTime t;
    if (l.contains("node")) t.node = need(l, "node", &nlohmann::json::is_number_integer, "an integer", where).get<NodeId>();
    t.name = need(l, "name", &nlohmann::json::is_string, "a string", where).get<std::string>();
    t.op = need(l, "op", &nlohmann::json::is_string, "a string", where).get<std::string>();
    t.forward_ms = number(l, "forward_ms", where, true);
    t.backward_ms = number(l, "backward_ms", where, true);
    t.has_backward = flag(l, "has_backward", where);
    t.has_parameters = flag(l, "has_parameters", where);
    if (l.contains("output_bytes"))
      t.output_bytes = need(l, "output_bytes", &nlohmann::json::is_number_unsigned, "a byte count", where).get<uint64_t>();
    if (l.contains("forward_alloc_bytes") && !l["forward_alloc_bytes"].is_null())
      t.forward_alloc_bytes =
          need(l, "forward_alloc_bytes", &nlohmann::json::is_number_integer, "an integer", where).get<int64_t>();
    p.layers.push_back(std::move(t));
  }
  return p;
}

}  // namespace kiln::graph
