// Op schemas: the one place that says what a graph op is — its ports, attributes
// (type, default, range, unit), parameters, shape inference, multiply-adds and how
// it runs. The Studio's palette and property editor are generated from it.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "engine/core/backend.h"
#include "engine/core/tensor.h"
#include "engine/graph/onnx_export.h"
#include "engine/graph/types.h"
#include "engine/nn/module.h"

namespace kiln::graph {

struct AttrSpec {
  std::string name;
  AttrType type = AttrType::Int;
  AttrValue default_value;
  std::optional<double> min, max;    // inclusive range (Int, Float, each element of Ints)
  std::vector<std::string> choices;  // Choice
  std::string unit;                  // "px", "" ...
  std::string description;
  int min_items = 0;                 // Ints: allowed number of elements
  int max_items = -1;                //       (-1: no limit)
};

struct PortSpec {
  std::string name;
  std::string description;
};

struct ParamSpec {
  std::string name;  // "weight"
  SymShape shape;    // {out_features, in_features}; never holds kBatch
};

// An ONNX node as the import (engine/onnx/graph_import.h) shows it to OpSchema::onnx_import,
// with the types the import's example runs recorded. Two patterns PyTorch exports reach the
// hooks as one node: MatMul(x, W) whose output only an Add of a constant vector reads, as
// op_type "MatMul" with that vector as a third input; Mul(x, Sigmoid(x)) (torch.nn.SiLU), as
// op_type "kiln.Silu" with input x. Recurrent nodes (LSTM, GRU, RNN) reach the hooks batch
// first: input 0 is the [N, T, C] value whose Transpose the node reads and output 0 the
// [N, T, D*H] its Y becomes (graph_import_sequence.h); SequencePool's exported forms reach
// them as op_type "kiln.SequencePool" with a STRING attribute "mode" and input x.
struct OnnxNodeView {
  struct Input {
    bool present = false;  // false: an omitted optional input
    TensorType type;
    Tensor constant;       // defined when the value is an initializer or a folded constant
  };
  std::string op_type;  // "Conv"
  std::string name;     // the node's name in the model
  int64_t opset = 0;    // the model's ai.onnx opset
  // Its attributes of type INT, FLOAT, STRING and INTS ("pads" -> [1, 1, 1, 1]); other types
  // (tensors, graphs, FLOATS ...) are named in other_attributes.
  std::map<std::string, AttrValue> attributes;
  std::map<std::string, std::vector<std::string>> string_lists;  // STRINGS attributes ("activations")
  std::vector<std::string> other_attributes;
  // The graph has a token-id input whose padding mask (graph_module.h) every op with
  // takes_padding_mask receives: a recurrent node maps only when its ONNX sequence_lens is
  // that mask's token count (the import then presents sequence_lens as omitted).
  bool graph_padding_mask = false;
  std::vector<Input> inputs;  // by ONNX input index
  std::vector<TensorType> outputs;
  bool output_read(size_t i) const { return i < outputs_read.size() && outputs_read[i]; }
  std::vector<bool> outputs_read;  // whether a node or graph output reads output i
};

// How a native node replaces an ONNX node: its attributes, which ONNX inputs feed its input
// ports (in port order; the others must be constants the mapping consumed) and the initial
// values of its state_dict entries ("weight" -> tensor, without the node's prefix).
struct OnnxMapping {
  std::string op;  // "": the claiming schema; else another it hands the node to (BatchNorm1d for [N, C])
  Attributes attrs;
  std::vector<size_t> data_inputs{0};
  std::map<std::string, Tensor> state;
};
// The mapping, or why this node cannot be one ("pads [0, 0, 1, 1] are asymmetric").
using OnnxMapResult = std::variant<OnnxMapping, std::string>;

struct OpSchema {
  std::string name;         // "Conv2d" (PyTorch class names; Input, Output, Add, Mul, Concat, ...)
  std::string category;     // "Input/Output", "Layers", "Activations", "Normalization", "Pooling",
                            // "Tensor", "Regularization", "Sequence"
  std::string description;  // one or two sentences for the palette tooltip
  std::vector<PortSpec> inputs, outputs;
  std::string count_attribute;  // "num_inputs" for Add/Mul/Concat: the input port count comes from it
  std::vector<AttrSpec> attributes;
  // Output types from input types (one per output port). Throws ShapeError or DTypeError
  // whose message names the op and both shapes ("Linear expects input features 784, got
  // [N, 1, 28, 28] (flatten first?)"), ValueError for attribute combinations that cannot work.
  std::function<std::vector<TensorType>(const std::vector<TensorType>&, const Attributes&)> infer;
  // Parameter shapes for these input types; empty function: no parameters.
  std::function<std::vector<ParamSpec>(const std::vector<TensorType>&, const Attributes&)> parameters;
  // Multiply-adds per sample (the batch dimension taken as 1); empty function: 0.
  // Counted as in the usual FLOP counters (fvcore, ptflops): Linear in*out per row,
  // Conv2d (in/groups)*kH*kW per output element, one per element for normalization.
  std::function<int64_t(const std::vector<TensorType>& in, const std::vector<TensorType>& out, const Attributes&)>
      macs;
  // The nn::Module that runs the node (created on the CPU); empty function: stateless,
  // forward gets a null module.
  std::function<std::shared_ptr<nn::Module>(const std::vector<TensorType>&, const Attributes&)> build;
  // Runs the node: one tensor per input port in, one per output port out.
  std::function<std::vector<Tensor>(nn::Module*, const std::vector<Tensor>&, const Attributes&)> forward;
  // Sequence ops that must skip padding (SequencePool; recurrent and attention layers): forward
  // gets the padding mask as one more tensor after its input ports, f32 [N, T] with 1 for a token
  // and 0 for padding, or an undefined tensor when the graph's input carries no mask (see
  // GraphModule, graph_module.h, for where it comes from).
  bool takes_padding_mask = false;
  // An attribute that must equal a dimension of input 0, as PyTorch makes the user repeat
  // it (Conv2d.in_channels is C of [N, C, H, W]); the editor fills it in from the inferred
  // input when a layer is appended. rank 0: any rank >= 2; dim -1: the last dimension.
  struct InputDimAttribute {
    std::string attribute;
    size_t rank = 0;
    int dim = -1;
  };
  std::vector<InputDimAttribute> input_dim_attributes;
  // Extra checks of an attribute set beyond each AttrSpec (Reshape: at most one -1);
  // returns the reason it is invalid, nullopt when fine. May be empty.
  std::function<std::optional<std::string>(const Attributes&)> check;
  // ONNX import: the op types this op claims (ai.onnx; "kiln.Silu": OnnxNodeView) and how one
  // such node maps to it. The import keeps the node as "onnx.<op_type>" (with the returned
  // reason as a warning naming it) when `map` returns a reason, when the native op's infer
  // does not give the types the model computed, or when a state entry does not fit the built
  // module. Set by engine/graph/ops_onnx.cpp beside the schemas; empty: claims nothing.
  struct OnnxImport {
    std::vector<std::string> op_types;
    std::function<OnnxMapResult(const OnnxNodeView&)> map;
  };
  OnnxImport onnx_import;
  // ONNX export: adds the ONNX nodes computing this node (onnx_export.h says how values and
  // constants are named); throws ValueError naming the node for a form ONNX cannot express.
  // Set by engine/graph/ops_onnx.cpp in the same table entry as onnx_import; empty: export
  // refuses the node ("op 'X' has no ONNX mapping yet"). engine/onnx/export.cpp loops over
  // the graph's nodes and calls it; it has no per-op code.
  std::function<void(OnnxEmitter&, const OnnxExportNode&)> onnx_export;
  // Set for a layer that is one elementwise op without attributes (ReLU, Sigmoid, Tanh,
  // Hardswish, Hardsigmoid): the op it runs (kiln::apply_unary, the plain function of that
  // name in ops.h) and the ONNX operator it is. ONNX import, export and codegen and the op
  // tests treat every such layer alike, so adding one is one line in ops_activation.cpp.
  struct UnaryLayer {
    UnaryOp op;
    std::string onnx_op_type;  // "HardSwish"
    // FLOAT attributes the ONNX operator must carry to compute this op, with the operator's
    // own default (HardSigmoid: alpha = 1/6, default 0.2; beta = 0.5, default 0.5, as
    // torch.nn.Hardsigmoid exports it). Export writes them; import and codegen take a node
    // only when each matches to 1e-6 relative.
    struct OnnxFloat {
      std::string name;
      double value, onnx_default;
    };
    std::vector<OnnxFloat> onnx_floats;
    // Why a node whose FLOAT attributes `get(name, onnx_default)` gives is not this layer
    // ("alpha is 0.2, not 0.166667"); nullopt when it is.
    std::optional<std::string> onnx_mismatch(const std::function<double(const std::string&, double)>& get) const;
  };
  std::optional<UnaryLayer> unary_layer;

  int input_count(const Attributes& attrs) const;            // inputs.size() or the count attribute
  std::string input_name(int port) const;                    // "in"; "in0", "in1" for counted ports
  std::string output_name(int port) const;                   // outputs[port].name
  const AttrSpec* attribute(const std::string& name) const;  // nullptr if none
  // Attributes with every missing one set to its default (unknown names are kept, for
  // check_attrs to report).
  Attributes with_defaults(Attributes attrs) const;
  // Why `value` is not valid for attribute `name` ("unknown attribute 'x' of Conv2d; known:
  // ...", "kernel_size expects 2 integers, got 3", "p must be in [0, 1], got 1.5"); nullopt when fine.
  std::optional<std::string> check_attr(const std::string& name, const AttrValue& value) const;
  // check_attr for every entry, then `check`; missing attributes are reported too.
  std::optional<std::string> check_attrs(const Attributes& attrs) const;
};

class OpRegistry {
 public:
  static OpRegistry& global();                          // all built-in ops registered
  void add(OpSchema schema);                            // ValueError on duplicate name
  const OpSchema* find(const std::string& name) const;  // nullptr when unknown
  const OpSchema& get(const std::string& name) const;   // ValueError "unknown op 'X'; known: ..."
  std::vector<const OpSchema*> all() const;             // sorted by category, then name
  // The op that claims ONNX op type `op_type` through its onnx_import; nullptr when none.
  const OpSchema* onnx_claimant(const std::string& op_type) const;
  OpSchema* mutable_find(const std::string& name);  // nullptr when unknown (ops_onnx.cpp sets onnx_import)

 private:
  std::vector<std::unique_ptr<OpSchema>> ops_;
};

// Typed attribute access for op implementations (ValueError when missing or of another type).
int64_t attr_int(const Attributes& attrs, const std::string& name);
double attr_float(const Attributes& attrs, const std::string& name);
bool attr_bool(const Attributes& attrs, const std::string& name);
const std::string& attr_string(const Attributes& attrs, const std::string& name);
const std::vector<int64_t>& attr_ints(const Attributes& attrs, const std::string& name);

}  // namespace kiln::graph
