// engine/graph Graph: edits, their validation and the reasons can_connect gives.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "engine/core/error.h"
#include "engine/graph/graph.h"
#include "engine/graph/op_schema.h"

namespace kiln::graph {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(GraphEdit, AddNodeNamesAndDefaults) {
  Graph g;
  NodeId a = g.add_node("Conv2d");
  NodeId b = g.add_node("Conv2d");
  NodeId c = g.add_node("BatchNorm2d");
  NodeId d = g.add_node("ReLU", "act");
  EXPECT_EQ(g.node(g.add_node("LeakyReLU")).name, "leaky_relu_1");
  EXPECT_EQ(g.node(g.add_node("ReLU")).name, "relu_1");
  EXPECT_EQ(g.node(g.add_node("AdaptiveAvgPool2d")).name, "adaptive_avg_pool2d_1");
  EXPECT_EQ(g.node(a).name, "conv2d_1");
  EXPECT_EQ(g.node(b).name, "conv2d_2");
  EXPECT_EQ(g.node(c).name, "batch_norm2d_1");
  EXPECT_EQ(g.node(d).name, "act");
  EXPECT_EQ(std::get<std::vector<int64_t>>(g.node(a).attrs.at("kernel_size")), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(g.node(a).attrs.size(), OpRegistry::global().get("Conv2d").attributes.size());
  EXPECT_EQ(a + 1, b);
  EXPECT_EQ(g.nodes().size(), 7u);
  EXPECT_EQ(g.find_by_name("act")->id, d);
  EXPECT_EQ(error_of([&] { g.add_node("Conv3d"); }).rfind("unknown op 'Conv3d'; known: ", 0), 0u);
  EXPECT_EQ(error_of([&] { g.add_node("ReLU", "act"); }), "name 'act' is already taken by another node");
  EXPECT_EQ(error_of([&] { g.add_node("ReLU", "1x"); }),
            "name '1x' is not an identifier (letters, digits and _, not starting with a digit)");
  EXPECT_EQ(error_of([&] { g.add_node("ReLU", "a.b"); }),
            "name 'a.b' is not an identifier (letters, digits and _, not starting with a digit)");
  EXPECT_EQ(error_of([&] { g.add_node("Dropout", "", {{"p", 2.0}}); }), "Dropout: p must be in [0, 1], got 2");
  EXPECT_EQ(error_of([&] { g.add_node("Dropout", "", {{"rate", 0.1}}); }),
            "Dropout: unknown attribute 'rate' of Dropout; known: p");
  EXPECT_EQ(g.nodes().size(), 7u);  // failed adds leave nothing behind
}

TEST(GraphEdit, ConnectAndRefusals) {
  Graph g;
  NodeId in = g.add_node("Input", "x");
  NodeId r1 = g.add_node("ReLU", "r1");
  NodeId r2 = g.add_node("ReLU", "r2");
  NodeId add = g.add_node("Add", "sum");
  NodeId out = g.add_node("Output", "y");
  g.connect({in, 0}, {r1, 0});
  g.connect({r1, 0}, {r2, 0});
  g.connect({r2, 0}, {add, 0});
  g.connect({r1, 0}, {add, 1});
  g.connect({add, 0}, {out, 0});
  EXPECT_EQ(g.edges().size(), 5u);
  EXPECT_EQ(g.source_of({add, 1}), (PortRef{r1, 0}));
  EXPECT_EQ(g.source_of({r1, 0}), (PortRef{in, 0}));
  EXPECT_EQ(g.consumers_of({r1, 0}), (std::vector<PortRef>{{r2, 0}, {add, 1}}));
  for (size_t i = 1; i < g.edges().size(); ++i)
    EXPECT_LT(std::tie(g.edges()[i - 1].to, g.edges()[i - 1].from), std::tie(g.edges()[i].to, g.edges()[i].from));

  EXPECT_EQ(g.can_connect({r2, 0}, {r1, 0}), "input 'in' of 'r1' is already connected (from 'x')");
  g.disconnect({r1, 0});
  EXPECT_EQ(g.can_connect({r2, 0}, {r1, 0}),
            "connecting 'r2' to 'r1' would close a cycle ('r1' already feeds 'r2')");
  EXPECT_EQ(g.can_connect({add, 0}, {r1, 0}), "connecting 'sum' to 'r1' would close a cycle ('r1' already feeds 'sum')");
  EXPECT_EQ(g.can_connect({r1, 0}, {r1, 0}), "'r1' cannot connect to itself");
  EXPECT_EQ(g.can_connect({in, 1}, {r1, 0}), "Input 'x' has no output port 1");
  EXPECT_EQ(g.can_connect({out, 0}, {r1, 0}), "Output 'y' has no output port 0 (it has no outputs)");
  EXPECT_EQ(g.can_connect({in, 0}, {add, 2}), "Add 'sum' has no input port 2");
  EXPECT_EQ(g.can_connect({r1, 0}, {in, 0}), "Input 'x' has no input port 0 (it has no inputs)");
  EXPECT_EQ(g.can_connect({99, 0}, {r1, 0}), "no node with id 99");
  EXPECT_EQ(g.can_connect({in, 0}, {99, 0}), "no node with id 99");
  EXPECT_EQ(g.can_connect({in, 0}, {r1, 0}), std::nullopt);
  EXPECT_EQ(error_of([&] { g.connect({r2, 0}, {r1, 0}); }),
            "connecting 'r2' to 'r1' would close a cycle ('r1' already feeds 'r2')");
  g.disconnect({r1, 0});  // no edge: no-op
  EXPECT_EQ(g.edges().size(), 4u);
}

TEST(GraphEdit, CountAttributeAddsPorts) {
  Graph g;
  NodeId a = g.add_node("Input", "a");
  NodeId cat = g.add_node("Concat", "cat");
  EXPECT_EQ(g.can_connect({a, 0}, {cat, 2}), "Concat 'cat' has no input port 2");
  g.set_attr(cat, "num_inputs", int64_t{3});
  g.connect({a, 0}, {cat, 2});
  EXPECT_EQ(g.check_attr(cat, "num_inputs", int64_t{2}),
            "input 'in2' of 'cat' is connected; disconnect it before reducing num_inputs to 2");
  EXPECT_THROW(g.set_attr(cat, "num_inputs", int64_t{2}), ValueError);
  g.disconnect({cat, 2});
  g.set_attr(cat, "num_inputs", int64_t{2});
  EXPECT_EQ(g.check_attr(cat, "dim", std::string("1")), "dim expects a value of type Int, got 1");
  EXPECT_EQ(g.check_attr(77, "dim", int64_t{1}), "no node with id 77");
  NodeId r = g.add_node("Reshape", "r");
  EXPECT_EQ(g.check_attr(r, "shape", std::vector<int64_t>{-1, -1}), "shape [-1, -1] may contain at most one -1");
}

TEST(GraphEdit, RemoveInsertRenameMove) {
  Graph g;
  NodeId in = g.add_node("Input", "x");
  NodeId r = g.add_node("ReLU", "r");
  NodeId out = g.add_node("Output", "y");
  g.connect({in, 0}, {r, 0});
  g.connect({r, 0}, {out, 0});
  const Graph before = g;
  Node saved = g.node(r);
  std::vector<Edge> saved_edges = g.edges_of(r);
  EXPECT_EQ(saved_edges.size(), 2u);
  g.remove_node(r);
  EXPECT_FALSE(g.contains(r));
  EXPECT_TRUE(g.edges().empty());
  EXPECT_FALSE(g == before);
  // Undo: the same id, the same edges, the same graph.
  g.insert_node(saved);
  for (const Edge& e : saved_edges) g.connect(e.from, e.to);
  EXPECT_TRUE(g == before);
  EXPECT_EQ(error_of([&] { g.insert_node(saved); }), "node id 2 is already taken");
  EXPECT_EQ(error_of([&] { g.remove_node(42); }), "graph has no node with id 42");
  EXPECT_THROW(g.node(42), IndexError);
  EXPECT_EQ(g.find(42), nullptr);

  // A new node after a removal never reuses an id.
  g.remove_node(out);
  NodeId again = g.add_node("Output");
  EXPECT_EQ(again, out + 1);

  g.rename(r, "act");
  EXPECT_EQ(g.node(r).name, "act");
  g.rename(r, "act");  // its own name is fine
  EXPECT_EQ(error_of([&] { g.rename(r, "x"); }), "name 'x' is already taken by another node");
  EXPECT_EQ(error_of([&] { g.rename(r, ""); }),
            "name '' is not an identifier (letters, digits and _, not starting with a digit)");
  g.set_position(r, 12.5, -3);
  EXPECT_EQ(g.node(r).x, 12.5);
  EXPECT_EQ(g.node(r).y, -3);
  EXPECT_THROW(g.set_position(r, std::nan(""), 0), ValueError);

  Node bad = saved;
  bad.id = 50;
  bad.name = "other";
  bad.attrs["bogus"] = int64_t{1};
  EXPECT_EQ(error_of([&] { g.insert_node(bad); }), "ReLU 'other': unknown attribute 'bogus' of ReLU; known: (none)");
}

TEST(GraphEdit, TopologicalOrderAndIo) {
  Graph g;
  NodeId out = g.add_node("Output", "y");
  NodeId add = g.add_node("Add", "sum");
  NodeId b = g.add_node("Input", "b");
  NodeId a = g.add_node("Input", "a");
  g.connect({a, 0}, {add, 0});
  g.connect({b, 0}, {add, 1});
  g.connect({add, 0}, {out, 0});
  EXPECT_EQ(g.topological_order(), (std::vector<NodeId>{b, a, add, out}));
  EXPECT_EQ(g.input_nodes(), (std::vector<NodeId>{b, a}));
  EXPECT_EQ(g.output_nodes(), (std::vector<NodeId>{out}));
  // A cycle can only come from a file (connect refuses it); the order names a node on it.
  NodeId r1 = g.add_node("ReLU", "r1"), r2 = g.add_node("ReLU", "r2"), r3 = g.add_node("ReLU", "r3");
  g.connect({r1, 0}, {r2, 0});
  g.connect({r2, 0}, {r3, 0});
  g.connect_unchecked_cycle({r2, 0}, {r1, 0});
  std::string e = error_of([&] { g.topological_order(); });
  EXPECT_TRUE(e == "the graph has a cycle through 'r1'" || e == "the graph has a cycle through 'r2'") << e;
  EXPECT_EQ(error_of([&] { g.connect_unchecked_cycle({r3, 0}, {r1, 0}); }), "input 'in' of 'r1' is already connected (from 'r2')");
}

}  // namespace
}  // namespace kiln::graph
