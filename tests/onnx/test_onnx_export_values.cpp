// Graph import and export of models whose shape-like inputs (axes, shape, sizes, K, repeats)
// are graph inputs, not initializers (issue 6; engine/onnx/graph_import_values.h, Note
// [Values at import]): declared dims never hold a number that held only for the example
// inputs, and a model that cannot run on them is refused naming the node and the input.
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/core/error.h"
#include "engine/onnx/export.h"
#include "engine/onnx/graph_import.h"
#include "engine/onnx/op_context.h"
#include "engine/onnx/tensor_proto.h"
#include "model_builder.h"
#include "tests/common/test_deps.h"

namespace fs = std::filesystem;
using namespace kiln;
using namespace kiln::onnx::test;

namespace {

const std::string kNode = "/usr/share/libonnx-testdata/data/node";

// Export of the imported `c`, then the executor on its test data: every output dim that the
// exported model declares as a number is the one the run gives.
void expect_exported_shapes_hold(const std::string& c) {
  SCOPED_TRACE(c);
  kiln::onnx::Model m = kiln::onnx::load_model(c + "/model.onnx");
  kiln::onnx::ImportedGraph ig = kiln::onnx::import_graph(m);
  std::string bytes = kiln::onnx::export_model(ig.graph, ig.state_dict);
  kiln::onnx::check_model_bytes(bytes);
  kiln::onnx::Model e = kiln::onnx::parse_model(bytes, "", c);
  kiln::onnx::Session s(e);
  std::map<std::string, Tensor> feed;
  for (size_t i = 0; i < m.graph.inputs.size(); ++i)
    feed[m.graph.inputs[i].name] =
        kiln::onnx::load_tensor_file(c + "/test_data_set_0/input_" + std::to_string(i) + ".pb");
  std::vector<Tensor> got = s.run(feed);
  ASSERT_EQ(got.size(), e.graph.outputs.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const kiln::onnx::ValueInfo& v = e.graph.outputs[i];
    ASSERT_TRUE(v.has_shape);
    ASSERT_EQ(v.shape.size(), got[i].shape().size()) << v.type_str();
    for (size_t d = 0; d < v.shape.size(); ++d) {
      if (v.shape[d].known()) {
        EXPECT_EQ(v.shape[d].value, got[i].shape()[d]) << v.name << " " << v.type_str();
      }
    }
  }
}

// x [2, 3] -> Unsqueeze(x, axes) -> Relu -> y, with axes a graph input and no declared shape
// for y: the dims after Unsqueeze are unknown ("?"), not those of axes = ones.
::onnx::ModelProto unsqueeze_by_input(bool declare_output) {
  ::onnx::GraphProto g;
  g.set_name("unsqueeze_by_input");
  *g.add_input() = value_info("x", ::onnx::TensorProto::FLOAT, {2, 3});
  *g.add_input() = value_info("axes", ::onnx::TensorProto::INT64, {1});
  add_node(g, "Unsqueeze", {"x", "axes"}, {"u"}, "unsqueeze");
  add_node(g, "Relu", {"u"}, {"y"}, "relu");
  if (declare_output) {
    *g.add_output() = value_info("y", ::onnx::TensorProto::FLOAT, {1, 2, 3});
  } else {
    auto* y = g.add_output();
    y->set_name("y");
    y->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::FLOAT);
    auto* shape = y->mutable_type()->mutable_tensor_type()->mutable_shape();
    for (int i = 0; i < 3; ++i) shape->add_dim();
  }
  return model_with(g, 13);
}

kiln::onnx::Model parse(const ::onnx::ModelProto& proto) {
  std::string bytes;
  proto.SerializeToString(&bytes);
  return kiln::onnx::parse_model(bytes, "", "test model");
}

}  // namespace

TEST(OnnxExportValues, DimsThatFollowAnInputsContentsAreUnknown) {
  kiln::onnx::ImportedGraph ig = kiln::onnx::import_graph(parse(unsqueeze_by_input(false)));
  kiln::onnx::Model e = kiln::onnx::parse_model(kiln::onnx::export_model(ig.graph, ig.state_dict), "", "exported");
  ASSERT_EQ(e.graph.outputs.size(), 1u);
  ASSERT_EQ(e.graph.outputs[0].shape.size(), 3u);
  for (const kiln::onnx::Dim& d : e.graph.outputs[0].shape) EXPECT_FALSE(d.known()) << e.graph.outputs[0].type_str();
  // The run itself uses the contents given: axes [0] gives [1, 2, 3], axes [2] gives [2, 3, 1].
  kiln::onnx::Session s(e);
  Tensor x = Tensor::ones({2, 3}, DType::f32);
  EXPECT_EQ(s.run({{"x", x}, {"axes", kiln::onnx::ints_tensor({0}, Device())}})[0].shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(s.run({{"x", x}, {"axes", kiln::onnx::ints_tensor({2}, Device())}})[0].shape(), (Shape{2, 3, 1}));
}

TEST(OnnxExportValues, ADeclaredOutputShapeIsKept) {
  kiln::onnx::ImportedGraph ig = kiln::onnx::import_graph(parse(unsqueeze_by_input(true)));
  kiln::onnx::Model e = kiln::onnx::parse_model(kiln::onnx::export_model(ig.graph, ig.state_dict), "", "exported");
  EXPECT_EQ(e.graph.outputs.at(0).type_str(), "FLOAT[1, 2, 3]");  // ones would give [2, 1, 3]
}

TEST(OnnxExportValues, SuiteModelsWithShapeInputsDeclareTrueShapes) {
  KILN_SKIP_UNLESS_DEP(fs::exists(kNode), "libonnx-testdata", "no " + kNode);
  for (const char* c : {"test_unsqueeze_axis_0", "test_unsqueeze_axis_2", "test_expand_dim_changed", "test_tile",
                        "test_top_k", "test_slice", "test_constantofshape_float_ones",
                        "test_resize_upsample_sizes_nearest", "test_nonmaxsuppression_two_classes"})
    expect_exported_shapes_hold(kNode + "/" + c);
}

TEST(OnnxExportValues, ContentsOnesCannotStandInForNameTheNodeAndInput) {
  KILN_SKIP_UNLESS_DEP(fs::exists(kNode), "libonnx-testdata", "no " + kNode);
  const std::pair<const char*, const char*> cases[] = {
      {"test_reshape_one_dim", "node 'Reshape_0' (Reshape): its shape is the graph input 'shape'"},
      {"test_unsqueeze_two_axes", "node 'Unsqueeze_0' (Unsqueeze): its axes is the graph input 'axes'"},
      {"test_squeeze", "node 'Squeeze_0' (Squeeze): its axes is the graph input 'axes'"},
      {"test_split_variable_parts_1d", "node 'Split_0' (Split): its split is the graph input 'split'"},
      {"test_cumsum_1d", "node 'CumSum_0' (CumSum): its axis is the graph input 'axis'"},
      {"test_roialign_aligned_false", "node 'RoiAlign_0' (RoiAlign): its batch_indices is the graph input 'batch_indices'"}};
  for (const auto& [c, want] : cases) {
    SCOPED_TRACE(c);
    kiln::onnx::Model m = kiln::onnx::load_model(kNode + "/" + c + "/model.onnx");
    try {
      kiln::onnx::import_graph(m);
      ADD_FAILURE() << "imported";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("an initializer"), std::string::npos) << e.what();
    }
  }
}

TEST(OnnxExportValues, AStringOpSaysWhatItIs) {
  const std::string c = kNode + "/test_strnormalizer_export_monday_casesensintive_lower/model.onnx";
  KILN_SKIP_UNLESS_DEP(fs::exists(c), "libonnx-testdata", "no " + c);
  try {
    kiln::onnx::import_graph(kiln::onnx::load_model(c));
    ADD_FAILURE() << "imported";
  } catch (const ValueError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("(StringNormalizer): string ops do not map"), std::string::npos) << what;
    EXPECT_EQ(what.find("control flow"), std::string::npos) << what;
  }
}
