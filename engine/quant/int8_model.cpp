#include "engine/quant/int8_model.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/graph/json.h"
#include "engine/graph/op_schema.h"
#include "engine/graph/passes.h"
#include "engine/io/safetensors.h"
#include "engine/nn/pooling.h"
#include "engine/core/qops.h"

namespace kiln::quant {

using graph::NodeId;
using nlohmann::json;

namespace {

constexpr const char* kFormatKey = "kiln.format";
constexpr const char* kGraphKey = "kiln.int8.graph";
constexpr const char* kLayersKey = "kiln.int8.layers";

bool quantizable(const graph::Node& n) { return n.op == "Conv2d" || n.op == "Linear"; }

}  // namespace

Conv2dParams conv2d_params(const graph::Node& n) {
  Conv2dParams p;
  if (n.op != "Conv2d") return p;
  for (int i = 0; i < 2; ++i) {
    p.stride[i] = graph::attr_ints(n.attrs, "stride").at(i);
    p.padding[i] = graph::attr_ints(n.attrs, "padding").at(i);
    p.dilation[i] = graph::attr_ints(n.attrs, "dilation").at(i);
  }
  p.groups = graph::attr_int(n.attrs, "groups");
  return p;
}

Int8Model::Int8Model(const graph::Graph& prepared, std::vector<std::shared_ptr<QuantizedLayer>> layers)
    : runner_(prepared), layers_(std::move(layers)) {
  const graph::Graph& g = runner_.graph();
  for (const auto& layer : layers_) {
    const graph::Node* n = g.find_by_name(layer->name());
    KILN_CHECK(n && quantizable(*n) && n->op == layer->op(), ValueError, "int8 model: layer '", layer->name(),
               "' is no ", layer->op(), " node of the graph");
    by_node_[n->id] = layer.get();
    if (!layer->relu()) continue;
    const auto readers = g.consumers_of({n->id, 0});
    KILN_CHECK(readers.size() == 1 && g.node(readers[0].node).op == "ReLU", ValueError, "int8 model: layer '",
               layer->name(), "' applies a ReLU, but its output is not read by one ReLU alone");
    fused_relu_[readers[0].node] = true;
  }
  // Note [u8 chain]: follow each int8 layer's output through single-reader pass-through nodes.
  for (const auto& [id, layer] : by_node_) {
    graph::PortRef cur{id, 0};
    while (true) {
      const auto readers = g.consumers_of(cur);
      if (readers.size() != 1) break;
      const graph::Node& r = g.node(readers[0].node);
      if (auto next = by_node_.find(r.id); next != by_node_.end()) {
        u8_next_[id] = next->second;
        break;
      }
      const bool fused = fused_relu_.count(r.id) && cur.node == id;
      if (!fused && r.op != "MaxPool2d" && r.op != "Flatten" && r.op != "Reshape") break;
      cur = {r.id, 0};
    }
  }
  for (NodeId id : g.topological_order()) {
    const graph::Node& n = g.node(id);
    if (auto it = by_node_.find(id); it != by_node_.end()) {
      for (const auto& layer : layers_)
        if (layer.get() == it->second) register_module(n.name, layer);
    } else if (auto m = runner_.module(id)) {
      register_module(n.name, m);
    }
  }
  eval();
}

Tensor Int8Model::forward(const Tensor& x) {
  const bool chain = u8_chain_ && int8_supported(x.device()) && u8_max_pool_supported(x.device());
  return runner_.run(x, [&](const graph::Node& n, const std::vector<Tensor>& in) -> std::optional<Tensor> {
    if (auto it = by_node_.find(n.id); it != by_node_.end()) {
      const auto next = chain ? u8_next_.find(n.id) : u8_next_.end();
      if (next == u8_next_.end()) return it->second->run(in.at(0), nullptr);
      const ActivationQParams out = next->second->input_qparams();
      return it->second->run(in.at(0), &out);
    }
    if (fused_relu_.count(n.id)) return in.at(0);  // its producer applied it
    if (in.at(0).dtype() == DType::u8 && n.op == "MaxPool2d") {  // a u8 chain's pool (Flatten, Reshape: any dtype)
      const auto* pool = dynamic_cast<const nn::MaxPool2d*>(runner_.module(n.id).get());
      KILN_CHECK(pool, ValueError, "int8 model: max pool '", n.name, "' has no MaxPool2d module");
      return quantized_max_pool2d(in.at(0), pool->params);
    }
    return std::nullopt;
  });
}

std::vector<std::string> Int8Model::u8_chained_layers() const {
  std::vector<std::string> names;
  for (graph::NodeId id : runner_.graph().topological_order())
    if (u8_next_.count(id)) names.push_back(runner_.graph().node(id).name);
  return names;
}

const QuantizedLayer* Int8Model::u8_next(const std::string& layer) const {
  const graph::Node* n = runner_.graph().find_by_name(layer);
  if (!n) return nullptr;
  const auto it = u8_next_.find(n->id);
  return it == u8_next_.end() ? nullptr : it->second;
}

int64_t Int8Model::weight_payload_bytes() const {
  int64_t n = 0;
  for (const auto& layer : layers_) n += layer->payload_bytes();
  for (const auto& [name, child] : named_children()) {
    if (dynamic_cast<const QuantizedLayer*>(child.get())) continue;
    for (const Tensor& p : child->parameters()) n += p.numel() * static_cast<int64_t>(dtype_size(p.dtype()));
  }
  return n;
}

std::vector<std::string> Int8Model::fallback_notes() const {
  std::vector<std::string> notes;
  for (const auto& layer : layers_)
    if (!layer->fallback_note().empty()) notes.push_back(layer->fallback_note());
  return notes;
}

void Int8Model::save(const std::string& path) const {
  graph::Graph g = runner_.graph();
  g.initial_state.clear();
  json layers = json::object();
  for (const auto& layer : layers_) layers[layer->name()] = {{"op", layer->op()}, {"relu", layer->relu()}};
  io::NamedTensors tensors;
  for (const auto& [key, t] : state_dict()) tensors.emplace_back(key, t);
  io::save_safetensors(path, tensors, {{kFormatKey, "int8"}, {kGraphKey, graph::to_json(g)}, {kLayersKey, layers.dump()}});
}

bool Int8Model::is_int8_file(const std::map<std::string, std::string>& metadata) {
  auto it = metadata.find(kFormatKey);
  return it != metadata.end() && it->second == "int8";
}

std::shared_ptr<Int8Model> Int8Model::load(const std::string& path) {
  const io::SafetensorsFile file = io::load_safetensors(path);
  KILN_CHECK(is_int8_file(file.metadata), ValueError, path, " is not an int8 model (no ", kFormatKey,
             " = int8 in its metadata; `kiln quantize` writes them)");
  KILN_CHECK(file.metadata.count(kGraphKey) && file.metadata.count(kLayersKey), ValueError, path, ": metadata lacks ",
             kGraphKey, " or ", kLayersKey);
  graph::Graph g;
  try {
    g = graph::from_json(file.metadata.at(kGraphKey));
  } catch (const Error& e) {
    throw ValueError(path + ": " + e.what());
  }
  std::map<std::string, Shape> shapes;
  for (const auto& [key, t] : file.tensors) shapes[key] = t.shape();
  std::vector<std::shared_ptr<QuantizedLayer>> layers;
  const json table = json::parse(file.metadata.at(kLayersKey), nullptr, false);
  KILN_CHECK(table.is_object(), ValueError, path, ": ", kLayersKey, " is not a JSON object");
  for (const auto& [name, entry] : table.items()) {
    const graph::Node* n = g.find_by_name(name);
    KILN_CHECK(n && entry.is_object() && entry.value("op", "") == n->op && entry.contains("relu") &&
                   entry["relu"].is_boolean(),
               ValueError, path, ": int8 layer '", name, "' does not match a node of its graph");
    KILN_CHECK(shapes.count(name + ".weight"), ValueError, path, ": int8 layer '", name, "' has no weight tensor");
    layers.push_back(std::make_shared<QuantizedLayer>(name, n->op, conv2d_params(*n), shapes.at(name + ".weight"),
                                                      shapes.count(name + ".bias") > 0, entry["relu"].get<bool>()));
  }
  auto model = std::make_shared<Int8Model>(g, std::move(layers));
  nn::StateDict state(file.tensors.begin(), file.tensors.end());
  try {
    model->load_state_dict(state, true);
  } catch (const Error& e) {
    throw ValueError(path + ": " + e.what());
  }
  return model;
}

Calibrator::Calibrator(const graph::Graph& trained, QuantizeOptions options)
    : options_(std::move(options)), ctx_(graph::inference_passes().run(trained)) {
  runner_ = std::make_unique<GraphRunner>(ctx_.graph);
  for (const std::string& name : options_.keep_float) {
    const graph::Node* n = ctx_.graph.find_by_name(name);
    KILN_CHECK(n && quantizable(*n), ValueError, "keep-float: '", name, "' is no Conv2d or Linear layer of the graph");
  }
  for (const graph::Node& n : ctx_.graph.nodes())
    if (quantizable(n)) observers_[n.id] = make_observer(n.name, options_.method);
}

void Calibrator::observe(const Tensor& x) {
  runner_->run(x, [&](const graph::Node& n, const std::vector<Tensor>& in) -> std::optional<Tensor> {
    if (auto it = observers_.find(n.id); it != observers_.end()) it->second->observe(in.at(0));
    return std::nullopt;
  });
  ++batches_;
}

std::vector<LayerReport> Calibrator::report() const {
  std::vector<LayerReport> out;
  for (const auto& [id, obs] : observers_) {
    const graph::Node& n = ctx_.graph.node(id);
    LayerReport r;
    r.name = n.name;
    r.op = n.op;
    r.int8 = std::find(options_.keep_float.begin(), options_.keep_float.end(), n.name) == options_.keep_float.end();
    r.input_range = obs->range();
    r.input = activation_qparams(r.input_range, n.name);
    if (const graph::Fusion* f = ctx_.fusion_of_producer(id); f && r.int8) r.fused_relu = ctx_.graph.node(f->activation).name;
    out.push_back(r);
  }
  return out;
}

std::shared_ptr<Int8Model> Calibrator::convert() const {
  KILN_CHECK(batches_ > 0, ValueError, "quantization: no calibration batches were observed (empty calibration set?)");
  std::vector<std::shared_ptr<QuantizedLayer>> layers;
  for (const LayerReport& r : report()) {
    if (!r.int8) continue;
    const auto w = ctx_.graph.initial_state.find(r.name + ".weight");
    KILN_CHECK(w != ctx_.graph.initial_state.end(), ValueError, "layer '", r.name,
               "': no trained weight in the graph's state");
    const graph::Node& n = *ctx_.graph.find_by_name(r.name);
    QuantizedWeight qw = quantize_weight(w->second, r.name);
    Tensor bias;
    if (graph::attr_bool(n.attrs, "bias")) {
      const auto b = ctx_.graph.initial_state.find(r.name + ".bias");
      KILN_CHECK(b != ctx_.graph.initial_state.end(), ValueError, "layer '", r.name,
                 "': no trained bias in the graph's state");
      bias = quantize_bias(b->second, r.input.scale, qw.scales, r.name);
    }
    layers.push_back(std::make_shared<QuantizedLayer>(r.name, n.op, conv2d_params(n), std::move(qw), bias, r.input,
                                                      !r.fused_relu.empty()));
  }
  return std::make_shared<Int8Model>(ctx_.graph, std::move(layers));
}

}  // namespace kiln::quant
