// Symbolic dimensions beyond the batch (issue 6): an NLP-style model with input_ids
// [batch, sequence] imports onto the canvas with "sequence" on its edges, runs at any
// sequence length, saves as JSON and exports with the same dim_param names; ill-formed dims
// are refused naming the input.
#include <gtest/gtest.h>

#include "engine/graph/analysis.h"
#include "engine/graph/graph_module.h"
#include "engine/graph/json.h"
#include "engine/onnx/export.h"
#include "engine/onnx/graph_import.h"
#include "engine/onnx/suite.h"
#include "model_builder.h"

using namespace kiln;
using namespace kiln::onnx::test;

namespace {

constexpr int64_t kVocab = 10, kWidth = 4;

::onnx::ValueInfoProto named_dims(const std::string& name, int32_t elem_type, const std::vector<std::string>& dims) {
  ::onnx::ValueInfoProto v;
  v.set_name(name);
  auto* t = v.mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem_type);
  for (const std::string& d : dims) {
    auto* dim = t->mutable_shape()->add_dim();
    if (!d.empty() && d.find_first_not_of("0123456789") == std::string::npos) dim->set_dim_value(std::stoll(d));
    else if (!d.empty()) dim->set_dim_param(d);
  }
  return v;
}

std::vector<float> ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(static_cast<int64_t>(i % 7) - 3);
  return v;
}

// input_ids [batch, sequence] -> Gather(embedding) -> MatMul -> Softmax = probs
// [batch, sequence, 4]; Reshape(probs, [0, -1]) = flat [batch, sequence * 4].
::onnx::ModelProto token_model(const std::vector<std::string>& ids_dims) {
  ::onnx::GraphProto g;
  g.set_name("tokens");
  *g.add_input() = named_dims("input_ids", ::onnx::TensorProto::INT64, ids_dims);
  *g.add_output() = named_dims("probs", ::onnx::TensorProto::FLOAT, {"batch", "sequence", "4"});
  *g.add_output() = named_dims("flat", ::onnx::TensorProto::FLOAT, {"batch", "flat_width"});
  add_float_initializer(g, "embedding", {kVocab, kWidth}, ramp(kVocab * kWidth, 0.25f));
  add_float_initializer(g, "proj", {kWidth, kWidth}, ramp(kWidth * kWidth, 0.5f));
  add_int64_initializer(g, "flat_shape", {0, -1});
  add_node(g, "Gather", {"embedding", "input_ids"}, {"emb"}, "/embed/Gather");
  add_node(g, "MatMul", {"emb", "proj"}, {"h"}, "/proj/MatMul");
  set_int(add_node(g, "Softmax", {"h"}, {"probs"}, "/Softmax"), "axis", -1);
  add_node(g, "Reshape", {"probs", "flat_shape"}, {"flat"}, "/Reshape");
  return model_with(g, 17);
}

kiln::onnx::Model parse(const ::onnx::ModelProto& m) { return kiln::onnx::parse_model(m.SerializeAsString(), ""); }

Tensor token_ids(int64_t batch, int64_t sequence) {
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < batch * sequence; ++i) ids.push_back((i * 3 + 1) % kVocab);
  return Tensor::from_vector(ids, {batch, sequence});
}

// The output type of the node named `name` ("" when there is none).
std::string type_of(const graph::Graph& g, const graph::Analysis& an, const std::string& name) {
  for (const graph::Node& n : g.nodes())
    if (n.name == name) return an.nodes.at(n.id).outputs.at(0).str();
  return "";
}

void expect_same(const std::vector<Tensor>& want, const std::vector<Tensor>& got) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    double err = 0;
    EXPECT_EQ(want[i].shape(), got[i].shape()) << "output " << i;
    EXPECT_EQ(kiln::onnx::compare_tensors(want[i], got[i], 1e-6, 1e-7, err), "") << "output " << i;
  }
}

std::string import_error(const ::onnx::ModelProto& m) {
  try {
    kiln::onnx::import_graph(parse(m));
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(OnnxSymbolicDims, SequenceModelImportsWithNamedDimsAndRunsAtAnyLength) {
  const kiln::onnx::Model model = parse(token_model({"batch", "sequence"}));
  kiln::onnx::ImportedGraph ig = kiln::onnx::import_graph(model);
  graph::Analysis an = graph::analyze(ig.graph);
  ASSERT_TRUE(an.ok()) << an.problems.at(0).message;
  const graph::Node& input = ig.graph.node(ig.graph.input_nodes().at(0));
  EXPECT_EQ(graph::attr_ints(input.attrs, "shape"), std::vector<int64_t>{-1});
  EXPECT_EQ(graph::attr_string(input.attrs, "dim_params"), "sequence");
  EXPECT_EQ(graph::attr_int(input.attrs, "batch"), 0);
  // Edge labels: the sequence stays named through Gather, MatMul and Softmax; the Reshape's
  // sequence * 4 has no name ("?"), never a number.
  EXPECT_EQ(type_of(ig.graph, an, "input_ids"), "i64[N, sequence]");
  EXPECT_EQ(type_of(ig.graph, an, "embed_Gather"), "f32[N, sequence, 4]");
  EXPECT_EQ(type_of(ig.graph, an, "proj_MatMul"), "f32[N, sequence, 4]");
  EXPECT_EQ(type_of(ig.graph, an, "Softmax"), "f32[N, sequence, 4]");
  EXPECT_EQ(type_of(ig.graph, an, "Reshape"), "f32[N, ?]");
  graph::GraphModule gm(ig.graph);
  gm.load_state_dict(ig.state_dict);
  gm.eval();
  kiln::onnx::Session session(model);
  for (int64_t sequence : {3, 7}) {
    SCOPED_TRACE(sequence);
    const Tensor ids = token_ids(2, sequence);
    const std::vector<Tensor> got = gm.forward(std::vector<Tensor>{ids});
    expect_same(session.run({{"input_ids", ids}}), got);
    EXPECT_EQ(got.at(0).shape(), (Shape{2, sequence, kWidth}));
  }
}

// Editing the Input follows downstream: a fixed sequence of 6 shows 6 on every edge that
// had "sequence"; the "?" stays "?".
TEST(OnnxSymbolicDims, FixingTheSequenceOnTheInputShowsItDownstream) {
  kiln::onnx::ImportedGraph ig = kiln::onnx::import_graph(parse(token_model({"batch", "sequence"})));
  const graph::NodeId input = ig.graph.input_nodes().at(0);
  ig.graph.set_attr(input, "shape", std::vector<int64_t>{6});
  ig.graph.set_attr(input, "dim_params", std::string());
  graph::Analysis an = graph::analyze(ig.graph);
  ASSERT_TRUE(an.ok()) << an.problems.at(0).message;
  EXPECT_EQ(type_of(ig.graph, an, "Softmax"), "f32[N, 6, 4]");
  EXPECT_EQ(type_of(ig.graph, an, "Reshape"), "f32[N, ?]");
}

TEST(OnnxSymbolicDims, ExportWritesTheNamesBackAndRoundTrips) {
  kiln::onnx::ImportedGraph ig = kiln::onnx::import_graph(parse(token_model({"batch", "sequence"})));
  const std::string bytes = kiln::onnx::export_model(ig.graph, ig.state_dict);
  EXPECT_NO_THROW(kiln::onnx::check_model_bytes(bytes));  // checker + full shape inference
  const kiln::onnx::Model back = kiln::onnx::parse_model(bytes, "");
  EXPECT_EQ(back.graph.inputs.at(0).type_str(), "INT64[N, sequence]");
  EXPECT_EQ(back.graph.outputs.at(0).type_str(), "FLOAT[N, sequence, 4]");
  EXPECT_EQ(back.graph.outputs.at(1).type_str(), "FLOAT[N, ?]");
  kiln::onnx::ImportedGraph again = kiln::onnx::import_graph(back);
  graph::Analysis an = graph::analyze(again.graph);
  ASSERT_TRUE(an.ok()) << an.problems.at(0).message;
  EXPECT_EQ(type_of(again.graph, an, "Softmax"), "f32[N, sequence, 4]");
  graph::GraphModule first(ig.graph), second(again.graph);
  first.load_state_dict(ig.state_dict);
  second.load_state_dict(again.state_dict);
  for (int64_t sequence : {2, 9}) {
    SCOPED_TRACE(sequence);
    const Tensor ids = token_ids(3, sequence);
    expect_same(first.forward(std::vector<Tensor>{ids}), second.forward(std::vector<Tensor>{ids}));
  }
}

TEST(OnnxSymbolicDims, GraphJsonKeepsTheNamesAndOldGraphsLoadUnchanged) {
  kiln::onnx::ImportedGraph ig = kiln::onnx::import_graph(parse(token_model({"batch", "sequence"})));
  const std::string text = graph::to_json(ig.graph);
  EXPECT_NE(text.find("\"dim_params\": \"sequence\""), std::string::npos);
  const graph::Graph loaded = graph::from_json(text);
  EXPECT_EQ(graph::to_json(loaded), text);
  graph::Analysis an = graph::analyze(loaded);
  ASSERT_TRUE(an.ok()) << an.problems.at(0).message;
  EXPECT_EQ(type_of(loaded, an, "proj_MatMul"), "f32[N, sequence, 4]");
  // A graph saved before dim_params existed: its Input reads as fixed.
  const graph::Graph old = graph::from_json(
      R"({"format": "kiln-graph", "version": 1, "name": "old", "edges": [],
          "nodes": [{"id": 1, "name": "image", "op": "Input",
                     "attrs": {"batch": 0, "dtype": "f32", "shape": [1, 28, 28]}}]})");
  EXPECT_EQ(graph::analyze(old).nodes.at(1).outputs.at(0).str(), "f32[N, 1, 28, 28]");
  EXPECT_EQ(graph::attr_string(old.node(1).attrs, "dim_params"), "");
}

// Studio layers take named dims where their formula does: Linear keeps the sequence, Flatten
// and Conv2d over a symbolic size give "?".
TEST(OnnxSymbolicDims, StudioLayersPropagateOrHideSymbols) {
  graph::Graph g;
  const graph::NodeId x =
      g.add_node("Input", "x", {{"shape", std::vector<int64_t>{-1, 8}}, {"dim_params", std::string("sequence")}});
  const graph::NodeId fc = g.add_node("Linear", "fc", {{"in_features", int64_t{8}}, {"out_features", int64_t{3}}});
  const graph::NodeId flat = g.add_node("Flatten", "flat");
  g.connect({x, 0}, {fc, 0});
  g.connect({fc, 0}, {flat, 0});
  const graph::NodeId img = g.add_node(
      "Input", "img", {{"shape", std::vector<int64_t>{3, -1, -1}}, {"dim_params", std::string("height,width")}});
  const graph::NodeId conv = g.add_node("Conv2d", "conv", {{"in_channels", int64_t{3}}, {"out_channels", int64_t{16}}});
  g.connect({img, 0}, {conv, 0});
  g.connect({flat, 0}, {g.add_node("Output", "y"), 0});
  g.connect({conv, 0}, {g.add_node("Output", "features"), 0});
  graph::Analysis an = graph::analyze(g);
  ASSERT_TRUE(an.ok()) << an.problems.at(0).message;
  EXPECT_EQ(an.nodes.at(x).outputs.at(0).str(), "f32[N, sequence, 8]");
  EXPECT_EQ(an.nodes.at(fc).outputs.at(0).str(), "f32[N, sequence, 3]");
  EXPECT_EQ(an.nodes.at(flat).outputs.at(0).str(), "f32[N, ?]");
  EXPECT_EQ(an.nodes.at(img).outputs.at(0).str(), "f32[N, 3, height, width]");
  EXPECT_EQ(an.nodes.at(conv).outputs.at(0).str(), "f32[N, 16, ?, ?]");
}

TEST(OnnxSymbolicDims, InputDimParamsMustNameEverySymbolicEntry) {
  auto error = [](const graph::Attributes& a) -> std::string {
    try {
      graph::Graph g;
      g.add_node("Input", "x", a);
    } catch (const ValueError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(error({{"shape", std::vector<int64_t>{-1, 8}}}).find("dim_params names 0"), std::string::npos);
  EXPECT_NE(error({{"shape", std::vector<int64_t>{-1, -1}}, {"dim_params", std::string("height")}}).find("names 1"),
            std::string::npos);
  EXPECT_EQ(error({{"shape", std::vector<int64_t>{8}}, {"dim_params", std::string("sequence")}}), "no error");  // unused
  EXPECT_NE(error({{"shape", std::vector<int64_t>{-1}}, {"dim_params", std::string("?")}}).find("'?' is no name"),
            std::string::npos);
  EXPECT_NE(error({{"shape", std::vector<int64_t>{-1}}, {"dim_params", std::string("12")}}).find("is a number"),
            std::string::npos);
  EXPECT_NE(error({{"shape", std::vector<int64_t>{0, 8}}}).find("may not contain 0"), std::string::npos);
}

TEST(OnnxSymbolicDims, IllFormedInputDimsAreRefusedNamingTheInput) {
  // No dim_value and an empty dim_param.
  std::string e = import_error(token_model({"batch", ""}));
  EXPECT_NE(e.find("graph input 'input_ids' dimension 1 has neither a dim_value >= 0 nor a dim_param"),
            std::string::npos) << e;
  // A negative dim_value.
  ::onnx::ModelProto m = token_model({"batch", "sequence"});
  auto* shape = m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  shape->mutable_dim(1)->set_dim_value(-3);
  e = import_error(m);
  EXPECT_NE(e.find("graph input 'input_ids' dimension 1"), std::string::npos) << e;
  EXPECT_NE(e.find("dim_value -3"), std::string::npos) << e;
  // A name that would not read back from an edge label.
  e = import_error(token_model({"batch", "seq,len"}));
  EXPECT_NE(e.find("graph input 'input_ids' dimension 1"), std::string::npos) << e;
}

// Two inputs whose differently named sequence dims the model needs equal (an attention mask
// exported with its own axis name) still import: their runs give both names the same sizes.
TEST(OnnxSymbolicDims, NamesTheModelNeedsEqualStillImport) {
  ::onnx::GraphProto g;
  g.set_name("masked");
  *g.add_input() = named_dims("x", ::onnx::TensorProto::FLOAT, {"batch", "sequence"});
  *g.add_input() = named_dims("mask", ::onnx::TensorProto::FLOAT, {"batch", "mask_length"});
  *g.add_output() = named_dims("y", ::onnx::TensorProto::FLOAT, {"batch", "sequence"});
  add_node(g, "Mul", {"x", "mask"}, {"y"}, "/Mul");
  kiln::onnx::ImportedGraph ig = kiln::onnx::import_graph(parse(model_with(g, 17)));
  graph::Analysis an = graph::analyze(ig.graph);
  ASSERT_TRUE(an.ok()) << an.problems.at(0).message;
  EXPECT_EQ(type_of(ig.graph, an, "x"), "f32[N, sequence]");
  EXPECT_EQ(type_of(ig.graph, an, "mask"), "f32[N, mask_length]");
  EXPECT_EQ(type_of(ig.graph, an, "Mul"), "f32[N, ?]");  // which of the two names: unknown
  graph::GraphModule gm(ig.graph);
  const Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor mask = Tensor::from_vector(std::vector<float>{1, 0, 1, 0, 1, 1}, {2, 3});
  EXPECT_EQ(gm.forward(std::vector<Tensor>{x, mask}).at(0).to_vector<float>(),
            (std::vector<float>{1, 0, 3, 0, 5, 6}));
}

// A Studio graph over a named sequence exports too: Linear as MatMul, Flatten as Reshape
// [0, -1]; the model passes the checker and runs like the graph at two sequence lengths.
TEST(OnnxSymbolicDims, StudioGraphOverASequenceExportsAndRuns) {
  graph::Graph g;
  const graph::NodeId x =
      g.add_node("Input", "x", {{"shape", std::vector<int64_t>{-1, 8}}, {"dim_params", std::string("sequence")}});
  const graph::NodeId fc = g.add_node("Linear", "fc", {{"in_features", int64_t{8}}, {"out_features", int64_t{3}}});
  const graph::NodeId flat = g.add_node("Flatten", "flat");
  g.connect({x, 0}, {fc, 0});
  g.connect({fc, 0}, {flat, 0});
  g.connect({flat, 0}, {g.add_node("Output", "y"), 0});
  graph::GraphModule gm(g);
  const std::string bytes = kiln::onnx::export_model(g, gm.state_dict());
  EXPECT_NO_THROW(kiln::onnx::check_model_bytes(bytes));
  const kiln::onnx::Model back = kiln::onnx::parse_model(bytes, "");
  EXPECT_EQ(back.graph.inputs.at(0).type_str(), "FLOAT[N, sequence, 8]");
  EXPECT_EQ(back.graph.outputs.at(0).type_str(), "FLOAT[N, ?]");
  kiln::onnx::Session session(back);
  for (int64_t sequence : {2, 5}) {
    SCOPED_TRACE(sequence);
    const Tensor in = Tensor::from_vector(ramp(static_cast<size_t>(2 * sequence * 8), 0.1f), {2, sequence, 8});
    expect_same(gm.forward(std::vector<Tensor>{in}), session.run({{"x", in}}));
  }
}

// An image model with dynamic height and width: a padded 3x3 Conv keeps both names, a
// stride-2 one gives "?" (no name for ceil(height / 2)), GlobalAveragePool fixed 1s; it runs
// like the model at two image sizes.
TEST(OnnxSymbolicDims, ImageModelWithDynamicHeightAndWidth) {
  ::onnx::GraphProto g;
  g.set_name("image");
  *g.add_input() = named_dims("image", ::onnx::TensorProto::FLOAT, {"batch", "3", "height", "width"});
  *g.add_output() = named_dims("pooled", ::onnx::TensorProto::FLOAT, {"batch", "4", "1", "1"});
  add_float_initializer(g, "w1", {4, 3, 3, 3}, ramp(4 * 3 * 3 * 3, 0.1f));
  add_float_initializer(g, "w2", {4, 4, 3, 3}, ramp(4 * 4 * 3 * 3, 0.05f));
  set_ints(add_node(g, "Conv", {"image", "w1"}, {"c1"}, "/conv1/Conv"), "pads", {1, 1, 1, 1});
  auto* conv2 = add_node(g, "Conv", {"c1", "w2"}, {"c2"}, "/conv2/Conv");
  set_ints(conv2, "pads", {1, 1, 1, 1});
  set_ints(conv2, "strides", {2, 2});
  add_node(g, "GlobalAveragePool", {"c2"}, {"pooled"}, "/pool/GlobalAveragePool");
  const kiln::onnx::Model model = parse(model_with(g, 17));
  kiln::onnx::ImportedGraph ig = kiln::onnx::import_graph(model);
  graph::Analysis an = graph::analyze(ig.graph);
  ASSERT_TRUE(an.ok()) << an.problems.at(0).message;
  EXPECT_EQ(type_of(ig.graph, an, "image"), "f32[N, 3, height, width]");
  EXPECT_EQ(type_of(ig.graph, an, "conv1_Conv"), "f32[N, 4, height, width]");
  EXPECT_EQ(type_of(ig.graph, an, "conv2_Conv"), "f32[N, 4, ?, ?]");
  EXPECT_EQ(type_of(ig.graph, an, "pool_GlobalAveragePool"), "f32[N, 4, 1, 1]");
  graph::GraphModule gm(ig.graph);
  gm.load_state_dict(ig.state_dict);
  kiln::onnx::Session session(model);
  for (const Shape& shape : {Shape{1, 3, 9, 12}, Shape{2, 3, 16, 7}}) {
    const Tensor in = Tensor::from_vector(ramp(static_cast<size_t>(numel(shape)), 0.2f), shape);
    expect_same(session.run({{"image", in}}), gm.forward(std::vector<Tensor>{in}));
  }
}
