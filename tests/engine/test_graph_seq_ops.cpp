// The recurrent, attention and positional graph ops (engine/graph/ops_recurrent.cpp): their
// parameter specs equal the built modules' (torch's names), a graph over token ids equals the
// engine/nn module run with the padding mask of those ids, a text without tokens stays finite,
// and tiny text graphs train (the loss goes down).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <tuple>

#include "engine/core/ops.h"
#include "engine/core/random.h"
#include "engine/graph/graph_module.h"
#include "engine/graph/json.h"
#include "engine/graph/op_schema.h"
#include "engine/nn/attention.h"
#include "engine/nn/embedding.h"
#include "engine/nn/functional.h"
#include "engine/nn/rnn.h"
#include "engine/nn/sequence.h"
#include "engine/optim/adam.h"

namespace kiln::graph {
namespace {

using V = std::vector<int64_t>;

// ids [T] -> Embedding(20, 8) -> op -> Output.
Graph embedded(const std::string& op, const Attributes& attrs, int64_t t) {
  Graph g;
  NodeId ids = g.add_node("Input", "ids", {{"shape", V{t}}, {"dtype", std::string("i64")}});
  NodeId e = g.add_node("Embedding", "embed", {{"num_embeddings", int64_t{20}}, {"embedding_dim", int64_t{8}}});
  NodeId n = g.add_node(op, "op", attrs);
  NodeId out = g.add_node("Output", "y");
  g.connect({ids, 0}, {e, 0});
  g.connect({e, 0}, {n, 0});
  g.connect({n, 0}, {out, 0});
  return g;
}

// The node "op"'s entries of a state_dict, without the prefix.
nn::StateDict node_state(const nn::StateDict& sd) {
  nn::StateDict r;
  for (const auto& [k, v] : sd)
    if (k.rfind("op.", 0) == 0) r.emplace_back(k.substr(3), v);
  return r;
}

void expect_near(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  std::vector<float> x = a.to_vector<float>(), y = b.to_vector<float>();
  for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(x[i], y[i], 1e-5) << what << " element " << i;
}

struct OpCase {
  std::string op;
  Attributes attrs;
};

std::vector<OpCase> op_cases() {
  return {{"LSTM", {{"hidden_size", int64_t{5}}, {"bidirectional", true}, {"num_layers", int64_t{2}}}},
          {"GRU", {{"hidden_size", int64_t{5}}, {"bidirectional", true}}},
          {"RNN", {{"hidden_size", int64_t{5}}, {"nonlinearity", std::string("relu")}}},
          {"MultiheadAttention", {{"num_heads", int64_t{2}}}},
          {"MultiheadAttention", {{"num_heads", int64_t{4}}, {"causal", true}}},
          {"TransformerEncoderLayer", {{"nhead", int64_t{2}}, {"dim_feedforward", int64_t{12}}, {"dropout", 0.0}}},
          {"TransformerEncoderLayer",
           {{"nhead", int64_t{2}}, {"dim_feedforward", int64_t{12}}, {"activation", std::string("gelu")},
            {"norm_first", true}, {"causal", true}}},
          {"PositionalEmbedding", {{"max_length", int64_t{10}}}},
          {"PositionalEmbedding", {{"mode", std::string("sinusoidal")}, {"max_length", int64_t{10}}}}};
}

TEST(GraphSeqOps, ParameterSpecsAreTheModulesParameters) {
  for (const OpCase& c : op_cases()) {
    GraphModule m(embedded(c.op, c.attrs, 6));
    const OpSchema& s = OpRegistry::global().get(c.op);
    const Attributes attrs = s.with_defaults(c.attrs);
    const std::vector<ParamSpec> spec = s.parameters({TensorType{DType::f32, {kBatch, 6, 8}}}, attrs);
    std::vector<std::pair<std::string, Tensor>> params;
    for (const auto& [k, v] : m.named_parameters())
      if (k.rfind("op.", 0) == 0) params.emplace_back(k.substr(3), v);
    ASSERT_EQ(spec.size(), params.size()) << c.op;
    for (size_t i = 0; i < spec.size(); ++i) {
      EXPECT_EQ(spec[i].name, params[i].first) << c.op;
      EXPECT_EQ(shape_str(spec[i].shape), kiln::shape_str(params[i].second.shape())) << c.op << " " << spec[i].name;
    }
    EXPECT_EQ(m.analysis().total_parameters, m.num_parameters()) << c.op;
    EXPECT_GT(m.analysis().total_macs, 0) << c.op;
  }
  GraphModule lstm(embedded("LSTM", {{"hidden_size", int64_t{5}}}, 6));
  const nn::StateDict sd = lstm.state_dict();
  std::vector<std::string> names;
  for (const auto& [k, v] : sd) names.push_back(k);
  EXPECT_EQ(names, (std::vector<std::string>{"embed.weight", "op.weight_ih_l0", "op.weight_hh_l0", "op.bias_ih_l0",
                                             "op.bias_hh_l0"}));
}

// The engine/nn module the case's node should be, with the graph node's state loaded.
std::shared_ptr<nn::Module> reference(const OpCase& c, const nn::StateDict& state) {
  const Attributes a = OpRegistry::global().get(c.op).with_defaults(c.attrs);
  std::shared_ptr<nn::Module> m;
  if (c.op == "LSTM" || c.op == "GRU" || c.op == "RNN") {
    nn::RNNOptions o{.input_size = 8,
                     .hidden_size = attr_int(a, "hidden_size"),
                     .num_layers = attr_int(a, "num_layers"),
                     .batch_first = true,
                     .bidirectional = attr_bool(a, "bidirectional")};
    if (c.op == "LSTM") m = std::make_shared<nn::LSTM>(o);
    if (c.op == "GRU") m = std::make_shared<nn::GRU>(o);
    if (c.op == "RNN") o.nonlinearity = attr_string(a, "nonlinearity"), m = std::make_shared<nn::RNN>(o);
  } else if (c.op == "MultiheadAttention") {
    m = std::make_shared<nn::MultiheadAttention>(8, attr_int(a, "num_heads"), 0.0, true, true);
  } else if (c.op == "TransformerEncoderLayer") {
    m = std::make_shared<nn::TransformerEncoderLayer>(
        nn::TransformerEncoderLayerOptions{.d_model = 8,
                                           .nhead = attr_int(a, "nhead"),
                                           .dim_feedforward = attr_int(a, "dim_feedforward"),
                                           .activation = attr_string(a, "activation"),
                                           .batch_first = true,
                                           .norm_first = attr_bool(a, "norm_first")});
  } else if (attr_string(a, "mode") == "learned") {
    m = std::make_shared<nn::LearnedPositionalEmbedding>(attr_int(a, "max_length"), 8);
  } else {
    m = std::make_shared<nn::SinusoidalPositionalEncoding>(8, 0.0, attr_int(a, "max_length"));
  }
  m->load_state_dict(state);
  m->eval();
  return m;
}

Tensor run_reference(const OpCase& c, nn::Module& m, const Tensor& x, const Tensor& padded) {
  const Attributes a = OpRegistry::global().get(c.op).with_defaults(c.attrs);
  if (auto* rnn = dynamic_cast<nn::RNNBase*>(&m)) return rnn->forward_with_state(x, {}, {}, padded).output;
  if (auto* mha = dynamic_cast<nn::MultiheadAttention*>(&m))
    return mha->forward_attention(x, x, x, padded, false, {}, true, attr_bool(a, "causal")).output;
  if (auto* layer = dynamic_cast<nn::TransformerEncoderLayer*>(&m))
    return layer->forward_masked(x, {}, padded, attr_bool(a, "causal"));
  return m.forward(x);
}

// Token ids with trailing padding (id 0): the graph's output equals the module's run with
// lengths_to_padding_mask of those lengths.
TEST(GraphSeqOps, ForwardEqualsTheModuleWithThePaddingMask) {
  manual_seed(11);
  const Tensor ids = Tensor::from_vector<int64_t>({3, 4, 5, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 7, 0, 0, 0, 0}, {3, 6});
  const Tensor padded = nn::lengths_to_padding_mask(Tensor::from_vector<int64_t>({3, 6, 2}, {3}), 6);
  for (const OpCase& c : op_cases()) {
    GraphModule g(embedded(c.op, c.attrs, 6));
    g.eval();
    const nn::StateDict sd = g.state_dict();
    nn::Embedding embed(20, 8);
    embed.load_state_dict({{"weight", sd.at(0).second}});
    auto m = reference(c, node_state(sd));
    expect_near(g.forward(ids), run_reference(c, *m, embed.forward(ids), padded), c.op);
  }
}

// A text without any token (all padding): recurrent layers keep h0 and output 0, attention
// lets it attend to its padding instead of giving NaN; the other texts are unaffected.
TEST(GraphSeqOps, EmptyTextStaysFinite) {
  manual_seed(12);
  const Tensor ids = Tensor::from_vector<int64_t>({0, 0, 0, 0, 3, 4, 5, 0}, {2, 4});
  for (const OpCase& c : op_cases()) {
    GraphModule g(embedded(c.op, c.attrs, 4));
    g.eval();
    const Tensor y = g.forward(ids);
    for (float v : y.to_vector<float>()) ASSERT_TRUE(std::isfinite(v)) << c.op;
    const Tensor alone = g.forward(Tensor::from_vector<int64_t>({3, 4, 5, 0}, {1, 4}));
    expect_near(index_select(y, 0, Tensor::from_vector<int64_t>({1}, {1})), alone, c.op + " (the other text)");
  }
}

// label = whether token 3 occurs in a text of 3 to 8 tokens from 2..9 (padded to 8).
void toy_batch(Tensor& ids, Tensor& labels) {
  std::mt19937 rng(17);
  std::vector<int64_t> x, y;
  for (int n = 0; n < 32; ++n) {
    const int len = 3 + static_cast<int>(rng() % 6);
    bool has = false;
    for (int i = 0; i < len; ++i) {
      const int64_t t = 2 + static_cast<int64_t>(rng() % 8);
      x.push_back(t), has = has || t == 3;
    }
    for (int i = len; i < 8; ++i) x.push_back(0);
    y.push_back(has ? 1 : 0);
  }
  ids = Tensor::from_vector<int64_t>(x, {32, 8});
  labels = Tensor::from_vector<int64_t>(y, {32});
}

// ids -> Embedding -> [PositionalEmbedding] -> op -> SequencePool -> Linear(2).
double train_loss_ratio(const std::string& op, const Attributes& attrs, bool positions, int64_t width) {
  Graph g;
  NodeId prev = g.add_node("Input", "ids", {{"shape", V{8}}, {"dtype", std::string("i64")}});
  auto chain = [&](const std::string& o, const std::string& name, const Attributes& a) {
    NodeId n = g.add_node(o, name, a);
    g.connect({prev, 0}, {n, 0});
    prev = n;
  };
  chain("Embedding", "embed", {{"num_embeddings", int64_t{10}}, {"embedding_dim", int64_t{16}}});
  if (positions) chain("PositionalEmbedding", "pos", {{"max_length", int64_t{8}}});
  chain(op, "seq", attrs);
  chain("SequencePool", "pool", {{"mode", std::string("mean")}});
  chain("Linear", "fc", {{"in_features", width}, {"out_features", int64_t{2}}});
  chain("Output", "y", {});
  auto m = std::make_shared<GraphModule>(g);
  Tensor ids, labels;
  toy_batch(ids, labels);
  optim::Adam opt(m->parameters(), {.lr = 1e-2});
  double first = 0, last = 0;
  for (int step = 0; step < 40; ++step) {
    opt.zero_grad();
    Tensor loss = nn::F::cross_entropy(m->forward(ids), labels);
    loss.backward();
    opt.step();
    last = loss.item<float>();
    if (step == 0) first = last;
  }
  return last / first;
}

TEST(GraphSeqOps, TinyTextGraphsTrain) {
  manual_seed(5);
  EXPECT_LT(train_loss_ratio("LSTM", {{"hidden_size", int64_t{16}}}, false, 16), 0.5);
  EXPECT_LT(train_loss_ratio("GRU", {{"hidden_size", int64_t{8}}, {"bidirectional", true}}, false, 16), 0.5);
  EXPECT_LT(train_loss_ratio("TransformerEncoderLayer",
                             {{"nhead", int64_t{2}}, {"dim_feedforward", int64_t{32}}, {"dropout", 0.0}}, true, 16),
            0.5);
}

// The Studio's text templates (projects/templates) analyze without problems, hold the
// sequence layers, and classify a batch of padded token ids into their 2 classes.
TEST(GraphSeqOps, TextTemplatesAnalyzeAndRun) {
  manual_seed(9);
  const std::string dir = std::string(KILN_FIXTURES_DIR) + "/../../projects/templates/";
  for (const auto& [file, layer, length] :
       {std::tuple<std::string, std::string, int64_t>{"text_classifier_lstm.json", "LSTM", 200},
        {"small_transformer_classifier.json", "TransformerEncoderLayer", 128}}) {
    const Graph g = load_graph(dir + file);
    const Analysis a = analyze(g);
    EXPECT_TRUE(a.ok()) << file;
    bool has = false;
    for (const Node& n : g.nodes()) has = has || n.op == layer;
    EXPECT_TRUE(has) << file << " has no " << layer;
    GraphModule m(g);
    EXPECT_EQ(m.analysis().total_parameters, m.num_parameters()) << file;
    std::vector<int64_t> ids(static_cast<size_t>(2 * length), 0);
    for (int64_t t = 0; t < 7; ++t) ids[static_cast<size_t>(t)] = 5 + t, ids[static_cast<size_t>(length + t)] = 900 + t;
    const Tensor y = m.forward(Tensor::from_vector<int64_t>(ids, {2, length}));
    EXPECT_EQ(kiln::shape_str(y.shape()), "[2, 2]") << file;
  }
}

}  // namespace
}  // namespace kiln::graph
