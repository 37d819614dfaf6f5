// engine/graph op schemas: shape inference (outputs and error messages) for every op in
// the registry, attribute validation, parameters and multiply-adds, and that each op
// runs through GraphModule with the shape its inference promised.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <tuple>

#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/core/random.h"
#include "engine/graph/analysis.h"
#include "engine/graph/graph_module.h"
#include "engine/graph/op_schema.h"

namespace kiln::graph {
namespace {

constexpr int64_t N = kBatch;

TensorType f32(SymShape s) { return {DType::f32, std::move(s)}; }
TensorType i64(SymShape s) { return {DType::i64, std::move(s)}; }

struct Case {
  std::string op;
  Attributes attrs;
  std::vector<TensorType> in;
  std::string want;  // "f32[N, 10]" (outputs joined by "; "), or "error: <substring>"
};

// Every op of the registry needs at least one case here (RegistryCoverage checks); unary
// layers (OpSchema::unary_layer) get theirs from the loop below.
std::vector<Case> make_cases() {
  std::vector<Case> c = {
      {"Input", {{"shape", std::vector<int64_t>{1, 28, 28}}}, {}, "f32[N, 1, 28, 28]"},
      {"Input", {{"shape", std::vector<int64_t>{16}}, {"dtype", std::string("i64")}}, {}, "i64[N, 16]"},
      {"Output", {}, {f32({N, 10})}, ""},
      {"Add", {}, {f32({N, 32, 14, 14}), f32({N, 32, 14, 14})}, "f32[N, 32, 14, 14]"},
      {"Add", {{"num_inputs", int64_t{3}}}, {f32({N, 8}), f32({N, 8}), f32({N, 8})}, "f32[N, 8]"},
      {"Add", {}, {f32({N, 32, 1, 1}), f32({N, 32, 14, 14})}, "f32[N, 32, 14, 14]"},
      {"Add", {}, {f32({N, 32, 14, 14}), f32({N, 64, 14, 14})},
       "error: Add inputs do not broadcast: in0 [N, 32, 14, 14] vs in1 [N, 64, 14, 14]"},
      {"Add", {}, {f32({N, 10}), i64({N, 10})}, "error: Add inputs differ in dtype: in0 f32[N, 10] vs in1 i64[N, 10]"},
      {"Mul", {}, {f32({N, 16}), f32({N, 1})}, "f32[N, 16]"},
      {"Mul", {}, {f32({N, 16}), f32({N, 15})}, "error: Mul inputs do not broadcast: in0 [N, 16] vs in1 [N, 15]"},
      {"Concat", {}, {f32({N, 16, 7, 7}), f32({N, 32, 7, 7})}, "f32[N, 48, 7, 7]"},
      {"Concat", {{"dim", int64_t{-1}}, {"num_inputs", int64_t{3}}}, {f32({N, 2}), f32({N, 3}), f32({N, 4})}, "f32[N, 9]"},
      {"Concat", {}, {f32({N, 16, 7, 7}), f32({N, 32, 8, 8})},
       "error: Concat along dim 1 needs equal sizes in every other dim: in0 [N, 16, 7, 7] vs in1 [N, 32, 8, 8]"},
      {"Concat", {{"dim", int64_t{0}}}, {f32({N, 4}), f32({N, 4})}, "error: Concat along dim 0 would join the batch"},
      {"Concat", {{"dim", int64_t{3}}}, {f32({N, 4}), f32({N, 4})}, "error: Concat: dim 3 is out of range for [N, 4]"},
      {"Reshape", {{"shape", std::vector<int64_t>{64, 7, 7}}}, {f32({N, 3136})}, "f32[N, 64, 7, 7]"},
      {"Reshape", {}, {f32({N, 64, 7, 7})}, "f32[N, 3136]"},
      {"Reshape", {{"shape", std::vector<int64_t>{4, -1}}}, {f32({N, 2, 6})}, "f32[N, 4, 3]"},
      {"Reshape", {{"shape", std::vector<int64_t>{64, 7, 8}}}, {f32({N, 3136})},
       "error: Reshape cannot view [N, 3136] as [N, 64, 7, 8] (3136 elements per sample)"},
      {"Reshape", {{"shape", std::vector<int64_t>{3, -1}}}, {f32({N, 10})},
       "error: Reshape cannot view [N, 10] as [N, 3, -1]"},
      {"Flatten", {}, {f32({N, 64, 7, 7})}, "f32[N, 3136]"},
      {"Flatten", {{"start_dim", int64_t{2}}}, {f32({N, 64, 7, 7})}, "f32[N, 64, 49]"},
      {"Flatten", {{"start_dim", int64_t{0}}}, {f32({N, 64})},
       "error: Flatten with start_dim 0 would merge the batch dimension N of [N, 64]"},
      {"Flatten", {{"start_dim", int64_t{3}}, {"end_dim", int64_t{2}}}, {f32({N, 2, 3, 4})},
       "error: Flatten: start_dim 3 comes after end_dim 2 for [N, 2, 3, 4]"},
      {"Identity", {}, {i64({N, 5})}, "i64[N, 5]"},
      {"Linear", {{"in_features", int64_t{784}}}, {f32({N, 784})}, "f32[N, 128]"},
      {"Linear", {{"in_features", int64_t{784}}, {"out_features", int64_t{10}}}, {f32({N, 5, 784})}, "f32[N, 5, 10]"},
      {"Linear", {{"in_features", int64_t{784}}}, {f32({N, 1, 28, 28})},
       "error: Linear expects input features 784, got [N, 1, 28, 28] (flatten first?)"},
      {"Linear", {{"in_features", int64_t{784}}}, {f32({N, 100})}, "error: Linear expects input features 784, got [N, 100]"},
      {"Linear", {{"in_features", int64_t{784}}}, {i64({N, 784})},
       "error: Linear expects a floating-point input, got i64[N, 784]"},
      {"Conv2d", {{"padding", std::vector<int64_t>{1, 1}}}, {f32({N, 1, 28, 28})}, "f32[N, 32, 28, 28]"},
      {"Conv2d", {{"stride", std::vector<int64_t>{2, 2}}, {"in_channels", int64_t{3}}, {"out_channels", int64_t{8}}},
       {f32({N, 3, 32, 32})}, "f32[N, 8, 15, 15]"},
      {"Conv2d", {{"dilation", std::vector<int64_t>{2, 2}}, {"groups", int64_t{1}}}, {f32({N, 1, 9, 9})}, "f32[N, 32, 5, 5]"},
      {"Conv2d", {}, {f32({N, 3, 28, 28})}, "error: Conv2d expects 1 input channels, got [N, 3, 28, 28]"},
      {"Conv2d", {}, {f32({N, 784})}, "error: Conv2d expects input [N, C, H, W], got [N, 784]"},
      {"Conv2d", {}, {f32({N, 1, 2, 2})}, "error: Conv2d: input [N, 1, 2, 2] is too small for kernel 3x3"},
      {"Conv2d", {{"in_channels", int64_t{3}}, {"groups", int64_t{2}}}, {f32({N, 3, 8, 8})},
       "error: Conv2d: in_channels 3 and out_channels 32 must be divisible by groups 2"},
      {"ConvTranspose2d", {}, {f32({N, 32, 7, 7})}, "f32[N, 16, 8, 8]"},
      {"ConvTranspose2d",
       {{"in_channels", int64_t{8}}, {"out_channels", int64_t{4}}, {"kernel_size", std::vector<int64_t>{3, 3}},
        {"stride", std::vector<int64_t>{2, 2}},
        {"padding", std::vector<int64_t>{1, 1}}, {"output_padding", std::vector<int64_t>{1, 0}}, {"groups", int64_t{2}}},
       {f32({N, 8, 7, 7})}, "f32[N, 4, 14, 13]"},
      {"ConvTranspose2d", {}, {f32({N, 3, 7, 7})}, "error: ConvTranspose2d expects 32 input channels, got [N, 3, 7, 7]"},
      {"ConvTranspose2d", {{"output_padding", std::vector<int64_t>{2, 0}}, {"stride", std::vector<int64_t>{2, 2}}},
       {f32({N, 32, 7, 7})},
       "error: ConvTranspose2d: output_padding (2, 0) must be smaller than the stride (2, 2)"},
      {"ConvTranspose2d", {{"padding", std::vector<int64_t>{5, 0}}}, {f32({N, 32, 1, 1})},
       "error: ConvTranspose2d: input [N, 32, 1, 1] with padding (5, 0) gives an empty output (-8x2)"},
      {"MaxPool2d", {}, {f32({N, 32, 28, 28})}, "f32[N, 32, 14, 14]"},
      {"MaxPool2d", {{"kernel_size", std::vector<int64_t>{3, 3}}, {"stride", std::vector<int64_t>{2, 2}}, {"ceil_mode", true}},
       {f32({N, 8, 28, 28})}, "f32[N, 8, 14, 14]"},
      {"MaxPool2d", {}, {f32({N, 8, 1, 1})}, "error: MaxPool2d: input [N, 8, 1, 1] is too small for kernel 2x2"},
      {"MaxPool2d", {{"padding", std::vector<int64_t>{2, 2}}}, {f32({N, 8, 8, 8})},
       "error: MaxPool2d: padding (2, 2) must be at most half the kernel size (2, 2)"},
      {"AvgPool2d", {}, {f32({N, 64, 7, 7})}, "f32[N, 64, 3, 3]"},
      {"AvgPool2d", {{"ceil_mode", true}}, {f32({N, 64, 7, 7})}, "f32[N, 64, 4, 4]"},
      {"AvgPool2d", {}, {f32({N, 64})}, "error: AvgPool2d expects input [N, C, H, W], got [N, 64]"},
      {"AdaptiveAvgPool2d", {}, {f32({N, 64, 7, 7})}, "f32[N, 64, 1, 1]"},
      {"AdaptiveAvgPool2d", {{"output_size", std::vector<int64_t>{2, 3}}}, {f32({N, 4, 9, 9})}, "f32[N, 4, 2, 3]"},
      {"AdaptiveAvgPool2d", {}, {f32({N, 64, 7})}, "error: AdaptiveAvgPool2d expects input [N, C, H, W], got [N, 64, 7]"},
      {"BatchNorm1d", {{"num_features", int64_t{64}}}, {f32({N, 64})}, "f32[N, 64]"},
      {"BatchNorm1d", {{"num_features", int64_t{64}}}, {f32({N, 64, 5})}, "f32[N, 64, 5]"},
      {"BatchNorm1d", {{"num_features", int64_t{64}}}, {f32({N, 32})}, "error: BatchNorm1d expects 64 channels, got [N, 32]"},
      {"BatchNorm1d", {}, {f32({N, 32, 4, 4})}, "error: BatchNorm1d expects input [N, C] or [N, C, L], got [N, 32, 4, 4]"},
      {"BatchNorm2d", {}, {f32({N, 32, 28, 28})}, "f32[N, 32, 28, 28]"},
      {"BatchNorm2d", {}, {f32({N, 16, 28, 28})}, "error: BatchNorm2d expects 32 channels, got [N, 16, 28, 28]"},
      {"LayerNorm", {}, {f32({N, 128})}, "f32[N, 128]"},
      {"LayerNorm", {{"normalized_shape", std::vector<int64_t>{4, 5}}}, {f32({N, 3, 4, 5})}, "f32[N, 3, 4, 5]"},
      {"LayerNorm", {}, {f32({N, 64})}, "error: LayerNorm expects trailing dims [128], got [N, 64]"},
      {"Dropout", {}, {f32({N, 10})}, "f32[N, 10]"},
      {"Dropout", {}, {i64({N, 10})}, "error: Dropout expects a floating-point input, got i64[N, 10]"},
      {"ReLU", {}, {f32({N, 32, 28, 28})}, "f32[N, 32, 28, 28]"},
      {"ReLU", {}, {i64({N, 3})}, "error: ReLU expects a floating-point input, got i64[N, 3]"},
      {"ReLU6", {}, {f32({N, 32, 7, 7})}, "f32[N, 32, 7, 7]"},
      {"ReLU6", {}, {i64({N, 3})}, "error: ReLU6 expects a floating-point input, got i64[N, 3]"},
      {"LeakyReLU", {{"negative_slope", 0.2}}, {f32({N, 7})}, "f32[N, 7]"},
      {"GELU", {{"approximate", std::string("tanh")}}, {f32({N, 7})}, "f32[N, 7]"},
      {"SiLU", {}, {f32({N, 7})}, "f32[N, 7]"},
      {"Sigmoid", {}, {f32({N, 7})}, "f32[N, 7]"},
      {"Tanh", {}, {f32({N, 7})}, "f32[N, 7]"},
      {"Tanh", {}, {i64({N, 7})}, "error: Tanh expects a floating-point input, got i64[N, 7]"},
      {"Softmax", {}, {f32({N, 10})}, "f32[N, 10]"},
      {"Softmax", {{"dim", int64_t{5}}}, {f32({N, 10})}, "error: Softmax: dim 5 is out of range for [N, 10]"},
      {"LogSoftmax", {{"dim", int64_t{1}}}, {f32({N, 10})}, "f32[N, 10]"},
      {"LogSoftmax", {{"dim", int64_t{-3}}}, {f32({N, 10})}, "error: LogSoftmax: dim -3 is out of range for [N, 10]"},
      {"Embedding", {}, {i64({N, 16})}, "f32[N, 16, 64]"},
      {"Embedding", {}, {f32({N, 16})}, "error: Embedding expects integer indices, got f32[N, 16]"},
      {"SequencePool", {}, {f32({N, 16, 64})}, "f32[N, 64]"},
      {"SequencePool", {{"mode", std::string("last")}}, {f32({N, 64})},
       "error: SequencePool expects input [N, T, C], got [N, 64]"},
      {"SequencePool", {}, {i64({N, 16, 4})}, "error: SequencePool expects a floating-point input, got i64[N, 16, 4]"},
      {"LSTM", {{"hidden_size", int64_t{8}}}, {f32({N, 5, 6})}, "f32[N, 5, 8]"},
      {"LSTM", {{"hidden_size", int64_t{8}}, {"bidirectional", true}, {"num_layers", int64_t{2}}}, {f32({N, 5, 6})},
       "f32[N, 5, 16]"},
      {"LSTM", {}, {f32({N, 6})}, "error: LSTM expects input [N, T, C], got [N, 6]"},
      {"GRU", {{"hidden_size", int64_t{4}}, {"bidirectional", true}}, {f32({N, 5, 6})}, "f32[N, 5, 8]"},
      {"GRU", {}, {i64({N, 5, 6})}, "error: GRU expects a floating-point input, got i64[N, 5, 6]"},
      {"RNN", {{"hidden_size", int64_t{3}}, {"nonlinearity", std::string("relu")}}, {f32({N, 4, 2})}, "f32[N, 4, 3]"},
      {"RNN", {}, {f32({N, 4, 2, 2})}, "error: RNN expects input [N, T, C], got [N, 4, 2, 2]"},
      {"MultiheadAttention", {{"num_heads", int64_t{2}}, {"causal", true}}, {f32({N, 5, 6})}, "f32[N, 5, 6]"},
      {"MultiheadAttention", {}, {f32({N, 5, 6})},
       "error: MultiheadAttention: the embedding size 6 of [N, 5, 6] is not divisible by 4 heads"},
      {"TransformerEncoderLayer", {{"nhead", int64_t{2}}, {"dim_feedforward", int64_t{16}}}, {f32({N, 5, 8})},
       "f32[N, 5, 8]"},
      {"TransformerEncoderLayer", {{"nhead", int64_t{3}}}, {f32({N, 5, 8})},
       "error: TransformerEncoderLayer: the embedding size 8 of [N, 5, 8] is not divisible by 3 heads"},
      {"PositionalEmbedding", {{"max_length", int64_t{8}}}, {f32({N, 5, 6})}, "f32[N, 5, 6]"},
      {"PositionalEmbedding", {{"mode", std::string("sinusoidal")}}, {f32({N, 5, 6})}, "f32[N, 5, 6]"},
      {"PositionalEmbedding", {{"max_length", int64_t{4}}}, {f32({N, 5, 6})},
       "error: PositionalEmbedding: the sequence length 5 of [N, 5, 6] exceeds max_length 4"},
  };
  for (const OpSchema* s : OpRegistry::global().all()) {
    if (!s->unary_layer) continue;
    c.push_back({s->name, {}, {f32({N, 3, 5})}, "f32[N, 3, 5]"});
    c.push_back({s->name, {}, {i64({N, 3})}, "error: " + s->name + " expects a floating-point input, got i64[N, 3]"});
  }
  return c;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> c = make_cases();
  return c;
}

std::string run_infer(const Case& c) {
  const OpSchema& s = OpRegistry::global().get(c.op);
  Attributes attrs = s.with_defaults(c.attrs);
  EXPECT_EQ(s.check_attrs(attrs), std::nullopt) << c.op;
  try {
    std::string r;
    for (const TensorType& t : s.infer(c.in, attrs)) r += (r.empty() ? "" : "; ") + t.str();
    return r;
  } catch (const Error& e) {
    return std::string("error: ") + e.what();
  }
}

TEST(GraphOps, ShapeInference) {
  for (const Case& c : cases()) {
    std::string got = run_infer(c);
    if (c.want.rfind("error: ", 0) == 0) {
      EXPECT_NE(got.find(c.want), std::string::npos) << c.op << ": want " << c.want << "\n got " << got;
    } else {
      EXPECT_EQ(got, c.want) << c.op;
    }
  }
}

// Fails when an op is registered without a shape-inference case above (success and, for
// ops that take inputs, an error).
TEST(GraphOps, RegistryCoverage) {
  std::set<std::string> ok, failing;
  for (const Case& c : cases()) (c.want.rfind("error: ", 0) == 0 ? failing : ok).insert(c.op);
  for (const OpSchema* s : OpRegistry::global().all()) {
    EXPECT_TRUE(ok.count(s->name)) << "op " << s->name << " has no shape-inference test case";
    // Ops whose inference cannot fail (Identity, Output) or is shared with a tested one.
    static const std::set<std::string> no_error_case{"Input", "Output", "Identity", "LeakyReLU", "GELU", "SiLU", "Sigmoid"};
    const bool needs_error = !no_error_case.count(s->name);
    if (needs_error) {
      EXPECT_TRUE(failing.count(s->name)) << "op " << s->name << " has no shape-error test case";
    }
    EXPECT_FALSE(s->description.empty()) << s->name;
    for (const AttrSpec& a : s->attributes) EXPECT_FALSE(a.description.empty()) << s->name << "." << a.name;
  }
  EXPECT_GE(OpRegistry::global().all().size(), 25u);
}

// Each successful case, as Input(s) -> op -> Output through GraphModule with N = 2,
// gives the inferred shape: build and forward agree with infer for every op.
TEST(GraphOps, ForwardMatchesInference) {
  manual_seed(3);
  for (const Case& c : cases()) {
    if (c.want.rfind("error: ", 0) == 0 || c.op == "Input" || c.op == "Output") continue;
    Graph g;
    NodeId op = g.add_node(c.op, "op", c.attrs);
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < c.in.size(); ++i) {
      std::vector<int64_t> sample(c.in[i].shape.begin() + 1, c.in[i].shape.end());
      NodeId in = g.add_node("Input", "x" + std::to_string(i),
                             {{"shape", sample}, {"dtype", std::string(dtype_name(c.in[i].dtype))}});
      g.connect({in, 0}, {op, static_cast<int>(i)});
      Shape shape{2};
      shape.insert(shape.end(), sample.begin(), sample.end());
      inputs.push_back(c.in[i].dtype == DType::i64 ? Tensor::zeros(shape, DType::i64) : normal(shape, 0, 1));
    }
    NodeId out = g.add_node("Output", "y");
    g.connect({op, 0}, {out, 0});
    GraphModule m(g);
    std::vector<Tensor> y = m.forward(inputs);
    ASSERT_EQ(y.size(), 1u) << c.op;
    std::string want = c.want;
    want.replace(want.find('N'), 1, "2");
    EXPECT_EQ(dtype_name(y[0].dtype()) + kiln::shape_str(y[0].shape()), want) << c.op;
  }
}

TEST(GraphOps, AttributeValidation) {
  const OpSchema& conv = OpRegistry::global().get("Conv2d");
  EXPECT_EQ(conv.check_attr("kernel_size", std::vector<int64_t>{3, 3, 3}),
            "kernel_size expects 2 integers, got 3 ([3, 3, 3])");
  EXPECT_EQ(conv.check_attr("kernel_size", std::vector<int64_t>{0, 3}), "kernel_size elements must be in [1, 4096], got [0, 3]");
  EXPECT_EQ(conv.check_attr("out_channels", int64_t{0}), "out_channels must be in [1, 1099511627776], got 0");
  EXPECT_EQ(conv.check_attr("bias", int64_t{1}), "bias expects a value of type Bool, got 1");
  EXPECT_NE(conv.check_attr("kernel", int64_t{1})->find("unknown attribute 'kernel' of Conv2d; known: in_channels"),
            std::string::npos);
  EXPECT_EQ(conv.check_attr("padding", std::vector<int64_t>{1, 1}), std::nullopt);
  const OpSchema& drop = OpRegistry::global().get("Dropout");
  EXPECT_EQ(drop.check_attr("p", 1.5), "p must be in [0, 1], got 1.5");
  EXPECT_EQ(drop.check_attr("p", std::nan("")), "p must be a finite number, got nan");
  EXPECT_EQ(OpRegistry::global().get("GELU").check_attr("approximate", std::string("erf")),
            "approximate must be one of 'none', 'tanh', got 'erf'");
  const OpSchema& reshape = OpRegistry::global().get("Reshape");
  EXPECT_EQ(reshape.check_attrs({{"shape", std::vector<int64_t>{-1, -1}}}), "shape [-1, -1] may contain at most one -1");
  EXPECT_EQ(reshape.check_attrs({{"shape", std::vector<int64_t>{4, 0}}}), "shape [4, 0] may not contain 0");
  EXPECT_EQ(reshape.check_attrs({}), "attribute 'shape' of Reshape is missing");
  const OpSchema& pool = OpRegistry::global().get("MaxPool2d");
  EXPECT_EQ(pool.check_attrs(pool.with_defaults({{"stride", std::vector<int64_t>{2}}})),
            "stride expects 0 (same as kernel_size) or 2 integers, got 1");
  EXPECT_EQ(OpRegistry::global().get("Add").check_attr("num_inputs", int64_t{9}), "num_inputs must be in [2, 8], got 9");
}

TEST(GraphOps, RegistryLookup) {
  const OpRegistry& r = OpRegistry::global();
  EXPECT_EQ(r.find("Conv3d"), nullptr);
  try {
    r.get("Conv3d");
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown op 'Conv3d'; known: "), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("Conv2d"), std::string::npos);
  }
  OpRegistry local;
  OpSchema s = r.get("ReLU");
  local.add(s);
  EXPECT_THROW(local.add(s), ValueError);
  auto all = r.all();
  for (size_t i = 1; i < all.size(); ++i)
    EXPECT_LE(std::tie(all[i - 1]->category, all[i - 1]->name), std::tie(all[i]->category, all[i]->name));
  const OpSchema& add = r.get("Add");
  EXPECT_EQ(add.input_count(add.with_defaults({})), 2);
  EXPECT_EQ(add.input_count({{"num_inputs", int64_t{5}}}), 5);
  EXPECT_EQ(add.input_name(1), "in1");
  EXPECT_EQ(r.get("Linear").input_name(0), "in");
  EXPECT_EQ(r.get("Linear").attribute("bias")->type, AttrType::Bool);
  EXPECT_EQ(r.get("Linear").attribute("nope"), nullptr);
}

TEST(GraphOps, ParametersAndMacs) {
  const OpSchema& conv = OpRegistry::global().get("Conv2d");
  Attributes a = conv.with_defaults({{"padding", std::vector<int64_t>{1, 1}}});
  std::vector<TensorType> in{f32({N, 1, 28, 28})};
  auto out = conv.infer(in, a);
  auto params = conv.parameters(in, a);
  ASSERT_EQ(params.size(), 2u);
  EXPECT_EQ(params[0].name, "weight");
  EXPECT_EQ(params[0].shape, (SymShape{32, 1, 3, 3}));
  EXPECT_EQ(params[1].shape, (SymShape{32}));
  EXPECT_EQ(conv.macs(in, out, a), 32 * 28 * 28 * 9);
  const OpSchema& up = OpRegistry::global().get("ConvTranspose2d");  // weight [in, out / groups, kH, kW]
  const Attributes ua = up.with_defaults({{"groups", int64_t{2}}});
  const std::vector<TensorType> up_in{f32({N, 32, 7, 7})};
  EXPECT_EQ(up.parameters(up_in, ua)[0].shape, (SymShape{32, 8, 2, 2}));
  EXPECT_EQ(up.macs(up_in, up.infer(up_in, ua), ua), 32 * 7 * 7 * 8 * 4);
  const OpSchema& lin = OpRegistry::global().get("Linear");
  Attributes la = lin.with_defaults({{"in_features", int64_t{784}}, {"out_features", int64_t{256}}, {"bias", false}});
  std::vector<TensorType> lin_in{f32({N, 784})};
  EXPECT_EQ(lin.parameters(lin_in, la).size(), 1u);
  EXPECT_EQ(lin.macs(lin_in, lin.infer(lin_in, la), la), 784 * 256);
  EXPECT_EQ(shape_str({N, 1, 28, 28}), "[N, 1, 28, 28]");
  EXPECT_EQ(f32({N, 10}).str(), "f32[N, 10]");
  EXPECT_EQ(attr_str(AttrValue(1e-5)), "1e-05");
  EXPECT_EQ(attr_str(AttrValue(std::vector<int64_t>{-1, 4})), "[-1, 4]");
  EXPECT_EQ(attr_str(AttrValue(true)), "true");
}

}  // namespace
}  // namespace kiln::graph
