#include "engine/explain/layers.h"

#include "engine/core/error.h"
#include "engine/graph/graph_module.h"

namespace kiln::explain::detail {

Tensor run_layers(nn::Module& model, const Tensor& x, const LayerHook& hook) {
  if (auto* g = dynamic_cast<graph::GraphModule*>(&model)) {
    KILN_CHECK(g->graph().input_nodes().size() == 1 && g->graph().output_nodes().size() == 1, ValueError,
               "Grad-CAM needs a graph with one Input and one Output; this one has ",
               g->graph().input_nodes().size(), " and ", g->graph().output_nodes().size());
    return g->forward(std::vector<Tensor>{x}, [&](const graph::Node& n, std::vector<Tensor>& out) {
             if (!out.empty()) hook(n.name, n.op, out[0]);
           }).at(0);
  }
  if (auto* s = dynamic_cast<nn::Sequential*>(&model)) {
    Tensor y = x;
    for (const auto& [name, child] : s->named_children()) {
      y = child->forward(y);
      hook(name, child->type_name(), y);
    }
    return y;
  }
  throw ValueError("Grad-CAM needs the model's layers: a graph model or a Sequential, not a " + model.type_name() +
                   " (saliency works with any model)");
}

bool is_conv(const std::string& type) {
  return type == "Conv2d" || type == "ConvTranspose2d" || type == "onnx.Conv";
}

}  // namespace kiln::explain::detail
