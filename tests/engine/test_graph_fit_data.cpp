// graph::fit_graph_to_data: the templates take another dataset's samples and classes after it,
// with a clean analysis, and a graph that already fits is left alone.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "engine/core/error.h"
#include "engine/graph/analysis.h"
#include "engine/graph/fit_data.h"
#include "engine/graph/json.h"

using namespace kiln;
using namespace kiln::graph;

namespace {

Graph load_template(const std::string& name) {
  std::ifstream f(std::string(KILN_FIXTURES_DIR) + "/../../projects/templates/" + name);
  std::stringstream s;
  s << f.rdbuf();
  return from_json(s.str());
}

std::vector<int64_t> shape_of(const Graph& g, const std::string& node) {
  return std::get<std::vector<int64_t>>(g.find_by_name(node)->attrs.at("shape"));
}

int64_t attr(const Graph& g, const std::string& node, const std::string& name) {
  return std::get<int64_t>(g.find_by_name(node)->attrs.at(name));
}

}  // namespace

TEST(GraphFitData, CnnTakesRgbImagesOfAnotherSize) {
  Graph g = load_template("fashion_mnist_cnn.json");
  const std::vector<std::string> changes = fit_graph_to_data(g, {3, 32, 32}, 5);
  EXPECT_FALSE(changes.empty());
  EXPECT_EQ(shape_of(g, "image"), (std::vector<int64_t>{3, 32, 32}));
  EXPECT_EQ(attr(g, "conv1", "in_channels"), 3);
  const Analysis a = analyze(g);
  ASSERT_TRUE(a.ok()) << a.problems.front().message;
  const TensorType out = a.nodes.at(g.output_nodes()[0]).inputs[0];
  EXPECT_EQ(out.shape.back(), 5);
  // Fitted again: nothing to change.
  EXPECT_TRUE(fit_graph_to_data(g, {3, 32, 32}, 5).empty());
}

TEST(GraphFitData, MlpTakesTableRowsAndResidualCnnKeepsItsPooling) {
  Graph mlp = load_template("table_mlp.json");
  const std::vector<std::string> changes = fit_graph_to_data(mlp, {64}, 10);
  ASSERT_EQ(changes.size(), 3u);
  EXPECT_EQ(changes[0], "Input 'features': shape [4] -> [64]");
  EXPECT_EQ(attr(mlp, "fc1", "in_features"), 64);
  EXPECT_EQ(attr(mlp, "fc3", "out_features"), 10);
  EXPECT_TRUE(analyze(mlp).ok());

  Graph res = load_template("image_folder_cnn.json");
  fit_graph_to_data(res, {1, 20, 24}, 2);
  const Analysis a = analyze(res);
  ASSERT_TRUE(a.ok()) << a.problems.front().message;
}

TEST(GraphFitData, BadInput) {
  Graph g = load_template("table_mlp.json");
  EXPECT_THROW(fit_graph_to_data(g, {}, 3), ValueError);
  EXPECT_THROW(fit_graph_to_data(g, {0}, 3), ValueError);
  EXPECT_THROW(fit_graph_to_data(g, {4}, 0), ValueError);
  Graph none;
  EXPECT_THROW(fit_graph_to_data(none, {4}, 3), ValueError);
}

// The text templates take a text dataset's max length, vocabulary and classes; an image dataset
// fitted to a text graph makes its Input f32 again (its Embedding then fails the analysis).
TEST(GraphFitData, TextTemplatesTakeMaxLengthVocabularyAndClasses) {
  for (const std::string file : {"text_classifier_lstm.json", "small_transformer_classifier.json"}) {
    Graph g = load_template(file);
    const std::vector<std::string> changes = fit_graph_to_text(g, 48, 321, 3);
    EXPECT_FALSE(changes.empty()) << file;
    EXPECT_EQ(shape_of(g, "tokens"), (std::vector<int64_t>{48})) << file;
    EXPECT_EQ(attr(g, "embedding", "num_embeddings"), 321) << file;
    EXPECT_EQ(attr(g, "fc", "out_features"), 3) << file;
    if (g.find_by_name("positions")) {
      EXPECT_EQ(attr(g, "positions", "max_length"), 48) << file;
    }
    const Analysis a = analyze(g);
    ASSERT_TRUE(a.ok()) << file << ": " << a.problems.front().message;
    EXPECT_TRUE(fit_graph_to_text(g, 48, 321, 3).empty()) << file;
  }
  Graph g = load_template("text_classifier_lstm.json");
  g.set_attr(g.find_by_name("tokens")->id, "dtype", std::string("f32"));
  const std::vector<std::string> changes = fit_graph_to_text(g, 200, 20000, 2);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0], "Input 'tokens': dtype f32 -> i64");
  fit_graph_to_data(g, {3, 8, 8}, 2);
  EXPECT_EQ(std::get<std::string>(g.find_by_name("tokens")->attrs.at("dtype")), "f32");
  EXPECT_THROW(fit_graph_to_text(g, 0, 100, 2), ValueError);
  EXPECT_THROW(fit_graph_to_text(g, 10, 1, 2), ValueError);
}
