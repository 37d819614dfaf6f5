// Internal to engine/explain: running a model layer by layer with a hook on each layer's output.
#pragma once
#include <functional>
#include <string>

#include "engine/core/tensor.h"
#include "engine/nn/module.h"

namespace kiln::explain::detail {

// Called with each layer's name, type ("Conv2d") and output, which it may replace (the later
// layers read the replacement).
using LayerHook = std::function<void(const std::string& name, const std::string& type, Tensor& output)>;

// model(x) with `hook` after each layer: a graph::GraphModule's nodes (port 0 of each; explain.h
// says which models), an nn::Sequential's children. ValueError naming the model's type for
// another module ("Grad-CAM needs the model's layers: ...").
Tensor run_layers(nn::Module& model, const Tensor& x, const LayerHook& hook);

// Whether `type` is one of the convolutions explain.h's conv_layers() lists.
bool is_conv(const std::string& type);

}  // namespace kiln::explain::detail
