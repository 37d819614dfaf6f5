// engine/graph JSON: byte-identical round trips (templates and a randomly edited graph),
// malformed input rejected with a message naming the node; auto_layout.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include "engine/core/error.h"
#include "engine/graph/analysis.h"
#include "engine/graph/json.h"
#include "engine/graph/layout.h"
#include "engine/graph/op_schema.h"
#include "test_util.h"

namespace kiln::graph {
namespace {

const std::string kTemplates = std::string(KILN_FIXTURES_DIR) + "/../../projects/templates/";
const char* const kTemplateNames[] = {"fashion_mnist_mlp.json", "fashion_mnist_cnn.json", "residual_cnn.json",
                                      "text_classifier_lstm.json", "small_transformer_classifier.json"};

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

TEST(GraphJson, TemplatesRoundTripAndAreValid) {
  for (const char* name : kTemplateNames) {
    const std::string json = read(kTemplates + name);
    Graph g = from_json(json);
    EXPECT_EQ(to_json(g), json) << name;
    Analysis a = analyze(g);
    EXPECT_TRUE(a.ok()) << name << ": " << (a.problems.empty() ? "" : a.problems[0].message);
    ASSERT_EQ(g.input_nodes().size(), 1u);
    ASSERT_EQ(g.output_nodes().size(), 1u);
    const bool text = std::string(name).rfind("text_", 0) == 0 || std::string(name).rfind("small_transformer", 0) == 0;
    EXPECT_EQ(a.type_of({g.input_nodes()[0], 0})->str(),
              !text ? "f32[N, 1, 28, 28]" : name[0] == 't' ? "i64[N, 200]" : "i64[N, 128]")
        << name;
    EXPECT_EQ(a.nodes.at(g.output_nodes()[0]).inputs.at(0).str(), text ? "f32[N, 2]" : "f32[N, 10]") << name;
    EXPECT_FALSE(g.name.empty());
  }
}

// A graph built by random edits (adds, connects, attribute changes, renames, moves,
// removals) prints, reads back equal and prints the same bytes.
TEST(GraphJson, RandomEditsRoundTrip) {
  std::mt19937 rng(1234);
  auto ops = OpRegistry::global().all();
  Graph g;
  g.name = "random \"quoted\" \xc3\xa9";
  std::vector<NodeId> ids;
  for (int step = 0; step < 400; ++step) {
    int what = static_cast<int>(rng() % 8);
    if (what <= 1 || ids.size() < 2) {
      ids.push_back(g.add_node(ops[rng() % ops.size()]->name));
    } else if (what <= 4) {
      NodeId a = ids[rng() % ids.size()], b = ids[rng() % ids.size()];
      PortRef from{a, rng() % 8 == 0 ? 1 : 0}, to{b, static_cast<int>(rng() % 2)};
      if (!g.can_connect(from, to)) g.connect(from, to);
    } else if (what == 5) {
      NodeId a = ids[rng() % ids.size()];
      g.set_position(a, std::uniform_real_distribution<double>(-1e4, 1e4)(rng), static_cast<double>(rng() % 1000) / 3.0);
    } else if (what == 6) {
      NodeId a = ids[rng() % ids.size()];
      const OpSchema& s = OpRegistry::global().get(g.node(a).op);
      for (const AttrSpec& spec : s.attributes) {
        AttrValue v = spec.default_value;
        if (spec.type == AttrType::Float) v = std::uniform_real_distribution<double>(0, 1)(rng);
        if (spec.type == AttrType::Int && spec.min) v = static_cast<int64_t>(*spec.min) + static_cast<int64_t>(rng() % 3);
        if (spec.type == AttrType::Bool) v = rng() % 2 == 0;
        if (!g.check_attr(a, spec.name, v)) g.set_attr(a, spec.name, v);
      }
      const std::string name = "n" + std::to_string(rng() % 100000);
      if (!g.check_name(a, name)) g.rename(a, name);
    } else if (ids.size() > 3 && rng() % 2 == 0) {
      size_t k = rng() % ids.size();
      g.remove_node(ids[k]);
      ids.erase(ids.begin() + static_cast<long>(k));
    }
  }
  ASSERT_GT(g.edges().size(), 25u);
  ASSERT_GT(g.nodes().size(), 50u);
  const std::string text = to_json(g);
  Graph back = from_json(text);
  EXPECT_TRUE(back == g);
  EXPECT_EQ(to_json(back), text);
  auto_layout(back);
  EXPECT_EQ(to_json(from_json(to_json(back))), to_json(back));
}

TEST(GraphJson, Malformed) {
  EXPECT_EQ(json_error("{\"format\": \"kiln-graph\", \"version\": 1,"),
            "graph JSON: not valid JSON: parse error at line 1, column 39: syntax error while parsing object key - "
            "unexpected end of input; expected string literal");
  EXPECT_EQ(json_error("[1, 2]"), "graph JSON: not a Kiln graph (expected an object with \"format\": \"kiln-graph\")");
  EXPECT_EQ(json_error("{\"format\": \"onnx\", \"version\": 1, \"nodes\": []}"),
            "graph JSON: not a Kiln graph (expected an object with \"format\": \"kiln-graph\")");
  EXPECT_EQ(json_error("{\"format\": \"kiln-graph\", \"version\": 7, \"nodes\": []}"),
            "graph JSON: version 7 was written by a newer Kiln; this build reads version 2 or older");
  EXPECT_EQ(json_error("{\"format\": \"kiln-graph\", \"version\": \"1\", \"nodes\": []}"),
            "graph JSON: \"version\" must be an integer, got \"1\"");
  EXPECT_EQ(json_error("{\"format\": \"kiln-graph\", \"version\": 1}"), "graph JSON: \"nodes\" must be a list");
  EXPECT_EQ(json_error("{\"format\": \"kiln-graph\", \"version\": 1, \"nodes\": [], \"extra\": 1}"),
            "graph JSON: unknown key 'extra'");
  const std::string head = "{\"format\": \"kiln-graph\", \"version\": 1, \"nodes\": [";
  EXPECT_EQ(json_error(head + "{\"id\": 1, \"name\": \"conv1\", \"op\": \"Conv3d\"}]}"),
            "graph JSON: unknown op 'Conv3d' (node 'conv1')");
  EXPECT_EQ(json_error(head + "{\"id\": 1, \"name\": \"conv1\", \"op\": \"Conv2d\", \"attrs\": {\"kernel_size\": 3}}]}"),
            "graph JSON: attribute 'kernel_size' must be a list of integers, got 3 (node 'conv1')");
  EXPECT_EQ(json_error(head + "{\"id\": 1, \"name\": \"conv1\", \"op\": \"Conv2d\", \"attrs\": {\"groups\": 0}}]}"),
            "graph JSON: groups must be in [1, 1099511627776], got 0 (node 'conv1')");
  EXPECT_EQ(json_error(head + "{\"id\": 1, \"name\": \"d\", \"op\": \"Dropout\", \"attrs\": {\"rate\": 0.1}}]}"),
            "graph JSON: unknown attribute 'rate' of Dropout; known: p (node 'd')");
  EXPECT_EQ(json_error(head + "{\"id\": 1, \"name\": \"d\", \"op\": \"Dropout\", \"colour\": 1}]}"),
            "graph JSON: unknown key 'colour' (node 'd')");
  EXPECT_EQ(json_error(head + "{\"id\": 1, \"name\": \"a\", \"op\": \"ReLU\"}, {\"id\": 1, \"name\": \"b\", \"op\": \"ReLU\"}]}"),
            "graph JSON: duplicate node id 1 (node 'b')");
  EXPECT_EQ(json_error(head + "{\"id\": 1, \"name\": \"a\", \"op\": \"ReLU\"}, {\"id\": 2, \"name\": \"a\", \"op\": \"ReLU\"}]}"),
            "graph JSON: name 'a' is already taken by another node (node 'a')");
  EXPECT_EQ(json_error(head + "{\"id\": 1, \"name\": \"a b\", \"op\": \"ReLU\"}]}"),
            "graph JSON: name 'a b' is not an identifier (letters, digits and _, not starting with a digit) (node 'a b')");
  EXPECT_EQ(json_error(head + "{\"id\": 1, \"op\": \"ReLU\"}]}"), "graph JSON: missing \"name\" (nodes[0])");
  EXPECT_EQ(json_error(head + "{\"id\": 9223372036854775807, \"name\": \"a\", \"op\": \"ReLU\"}]}"),
            "graph JSON: node id must be in [0, 9007199254740991], got 9223372036854775807 (node 'a')");
  EXPECT_EQ(json_error(head + "{\"id\": -1, \"name\": \"a\", \"op\": \"ReLU\"}]}"),
            "graph JSON: node id must be in [0, 9007199254740991], got -1 (node 'a')");
  EXPECT_EQ(json_error(head + "{\"id\": 1, \"name\": \"a\", \"op\": \"ReLU\", \"x\": \"left\"}]}"),
            "graph JSON: \"x\" must be a number (node 'a')");
  const std::string two = head + "{\"id\": 1, \"name\": \"a\", \"op\": \"Input\"}, {\"id\": 2, \"name\": \"b\", \"op\": \"ReLU\"}],";
  EXPECT_EQ(json_error(two + "\"edges\": [{\"from\": {\"node\": 1, \"port\": 0}, \"to\": {\"node\": 3, \"port\": 0}}]}"),
            "graph JSON: no node with id 3 (edges[0])");
  EXPECT_EQ(json_error(two + "\"edges\": [{\"from\": {\"node\": 1, \"port\": 2}, \"to\": {\"node\": 2, \"port\": 0}}]}"),
            "graph JSON: Input 'a' has no output port 2 (edge into node 'b')");
  EXPECT_EQ(json_error(two + "\"edges\": [{\"from\": {\"node\": 1, \"port\": 0}, \"to\": {\"node\": 2, \"port\": 0}}, "
                             "{\"from\": {\"node\": 1, \"port\": 0}, \"to\": {\"node\": 2, \"port\": 0}}]}"),
            "graph JSON: input 'in' of 'b' is already connected (from 'a') (edge into node 'b')");
  EXPECT_EQ(json_error(two + "\"edges\": [{\"from\": {\"node\": 1}, \"to\": {\"node\": 2, \"port\": 0}}]}"),
            "graph JSON: missing \"port\" (edges[0])");
  EXPECT_EQ(json_error(two + "\"edges\": [{\"from\": {\"node\": 2, \"port\": 0}, \"to\": {\"node\": 2, \"port\": 0}}]}"),
            "graph JSON: a node cannot connect to itself (edge into node 'b')");
  // Missing attributes take their defaults; a cycle loads (analysis reports it).
  Graph g = from_json(two + "\"edges\": []}");
  EXPECT_EQ(g.node(1).attrs.at("dtype"), AttrValue(std::string("f32")));
}

TEST(GraphJson, FilesAndErrorsNamePath) {
  test::TempDir dir("kiln-graph");
  Graph g = from_json(read(kTemplates + "fashion_mnist_cnn.json"));
  save_graph(g, dir / "cnn.json");
  EXPECT_TRUE(load_graph(dir / "cnn.json") == g);
  EXPECT_THROW(load_graph(dir / "missing.json"), IoError);
  std::ofstream(dir / "bad.json") << "{\"format\": \"kiln-graph\", \"version\": 3, \"nodes\": []}";
  try {
    load_graph(dir / "bad.json");
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()), dir / "bad.json" + ": graph JSON: version 3 was written by a newer Kiln; this build reads version 2 or older");
  }
}

TEST(GraphLayout, LayeredAndDeterministic) {
  Graph g = from_json(read(kTemplates + "residual_cnn.json"));
  for (const Node& n : g.nodes()) g.set_position(n.id, 0, 0);
  auto_layout(g);
  const std::string once = to_json(g);
  auto_layout(g);
  EXPECT_EQ(to_json(g), once);
  // Top-down: every edge goes down; no two nodes share a spot.
  for (const Edge& e : g.edges()) EXPECT_LT(g.node(e.from.node).y, g.node(e.to.node).y);
  for (const Node& a : g.nodes())
    for (const Node& b : g.nodes())
      if (a.id < b.id) {
        EXPECT_FALSE(a.x == b.x && a.y == b.y) << a.name << " " << b.name;
      }
  // A chain lines up in one row (left to right).
  Graph chain = from_json(read(kTemplates + "fashion_mnist_mlp.json"));
  auto_layout(chain, LayoutOptions{.top_down = false, .layer_spacing = 120, .node_spacing = 200, .node_size = {}});
  for (const Node& n : chain.nodes()) EXPECT_EQ(n.y, chain.nodes()[0].y);
  for (const Edge& e : chain.edges()) EXPECT_EQ(chain.node(e.to.node).x - chain.node(e.from.node).x, 120);
  Graph empty;
  auto_layout(empty);
}

}  // namespace
}  // namespace kiln::graph
