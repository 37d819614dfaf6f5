#include "engine/graph/graph_module.h"

#include <algorithm>
#include <map>

#include "engine/core/error.h"
#include "engine/core/grad_mode.h"
#include "engine/core/ops.h"
#include "engine/graph/op_schema.h"

namespace kiln::graph {

std::optional<size_t> padding_mask_input(const Graph& g) {
  const std::vector<NodeId> in = g.input_nodes();
  for (size_t k = 0; k < in.size(); ++k) {
    const Attributes a = OpRegistry::global().get("Input").with_defaults(g.node(in[k]).attrs);
    if (attr_string(a, "dtype") == "i64" && attr_ints(a, "shape").size() == 1) return k;
  }
  return std::nullopt;
}

GraphModule::GraphModule(const Graph& graph) : graph_(graph), analysis_(analyze(graph)) {
  if (!analysis_.ok()) {
    std::string msg = "the graph cannot run:";
    for (const Problem& p : analysis_.problems)
      msg += "\n  " + (p.node >= 0 ? "'" + graph_.node(p.node).name + "': " : std::string()) + p.message;
    throw ValueError(msg);
  }
  order_ = graph_.topological_order();
  for (NodeId id : order_) {
    const Node& n = graph_.node(id);
    const OpSchema& s = OpRegistry::global().get(n.op);
    std::shared_ptr<nn::Module> m;
    if (s.build) {
      m = s.build(analysis_.nodes.at(id).inputs, n.attrs);
      register_module(n.name, m);
      load_initial_state(n.name, *m);
      if (!n.trainable) {
        for (Tensor& p : m->parameters()) p.requires_grad_(false);
        m->eval();
      }
    }
    modules_.push_back(m);
    needs_mask_ = needs_mask_ || s.takes_padding_mask;
  }
  mask_input_ = padding_mask_input(graph_);
}

void GraphModule::load_initial_state(const std::string& node, nn::Module& m) {
  if (graph_.initial_state.empty()) return;
  nn::StateDict fitting;
  for (const auto& [key, t] : m.state_dict()) {
    auto it = graph_.initial_state.find(node + "." + key);
    if (it != graph_.initial_state.end() && it->second.shape() == t.shape() && it->second.dtype() == t.dtype())
      fitting.emplace_back(key, it->second);
  }
  if (!fitting.empty()) m.load_state_dict(fitting, false);
}

std::vector<Tensor> GraphModule::trainable_parameters() const {
  std::vector<Tensor> v;
  for (const Tensor& p : parameters())
    if (p.requires_grad()) v.push_back(p);
  return v;
}

void GraphModule::train(bool on) {
  nn::Module::train(on);
  for (size_t i = 0; i < order_.size(); ++i)
    if (modules_[i] && !graph_.node(order_[i]).trainable) modules_[i]->eval();
}

Tensor GraphModule::forward(const Tensor& x) {
  KILN_CHECK(graph_.input_nodes().size() == 1 && graph_.output_nodes().size() == 1, ValueError,
             "GraphModule::forward(x) needs one Input and one Output node; this graph has ", graph_.input_nodes().size(),
             " and ", graph_.output_nodes().size(), " (use forward({...}))");
  return forward(std::vector<Tensor>{x}).at(0);
}

std::vector<Tensor> GraphModule::forward(const std::vector<Tensor>& inputs) { return forward(inputs, OutputHook()); }

std::vector<Tensor> GraphModule::forward(const std::vector<Tensor>& inputs, const OutputHook& hook) {
  const std::vector<NodeId> in_ids = graph_.input_nodes();
  KILN_CHECK(inputs.size() == in_ids.size(), ValueError, "GraphModule: the graph has ", in_ids.size(),
             " inputs, got ", inputs.size(), " tensors");
  std::map<PortRef, Tensor> values;
  std::map<NodeId, Tensor> outputs;
  Tensor mask;  // f32 [N, T]: 1 where the ids are not <pad> (0); see the header
  if (needs_mask_ && mask_input_) {
    NoGradGuard no_grad;
    const Tensor& ids = inputs.at(*mask_input_);
    mask = ne(ids, scalar_like(0.0, ids)).to(DType::f32);
  }
  for (size_t i = 0; i < order_.size(); ++i) {
    const NodeId id = order_[i];
    const Node& n = graph_.node(id);
    const OpSchema& s = OpRegistry::global().get(n.op);
    std::vector<Tensor> args;
    if (n.op == "Input") {
      const size_t k = static_cast<size_t>(std::find(in_ids.begin(), in_ids.end(), id) - in_ids.begin());
      const Tensor& x = inputs[k];
      const TensorType& want = analysis_.nodes.at(id).outputs.at(0);
      bool fits = x.dim() == static_cast<int64_t>(want.shape.size());
      for (size_t d = 1; fits && d < want.shape.size(); ++d)  // a symbolic dim ("sequence") takes any size
        fits = is_symbolic(want.shape[d]) || x.size(static_cast<int64_t>(d)) == want.shape[d];
      KILN_CHECK(fits, ShapeError, "GraphModule: input '", n.name, "' expects ", shape_str(want.shape), ", got ",
                 kiln::shape_str(x.shape()));
      args.push_back(x);
    } else {
      for (int p = 0; p < s.input_count(n.attrs); ++p) args.push_back(values.at(*graph_.source_of({id, p})));
      if (s.takes_padding_mask) args.push_back(mask);
    }
    if (n.op == "Output") {
      outputs[id] = args.at(0);
      continue;
    }
    std::vector<Tensor> out = s.forward(modules_[i].get(), args, n.attrs);
    if (hook) hook(n, out);
    for (size_t p = 0; p < out.size(); ++p) values[PortRef{id, static_cast<int>(p)}] = out[p];
  }
  std::vector<Tensor> result;
  for (NodeId id : graph_.output_nodes()) result.push_back(outputs.at(id));
  return result;
}

}  // namespace kiln::graph
