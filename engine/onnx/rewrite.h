// Load-time graph rewrites of the ONNX executor's IR (onnx::Model) for inference, in the style
// of onnxruntime's graph transformers (onnxruntime/core/optimizer/gelu_fusion.cc and friends):
// each pass is one small pattern -> replacement with its own test, reports whether it changed
// the graph, and OnnxPassRunner repeats its list until a round changes nothing.
//
// Why not graph::GraphPass (engine/graph/rewrite.h), the framework shared with quantization:
// that one rewrites graph::Graph, Kiln's module IR (NodeId-keyed typed nodes, parameters in
// initial_state, checked with graph::analyze()), while the executor runs onnx::Model directly
// (nodes of any ONNX op keyed by value names, initializers, subgraphs), and an ONNX file with ops
// graph::Graph has no node for still runs here. So the passes have GraphPass's interface
// (name(), apply() -> changed, a runner with a round limit, a log of changes and of candidates
// left alone) over onnx::Graph.
//
// A fused node has domain kFusedDomain ("kiln.fused") and runs as one engine kernel
// (ops_fused.cpp); its inputs and outputs are those of the pattern it replaces, so every
// value read elsewhere keeps its name. A pattern matches only when every intermediate value
// has exactly one reader (none in a subgraph, none a graph output) and its constants are
// scalars of the expected value (within 1e-6 relative, as onnxruntime's gelu_fusion.cc checks
// them): anything else is left unfused and runs as before.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/onnx/model.h"

namespace kiln::onnx {

inline constexpr const char* kFusedDomain = "kiln.fused";

struct OnnxRewriteContext {
  Graph& graph;                  // the main graph; rewritten in place
  std::vector<std::string> log;  // one line per change and per candidate left alone, with why
};

class OnnxPass {
 public:
  virtual ~OnnxPass() = default;
  virtual std::string name() const = 0;  // "FuseSiLU"
  // Applies the pass once over the main graph; returns whether it changed anything.
  virtual bool apply(OnnxRewriteContext& ctx) const = 0;
};

class OnnxPassRunner {
 public:
  OnnxPassRunner& add(std::unique_ptr<OnnxPass> pass);
  // Runs the passes in order, again while a round changed something, at most max_rounds
  // rounds (onnxruntime's GraphTransformerManager steps). Returns the log.
  std::vector<std::string> run(Graph& graph, int max_rounds = 4) const;

 private:
  std::vector<std::unique_ptr<OnnxPass>> passes_;
};

// The inference passes in their order: ShareQuantizeLinear (rewrite_qshare.cpp), FuseQdq (rewrite_qdq.cpp), FuseQLinear
// (rewrite_qlinear.cpp), FuseConvBatchNorm (rewrite_conv.cpp; before the activation fusion, so
// that a Conv -> BN -> Relu becomes one fused Conv), FuseGelu, FuseSiLU (rewrite_activations.cpp),
// FuseConvActivation (rewrite_conv.cpp), FuseAddQuantize (rewrite_qadd.cpp; after FuseQdq, which
// takes a QuantizeLinear into the layer before it), ConvOnFusedKernel (rewrite_conv.cpp; last, so
// that it takes only the Convs no other pass fused).
OnnxPassRunner inference_passes();
// Conv (FLOAT weight and bias initializers) -> BatchNormalization (inference form, constant
// parameters) -> one Conv with the BN folded into new weight and bias initializers
// (rewrite_conv.cpp says the arithmetic).
std::unique_ptr<OnnxPass> make_fuse_conv_batch_norm();
// A 2-d Conv -> A | Add(residual) [-> A] -> kiln.fused.Conv, one convolution with its epilogue,
// A = Relu | Clip(0, 6) | HardSwish | SiLU (after FuseSiLU) (rewrite_conv.cpp says the pattern;
// ops_fused.cpp the node).
std::unique_ptr<OnnxPass> make_fuse_conv_activation();
// Every other 2-d Conv the fused kernel takes -> kiln.fused.Conv without an epilogue, so that the
// activations stay channels last from one convolution to the next (rewrite_conv.cpp).
std::unique_ptr<OnnxPass> make_conv_on_fused_kernel();
// A QDQ model's DequantizeLinear -> Conv / Gemm (-> Relu) (-> QuantizeLinear) -> kiln.fused.QConv /
// QGemm on the int8 kernels, f32 out or, with the QuantizeLinear, u8 (rewrite_qdq.cpp says the pattern).
std::unique_ptr<OnnxPass> make_fuse_qdq();
// Two QuantizeLinear nodes of one value with the same scale and zero point -> the first alone
// (rewrite_qshare.cpp).
std::unique_ptr<OnnxPass> make_share_quantize_linear();
// Add(a, b) [-> Relu] -> QuantizeLinear, a residual sum going to int8 layers -> kiln.fused.AddQuantize,
// one pass (rewrite_qadd.cpp says the pattern; ops_fused_qadd.cpp the node).
std::unique_ptr<OnnxPass> make_fuse_add_quantize();
// A QOperator model's QLinearConv / QLinearMatMul with constant weights -> kiln.fused.QLinearConv /
// QLinearMatMul on the int8 kernels, u8 or s8 in and out (rewrite_qlinear.cpp says which).
std::unique_ptr<OnnxPass> make_fuse_qlinear();
std::unique_ptr<OnnxPass> make_fuse_silu();  // Mul(x, Sigmoid(x)) -> kiln.fused.SiLU(x)
// Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5) and its operand orders (torch.onnx's export of
// F.gelu, approximate "none") -> kiln.fused.Gelu(x).
std::unique_ptr<OnnxPass> make_fuse_gelu();

// ---- helpers the passes share ----

// How many nodes read each value name in g, those of its subgraphs (If/Loop/Scan bodies,
// which may read outer values) included; graph outputs count as readers too.
std::map<std::string, int> reader_counts(const Graph& g);
// The value of `name` when it is a one-element floating tensor: an initializer or the output
// of a Constant node of g (value / value_float). nullopt otherwise.
std::optional<double> scalar_constant(const Graph& g, const std::string& name);
// Whether a is b within 1e-6 relative.
bool near(double a, double b);
// Why QuantizeLinear node q of g cannot be taken into the node before it as its requantization
// (Note [Requantized output], rewrite_qdq.cpp): "" when its scale is one FLOAT initializer value,
// finite and > 0, and its zero point one UINT8 initializer value; else "has no one-value ..." .
std::string requantize_mismatch(const Graph& g, const Node& q);
// A Float attribute named `name`.
Attribute float_attr_of(const std::string& name, double v);

}  // namespace kiln::onnx
