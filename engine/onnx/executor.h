// Runs an ONNX model eagerly, node by node, with kiln::Tensor ops on one device.
// Shapes may change from run to run (dynamic dimensions are resolved when the inputs
// arrive). Ops of the ai.onnx domain are implemented in ops_*.cpp (see op_context.h).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/core/error.h"
#include "engine/onnx/model.h"
#include "engine/onnx/op_context.h"

namespace kiln::onnx {

struct HostPlan;  // host_values.h

// A node Kiln cannot run, with why (unknown op type, unsupported domain).
struct UnsupportedOp {
  std::string op_type, node, domain;
  int64_t opset = 0;
  std::string str() const;  // "TfIdfVectorizer (node 'tfidf', opset 17)"
};
// Every unsupported node of the model, subgraphs included, in graph order.
std::vector<UnsupportedOp> find_unsupported(const Model& model);

// Thrown by Session when the model holds ops Kiln cannot run; what() lists them all.
struct UnsupportedError : ValueError {
  std::vector<UnsupportedOp> ops;
  UnsupportedError(const std::string& what, std::vector<UnsupportedOp> o) : ValueError(what), ops(std::move(o)) {}
};

struct SessionOptions {
  // Per-node CPU fallback (what onnxruntime does for ops an execution provider lacks), on a
  // device other than the CPU. Backend::supports() answers per engine op (down to which unary,
  // binary or reduce op) and dtype while a node is several engine ops, so the node runs on the
  // device first; when a backend refuses an op or dtype there (the DTypeError the front end's
  // supports() check throws: "sub: f64 is not supported on vulkan:0"), or an input is of a
  // dtype the device cannot even hold (supports(OpId::copy) false: such values stay on the
  // host), the node runs on the CPU instead: its inputs copied to the host, its outputs
  // copied back (those the device cannot hold stay on the host). Nodes
  // with subgraphs (If, Loop, Scan) stay on the device; the nodes of their bodies fall back one
  // by one. A node that ran on the CPU once goes there directly in the session's later runs.
  // When the CPU run fails too, its error is the node's error. false: the device's
  // error is the node's error (the device's own coverage). No effect on the CPU.
  bool cpu_fallback = true;
  // Record a run as a CUDA graph and replay it (executor_graph.h), on a device whose backend can
  // record: each set of input shapes runs plainly once, its second run is recorded, later runs
  // replay. A run that cannot be recorded (it reads the device back: data-dependent shapes, a
  // CPU fallback) stays eager for that shape set; Session::cuda_graph_note() says which. Also off
  // with KILN_CUDA_GRAPH=0. Outputs equal the eager run's. No effect on the CPU.
  bool cuda_graph = true;
  // Load-time graph rewrites for inference, on the CPU only: shape-only subgraphs folded into
  // constants (fold.h; when every input dimension is fixed), then the fusions of rewrite.h (activation chains PyTorch exports, such
  // as x * sigmoid(x) and the erf form of GELU, run as one kernel each). Off
  // by default: the executor's other users (graph import, folding, the ONNX test suite) observe
  // or test the nodes as written. `kiln run` turns it on. Outputs match the unfused graph
  // within float rounding (the fused kernels evaluate the same formula in one pass). Also the
  // Conv weights become the session's own read-only copies, which the CPU backend keeps in
  // oneDNN's blocked layout between runs (engine/core/read_only.h) instead of reordering them
  // in every run.
  bool optimize = false;
};

// The nodes of a session that ran on the CPU instead of its device (SessionOptions::cpu_fallback).
struct FallbackStats {
  int64_t nodes = 0;                           // distinct nodes (one in a Loop body counts once)
  std::map<std::string, int64_t> op_types;     // op type ("Pow", "ai.onnx.ml.X") -> its nodes among them
  std::map<std::string, std::string> reasons;  // op type -> why its first node left the device
  bool empty() const { return nodes == 0; }
  // "3 nodes (2 Pow, 1 Mod)": most frequent op type first.
  std::string str() const;
  void merge(const FallbackStats& other);  // adds other's counts (the suite totals its cases)
};

namespace detail {
struct FallbackLog;    // executor.cpp: the stats, the nodes counted, a mutex
class CapturedRuns;    // executor_graph.h: recorded runs per input shape set
}

class Session {
 public:
  // Checks the model before anything runs: every op supported (UnsupportedError listing all
  // of them), every node input produced by a graph input, an initializer or an earlier node
  // (ValueError naming the node and the missing value, e.g. a missing initializer). Moves the
  // initializers to `device` (DeviceError naming the device when it is unknown).
  explicit Session(Model model, Device device = {}, SessionOptions options = {});

  // Feeds the graph inputs by name and returns the graph outputs in the model's order.
  // ValueError when a name is not a graph input or an input is missing; errors of an op
  // name the node ("node 'conv1' (Conv): ...").
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs) const;
  // The same, calling `observer` after each node of the main graph with its inputs
  // (undefined for omitted ones) and outputs (graph_import.cpp records types this way).
  using NodeObserver = std::function<void(const Node&, const std::vector<Tensor>&, const std::vector<Tensor>&)>;
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs, const NodeObserver& observer) const;
  // Inputs and outputs that may be sequences (ONNX seq(tensor)); run() refuses sequence outputs.
  std::vector<Value> run_values(const std::map<std::string, Value>& inputs, const NodeObserver& observer = {}) const;

  // The nodes that ran on the CPU instead of the device, over all runs of this session so far
  // (empty on the CPU and with cpu_fallback off). Safe to call while another thread runs.
  FallbackStats fallback_stats() const;
  // Whether runs replay a recording (SessionOptions::cuda_graph): "replaying 1 input shape
  // set", or why they run eagerly ("" on the CPU).
  std::string cuda_graph_note() const;

  // What the load-time rewrites did (SessionOptions::optimize): one line per fusion and per
  // candidate left unfused with why; empty when optimize is off or nothing matched.
  const std::vector<std::string>& rewrite_log() const { return rewrite_log_; }

  const Model& model() const { return model_; }
  std::vector<std::string> input_names() const;
  std::vector<std::string> output_names() const;

 private:
  Model model_;
  Device device_;
  SessionOptions options_;
  std::shared_ptr<detail::FallbackLog> fallback_;
  std::shared_ptr<const HostPlan> host_plan_;  // shape arithmetic on the host (host_values.h); null on the CPU
  std::shared_ptr<detail::CapturedRuns> captured_;  // null on the CPU
  std::vector<std::string> rewrite_log_;
  std::set<std::string> packed_;  // initializers marked read-only (optimize on the CPU)
};

}  // namespace kiln::onnx
