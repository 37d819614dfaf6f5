// Graph IR speed: a 200-node residual CNN (28 blocks with Add merges) read from JSON,
// analysed (shape inference + validation) and laid out. The bar: a 200-node
// graph opens and lays out in under 1 s. Prints medians of repeated runs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "engine/graph/analysis.h"
#include "engine/graph/json.h"
#include "engine/graph/layout.h"

using namespace kiln::graph;
using Ints = std::vector<int64_t>;

static Graph residual_graph(int blocks) {
  Graph g;
  g.name = "bench residual";
  auto add = [&](const std::string& op, Attributes a, std::vector<NodeId> from) {
    NodeId id = g.add_node(op, "", std::move(a));
    for (size_t i = 0; i < from.size(); ++i) g.connect({from[i], 0}, {id, static_cast<int>(i)});
    return id;
  };
  const int64_t c = 16;
  auto conv = [&](int64_t cin, NodeId from) {
    return add("Conv2d", {{"in_channels", cin}, {"out_channels", c}, {"padding", Ints{1, 1}}, {"bias", false}}, {from});
  };
  NodeId x = add("Input", {{"shape", Ints{1, 28, 28}}}, {});
  NodeId h = add("ReLU", {}, {conv(1, x)});
  for (int b = 0; b < blocks; ++b) {
    NodeId a = add("ReLU", {}, {add("BatchNorm2d", {{"num_features", c}}, {conv(c, h)})});
    NodeId m = add("BatchNorm2d", {{"num_features", c}}, {conv(c, a)});
    h = add("ReLU", {}, {add("Add", {}, {m, h})});
  }
  NodeId p = add("AdaptiveAvgPool2d", {}, {h});
  NodeId f = add("Flatten", {}, {p});
  add("Output", {}, {add("Linear", {{"in_features", c}, {"out_features", int64_t{10}}}, {f})});
  return g;
}

// A worst case for the layout: 200 Add nodes, each fed by two random earlier nodes, so
// long edges (many dummy nodes) and crossings everywhere.
static Graph random_dag(int n, unsigned seed) {
  Graph g;
  std::vector<NodeId> ids{g.add_node("Input", "", {{"shape", Ints{4}}})};
  for (int i = 0; i < n; ++i) {
    seed = seed * 1103515245u + 12345u;
    NodeId a = ids[(seed >> 8) % ids.size()];
    seed = seed * 1103515245u + 12345u;
    NodeId b = ids[(seed >> 8) % ids.size()];
    NodeId id = g.add_node("Add");
    g.connect({a, 0}, {id, 0});
    g.connect({b, 0}, {id, 1});
    ids.push_back(id);
  }
  NodeId out = g.add_node("Output");
  g.connect({ids.back(), 0}, {out, 0});
  return g;
}

static double median_ms(const std::function<void()>& f, int reps) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main() {
  const Graph g = residual_graph(28);
  const std::string text = to_json(g);
  const Analysis a = analyze(g);
  std::printf("graph: %zu nodes, %zu edges, %s, %lld parameters, %lld MACs/sample, JSON %zu bytes\n", g.nodes().size(),
              g.edges().size(), a.ok() ? "valid" : "INVALID", static_cast<long long>(a.total_parameters),
              static_cast<long long>(a.total_macs), text.size());
  const int reps = 20;
  double parse = median_ms([&] { (void)from_json(text); }, reps);
  double analysis = median_ms([&] { (void)analyze(g); }, reps);
  double layout = median_ms([&] { Graph h = g; auto_layout(h); }, reps);
  double write = median_ms([&] { (void)to_json(g); }, reps);
  double open = median_ms([&] {
    Graph h = from_json(text);
    (void)analyze(h);
    auto_layout(h);
  }, reps);
  std::printf("from_json   %8.2f ms\nanalyze     %8.2f ms\nauto_layout %8.2f ms\nto_json     %8.2f ms\n", parse,
              analysis, layout, write);
  std::printf("open + analyze + layout: %.2f ms (%s the 1 s bar)\n", open, open < 1000 ? "under" : "OVER");

  const Graph dag = random_dag(200, 42);
  const std::string dag_text = to_json(dag);
  double dag_open = median_ms([&] {
    Graph h = from_json(dag_text);
    (void)analyze(h);
    auto_layout(h);
  }, 5);
  double dag_layout = median_ms([&] { Graph h = dag; auto_layout(h); }, 5);
  std::printf("random DAG (%zu nodes, %zu edges, long edges everywhere): auto_layout %.2f ms, "
              "open + analyze + layout %.2f ms (%s the 1 s bar)\n", dag.nodes().size(), dag.edges().size(), dag_layout,
              dag_open, dag_open < 1000 ? "under" : "OVER");
  return 0;
}
