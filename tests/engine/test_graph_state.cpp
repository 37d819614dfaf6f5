// Graph::initial_state (graph.h): the initial weights a graph carries (an imported model's),
// which GraphModule starts from and graph JSON version 2 saves (json.h, json_state.h); a
// version 1 file written before it existed opens unchanged.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "engine/core/error.h"
#include "engine/graph/graph_module.h"
#include "engine/graph/json.h"
#include "engine/graph/json_state.h"
#include "engine/io/base64.h"

namespace kiln::graph {
namespace {

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string json_error(const std::string& text) {
  try {
    from_json(text);
  } catch (const ValueError& e) {
    return e.what();
  }
  return "(accepted)";
}

// Input [4] -> Linear fc (4 -> 3) -> Output.
Graph mlp() {
  Graph g;
  g.name = "mlp";
  NodeId x = g.add_node("Input", "x", {{"shape", std::vector<int64_t>{4}}});
  NodeId fc = g.add_node("Linear", "fc", {{"in_features", int64_t{4}}, {"out_features", int64_t{3}}});
  NodeId y = g.add_node("Output", "y");
  g.connect({x, 0}, {fc, 0});
  g.connect({fc, 0}, {y, 0});
  return g;
}

Tensor arange_f32(const Shape& shape) {
  std::vector<float> v(static_cast<size_t>(kiln::numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.25f * static_cast<float>(i) - 1.0f;
  return Tensor::from_vector(v, shape);
}

Tensor param(nn::Module& m, const std::string& key) {
  for (const auto& [k, t] : m.state_dict())
    if (k == key) return t;
  throw ValueError("no " + key);
}

}  // namespace

// RFC 4648 section 10's test vectors, and what is not base64.
TEST(GraphState, Base64) {
  const std::pair<const char*, const char*> cases[] = {{"", ""},         {"f", "Zg=="},         {"fo", "Zm8="},
                                                       {"foo", "Zm9v"}, {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="},
                                                       {"foobar", "Zm9vYmFy"}};
  for (const auto& [raw, text] : cases) {
    EXPECT_EQ(io::base64_encode(raw), text);
    EXPECT_EQ(io::base64_decode(text), raw);
  }
  EXPECT_THROW(io::base64_decode("Zm9"), ValueError);
  EXPECT_THROW(io::base64_decode("Zm!v"), ValueError);
  EXPECT_THROW(io::base64_decode("Z=9v"), ValueError);
}

// GraphModule starts from the entries that fit; one whose shape no longer fits (the layer was
// edited) leaves the layer's own initialization.
TEST(GraphState, GraphModuleStartsFromTheEntriesThatFit) {
  Graph g = mlp();
  g.initial_state["fc.weight"] = arange_f32({3, 4});
  g.initial_state["fc.bias"] = arange_f32({5});  // does not fit [3]
  GraphModule m(g);
  EXPECT_TRUE(same_tensor(param(m, "fc.weight"), g.initial_state.at("fc.weight")));
  EXPECT_EQ(param(m, "fc.bias").shape(), (Shape{3}));
  // A copy: training the module leaves the graph's tensors alone.
  param(m, "fc.weight").fill_(0.0);
  EXPECT_FLOAT_EQ(g.initial_state.at("fc.weight").to_vector<float>()[0], -1.0f);
}

// Entries follow renames; a new node of a removed node's name starts fresh; JSON writes the
// entries of existing nodes only.
TEST(GraphState, EntriesFollowTheirNode) {
  Graph g = mlp();
  g.initial_state["fc.weight"] = arange_f32({3, 4});
  g.rename(g.find_by_name("fc")->id, "head");
  EXPECT_EQ(g.initial_state.count("fc.weight"), 0u);
  EXPECT_EQ(g.initial_state.count("head.weight"), 1u);
  const Node removed = *g.find_by_name("head");
  g.remove_node(removed.id);
  EXPECT_EQ(to_json(g).find("initial_state"), std::string::npos);  // no node 'head': not written
  g.insert_node(removed);  // undo keeps the weights
  EXPECT_EQ(g.initial_state.count("head.weight"), 1u);
  g.remove_node(removed.id);
  g.add_node("Linear", "head");  // a new layer
  EXPECT_EQ(g.initial_state.count("head.weight"), 0u);
}

// Version 2 holds the tensors exactly; a graph without any is still written as version 1.
TEST(GraphState, JsonRoundTrip) {
  Graph g = mlp();
  EXPECT_NE(to_json(g).find("\"version\": 1"), std::string::npos);
  g.initial_state["fc.weight"] = arange_f32({3, 4});
  g.initial_state["fc.bias"] = Tensor::from_vector<float>({1e-30f, -0.0f, 3.4e38f}, {3});
  const std::string text = to_json(g);
  EXPECT_NE(text.find("\"version\": 2"), std::string::npos);
  const Graph back = from_json(text);
  EXPECT_TRUE(back == g);
  EXPECT_EQ(to_json(back), text);
  Graph other = g;
  other.initial_state["fc.bias"] = Tensor::from_vector<float>({1, 2, 3}, {3});
  EXPECT_FALSE(other == g);
}

// A version 1 file (tests/fixtures/graph_v1_residual_cnn.json, written by the version 1
// writer) opens and prints the same bytes.
TEST(GraphState, Version1FileOpensUnchanged) {
  const std::string text = read(std::string(KILN_FIXTURES_DIR) + "/graph_v1_residual_cnn.json");
  ASSERT_NE(text.find("\"version\": 1"), std::string::npos);
  const Graph g = from_json(text);
  EXPECT_TRUE(g.initial_state.empty());
  EXPECT_EQ(to_json(g), text);
  GraphModule m(g);
  EXPECT_FALSE(m.state_dict().empty());
}

TEST(GraphState, MalformedEntriesNameTheKey) {
  Graph g = mlp();
  g.initial_state["fc.bias"] = Tensor::from_vector<float>({1, 2, 3}, {3});
  const std::string good = to_json(g);
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    const size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  };
  EXPECT_NE(json_error(with("\"version\": 2", "\"version\": 1")).find("\"initial_state\" needs version 2"),
            std::string::npos);
  EXPECT_NE(json_error(with("\"fc.bias\"", "\"nope.bias\"")).find("initial_state 'nope.bias' names no node"),
            std::string::npos);
  EXPECT_NE(json_error(with("\"shape\": [3]", "\"shape\": [4]")).find("initial_state 'fc.bias': data holds 12 bytes"),
            std::string::npos);
  EXPECT_NE(json_error(with("\"dtype\": \"f32\"", "\"dtype\": \"f99\"")).find("initial_state 'fc.bias'"),
            std::string::npos);
  EXPECT_NE(json_error(with("\"data\": \"", "\"data\": \"!")).find("is not base64"), std::string::npos);
  EXPECT_NE(json_error(with("\"version\": 2", "\"version\": 3")).find("newer Kiln"), std::string::npos);
}

}  // namespace kiln::graph
