// A (height, width) pair for kernel sizes, strides and paddings; a single
// integer means the same value for both (as PyTorch's _pair).
#pragma once
#include <cstdint>
#include <string>

namespace kiln::nn {

struct Size2 {
  int64_t h = 0, w = 0;
  Size2(int64_t v) : h(v), w(v) {}  // NOLINT: implicit, as PyTorch accepts an int
  Size2(int64_t h_, int64_t w_) : h(h_), w(w_) {}
  bool operator==(const Size2&) const = default;
  // As PyTorch prints a pair: "(3, 3)".
  std::string str() const {
    std::string s = "(";  // appended piecewise: GCC 12 warns falsely (-Wrestrict) on "(" + std::string
    s.append(std::to_string(h)).append(", ").append(std::to_string(w)).append(")");
    return s;
  }
};

}  // namespace kiln::nn
