// ONNX export of the sequence layers (engine/graph/ops_onnx_sequence.cpp): each layer over
// embedded token ids exports, passes libonnx's checker with strict shape inference, and Kiln's
// ONNX executor gives the native GraphModule's outputs (within 1e-5) on a padded batch (rows of
// 7, 4, 1 and 0 tokens, <pad> = id 0 at the end), as does the exported model re-imported.
// Also: the executor's sequence_lens against the spec's semantics.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "engine/core/ops.h"
#include "engine/core/random.h"
#include "engine/graph/graph_module.h"
#include "engine/onnx/executor.h"
#include "engine/onnx/export.h"
#include "engine/onnx/graph_import.h"
#include "engine/onnx/model.h"
#include "engine/onnx/suite.h"

using namespace kiln;
using graph::Attributes;
using graph::Graph;
using graph::GraphModule;

namespace {

constexpr int64_t kSteps = 7, kVocab = 12, kEmbed = 8;

graph::NodeId add(Graph& g, const std::string& op, const std::string& name, Attributes a,
                  std::vector<graph::NodeId> from) {
  graph::NodeId id = g.add_node(op, name, std::move(a));
  for (size_t p = 0; p < from.size(); ++p) g.connect({from[p], 0}, {id, static_cast<int>(p)});
  return id;
}

// ids [T] -> Embedding -> `op` (attrs) -> outputs: the layer's [N, T, C] and, from a
// SequencePool of it, [N, C]. With `features`, the layer reads a float Input [T, E] instead
// (no padding mask: every step valid).
Graph layer_graph(const std::string& op, const Attributes& attrs, bool features = false) {
  Graph g;
  g.name = op;
  graph::NodeId x;
  if (features) {
    x = add(g, "Input", "feats", {{"shape", std::vector<int64_t>{kSteps, kEmbed}}}, {});
  } else {
    auto ids = add(g, "Input", "ids", {{"shape", std::vector<int64_t>{kSteps}}, {"dtype", std::string("i64")}}, {});
    x = add(g, "Embedding", "embed", {{"num_embeddings", kVocab}, {"embedding_dim", kEmbed}}, {ids});
  }
  auto layer = add(g, op, "layer", attrs, {x});
  auto pool = add(g, "SequencePool", "pool", {{"mode", std::string("mean")}}, {layer});
  add(g, "Output", "seq", {}, {layer});
  add(g, "Output", "pooled", {}, {pool});
  return g;
}

// Token ids [4, 7]: rows of 7, 4, 1 and 0 tokens (ids 1 .. 11), padded with 0 at the end.
Tensor padded_ids() {
  std::vector<int64_t> v;
  const int64_t lens[] = {7, 4, 1, 0};
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t t = 0; t < kSteps; ++t) v.push_back(t < lens[r] ? 1 + (r * 5 + t * 3) % (kVocab - 1) : 0);
  return Tensor::from_vector<int64_t>(v, {4, kSteps});
}

void randomize(GraphModule& gm) {
  nn::StateDict sd;
  for (const auto& [key, t] : gm.state_dict())
    sd.emplace_back(key, is_floating(t.dtype()) && key.find(".pe") == std::string::npos ? uniform(t.shape(), -0.5, 0.5)
                                                                                         : t);
  gm.load_state_dict(sd);
}

void expect_close(const std::vector<Tensor>& want, const std::vector<Tensor>& got, const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    double err = 0;
    EXPECT_EQ(kiln::onnx::compare_tensors(want[i], got[i], 1e-5, 1e-5, err), "") << what << " output " << i;
  }
}

// export -> checker -> executor and -> re-import, against the native module on a padded batch.
// Returns the exported model's op types.
std::set<std::string> check_layer(const std::string& op, const Attributes& attrs, bool features = false) {
  std::string what = op + (features ? " on features" : " on token ids");
  for (const auto& [k, v] : attrs) what += " " + k + "=" + graph::attr_str(v);
  SCOPED_TRACE(what);
  manual_seed(7);
  Graph g = layer_graph(op, attrs, features);
  GraphModule gm(g);
  randomize(gm);
  gm.eval();
  std::vector<Tensor> inputs{features ? normal({4, kSteps, kEmbed}, 0, 1) : padded_ids()};
  std::vector<Tensor> want = gm.forward(inputs);
  std::string bytes = kiln::onnx::export_model(g, gm.state_dict());
  std::set<std::string> ops;
  try {
    kiln::onnx::check_model_bytes(bytes);
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what();
    return ops;
  }
  kiln::onnx::Model m = kiln::onnx::parse_model(bytes, "", op);
  for (const kiln::onnx::Node& n : m.graph.nodes) ops.insert(n.op_type);
  kiln::onnx::Session s(m);
  std::vector<Tensor> got = s.run({{s.input_names().at(0), inputs[0]}});
  expect_close(want, got, "executor");
  kiln::onnx::ImportedGraph ig = kiln::onnx::import_graph(m);
  GraphModule back(ig.graph);
  back.load_state_dict(ig.state_dict);
  back.eval();
  expect_close(want, back.forward(inputs), "re-imported");
  return ops;
}

Attributes rnn(int64_t hidden, int64_t layers, bool bidirectional) {
  return {{"hidden_size", hidden}, {"num_layers", layers}, {"bidirectional", bidirectional}};
}

}  // namespace

TEST(OnnxExportSequence, LstmIsOneOnnxLstmPerLayerWithSequenceLens) {
  std::set<std::string> ops = check_layer("LSTM", rnn(5, 2, true));
  EXPECT_TRUE(ops.count("LSTM"));
  EXPECT_TRUE(ops.count("ReduceSum"));  // sequence_lens from the ids
  check_layer("LSTM", rnn(6, 1, false));
  check_layer("LSTM", rnn(4, 2, false), true);  // features: no sequence_lens
}

TEST(OnnxExportSequence, GruWithLinearBeforeReset) {
  EXPECT_TRUE(check_layer("GRU", rnn(5, 2, true)).count("GRU"));
  check_layer("GRU", rnn(3, 1, false));
}

TEST(OnnxExportSequence, RnnTanhAndRelu) {
  EXPECT_TRUE(check_layer("RNN", rnn(5, 1, true)).count("RNN"));
  Attributes relu = rnn(4, 2, false);
  relu["nonlinearity"] = std::string("relu");
  check_layer("RNN", relu);
}

TEST(OnnxExportSequence, MultiheadAttentionDecomposed) {
  std::set<std::string> ops = check_layer("MultiheadAttention", {{"num_heads", int64_t{2}}});
  EXPECT_TRUE(ops.count("Softmax") && ops.count("MatMul"));
  EXPECT_FALSE(ops.count("Attention"));
  check_layer("MultiheadAttention", {{"num_heads", int64_t{4}}, {"causal", true}});
  check_layer("MultiheadAttention", {{"num_heads", int64_t{1}}}, true);
}

TEST(OnnxExportSequence, TransformerEncoderLayerPostAndPreNorm) {
  std::set<std::string> ops = check_layer("TransformerEncoderLayer", {{"nhead", int64_t{2}}, {"dim_feedforward", int64_t{16}}});
  EXPECT_TRUE(ops.count("LayerNormalization"));
  check_layer("TransformerEncoderLayer", {{"nhead", int64_t{4}},
                                          {"dim_feedforward", int64_t{12}},
                                          {"norm_first", true},
                                          {"activation", std::string("gelu")},
                                          {"causal", true}});
}

TEST(OnnxExportSequence, PositionalEmbeddingLearnedAndSinusoidal) {
  EXPECT_TRUE(check_layer("PositionalEmbedding", {{"mode", std::string("learned")}, {"max_length", int64_t{9}}}).count("Gather"));
  check_layer("PositionalEmbedding", {{"mode", std::string("sinusoidal")}, {"max_length", int64_t{16}}});
}

// The executor's sequence_lens (Operators.md, LSTM): steps past a sequence's length give zeros
// in Y; Y_h and Y_c hold its last valid step; the reverse direction starts at length - 1. The
// reference is the same layer run on each sequence cut to its length.
TEST(OnnxExportSequence, ExecutorSequenceLensFollowsTheSpec) {
  manual_seed(3);
  Graph g = layer_graph("LSTM", rnn(3, 1, true), true);
  GraphModule gm(g);
  randomize(gm);
  kiln::onnx::Model m = kiln::onnx::parse_model(kiln::onnx::export_model(g, gm.state_dict()), "", "lstm");
  // The exported LSTM node alone, as a model with sequence_lens as an input.
  const kiln::onnx::Node* lstm = nullptr;
  for (const kiln::onnx::Node& n : m.graph.nodes)
    if (n.op_type == "LSTM") lstm = &n;
  ASSERT_NE(lstm, nullptr);
  const Tensor& w = m.graph.initializers.at(lstm->inputs.at(1));
  const Tensor& r = m.graph.initializers.at(lstm->inputs.at(2));
  const Tensor& b = m.graph.initializers.at(lstm->inputs.at(3));
  Tensor x = normal({kSteps, 3, kEmbed}, 0, 1);
  const std::vector<int32_t> lens{7, 3, 0};
  auto run = [&](const Tensor& xs, const std::vector<int32_t>& l) {
    kiln::onnx::Model one;
    one.opsets[""] = 17;
    one.graph.initializers = {{"W", w}, {"R", r}, {"B", b}};
    kiln::onnx::Node n = *lstm;
    n.inputs = {"X", "W", "R", "B", "L"};
    n.outputs = {"Y", "Y_h", "Y_c"};
    one.graph.nodes = {n};
    for (const char* name : {"X", "L"}) one.graph.inputs.push_back(kiln::onnx::ValueInfo{.name = name, .shape = {}});
    for (const char* name : {"Y", "Y_h", "Y_c"}) one.graph.outputs.push_back(kiln::onnx::ValueInfo{.name = name, .shape = {}});
    kiln::onnx::Session s(one);
    return s.run({{"X", xs}, {"L", Tensor::from_vector<int32_t>(l, {static_cast<int64_t>(l.size())})}});
  };
  std::vector<Tensor> all = run(x, lens);  // Y [T, 2, 3, H], Y_h / Y_c [2, 3, H]
  for (int64_t i = 0; i < 3; ++i) {
    const int64_t len = lens[static_cast<size_t>(i)];
    Tensor y = all[0].select(2, i);  // [T, 2, H]
    if (len < kSteps) {
      EXPECT_EQ(amax(abs(y.slice(0, len, kSteps))).item<float>(), 0.0) << "row " << i;
    }
    if (len == 0) {
      EXPECT_EQ(amax(abs(all[1].select(1, i))).item<float>(), 0.0);
      continue;
    }
    std::vector<Tensor> alone = run(x.slice(0, 0, len).slice(1, i, i + 1).contiguous(), {lens[static_cast<size_t>(i)]});
    expect_close({alone[0].select(2, 0), alone[1].select(1, 0), alone[2].select(1, 0)},
                 {y.slice(0, 0, len), all[1].select(1, i), all[2].select(1, i)}, "row " + std::to_string(i));
  }
}
