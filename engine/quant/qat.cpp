#include "engine/quant/qat.h"

#include <algorithm>
#include <cmath>

#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/graph/passes.h"
#include "engine/nn/conv.h"
#include "engine/nn/linear.h"

namespace kiln::quant {

using graph::NodeId;

namespace {

bool quantizable(const graph::Node& n) { return n.op == "Conv2d" || n.op == "Linear"; }

bool kept_float(const QatOptions& o, const std::string& name) {
  return std::find(o.keep_float.begin(), o.keep_float.end(), name) != o.keep_float.end();
}

// w fake-quantized per output channel with `scales` (s8 symmetric, zero point 0), with autograd.
Tensor fake_quantized_weight(const Tensor& w, const std::vector<float>& scales) {
  const auto c = static_cast<int64_t>(scales.size());
  return fake_quantize_per_channel_affine(w, Tensor::from_vector(scales, {c}, w.device()),
                                          Tensor::zeros({c}, DType::i32, w.device()), 0, -kWeightQMax, kWeightQMax);
}

// A layer's weight and bias parameters (the Conv2d or Linear module GraphRunner built).
std::pair<Tensor, Tensor> layer_parameters(const nn::Module* m, const graph::Node& n) {
  if (const auto* conv = dynamic_cast<const nn::Conv2d*>(m)) return {conv->weight, conv->bias};
  if (const auto* lin = dynamic_cast<const nn::Linear*>(m)) return {lin->weight, lin->bias};
  throw ValueError("quantization-aware training: layer '" + n.name + "' (" + n.op + ") has no Conv2d/Linear module");
}

}  // namespace

QatModel::QatModel(const graph::Graph& trained, QatOptions options)
    : options_(std::move(options)), ctx_(graph::inference_passes().run(trained)), runner_(ctx_.graph) {
  const graph::Graph& g = ctx_.graph;
  for (const std::string& name : options_.keep_float) {
    const graph::Node* n = g.find_by_name(name);
    KILN_CHECK(n && quantizable(*n), ValueError, "keep-float: '", name, "' is no Conv2d or Linear layer of the graph");
  }
  for (NodeId id : g.topological_order()) {
    const graph::Node& n = g.node(id);
    if (quantizable(n) && !kept_float(options_, n.name))
      observers_[id] = std::make_unique<MovingAverageMinMaxObserver>(n.name, options_.averaging_constant);
    if (auto m = runner_.module(id)) register_module(n.name, m);
  }
  train();
}

bool QatModel::observers_frozen() const {
  return frozen_ || (options_.observer_batches > 0 && training_batches_ >= options_.observer_batches);
}

Tensor QatModel::forward(const Tensor& x) {
  const bool observe = is_training() && !observers_frozen();
  Tensor y = runner_.run(
      x,
      [&](const graph::Node& n, const std::vector<Tensor>& in) -> std::optional<Tensor> {
        const auto obs = observers_.find(n.id);
        if (obs == observers_.end()) return std::nullopt;
        if (observe) obs->second->observe(in.at(0).detach());
        const ActivationQParams p = activation_qparams(obs->second->range(), n.name);
        const Tensor xq = fake_quantize_per_tensor_affine(in.at(0), p.scale, p.zero_point, kActivationQMin,
                                                          kActivationQMax);
        const auto [w, b] = layer_parameters(runner_.module(n.id).get(), n);
        const Tensor wq = fake_quantized_weight(w, weight_scales(w.detach(), n.name));
        return n.op == "Conv2d" ? conv2d(xq, wq, b, conv2d_params(n)) : linear(xq, wq, b);
      },
      /*grad=*/true);
  if (is_training()) ++training_batches_;
  return y;
}

std::vector<LayerReport> QatModel::report() const {
  std::vector<LayerReport> out;
  for (NodeId id : ctx_.graph.topological_order()) {
    const graph::Node& n = ctx_.graph.node(id);
    if (!quantizable(n)) continue;
    LayerReport r;
    r.name = n.name;
    r.op = n.op;
    const auto obs = observers_.find(id);
    r.int8 = obs != observers_.end();
    if (r.int8) {
      r.input_range = obs->second->range();
      r.input = activation_qparams(r.input_range, n.name);
      if (const graph::Fusion* f = ctx_.fusion_of_producer(id)) r.fused_relu = ctx_.graph.node(f->activation).name;
    }
    out.push_back(r);
  }
  return out;
}

std::shared_ptr<Int8Model> QatModel::convert() const {
  KILN_CHECK(training_batches_ > 0, ValueError,
             "quantization-aware training: no training batch was observed (empty training set, or 0 epochs?)");
  graph::Graph g = ctx_.graph;
  graph::store_state(g, state_dict());
  std::vector<std::shared_ptr<QuantizedLayer>> layers;
  for (const LayerReport& r : report()) {
    if (!r.int8) continue;
    const graph::Node& n = *g.find_by_name(r.name);
    const auto [w, b] = layer_parameters(runner_.module(n.id).get(), n);
    // The weight the last forward used, fake-quantized; its values are scale[c] * q exactly.
    QuantizedWeight qw;
    qw.scales = weight_scales(w.detach(), r.name);
    const std::vector<float> fq = fake_quantized_weight(w.detach(), qw.scales).to_vector<float>();
    const int64_t per = w.numel() / w.size(0);
    std::vector<int8_t> q(fq.size());
    for (size_t i = 0; i < fq.size(); ++i)
      q[i] = static_cast<int8_t>(std::clamp<float>(std::nearbyint(fq[i] / qw.scales[i / static_cast<size_t>(per)]),
                                                   -kWeightQMax, kWeightQMax));
    qw.q = Tensor::from_vector(q, w.shape());
    const Tensor bias = b.defined() ? quantize_bias(b.detach(), r.input.scale, qw.scales, r.name) : Tensor();
    layers.push_back(std::make_shared<QuantizedLayer>(r.name, n.op, conv2d_params(n), std::move(qw), bias, r.input,
                                                      !r.fused_relu.empty()));
  }
  return std::make_shared<Int8Model>(g, std::move(layers));
}

}  // namespace kiln::quant
