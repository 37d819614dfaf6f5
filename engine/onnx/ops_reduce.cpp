// ONNX reductions, arg-reductions, softmax family, matrix products and the losses
// (SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss), composed of engine ops.
#include <cmath>
#include <limits>

#include "engine/onnx/op_context.h"

namespace kiln::onnx {

namespace {

Tensor as(const Tensor& t, DType d) { return t.dtype() == d ? t : t.to(d); }

enum class Reduce { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

// Reduce*-1..17 take axes as an attribute; ReduceSum-13+ and all Reduce*-18+ as input 1.
template <Reduce R>
std::vector<Tensor> reduce_op(OpContext& c) {
  const Tensor& x = c.input(0);
  int64_t since = R == Reduce::Sum ? 13 : 18;
  std::vector<int64_t> axes;
  if (c.opset() >= since) {
    if (c.has_input(1)) axes = c.ints_input(1);
  } else {
    axes = c.attr_ints("axes");
  }
  bool keep = c.attr_int("keepdims", 1) != 0;
  if (axes.empty() && c.attr_int("noop_with_empty_axes", 0) != 0) return {x};
  for (auto& a : axes) a = wrap_axis(c, a, x.dim());
  if (axes.empty())
    for (int64_t i = 0; i < x.dim(); ++i) axes.push_back(i);
  DType dt = x.dtype();
  Tensor xf = is_floating(dt) ? x : x.to(DType::f64);
  // Empty reductions: sum-like give 0, max -inf, min +inf (the engine refuses empty max/min).
  bool empty = false;
  for (int64_t a : axes) empty |= x.size(a) == 0;
  Tensor y;
  switch (R) {
    case Reduce::Sum: y = sum(xf, axes, keep); break;
    case Reduce::Mean: y = mean(xf, axes, keep); break;
    case Reduce::Max:
    case Reduce::Min: {
      if (empty) {
        Shape s = x.shape();
        for (int64_t a : axes) s[size_t(a)] = keep ? 1 : -1;
        Shape out;
        for (int64_t d : s)
          if (d >= 0) out.push_back(d);
        double inf = std::numeric_limits<double>::infinity();
        return {Tensor::full(out, R == Reduce::Max ? -inf : inf, dt, x.device())};
      }
      y = R == Reduce::Max ? amax(xf, axes, keep) : amin(xf, axes, keep);
      break;
    }
    case Reduce::Prod: y = prod(xf, axes, keep); break;
    case Reduce::L1: y = sum(abs(xf), axes, keep); break;
    case Reduce::L2: y = sqrt(sum(mul(xf, xf), axes, keep)); break;
    case Reduce::LogSum: y = log(sum(xf, axes, keep)); break;
    case Reduce::LogSumExp:
      y = empty ? log(sum(xf, axes, keep)) : logsumexp(xf, axes, keep);
      break;
    case Reduce::SumSquare: y = sum(mul(xf, xf), axes, keep); break;
  }
  return {as(y, dt)};
}

template <bool Max>
std::vector<Tensor> arg_op(OpContext& c) {
  const Tensor& x = c.input(0);
  int64_t axis = wrap_axis(c, c.attr_int("axis", 0), x.dim());
  bool keep = c.attr_int("keepdims", 1) != 0;
  bool last = c.attr_int("select_last_index", 0) != 0;
  Tensor xs = last ? flip(x, axis) : x;
  if (!is_floating(xs.dtype())) xs = xs.to(DType::f64);
  Tensor i = Max ? argmax(xs, axis, keep) : argmin(xs, axis, keep);
  if (last) i = sub(Tensor::scalar(static_cast<double>(x.size(axis) - 1), DType::i64, x.device()), i);
  return {i};
}

// Softmax-1..12 coerce the input to 2-d at `axis` (default 1); Softmax-13+ work along `axis` (default -1).
template <int Kind>  // 0 softmax, 1 log_softmax, 2 hardmax
std::vector<Tensor> softmax_op(OpContext& c) {
  const Tensor& x = c.input(0);
  bool legacy = c.opset() < 13;
  int64_t axis = wrap_axis(c, c.attr_int("axis", legacy ? 1 : -1), x.dim());
  Tensor v = x;
  int64_t dim = axis;
  if (legacy) {
    int64_t outer = 1;
    for (int64_t i = 0; i < axis; ++i) outer *= x.size(i);
    v = x.reshape({outer, outer ? x.numel() / std::max<int64_t>(outer, 1) : 0});
    dim = 1;
  }
  Tensor y;
  if (Kind == 0) y = softmax(v, dim);
  else if (Kind == 1) y = log_softmax(v, dim);
  else {
    Tensor idx = argmax(v, dim, true);
    Shape shape(static_cast<size_t>(v.dim()), 1);
    shape[size_t(dim)] = v.size(dim);
    Tensor pos = Tensor::arange(v.size(dim), v.device()).reshape(shape);
    y = eq(pos, idx).to(x.dtype());
  }
  return {y.reshape(x.shape())};
}

std::vector<Tensor> matmul_op(OpContext& c) {
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  if (is_floating(a.dtype()) && a.dim() > 2 && b.dim() == 2 && a.size(-1) == b.size(0) && a.is_contiguous() &&
      a.numel() > 0) {
    // [..., M, K] @ [K, N] as one [prod(...) * M, K] @ [K, N] product (torch.matmul folds the
    // same way), not a batch of small ones: ConvNeXt's and the transformers' linear layers
    Shape out = a.shape();
    out.back() = b.size(1);
    return {as(matmul(a.reshape({-1, a.size(-1)}), b), a.dtype()).reshape(out)};
  }
  if (is_floating(a.dtype())) return {as(matmul(a, b), a.dtype())};
  return {matmul(a.to(DType::f64), b.to(DType::f64)).to(a.dtype())};
}

// Gemm: Y = alpha * A' B' + beta * C (A' = A^T when transA ...), C broadcast to [M, N].
std::vector<Tensor> gemm_op(OpContext& c) {
  Tensor a = c.input(0), b = c.input(1);
  DType dt = a.dtype();
  if (!is_floating(dt)) {
    a = a.to(DType::f64);
    b = b.to(DType::f64);
  }
  if (c.attr_int("transA", 0)) a = a.t();
  if (c.attr_int("transB", 0)) b = b.t();
  double alpha = c.attr_float("alpha", 1.0), beta = c.attr_float("beta", 1.0);
  Tensor y = matmul(a, b);
  if (alpha != 1.0) y = mul(y, Tensor::scalar(alpha, y.dtype(), y.device()));
  if (c.has_input(2) && beta != 0.0) {
    Tensor cc = as(c.input(2), y.dtype());
    y = add(y, beta == 1.0 ? cc : mul(cc, Tensor::scalar(beta, y.dtype(), y.device())));
  }
  return {as(y, dt)};
}

// Negative log-likelihood of log-probabilities lp [N, C, d...] at targets t [N, d...]
// (ONNX NegativeLogLikelihoodLoss-13): weights per class, ignore_index, reduction.
Tensor nll(OpContext& c, const Tensor& lp, const Tensor& target, const Tensor& weight) {
  std::string reduction = c.attr_string("reduction", "mean");
  Tensor t = target.to(DType::i64);
  Tensor valid = Tensor::ones(t.shape(), DType::bool_, t.device());
  if (c.has_attr("ignore_index")) {
    Tensor ig = Tensor::scalar(static_cast<double>(c.attr_int("ignore_index")), DType::i64, t.device());
    valid = ne(t, ig);
    t = where(valid, t, Tensor::scalar(0, DType::i64, t.device()));
  }
  // the engine's gather and index_select expect valid indices: check them here
  if (lp.dim() < 2) c.fail("input must be [N, C, d...], got " + shape_str(lp.shape()));
  Shape want(lp.shape());
  want.erase(want.begin() + 1);
  if (t.shape() != want) c.fail("target " + shape_str(t.shape()) + " does not fit input " + shape_str(lp.shape()));
  int64_t classes = lp.size(1);
  if (weight.defined() && (weight.dim() != 1 || weight.numel() != classes))
    c.fail("weight must be [C] = [" + std::to_string(classes) + "], got " + shape_str(weight.shape()));
  for (int64_t v : t.to_vector<int64_t>())
    if (v < 0 || v >= classes) c.fail("target class " + std::to_string(v) + " is outside [0, " + std::to_string(classes) + ")");
  Tensor picked = gather(lp, 1, t.unsqueeze(1)).squeeze(1);
  Tensor w = weight.defined() ? index_select(as(weight, lp.dtype()), 0, t.reshape({-1})).reshape(t.shape())
                              : Tensor::ones(t.shape(), lp.dtype(), lp.device());
  w = where(valid, w, Tensor::scalar(0, lp.dtype(), lp.device()));
  Tensor loss = neg(mul(picked, w));
  if (reduction == "none") return loss;
  if (reduction == "sum") return sum(loss);
  if (reduction == "mean") return div(sum(loss), sum(w));
  c.fail("unknown reduction '" + reduction + "' (none, sum, mean)");
}

std::vector<Tensor> nll_op(OpContext& c) {
  return {nll(c, c.input(0), c.input(1), c.optional_input(2))};
}

std::vector<Tensor> softmax_ce_op(OpContext& c) {
  const Tensor& scores = c.input(0);
  if (scores.dim() < 2) c.fail("scores must be [N, C, ...], got " + shape_str(scores.shape()));
  Tensor lp = log_softmax(scores, 1);
  return {nll(c, lp, c.input(1), c.optional_input(2)), lp};
}

}  // namespace

void register_reduce_ops(OpTable& t) {
  t["ReduceSum"] = reduce_op<Reduce::Sum>;
  t["ReduceMean"] = reduce_op<Reduce::Mean>;
  t["ReduceMax"] = reduce_op<Reduce::Max>;
  t["ReduceMin"] = reduce_op<Reduce::Min>;
  t["ReduceProd"] = reduce_op<Reduce::Prod>;
  t["ReduceL1"] = reduce_op<Reduce::L1>;
  t["ReduceL2"] = reduce_op<Reduce::L2>;
  t["ReduceLogSum"] = reduce_op<Reduce::LogSum>;
  t["ReduceLogSumExp"] = reduce_op<Reduce::LogSumExp>;
  t["ReduceSumSquare"] = reduce_op<Reduce::SumSquare>;
  t["ArgMax"] = arg_op<true>;
  t["ArgMin"] = arg_op<false>;
  t["Softmax"] = softmax_op<0>;
  t["LogSoftmax"] = softmax_op<1>;
  t["Hardmax"] = softmax_op<2>;
  t["MatMul"] = matmul_op;
  t["Gemm"] = gemm_op;
  t["NegativeLogLikelihoodLoss"] = nll_op;
  t["SoftmaxCrossEntropyLoss"] = softmax_ce_op;
}

}  // namespace kiln::onnx
