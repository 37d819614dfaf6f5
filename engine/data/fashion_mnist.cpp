#include "engine/data/fashion_mnist.h"

#include <cstring>

#include "engine/core/error.h"
#include "engine/data/idx.h"

namespace kiln::data {

const std::array<const char*, 10> FashionMNIST::kClassNames = {
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"};

FashionMNIST::FashionMNIST(bool train, const std::string& dir, Normalize normalize) {
  MnistData d = load_mnist_like(dir, train);
  images_ = d.images;
  labels_ = d.labels;
  KILN_CHECK(normalize.mean().size() == 1, ValueError, "FashionMNIST: images have one channel but Normalize has ",
             normalize.mean().size());
  table_ = normalize.u8_table(0);
}

int64_t FashionMNIST::size() const { return images_.size(0); }

Batch FashionMNIST::get_batch(const std::vector<int64_t>& indices) const {
  const int64_t b = static_cast<int64_t>(indices.size());
  const int64_t h = images_.size(1), w = images_.size(2), pixels = h * w;
  Tensor input = Tensor::empty({b, 1, h, w}, DType::f32);
  Tensor target = Tensor::empty({b}, DType::i64);
  const uint8_t* src = images_.data_ptr<const uint8_t>();
  const int64_t* labels = labels_.data_ptr<const int64_t>();
  float* dst = input.data_ptr<float>();
  int64_t* t = target.data_ptr<int64_t>();
  const float* table = table_.data();
  for (int64_t k = 0; k < b; ++k) {
    int64_t i = indices[static_cast<size_t>(k)];
    KILN_CHECK(i >= 0 && i < size(), IndexError, "FashionMNIST: index ", i, " is out of range [0, ", size(), ")");
    const uint8_t* s = src + i * pixels;
    float* d = dst + k * pixels;
    for (int64_t p = 0; p < pixels; ++p) d[p] = table[s[p]];
    t[k] = labels[i];
  }
  return {input, target};
}

}  // namespace kiln::data
