#include "engine/train/reference_models.h"

#include <algorithm>
#include <set>

#include "engine/core/error.h"
#include "engine/core/random.h"
#include "engine/nn/nn.h"
#include "engine/train/resnet.h"

namespace kiln::train {

namespace {

std::string known_models() {
  std::string s;
  for (const std::string& n : reference_model_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// The reference resnet's stages: He et al. 2016's CIFAR widths (section 4.2), one block each.
const std::vector<int64_t> kResnetWidths{16, 32, 64};

}  // namespace

const std::vector<std::string>& reference_model_names() {
  static const std::vector<std::string> names = {"mlp", "cnn", "resnet"};
  return names;
}

std::shared_ptr<nn::Module> make_model(const std::string& name, int64_t in_features, int64_t out_features) {
  using namespace kiln::nn;
  KILN_CHECK(in_features >= 1 && out_features >= 1, ValueError, "make_model(", name, "): sizes must be >= 1, got ",
             in_features, " inputs and ", out_features, " outputs");
  if (name == "mlp") {
    return std::make_shared<Sequential>(std::make_shared<Flatten>(), std::make_shared<Linear>(in_features, 256),
                                        std::make_shared<ReLU>(), std::make_shared<Linear>(256, 128),
                                        std::make_shared<ReLU>(), std::make_shared<Linear>(128, out_features));
  }
  if (name == "cnn") {
    KILN_CHECK(in_features == 784, ValueError, "the cnn takes 28 x 28 images (784 values), not ", in_features,
               " features; use the mlp for a table");
    return std::make_shared<Sequential>(
        std::make_shared<Conv2d>(1, 32, 3, 1, 1), std::make_shared<ReLU>(), std::make_shared<MaxPool2d>(2),
        std::make_shared<Conv2d>(32, 64, 3, 1, 1), std::make_shared<ReLU>(), std::make_shared<MaxPool2d>(2),
        std::make_shared<Flatten>(), std::make_shared<Linear>(3136, 128), std::make_shared<ReLU>(),
        std::make_shared<Linear>(128, out_features));
  }
  if (name == "resnet") {
    KILN_CHECK(in_features == 784, ValueError, "the resnet takes 28 x 28 images (784 values) here, not ", in_features,
               " features; use the mlp for a table");
    return make_image_model(name, 1, 28, 28, out_features);
  }
  throw ValueError("unknown model '" + name + "'; known models: " + known_models());
}

std::shared_ptr<nn::Module> make_image_model(const std::string& name, int64_t channels, int64_t height, int64_t width,
                                             int64_t classes) {
  using namespace kiln::nn;
  KILN_CHECK(channels >= 1 && height >= 1 && width >= 1 && classes >= 1, ValueError, "make_image_model(", name,
             "): sizes must be >= 1, got ", channels, " x ", height, " x ", width, " and ", classes, " classes");
  if (name == "mlp") return make_model(name, channels * height * width, classes);
  if (name == "cnn") {
    KILN_CHECK(height >= 4 && width >= 4, ValueError, "the cnn pools twice by 2, so it needs images of at least 4 x 4, "
               "not ", height, " x ", width);
    const int64_t flat = 64 * (height / 4) * (width / 4);  // MaxPool2d(2) floors, as PyTorch's
    return std::make_shared<Sequential>(
        std::make_shared<Conv2d>(channels, 32, 3, 1, 1), std::make_shared<ReLU>(), std::make_shared<MaxPool2d>(2),
        std::make_shared<Conv2d>(32, 64, 3, 1, 1), std::make_shared<ReLU>(), std::make_shared<MaxPool2d>(2),
        std::make_shared<Flatten>(), std::make_shared<Linear>(flat, 128), std::make_shared<ReLU>(),
        std::make_shared<Linear>(128, classes));
  }
  if (name == "resnet") return resnet_cifar(channels, classes, kResnetWidths, 1);
  throw ValueError("unknown model '" + name + "'; known models: " + known_models());
}

std::string infer_model_name(const nn::StateDict& state) {
  std::set<std::string> keys;
  for (const auto& [k, t] : state) keys.insert(k);

  Generator& gen = default_generator();
  const std::string saved = gen.state();  // building a model draws its initial weights
  std::string best;
  size_t best_shared = 0;
  for (const std::string& name : reference_model_names()) {
    std::set<std::string> model_keys;
    for (const auto& [k, t] : make_model(name)->state_dict()) model_keys.insert(k);
    size_t shared = static_cast<size_t>(
        std::count_if(keys.begin(), keys.end(), [&](const std::string& k) { return model_keys.count(k) > 0; }));
    if (model_keys == keys) {
      best = name;
      break;
    }
    if (shared > best_shared) {
      best = name;
      best_shared = shared;
    }
  }
  gen.set_state(saved);

  if (best.empty()) {
    std::string found;
    size_t shown = 0;
    for (const std::string& k : keys) {
      if (shown++ == 8) {
        found += ", ...";
        break;
      }
      found += (found.empty() ? "" : ", ") + k;
    }
    throw ValueError("the weights match none of the reference models (" + known_models() +
                     "); their keys: " + (found.empty() ? "(none)" : found));
  }
  return best;
}

}  // namespace kiln::train
