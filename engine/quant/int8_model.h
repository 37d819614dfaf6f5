// Post-training quantization (PTQ) of a trained graph, and the int8 model it makes.
//
//   Calibrator cal(graph_with_trained_state, {.method = Calibration::entropy});
//   for (batch : calibration batches) cal.observe(batch.x);
//   std::shared_ptr<Int8Model> m = cal.convert();
//   m->save("out/model.safetensors");  ...  Int8Model::load("out/model.safetensors")
//
// Preparation runs the inference passes (graph/passes.h: batch norm folded, Conv2d/Linear +
// ReLU fused). Calibration runs the prepared float graph and observes the input of every Conv2d
// and Linear (observer.h). Conversion quantizes those layers (scheme.h: u8 per-tensor input, s8
// per-channel weight, s32 bias) into QuantizedLayer, which runs on the device's int8 kernels; a
// fused ReLU becomes the kernel's post-op. Every other node runs in float as in GraphModule, and
// so do the layers named in keep_float.
// Note [u8 chain]: where an int8 layer's output (after its fused ReLU) reaches the next int8
// layer only through MaxPool2d, Flatten and Reshape nodes that have no other reader, the first
// layer's kernel requantizes its output straight to u8 with the next layer's input parameters,
// the max pool runs on u8 and the next layer takes the u8 tensor as it is: no f32 round trip.
// Quantization is monotonic, so max pooling commutes with it, and it saturates the same way, so
// this is the round trip's arithmetic with one rounding fewer: outputs agree within one
// quantization step of each u8 tensor (QuantInt8Chain.* checks it). Elsewhere (a layer whose
// output has other readers, another op in between, a device without u8 kernels) the layer
// returns f32 and the next quantizes its input, as set_u8_chain(false) does everywhere.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/graph/rewrite.h"
#include "engine/quant/graph_runner.h"
#include "engine/quant/observer.h"
#include "engine/quant/quantized_layer.h"

namespace kiln::quant {

struct QuantizeOptions {
  Calibration method = Calibration::minmax;
  std::vector<std::string> keep_float;  // names of Conv2d/Linear nodes to keep in float
};

// A Conv2d node's stride, padding, dilation and groups (the defaults for any other node).
Conv2dParams conv2d_params(const graph::Node& n);

// What conversion did with one Conv2d or Linear.
struct LayerReport {
  std::string name, op;
  bool int8 = false;          // false: kept in float
  Range input_range;          // calibrated range of its input
  ActivationQParams input;    // its u8 input parameters (int8 layers)
  std::string fused_relu;     // the ReLU node run as the kernel's post-op, "" when none
};

class Int8Model : public nn::Module {
 public:
  // The prepared graph (its initial_state: the float parameters of the nodes that run in float),
  // and the int8 layers by node name. ValueError when a layer names no Conv2d/Linear node.
  Int8Model(const graph::Graph& prepared, std::vector<std::shared_ptr<QuantizedLayer>> layers);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Int8Model"; }
  const graph::Graph& graph() const { return runner_.graph(); }
  const std::vector<std::shared_ptr<QuantizedLayer>>& layers() const { return layers_; }
  // Note [u8 chain]: on (the default) or off (f32 between all layers; the reference it is tested
  // against, and the bench's "before").
  void set_u8_chain(bool on) { u8_chain_ = on; }
  // Names of the int8 layers whose output stays u8 (Note [u8 chain]), in graph order.
  std::vector<std::string> u8_chained_layers() const;
  // The int8 layer that int8 layer `layer`'s u8 output feeds (Note [u8 chain]), null when none.
  const QuantizedLayer* u8_next(const std::string& layer) const;
  // Bytes of the weight tensors: int8 layers' payload_bytes() plus the float parameters of the
  // float-run nodes (f32 weights, biases; not headers).
  int64_t weight_payload_bytes() const;
  // Notes of layers that ran in float on a device without int8 kernels (empty on the CPU).
  std::vector<std::string> fallback_notes() const;
  // Writes a safetensors file: every state tensor (int8 weights, scales, float parameters) and
  // metadata "kiln.format" = "int8", "kiln.int8.graph" (the prepared graph's JSON without state) and
  // "kiln.int8.layers" (JSON: name -> {op, relu}). IoError when it cannot be written.
  void save(const std::string& path) const;
  // Reads what save() wrote. IoError / ValueError naming the path for another file (no
  // "kiln.format" int8), a malformed graph or layer table, or tensors of the wrong shape.
  static std::shared_ptr<Int8Model> load(const std::string& path);
  // Whether a safetensors file's metadata marks an int8 model.
  static bool is_int8_file(const std::map<std::string, std::string>& metadata);

 private:
  GraphRunner runner_;
  std::vector<std::shared_ptr<QuantizedLayer>> layers_;
  std::map<graph::NodeId, QuantizedLayer*> by_node_;
  std::map<graph::NodeId, bool> fused_relu_;  // ReLU nodes whose producer applies them
  std::map<graph::NodeId, QuantizedLayer*> u8_next_;  // int8 layer -> the int8 layer its u8 output feeds
  bool u8_chain_ = true;
};

class Calibrator {
 public:
  // `trained`: a graph whose initial_state holds its trained parameters (graph::store_state).
  // Errors of the passes and of GraphRunner; ValueError naming a keep_float entry that is no
  // Conv2d/Linear node.
  Calibrator(const graph::Graph& trained, QuantizeOptions options);
  // One calibration batch x (the Input's type, on the CPU). An observer's ValueError names the
  // layer (NaN activations).
  void observe(const Tensor& x);
  int64_t batches() const { return batches_; }
  // The int8 model. ValueError "no calibration batches ..." when none was observed.
  std::shared_ptr<Int8Model> convert() const;
  // One entry per Conv2d/Linear in graph order (after convert()'s checks; valid any time after
  // at least one batch).
  std::vector<LayerReport> report() const;
  const graph::RewriteContext& prepared() const { return ctx_; }

 private:
  QuantizeOptions options_;
  graph::RewriteContext ctx_;
  std::unique_ptr<GraphRunner> runner_;
  std::map<graph::NodeId, std::unique_ptr<Observer>> observers_;  // Conv2d/Linear inputs
  int64_t batches_ = 0;
};

}  // namespace kiln::quant
