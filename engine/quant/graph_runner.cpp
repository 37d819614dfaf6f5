#include "engine/quant/graph_runner.h"

#include <map>

#include "engine/core/error.h"
#include "engine/core/grad_mode.h"
#include "engine/graph/op_schema.h"

namespace kiln::quant {

using graph::NodeId;
using graph::OpRegistry;
using graph::PortRef;

GraphRunner::GraphRunner(const graph::Graph& g) : graph_(g), analysis_(graph::analyze(g)) {
  if (!analysis_.ok()) {
    std::string msg = "the graph cannot run:";
    for (const graph::Problem& p : analysis_.problems)
      msg += "\n  " + (p.node >= 0 ? "'" + graph_.node(p.node).name + "': " : std::string()) + p.message;
    throw ValueError(msg);
  }
  KILN_CHECK(graph_.input_nodes().size() == 1 && graph_.output_nodes().size() == 1, ValueError,
             "quantization needs a graph with one Input and one Output; this one has ", graph_.input_nodes().size(),
             " and ", graph_.output_nodes().size());
  order_ = graph_.topological_order();
  for (NodeId id : order_) {
    const graph::Node& n = graph_.node(id);
    const graph::OpSchema& s = OpRegistry::global().get(n.op);
    KILN_CHECK(s.outputs.size() <= 1, ValueError, "quantization: node '", n.name, "' (", n.op,
               ") has several outputs, which the int8 model does not run");
    KILN_CHECK(!s.takes_padding_mask, ValueError, "quantization: node '", n.name, "' (", n.op,
               ") is a sequence layer; the int8 model runs image and feature models only");
    std::shared_ptr<nn::Module> m;
    if (s.build) {
      m = s.build(analysis_.nodes.at(id).inputs, n.attrs);
      nn::StateDict fitting;
      for (const auto& [key, t] : m->state_dict()) {
        auto it = graph_.initial_state.find(n.name + "." + key);
        if (it != graph_.initial_state.end() && it->second.shape() == t.shape() && it->second.dtype() == t.dtype())
          fitting.emplace_back(key, it->second);
      }
      if (!fitting.empty()) m->load_state_dict(fitting, false);
      m->eval();
    }
    modules_.push_back(std::move(m));
  }
}

void GraphRunner::to(const Device& device) {
  for (auto& m : modules_)
    if (m) m->to(device);
}

std::shared_ptr<nn::Module> GraphRunner::module(NodeId id) const {
  for (size_t i = 0; i < order_.size(); ++i)
    if (order_[i] == id) return modules_[i];
  return nullptr;
}

Tensor GraphRunner::run(const Tensor& x, const Hook& hook, bool grad) const {
  std::optional<NoGradGuard> no_grad;
  if (!grad) no_grad.emplace();
  std::map<PortRef, Tensor> values;
  Tensor result;
  for (size_t i = 0; i < order_.size(); ++i) {
    const NodeId id = order_[i];
    const graph::Node& n = graph_.node(id);
    const graph::OpSchema& s = OpRegistry::global().get(n.op);
    std::vector<Tensor> args;
    if (n.op == "Input") {
      const graph::TensorType& want = analysis_.nodes.at(id).outputs.at(0);
      bool fits = x.dim() == static_cast<int64_t>(want.shape.size());
      for (size_t d = 1; fits && d < want.shape.size(); ++d)
        fits = graph::is_symbolic(want.shape[d]) || x.size(static_cast<int64_t>(d)) == want.shape[d];
      KILN_CHECK(fits, ShapeError, "input '", n.name, "' expects ", graph::shape_str(want.shape), ", got ",
                 shape_str(x.shape()));
      args.push_back(x);
    } else {
      for (int p = 0; p < s.input_count(n.attrs); ++p) args.push_back(values.at(*graph_.source_of({id, p})));
    }
    if (n.op == "Output") {
      result = args.at(0);
      continue;
    }
    std::optional<Tensor> out = hook ? hook(n, args) : std::nullopt;
    if (!out) out = s.forward(modules_[i].get(), args, n.attrs).at(0);
    values[PortRef{id, 0}] = *out;
  }
  return result;
}

}  // namespace kiln::quant
