// Reductions over any set of axes, with keepdim.
#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/core/error.h"
#include "engine/core/ops_internal.h"

namespace kiln {

namespace {

// Runs the backend reduction; the result keeps reduced dims (size 1) when keepdim.
Tensor reduce(ReduceOp op, const Tensor& x, const std::vector<int64_t>& dims_in, bool keepdim, DType out_dtype,
              double p0 = 0) {
  const char* name = reduce_op_name(op);
  KILN_CHECK(x.defined(), ValueError, name, ": undefined tensor argument");
  std::vector<int64_t> dims = detail::normalize_dims(dims_in, x.dim(), name);
  Shape kept = x.shape();
  for (int64_t d : dims)
    if (x.dim() > 0) kept[d] = 1;
  bool is_arg = op == ReduceOp::argmax || op == ReduceOp::argmin;
  if (op == ReduceOp::max || op == ReduceOp::min || is_arg)
    for (int64_t d : dims)
      KILN_CHECK(x.dim() == 0 || x.shape()[d] > 0, IndexError, name, ": cannot reduce over dimension ", d,
                 " of size 0 in a tensor of shape ", shape_str(x.shape()));
  Tensor xin = is_arg ? x : x.to(out_dtype);
  Tensor out = detail::empty(kept, out_dtype, x.device());
  if (out.numel()) {
    detail::require_supported(x, op, xin.dtype(), name);
    x.backend()->reduce(op, out.arg(), xin.arg(), p0);
  }
  if (!keepdim) {
    Shape squeezed;
    for (int64_t i = 0; i < x.dim(); ++i)
      if (std::find(dims.begin(), dims.end(), i) == dims.end()) squeezed.push_back(x.shape()[i]);
    out = out.view(squeezed);  // no grad recorded yet: out is fresh
  }
  return out;
}

OpKind kind_of(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return OpKind::sum;
    case ReduceOp::mean: return OpKind::mean;
    case ReduceOp::prod: return OpKind::prod;
    case ReduceOp::max: return OpKind::amax;
    case ReduceOp::min: return OpKind::amin;
    case ReduceOp::var: return OpKind::var;
    default: return OpKind::count;
  }
}

Tensor differentiable_reduce(ReduceOp op, const Tensor& x, const std::vector<int64_t>& dims, bool keepdim,
                             DType out_dtype, double p0 = 0) {
  Tensor out = reduce(op, x, dims, keepdim, out_dtype, p0);
  if (is_floating(out_dtype) && detail::needs_grad({&x})) {
    op_attrs::Reduce attrs{detail::normalize_dims(dims, x.dim(), reduce_op_name(op)), keepdim, p0};
    std::vector<Tensor> saved;
    if (op == ReduceOp::max || op == ReduceOp::min || op == ReduceOp::prod) saved.push_back(out);
    detail::record(out, kind_of(op), {x.to(out_dtype)}, std::move(attrs), saved);
  }
  return out;
}

DType sum_dtype(DType t) { return is_floating(t) ? t : DType::i64; }

}  // namespace

Tensor sum(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return differentiable_reduce(ReduceOp::sum, x, dims, keepdim, sum_dtype(x.dtype()));
}

Tensor mean(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  KILN_CHECK(is_floating(x.dtype()), DTypeError, "mean: input must be floating point, got ", dtype_name(x.dtype()),
             " (convert with .to(DType::f32))");
  return differentiable_reduce(ReduceOp::mean, x, dims, keepdim, x.dtype());
}

Tensor prod(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return differentiable_reduce(ReduceOp::prod, x, dims, keepdim, sum_dtype(x.dtype()));
}

Tensor amax(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return differentiable_reduce(ReduceOp::max, x, dims, keepdim, x.dtype());
}

Tensor amin(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return differentiable_reduce(ReduceOp::min, x, dims, keepdim, x.dtype());
}

Tensor var(const Tensor& x, const std::vector<int64_t>& dims, int64_t correction, bool keepdim) {
  KILN_CHECK(is_floating(x.dtype()), DTypeError, "var: input must be floating point, got ", dtype_name(x.dtype()));
  return differentiable_reduce(ReduceOp::var, x, dims, keepdim, x.dtype(), static_cast<double>(correction));
}

Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) {
  return reduce(ReduceOp::argmax, x, {dim}, keepdim, DType::i64);
}

Tensor argmin(const Tensor& x, int64_t dim, bool keepdim) {
  return reduce(ReduceOp::argmin, x, {dim}, keepdim, DType::i64);
}

Tensor logsumexp(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  Tensor xf = is_floating(x.dtype()) ? x : x.to(DType::f32);
  Tensor m = amax(xf.detach(), dims, true);
  // An all -inf slice has max -inf; subtracting it would give NaN, so use 0 there (as PyTorch).
  m = where(eq(abs(m), Tensor::scalar(INFINITY, m.dtype(), m.device())), Tensor::scalar(0, m.dtype(), m.device()), m);
  Tensor out = add(log(sum(exp(sub(xf, m)), dims, true)), m);
  if (!keepdim) {
    std::vector<int64_t> nd = detail::normalize_dims(dims, x.dim(), "logsumexp");
    Shape squeezed;
    for (int64_t i = 0; i < x.dim(); ++i)
      if (std::find(nd.begin(), nd.end(), i) == nd.end()) squeezed.push_back(x.shape()[i]);
    out = out.reshape(squeezed);
  }
  return out;
}

}  // namespace kiln
