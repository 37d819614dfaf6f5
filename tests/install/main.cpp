// Trains y = 2x + 1 with autograd through the installed engine's headers and library.
#include <cmath>
#include <cstdio>

#include "engine/core/grad_mode.h"
#include "engine/core/ops.h"

int main() {
  using namespace kiln;
  Tensor x = Tensor::from_vector(std::vector<float>{0, 1, 2, 3}, {4, 1});
  Tensor y = x * 2.0 + 1.0;
  Tensor w = Tensor::zeros({1, 1}).requires_grad_(), b = Tensor::zeros({1}).requires_grad_();
  for (int i = 0; i < 500; ++i) {
    Tensor loss = mean(square(linear(x, w, b) - y));
    loss.backward();
    NoGradGuard no_grad;
    w.copy_(w - w.grad() * 0.05);
    b.copy_(b - b.grad() * 0.05);
    w.zero_grad();
    b.zero_grad();
  }
  float wv = w.item<float>(), bv = b.item<float>();
  std::printf("w=%.4f b=%.4f\n", wv, bv);
  return std::abs(wv - 2) < 1e-2 && std::abs(bv - 1) < 1e-2 ? 0 : 1;
}
