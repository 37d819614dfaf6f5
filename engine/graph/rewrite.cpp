#include "engine/graph/rewrite.h"

#include "engine/core/error.h"
#include "engine/graph/analysis.h"

namespace kiln::graph {
namespace {

std::string problems_text(const Analysis& a, const Graph& g) {
  std::string s;
  for (const Problem& p : a.problems) {
    const Node* n = p.node >= 0 ? g.find(p.node) : nullptr;
    s += "\n  " + (n ? n->name + ": " : std::string()) + p.message;
  }
  return s;
}

}  // namespace

const Fusion* RewriteContext::fusion_of_producer(NodeId producer) const {
  for (const Fusion& f : fusions)
    if (f.producer == producer) return &f;
  return nullptr;
}

const Fusion* RewriteContext::fusion_of_activation(NodeId activation) const {
  for (const Fusion& f : fusions)
    if (f.activation == activation) return &f;
  return nullptr;
}

PassRunner& PassRunner::add(std::unique_ptr<GraphPass> pass) {
  KILN_CHECK(pass != nullptr, ValueError, "PassRunner::add: null pass");
  passes_.push_back(std::move(pass));
  return *this;
}

std::vector<std::string> PassRunner::names() const {
  std::vector<std::string> n;
  for (const auto& p : passes_) n.push_back(p->name());
  return n;
}

RewriteContext PassRunner::run(Graph graph, int max_rounds) const {
  const Analysis before = analyze(graph);
  KILN_CHECK(before.ok(), ValueError, "graph rewrite: the graph cannot run:", problems_text(before, graph));
  RewriteContext ctx;
  ctx.graph = std::move(graph);
  for (int round = 0; round < max_rounds; ++round) {
    bool changed = false;
    for (const auto& pass : passes_) {
      if (!pass->apply(ctx)) continue;
      changed = true;
      const Analysis after = analyze(ctx.graph);
      KILN_CHECK(after.ok(), ValueError, "graph rewrite: pass ", pass->name(), " left a graph that cannot run:",
                 problems_text(after, ctx.graph));
    }
    if (!changed) break;
  }
  return ctx;
}

void store_state(Graph& graph, const nn::StateDict& state) {
  for (const auto& [key, t] : state) graph.initial_state[key] = t.to(Device{}).contiguous();
}

}  // namespace kiln::graph
