// Quantization-aware training (QAT) of a trained graph, converted to the int8 model that
// post-training quantization makes (int8_model.h: the same layers, file format and QDQ export).
//
//   QatModel qat(graph_with_trained_state, {});
//   Trainer(qat, make_optimizer(..., qat.parameters()), ...).fit(train_loader, nullptr);
//   std::shared_ptr<Int8Model> m = qat.convert();
//
// Note [QAT]: the model is prepared as for PTQ (graph/passes.h: batch norm folded into the
// convolution before it, Conv2d/Linear + ReLU fusions marked) and every other node runs as in
// GraphModule, in training mode while training. Each Conv2d / Linear that becomes int8 computes
//   layer(fake_quantize_per_tensor_affine(x, s_x, zp_x, 0, 255),
//         fake_quantize_per_channel_affine(W, s_W, 0, axis 0, -127, 127), b)
// (ops.h; the straight-through gradient), the int8 model's arithmetic in float:
//   activations  u8 per tensor (scheme.h activation_qparams) from a MovingAverageMinMaxObserver
//                (observer.h; averaging constant 0.01 and the first batch sets the range, as
//                torch.ao.quantization's default QAT qconfig) updated by every training-mode
//                forward until freeze_observers() or QatOptions::observer_batches; eval-mode
//                forwards use the range as it is. (PyTorch's FakeQuantize observes in eval mode
//                too, until disable_observer; here evaluating never moves the ranges.)
//   weights      s8 symmetric per output channel, scale = max|W[c]| / 127 of the weight of this
//                step (scheme.h weight_scales), so convert() stores the weight the last forward
//                used: its q is round(fake_quantized W / scale), exact integers.
//   bias         float while training (as PyTorch's QAT modules); convert() makes it s32 at
//                input scale x weight scale (scheme.h quantize_bias).
// Batch norm is folded before training rather than kept with batch statistics and folded at
// conversion (PyTorch's ConvBn2d QAT modules): the weights that are fake-quantized while
// training are then exactly those that convert() stores, and a QAT run here is a short
// fine-tune (1-2 epochs at a small learning rate) from a converged model, where PyTorch's own
// recipe freezes the batch-norm statistics early anyway (freeze_bn_stats).
// The converted model's outputs equal the fake-quantized model's in eval mode up to float
// rounding: the int8 kernels accumulate exactly in s32 where the float layer rounds, the bias is
// rounded to s32, and Note [u8 chain] rounds once fewer; a value that sits on a rounding
// boundary of the next layer's input can move one quantization step (QuantQat.* bounds it).
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/graph/rewrite.h"
#include "engine/quant/graph_runner.h"
#include "engine/quant/int8_model.h"
#include "engine/quant/observer.h"

namespace kiln::quant {

struct QatOptions {
  std::vector<std::string> keep_float;  // names of Conv2d/Linear nodes to keep (and train) in float
  double averaging_constant = 0.01;     // of the activation observers (torch's default)
  int64_t observer_batches = 0;         // freeze the observers after this many training batches (0: never)
};

class QatModel : public nn::Module {
 public:
  // `trained`: a graph whose initial_state holds its trained parameters (graph::store_state).
  // Errors of the passes and of GraphRunner; ValueError naming a keep_float entry that is no
  // Conv2d/Linear node, or an averaging constant outside (0, 1].
  QatModel(const graph::Graph& trained, QatOptions options);
  // x (the Input's type, on the CPU) -> the Output's tensor, with autograd. In training mode the
  // observers see each int8 layer's input first (ValueError naming the layer for NaN/Inf). In
  // eval mode before any training batch: ValueError "layer '...': no calibration data observed".
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "QatModel"; }
  void freeze_observers(bool on = true) { frozen_ = on; }
  bool observers_frozen() const;
  int64_t training_batches() const { return training_batches_; }
  // The int8 model (the prepared graph with the trained float parameters, int8 layers as above).
  // ValueError "quantization-aware training: no training batch was observed" before any.
  std::shared_ptr<Int8Model> convert() const;
  // One entry per Conv2d/Linear in graph order (valid after at least one training batch).
  std::vector<LayerReport> report() const;
  const graph::RewriteContext& prepared() const { return ctx_; }

 private:
  QatOptions options_;
  graph::RewriteContext ctx_;
  GraphRunner runner_;
  std::map<graph::NodeId, std::unique_ptr<Observer>> observers_;  // int8 layers' inputs
  bool frozen_ = false;
  int64_t training_batches_ = 0;
};

}  // namespace kiln::quant
