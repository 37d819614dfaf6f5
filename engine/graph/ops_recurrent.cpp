// Recurrent, attention and positional layers over [N, T, C] (batch first, T may be symbolic):
// RNN, LSTM, GRU (engine/nn/rnn.h), MultiheadAttention (self-attention) and
// TransformerEncoderLayer (engine/nn/attention.h), PositionalEmbedding (engine/nn/sequence.h).
// Each builds the engine/nn module with PyTorch's parameter names, so a node's state_dict keys
// read "lstm.weight_ih_l0" as torch.nn.LSTM's, and each takes the graph's padding mask
// (OpSchema::takes_padding_mask): f32 [N, T], 1 = token, converted here to the modules' bool
// convention (true = padded). The feature size (input_size, embed_dim, d_model) comes from the
// input's last dimension rather than an attribute.
// Multiply-adds per sample count T steps (1 when T is symbolic, as sample_numel does).
#include "engine/core/ops.h"
#include "engine/graph/op_helpers.h"
#include "engine/nn/attention.h"
#include "engine/nn/rnn.h"
#include "engine/nn/sequence.h"

namespace kiln::graph::detail {

namespace {

using Types = std::vector<TensorType>;

// [N, T, C] floating with a concrete C; returns C.
int64_t expect_sequence(const std::string& op, const TensorType& t) {
  expect_floating(op, t);
  expect_rank(op, t, 3, "[N, T, C]");
  expect_batched(op, t);
  KILN_CHECK(!is_symbolic(t.shape[2]), ShapeError, op, " needs a known feature size C of [N, T, C], got ",
             shape_str(t.shape));
  return t.shape[2];
}

int64_t steps(const TensorType& t) { return is_symbolic(t.shape.at(1)) ? 1 : t.shape[1]; }

// The graph's mask (f32 [N, T], 1 = token; undefined = no padding) as bool, true = padded.
Tensor padded_steps(const std::vector<Tensor>& in) {
  if (in.size() < 2 || !in[1].defined()) return Tensor();
  return eq(in[1], scalar_like(0.0, in[1]));
}

// Key padding mask for attention: padded steps, except in a sequence without any token, whose
// keys all stay visible (every key masked gives NaN weights, as in PyTorch, which would turn
// the whole batch's loss into NaN; its outputs are pooled away by SequencePool anyway).
Tensor key_padding(const std::vector<Tensor>& in) {
  Tensor padded = padded_steps(in);
  if (!padded.defined()) return padded;
  Tensor has_token = gt(sum(in[1], {1}, true), scalar_like(0.0, in[1]));
  return logical_and(padded, has_token);
}

// ---- RNN, LSTM, GRU --------------------------------------------------------------------

int64_t gates(const std::string& op) { return op == "LSTM" ? 4 : op == "GRU" ? 3 : 1; }

OpSchema recurrent_schema(const std::string& op, const std::string& what) {
  OpSchema s;
  s.name = op;
  s.category = "Sequence";
  s.description = what + " over [N, T, C] (batch first; torch.nn." + op +
                  " with batch_first=True): the last layer's hidden state at each step, [N, T, D*H] with D = 2 "
                  "when bidirectional. Padded steps (token id 0) leave the state unchanged and output 0.";
  s.inputs = {{"in", "[N, T, C]"}};
  s.outputs = {{"out", "[N, T, D*hidden_size]"}};
  s.attributes = {
      int_attr("hidden_size", 64, 1, kMaxSize, "", "Features of the hidden state h (PyTorch: required)."),
      int_attr("num_layers", 1, 1, 64, "", "Stacked recurrent layers (PyTorch default 1)."),
      bool_attr("bidirectional", false, "Also run the sequence backwards; output features double (default false)."),
      float_attr("dropout", 0.0, 0.0, 1.0, "", "Dropout between stacked layers in training (default 0)."),
  };
  if (op == "RNN")
    s.attributes.push_back(choice_attr("nonlinearity", "tanh", {"tanh", "relu"}, "Activation of the Elman RNN."));
  s.takes_padding_mask = true;
  s.infer = [op](const Types& in, const Attributes& a) {
    const TensorType& t = in.at(0);
    expect_sequence(op, t);
    const int64_t d = attr_bool(a, "bidirectional") ? 2 : 1;
    return Types{TensorType{t.dtype, {t.shape[0], t.shape[1], sat_mul(d, attr_int(a, "hidden_size"))}}};
  };
  s.parameters = [op](const Types& in, const Attributes& a) {
    const int64_t h = attr_int(a, "hidden_size"), g = sat_mul(gates(op), h);
    const int64_t d = attr_bool(a, "bidirectional") ? 2 : 1;
    std::vector<ParamSpec> p;
    for (int64_t k = 0; k < attr_int(a, "num_layers"); ++k) {
      const int64_t input = k == 0 ? in.at(0).shape.at(2) : d * h;
      for (int64_t dir = 0; dir < d; ++dir) {
        const std::string suffix = std::to_string(k) + (dir == 1 ? "_reverse" : "");
        p.push_back({"weight_ih_l" + suffix, {g, input}});
        p.push_back({"weight_hh_l" + suffix, {g, h}});
        p.push_back({"bias_ih_l" + suffix, {g}});
        p.push_back({"bias_hh_l" + suffix, {g}});
      }
    }
    return p;
  };
  // Per step, layer and direction: G*H*(I_k + H) for the two projections.
  s.macs = [op](const Types& in, const Types&, const Attributes& a) {
    const int64_t h = attr_int(a, "hidden_size"), g = sat_mul(gates(op), h);
    const int64_t d = attr_bool(a, "bidirectional") ? 2 : 1;
    int64_t total = 0;
    for (int64_t k = 0; k < attr_int(a, "num_layers"); ++k) {
      const int64_t input = k == 0 ? in.at(0).shape.at(2) : d * h;
      total = sat_add(total, sat_mul(d, sat_mul(g, sat_add(input, h))));
    }
    return sat_mul(total, steps(in.at(0)));
  };
  s.build = [op](const Types& in, const Attributes& a) -> std::shared_ptr<nn::Module> {
    nn::RNNOptions o{.input_size = in.at(0).shape.at(2),
                     .hidden_size = attr_int(a, "hidden_size"),
                     .num_layers = attr_int(a, "num_layers"),
                     .batch_first = true,
                     .dropout = attr_float(a, "dropout"),
                     .bidirectional = attr_bool(a, "bidirectional")};
    if (op == "LSTM") return std::make_shared<nn::LSTM>(o);
    if (op == "GRU") return std::make_shared<nn::GRU>(o);
    o.nonlinearity = attr_string(a, "nonlinearity");
    return std::make_shared<nn::RNN>(o);
  };
  s.forward = [](nn::Module* m, const std::vector<Tensor>& in, const Attributes&) {
    auto* rnn = static_cast<nn::RNNBase*>(m);
    return std::vector<Tensor>{rnn->forward_with_state(in.at(0), Tensor(), Tensor(), padded_steps(in)).output};
  };
  return s;
}

// ---- attention ---------------------------------------------------------------------------

int64_t checked_heads(const std::string& op, const TensorType& t, int64_t heads) {
  const int64_t e = expect_sequence(op, t);
  KILN_CHECK(e % heads == 0, ShapeError, op, ": the embedding size ", e, " of ", shape_str(t.shape),
             " is not divisible by ", heads, " heads");
  return e;
}

// in_proj (3 E^2 per step), scores and weighted sum (2 T E per step), out_proj (E^2 per step).
int64_t attention_macs(int64_t t, int64_t e) { return sat_mul(t, sat_add(sat_mul(4 * e, e), sat_mul(2 * t, e))); }

std::vector<ParamSpec> attention_params(const std::string& prefix, int64_t e) {
  return {{prefix + "in_proj_weight", {3 * e, e}},
          {prefix + "in_proj_bias", {3 * e}},
          {prefix + "out_proj.weight", {e, e}},
          {prefix + "out_proj.bias", {e}}};
}

OpSchema attention_schema() {
  OpSchema s;
  s.name = "MultiheadAttention";
  s.category = "Sequence";
  s.description =
      "Multi-head self-attention over [N, T, E] (torch.nn.MultiheadAttention with batch_first=True, query = key = "
      "value): padded steps are masked out as keys.";
  s.inputs = {{"in", "[N, T, E]"}};
  s.outputs = {{"out", "[N, T, E]"}};
  s.attributes = {
      int_attr("num_heads", 4, 1, 4096, "", "Parallel attention heads; must divide the embedding size E."),
      float_attr("dropout", 0.0, 0.0, 1.0, "", "Dropout on the attention weights in training (PyTorch default 0)."),
      bool_attr("causal", false, "Step t attends only to steps <= t (a causal mask)."),
  };
  s.takes_padding_mask = true;
  s.infer = [](const Types& in, const Attributes& a) {
    checked_heads("MultiheadAttention", in.at(0), attr_int(a, "num_heads"));
    return Types{in.at(0)};
  };
  s.parameters = [](const Types& in, const Attributes&) { return attention_params("", in.at(0).shape.at(2)); };
  s.macs = [](const Types& in, const Types&, const Attributes&) {
    return attention_macs(steps(in.at(0)), in.at(0).shape.at(2));
  };
  s.build = [](const Types& in, const Attributes& a) {
    return std::make_shared<nn::MultiheadAttention>(in.at(0).shape.at(2), attr_int(a, "num_heads"),
                                                    attr_float(a, "dropout"), true, true);
  };
  s.forward = [](nn::Module* m, const std::vector<Tensor>& in, const Attributes& a) {
    auto* mha = static_cast<nn::MultiheadAttention*>(m);
    const Tensor& x = in.at(0);
    return std::vector<Tensor>{
        mha->forward_attention(x, x, x, key_padding(in), false, Tensor(), true, attr_bool(a, "causal")).output};
  };
  return s;
}

OpSchema encoder_layer_schema() {
  OpSchema s;
  s.name = "TransformerEncoderLayer";
  s.category = "Sequence";
  s.description =
      "One Transformer encoder block over [N, T, E] (torch.nn.TransformerEncoderLayer with batch_first=True): "
      "self-attention and a feed-forward network, each with a residual connection and LayerNorm.";
  s.inputs = {{"in", "[N, T, E]"}};
  s.outputs = {{"out", "[N, T, E]"}};
  s.attributes = {
      int_attr("nhead", 4, 1, 4096, "", "Attention heads; must divide the embedding size E."),
      int_attr("dim_feedforward", 256, 1, kMaxSize, "", "Hidden size of the feed-forward network (PyTorch: 2048)."),
      float_attr("dropout", 0.1, 0.0, 1.0, "", "Dropout in training (PyTorch default 0.1)."),
      choice_attr("activation", "relu", {"relu", "gelu"}, "Feed-forward activation (PyTorch default relu)."),
      bool_attr("norm_first", false, "LayerNorm before each sublayer (pre-LN, Xiong et al. 2020) instead of after."),
      bool_attr("causal", false, "Step t attends only to steps <= t (a causal mask)."),
  };
  s.takes_padding_mask = true;
  s.infer = [](const Types& in, const Attributes& a) {
    checked_heads("TransformerEncoderLayer", in.at(0), attr_int(a, "nhead"));
    return Types{in.at(0)};
  };
  s.parameters = [](const Types& in, const Attributes& a) {
    const int64_t e = in.at(0).shape.at(2), f = attr_int(a, "dim_feedforward");
    std::vector<ParamSpec> p = attention_params("self_attn.", e);
    std::vector<ParamSpec> rest{{"linear1.weight", {f, e}}, {"linear1.bias", {f}}, {"linear2.weight", {e, f}},
                                {"linear2.bias", {e}},      {"norm1.weight", {e}}, {"norm1.bias", {e}},
                                {"norm2.weight", {e}},      {"norm2.bias", {e}}};
    p.insert(p.end(), rest.begin(), rest.end());
    return p;
  };
  // Attention, the two feed-forward projections (2 E F per step), one per element for each norm.
  s.macs = [](const Types& in, const Types&, const Attributes& a) {
    const int64_t t = steps(in.at(0)), e = in.at(0).shape.at(2), f = attr_int(a, "dim_feedforward");
    return sat_add(attention_macs(t, e), sat_mul(t, sat_add(sat_mul(2 * e, f), 2 * e)));
  };
  s.build = [](const Types& in, const Attributes& a) {
    return std::make_shared<nn::TransformerEncoderLayer>(
        nn::TransformerEncoderLayerOptions{.d_model = in.at(0).shape.at(2),
                                           .nhead = attr_int(a, "nhead"),
                                           .dim_feedforward = attr_int(a, "dim_feedforward"),
                                           .dropout = attr_float(a, "dropout"),
                                           .activation = attr_string(a, "activation"),
                                           .batch_first = true,
                                           .norm_first = attr_bool(a, "norm_first")});
  };
  s.forward = [](nn::Module* m, const std::vector<Tensor>& in, const Attributes& a) {
    auto* layer = static_cast<nn::TransformerEncoderLayer*>(m);
    return std::vector<Tensor>{layer->forward_masked(in.at(0), Tensor(), key_padding(in), attr_bool(a, "causal"))};
  };
  return s;
}

// ---- positions -------------------------------------------------------------------------------

OpSchema positional_schema() {
  OpSchema s;
  s.name = "PositionalEmbedding";
  s.category = "Sequence";
  s.description =
      "Adds a position code to each step of [N, T, C]: learned (a trained Embedding over positions, as BERT) or "
      "sinusoidal (fixed sin/cos, Vaswani et al. 2017).";
  s.inputs = {{"in", "[N, T, C]"}};
  s.outputs = {{"out", "[N, T, C]"}};
  s.attributes = {
      choice_attr("mode", "learned", {"learned", "sinusoidal"},
                  "learned: weight [max_length, C] ~ N(0, 1); sinusoidal: the fixed buffer pe."),
      int_attr("max_length", 256, 1, 1 << 20, "", "Longest sequence T the layer accepts."),
  };
  s.infer = [](const Types& in, const Attributes& a) {
    const TensorType& t = in.at(0);
    expect_sequence("PositionalEmbedding", t);
    const int64_t max = attr_int(a, "max_length");
    KILN_CHECK(is_symbolic(t.shape[1]) || t.shape[1] <= max, ShapeError, "PositionalEmbedding: the sequence length ",
               t.shape[1], " of ", shape_str(t.shape), " exceeds max_length ", max);
    return Types{t};
  };
  s.parameters = [](const Types& in, const Attributes& a) {
    if (attr_string(a, "mode") != "learned") return std::vector<ParamSpec>{};
    return std::vector<ParamSpec>{{"weight", {attr_int(a, "max_length"), in.at(0).shape.at(2)}}};
  };
  s.macs = [](const Types& in, const Types&, const Attributes&) { return sample_numel(in.at(0).shape); };
  s.build = [](const Types& in, const Attributes& a) -> std::shared_ptr<nn::Module> {
    const int64_t c = in.at(0).shape.at(2), max = attr_int(a, "max_length");
    if (attr_string(a, "mode") == "learned") return std::make_shared<nn::LearnedPositionalEmbedding>(max, c, true);
    return std::make_shared<nn::SinusoidalPositionalEncoding>(c, 0.0, max, true);
  };
  s.forward = module_forward;
  return s;
}

}  // namespace

void register_recurrent_attention_ops(OpRegistry& r) {
  r.add(recurrent_schema("RNN", "Elman recurrent layer h' = act(W_ih x + b_ih + W_hh h + b_hh)"));
  r.add(recurrent_schema("LSTM", "Long short-term memory layer (Hochreiter & Schmidhuber 1997)"));
  r.add(recurrent_schema("GRU", "Gated recurrent unit layer (Cho et al. 2014)"));
  r.add(attention_schema());
  r.add(encoder_layer_schema());
  r.add(positional_schema());
}

}  // namespace kiln::graph::detail
