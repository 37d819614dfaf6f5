// Native import of ONNX LSTM / GRU / RNN and of SequencePool's exported forms
// (engine/onnx/graph_import_sequence.h, Note [Sequence import]): Kiln's own export comes back as
// native nodes only with the same outputs; LSTM cases of libonnx-testdata, wrapped in the layout
// changes a batch-first model has, give the suite's expected values natively, and the cases the
// native layers do not compute fall back to onnx.<Op> with a warning naming the node and why;
// models exported by PyTorch 1.13 (tests/fixtures/make_rnn_onnx_fixtures.py) import natively.
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/core/ops.h"
#include "engine/core/random.h"
#include "engine/graph/graph_module.h"
#include "engine/onnx/executor.h"
#include "engine/onnx/export.h"
#include "engine/onnx/graph_import.h"
#include "engine/onnx/model.h"
#include "engine/onnx/npy.h"
#include "engine/onnx/suite.h"
#include "engine/onnx/tensor_proto.h"
#include "tests/common/test_deps.h"
#include "tests/onnx/model_builder.h"

using namespace kiln;
using graph::Attributes;
using graph::Graph;
using graph::GraphModule;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kSteps = 7, kVocab = 12, kEmbed = 8;
const std::string kNodeData = "/usr/share/libonnx-testdata/data/node";

graph::NodeId add(Graph& g, const std::string& op, const std::string& name, Attributes a, std::vector<graph::NodeId> from) {
  graph::NodeId id = g.add_node(op, name, std::move(a));
  for (size_t p = 0; p < from.size(); ++p) g.connect({from[p], 0}, {id, static_cast<int>(p)});
  return id;
}

// ids [T] -> Embedding -> op -> SequencePool(pool) -> Linear, outputs the layer's [N, T, C] and
// the logits; with `features` a float Input [T, E] instead of the ids (no padding mask).
Graph text_graph(const std::string& op, const Attributes& attrs, const std::string& pool, bool features) {
  Graph g;
  graph::NodeId x;
  if (features) {
    x = add(g, "Input", "feats", {{"shape", std::vector<int64_t>{kSteps, kEmbed}}}, {});
  } else {
    auto ids = add(g, "Input", "ids", {{"shape", std::vector<int64_t>{kSteps}}, {"dtype", std::string("i64")}}, {});
    x = add(g, "Embedding", "embed", {{"num_embeddings", kVocab}, {"embedding_dim", kEmbed}}, {ids});
  }
  auto layer = add(g, op, "layer", attrs, {x});
  auto p = add(g, "SequencePool", "pool", {{"mode", pool}}, {layer});
  const int64_t width = graph::attr_int(attrs, "hidden_size") * (graph::attr_bool(attrs, "bidirectional") ? 2 : 1);
  auto fc = add(g, "Linear", "fc", {{"in_features", width}, {"out_features", int64_t{3}}}, {p});
  add(g, "Output", "seq", {}, {layer});
  add(g, "Output", "logits", {}, {fc});
  return g;
}

// Token ids [4, 7]: rows of 7, 4, 1 and 0 tokens, padded with 0 at the end.
Tensor padded_ids() {
  std::vector<int64_t> v;
  const int64_t lens[] = {7, 4, 1, 0};
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t t = 0; t < kSteps; ++t) v.push_back(t < lens[r] ? 1 + (r * 5 + t * 3) % (kVocab - 1) : 0);
  return Tensor::from_vector<int64_t>(v, {4, kSteps});
}

// Largest |want - got| over the largest |want|, over all outputs.
double relative_error(const std::vector<Tensor>& want, const std::vector<Tensor>& got) {
  double diff = 0, top = 0;
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    EXPECT_EQ(want[i].shape(), got[i].shape()) << "output " << i;
    if (want[i].shape() != got[i].shape()) return INFINITY;
    top = std::max(top, amax(abs(want[i].to(DType::f64))).item<double>());
    diff = std::max(diff, amax(abs(sub(want[i].to(DType::f64), got[i].to(DType::f64)))).item<double>());
  }
  return diff / std::max(top, 1e-12);
}

std::map<std::string, int> op_counts(const Graph& g) {
  std::map<std::string, int> c;
  for (const graph::Node& n : g.nodes()) ++c[n.op];
  return c;
}
int onnx_nodes(const Graph& g) {
  int k = 0;
  for (const graph::Node& n : g.nodes()) k += n.op.rfind("onnx.", 0) == 0;
  return k;
}

// num_layers of each node of op, in graph order.
std::vector<int64_t> num_layers(const Graph& g, const std::string& op) {
  std::vector<int64_t> v;
  for (const graph::Node& n : g.nodes())
    if (n.op == op) v.push_back(graph::attr_int(n.attrs, "num_layers"));
  return v;
}

// Exported and imported again: only native nodes, `layers` nodes of op, the same outputs.
void round_trip(const std::string& op, int64_t hidden, int64_t layers, bool bidirectional, const std::string& pool,
                bool features) {
  SCOPED_TRACE(op + " hidden " + std::to_string(hidden) + " layers " + std::to_string(layers) +
               (bidirectional ? " bidirectional" : "") + " pool " + pool + (features ? " features" : " ids"));
  manual_seed(11);
  const Attributes attrs{{"hidden_size", hidden}, {"num_layers", layers}, {"bidirectional", bidirectional}};
  Graph g = text_graph(op, attrs, pool, features);
  GraphModule gm(g);
  nn::StateDict sd;
  for (const auto& [key, t] : gm.state_dict()) sd.emplace_back(key, uniform(t.shape(), -0.6, 0.6));
  gm.load_state_dict(sd);
  gm.eval();
  const std::vector<Tensor> in{features ? normal({4, kSteps, kEmbed}, 0, 1) : padded_ids()};
  const std::vector<Tensor> want = gm.forward(in);
  kiln::onnx::Model m = kiln::onnx::parse_model(kiln::onnx::export_model(g, gm.state_dict()), "", op);
  kiln::onnx::ImportedGraph ig = kiln::onnx::import_graph(m);
  for (const std::string& w : ig.warnings) ADD_FAILURE() << "warning: " << w;
  EXPECT_EQ(onnx_nodes(ig.graph), 0);
  std::map<std::string, int> ops = op_counts(ig.graph);
  EXPECT_EQ(ops[op], 1);  // the per-layer ONNX nodes stack into one (Note [Stacked layers])
  EXPECT_EQ(num_layers(ig.graph, op), std::vector<int64_t>{layers});
  EXPECT_EQ(ops["SequencePool"], 1);
  GraphModule back(ig.graph);
  back.eval();
  EXPECT_LE(relative_error(want, back.forward(in)), 1e-5);
}

bool has_warning(const kiln::onnx::ImportedGraph& ig, const std::string& start, const std::string& part) {
  for (const std::string& w : ig.warnings)
    if (w.rfind(start, 0) == 0 && w.find(part) != std::string::npos) return true;
  return false;
}

std::string dump(const kiln::onnx::ImportedGraph& ig) {
  std::string s;
  for (const std::string& w : ig.warnings) s += "\n  " + w;
  return s;
}

// libonnx-testdata case `name` (X, W, R [, B ...] graph inputs, output Y_h) as a batch-first model:
// feats [N, T, C] -> Transpose -> the case's node (its other inputs initializers, output Y) ->
// Transpose [2, 0, 1, 3] -> Reshape [0, 0, D*H]. Returns the model, its input (X transposed)
// and the expected Y_h.
void copy_attributes(const kiln::onnx::Node& node, ::onnx::NodeProto* to) {
  for (const auto& [key, a] : node.attributes) {
    auto* p = to->add_attribute();
    p->set_name(key);
    if (a.type == kiln::onnx::Attribute::Type::Int) p->set_type(::onnx::AttributeProto::INT), p->set_i(a.i);
    else if (a.type == kiln::onnx::Attribute::Type::Float) p->set_type(::onnx::AttributeProto::FLOAT), p->set_f(static_cast<float>(a.f));
    else if (a.type == kiln::onnx::Attribute::Type::String) p->set_type(::onnx::AttributeProto::STRING), p->set_s(a.s);
    else if (a.type == kiln::onnx::Attribute::Type::Strings) {
      p->set_type(::onnx::AttributeProto::STRINGS);
      for (const std::string& v : a.strings) p->add_strings(v);
    } else ADD_FAILURE() << node.name << ": attribute " << key << " not copied";
  }
}

struct Wrapped {
  kiln::onnx::Model model;
  Tensor input, y_h;
};
Wrapped wrap_case(const std::string& name) {
  const std::string dir = kNodeData + "/" + name;
  kiln::onnx::Model c = kiln::onnx::load_model(dir + "/model.onnx");
  const kiln::onnx::Node& node = c.graph.nodes.at(0);
  ::onnx::GraphProto g;
  g.set_name(name);
  Wrapped w;
  for (size_t i = 0; i < c.graph.inputs.size(); ++i) {
    Tensor t = kiln::onnx::load_tensor_file(dir + "/test_data_set_0/input_" + std::to_string(i) + ".pb");
    if (i == 0) {
      w.input = t.transpose(0, 1).contiguous();
      *g.add_input() = kiln::onnx::test::value_info("feats", 1, {-1, t.shape()[0], t.shape()[2]});
    } else {
      kiln::onnx::tensor_to_proto(t, *g.add_initializer());
      g.mutable_initializer(g.initializer_size() - 1)->set_name(c.graph.inputs[i].name);
    }
  }
  w.y_h = kiln::onnx::load_tensor_file(dir + "/test_data_set_0/output_0.pb");
  kiln::onnx::test::add_node(g, "Transpose", {"feats"}, {"x_tnc"}, "to_time_major");
  kiln::onnx::test::set_ints(g.mutable_node(0), "perm", {1, 0, 2});
  std::vector<std::string> ins = node.inputs;
  ins[0] = "x_tnc";
  copy_attributes(node, kiln::onnx::test::add_node(g, node.op_type, ins, {"Y"}, "rnn"));
  kiln::onnx::test::add_node(g, "Transpose", {"Y"}, {"y_ntdh"}, "to_batch_first");
  kiln::onnx::test::set_ints(g.mutable_node(2), "perm", {2, 0, 1, 3});
  kiln::onnx::test::add_int64_initializer(g, "merged", {0, 0, -1});
  kiln::onnx::test::add_node(g, "Reshape", {"y_ntdh", "merged"}, {"y"}, "merge");
  *g.add_output() = kiln::onnx::test::value_info("y", 1, {-1, w.input.shape()[1], 1});
  g.mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(2)->set_dim_param("H");
  std::string bytes;
  kiln::onnx::test::model_with(g, 17).SerializeToString(&bytes);
  w.model = kiln::onnx::parse_model(bytes, "", name);
  return w;
}

}  // namespace

TEST(OnnxImportSequence, KilnLstmAndGruComeBackNative) {
  round_trip("LSTM", 6, 1, false, "mean", false);  // the text template's form
  round_trip("LSTM", 5, 2, true, "max", false);
  round_trip("LSTM", 4, 2, false, "mean", true);   // features: no sequence_lens
  round_trip("GRU", 5, 2, true, "mean", false);
  round_trip("GRU", 3, 1, false, "max", true);
  round_trip("RNN", 4, 1, true, "mean", false);
}

// Case lstm_defaults and lstm_with_initial_bias: forward, default activations: native, and Y's
// last step is the suite's Y_h.
TEST(OnnxImportSequence, TestdataLstmNativeGivesExpectedValues) {
  KILN_SKIP_UNLESS_DEP(fs::exists(kNodeData + "/test_lstm_defaults"), "libonnx-testdata", "no " + kNodeData);
  for (const char* name : {"test_lstm_defaults", "test_lstm_with_initial_bias"}) {
    SCOPED_TRACE(name);
    Wrapped w = wrap_case(name);
    kiln::onnx::ImportedGraph ig = kiln::onnx::import_graph(w.model);
    EXPECT_TRUE(ig.warnings.empty()) << dump(ig);
    EXPECT_EQ(onnx_nodes(ig.graph), 0);
    EXPECT_EQ(op_counts(ig.graph)["LSTM"], 1);
    GraphModule gm(ig.graph);
    gm.eval();
    Tensor y = gm.forward(std::vector<Tensor>{w.input}).at(0);  // [N, T, H]
    const Tensor last = y.select(1, y.shape()[1] - 1).unsqueeze(0);
    EXPECT_LE(relative_error({w.y_h}, {last}), 1e-5);
  }
}

// The cases the native layers do not compute stay onnx.<Op>, warned with the reason, and still
// give the suite's values through the ONNX executor's kernels.
TEST(OnnxImportSequence, TestdataFormsOutsideTheNativeLayersFallBack) {
  KILN_SKIP_UNLESS_DEP(fs::exists(kNodeData + "/test_gru_defaults"), "libonnx-testdata", "no " + kNodeData);
  const std::vector<std::tuple<const char*, const char*, const char*, bool>> cases{
      {"test_gru_defaults", "GRU", "linear_before_reset = 0", true},
      {"test_gru_with_initial_bias", "GRU", "linear_before_reset = 0", true},
      {"test_gru_seq_length", "GRU", "linear_before_reset = 0", true},
  };
  for (const auto& [name, op, why, last_is_y_h] : cases) {
    SCOPED_TRACE(name);
    Wrapped w = wrap_case(name);
    kiln::onnx::ImportedGraph ig = kiln::onnx::import_graph(w.model);
    EXPECT_TRUE(has_warning(ig, std::string("node 'rnn' (") + op + ") stays onnx." + op + ": ", why)) << dump(ig);
    EXPECT_EQ(op_counts(ig.graph)[std::string("onnx.") + op], 1);
    GraphModule gm(ig.graph);
    Tensor y = gm.forward(std::vector<Tensor>{w.input}).at(0);
    if (last_is_y_h) {
      EXPECT_LE(relative_error({w.y_h}, {y.select(1, y.shape()[1] - 1).unsqueeze(0)}), 1e-5);
    }
  }
  // layout 1 with Y and Y_h both graph outputs: the whole case as onnx.LSTM, both outputs right.
  const std::string dir = kNodeData + "/test_lstm_batchwise";
  kiln::onnx::ImportedGraph ig = kiln::onnx::import_graph(kiln::onnx::load_model(dir + "/model.onnx"));
  EXPECT_EQ(op_counts(ig.graph)["onnx.LSTM"], 1);
  GraphModule gm(ig.graph);
  std::vector<Tensor> in;
  for (int i = 0; i < 3; ++i) in.push_back(kiln::onnx::load_tensor_file(dir + "/test_data_set_0/input_" + std::to_string(i) + ".pb"));
  std::vector<Tensor> want{kiln::onnx::load_tensor_file(dir + "/test_data_set_0/output_0.pb"),
                           kiln::onnx::load_tensor_file(dir + "/test_data_set_0/output_1.pb")};
  EXPECT_LE(relative_error(want, gm.forward(in)), 1e-5);
}

// Bad input: W computed at run time (a graph input): onnx.LSTM, the warning names the node.
TEST(OnnxImportSequence, LstmWhoseWIsNotAnInitializerFallsBack) {
  ::onnx::GraphProto g;
  g.set_name("w_input");
  *g.add_input() = kiln::onnx::test::value_info("feats", 1, {-1, 5, 3});
  *g.add_input() = kiln::onnx::test::value_info("W", 1, {1, 8, 3});
  std::vector<float> r(1 * 8 * 2, 0.1f);
  kiln::onnx::test::add_float_initializer(g, "R", {1, 8, 2}, r);
  kiln::onnx::test::set_ints(kiln::onnx::test::add_node(g, "Transpose", {"feats"}, {"x"}, "in"), "perm", {1, 0, 2});
  kiln::onnx::test::set_int(kiln::onnx::test::add_node(g, "LSTM", {"x", "W", "R"}, {"Y"}, "lstm_w"), "hidden_size", 2);
  kiln::onnx::test::set_ints(kiln::onnx::test::add_node(g, "Transpose", {"Y"}, {"yt"}, "out"), "perm", {2, 0, 1, 3});
  kiln::onnx::test::add_int64_initializer(g, "shape", {0, 0, 2});
  kiln::onnx::test::add_node(g, "Reshape", {"yt", "shape"}, {"y"}, "merge");
  *g.add_output() = kiln::onnx::test::value_info("y", 1, {-1, 5, 2});
  std::string bytes;
  kiln::onnx::test::model_with(g, 17).SerializeToString(&bytes);
  kiln::onnx::ImportedGraph ig = kiln::onnx::import_graph(kiln::onnx::parse_model(bytes, "", "w_input"));
  EXPECT_TRUE(has_warning(ig, "node 'lstm_w' (LSTM) stays onnx.LSTM: ", "its W (input 1) is computed at run time"))
      << dump(ig);
  EXPECT_EQ(op_counts(ig.graph)["onnx.LSTM"], 1);
  EXPECT_EQ(op_counts(ig.graph)["LSTM"], 0);
}

// PyTorch 1.13's exports (make_rnn_onnx_fixtures.py): all native, PyTorch's outputs.
TEST(OnnxImportSequence, TorchExportedLstmAndGruImportNative) {
  const std::string dir = std::string(KILN_FIXTURES_DIR) + "/rnn_onnx/";
  const std::vector<std::tuple<const char*, int, std::map<std::string, int>>> models{
      {"lstm_h_last", 2, {{"LSTM", 2}, {"SequencePool", 1}, {"Linear", 1}}},  // h[-1]: SequencePool last
      {"gru_bidir", 1, {{"GRU", 1}, {"Linear", 1}}},
  };
  for (const auto& [name, outputs, want_ops] : models) {
    SCOPED_TRACE(name);
    kiln::onnx::ImportedGraph ig = kiln::onnx::import_graph(kiln::onnx::load_model(dir + name + ".onnx"));
    EXPECT_TRUE(ig.warnings.empty()) << dump(ig);
    EXPECT_EQ(onnx_nodes(ig.graph), 0);
    std::map<std::string, int> ops = op_counts(ig.graph);
    for (const auto& [op, count] : want_ops) EXPECT_EQ(ops[op], count) << op;
    GraphModule gm(ig.graph);
    gm.eval();
    std::vector<Tensor> want;
    for (int i = 0; i < outputs; ++i) want.push_back(kiln::onnx::load_npy(dir + name + ".out" + std::to_string(i) + ".npy"));
    EXPECT_LE(relative_error(want, gm.forward(std::vector<Tensor>{kiln::onnx::load_npy(dir + name + ".input.npy")})), 1e-5);
  }
}

namespace {

// The model's outputs for `input` run by the ONNX executor (the reference the import must match).
std::vector<Tensor> executor_outputs(const kiln::onnx::Model& m, const Tensor& input) {
  kiln::onnx::Session session(m);
  return session.run({{m.graph.inputs.at(0).name, input}});
}

std::vector<Tensor> torch_outputs(const std::string& dir, const std::string& name, int outputs) {
  std::vector<Tensor> want;
  for (int i = 0; i < outputs; ++i) want.push_back(kiln::onnx::load_npy(dir + name + ".out" + std::to_string(i) + ".npy"));
  return want;
}

}  // namespace

// torch.onnx's stacked layers (one ONNX node per layer, h_n a Concat of their Y_h): one native
// node of num_layers 2 when only the top layer's state is read; chained one-layer nodes when
// the lower layer's h_n is read too. Outputs match PyTorch's and the ONNX executor's.
TEST(OnnxImportSequence, TorchStackedLayersImportAsOneNativeLayer) {
  const std::string dir = std::string(KILN_FIXTURES_DIR) + "/rnn_onnx/";
  struct Case {
    const char* name;
    int outputs;
    const char* op;
    std::vector<int64_t> layers;  // num_layers of each native node of op
    int pools;                    // SequencePool nodes (h_n[i] as the last step)
  };
  const std::vector<Case> cases{
      {"lstm2_h_last", 2, "LSTM", {2}, 1},  // fc(h[-1]), y
      {"lstm2_bidir", 1, "LSTM", {2}, 0},   // bidirectional layers joined by Transpose + Reshape
      {"gru2_h_both", 2, "GRU", {1, 1}, 2}, // h[0] and h[1]: the lower layer's state is read
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    kiln::onnx::Model m = kiln::onnx::load_model(dir + c.name + ".onnx");
    kiln::onnx::ImportedGraph ig = kiln::onnx::import_graph(m);
    EXPECT_TRUE(ig.warnings.empty()) << dump(ig);
    EXPECT_EQ(onnx_nodes(ig.graph), 0);
    EXPECT_EQ(num_layers(ig.graph, c.op), c.layers);
    EXPECT_EQ(op_counts(ig.graph)["SequencePool"], c.pools);
    const Tensor x = kiln::onnx::load_npy(dir + c.name + ".input.npy");
    GraphModule gm(ig.graph);
    gm.eval();
    const std::vector<Tensor> got = gm.forward(std::vector<Tensor>{x});
    EXPECT_LE(relative_error(torch_outputs(dir, c.name, c.outputs), got), 1e-5);
    EXPECT_LE(relative_error(executor_outputs(m, x), got), 1e-5);
  }
}

// What the native layers do not give stays onnx.<Op> with the reason, and the import still
// computes PyTorch's outputs: h_n [2, N, H] as a graph output (the Concat's ONNX layout), and
// the LSTM's cell state Y_c (the native layer's one output is Y).
TEST(OnnxImportSequence, TorchStateOutputsOutsideTheNativeLayerFallBack) {
  const std::string dir = std::string(KILN_FIXTURES_DIR) + "/rnn_onnx/";
  const std::vector<std::tuple<const char*, int, const char*>> cases{
      {"lstm2_h_all", 2, "a graph output in ONNX's [L*D, N, H] layout"},
      {"lstm_c_last", 1, "its output Y_c is read; the native LSTM gives only Y"},
  };
  for (const auto& [name, nodes, why] : cases) {
    SCOPED_TRACE(name);
    kiln::onnx::Model m = kiln::onnx::load_model(dir + name + ".onnx");
    kiln::onnx::ImportedGraph ig = kiln::onnx::import_graph(m);
    EXPECT_TRUE(has_warning(ig, "node '", why)) << dump(ig);
    EXPECT_EQ(op_counts(ig.graph)["onnx.LSTM"], nodes);
    EXPECT_EQ(op_counts(ig.graph)["LSTM"], 0);
    const Tensor x = kiln::onnx::load_npy(dir + name + ".input.npy");
    GraphModule gm(ig.graph);
    gm.eval();
    EXPECT_LE(relative_error(torch_outputs(dir, name, 1), gm.forward(std::vector<Tensor>{x})), 1e-5);
  }
}

namespace {

// libonnx-testdata's layout 1 case `name` (X [N, T, C] a graph input, its other inputs made
// initializers) with Y read as [N, T, D*H] by Reshape [0, 0, -1] and Y_h as [N, H] by
// Squeeze(axis 1): outputs y and h. y_h holds the suite's Y_h; `expected_y` its Y.
Wrapped batch_major_case(const std::string& name, Tensor& expected_y) {
  const std::string dir = kNodeData + "/" + name;
  kiln::onnx::Model c = kiln::onnx::load_model(dir + "/model.onnx");
  const kiln::onnx::Node& node = c.graph.nodes.at(0);
  ::onnx::GraphProto g;
  g.set_name(name);
  Wrapped w;
  for (size_t i = 0; i < c.graph.inputs.size(); ++i) {
    Tensor t = kiln::onnx::load_tensor_file(dir + "/test_data_set_0/input_" + std::to_string(i) + ".pb");
    if (i == 0) {
      w.input = t;
      *g.add_input() = kiln::onnx::test::value_info(c.graph.inputs[0].name, 1, {-1, t.shape()[1], t.shape()[2]});
    } else {
      kiln::onnx::tensor_to_proto(t, *g.add_initializer());
      g.mutable_initializer(g.initializer_size() - 1)->set_name(c.graph.inputs[i].name);
    }
  }
  expected_y = kiln::onnx::load_tensor_file(dir + "/test_data_set_0/output_0.pb");
  w.y_h = kiln::onnx::load_tensor_file(dir + "/test_data_set_0/output_1.pb");
  copy_attributes(node, kiln::onnx::test::add_node(g, node.op_type, node.inputs, {"Y", "Y_h"}, "rnn"));
  kiln::onnx::test::add_int64_initializer(g, "merged", {0, 0, -1});
  kiln::onnx::test::add_node(g, "Reshape", {"Y", "merged"}, {"y"}, "merge");
  kiln::onnx::test::add_int64_initializer(g, "axis1", {1});
  kiln::onnx::test::add_node(g, "Squeeze", {"Y_h", "axis1"}, {"h"}, "last");
  *g.add_output() = kiln::onnx::test::value_info("y", 1, {-1, w.input.shape()[1], expected_y.shape()[3]});
  *g.add_output() = kiln::onnx::test::value_info("h", 1, {-1, expected_y.shape()[3]});
  std::string bytes;
  kiln::onnx::test::model_with(g, 17).SerializeToString(&bytes);
  w.model = kiln::onnx::parse_model(bytes, "", name);
  return w;
}

}  // namespace

// layout 1 (batch-major X and Y): the native layer's own form. The LSTM and RNN cases become one
// native node whose outputs are the suite's Y and Y_h and the ONNX executor's; GRU's case
// (linear_before_reset 0) stays onnx.GRU with that reason and still gives the suite's values.
TEST(OnnxImportSequence, TestdataBatchMajorLayoutImportsNative) {
  KILN_SKIP_UNLESS_DEP(fs::exists(kNodeData + "/test_lstm_batchwise"), "libonnx-testdata", "no " + kNodeData);
  const std::vector<std::tuple<const char*, const char*, bool>> cases{
      {"test_lstm_batchwise", "LSTM", true},
      {"test_simple_rnn_batchwise", "RNN", true},
      {"test_gru_batchwise", "GRU", false},
  };
  for (const auto& [name, op, native] : cases) {
    SCOPED_TRACE(name);
    Tensor y;
    Wrapped w = batch_major_case(name, y);
    kiln::onnx::ImportedGraph ig = kiln::onnx::import_graph(w.model);
    const std::map<std::string, int> ops = op_counts(ig.graph);
    if (native) {
      EXPECT_TRUE(ig.warnings.empty()) << dump(ig);
      EXPECT_EQ(onnx_nodes(ig.graph), 0);
      EXPECT_EQ(ops.count(op) ? ops.at(op) : 0, 1);
    } else {
      EXPECT_TRUE(has_warning(ig, std::string("node 'rnn' (") + op + ") stays onnx." + op + ": ", "linear_before_reset = 0"))
          << dump(ig);
    }
    GraphModule gm(ig.graph);
    gm.eval();
    const std::vector<Tensor> got = gm.forward(std::vector<Tensor>{w.input});
    const int64_t n = y.shape()[0], t = y.shape()[1], h = y.shape()[3];
    EXPECT_LE(relative_error({y.reshape({n, t, h}), w.y_h.reshape({n, h})}, got), 1e-5);
    EXPECT_LE(relative_error(executor_outputs(w.model, w.input), got), 1e-5);
  }
}

// direction "reverse" alone: the native layers run forward or both ways (as PyTorch's, which
// exports no reverse-only layer), so the node stays onnx.LSTM with that reason and the imported
// graph gives the ONNX executor's outputs.
TEST(OnnxImportSequence, ReverseOnlyLstmFallsBack) {
  ::onnx::GraphProto g;
  g.set_name("reverse");
  *g.add_input() = kiln::onnx::test::value_info("feats", 1, {-1, 5, 3});
  std::vector<float> w(8 * 3), r(8 * 2);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.1f * static_cast<float>(static_cast<int>(i % 7) - 3);
  for (size_t i = 0; i < r.size(); ++i) r[i] = 0.05f * static_cast<float>(static_cast<int>(i % 5) - 2);
  kiln::onnx::test::add_float_initializer(g, "W", {1, 8, 3}, w);
  kiln::onnx::test::add_float_initializer(g, "R", {1, 8, 2}, r);
  kiln::onnx::test::set_ints(kiln::onnx::test::add_node(g, "Transpose", {"feats"}, {"x"}, "in"), "perm", {1, 0, 2});
  ::onnx::NodeProto* lstm = kiln::onnx::test::add_node(g, "LSTM", {"x", "W", "R"}, {"Y"}, "lstm_rev");
  kiln::onnx::test::set_int(lstm, "hidden_size", 2);
  auto* dir = lstm->add_attribute();
  dir->set_name("direction");
  dir->set_type(::onnx::AttributeProto::STRING);
  dir->set_s("reverse");
  kiln::onnx::test::set_ints(kiln::onnx::test::add_node(g, "Transpose", {"Y"}, {"yt"}, "out"), "perm", {2, 0, 1, 3});
  kiln::onnx::test::add_int64_initializer(g, "shape", {0, 0, 2});
  kiln::onnx::test::add_node(g, "Reshape", {"yt", "shape"}, {"y"}, "merge");
  *g.add_output() = kiln::onnx::test::value_info("y", 1, {-1, 5, 2});
  std::string bytes;
  kiln::onnx::test::model_with(g, 17).SerializeToString(&bytes);
  const kiln::onnx::Model m = kiln::onnx::parse_model(bytes, "", "reverse");
  kiln::onnx::ImportedGraph ig = kiln::onnx::import_graph(m);
  EXPECT_TRUE(has_warning(ig, "node 'lstm_rev' (LSTM) stays onnx.LSTM: ", "direction reverse alone has no native form"))
      << dump(ig);
  EXPECT_EQ(op_counts(ig.graph)["onnx.LSTM"], 1);
  EXPECT_EQ(op_counts(ig.graph)["LSTM"], 0);
  manual_seed(3);
  const Tensor x = normal({2, 5, 3}, 0, 1);
  GraphModule gm(ig.graph);
  EXPECT_LE(relative_error(executor_outputs(m, x), gm.forward(std::vector<Tensor>{x})), 1e-6);
}

namespace {

// feats [N, 5, 4] through a chain of one-direction recurrent nodes (hidden 3; GRU with
// linear_before_reset 1), each {op, layout}, joined as torch.onnx joins stacked layers: layout 0
// through Squeeze(axis 1) (Transpose in and out), layout 1 through Reshape [0, 0, -1].
kiln::onnx::Model chain_model(const std::vector<std::pair<std::string, int64_t>>& layers) {
  namespace t = kiln::onnx::test;
  ::onnx::GraphProto g;
  g.set_name("chain");
  *g.add_input() = t::value_info("feats", 1, {-1, 5, 4});
  t::add_int64_initializer(g, "axis1", {1});
  t::add_int64_initializer(g, "merged", {0, 0, -1});
  const int64_t h = 3;
  std::string x = "feats";
  if (layers.at(0).second == 0) t::set_ints(t::add_node(g, "Transpose", {"feats"}, {"x_tnc"}, "in"), "perm", {1, 0, 2}), x = "x_tnc";
  int64_t input = 4;
  for (size_t j = 0; j < layers.size(); ++j) {
    const auto& [op, layout] = layers[j];
    const int64_t gh = (op == "LSTM" ? 4 : op == "GRU" ? 3 : 1) * h;
    const std::string l = "l" + std::to_string(j);
    auto values = [&](int64_t n, int salt) {
      std::vector<float> v(static_cast<size_t>(n));
      for (size_t i = 0; i < v.size(); ++i) v[i] = 0.08f * static_cast<float>(static_cast<int>((i * 7 + salt) % 11) - 5);
      return v;
    };
    t::add_float_initializer(g, l + "/W", {1, gh, input}, values(gh * input, 1 + static_cast<int>(j)));
    t::add_float_initializer(g, l + "/R", {1, gh, h}, values(gh * h, 3 + static_cast<int>(j)));
    t::add_float_initializer(g, l + "/B", {1, 2 * gh}, values(2 * gh, 5 + static_cast<int>(j)));
    ::onnx::NodeProto* n = t::add_node(g, op, {x, l + "/W", l + "/R", l + "/B"}, {l + "/Y"}, l);
    t::set_int(n, "hidden_size", h);
    if (layout) t::set_int(n, "layout", 1);
    if (op == "GRU") t::set_int(n, "linear_before_reset", 1);
    x = l + (layout ? "/out" : "/tnh");
    if (layout) t::add_node(g, "Reshape", {l + "/Y", "merged"}, {x}, l + "/merge");
    else t::add_node(g, "Squeeze", {l + "/Y", "axis1"}, {x}, l + "/squeeze");
    input = h;
  }
  if (layers.back().second == 0) t::set_ints(t::add_node(g, "Transpose", {x}, {"y"}, "out"), "perm", {1, 0, 2});
  else t::add_node(g, "Identity", {x}, {"y"}, "out");
  *g.add_output() = t::value_info("y", 1, {-1, 5, h});
  std::string bytes;
  t::model_with(g, 17).SerializeToString(&bytes);
  return kiln::onnx::parse_model(bytes, "", "chain");
}

}  // namespace

// Note [Stacked layers]: a chain of one op stacks into one native node (three layers here);
// a chain of different ops, and layout 1 chains, stay one native node per layer. All match the
// ONNX executor.
TEST(OnnxImportSequence, ChainsStackOnlyWhenTheyAreOneLayer) {
  struct Case {
    std::vector<std::pair<std::string, int64_t>> layers;
    std::map<std::string, std::vector<int64_t>> num_layers;  // op -> num_layers of its native nodes
  };
  const std::vector<Case> cases{
      {{{"LSTM", 0}, {"LSTM", 0}, {"LSTM", 0}}, {{"LSTM", {3}}}},
      {{{"RNN", 0}, {"RNN", 0}}, {{"RNN", {2}}}},
      {{{"LSTM", 0}, {"GRU", 0}}, {{"LSTM", {1}}, {"GRU", {1}}}},
      {{{"GRU", 1}, {"GRU", 1}}, {{"GRU", {1, 1}}}},
  };
  for (const Case& c : cases) {
    std::string trace;
    for (const auto& [op, layout] : c.layers) trace += op + " layout " + std::to_string(layout) + "; ";
    SCOPED_TRACE(trace);
    const kiln::onnx::Model m = chain_model(c.layers);
    kiln::onnx::ImportedGraph ig = kiln::onnx::import_graph(m);
    EXPECT_TRUE(ig.warnings.empty()) << dump(ig);
    EXPECT_EQ(onnx_nodes(ig.graph), 0);
    for (const auto& [op, layers] : c.num_layers) EXPECT_EQ(num_layers(ig.graph, op), layers) << op;
    manual_seed(5);
    const Tensor x = normal({2, 5, 4}, 0, 1);
    GraphModule gm(ig.graph);
    gm.eval();
    EXPECT_LE(relative_error(executor_outputs(m, x), gm.forward(std::vector<Tensor>{x})), 1e-5);
  }
}
