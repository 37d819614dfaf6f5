// Functional dropout, batch norm and layer norm (torch.nn.functional).
#include <cmath>

#include "engine/core/error.h"
#include "engine/core/grad_mode.h"
#include "engine/core/ops.h"
#include "engine/core/random.h"
#include "engine/nn/functional.h"

namespace kiln::nn::functional {

Tensor dropout(const Tensor& x, double p, bool training) {
  KILN_CHECK(p >= 0 && p <= 1, ValueError, "dropout: probability has to be between 0 and 1, but got ", p);
  if (!training || p == 0) return x;
  if (p == 1) return mul(x, scalar_like(0.0, x));
  return mul(x, bernoulli_scaled(x.shape(), 1.0 - p, 1.0 / (1.0 - p), x.dtype(), x.device()));
}

namespace {
// A [C] tensor viewed as [1, C, 1, ...] to broadcast against x [N, C, *].
Tensor channel_view(const Tensor& t, int64_t ndim) {
  Shape s(static_cast<size_t>(ndim), 1);
  s[1] = t.numel();
  return t.reshape(s);
}
}  // namespace

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum, double eps) {
  KILN_CHECK(x.dim() >= 2, ShapeError, "batch_norm: expected input [N, C, *], got ", shape_str(x.shape()));
  KILN_CHECK(is_floating(x.dtype()), DTypeError, "batch_norm: input must be floating point, got ",
             dtype_name(x.dtype()));
  int64_t c = x.size(1);
  for (const Tensor* t : {&running_mean, &running_var, &weight, &bias})
    KILN_CHECK(!t->defined() || t->numel() == c, ShapeError, "batch_norm: input of shape ", shape_str(x.shape()),
               " has ", c, " channels but a statistic or affine tensor has shape ", shape_str(t->shape()));
  bool use_batch_stats = training || !running_mean.defined() || !running_var.defined();
  if (use_batch_stats && x.numel() / std::max<int64_t>(c, 1) > 1) {
    // A backend's fused kernels where it has them (ops.h batch_norm_training); with running
    // stats only while training, as below.
    const bool upd = training && running_mean.defined() && running_var.defined();
    if (batch_norm_fused_available(x, weight, bias, upd ? running_mean : Tensor(), upd ? running_var : Tensor()))
      return batch_norm_training(x, weight, bias, upd ? running_mean : Tensor(), upd ? running_var : Tensor(),
                                 momentum, eps);
  }
  std::vector<int64_t> dims{0};
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  Tensor mean_, var_;
  if (use_batch_stats) {
    int64_t count = x.numel() / std::max<int64_t>(c, 1);
    KILN_CHECK(!training || count > 1, ValueError, "batch_norm: expected more than 1 value per channel when training, got input ",
               "of shape ", shape_str(x.shape()));
    mean_ = mean(x, dims, true);
    var_ = var(x, dims, 0, true);
    if (training && running_mean.defined() && running_var.defined()) {
      NoGradGuard no_grad;
      double n = static_cast<double>(count);
      Tensor bm = mean_.detach().reshape({c}).to(running_mean.dtype());
      Tensor bv = mul(var_.detach().reshape({c}), scalar_like(n / (n - 1), var_)).to(running_var.dtype());
      Tensor rm = running_mean, rv = running_var;
      rm.copy_(add(mul(rm, scalar_like(1 - momentum, rm)), mul(bm, scalar_like(momentum, bm))));
      rv.copy_(add(mul(rv, scalar_like(1 - momentum, rv)), mul(bv, scalar_like(momentum, bv))));
    }
  } else {
    mean_ = channel_view(running_mean.to(x.dtype()), x.dim());
    var_ = channel_view(running_var.to(x.dtype()), x.dim());
  }
  Tensor y = mul(sub(x, mean_), rsqrt(add(var_, scalar_like(eps, var_))));
  if (weight.defined()) y = mul(y, channel_view(weight, x.dim()));
  if (bias.defined()) y = add(y, channel_view(bias, x.dim()));
  return y;
}

Tensor layer_norm(const Tensor& x, const std::vector<int64_t>& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  int64_t k = static_cast<int64_t>(normalized_shape.size());
  bool fits = k >= 1 && x.dim() >= k;
  for (int64_t i = 0; fits && i < k; ++i) fits = x.size(x.dim() - k + i) == normalized_shape[static_cast<size_t>(i)];
  KILN_CHECK(fits, ShapeError, "layer_norm: input of shape ", shape_str(x.shape()),
             " does not end with normalized_shape ", shape_str(normalized_shape));
  KILN_CHECK(is_floating(x.dtype()), DTypeError, "layer_norm: input must be floating point, got ",
             dtype_name(x.dtype()));
  for (const Tensor* t : {&weight, &bias})
    KILN_CHECK(!t->defined() || t->shape() == normalized_shape, ShapeError, "layer_norm: weight or bias of shape ",
               shape_str(t->shape()), " does not match normalized_shape ", shape_str(normalized_shape));
  std::vector<int64_t> dims;
  for (int64_t d = x.dim() - k; d < x.dim(); ++d) dims.push_back(d);
  Tensor mu = mean(x, dims, true);
  Tensor v = var(x, dims, 0, true);
  Tensor y = mul(sub(x, mu), rsqrt(add(v, scalar_like(eps, v))));
  if (weight.defined()) y = mul(y, weight);
  if (bias.defined()) y = add(y, bias);
  return y;
}

}  // namespace kiln::nn::functional
