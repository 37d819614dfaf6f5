// Shapes, strides and broadcasting (NumPy rules).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace kiln {

using Shape = std::vector<int64_t>;    // sizes, outermost first
using Strides = std::vector<int64_t>;  // in elements, may be 0 (expanded) but not negative

int64_t numel(const Shape& s);
Strides contiguous_strides(const Shape& s);
std::string shape_str(const Shape& s);  // "[2, 3, 4]"

// Broadcast two shapes (NumPy rules). Throws ShapeError naming `op` and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
// Strides that view a tensor of (shape, strides) as `target` (a broadcast of shape):
// leading new dims and size-1 dims that grow get stride 0.
Strides broadcast_strides(const Shape& shape, const Strides& strides, const Shape& target);
// Wraps a possibly negative dim into [0, ndim). Throws IndexError naming `op`.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);

}  // namespace kiln
