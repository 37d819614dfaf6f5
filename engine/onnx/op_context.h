// What an ONNX op implementation sees: the node, its inputs as kiln::Tensor, typed
// attribute access with the node named in every error, and the opset in force.
// Each ops_*.cpp file registers its ops into an OpTable (op type -> function); ops run
// on the inputs' device with engine ops (engine/core/ops.h), or, where named
// `host_*`, on the host (clearly marked fallbacks for ops the engine lacks).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/onnx/model.h"
#include "engine/onnx/tensor_proto.h"

namespace kiln::onnx {

// A value flowing between ONNX nodes: a tensor, a string tensor, or a sequence of tensors
// (ONNX's seq(tensor) type, made by SequenceConstruct, SplitToSequence ...).
struct Value {
  Tensor tensor;
  std::shared_ptr<const std::vector<Tensor>> sequence;  // set for a sequence (may be empty)
  std::shared_ptr<const StringTensor> strings;          // set for a STRING tensor
  bool optional = false;  // an ONNX optional: empty when it holds neither a tensor nor a sequence
  Value() = default;
  Value(Tensor t) : tensor(std::move(t)) {}  // NOLINT: a tensor is a value
  static Value of_sequence(std::vector<Tensor> items) {
    Value v;
    v.sequence = std::make_shared<const std::vector<Tensor>>(std::move(items));
    return v;
  }
  static Value of_strings(StringTensor s) {
    Value v;
    v.strings = std::make_shared<const StringTensor>(std::move(s));
    return v;
  }
  static Value empty_optional() {
    Value v;
    v.optional = true;
    return v;
  }
  bool is_sequence() const { return sequence != nullptr; }
  bool is_strings() const { return strings != nullptr; }
  bool has_element() const { return tensor.defined() || sequence || strings; }
  bool defined() const { return has_element() || optional; }
};

// Device copies of host values (host_values.h) for a run that is recorded for replay (a CUDA
// graph, executor_graph.h): recording cannot upload (the replay would read host memory long
// gone), so a plain run first keeps each copy it makes (record), and the recorded run takes
// them from here (serve), after checking that the host value is the same bytes; shape values
// are, for the same input shapes. DeviceError when a served value is missing or differs.
class HostCopies {
 public:
  enum class Mode { off, record, serve };
  Mode mode = Mode::off;
  // `host` (a host tensor, input `input` of `node`) on `device`.
  Tensor to_device(const Node& node, size_t input, const Tensor& host, Device device);

 private:
  struct Copy {
    Tensor host, device;
  };
  std::map<std::pair<const Node*, size_t>, Copy> copies_;
};

class OpContext;
using OpFn = std::function<std::vector<Tensor>(OpContext&)>;
// Ops that take or give sequences or string tensors.
using SequenceOpFn = std::function<std::vector<Value>(OpContext&)>;
// Runs a subgraph (If/Loop/Scan bodies) with the given values bound to its inputs, in
// order; outer-scope names resolve through the calling graph. Returns its outputs.
using SubgraphRunner = std::function<std::vector<Value>(const Graph&, const std::vector<Value>&)>;

class OpContext {
 public:
  OpContext(const Node& node, int64_t opset, std::vector<Tensor> inputs, Device device, SubgraphRunner runner)
      : node_(node), opset_(opset), inputs_(std::move(inputs)), device_(device), runner_(std::move(runner)) {
    values_.assign(inputs_.begin(), inputs_.end());
  }
  OpContext(const Node& node, int64_t opset, std::vector<Value> values, Device device, SubgraphRunner runner)
      : node_(node), opset_(opset), device_(device), runner_(std::move(runner)), values_(std::move(values)) {
    for (const Value& v : values_) inputs_.push_back(v.tensor);
  }

  const Node& node() const { return node_; }
  int64_t opset() const { return opset_; }  // of the node's domain
  Device device() const { return device_; }
  // "node 'conv1' (Conv)" — the prefix of every error this op reports.
  std::string where() const { return "node '" + node_.name + "' (" + node_.op_type + ")"; }
  [[noreturn]] void fail(const std::string& message) const;  // ValueError(where() + ": " + message)

  // Inputs may lie on the host while the node runs on a device: shape values and small integer
  // constants (host_values.h). input(), optional_input() and inputs() give them on device()
  // (copied once, which does not wait for the device); ints_input() and scalar_input() read
  // them where they are.
  size_t num_inputs() const { return inputs_.size(); }
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i].defined(); }
  const Tensor& input(size_t i) const;   // ValueError when absent
  Tensor optional_input(size_t i) const;  // undefined when absent
  const std::vector<Tensor>& inputs() const;
  // Input i where it lies (the host for shape values and small integer constants), uncopied.
  const Tensor& input_as_given(size_t i) const { return given(i); }
  // Where host inputs get their device copies (a recorded run); null: copied each time.
  void set_host_copies(HostCopies* copies) { host_copies_ = copies; }
  // Sequence inputs (ValueError naming the node when input i is not a sequence).
  bool has_value(size_t i) const { return i < values_.size() && values_[i].defined(); }
  bool is_sequence(size_t i) const { return i < values_.size() && values_[i].is_sequence(); }
  const std::vector<Tensor>& sequence_input(size_t i) const;
  // STRING tensor inputs (ValueError naming the node when input i is not one).
  bool is_strings(size_t i) const { return i < values_.size() && values_[i].is_strings(); }
  const StringTensor& strings_input(size_t i) const;
  const std::vector<Value>& values() const { return values_; }
  // A 1-d (or 0-d) integer input read to the host (shapes, axes, pads ...).
  std::vector<int64_t> ints_input(size_t i) const;
  double scalar_input(size_t i) const;  // a one-element input

  bool has_attr(const std::string& name) const { return node_.attributes.count(name) > 0; }
  // Typed attribute access; ValueError naming the node when the type differs or (for the
  // overloads without a default) the attribute is absent.
  int64_t attr_int(const std::string& name) const;
  int64_t attr_int(const std::string& name, int64_t def) const;
  double attr_float(const std::string& name, double def) const;
  std::string attr_string(const std::string& name, const std::string& def) const;
  std::vector<int64_t> attr_ints(const std::string& name, std::vector<int64_t> def = {}) const;
  std::vector<double> attr_floats(const std::string& name, std::vector<double> def = {}) const;
  std::vector<std::string> attr_strings(const std::string& name) const;
  const Tensor& attr_tensor(const std::string& name) const;
  const Graph& attr_graph(const std::string& name) const;
  std::vector<Value> run_subgraph(const Graph& g, const std::vector<Value>& inputs) const { return runner_(g, inputs); }

 private:
  const Attribute& attr(const std::string& name, Attribute::Type type) const;
  const Tensor& given(size_t i) const;      // input i as given (checked: a tensor, present)
  const Tensor& on_device(size_t i) const;  // input i on device_ (a host tensor copied once)
  const Node& node_;
  int64_t opset_;
  std::vector<Tensor> inputs_;
  mutable std::vector<Tensor> placed_;  // inputs_ on device_, filled as asked for
  HostCopies* host_copies_ = nullptr;
  Device device_;
  SubgraphRunner runner_;
  std::vector<Value> values_;
};

using OpTable = std::map<std::string, OpFn>;
// All ops of the ai.onnx domain that Kiln runs (built once from the register_* below).
const OpTable& onnx_ops();
using SequenceOpTable = std::map<std::string, SequenceOpFn>;
const SequenceOpTable& sequence_ops();  // ops_control.cpp (+ register_string_ops)
void register_math_ops(OpTable& t);       // ops_math.cpp: elementwise, activations, logic
void register_shape_ops(OpTable& t);      // ops_shape.cpp: reshape, slice, gather, pad ...
void register_nn_ops(OpTable& t);         // ops_nn.cpp: conv, pooling, normalization
void register_reduce_ops(OpTable& t);     // ops_reduce.cpp: reductions, softmax, argmax, losses
void register_host_ops(OpTable& t);       // ops_host.cpp: host fallbacks (TopK, Resize, NMS ...)
void register_resize_ops(OpTable& t);     // ops_resize.cpp: Resize, Upsample
void register_quant_ops(OpTable& t);      // ops_quant.cpp: quantization, window functions
void register_rnn_ops(OpTable& t);        // ops_rnn.cpp: RNN, GRU, LSTM
void register_spectral_ops(OpTable& t);   // ops_spectral.cpp: DFT, STFT
void register_text_ops(OpTable& t);       // ops_text.cpp: TfIdfVectorizer
void register_extra_ops(OpTable& t);      // ops_extra.cpp: Unique, Det, GridSample, training optimizers ...
void register_qlinear_fused_ops(OpTable& t);  // ops_fused_qlinear.cpp: kiln.fused.QLinearConv / QLinearMatMul
void register_qadd_fused_ops(OpTable& t);  // ops_fused_qadd.cpp: kiln.fused.AddQuantize
void register_fused_ops(OpTable& t);       // ops_fused.cpp: kiln.fused ops of the inference passes (rewrite.h)
void register_string_ops(SequenceOpTable& t);  // ops_string.cpp: StringNormalizer, Cast to and from STRING
void register_ml_ops(SequenceOpTable& t);      // ops_ml.cpp: ai.onnx.ml LabelEncoder (keyed by op_key)
// Ops of other domains are keyed "<domain>.<op_type>" ("ai.onnx.preview.training.Adam").
std::string op_key(const Node& node);

// ---- helpers shared by the op files ----
int64_t wrap_axis(const OpContext& c, int64_t axis, int64_t rank);  // ValueError naming the node
Tensor ints_tensor(const std::vector<int64_t>& v, Device device);    // 1-d i64
Tensor flip(const Tensor& x, int64_t dim);                           // reverses one dim (a copy)
// Values of `x` (any dtype) as doubles / int64 on the host, row-major.
std::vector<double> host_doubles(const Tensor& x);
// A tensor of `dtype` on `device` from doubles (values cast as static_cast would).
Tensor from_doubles(const std::vector<double>& v, const Shape& shape, DType dtype, Device device);

}  // namespace kiln::onnx
