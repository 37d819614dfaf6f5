// Losses (torch.nn.functional): cross_entropy, nll_loss, mse_loss, l1_loss,
// binary_cross_entropy_with_logits. Formulas follow ATen's LossNLL.cpp and Loss.cpp.
#include <string>

#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/nn/functional.h"

namespace kiln::nn::functional {

namespace {

Tensor reduce(const Tensor& loss, Reduction r) {
  switch (r) {
    case Reduction::none: return loss;
    case Reduction::sum: return sum(loss);
    case Reduction::mean: return mean(loss);
  }
  return loss;
}

// weight [C] viewed as [1, C, 1, ...] for an input of `ndim` dims.
Tensor class_view(const Tensor& weight, int64_t ndim) {
  Shape s(static_cast<size_t>(ndim), 1);
  s[1] = weight.numel();
  return weight.reshape(s);
}

void check_weight(const Tensor& weight, int64_t classes, const char* op) {
  if (!weight.defined()) return;
  KILN_CHECK(weight.dim() == 1 && weight.size(0) == classes, ShapeError, op, ": weight of shape ",
             shape_str(weight.shape()), " does not match ", classes, " classes (expected [", classes, "])");
}

// Class-index target of x [N, C, *]: i64, shape [N, *], each in [0, C) or ignore_index.
void check_class_target(const Tensor& x, const Tensor& target, int64_t ignore_index, const char* op) {
  KILN_CHECK(target.dtype() == DType::i64, DTypeError, op, ": class-index target must be i64, got ",
             dtype_name(target.dtype()));
  Shape want = x.shape();
  want.erase(want.begin() + 1);
  KILN_CHECK(target.shape() == want, ShapeError, op, ": input of shape ", shape_str(x.shape()),
             " expects a target of shape ", shape_str(want), ", got ", shape_str(target.shape()));
  int64_t classes = x.size(1);
  // CUDA and HIP check every index inside gather (IndexError at the next wait for the
  // device, backends/cuda/README.md); reading the targets back here would stall each
  // training step and keep it from being recorded as a CUDA graph.
  const DeviceType where_ = target.device().type;
  if (where_ == DeviceType::cuda || where_ == DeviceType::hip) return;
  for (int64_t t : target.to_vector<int64_t>())
    KILN_CHECK(t == ignore_index || (t >= 0 && t < classes), IndexError, op, ": target ", t,
               " is out of bounds for ", classes, " classes");
}

// Adds the batch dim of an unbatched input [C] with a 0-d target.
void unsqueeze_unbatched(Tensor& x, Tensor& target, const char* op) {
  KILN_CHECK(x.dim() >= 1, ShapeError, op, ": input must have a class dimension, got shape ", shape_str(x.shape()));
  if (x.dim() == 1) {
    x = x.unsqueeze(0);
    target = target.reshape({target.dim() == 0 ? 1 : target.numel()});
  }
}

// nll_loss on validated inputs x [N, C, *], target [N, *] (ATen's nll_loss_nd).
Tensor nll_impl(const Tensor& logp, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                Reduction reduction, Tensor* weight_sum) {
  Tensor keep = ne(target, scalar_like(static_cast<double>(ignore_index), target));
  Tensor safe = where(keep, target, scalar_like(0.0, target));
  Tensor picked = gather(logp, 1, safe.unsqueeze(1)).squeeze(1);
  Tensor zero = scalar_like(0.0, logp);
  Tensor w = weight.defined()
                 ? where(keep, index_select(weight.to(logp.dtype()), 0, safe.reshape({-1})).reshape(target.shape()), zero)
                 : keep.to(logp.dtype());
  Tensor loss = where(keep, neg(mul(picked, w)), zero);
  if (reduction == Reduction::none) return loss;
  Tensor total = sum(loss);
  if (reduction == Reduction::sum) return total;
  Tensor wsum = sum(w);
  if (weight_sum) *weight_sum = wsum;
  return div(total, wsum);
}

}  // namespace

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                Reduction reduction) {
  Tensor x = log_probs, t = target;
  unsqueeze_unbatched(x, t, "nll_loss");
  check_class_target(x, t, ignore_index, "nll_loss");
  check_weight(weight, x.size(1), "nll_loss");
  Tensor out = nll_impl(x, t, weight, ignore_index, reduction, nullptr);
  return log_probs.dim() == 1 && reduction == Reduction::none ? out.reshape({}) : out;
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                     Reduction reduction, double label_smoothing) {
  const char* op = "cross_entropy";
  KILN_CHECK(label_smoothing >= 0 && label_smoothing <= 1, ValueError, op,
             ": label_smoothing must be between 0.0 and 1.0, got ", label_smoothing);
  KILN_CHECK(is_floating(logits.dtype()), DTypeError, op, ": logits must be floating point, got ",
             dtype_name(logits.dtype()));
  Tensor x = logits, t = target;
  int64_t class_dim = logits.dim() == 1 ? 0 : 1;
  int64_t classes = logits.dim() >= 1 ? logits.size(class_dim) : 0;
  check_weight(weight, classes, op);
  double ls = label_smoothing, n = static_cast<double>(classes);

  if (is_floating(target.dtype())) {
    // Class probabilities (ATen's cross_entropy_loss_prob_target).
    KILN_CHECK(target.shape() == logits.shape(), ShapeError, op, ": probability target of shape ",
               shape_str(target.shape()), " must match logits of shape ", shape_str(logits.shape()));
    Tensor logp = log_softmax(logits, class_dim);
    Tensor p = ls > 0 ? add(mul(t.to(logp.dtype()), scalar_like(1 - ls, logp)), scalar_like(ls / n, logp))
                      : t.to(logp.dtype());
    Tensor prod_ = mul(logp, p);
    if (weight.defined()) {
      Shape s(static_cast<size_t>(logits.dim()), 1);
      s[static_cast<size_t>(class_dim)] = classes;
      prod_ = mul(prod_, weight.to(logp.dtype()).reshape(s));
    }
    switch (reduction) {
      case Reduction::none: return neg(sum(prod_, {class_dim}));
      case Reduction::sum: return neg(sum(prod_));
      case Reduction::mean:
        return div(neg(sum(prod_)), scalar_like(static_cast<double>(logits.numel()) / n, logp));
    }
  }

  unsqueeze_unbatched(x, t, op);
  check_class_target(x, t, ignore_index, op);
  Tensor logp = log_softmax(x, 1);
  Tensor wsum;
  Tensor nll = nll_impl(logp, t, weight, ignore_index, reduction, &wsum);
  Tensor out = nll;
  if (ls > 0) {
    // ATen's cross_entropy_loss_label_smoothing.
    Tensor keep = ne(t, scalar_like(static_cast<double>(ignore_index), t));
    Tensor weighted = weight.defined() ? mul(logp, class_view(weight.to(logp.dtype()), logp.dim())) : logp;
    Tensor smooth = where(keep, neg(sum(weighted, {1})), scalar_like(0.0, logp));
    Tensor ret;
    switch (reduction) {
      case Reduction::none: ret = smooth; break;
      case Reduction::sum: ret = sum(smooth); break;
      case Reduction::mean: ret = div(sum(smooth), wsum); break;
    }
    out = add(mul(nll, scalar_like(1 - ls, nll)), mul(ret, scalar_like(ls / n, ret)));
  }
  return logits.dim() == 1 && reduction == Reduction::none ? out.reshape({}) : out;
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  Tensor d = sub(input, target);
  return reduce(mul(d, d), reduction);
}

Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  return reduce(abs(sub(input, target)), reduction);
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight,
                                        Reduction reduction, const Tensor& pos_weight) {
  KILN_CHECK(target.shape() == input.shape(), ShapeError, "binary_cross_entropy_with_logits: target of shape ",
             shape_str(target.shape()), " must match input of shape ", shape_str(input.shape()));
  KILN_CHECK(is_floating(input.dtype()), DTypeError, "binary_cross_entropy_with_logits: input must be floating ",
             "point, got ", dtype_name(input.dtype()));
  Tensor x = input, y = target.to(input.dtype());
  Tensor one = scalar_like(1.0, x);
  // log(1 + exp(-x)) without overflow.
  Tensor softplus_neg = add(log1p(exp(neg(abs(x)))), relu(neg(x)));
  Tensor coeff = pos_weight.defined() ? add(mul(sub(pos_weight.to(x.dtype()), one), y), one) : Tensor();
  Tensor loss = add(mul(sub(one, y), x), coeff.defined() ? mul(coeff, softplus_neg) : softplus_neg);
  if (weight.defined()) loss = mul(loss, weight.to(x.dtype()));
  return reduce(loss, reduction);
}

}  // namespace kiln::nn::functional
