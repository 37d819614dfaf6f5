#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "engine/core/error.h"
#include "engine/core/grad_mode.h"
#include "engine/core/ops.h"
#include "engine/core/shape.h"
#include "engine/explain/explain.h"
#include "engine/explain/layers.h"

namespace kiln::explain {
namespace {

// The model in eval mode, with gradients recorded and its parameters' requires_grad off, for the
// scope; everything as it was afterwards (explain.h).
class ExplainScope {
 public:
  explicit ExplainScope(nn::Module& model) : model_(model), training_(model.is_training()),
                                             grad_(GradMode::is_enabled()) {
    model_.eval();
    GradMode::set_enabled(true);
    for (Tensor& p : params_ = model_.parameters())
      if (p.requires_grad()) p.requires_grad_(false), frozen_.push_back(p);
  }
  ~ExplainScope() {
    for (Tensor& p : frozen_) p.requires_grad_(true);
    GradMode::set_enabled(grad_);
    model_.train(training_);
  }
  ExplainScope(const ExplainScope&) = delete;
  ExplainScope& operator=(const ExplainScope&) = delete;
  // The device of the model's parameters (the CPU for a model without any).
  Device device() const { return params_.empty() ? Device() : params_.front().device(); }

 private:
  nn::Module& model_;
  bool training_, grad_;
  std::vector<Tensor> params_, frozen_;
};

// image f32 [C, H, W] -> [1, C, H, W] on `device`.
Tensor batch_of(const Tensor& image, Device device) {
  KILN_CHECK(image.defined() && image.dim() == 3, ShapeError, "explain: the image must be [C, H, W], got ",
             image.defined() ? shape_str(image.shape()) : std::string("no tensor"));
  return image.to(DType::f32).unsqueeze(0).to(device);
}

// Checks logits [1, K], fills e.logits, e.predicted and e.target_class (`target` < 0: the
// predicted class).
void read_logits(const Tensor& logits, int64_t target, Explanation& e) {
  KILN_CHECK(logits.dim() == 2 && logits.size(0) == 1 && logits.size(1) >= 1, ShapeError,
             "explain: the model's output must be logits [1, K] for one image, got ", shape_str(logits.shape()));
  e.logits = logits.detach().to(Device()).to_vector<float>();
  const auto k = static_cast<int64_t>(e.logits.size());
  e.predicted = std::max_element(e.logits.begin(), e.logits.end()) - e.logits.begin();
  KILN_CHECK(target < k, ValueError, "class ", target, " is out of range: the model has ", k, " classes (0 to ", k - 1,
             ")");
  e.target_class = target < 0 ? e.predicted : target;
}

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace

std::vector<std::string> conv_layers(nn::Module& model, const Tensor& image) {
  ExplainScope scope(model);
  NoGradGuard no_grad;
  std::vector<std::string> convs;
  detail::run_layers(model, batch_of(image, scope.device()), [&](const std::string& name, const std::string& type,
                                                                  Tensor& out) {
    if (detail::is_conv(type) && out.dim() == 4 && out.size(2) * out.size(3) > 1) convs.push_back(name);
  });
  return convs;
}

Explanation grad_cam(nn::Module& model, const Tensor& image, int64_t target_class, const std::string& layer) {
  ExplainScope scope(model);
  const Tensor x = batch_of(image, scope.device());
  Explanation e;
  // Pass 1 (no gradients): the layers, their output shapes and the logits.
  std::vector<std::string> convs;
  std::map<std::string, std::pair<std::string, Shape>> layers;  // name -> (type, output shape)
  {
    NoGradGuard no_grad;
    const Tensor logits = detail::run_layers(model, x, [&](const std::string& name, const std::string& type,
                                                            Tensor& out) {
      layers.emplace(name, std::pair{type, out.shape()});
      if (detail::is_conv(type) && out.dim() == 4 && out.size(2) * out.size(3) > 1) convs.push_back(name);
    });
    read_logits(logits, target_class, e);
  }
  if (layer.empty()) {
    KILN_CHECK(!convs.empty(), ValueError,
               "Grad-CAM needs a convolution layer; the model has none — use --method saliency");
    e.layer = convs.back();
  } else {
    KILN_CHECK(layers.count(layer), ValueError, "no layer named '", layer, "'; the model's convolution layers: ",
               convs.empty() ? std::string("none (use --method saliency)") : joined(convs));
    e.layer = layer;
  }
  const auto& [type, shape] = layers.at(e.layer);
  KILN_CHECK(shape.size() == 4, ValueError, "layer '", e.layer, "' (", type, ") gives ", shape_str(shape),
             ", not [1, C, H, W]: Grad-CAM needs a layer with a spatial output (the convolution layers: ",
             convs.empty() ? std::string("none") : joined(convs), ")");
  e.layer_type = type;
  e.layer_shape = shape;

  // Pass 2: the layer's activations A become a leaf; d logit / dA by backward.
  Tensor a;
  const Tensor logits = detail::run_layers(model, x, [&](const std::string& name, const std::string&, Tensor& out) {
    if (name != e.layer || a.defined()) return;
    a = out.detach();
    a.requires_grad_(true);
    out = a;
  });
  logits.select(0, 0).select(0, e.target_class).backward();
  const Tensor grad = a.grad();
  KILN_CHECK(grad.defined(), ValueError, "Grad-CAM: no gradient reaches layer '", e.layer,
             "' from the model's output (the output does not depend on it, or a node between them has no backward)");

  // alpha_k = mean_ij dy/dA_k[i, j]; cam = ReLU(sum_k alpha_k A_k) (explain.h), in double.
  const int64_t c = shape[1], h = shape[2], w = shape[3], hw = h * w;
  const std::vector<float> av = a.detach().to(Device()).to_vector<float>();
  const std::vector<float> gv = grad.to(Device()).to_vector<float>();
  std::vector<float> cam(static_cast<size_t>(hw));
  std::vector<double> alpha(static_cast<size_t>(c), 0.0);
  for (int64_t k = 0; k < c; ++k) {
    for (int64_t i = 0; i < hw; ++i) alpha[k] += gv[k * hw + i];
    alpha[k] /= static_cast<double>(hw);
  }
  for (int64_t i = 0; i < hw; ++i) {
    double s = 0.0;
    for (int64_t k = 0; k < c; ++k) s += alpha[k] * av[k * hw + i];
    cam[i] = static_cast<float>(std::max(s, 0.0));
  }
  std::vector<float> up = upsample_bilinear(cam, h, w, image.size(1), image.size(2));
  const auto [lo, hi] = std::minmax_element(up.begin(), up.end());
  const float mn = *lo, range = *hi - *lo;
  for (float& v : up) v = range > 0.0f ? (v - mn) / range : 0.0f;
  e.map = Tensor::from_vector(up, {image.size(1), image.size(2)});
  return e;
}

Explanation saliency(nn::Module& model, const Tensor& image, int64_t target_class) {
  ExplainScope scope(model);
  Tensor x = batch_of(image, scope.device()).detach();
  x.requires_grad_(true);
  Explanation e;
  const Tensor logits = model.forward(x);
  read_logits(logits, target_class, e);
  logits.select(0, 0).select(0, e.target_class).backward();
  const Tensor grad = x.grad();
  KILN_CHECK(grad.defined(), ValueError, "saliency: no gradient reaches the image from the model's output (a node "
             "between them has no backward, or the output does not depend on the image)");
  // map[i, j] = max_c |dy / dx[c, i, j]| (explain.h).
  e.map = amax(grad.abs().to(Device()), {1}).reshape({image.size(1), image.size(2)}).contiguous();
  return e;
}

std::vector<float> upsample_bilinear(const std::vector<float>& map, int64_t h, int64_t w, int64_t height,
                                     int64_t width) {
  KILN_CHECK(h > 0 && w > 0 && height > 0 && width > 0, ValueError, "upsample_bilinear: empty size [", h, ", ", w,
             "] -> [", height, ", ", width, "]");
  KILN_CHECK(static_cast<int64_t>(map.size()) == h * w, ValueError, "upsample_bilinear: a map of ", map.size(),
             " values is not [", h, ", ", w, "]");
  // PyTorch's area_pixel_compute_source_index (align_corners false) and upsample_bilinear2d.
  auto source = [](int64_t dst, int64_t in, int64_t out, int64_t& i0, int64_t& i1, float& l1) {
    const float scale = static_cast<float>(in) / static_cast<float>(out);
    const float src = std::max(scale * (static_cast<float>(dst) + 0.5f) - 0.5f, 0.0f);
    i0 = std::min(static_cast<int64_t>(src), in - 1);
    i1 = std::min(i0 + 1, in - 1);
    l1 = src - static_cast<float>(i0);
  };
  std::vector<float> out(static_cast<size_t>(height * width));
  for (int64_t y = 0; y < height; ++y) {
    int64_t y0, y1;
    float ly;
    source(y, h, height, y0, y1, ly);
    for (int64_t x = 0; x < width; ++x) {
      int64_t x0, x1;
      float lx;
      source(x, w, width, x0, x1, lx);
      const float top = (1 - lx) * map[y0 * w + x0] + lx * map[y0 * w + x1];
      const float bottom = (1 - lx) * map[y1 * w + x0] + lx * map[y1 * w + x1];
      out[y * width + x] = (1 - ly) * top + ly * bottom;
    }
  }
  return out;
}

}  // namespace kiln::explain
