// engine/graph analysis: edge types, counts, and each kind of problem on the right node.
#include <gtest/gtest.h>

#include "engine/graph/analysis.h"
#include "engine/graph/op_schema.h"

namespace kiln::graph {
namespace {

using I = std::vector<int64_t>;

bool has_problem(const Analysis& a, NodeId node, const std::string& text) {
  for (const Problem& p : a.problems)
    if (p.node == node && p.message.find(text) != std::string::npos) return true;
  return false;
}

std::string dump(const Analysis& a) {
  std::string s;
  for (const Problem& p : a.problems) s += std::to_string(p.node) + ": " + p.message + "\n";
  return s;
}

TEST(GraphAnalysis, MlpTypesAndCounts) {
  Graph g;
  NodeId x = g.add_node("Input", "x");
  NodeId f = g.add_node("Flatten", "flat");
  NodeId l = g.add_node("Linear", "fc", {{"in_features", int64_t{784}}, {"out_features", int64_t{10}}});
  NodeId y = g.add_node("Output", "y");
  g.connect({x, 0}, {f, 0});
  g.connect({f, 0}, {l, 0});
  g.connect({l, 0}, {y, 0});
  Analysis a = analyze(g);
  EXPECT_TRUE(a.ok()) << dump(a);
  EXPECT_EQ(a.type_of({x, 0})->str(), "f32[N, 1, 28, 28]");
  EXPECT_EQ(a.type_of({f, 0})->str(), "f32[N, 784]");
  EXPECT_EQ(a.type_of({l, 0})->str(), "f32[N, 10]");
  EXPECT_EQ(a.type_of({y, 0}), std::nullopt);
  EXPECT_EQ(a.type_of({l, 3}), std::nullopt);
  EXPECT_EQ(a.nodes.at(y).inputs.at(0).str(), "f32[N, 10]");
  EXPECT_EQ(a.nodes.at(l).parameters, 7850);
  EXPECT_EQ(a.nodes.at(l).macs, 7840);
  EXPECT_EQ(a.total_parameters, 7850);
  EXPECT_EQ(a.total_macs, 7840);
}

TEST(GraphAnalysis, ProblemsAttachToNodes) {
  Graph g;
  Analysis empty = analyze(g);
  EXPECT_TRUE(has_problem(empty, -1, "the graph has no Input node"));
  EXPECT_TRUE(has_problem(empty, -1, "the graph has no Output node"));

  NodeId x = g.add_node("Input", "x");
  NodeId fc = g.add_node("Linear", "fc", {{"in_features", int64_t{784}}});
  NodeId relu = g.add_node("ReLU", "relu");
  NodeId add = g.add_node("Add", "sum");
  NodeId y = g.add_node("Output", "y");
  g.connect({x, 0}, {fc, 0});  // no Flatten: shape mismatch on fc
  g.connect({fc, 0}, {relu, 0});
  g.connect({relu, 0}, {add, 0});  // add's in1 left open
  g.connect({add, 0}, {y, 0});
  Analysis a = analyze(g);
  EXPECT_FALSE(a.ok());
  EXPECT_TRUE(has_problem(a, fc, "Linear expects input features 784, got [N, 1, 28, 28] (flatten first?)")) << dump(a);
  EXPECT_TRUE(has_problem(a, add, "input 'in1' is not connected")) << dump(a);
  EXPECT_EQ(a.problems.size(), 2u) << dump(a);  // nothing repeated downstream
  EXPECT_EQ(a.problems_of(fc).size(), 1u);
  EXPECT_TRUE(a.problems_of(relu).empty());
  EXPECT_FALSE(a.nodes.count(relu));
  EXPECT_TRUE(a.nodes.count(x));

  // Fixing the shape leaves the open input; a dtype mismatch names both types.
  NodeId flat = g.add_node("Flatten", "flat");
  g.disconnect({fc, 0});
  g.connect({x, 0}, {flat, 0});
  g.connect({flat, 0}, {fc, 0});
  NodeId ids = g.add_node("Input", "ids", {{"shape", I{128}}, {"dtype", std::string("i64")}});
  g.connect({ids, 0}, {add, 1});
  a = analyze(g);
  EXPECT_TRUE(has_problem(a, add, "Add inputs differ in dtype: in0 f32[N, 128] vs in1 i64[N, 128]")) << dump(a);
  EXPECT_EQ(a.problems.size(), 1u) << dump(a);

  // Unconnected Output.
  g.disconnect({y, 0});
  a = analyze(g);
  EXPECT_TRUE(has_problem(a, y, "input 'in' is not connected")) << dump(a);
}

TEST(GraphAnalysis, CycleOnEveryNodeOfIt) {
  Graph g;
  NodeId x = g.add_node("Input", "x", {{"shape", I{4}}});
  NodeId add = g.add_node("Add", "sum");
  NodeId r1 = g.add_node("ReLU", "r1");
  NodeId r2 = g.add_node("ReLU", "r2");
  NodeId after = g.add_node("Tanh", "after");
  NodeId y = g.add_node("Output", "y");
  g.connect({x, 0}, {add, 0});
  g.connect({add, 0}, {r1, 0});
  g.connect({r1, 0}, {r2, 0});
  g.connect({r2, 0}, {after, 0});
  g.connect({after, 0}, {y, 0});
  EXPECT_NE(g.can_connect({r2, 0}, {add, 1}), std::nullopt);
  g.connect_unchecked_cycle({r2, 0}, {add, 1});
  Analysis a = analyze(g);
  for (NodeId id : {add, r1, r2}) EXPECT_TRUE(has_problem(a, id, "cycle: this node is on a loop through 'sum', 'r1', 'r2'")) << dump(a);
  EXPECT_TRUE(a.problems_of(after).empty());
  EXPECT_TRUE(a.problems_of(x).empty());
  EXPECT_EQ(a.problems.size(), 3u) << dump(a);
}

TEST(GraphAnalysis, ParameterCountOverflow) {
  Graph g;
  const int64_t big = int64_t{1} << 40;
  NodeId x = g.add_node("Input", "x", {{"shape", I{big}}});
  NodeId fc = g.add_node("Linear", "huge", {{"in_features", big}, {"out_features", big}});
  NodeId y = g.add_node("Output", "y");
  g.connect({x, 0}, {fc, 0});
  g.connect({fc, 0}, {y, 0});
  Analysis a = analyze(g);
  EXPECT_TRUE(has_problem(a, fc, "parameter count overflows int64 (weight [1099511627776, 1099511627776])")) << dump(a);
  EXPECT_EQ(a.total_parameters, INT64_MAX);
  EXPECT_EQ(a.total_macs, INT64_MAX);  // saturates

  // Each layer fits, their sum does not: the problem lands where the sum overflows.
  Graph h;
  const int64_t half = int64_t{1} << 39;  // 2^39 * 2^23 = 2^62 per layer; 2 of them overflow
  NodeId in = h.add_node("Input", "x", {{"shape", I{half}}});
  NodeId a1 = h.add_node("Linear", "a1", {{"in_features", half}, {"out_features", int64_t{1} << 23}, {"bias", false}});
  NodeId a2 = h.add_node("Linear", "a2", {{"in_features", int64_t{1} << 23}, {"out_features", half}, {"bias", false}});
  NodeId out = h.add_node("Output", "y");
  h.connect({in, 0}, {a1, 0});
  h.connect({a1, 0}, {a2, 0});
  h.connect({a2, 0}, {out, 0});
  Analysis b = analyze(h);
  EXPECT_EQ(b.nodes.at(a1).parameters, int64_t{1} << 62);
  EXPECT_TRUE(has_problem(b, a2, "the graph's total parameter count overflows int64 at this node")) << dump(b);
  EXPECT_EQ(b.problems.size(), 1u) << dump(b);
}

}  // namespace
}  // namespace kiln::graph
