// The backward rules: one per differentiable op (OpKind), written with other ops
// so every backend gets gradients for free. Formulas follow PyTorch's
// tools/autograd/derivatives.yaml. Rules run under no_grad.
#include <cmath>
#include <variant>

#include "engine/autograd/backward.h"
#include "engine/core/error.h"
#include "engine/core/ops.h"

namespace kiln::autograd {

namespace {

Tensor input(const Node& n, size_t i) { return Tensor(n.inputs[i]); }
Tensor saved(const Node& n, size_t i) { return Tensor(n.saved[i]); }
bool wants(const Node& n, size_t i) { return i < n.inputs.size() && n.inputs[i] && n.inputs[i]->requires_grad; }
Tensor scalar(double v, const Tensor& like) { return Tensor::scalar(v, like.dtype(), like.device()); }

// The node's attributes of type A (op_attrs in engine/core/node.h).
template <class A>
const A& attrs(const Node& n) { return std::get<A>(n.attrs); }
int64_t dim_attr(const Node& n) { return attrs<op_attrs::Dim>(n).dim; }

// The dimensions a reduction reduced (ops_reduce.cpp).
const std::vector<int64_t>& reduced_dims(const Node& n) { return attrs<op_attrs::Reduce>(n).dims; }

// A reduction's output gradient broadcast back to the input's shape.
Tensor unreduce(const Node& n, const Tensor& g, const Shape& in_shape) {
  Shape kept = in_shape;
  for (int64_t d : reduced_dims(n)) kept[d] = 1;
  return g.reshape(kept).expand(in_shape);
}
Tensor keepdim_view(const Node& n, const Tensor& t, const Shape& in_shape) {
  Shape kept = in_shape;
  for (int64_t d : reduced_dims(n)) kept[d] = 1;
  return t.reshape(kept);
}
int64_t reduced_count(const Node& n, const Shape& in_shape) {
  int64_t c = 1;
  for (int64_t d : reduced_dims(n)) c *= in_shape.empty() ? 1 : in_shape[d];
  return c;
}

Tensor zeros_like(const Tensor& t) { return Tensor::zeros(t.shape(), t.dtype(), t.device()); }

// PyTorch's maximum/minimum backward: the larger (smaller) input takes the
// gradient; ties split it in half.
std::vector<Tensor> extremum_backward(const Node& n, const Tensor& g, bool is_max) {
  Tensor a = input(n, 0), b = input(n, 1);
  Tensor a_wins = (is_max ? gt(a, b) : lt(a, b)).to(g.dtype());
  Tensor tie = eq(a, b).to(g.dtype());
  Tensor wa = add(a_wins, mul(tie, scalar(0.5, g)));
  Tensor wb = sub(scalar(1.0, g), wa);
  return {sum_to(mul(g, wa), a.shape()), sum_to(mul(g, wb), b.shape())};
}

}  // namespace

std::vector<Tensor> apply_backward_rule(const Node& n, const Tensor& g) {
  switch (n.kind) {
    // ---- views and copies
    case OpKind::reshape: return {g.reshape(input(n, 0).shape())};
    case OpKind::permute: {
      const std::vector<int64_t>& dims = attrs<op_attrs::Permute>(n).dims;
      std::vector<int64_t> inverse(dims.size());
      for (size_t i = 0; i < dims.size(); ++i) inverse[dims[i]] = static_cast<int64_t>(i);
      return {g.permute(inverse)};
    }
    case OpKind::expand: return {sum_to(g, input(n, 0).shape())};
    case OpKind::slice: {
      Tensor x = input(n, 0);
      Tensor gx = Tensor::zeros(x.shape(), g.dtype(), g.device());
      const auto& a = attrs<op_attrs::Slice>(n);
      gx.slice(a.dim, a.start, a.end, a.step).copy_(g);
      return {gx};
    }
    case OpKind::cast: return {g.to(input(n, 0).dtype())};
    case OpKind::contiguous: return {g};
    case OpKind::cat: {
      std::vector<Tensor> out;
      int64_t offset = 0;
      const auto& a = attrs<op_attrs::Cat>(n);
      for (int64_t size : a.sizes) {
        out.push_back(g.slice(a.dim, offset, offset + size));
        offset += size;
      }
      return out;
    }
    // ---- elementwise
    case OpKind::add: return {sum_to(g, input(n, 0).shape()), sum_to(g, input(n, 1).shape())};
    case OpKind::sub: return {sum_to(g, input(n, 0).shape()), sum_to(neg(g), input(n, 1).shape())};
    case OpKind::mul: {
      Tensor a = input(n, 0), b = input(n, 1);
      return {wants(n, 0) ? sum_to(mul(g, b), a.shape()) : Tensor(),
              wants(n, 1) ? sum_to(mul(g, a), b.shape()) : Tensor()};
    }
    case OpKind::div: {
      Tensor a = input(n, 0), b = input(n, 1);
      Tensor ga = div(g, b);
      return {wants(n, 0) ? sum_to(ga, a.shape()) : Tensor(),
              wants(n, 1) ? sum_to(neg(div(mul(ga, a), b)), b.shape()) : Tensor()};
    }
    case OpKind::neg: return {neg(g)};
    case OpKind::pow: {
      Tensor a = input(n, 0), b = input(n, 1);
      Tensor ga, gb;
      if (wants(n, 0)) {
        // b * a^(b-1); 0 where b == 0 (PyTorch's pow_backward_self)
        Tensor d = mul(b, pow(a, sub(b, scalar(1, b))));
        ga = sum_to(mul(g, where(eq(b, scalar(0, b)), scalar(0, d), d)), a.shape());
      }
      if (wants(n, 1)) {
        // a^b * log(a); 0 where a == 0 and b >= 0 (pow_backward_exponent)
        Tensor d = mul(pow(a, b), log(a));
        Tensor zero_mask = logical_and(eq(a, scalar(0, a)), ge(b, scalar(0, b)));
        gb = sum_to(mul(g, where(zero_mask, scalar(0, d), d)), b.shape());
      }
      return {ga, gb};
    }
    case OpKind::pow_scalar: {
      double e = attrs<op_attrs::Scalars>(n).p0;
      if (e == 0) return {zeros_like(g)};
      return {mul(g, mul(pow(input(n, 0), e - 1), scalar(e, g)))};
    }
    case OpKind::exp: return {mul(g, saved(n, 0))};
    case OpKind::log: return {div(g, input(n, 0))};
    case OpKind::log1p: return {div(g, add(input(n, 0), scalar(1, g)))};
    case OpKind::expm1: return {mul(g, add(saved(n, 0), scalar(1, g)))};
    case OpKind::sqrt: return {div(g, mul(saved(n, 0), scalar(2, g)))};
    case OpKind::rsqrt: return {mul(g, mul(pow(saved(n, 0), 3), scalar(-0.5, g)))};
    case OpKind::reciprocal: return {neg(mul(g, square(saved(n, 0))))};
    case OpKind::sin: return {mul(g, cos(input(n, 0)))};
    case OpKind::cos: return {neg(mul(g, sin(input(n, 0))))};
    case OpKind::tanh: return {mul(g, sub(scalar(1, g), square(saved(n, 0))))};
    case OpKind::sigmoid: {
      Tensor y = saved(n, 0);
      return {mul(g, mul(y, sub(scalar(1, g), y)))};
    }
    case OpKind::relu: {  // saved: the output y. g where y > 0, else 0, in one pass where the backend
      // has relu_backward (PyTorch's threshold_backward); else g * (y > 0), three ops (which gives
      // NaN, not 0, for an infinite g where y <= 0).
      Tensor y = saved(n, 0);
      if (g.dtype() == y.dtype() && g.shape() == y.shape() && y.backend()->supports(OpId::relu_backward, y.dtype())) {
        Tensor gx = Tensor::empty(y.shape(), y.dtype(), y.device());
        if (y.numel()) y.backend()->relu_backward(gx.arg(), g.arg(), y.arg());
        return {gx};
      }
      return {mul(g, gt(y, scalar(0, g)).to(g.dtype()))};
    }
    case OpKind::gelu: {
      // d/dx x*Phi(x) = Phi(x) + x*phi(x)
      Tensor x = input(n, 0);
      Tensor cdf = mul(add(erf(mul(x, scalar(M_SQRT1_2, x))), scalar(1, x)), scalar(0.5, x));
      Tensor pdf = mul(exp(mul(square(x), scalar(-0.5, x))), scalar(0.5 * M_2_SQRTPI * M_SQRT1_2, x));
      return {mul(g, add(cdf, mul(x, pdf)))};
    }
    case OpKind::hardswish: {
      // torch's hardswish_backward: 0 below -3, x / 3 + 1/2 up to 3 (inclusive), 1 above.
      Tensor x = input(n, 0);
      Tensor slope = add(div(x, scalar(3, x)), scalar(0.5, x));
      slope = where(lt(x, scalar(-3, x)), scalar(0, x), where(le(x, scalar(3, x)), slope, scalar(1, x)));
      return {mul(g, slope)};
    }
    case OpKind::hardsigmoid: {
      // torch's hardsigmoid_backward: 1/6 strictly between -3 and 3, 0 elsewhere.
      Tensor x = input(n, 0);
      Tensor inside = logical_and(gt(x, scalar(-3, x)), lt(x, scalar(3, x)));
      return {mul(g, mul(inside.to(g.dtype()), scalar(1.0 / 6.0, g)))};
    }
    case OpKind::silu: {
      Tensor x = input(n, 0), s = sigmoid(x);
      return {mul(g, mul(s, add(scalar(1, x), mul(x, sub(scalar(1, x), s)))))};
    }
    case OpKind::erf: {
      Tensor x = input(n, 0);
      return {mul(g, mul(exp(neg(square(x))), scalar(M_2_SQRTPI, x)))};
    }
    case OpKind::abs: return {mul(g, sign(input(n, 0)))};
    case OpKind::leaky_relu: {
      Tensor x = input(n, 0);
      return {mul(g, where(gt(x, scalar(0, x)), scalar(1, x), scalar(attrs<op_attrs::Scalars>(n).p0, x)))};
    }
    case OpKind::clamp: {
      Tensor x = input(n, 0);
      const auto& a = attrs<op_attrs::Scalars>(n);
      Tensor inside = logical_and(ge(x, scalar(a.p0, x)), le(x, scalar(a.p1, x)));
      return {mul(g, inside.to(g.dtype()))};
    }
    case OpKind::maximum: return extremum_backward(n, g, true);
    case OpKind::minimum: return extremum_backward(n, g, false);
    case OpKind::where: {
      Tensor cond = saved(n, 0), zero = scalar(0, g);
      return {sum_to(where(cond, g, zero), input(n, 0).shape()), sum_to(where(cond, zero, g), input(n, 1).shape())};
    }
    // ---- reductions
    case OpKind::sum: return {unreduce(n, g, input(n, 0).shape())};
    case OpKind::mean: {
      Shape s = input(n, 0).shape();
      return {div(unreduce(n, g, s), scalar(static_cast<double>(reduced_count(n, s)), g))};
    }
    case OpKind::prod: {
      // grad_i = prod of the others: out/x_i without zeros; with one zero only that
      // element gets the product of the non-zeros; with two or more, all zero.
      Tensor x = input(n, 0);
      Tensor out = keepdim_view(n, saved(n, 0), x.shape());
      Tensor gk = unreduce(n, g, x.shape());
      Tensor is_zero = eq(x, scalar(0, x));
      Tensor zeros = sum(is_zero.to(x.dtype()), reduced_dims(n), true);
      Tensor others = prod(where(is_zero, scalar(1, x), x), reduced_dims(n), true);
      Tensor no_zero = div(out, where(is_zero, scalar(1, x), x));
      Tensor one_zero = where(is_zero, others.expand(x.shape()), scalar(0, x));
      Tensor d = where(eq(zeros, scalar(0, x)), no_zero,
                       where(eq(zeros, scalar(1, x)), one_zero, scalar(0, x)));
      return {mul(gk, d)};
    }
    case OpKind::amax:
    case OpKind::amin: {
      // The gradient is shared evenly by the elements equal to the extremum (as PyTorch's amax).
      Tensor x = input(n, 0);
      Tensor mask = eq(x, keepdim_view(n, saved(n, 0), x.shape())).to(g.dtype());
      Tensor count = sum(mask, reduced_dims(n), true);
      return {div(mul(unreduce(n, g, x.shape()), mask), count)};
    }
    case OpKind::var: {
      Tensor x = input(n, 0);
      double dof = static_cast<double>(reduced_count(n, x.shape())) - attrs<op_attrs::Reduce>(n).correction;
      Tensor centered = sub(x, mean(x, reduced_dims(n), true));
      return {mul(unreduce(n, g, x.shape()), mul(centered, scalar(2.0 / dof, g)))};
    }
    // ---- linear algebra
    case OpKind::matmul: {
      Tensor a = input(n, 0), b = input(n, 1);
      return {wants(n, 0) ? sum_to(matmul(g, b.transpose(-1, -2)), a.shape()) : Tensor(),
              wants(n, 1) ? sum_to(matmul(a.transpose(-1, -2), g), b.shape()) : Tensor()};
    }
    // ---- neural-network ops: the backend's fused backward kernels
    case OpKind::conv2d: {
      Tensor x = input(n, 0), w = input(n, 1);
      const Conv2dParams& p = attrs<Conv2dParams>(n);
      Tensor gc = g.contiguous();
      Tensor gx, gw, gb;
      if (wants(n, 0)) {
        gx = Tensor::empty(x.shape(), x.dtype(), x.device());
        x.backend()->conv2d_backward_input(gx.arg(), gc.arg(), w.arg(), p);
      }
      bool has_bias = n.inputs.size() > 2;
      if (wants(n, 1) || (has_bias && wants(n, 2))) {
        gw = Tensor::empty(w.shape(), w.dtype(), w.device());
        TensorArg gb_arg;
        if (has_bias) {
          gb = Tensor::empty({w.size(0)}, w.dtype(), w.device());
          gb_arg = gb.arg();
        }
        x.backend()->conv2d_backward_weight(gw.arg(), gb_arg, gc.arg(), x.arg(), p);
      }
      return {gx, gw, gb};
    }
    case OpKind::conv_transpose2d: {  // y = conv2d's input gradient for x (core/ops_nn.cpp): its adjoints
      Tensor x = input(n, 0), w = input(n, 1);
      const Conv2dParams& p = attrs<Conv2dParams>(n);
      Tensor gc = g.contiguous();
      Tensor gx, gw;
      if (wants(n, 0)) {  // the conv2d of y's gradient
        gx = Tensor::empty(x.shape(), x.dtype(), x.device());
        x.backend()->conv2d_forward(gx.arg(), gc.arg(), w.arg(), TensorArg{}, p);
      }
      if (wants(n, 1)) {  // a conv2d's weight gradient with y's gradient as its input, x as its output's
        gw = Tensor::empty(w.shape(), w.dtype(), w.device());
        x.backend()->conv2d_backward_weight(gw.arg(), TensorArg{}, x.arg(), gc.arg(), p);
      }
      return {gx, gw};
    }
    case OpKind::batch_norm: {  // inputs x, [weight], [bias]; saved mean, invstd (ops_nn.cpp)
      Tensor x = input(n, 0);
      const bool has_w = attrs<op_attrs::BatchNorm>(n).has_weight, has_b = attrs<op_attrs::BatchNorm>(n).has_bias;
      Tensor w = has_w ? input(n, 1) : Tensor();
      Tensor gy = g.to(x.dtype()).contiguous();
      Tensor gx, gw, gb;
      if (wants(n, 0)) gx = Tensor::empty(x.shape(), x.dtype(), x.device());
      if (has_w && wants(n, 1)) gw = Tensor::empty({x.size(1)}, DType::f32, x.device());
      if (has_b && wants(n, has_w ? 2 : 1)) gb = Tensor::empty({x.size(1)}, DType::f32, x.device());
      auto arg = [](const Tensor& t) { return t.defined() ? t.arg() : TensorArg{}; };
      if (x.numel())
        x.backend()->batch_norm_backward(arg(gx), arg(gw), arg(gb), gy.arg(), x.arg(), arg(w), saved(n, 0).arg(),
                                         saved(n, 1).arg());
      std::vector<Tensor> grads{gx};
      if (has_w) grads.push_back(gw);
      if (has_b) grads.push_back(gb);
      return grads;
    }
    case OpKind::fake_quantize:  // the straight-through estimator: g where the saved mask is true
      // (quant_min <= q <= quant_max), else 0 (PyTorch's fake_quantize_per_*_affine_cachemask_backward)
      return {where(saved(n, 0), g, scalar(0, g))};
    case OpKind::max_pool2d: {
      Tensor x = input(n, 0);
      Tensor gx = Tensor::zeros(x.shape(), x.dtype(), x.device());
      x.backend()->max_pool2d_backward(gx.arg(), g.contiguous().arg(), saved(n, 0).arg());
      return {gx};
    }
    case OpKind::avg_pool2d: {
      Tensor x = input(n, 0);
      Tensor gx = Tensor::zeros(x.shape(), x.dtype(), x.device());
      x.backend()->avg_pool2d_backward(gx.arg(), g.contiguous().arg(), attrs<Pool2dParams>(n));
      return {gx};
    }
    case OpKind::softmax:
    case OpKind::log_softmax: {
      Tensor y = saved(n, 0);
      Tensor gx = Tensor::empty(y.shape(), y.dtype(), y.device());
      y.backend()->softmax_backward(gx.arg(), g.contiguous().arg(), y.arg(), y.dim() == 0 ? 0 : dim_attr(n),
                                    n.kind == OpKind::log_softmax);
      return {gx};
    }
    // ---- index ops
    case OpKind::gather: {
      Tensor x = input(n, 0);
      return {scatter_add(zeros_like(x), dim_attr(n), saved(n, 0), g)};
    }
    case OpKind::scatter_add: {
      Tensor src = input(n, 1), index = saved(n, 0);
      Tensor gsrc;
      if (wants(n, 1)) {
        gsrc = Tensor::zeros(src.shape(), g.dtype(), g.device());
        Tensor part = gather(g, dim_attr(n), index);
        Tensor view = gsrc;
        for (int64_t d = 0; d < index.dim(); ++d) view = view.slice(d, 0, index.size(d));
        view.copy_(part);
      }
      return {g, gsrc};
    }
    case OpKind::index_select: {
      Tensor x = input(n, 0);
      return {index_add(zeros_like(x), dim_attr(n), saved(n, 0), g)};
    }
    case OpKind::index_add:
      return {g, wants(n, 1) ? index_select(g, dim_attr(n), saved(n, 0)) : Tensor()};
    case OpKind::count:
      break;
  }
  throw Error(detail::str_cat("backward: no rule for op ", op_kind_name(n.kind)));
}

}  // namespace kiln::autograd
