// Why did the model predict that: Grad-CAM and saliency maps for image classifiers, computed with
// the engine's autograd (no Python at run time). Both take one image f32 [C, H, W] (preprocessed as
// the model's inputs are) and a model that maps [1, C, H, W] to logits [1, K] on any device, and
// return a map f32 [H, W] on the CPU, one value per input pixel.
//
// The models they understand: a graph::GraphModule (what Kiln Studio trains, what `kiln train
// --graph` and an imported ONNX model become), whose layers are its nodes, named as the nodes; and
// an nn::Sequential (the built-in models of `kiln train`, train/reference_models.h), whose layers
// are its children, named "0", "1", ... as PyTorch names them. saliency() takes any nn::Module.
//
// Both run the model in eval mode (dropout off, batch norm on its running statistics, as
// model.eval() in the PyTorch reference) and give the model back in the mode it was in; the
// parameters get no gradient (their requires_grad is off while the map is computed).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/nn/module.h"

namespace kiln::explain {

// A map and what it explains.
struct Explanation {
  Tensor map;                  // f32 [H, W] on the CPU, H and W the image's
  std::string layer;           // grad_cam: the layer whose activations were used; saliency: ""
  std::string layer_type;      // its op ("Conv2d"); saliency: ""
  Shape layer_shape;           // its output [1, C', H', W']; saliency: {}
  int64_t target_class = 0;    // the class whose score was differentiated
  int64_t predicted = 0;       // the argmax of the logits (the first of equal ones)
  std::vector<float> logits;   // [K], the model's output for the image
};

// The layers whose type is a convolution (Conv2d, ConvTranspose2d, and onnx.Conv for an imported
// node kept in its ONNX form) and whose output for `image` is spatial ([1, C, H', W'] with H' * W'
// > 1), in the order they run: Grad-CAM's candidates; grad_cam's default is the last one.
// ShapeError for an image that is not [C, H, W]; ValueError for a model that is neither a
// GraphModule nor a Sequential; the model's own errors for an image it cannot take.
std::vector<std::string> conv_layers(nn::Module& model, const Tensor& image);

// Grad-CAM (Selvaraju et al., "Grad-CAM: Visual Explanations from Deep Networks via
// Gradient-based Localization", ICCV 2017, eq. 1 and 2): with A [C', H', W'] the activations of
// `layer` (the output of that node or child) and y the logit of `target_class`,
//   alpha_k = mean over (i, j) of dy / dA_k[i, j]      (global-average-pooled gradients)
//   cam     = ReLU(sum_k alpha_k A_k)                 [H', W']
// then upsampled to [H, W] bilinearly (torch.nn.functional.interpolate, mode "bilinear",
// align_corners False) and normalised to [0, 1]: (cam - min) / (max - min), all zeros where
// max == min (a class with no positive evidence anywhere).
// target_class < 0 explains the predicted class; layer "" is the last of conv_layers().
// Errors: ShapeError for an image that is not [C, H, W] or a model output that is not [1, K];
// ValueError "class K is out of range: the model has N classes (0 to N-1)"; ValueError "Grad-CAM
// needs a convolution layer; the model has none — use --method saliency" when layer is "" and
// conv_layers() is empty; ValueError "no layer named 'X'; ..." listing the convolution layers;
// ValueError when the named layer's output is not [1, C', H', W']; ValueError for a model that is
// neither a GraphModule nor a Sequential; ValueError when no gradient reaches the layer (an
// output that does not depend on it, or nodes without a backward rule between them).
Explanation grad_cam(nn::Module& model, const Tensor& image, int64_t target_class = -1, const std::string& layer = "");

// Saliency map (Simonyan, Vedaldi and Zisserman, "Deep Inside Convolutional Networks: Visualising
// Image Classification Models and Saliency Maps", ICLR 2014 workshop, section 3.1): with y the
// logit of `target_class`, map[i, j] = max over channels c of |dy / dx[c, i, j]| (not normalised).
// target_class < 0 explains the predicted class. Errors as grad_cam's for the image, the output
// and the class.
Explanation saliency(nn::Module& model, const Tensor& image, int64_t target_class = -1);

// Bilinear resize of a [h, w] map to [height, width] as torch.nn.functional.interpolate(mode
// "bilinear", align_corners False): source coordinate (dst + 0.5) * in / out - 0.5, clamped at 0.
// ValueError for an empty size or a map of another length than h * w.
std::vector<float> upsample_bilinear(const std::vector<float>& map, int64_t h, int64_t w, int64_t height,
                                     int64_t width);

}  // namespace kiln::explain
