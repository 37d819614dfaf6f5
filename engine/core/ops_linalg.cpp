// matmul, linear, cat, stack.
#include "engine/core/autocast.h"
#include "engine/core/error.h"
#include "engine/core/ops_internal.h"

namespace kiln {

Tensor matmul(const Tensor& a, const Tensor& b) {
  check_same_device(a, b, "matmul");
  if (autocast_wants(a) || autocast_wants(b)) return matmul(autocast(a), autocast(b));  // engine/core/autocast.h
  KILN_CHECK(a.dim() >= 1 && b.dim() >= 1, ShapeError, "matmul: both arguments need at least 1 dimension, got ",
             shape_str(a.shape()), " and ", shape_str(b.shape()));
  DType t = promote_types(a.dtype(), b.dtype());
  KILN_CHECK(is_floating(t), DTypeError, "matmul: expected floating-point tensors, got ", dtype_name(a.dtype()),
             " and ", dtype_name(b.dtype()));
  Tensor a2 = (a.dim() == 1 ? a.unsqueeze(0) : a).to(t);
  Tensor b2 = (b.dim() == 1 ? b.unsqueeze(-1) : b).to(t);
  int64_t m = a2.size(-2), k = a2.size(-1), n = b2.size(-1);
  KILN_CHECK(k == b2.size(-2), ShapeError, "matmul: shapes ", shape_str(a.shape()), " and ", shape_str(b.shape()),
             " cannot be multiplied (", k, " vs ", b2.size(-2), ")");
  Shape ab(a2.shape().begin(), a2.shape().end() - 2), bb(b2.shape().begin(), b2.shape().end() - 2);
  Shape batch = broadcast_shapes(ab, bb, "matmul");
  Shape a_shape = batch, b_shape = batch, out_shape = batch;
  a_shape.insert(a_shape.end(), {m, k});
  b_shape.insert(b_shape.end(), {k, n});
  out_shape.insert(out_shape.end(), {m, n});
  Tensor out = detail::empty(out_shape, t, a.device());
  if (out.numel()) a.backend()->matmul(out.arg(), detail::broadcast_arg(a2, a_shape), detail::broadcast_arg(b2, b_shape));
  if (detail::needs_grad({&a2, &b2})) detail::record(out, OpKind::matmul, {a2, b2});
  if (a.dim() == 1) out = out.squeeze(-2);
  if (b.dim() == 1) out = out.squeeze(-1);
  return out;
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  KILN_CHECK(weight.dim() == 2, ShapeError, "linear: weight must be [out_features, in_features], got ",
             shape_str(weight.shape()));
  KILN_CHECK(x.dim() >= 1 && x.size(-1) == weight.size(1), ShapeError, "linear: input of shape ",
             shape_str(x.shape()), " does not match weight of shape ", shape_str(weight.shape()),
             " (in_features ", weight.size(1), ")");
  Tensor y = matmul(x, weight.t());
  if (bias.defined()) {
    KILN_CHECK(bias.dim() == 1 && bias.size(0) == weight.size(0), ShapeError, "linear: bias of shape ",
               shape_str(bias.shape()), " does not match weight of shape ", shape_str(weight.shape()));
    y = add(y, bias);
  }
  return y;
}

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  KILN_CHECK(!tensors.empty(), ValueError, "cat: expected a non-empty list of tensors");
  const Tensor& first = tensors[0];
  dim = wrap_dim(dim, first.dim(), "cat");
  DType t = first.dtype();
  Shape shape = first.shape();
  shape[dim] = 0;
  std::vector<int64_t> sizes;
  for (const Tensor& x : tensors) {
    check_same_device(first, x, "cat");
    t = promote_types(t, x.dtype());
    KILN_CHECK(x.dim() == first.dim(), ShapeError, "cat: tensors must have the same number of dimensions, got ",
               shape_str(first.shape()), " and ", shape_str(x.shape()));
    for (int64_t i = 0; i < x.dim(); ++i)
      KILN_CHECK(i == dim || x.shape()[i] == first.shape()[i], ShapeError, "cat: shapes ", shape_str(first.shape()),
                 " and ", shape_str(x.shape()), " differ in dimension ", i, " (concatenating along ", dim, ")");
    shape[dim] += x.shape()[dim];
    sizes.push_back(x.shape()[dim]);
  }
  Tensor out = detail::empty(shape, t, first.device());
  int64_t offset = 0;
  bool grad = false;
  std::vector<Tensor> inputs;
  for (const Tensor& x : tensors) {
    int64_t n = x.shape()[dim];
    if (n && out.numel()) out.slice(dim, offset, offset + n).copy_(x);
    offset += n;
    grad = grad || detail::needs_grad({&x});
    inputs.push_back(x.to(t));
  }
  if (grad && is_floating(t)) detail::record(out, OpKind::cat, inputs, op_attrs::Cat{dim, sizes});
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  KILN_CHECK(!tensors.empty(), ValueError, "stack: expected a non-empty list of tensors");
  dim = wrap_dim(dim, tensors[0].dim() + 1, "stack");
  std::vector<Tensor> expanded;
  for (const Tensor& x : tensors) {
    KILN_CHECK(x.shape() == tensors[0].shape(), ShapeError, "stack: all tensors must have one shape, got ",
               shape_str(tensors[0].shape()), " and ", shape_str(x.shape()));
    expanded.push_back(x.unsqueeze(dim));
  }
  return cat(expanded, dim);
}

}  // namespace kiln
