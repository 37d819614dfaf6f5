#include "app/cli/train_graph.h"

#include <filesystem>

#include "app/cli/datasets.h"
#include "engine/core/error.h"
#include "engine/graph/analysis.h"
#include "engine/graph/json.h"

namespace kiln::cli {

graph::Graph load_checked_graph(const std::string& path) {
  KILN_CHECK(!std::filesystem::is_directory(path), IoError, path, " is a directory, not a graph JSON file");
  graph::Graph g = graph::load_graph(path);
  check_trainable_graph(g, path);
  return g;
}

void check_trainable_graph(const graph::Graph& g, const std::string& path) {
  graph::Analysis a = graph::analyze(g);
  if (!a.ok()) {
    std::string msg = path + ": the graph cannot be trained:";
    for (const graph::Problem& p : a.problems)
      msg += "\n  " + (p.node >= 0 ? "'" + g.node(p.node).name + "': " : std::string()) + p.message;
    throw ValueError(msg);
  }
  KILN_CHECK(g.input_nodes().size() == 1 && g.output_nodes().size() == 1, ValueError, path,
             ": training needs a graph with one Input and one Output node, it has ", g.input_nodes().size(), " and ",
             g.output_nodes().size());
}

void check_graph_fits(const graph::Graph& g, const std::string& dataset, const data::Dataset& data, int64_t outputs) {
  graph::Analysis a = graph::analyze(g);
  const graph::TensorType in = *a.type_of({g.input_nodes()[0], 0});
  const bool is_table = dataset.rfind("csv:", 0) == 0;
  const Tensor sample = data.get_batch({0}).input;
  graph::SymShape have{graph::kBatch};
  for (int64_t d = 1; d < sample.dim(); ++d) have.push_back(sample.size(d));
  KILN_CHECK(have == in.shape, ShapeError, "the graph's input is ", graph::shape_str(in.shape), " but ", dataset,
             (is_table ? " samples are " : " images are "), graph::shape_str(have));
  const graph::TensorType out = a.nodes.at(g.output_nodes()[0]).inputs.at(0);
  const int64_t classes = outputs;
  KILN_CHECK(out.shape == graph::SymShape({graph::kBatch, classes}), ShapeError, "the graph's output is ",
             graph::shape_str(out.shape), " but ", dataset, " has ", classes, " classes (want [N, ", classes,
             "]; kiln train --replace-head ", classes, " gives the last Linear layer ", classes, " outputs)");
}

std::optional<std::string> run_graph_of(const std::string& model_path,
                                        const std::map<std::string, std::string>& metadata) {
  if (auto it = metadata.find(kGraphMetadataKey); it != metadata.end()) {
    const std::filesystem::path graph = std::filesystem::path(model_path).parent_path() / it->second;
    KILN_CHECK(std::filesystem::exists(graph), IoError, model_path, " was trained from the graph ", graph.string(),
               ", which is missing; pass the graph with --graph FILE.json");
    return graph.string();
  }
  if (auto it = metadata.find("kiln.model"); it != metadata.end() && it->second.rfind("graph-", 0) == 0)
    throw ValueError(model_path + " holds the weights of a graph (" + it->second +
                     ") but does not say which file; pass it with --graph FILE.json");
  return std::nullopt;
}

}  // namespace kiln::cli
